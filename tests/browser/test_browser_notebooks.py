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
    PAGE_WAIT_S,
    REPO_ROOT,
    STDERR_MIME,
    WIDGET_FAILURE_TEXTS,
    WIDGET_MIME,
    CellView,
    ConditionTimeout,
    LabServer,
    close_notebook,
    code_cell_indices,
    committed_widget_cells,
    notebook_run,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    scratch_copy,
    snapshot_cells,
    tracebacks,
    wait_for,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (REPO_ROOT / "solutions").glob("*.ipynb")
)


def expected_per_code_cell(notebook_path: Path) -> dict[int, dict[str, int]]:
    """Return, per code cell index, how many figures and widgets the committed notebook shows."""
    notebook = nbformat.read(notebook_path, as_version=4)
    expected = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        outputs = [o for o in cell.get("outputs", []) if "data" in o]
        expected[index] = {
            "images": sum("image/png" in o["data"] or "image/jpeg" in o["data"] for o in outputs),
            "widgets": sum(WIDGET_MIME in o["data"] for o in outputs),
        }
    return expected


def rendered_counts(cell: CellView) -> dict[str, int]:
    """Return how many loaded figures and live widget views the cell's own outputs show."""
    outputs = [o for o in cell.outputs if not o.nested]
    return {
        "images": sum(o.loaded_images for o in outputs),
        "widgets": sum(
            o.widget_views > 0 and not any(text in o.text for text in WIDGET_FAILURE_TEXTS)
            for o in outputs
        ),
    }


def error_outputs(cells: list[CellView], allowed: set[int]) -> list[str]:
    """Return a readable line per traceback or stderr text, except in cells allowed to raise."""
    return [
        f"cell {c.index} wrote to stderr:\n{o.text[:1500]}"
        for c in cells
        for o in c.outputs
        if o.mime == STDERR_MIME and c.index not in allowed
    ]


