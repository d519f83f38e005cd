"""An exercise round trip in the browser: the stub is "not attempted yet", a typed solution passes.

The learner's path exactly: open the exercise notebook, run it, replace the stub through
the cell editor (click, select all, type), run that cell and the check cell, and read
the verdict. The expected verdict is the check output stored in the solution notebook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from labdriver import (
    PAGE_WAIT_S,
    REPO_ROOT,
    ConditionTimeout,
    LabServer,
    close_notebook,
    code_cell_indices,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    scratch_copy,
    tracebacks,
    wait_for,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

EXERCISE = "ex2_read_stream"  # the core exercise: a stream reader that survives any cut
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
NOT_ATTEMPTED = "not attempted yet"  # what check() says of an untouched stub (contract, 4)


def learner_cell_index(exercise: nbformat.NotebookNode) -> int:
    """Return the index of the stub cell: the code cell that raises NotImplementedError."""
    return next(
        i
        for i, cell in enumerate(exercise.cells)
        if cell.cell_type == "code" and "NotImplementedError" in cell.source
    )


def check_cell_index(exercise: nbformat.NotebookNode) -> int:
    """Return the index of the check cell: the code cell calling check(...)."""
    return next(
        i
        for i, cell in enumerate(exercise.cells)
        if cell.cell_type == "code" and cell.source.lstrip().startswith("check(")
    )


def solution_source(solution: nbformat.NotebookNode, index: int) -> str:
    """Return the solution notebook's code for cell index, without the solution markers."""
    lines = solution.cells[index].source.splitlines()
    return "\n".join(line for line in lines if line.strip() not in SOLUTION_MARKERS)


def stored_verdict(solution: nbformat.NotebookNode, index: int) -> str:
    """Return the first line of the check output stored in the solution notebook."""
    for output in solution.cells[index].outputs:
        text = output.get("data", {}).get("text/plain") or output.get("text", "")
        if text:
            return text.splitlines()[0]
    raise AssertionError(f"the solution notebook stores no check output in cell {index}")


def test_a_typed_solution_turns_the_check_from_not_attempted_to_pass(
    lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    exercise_path = REPO_ROOT / "exercises" / f"{EXERCISE}.ipynb"
    exercise = nbformat.read(exercise_path, as_version=4)
    solution = nbformat.read(REPO_ROOT / "solutions" / f"{EXERCISE}.ipynb", as_version=4)
    learner, check = learner_cell_index(exercise), check_cell_index(exercise)
    typed = solution_source(solution, learner)
    verdict = stored_verdict(solution, check)
    assert "pass" in verdict, f"the solution notebook's own check did not pass: {verdict}"

    copy = scratch_copy(exercise_path, scratch_dir)
    path = relative_to_root(copy)
    cells = page.locator(".jp-Notebook .jp-Cell")
    try:
        open_notebook(page, lab, path)
        ran = run_all_and_wait(page, lab, path, code_cell_indices(copy))
        assert not tracebacks(ran), "\n".join(tracebacks(ran))
        check_output = cells.nth(check).locator(".jp-OutputArea")
        expect(check_output).to_contain_text(NOT_ATTEMPTED, timeout=60_000)

        editor = cells.nth(learner).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(typed)

        def in_model() -> str:
            return page.evaluate(
                "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i]"
                ".model.sharedModel.getSource()",
                learner,
            )

        try:  # the editor hands what was typed to the cell's model
            wait_for(lambda: in_model() == typed, timeout_s=PAGE_WAIT_S, what="the typed code")
        except ConditionTimeout:
            pass  # the assertion below shows the difference
        assert in_model() == typed, "the editor changed what was typed (auto-indent?)"
        page.keyboard.press("Shift+Enter")  # run the learner's cell
        expect(cells.nth(learner).locator(".jp-InputArea-prompt")).to_have_text(
            "[" + str(len(code_cell_indices(copy)) + 1) + "]:", timeout=60_000
        )

        cells.nth(check).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")  # run the check cell
        expect(check_output).to_contain_text(verdict, timeout=120_000)
        expect(check_output).not_to_contain_text(NOT_ATTEMPTED)
    finally:
        close_notebook(page, lab, path)
