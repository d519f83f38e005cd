# The course's two commands: `make lab` opens it, `make test` checks all of it.
# Both create .venv on the first run (uv when present, else python3 -m venv + pip).
# `make lab` installs what the lessons need and nothing else (`pip install -e .`), then runs
# `lessonkit lab`; `make test` adds the instructor's tools and the test tools on top
# (`.[dev]`) and sets up what its browser and classroom tests drive: a Chromium
# (tools/ensure_chromium.sh), JupyterHub's proxy from npm (tools/ensure_hub_proxy.sh) and
# axe-core from npm for the accessibility test (tools/ensure_axe.sh).

PYTHON ?= python3
PORT ?= 8888
VENV := .venv
BIN := $(VENV)/bin
# One stamp per install: the learner's (`make lab`) and the test tools on top (`make test`).
# A test install holds the learner's, so it stands for both.
LAB_STAMP := $(VENV)/.installed-lab
TEST_STAMP := $(VENV)/.installed-test
# Where `pip install .` puts the course's JupyterLab settings and its Jupyter server settings
# (pyproject's shared-data: the browser demo's route, idle kernels culled); make copies them
# there itself too, so an edit reaches .venv without a reinstall.
SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/streaming-course.json
SERVER_SETTINGS := $(VENV)/etc/jupyter/jupyter_server_config.d/streaming-course.json
CHP := $(VENV)/share/chp/node_modules/.bin/configurable-http-proxy
AXE := $(VENV)/share/axe/node_modules/axe-core/axe.min.js
# pyproject.toml adds --nbval-current-env and the sanitize file to every pytest run.
NBVAL := -p no:cacheprovider
LINTED := lessonkit tests bench notebooks solutions exercises

# Plots must reach notebooks inline; an inherited MPLBACKEND=Agg hides them.
unexport MPLBACKEND
# Python writes its bytecode caches (.venv, __pycache__/, all ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set: without them every kernel, server and pytest process
# compiles its imports again (JupyterLab's took 8.6 s instead of 4.4 s here).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: lab test test-under-load lint unit sandbox-tools notebooks exercises browser hub lite-test chromium axe \
	hub-proxy hub-tools assign bench clean setup lab-setup site site-test

# The learner's install: what the lessons import, nothing else.
lab-setup: $(LAB_STAMP) $(SETTINGS) $(SERVER_SETTINGS)
# The contributor's: the learner's, the instructor's tools and the test tools.
setup: $(TEST_STAMP) $(SETTINGS) $(SERVER_SETTINGS)

# tools/install_venv.sh: uv where present (it compiles the bytecode at install, as pip
# does by itself: otherwise, where PYTHONDONTWRITEBYTECODE is set, every kernel, worker and
# sandbox compiles its ~600 modules again and keeps about 24 MiB more), else venv + pip.
$(LAB_STAMP): pyproject.toml
	@if [ $(TEST_STAMP) -nt pyproject.toml ]; then touch $@; \
	else PYTHON=$(PYTHON) tools/install_venv.sh $(VENV) . && touch $@; fi

$(TEST_STAMP): pyproject.toml
	@PYTHON=$(PYTHON) tools/install_venv.sh $(VENV) '.[dev]'
	@touch $(TEST_STAMP) $(LAB_STAMP)

# The course's own JupyterLab settings live in the venv, never in ~/.jupyter.
$(SETTINGS): jupyter/overrides.d/streaming-course.json | $(LAB_STAMP)
	@mkdir -p $(dir $(SETTINGS))
	@cp jupyter/overrides.d/streaming-course.json $(SETTINGS)

$(SERVER_SETTINGS): jupyter/jupyter_server_config.d/streaming-course.json | $(LAB_STAMP)
	@mkdir -p $(dir $(SERVER_SETTINGS))
	@cp jupyter/jupyter_server_config.d/streaming-course.json $(SERVER_SETTINGS)

# `lessonkit lab` (installed with the course, also without make): JupyterLab on lesson 00
# with a fresh token, its URL printed once the server answers.
lab: lab-setup
	@exec $(BIN)/lessonkit lab --port $(PORT)

lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# Each stage below is one target; `make test` runs the set-up, then every stage in
# TEST_STAGES at the same time (they mostly wait: on kernels, browsers, paced streams),
# prints each stage's output as it ends and then the time of each (tools/run_stages.py;
# logs in test-artifacts/stages/). A new stage: its target, and its name here.
TEST_STAGES := lint unit notebooks exercises browser hub lite-test site-test
TEST_JOBS ?= 0
# 0: every stage at once; TEST_JOBS=1 runs them one after another.
test:
	@$(PYTHON) tools/run_stages.py --make "$(MAKE)" --setup "setup chromium axe" \
		--jobs $(TEST_JOBS) $(TEST_STAGES)

