"""The pure core knows no sockets, clocks, event loops, widgets or plots.

Each core module is imported in a fresh interpreter and the test looks at what
came along with it in sys.modules. Edges (server, widgets, plots, grade) may import
the core; the core must never import them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PURE_MODULES = [
    "lessonkit.sse",
    "lessonkit.dialects",
    "lessonkit.client",
    "lessonkit.network",
    "lessonkit.llm",
    "lessonkit.timeline",
    "lessonkit.explore",
    "lessonkit.render",
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
