"""Every lesson and solution notebook runs in JupyterLab in a real browser without errors.

For each notebook (found when the tests are collected, so new notebooks are covered
automatically) a scratch copy with cleared outputs is opened, Run All is clicked, and the
page must then show: no traceback or stderr text, every widget rendered as a live view,
and every figure the committed notebook shows, in the same cells.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from labdriver import (
    REPO_ROOT,
    STDERR_MIME,
    WIDGET_FAILURE_TEXTS,
    WIDGET_MIME,
    CellView,
    LabServer,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    scratch_copy,
    snapshot_cells,
    wait_for,
)

pytestmark = pytest.mark.browser

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (REPO_ROOT / "solutions").glob("*.ipynb")
)


def expected_per_code_cell(notebook_path: Path) -> list[dict[str, int]]:
    """Return, per non-empty code cell, how many figures and widgets the committed copy shows."""
    notebook = nbformat.read(notebook_path, as_version=4)
    expected = []
    for cell in notebook.cells:
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        outputs = [o for o in cell.get("outputs", []) if "data" in o]
        expected.append(
            {
                "images": sum(
                    "image/png" in o["data"] or "image/jpeg" in o["data"] for o in outputs
                ),
                "widgets": sum(WIDGET_MIME in o["data"] for o in outputs),
            }
        )
    return expected


def problems_in(cells: list[CellView], tags_by_index: dict[int, list[str]]) -> list[str]:
    """Return a readable line for each error, stderr text or broken widget in the page."""
    problems = []
    for cell in cells:
        allowed_error = "raises-exception" in tags_by_index.get(cell.index, [])
        for output in cell.outputs:
            if output.mime == STDERR_MIME and not allowed_error:
                problems.append(f"cell {cell.index} wrote to stderr:\n{output.text[:1500]}")
            for failure in WIDGET_FAILURE_TEXTS:
                if failure in output.text:
                    problems.append(f"cell {cell.index}: {output.text[:300]!r}")
    return problems


def rendered_counts(cell: CellView) -> dict[str, int]:
    """Return how many loaded figures and live widget views the cell shows."""
    return {
        "images": sum(o.loaded_images for o in cell.outputs),
        "widgets": sum(
            o.widget_views > 0 and not any(text in o.text for text in WIDGET_FAILURE_TEXTS)
            for o in cell.outputs
        ),
    }


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_runs_in_jupyterlab_without_errors_and_shows_its_widgets_and_figures(
    notebook: Path, lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    copy = scratch_copy(notebook, scratch_dir)
    path = relative_to_root(copy)
    tags_source = nbformat.read(copy, as_version=4).cells
    tags_by_index = {i: c.metadata.get("tags", []) for i, c in enumerate(tags_source)}
    expected = expected_per_code_cell(notebook)
    try:
        open_notebook(page, lab, path)
        cells = run_all_and_wait(page, lab, path)
        assert not problems_in(cells, tags_by_index), "\n".join(problems_in(cells, tags_by_index))

        def shown_as_committed() -> list[dict[str, int]] | None:
            cells_now = [c for c in snapshot_cells(page) if c.is_code and c.source.strip()]
            shown = [rendered_counts(c) for c in cells_now]
            complete = all(
                s["images"] >= e["images"] and s["widgets"] >= e["widgets"]
                for s, e in zip(shown, expected, strict=False)
            )
            return None if not complete or len(shown) != len(expected) else shown

        try:
            wait_for(shown_as_committed, timeout_s=60, what="figures and widgets to render")
        except AssertionError:
            shown = [
                rendered_counts(c) for c in snapshot_cells(page) if c.is_code and c.source.strip()
            ]
            missing = [
                f"code cell {i}: committed shows {e}, the browser shows {s}"
                for i, (s, e) in enumerate(zip(shown, expected, strict=False))
                if s["images"] < e["images"] or s["widgets"] < e["widgets"]
            ]
            pytest.fail("figures or widgets missing in the browser:\n" + "\n".join(missing))
        assert not problems_in(snapshot_cells(page), tags_by_index)
    finally:
        lab.close_sessions(path)