# `make test` three times in a row, each in a fresh clone of this commit started from a
# background shell (signals as a script's `&` leaves them), beside two CPU burners.
test-under-load:
	@tools/test_under_load.sh

# pytest-xdist: the unit tests in two worker processes, each test file in one of them (its
# module fixtures start once). The browser and hub tests each run in a pytest process of
# their own: Playwright's sync API keeps an event loop running in the main thread, which
# would break later tests that use asyncio.run.
XDIST := -n 2 --dist loadfile
unit: setup sandbox-tools
	$(BIN)/pytest $(XDIST) tests --ignore=tests/browser --ignore=tests/hub

# lessonkit grade's sandbox needs bubblewrap (tests/grading/test_sandbox.py): installed here as root with apt.
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

chromium: setup
	@tools/ensure_chromium.sh $(BIN)

hub-proxy: $(CHP)
$(CHP): | $(TEST_STAMP)
	@tools/ensure_hub_proxy.sh $(VENV)/share/chp

# axe-core (npm) for the accessibility tests; private to .venv like the hub's proxy. Built in
# make test's set-up: browser and site-test both need it and start at the same time.
axe: $(AXE)
$(AXE): | $(TEST_STAMP)
	@tools/ensure_axe.sh $(VENV)/share/axe

browser: setup chromium $(AXE)
	$(BIN)/pytest tests/browser

# The zero-install edition (tests/lite): the site built from the working tree (into a
# temporary folder, as `make lite` builds it), served on loopback, every lesson and exercise
# run in Pyodide in Chromium with every other request refused. (`make lite` only builds.)
lite-test: setup chromium
	$(BIN)/pytest tests/lite

# The course website (tests/site): built from the working tree into a temporary folder (as
# `make site` builds it), served on loopback, every page read in Chromium with every other
# request refused: links, images, search, axe in both schemes, each lesson's launch link.
site-test: setup chromium $(AXE)
	$(BIN)/pytest tests/site

# A real JupyterHub on loopback, a browser "on another machine", and two learners who are Unix
# users of their own (tests/hub): made, switched to and removed by the test, so it needs root
# (CI runs as root; without root the stage fails and says why). Their servers run from a venv
# every user can run, made from the system's Python (tools/hub_venv.sh, python3-venv).
hub: setup chromium $(CHP) hub-tools
	$(BIN)/pytest tests/hub

# The system's Python with venv (Debian: python3-venv) and useradd, installed here as root with apt.
HUB_PYTHON ?= /usr/bin/python3
export HUB_PYTHON
hub-tools:
	@$(HUB_PYTHON) -c "import ensurepip, venv" >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing python3-venv (the hub test's course environment) ..."; \
			apt-get install -y -qq python3 python3-venv >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null; }; \
		else \
			echo "$(HUB_PYTHON) cannot make a venv, so tests/hub will fail:" \
				"sudo apt-get install python3-venv"; \
		fi; }

# Each notebook runs in one worker from start to end (--dist loadfile: nbval's cells
# depend on each other). The six short exercises need no second worker.
notebooks: setup
	$(BIN)/pytest --nbval $(NBVAL) $(XDIST) notebooks solutions

exercises: setup
	$(BIN)/pytest --nbval-lax $(NBVAL) exercises

# exercises/ is generated from solutions/: regenerate after editing a solution.
assign: setup
	$(BIN)/lessonkit assign solutions exercises

bench: setup
	$(BIN)/python bench/bench_setup.py
	$(BIN)/python bench/bench_decoders.py
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_grading.py
	$(BIN)/python bench/bench_explorers.py
	$(BIN)/python bench/bench_class.py
	$(BIN)/python bench/bench_kernel_memory.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis test-artifacts .browser-scratch
	rm -rf .venv-lite $(LITE_DIR) build/lite-cache .venv-site $(SITE_DIR) build/.locks
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

# The zero-install edition: the course as a static JupyterLite site in $(LITE_DIR)
# (tools/build_lite.py: its own pinned builder in .venv-lite, Python from npm's pyodide).
# Try it: python3 -m http.server --bind 127.0.0.1 --directory build/lite 8000, then open
# http://127.0.0.1:8000/ (docs/running-a-class.md: "Zero install", also how to publish it on GitHub Pages).
LITE_DIR ?= build/lite
.PHONY: lite
lite:
	$(PYTHON) tools/build_lite.py --out $(LITE_DIR)

# The course website: the pages (README, guides, every lesson and exercise, search) at the root
# of $(SITE_DIR), the JupyterLite app in its lite/ (tools/build_site.py: Sphinx in a pinned
# builder venv of its own, .venv-site, beside .venv-lite). One folder any static host serves:
# python3 -m http.server --bind 127.0.0.1 --directory build/site 8000 (docs/running-a-class.md).
SITE_DIR ?= build/site
site:
	$(PYTHON) tools/build_site.py --out $(SITE_DIR)