def unrendered(cells: list[CellView], expected: dict[int, dict[str, int]]) -> list[str]:
    """Return a line per widget still loading or failed, and per figure or widget missing."""
    lines = [
        f"cell {c.index}: {o.text[:200]!r}"
        for c in cells
        for o in c.outputs
        if any(text in o.text for text in WIDGET_FAILURE_TEXTS)
    ]
    for cell in cells:
        want = expected.get(cell.index)
        shown = rendered_counts(cell)
        if want and (shown["images"] < want["images"] or shown["widgets"] < want["widgets"]):
            lines.append(
                f"cell {cell.index}: the committed notebook shows {want}, the page {shown}"
            )
    return lines


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_runs_in_jupyterlab_without_errors_and_shows_its_widgets_and_figures(
    notebook: Path, lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    copy = scratch_copy(notebook, scratch_dir)
    cells_in_file = nbformat.read(copy, as_version=4).cells
    allowed_to_raise = {
        i for i, c in enumerate(cells_in_file) if "raises-exception" in c.metadata.get("tags", [])
    }
    expected = expected_per_code_cell(notebook)
    with notebook_run(page, lab, copy, allowed_to_raise=allowed_to_raise) as cells:
        errors = error_outputs(cells, allowed_to_raise)
        assert not errors, "\n".join(errors)

        def settled() -> bool:
            """True once all is rendered, or a widget has failed for good."""
            problems = unrendered(snapshot_cells(page), expected)
            return not problems or any(WIDGET_FAILURE_TEXTS[0] in line for line in problems)

        try:
            wait_for(settled, timeout_s=2 * PAGE_WAIT_S, what="every widget and figure to render")
        except ConditionTimeout:
            pass  # the assertion below says what is missing
        missing = unrendered(snapshot_cells(page), expected)
        assert not missing, "\n".join(missing)
        errors = error_outputs(snapshot_cells(page), allowed_to_raise)
        assert not errors, "\n".join(errors)


# ---------------------------------------------------------------------------------------------
# Before running: what a learner sees when a committed notebook is first opened

RAW_WIDGET_REPRS = (
    "VBox(children=",
    "HBox(children=",
    "IntSlider(",
    "Dropdown(",
    "Label(value=",
    "Layout(",
    "Error displaying widget",
)
COMMITTED = NOTEBOOKS + sorted((REPO_ROOT / "exercises").glob("*.ipynb"))


def twins_missing(cells: list[CellView], widget_cells: list[int]) -> list[str]:
    """Return a line per widget cell that does not show its twin (or the demo's repr)."""
    lines = []
    for index in widget_cells:
        shown = " ".join(o.text for o in cells[index].outputs) if index < len(cells) else ""
        if "Run this cell" not in shown and "BrowserStreamDemo(" not in shown:
            lines.append(
                f"cell {index} shows {shown[:200]!r}: a widget's twin should say how to open it"
            )
    return lines


@pytest.mark.parametrize("notebook", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_committed_notebook_opened_before_running_shows_no_raw_widget_repr(
    notebook: Path, lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    copy = scratch_copy(notebook, scratch_dir / "as-committed", clear_outputs=False)
    path = relative_to_root(copy)
    widget_cells = committed_widget_cells(notebook)
    n_cells = len(nbformat.read(copy, as_version=4).cells)
    try:
        open_notebook(page, lab, path)

        def drawn() -> bool:
            cells = snapshot_cells(page)
            return len(cells) == n_cells and not twins_missing(cells, widget_cells)

        try:
            wait_for(drawn, timeout_s=PAGE_WAIT_S, what="every committed cell and twin shown")
        except ConditionTimeout:
            pass  # the assertions below say what is missing
        cells = snapshot_cells(page)
        assert len(cells) == n_cells, f"the page shows {len(cells)} of {n_cells} cells"
        raw = [
            f"cell {c.index}: {text!r} in {o.text[:160]!r}"
            for c in cells
            for o in c.outputs
            for text in RAW_WIDGET_REPRS
            if text in o.text
        ]
        assert not raw, "\n".join(raw)
        missing = twins_missing(cells, widget_cells)
        assert not missing, "\n".join(missing)
    finally:
        close_notebook(page, lab, path)


# ---------------------------------------------------------------------------------------------
# Predict first: the run is shown only after a prediction is picked

LESSON_04 = REPO_ROOT / "notebooks" / "04_practice_cuts_and_drops.ipynb"
# What each "now change it" run prints that gives its answer away.
ANSWERS = ("UnicodeDecodeError", "'' complete=False", "dropped after 40 bytes")
TWIN = "Run this cell after you have picked a prediction"  # a run's twin, before it runs
PICK_FIRST = "Pick a prediction above"  # a run's box, run but not shown yet


def _reveal_texts(page: Any) -> list[str]:
    return [
        (page.locator(".lk-reveal").nth(i).text_content() or "")
        for i in range(page.locator(".lk-reveal").count())
    ]


def test_predict_first_hides_each_run_until_a_prediction_is_picked(
    lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    committed = scratch_copy(LESSON_04, scratch_dir / "predict", clear_outputs=False)
    path = relative_to_root(committed)
    try:
        # As committed: the pickers and the runs show twins, and no answer.
        open_notebook(page, lab, path)

        def reveal_cells() -> list[CellView]:
            return [c for c in snapshot_cells(page) if c.is_code and "reveal_after(" in c.source]

        def shown(cell: CellView) -> str:
            return " ".join(o.text for o in cell.outputs)

        wait_for(
            lambda: (
                len(snapshot_cells(page)) > 20 and all(TWIN in shown(c) for c in reveal_cells())
            ),
            timeout_s=PAGE_WAIT_S,
            what="the cells and the runs' twins",
        )
        assert len(reveal_cells()) == 3
        for cell in reveal_cells():
            assert TWIN in shown(cell)
            assert not any(answer in shown(cell) for answer in ANSWERS), shown(cell)
        notebook_text = " ".join(
            o.text for c in snapshot_cells(page) for o in c.outputs if "reveal" not in c.source
        )
        assert "UnicodeDecodeError: 'utf-8' codec" not in notebook_text

        # Run: still hidden until a prediction is picked; then the run appears with a verdict.
        cells = run_all_and_wait(page, lab, path, code_cell_indices(committed))
        assert not tracebacks(cells), "\n".join(tracebacks(cells))
        wait_for(
            lambda: (
                len(texts := _reveal_texts(page)) == 3 and all(PICK_FIRST in text for text in texts)
            ),
            timeout_s=PAGE_WAIT_S,
            what="the three reveals, each asking for a prediction",
        )
        for text in _reveal_texts(page):
            assert PICK_FIRST in text
            assert not any(answer in text for answer in ANSWERS), text
        picker = page.locator(".lk-prediction-1 select")
        picker.select_option(label="1000 bytes: whole text; 5 bytes: UnicodeDecodeError")
        first = page.locator(".lk-reveal").nth(0)
        expect(first).to_contain_text("UnicodeDecodeError")  # the kernel shows the run ...
        expect(first).to_contain_text("your prediction matches")  # ... and the verdict
        others = _reveal_texts(page)[1:]
        assert all(PICK_FIRST in text for text in others), others
    finally:
        close_notebook(page, lab, path)
