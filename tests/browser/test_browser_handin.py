"""Finishing the course in JupyterLab: a check is remembered, then one click hands in.

A course folder of the test's own (scratch): exercises 1-5 solved, exercise 6 missing. In
the session's JupyterLab page the learner runs exercise 1 whole, sees it passed in
progress(), types a line without saving, and presses the hand-in button: the page must
save that edit first, and the zip the Download button gives must hold it, name exercise 6
as missing, and have the sha256 the page shows as the receipt.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
from pathlib import Path

import nbformat
import pytest
from labdriver import (
    PAGE_WAIT_S,
    close_notebook,
    code_cell_indices,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    tracebacks,
)

ROOT = Path(__file__).resolve().parents[2]
SOLVED = ["ex1_response_times", "ex2_read_stream", "ex3_now_change_it", "ex4_read_anthropic",
          "ex5_resume"]  # fmt: skip
UNSAVED_NOTE = "my last edit, not saved yet"

pytestmark = pytest.mark.browser


@pytest.fixture
def course(scratch_dir: Path) -> Path:
    """A course folder of solved exercises 1-5 (outputs cleared) and no exercise 6."""
    folder = scratch_dir / "handin-course"
    (folder / "notebooks").mkdir(parents=True)
    (folder / "exercises").mkdir()
    for stem in SOLVED:
        notebook = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        notebook.metadata.pop("widgets", None)
        nbformat.write(notebook, folder / "exercises" / f"{stem}.ipynb")
    return folder


def _record_dir() -> Path:
    # The test run's record folder (the repository's conftest.py), which the lab inherits.
    return Path(os.environ["LESSONKIT_RECORD_DIR"])


def test_a_check_shows_in_progress_and_one_click_hands_in_the_saved_work(page, lab, course):
    notebook = course / "exercises" / "ex1_response_times.ipynb"
    path = relative_to_root(notebook)
    (_record_dir() / ".lessonkit-progress.json").unlink(missing_ok=True)
    try:
        open_notebook(page, lab, path)
        cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(cells), tracebacks(cells)
        progress_cell = next(c for c in cells if "from lessonkit.learner import" in c.source)
        shown = " ".join(o.text for o in progress_cell.outputs)
        assert re.search(r"ex1_response_times\.ipynb\s*passed", shown), shown
        assert "Next: ex2." in shown, shown

        # An edit typed into the first code cell, not saved (JupyterLab autosaves every 120 s).
        editor = page.locator(".jp-Notebook .jp-CodeCell .cm-content").first
        editor.click()
        page.keyboard.press("Control+End")
        page.keyboard.type(f"\n# {UNSAVED_NOTE}")
        assert UNSAVED_NOTE not in notebook.read_text()

        button = page.get_by_role("button", name="Hand in my work")
        button.click()
        download_button = page.get_by_role(
            "button", name=re.compile(r"^Download streaming-course-handin")
        )
        download_button.wait_for(state="visible", timeout=PAGE_WAIT_S * 1000 * 2)
        with page.expect_download() as downloading:
            download_button.click()
        data = Path(downloading.value.path()).read_bytes()
        status = page.locator(".lk-handin-status").inner_text()
        report = page.locator(".lk-handin pre").inner_text()
    finally:
        close_notebook(page, lab, path)

    assert UNSAVED_NOTE in notebook.read_text(), "the page saved the open notebook first"
    assert status == f"Handed in. Receipt: {hashlib.sha256(data).hexdigest()}"
    with zipfile.ZipFile(io.BytesIO(data)) as handed:
        names = set(handed.namelist())
        assert names == {"manifest.json", *(f"{s}.ipynb" for s in SOLVED)}
        assert UNSAVED_NOTE in handed.read("ex1_response_times.ipynb").decode()
        manifest = json.loads(handed.read("manifest.json"))
    states = {line["exercise"]: line["state"] for line in manifest["exercises"]}
    assert states == {"ex1": "passed", "ex2": "passed", "ex3": "passed", "ex4": "passed",
                      "ex5": "passed", "ex6": "missing"}  # fmt: skip
    assert "Not handed in (no notebook): ex6." in report
    assert "autosaves" not in report  # the page could save, so no last-saved warning
