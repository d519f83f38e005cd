"""The layers of lessonkit, checked over the whole tree.

On top of everything, ``lessonkit/learner/`` (`lessonkit lab`, ``progress()``,
``submit()``) may import every layer, and no layer imports it. Under everything,
``lessonkit/course/`` (the learner's course folder, progress, the
hand-in format, `lessonkit lab`) imports the standard library alone, so any layer may use it.
One rule: nothing under ``lessonkit/core/`` imports ``lessonkit.lab``,
``lessonkit.serve`` or ``lessonkit.grading``, nor any widget, plot, network,
thread, event-loop or clock library. The edges import the core, never the
reverse. Two more keep the edges apart: ``lessonkit/serve/`` never imports
``lessonkit.lab`` or ``lessonkit.grading``, and ``lessonkit/lab/`` never imports
``lessonkit.grading``. The course's Jupyter server extensions (in serve/) run inside
every learner's Jupyter server: they import only the standard library, the Jupyter
server's own libraries and httpx, and never the course server's starlette or uvicorn.

Each module's imports are read from its source (so a clock imported inside a
function counts too), and each core module is also imported in a fresh
interpreter to see what really comes along with it in ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lessonkit"

FORBIDDEN_IN_CORE = {
    # our own edges
    "lessonkit.lab",
    "lessonkit.serve",
    "lessonkit.grading",
    # widgets and plots
    "ipywidgets",
    "matplotlib",
    "IPython",
    "anywidget",
    # sockets, threads, event loops, HTTP
    "asyncio",
    "socket",
    "select",
    "threading",
    "multiprocessing",
    "subprocess",
    "http",
    "starlette",
    "uvicorn",
    "httpx",
    "websockets",
    # clocks: the core takes time as a parameter (at_ms)
    "time",
    "datetime",
}
FORBIDDEN_IN_SERVE = {"lessonkit.lab", "lessonkit.grading"}
FORBIDDEN_IN_LAB = {"lessonkit.grading"}
# What runs in the Jupyter server (jupyter_server_config.d enables its extensions).
IN_THE_JUPYTER_SERVER = ["jupyter_route", "jupyter_culling", "jupyter_page", "demo_socket"]
ALLOWED_IN_THE_JUPYTER_SERVER = {
    "tornado",
    "jupyter_server",
    "jupyter_core",
    "traitlets",
    "httpx",
    "lessonkit.serve",
    "lessonkit.serve.demo_socket",
}


def _modules_under(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).glob("*.py"))


def _imports_of(path: Path) -> set[str]:
    """Return every module name an import statement in `path` names (at any depth)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _breaks(names: set[str], forbidden: set[str]) -> list[str]:
    return sorted(
        name for name in names if any(name == f or name.startswith(f + ".") for f in forbidden)
    )


def _id(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", _modules_under("course"), ids=_id)
def test_the_course_folder_modules_import_only_the_standard_library_and_each_other(path):
    # lessonkit.course sits under every layer: check() in the grader records progress there.
    names = {n for n in _imports_of(path) if n.split(".")[0] not in sys.stdlib_module_names}
    others = sorted(
        n for n in names if n != "lessonkit.course" and not n.startswith("lessonkit.course.")
    )
    assert others == [], (
        f"{_id(path)} imports {others}; lessonkit.course stands on the stdlib alone"
    )


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(PACKAGE.rglob("*.py")) if "learner" not in p.parts and p.name != "cli.py"],
    ids=_id,
)
def test_no_layer_imports_what_a_learner_runs_on_top_of_them(path):
    broken = _breaks(_imports_of(path), {"lessonkit.learner"})
    assert broken == [], f"{_id(path)} imports {broken}; lessonkit.learner sits on top"


@pytest.mark.parametrize("path", _modules_under("core"), ids=_id)
def test_nothing_in_core_imports_an_edge_io_widget_or_clock_library(path):
    broken = _breaks(_imports_of(path), FORBIDDEN_IN_CORE)
    assert broken == [], f"{_id(path)} imports {broken}; the core stays pure (see STYLE.md)"


@pytest.mark.parametrize("path", _modules_under("serve"), ids=_id)
def test_nothing_in_serve_imports_the_notebook_views_or_the_grader(path):
    broken = _breaks(_imports_of(path), FORBIDDEN_IN_SERVE)
    assert broken == [], f"{_id(path)} imports {broken}; the server stands alone"


@pytest.mark.parametrize("path", _modules_under("lab"), ids=_id)
def test_nothing_in_lab_imports_the_grader(path):
    broken = _breaks(_imports_of(path), FORBIDDEN_IN_LAB)
    assert broken == [], f"{_id(path)} imports {broken}; the lessons never need the grader"


def test_importing_the_whole_core_loads_no_forbidden_module():
    modules = [f"lessonkit.core.{p.stem}" for p in _modules_under("core") if p.stem != "__init__"]
    code = (
        "import sys, json\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    # time is loaded by the interpreter itself at start-up: the source check above catches it.
    leaked = _breaks(loaded, FORBIDDEN_IN_CORE - {"time"})
    assert leaked == [], f"importing lessonkit.core pulls in {leaked}"


def test_the_rule_catches_a_clock_import_hidden_inside_a_function(tmp_path):
    module = tmp_path / "sneaky.py"
    module.write_text("def now():\n    import time\n    return time.monotonic()\n")
    assert _breaks(_imports_of(module), FORBIDDEN_IN_CORE) == ["time"]


def test_the_rule_catches_an_edge_imported_by_name(tmp_path):
    module = tmp_path / "sneaky.py"
    module.write_text("from lessonkit import serve\nfrom lessonkit.lab import views\n")
    assert _breaks(_imports_of(module), FORBIDDEN_IN_CORE) == [
        "lessonkit.lab",
        "lessonkit.lab.views",
        "lessonkit.serve",
    ]


@pytest.mark.parametrize("name", IN_THE_JUPYTER_SERVER)
def test_the_jupyter_server_extensions_import_only_the_servers_own_libraries(name):
    path = PACKAGE / "serve" / f"{name}.py"
    names = {n for n in _imports_of(path) if n.split(".")[0] not in sys.stdlib_module_names}
    others = sorted(
        n
        for n in names
        if not any(n == a or n.startswith(a + ".") for a in ALLOWED_IN_THE_JUPYTER_SERVER)
    )
    assert others == [], f"{_id(path)} imports {others}; it runs in every learner's Jupyter server"


def test_loading_the_jupyter_server_extensions_loads_no_course_server_or_widget_library():
    code = (
        "import sys, json\n"
        + "".join(f"import lessonkit.serve.{name}\n" for name in IN_THE_JUPYTER_SERVER)
        + "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    heavy = {"starlette", "uvicorn", "matplotlib", "ipywidgets", "anywidget", "lessonkit.core"}
    assert _breaks(loaded, heavy) == []
