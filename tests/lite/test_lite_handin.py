"""Finishing the course in the zero-install edition: progress kept across a reload, one-click zip.

The learner's work lives in the browser's storage (JupyterLite's drive, IndexedDB), and the
kernel is a web worker with no disk of its own: the progress record goes to the drive
(/drive/.lessonkit-progress.json), and the hand-in leaves the browser as a download. The
test writes a solved exercise 1 into the learner's drive, runs it whole (its check()
records), reloads the page, and asks progress() in a fresh kernel; then presses the
hand-in button and reads the downloaded zip. Afterwards the drive is put back as it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import litesite
import nbformat
import pytest
from labdriver import REPO_ROOT, code_cell_indices, tracebacks, wait_for, wait_lab_restored

from conftest import FIRST_LOAD_DEADLINE_S

EX1 = "exercises/ex1_response_times.ipynb"
RECORD = ".lessonkit-progress.json"
RUN_DEADLINE_S = 600.0

SAVE_JS = """
async ([path, content]) => {
  await window.jupyterapp.serviceManager.contents.save(path, {type: 'notebook', format: 'json', content});
  return true;
}
"""
DELETE_JS = """
async (path) => {
  try { await window.jupyterapp.serviceManager.contents.delete(path); } catch (e) { return false; }
  return true;
}
"""


def _solved_ex1() -> dict:
    notebook = nbformat.read(REPO_ROOT / "solutions" / "ex1_response_times.ipynb", as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.metadata.pop("widgets", None)
    return json.loads(nbformat.writes(notebook))


@pytest.fixture
def solved_ex1_in_the_drive(lite_page):
    """Exercise 1 solved, saved in the learner's drive; put back (and the record gone) after."""
    page = lite_page.page
    blank = json.loads((REPO_ROOT / EX1).read_text())
    page.evaluate(SAVE_JS, [EX1, _solved_ex1()])
    yield page
    if not page.is_closed():
        page.evaluate(
            "() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose(); }"
        )
        page.evaluate(SAVE_JS, [EX1, blank])
        page.evaluate(DELETE_JS, RECORD)
        # The page is the session's: leave it as the next test finds it, on lesson 00 with
        # its kernel idle (with no notebook open, a test that runs code there finds none).
        litesite.open_notebook(
            page, "notebooks/00_start_here.ipynb", timeout_s=FIRST_LOAD_DEADLINE_S
        )


def test_a_check_is_still_in_progress_after_a_reload_and_submit_downloads_the_zip(
    solved_ex1_in_the_drive, lite_page
):
    page = solved_ex1_in_the_drive
    litesite.open_notebook(page, EX1, timeout_s=FIRST_LOAD_DEADLINE_S)
    solved_path = REPO_ROOT / "solutions" / "ex1_response_times.ipynb"
    cells, _seconds = litesite.clear_and_run_all(
        page, EX1, code_cell_indices(solved_path), timeout_s=RUN_DEADLINE_S
    )
    assert not tracebacks(cells), tracebacks(cells)

    # A reload: a new page, a new kernel; the record is in the browser's storage.
    page.reload()
    wait_lab_restored(page, timeout_s=FIRST_LOAD_DEADLINE_S)
    litesite.open_notebook(page, "notebooks/00_start_here.ipynb", timeout_s=FIRST_LOAD_DEADLINE_S)
    shown = litesite.execute(
        page,
        "import json\nfrom lessonkit.learner import progress\n"
        "print(json.dumps(progress().summary))",
    )
    assert shown["status"] == "ok", shown
    summary = json.loads(shown["stdout"])
    states = {line["exercise"]: line["state"] for line in summary["exercises"]}
    assert states["ex1"] == "passed" and summary["next"] == "ex2", summary
    assert summary["record"] == f"/drive/{RECORD}", summary

    # The hand-in: the button in lesson 00's course map, one click, then the download.
    litesite.execute(page, "from lessonkit.learner import submit")
    button = page.get_by_role("button", name="Hand in my work")
    if not button.count():  # lesson 00's stored output has no live widget: run its cell
        cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="submit()").last
        cell.click()
        page.keyboard.press("Shift+Enter")
    button.first.click()
    download = page.get_by_role("button", name=re.compile(r"^Download streaming-course-handin"))
    wait_for(lambda: download.count() and download.first.is_visible(), timeout_s=RUN_DEADLINE_S,
             what="the hand-in's download button")  # fmt: skip
    with page.expect_download() as downloading:
        download.first.click()
    data = Path(downloading.value.path()).read_bytes()
    status = page.locator(".lk-handin-status").first.inner_text()
    assert status == f"Handed in. Receipt: {hashlib.sha256(data).hexdigest()}"
    with zipfile.ZipFile(io.BytesIO(data)) as handed:
        manifest = json.loads(handed.read("manifest.json"))
        assert len([n for n in handed.namelist() if n.endswith(".ipynb")]) == 6
    states = {line["exercise"]: line["state"] for line in manifest["exercises"]}
    assert states["ex1"] == "passed" and states["ex2"] == "not started", states
