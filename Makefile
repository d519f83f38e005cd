# The course's two commands: `make lab` opens it, `make test` checks all of it.
# Both create .venv on the first run (uv when present, else python3 -m venv + pip).
# `make test` also sets up what its browser and classroom tests drive: a Chromium
# (tools/ensure_chromium.sh), JupyterHub's proxy from npm (tools/ensure_hub_proxy.sh) and
# axe-core from npm for the accessibility test (tools/ensure_axe.sh).

PYTHON ?= python3
PORT ?= 8888
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Where `pip install .` puts the course's JupyterLab settings (pyproject's data-files);
# an editable install skips data files, so make copies it there itself.
SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/streaming-course.json
CHP := $(VENV)/share/chp/node_modules/.bin/configurable-http-proxy
AXE := $(VENV)/share/axe/node_modules/axe-core/axe.min.js
# pyproject.toml adds --nbval-current-env and the sanitize file to every pytest run.
NBVAL := -p no:cacheprovider
LINTED := lessonkit tests bench notebooks solutions exercises

# Plots must reach notebooks inline; an inherited MPLBACKEND=Agg hides them.
unexport MPLBACKEND

.PHONY: lab test lint unit notebooks browser hub chromium assign bench clean setup

setup: $(STAMP) $(SETTINGS)

$(STAMP): pyproject.toml
	@if command -v uv >/dev/null 2>&1; then \
		echo "Setting up $(VENV) with uv ..."; \
		[ -x $(BIN)/python ] || uv venv --quiet --python $(PYTHON) $(VENV); \
		uv pip install --quiet --python $(BIN)/python -e '.[dev]'; \
	else \
		echo "Setting up $(VENV) with pip (install uv for a 10x faster set-up) ..."; \
		[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV); \
		$(BIN)/python -m pip install --quiet --upgrade pip; \
		$(BIN)/python -m pip install --quiet -e '.[dev]'; \
	fi
	@touch $(STAMP)

# The course's own JupyterLab settings live in the venv, never in ~/.jupyter.
$(SETTINGS): jupyter/overrides.d/streaming-course.json $(STAMP)
	@mkdir -p $(dir $(SETTINGS))
	@cp jupyter/overrides.d/streaming-course.json $(SETTINGS)

# Root (a container, CI) needs --allow-root; everyone else never sees it.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# Prints the URL of the first notebook (with a fresh token) and opens it in your browser;
# JupyterLab's own log below shows the same URL with the token elided.
START_HERE := lab/tree/notebooks/00_start_here.ipynb
lab: setup
	@token=$$($(BIN)/python -c "import secrets; print(secrets.token_hex(24))"); \
	echo "JupyterLab is starting on port $(PORT) with the course's first notebook:"; \
	echo ""; \
	echo "    http://127.0.0.1:$(PORT)/$(START_HERE)?token=$$token"; \
	echo ""; \
	echo "Your browser opens it; if none does, paste that URL into one."; \
	echo "(Ctrl-C twice to stop; another port: make lab PORT=8899)"; \
	JUPYTER_TOKEN=$$token exec $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 \
		--ServerApp.port=$(PORT) --ServerApp.port_retries=0 --ServerApp.root_dir=. \
		--LabApp.default_url=/$(START_HERE) $(ALLOW_ROOT)

lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# The browser and hub tests each run in a pytest process of their own: Playwright's sync API
# keeps an event loop running in the main thread, which would break later tests that use
# asyncio.run.
unit: setup
	$(BIN)/pytest tests --ignore=tests/browser --ignore=tests/hub

chromium: setup
	@tools/ensure_chromium.sh $(BIN)

$(CHP): | $(STAMP)
	@tools/ensure_hub_proxy.sh $(VENV)/share/chp

# axe-core (npm) for the accessibility test; private to .venv like the hub's proxy.
$(AXE): | $(STAMP)
	@tools/ensure_axe.sh $(VENV)/share/axe

browser: setup chromium $(AXE)
	$(BIN)/pytest tests/browser

# A real JupyterHub on loopback, two users, a browser "on another machine" (tests/hub).
hub: setup chromium $(CHP)
	$(BIN)/pytest tests/hub

notebooks: setup
	$(BIN)/pytest --nbval $(NBVAL) notebooks solutions
	$(BIN)/pytest --nbval-lax $(NBVAL) exercises

test: lint unit notebooks browser hub

# exercises/ is generated from solutions/: regenerate after editing a solution.
assign: setup
	$(BIN)/lessonkit assign solutions exercises

bench: setup
	$(BIN)/python bench/bench_decoders.py
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_grading.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis test-artifacts .browser-scratch
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

# lessonkit grade's sandbox needs bubblewrap (tests/grading/test_sandbox.py): installed here as root with apt.
.PHONY: sandbox-tools
unit: sandbox-tools
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing bubblewrap (the grading sandbox) ..."; \
			apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }; \
		else \
			echo "bubblewrap is missing, so tests/grading/test_sandbox.py will fail:" \
				"sudo apt-get install bubblewrap"; \
		fi; }
