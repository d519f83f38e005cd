"""The pure core knows no sockets, clocks, event loops, widgets or plots.

Each core module is imported in a fresh interpreter and the test looks at what
came along with it in sys.modules. Edges (server, widgets, plots, grade) may import
the core; the core must never import them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PURE_MODULES = [
    "lessonkit.core.sse",
    "lessonkit.core.dialects",
    "lessonkit.core.client",
    "lessonkit.core.network",
    "lessonkit.core.llm",
    "lessonkit.core.timeline",
    "lessonkit.explore",
    "lessonkit.core.render",
    "lessonkit.checker",
    "lessonkit.exercises_ref",
]
FORBIDDEN = [
    "ipywidgets",
    "matplotlib",
    "IPython",
    "asyncio",
    "socket",
    "http",
    "threading",
    "starlette",
    "uvicorn",
    "httpx",
]
EDGE_MODULES = [
    "plots",
    "widgets",
    "server",
    "proxy",
    "rawhttp",
    "browser_demo",
    "envcheck",
    "grading",
    "grade",
    "grade_child",
    "assign",
    "cli",
]


def _modules_loaded_by(module: str) -> set[str]:
    code = f"import sys, json; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("module", PURE_MODULES)
def test_importing_a_core_module_loads_no_io_clock_widget_or_plot_library(module):
    loaded = _modules_loaded_by(module)
    leaked = sorted(name for name in FORBIDDEN if name in loaded)
    assert leaked == [], f"{module} pulls in {leaked}; keep it pure (see STYLE.md)"


@pytest.mark.parametrize("module", PURE_MODULES)
def test_core_modules_never_import_an_edge_module(module):
    loaded = _modules_loaded_by(module)
    edges = sorted(f"lessonkit.{e}" for e in EDGE_MODULES if f"lessonkit.{e}" in loaded)
    assert edges == [], f"{module} imports edge modules {edges}"


# `time` and `random`'s global state are already loaded at interpreter start-up, so
# sys.modules cannot catch them: read the source of each pure module instead.
CLOCK_MODULES = {"time", "datetime", "asyncio", "socket", "threading", "select"}


def _imported_names(module: str) -> set[str]:
    path = Path(__file__).resolve().parents[1] / (module.replace(".", "/") + ".py")
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", PURE_MODULES)
def test_core_modules_take_time_as_a_parameter_and_never_import_a_clock(module):
    clocks = sorted(_imported_names(module) & CLOCK_MODULES)
    assert clocks == [], f"{module} imports {clocks}; pass at_ms in instead"
