"""lessonkit.lab imports in one direction, and loads heavy libraries only when they are used.

    lesson01 ... lesson05   the explorers' state (readouts), drawn with views and svg
    views, svg, figures     drawing from plain data (figures: what each static figure
                            shows); they import no lesson module
    binding, controls       bind() and the boxes; the course's own controls
    widgets                 the explorers: controls bound to the lesson modules

An import under ``if TYPE_CHECKING:`` names a type and runs nothing, so it does not count.
The second half checks what a notebook's imports load into the kernel: each lesson's first
cell (its imports, read from the notebook) loads no plotting library, no provider SDK and,
unless that cell starts a server, no uvicorn; a figure shown with plots.show is drawn in a
helper process, so even a lesson with figures never loads matplotlib into its kernel.
(bench/bench_kernel_memory.py measures what each costs; these checks measure nothing.)
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[2] / "lessonkit" / "lab"
LESSONS = {f"lesson0{n}" for n in range(1, 6)}
DRAWING = {"views", "svg", "figures"}


def _runtime_lab_imports(path: Path) -> set[str]:
    """Return the lessonkit.lab modules `path` imports when it runs (TYPE_CHECKING blocks skipped)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("lessonkit.lab")
        ):
            if node.module == "lessonkit.lab":
                names.update(alias.name for alias in node.names)
            else:
                names.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            names.update(
                a.name.split(".")[2] for a in node.names if a.name.startswith("lessonkit.lab.")
            )
    return names - {path.stem}


def _graph() -> dict[str, set[str]]:
    return {p.stem: _runtime_lab_imports(p) for p in LAB.glob("*.py") if p.stem != "__init__"}


def test_views_and_svg_import_no_lesson_module_and_no_widget():
    graph = _graph()
    for module in DRAWING:
        assert graph[module] <= DRAWING, f"{module} imports {graph[module] - DRAWING}"


def test_no_lesson_module_imports_the_widgets_or_another_lesson():
    graph = _graph()
    for lesson in LESSONS:
        assert graph[lesson] <= DRAWING, f"{lesson} imports {graph[lesson] - DRAWING}"


def test_the_lab_import_graph_has_no_cycle():
    graph = _graph()
    seen: dict[str, str] = {}

    def visit(module: str, path: tuple[str, ...]) -> None:
        if seen.get(module) == "done":
            return
        assert seen.get(module) != "open", f"import cycle: {' -> '.join((*path, module))}"
        seen[module] = "open"
        for imported in graph.get(module, ()):
            visit(imported, (*path, module))
        seen[module] = "done"

    for module in graph:
        visit(module, ())


def test_the_rule_sees_through_type_checking_imports(tmp_path):
    module = tmp_path / "views.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nfrom lessonkit.lab import svg\n"
        "if TYPE_CHECKING:\n    from lessonkit.lab.lesson01 import DecodeStep\n"
    )
    assert _runtime_lab_imports(module) == {"svg"}


def _loaded_after(code: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {name.split(".")[0] for name in json.loads(run.stdout.splitlines()[-1])}


NOTEBOOKS = sorted((LAB.parents[1] / "notebooks").glob("0[0-5]_*.ipynb"))
# What costs a kernel most (bench/README.md, "Kernel memory per lesson"): a lesson's kernel
# holds one only from the cell that uses it. uvicorn comes with a running server, which
# lesson 05's first cell starts (measure's proxies import it too).
LARGE = {"matplotlib", "numpy", "PIL", "openai", "anthropic", "pydantic", "uvicorn"}
STARTS_A_SERVER = {"05_streaming_in_the_real_world": {"uvicorn"}}


def _first_cell_imports(notebook: Path) -> str:
    """Return the import statements of a notebook's first code cell (its magics left out)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    source = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    code = "\n".join(line for line in source.splitlines() if not line.startswith("%"))
    nodes = ast.parse(code).body
    return "\n".join(ast.unparse(n) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_lessons_first_cell_loads_no_plotting_library_sdk_or_idle_server(notebook):
    imports = _first_cell_imports(notebook)
    assert "lessonkit" in imports, imports
    loaded = _loaded_after(imports) & (LARGE - STARTS_A_SERVER.get(notebook.stem, set()))
    assert not loaded, f"{notebook.name}'s imports load {sorted(loaded)}"


def test_showing_a_figure_draws_it_in_a_helper_and_loads_no_plotting_library_here():
    code = (
        "from lessonkit.lab import figures, plots\n"
        "description = figures.measured_vs_model([342, 381], 390, [340, 380], title='t')\n"
        "shown = plots.show(description)\n"
        "assert shown.png.startswith(b'\\x89PNG') and shown.text == description.text\n"
    )
    loaded = _loaded_after(code)
    assert not loaded & LARGE, loaded & LARGE


def test_drawing_a_figure_loads_matplotlib_then_and_keeps_no_figure_alive():
    code = (
        "import gc\nfrom lessonkit.lab import lesson01, plots\n"
        "shown = plots.picture(plots.plot_measured_vs_model([342, 381], 390, [340, 380]), 'x')\n"
        "gc.collect()\nfrom matplotlib.figure import Figure\n"
        "alive = [o for o in gc.get_objects() if isinstance(o, Figure)]\n"
        "assert shown.png.startswith(b'\\x89PNG') and not alive, alive"
    )
    assert "matplotlib" in _loaded_after(code)
