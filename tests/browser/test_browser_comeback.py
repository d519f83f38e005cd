"""Coming back: a saved notebook reopened with a new kernel, a kernel restarted or shut down.

Whenever a widget cannot answer any more, its cell shows the twin ("Run this cell to open
..."), never "Error displaying widget" and never a dead widget:

* a lesson saved after Run All, closed, and reopened with a new kernel (twice: a second
  save must not lose what the first one kept);
* lesson 03's demo and the explorers after the kernel restarts;
* the same after the kernel is shut down (an idle kernel culled on a hub), which the
  widgets themselves do not notice (the twinned box's lifeline does).

What counts is what the page shows: innerText, which leaves out everything hidden.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    PAGE_WAIT_S,
    REPO_ROOT,
    ConditionTimeout,
    LabServer,
    close_notebook,
    code_cell_indices,
    committed_widget_cells,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    save_artifacts,
    scratch_copy,
    tracebacks,
    wait_for,
    write_scratch_notebook,
)
from playwright.sync_api import expect

from lessonkit.lab import views

pytestmark = pytest.mark.browser

LESSON_04 = REPO_ROOT / "notebooks" / "04_practice_cuts_and_drops.ipynb"

# The visible text of each cell's outputs, in order (innerText leaves hidden outputs out).
# JupyterLab skips drawing cells off screen (content-visibility), so each is scrolled to first.
VISIBLE_OUTPUTS_JS = """
async () => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const texts = [];
  for (const cell of document.querySelectorAll(
      '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')) {
    cell.scrollIntoView({ block: 'start' });
    await frame();
    const area = cell.querySelector('.jp-OutputArea');
    texts.push(area ? area.innerText : '');
  }
  return texts;
}
"""
# True once every live twinned box on the page shows its widget (none is hidden or stale).
ALL_LIVE_JS = """
(count) => {
  const boxes = Array.from(document.querySelectorAll('.jp-Notebook .lk-twinned'));
  return boxes.length >= count && boxes.every((box) => box.offsetParent !== null
    && !box.classList.contains('lk-stale')
    && !box.classList.contains('jupyter-widgets-disconnected'));
}
"""


def visible_outputs(page: Any) -> list[str]:
    """Return what a reader sees in each cell's outputs."""
    return page.evaluate(VISIBLE_OUTPUTS_JS)


def twins_stand_in(page: Any, cells: list[int], *, stale: bool) -> list[str]:
    """Return what is wrong with the widget cells: each must show its twin, and nothing broken."""
    shown = visible_outputs(page)
    problems = []
    for i in cells:
        if i >= len(shown):  # the notebook is still being drawn (JupyterLab renders lazily)
            problems.append(f"cell {i} is not on the page yet ({len(shown)} cells are)")
            continue
        text = shown[i]
        if "Run this cell" not in text:
            problems.append(f"cell {i} shows no twin: {text[:160]!r}")
        if stale and views.STALE_NOTE not in text:
            problems.append(f"cell {i} does not say why the widget stopped: {text[:160]!r}")
    everything = "\n".join(shown)
    for broken in ("Error displaying widget", "Loading widget", "VBox(", "model not found"):
        if broken in everything:
            problems.append(f"the page shows {broken!r}")
    return problems


def wait_for_twins(page: Any, cells: list[int], *, stale: bool, what: str) -> None:
    """Return once every widget cell shows its twin; fail saying what the page still shows."""
    last: list[str] = []

    def standing_in() -> bool:
        last[:] = twins_stand_in(page, cells, stale=stale)
        return not last

    try:
        # A shut-down kernel is noticed when the page next asks the server about it.
        wait_for(standing_in, timeout_s=2 * PAGE_WAIT_S, what=what)
    except ConditionTimeout:
        raise AssertionError(f"{what}:\n" + "\n".join(last)) from None


def save(page: Any) -> None:
    """Save the open notebook (File > Save, as Ctrl+S does) and wait until it is saved."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return w && w.context && !w.context.model.dirty; }",
        timeout=PAGE_WAIT_S * 1000,
    )


def test_a_saved_lesson_reopened_with_a_new_kernel_shows_its_twins_twice_over(
    lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    copy = scratch_copy(LESSON_04, scratch_dir / "comeback")
    path = relative_to_root(copy)
    cells = committed_widget_cells(LESSON_04)
    try:
        open_notebook(page, lab, path)
        shown = run_all_and_wait(page, lab, path, code_cell_indices(copy))
        assert not tracebacks(shown), "\n".join(tracebacks(shown))
        page.wait_for_function(ALL_LIVE_JS, arg=len(cells), timeout=PAGE_WAIT_S * 1000)
        save(page)
        for visit in ("first", "second"):
            close_notebook(page, lab, path)  # the tab closed, the kernel gone
            open_notebook(page, lab, path)  # a new kernel; nothing has run in it
            wait_for_twins(page, cells, stale=False, what=f"the twins on the {visit} return")
            save(page)  # what the learner does next: the saved file must stay good
    except BaseException:
        save_artifacts(page, "comeback-reopen", [])
        raise
    finally:
        close_notebook(page, lab, path)


# --- the kernel goes away under a running lesson --------------------------------------------

SOURCES = [
    "from lessonkit.lab import browser_demo\nfrom lessonkit.lab import widgets as lw\n"
    "server = browser_demo.start_server(prefill_ms=50, per_token_ms=20)",
    "browser_demo.BrowserStreamDemo(server)",
    "lw.timeline_explorer()",
    "lw.drop_explorer()",
    "lw.arrival_stepper()",
]
WIDGET_CELLS = [1, 2, 3, 4]


@dataclass
class LivePage:
    """A running notebook with lesson 03's demo and three explorers, all live."""

    page: Any
    path: str


@pytest.fixture
def live(lab: LabServer, page: Any, scratch_dir: Path, request: Any) -> Iterator[LivePage]:
    """Run the notebook and wait until the demo streamed and every explorer is live."""
    notebook = write_scratch_notebook(scratch_dir, f"{request.node.name[:40]}.ipynb", SOURCES)
    path = relative_to_root(notebook)
    try:
        open_notebook(page, lab, path)
        shown = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(shown), "\n".join(tracebacks(shown))
        page.wait_for_function(ALL_LIVE_JS, arg=len(WIDGET_CELLS), timeout=PAGE_WAIT_S * 1000)
        for kind in ("eventsource", "fetch"):
            status = page.locator(f".lk-browser-demo-{kind} .lk-status")
            expect(status).to_have_text("done", timeout=PAGE_WAIT_S * 1000)
        yield LivePage(page, path)
    finally:
        close_notebook(page, lab, path)


def kernel_id(page: Any) -> str:
    return page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
    )


def test_after_a_kernel_restart_the_demo_and_every_explorer_say_to_run_the_cell_again(
    live: LivePage,
) -> None:
    live.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"
    )
    wait_for_twins(live.page, WIDGET_CELLS, stale=True, what="every widget cell says run again")
    expect(live.page.locator(".lk-browser-demo-run")).to_be_hidden()  # no "Stream again"


def test_after_the_kernel_is_shut_down_the_demo_and_every_explorer_say_so_too(
    live: LivePage, lab: LabServer
) -> None:
    lab.api("DELETE", f"/api/kernels/{kernel_id(live.page)}")  # what culling an idle kernel does
    wait_for_twins(live.page, WIDGET_CELLS, stale=True, what="every widget cell says run again")
    expect(live.page.locator(".lk-browser-demo-run")).to_be_hidden()  # no "Stream again"
