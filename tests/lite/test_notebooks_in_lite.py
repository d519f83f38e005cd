"""Every lesson and exercise notebook in the zero-install site, and check() in its kernel.

Each notebook is opened in the site (its own Pyodide kernel), cleared and run with Run All
Cells, as a learner does: no error output. That covers the lessons' live server (in-process
there), raw bytes, cancelled streams, figures (drawn as SVG: no matplotlib offline), lesson
03's demo cells and the cells whose stored full-edition results are shown instead. Then, in
the same page and kernel, the first control of every explorer the notebook shows is moved
as a learner moves it, and the explorer must show what its pure readouts function says
(tests/lite/explorer_moves.py reads which explorers a notebook has from its cells).

check() in the browser kernel must give what it gives in JupyterLab, word for word: the
solution's full marks, a known wrong answer's points and hint, the course-answer notice,
and an endless loop stopped within its limit (by sys.monitoring: no threads there).
"""

from __future__ import annotations

import json
import textwrap
import time
from dataclasses import dataclass
from typing import Any

import explorer_moves
import nbformat
import pytest
from answers import solved
from classroom import MISTAKES
from labdriver import (
    REPO_ROOT,
    STDERR_MIME,
    CellView,
    ConditionTimeout,
    code_cell_indices,
    save_artifacts,
    tracebacks,
    wait_for,
)
from litesite import clear_and_run_all, execute, open_notebook
from playwright.sync_api import expect
from survey import SHUT_DOWN_KERNELS_JS

pytestmark = pytest.mark.browser

RUN_ALL_DEADLINE_S = 600.0  # only stops a hung page; the times are printed, not judged
OPEN_DEADLINE_S = 600.0
VIEW_TIMEOUT_MS = 60_000  # for one explorer to show a view; it takes well under a second

LESSONS = sorted(p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("notebooks/*.ipynb"))
EXERCISES = sorted(p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("exercises/*.ipynb"))

RUN_ALL = [*LESSONS, *EXERCISES]


@pytest.fixture
def fresh_page(lite_page):
    """The site's page with no kernel running (each notebook gets a kernel of its own)."""
    lite_page.page.evaluate(SHUT_DOWN_KERNELS_JS)
    return lite_page


@dataclass(frozen=True)
class RanNotebook:
    """One notebook after Run All in a kernel of its own, still open in the session's page."""

    path: str
    code: list[int]  # the indices of its code cells
    cells: list[CellView]  # the page's cells once all ran


@pytest.fixture(scope="module", params=RUN_ALL)
def ran_all(request, lite, times) -> RanNotebook:
    """Each notebook opened in a fresh kernel and run with Run All, once for the tests below.

    Module-scoped, so pytest runs both tests of one notebook one after the other on the
    same page and kernel: the explorers are moved where Run All left them, and the slowest
    stage does not open each notebook twice.
    """
    path, page = request.param, lite.page
    first_line = len(lite.console_lines)
    try:
        page.evaluate(SHUT_DOWN_KERNELS_JS)
        open_notebook(page, path, timeout_s=OPEN_DEADLINE_S)
        code = code_cell_indices(REPO_ROOT / path)
        cells, seconds = clear_and_run_all(page, path, code, timeout_s=RUN_ALL_DEADLINE_S)
    except BaseException:
        save_artifacts(page, f"lite-run-all-{path}", lite.console_lines[first_line:])
        raise
    times.note(f"run all: {path}", seconds)
    return RanNotebook(path, code, cells)


def test_run_all_gives_no_error_output_in_the_browser_kernel(ran_all, lite_page):
    cells, code = ran_all.cells, ran_all.code
    assert tracebacks(cells) == []
    assert [o.text for c in cells for o in c.outputs if o.mime == STDERR_MIME] == []
    by_index = {c.index: c for c in cells}
    assert all(by_index[i].executed for i in code), "every code cell ran"


def test_the_first_control_of_every_explorer_changes_its_view_in_the_browser_kernel(
    ran_all, lite_page, times
):
    assert tracebacks(ran_all.cells) == [], "Run All failed (see the test before this one)"
    page = lite_page.page
    shown = explorer_moves.explorers_in(REPO_ROOT / ran_all.path)
    expected = [(e.cell, e.css_class) for e in shown]
    boxes: list[tuple[int, str]] = []

    def every_explorer_rendered() -> bool:
        boxes[:] = explorer_moves.explorer_boxes(page)
        return boxes == expected

    try:
        wait_for(every_explorer_rendered, timeout_s=120, what="the explorers to render")
    except ConditionTimeout:
        raise AssertionError(
            f"the page shows the explorers {boxes} (cell, box); the notebook's cells build"
            f" {expected}"
        ) from None
    if not shown:  # the exercises: no explorer in their cells, and none on the page
        assert boxes == expected == []
    started = time.monotonic()
    for explorer in shown:
        what = f"cell {explorer.cell}, {explorer.call}: {explorer.move.what} (.{explorer.control})"
        assert explorer.move.after != explorer.move.before, f"{what} would change nothing"
        cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        box = cell.nth(explorer.cell).locator(f".lk-twinned.{explorer.css_class}")
        expect_view(box, explorer.move.before, f"{what}: before")
        explorer.move.act(box)
        expect_view(box, explorer.move.after, f"{what}: after")
    if shown:
        times.note(f"first controls: {ran_all.path}", time.monotonic() - started)


STATE_EXPECTATIONS = {
    "visible": "to_be_visible",
    "hidden": "to_be_hidden",
    "enabled": "to_be_enabled",
    "disabled": "to_be_disabled",
}


def expect_view(box: Any, view: explorer_moves.View, what: str) -> None:
    """Wait until the explorer's box shows `view`: every readout's text, every control's state."""
    for css_class, text in view.texts.items():
        readout = box.locator(f".{css_class} .widget-html-content")
        expect(readout, f"{what}: .{css_class}").to_have_text(text, timeout=VIEW_TIMEOUT_MS)
    for css_class, state in view.states.items():
        control = expect(box.locator(f".{css_class}").first, f"{what}: .{css_class} {state}")
        getattr(control, STATE_EXPECTATIONS[state])(timeout=VIEW_TIMEOUT_MS)


def test_every_explorer_in_lessonkit_widgets_has_a_first_move() -> None:
    functions = explorer_moves.explorer_functions()
    assert len(functions) == 9 and set(functions) == set(explorer_moves.MOVES)


def test_every_explorer_is_shown_by_a_lesson_so_the_test_above_moves_it() -> None:
    shown = {e.function for p in LESSONS for e in explorer_moves.explorers_in(REPO_ROOT / p)}
    assert shown == set(explorer_moves.explorer_functions())


# --------------------------------------------------------------------------- check() in Pyodide

EXERCISE_NOTEBOOK = {
    "response_times": "ex1_response_times",
    "read_stream": "ex2_read_stream",
    "now_change_it": "ex3_now_change_it",
    "read_anthropic": "ex4_read_anthropic",
    "resume": "ex5_resume",
    "parse_sse": "ex6_parse_sse",
}
# A known wrong answer for each exercise: the classroom's mistakes where it has one, else a
# change of the solution itself (the name still holds the solution when this runs).
WRONG = {
    "response_times": MISTAKES["response_times"]["first_is_prefill"],
    "read_stream": MISTAKES["read_stream"]["loose_ping"],
    "read_anthropic": MISTAKES["read_anthropic"]["loose_ping"],
    "now_change_it": 'now_change_it = {**now_change_it, "decode_1000_text": "Your order"}',
    "resume": textwrap.dedent(
        """
        _solution = resume
        def resume(fetch):  # never sends Last-Event-ID: starts over after every drop
            return _solution(lambda last_event_id=None: fetch(None))
        """
    ),
    "parse_sse": textwrap.dedent(
        """
        _solution = parse_sse
        def parse_sse(chunks):  # strips every value, not just one leading space
            return [(kind, data.strip(), last_id) for kind, data, last_id in _solution(chunks)]
        """
    ),
}
COURSE_ANSWER = textwrap.dedent(
    """
    from lessonkit.core.client import read_stream as _course_reader
    def read_stream(chunks):
        return _course_reader(chunks)
    """
)
ENDLESS = "def read_stream(chunks):\n    while True:\n        pass\n"

CHECK_IN_KERNEL = """
import json
from lessonkit.grading import check as _check
_result = _check({exercise!r}, {name}, show=False, **{options!r})
print(json.dumps({{"score": _result.score, "passed": _result.passed, "feedback": _result.feedback}}))
"""


def check_in_kernel(lite_page, exercise: str, **options) -> dict:
    """Return score, passed and feedback of check() in the browser kernel, for what is defined."""
    code = CHECK_IN_KERNEL.format(exercise=exercise, name=exercise, options=options)
    result = execute(lite_page.page, code)
    assert result["status"] == "ok", f"{result['error']}\n{result['stderr']}"
    return json.loads(result["stdout"].strip().splitlines()[-1])


def define(lite_page, source: str) -> None:
    result = execute(lite_page.page, source)
    assert result["status"] == "ok", f"{result['error']}\n{result['stderr']}"


def solution_of(exercise: str):
    """Return the solution notebook's answer (its function, or now_change_it's dict) here."""
    if exercise != "now_change_it":
        return solved(exercise)
    from lessonkit.grading import child

    path = REPO_ROOT / "solutions" / f"{EXERCISE_NOTEBOOK[exercise]}.ipynb"
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    cells = [source for source in cells if "check(" not in source]
    found, errors, _ = child.run_cells(cells, [], [exercise], 20)
    assert not errors, errors
    return found[exercise]


def check_here(exercise: str, source: str | None = None, **options) -> dict:
    """Return what check() gives in this CPython for the solution, or for `source` run after it."""
    namespace = {"__name__": "__main__", exercise: solution_of(exercise)}
    if source is not None:
        exec(textwrap.dedent(source), namespace)
    from lessonkit.grading import check, timed_calls

    result = check(
        exercise, namespace[exercise], show=False, runner=timed_calls.in_worker, **options
    )
    return {"score": result.score, "passed": result.passed, "feedback": result.feedback}


@pytest.fixture
def solution_kernel(fresh_page, request):
    """The exercise's notebook in the site, with its solution's cells run in its kernel."""
    exercise = request.param
    path = f"solutions/{EXERCISE_NOTEBOOK[exercise]}.ipynb"
    open_notebook(fresh_page.page, path.replace("solutions/", "exercises/"), timeout_s=600)
    cells = nbformat.read(REPO_ROOT / path, as_version=4).cells
    for cell in cells:
        if cell.cell_type == "code" and "check(" not in cell.source:
            define(fresh_page, cell.source)
    return fresh_page, exercise


@pytest.mark.parametrize("solution_kernel", list(EXERCISE_NOTEBOOK), indirect=True)
def test_check_in_the_browser_gives_the_solution_and_a_wrong_answer_what_jupyterlab_gives(
    solution_kernel,
):
    lite_page, exercise = solution_kernel
    right = check_in_kernel(lite_page, exercise)
    assert right == check_here(exercise)
    assert right["passed"] and "pass" in right["feedback"].splitlines()[0]
    define(lite_page, textwrap.dedent(WRONG[exercise]))
    wrong = check_in_kernel(lite_page, exercise)
    assert wrong == check_here(exercise, WRONG[exercise])
    assert not wrong["passed"] and wrong["score"] < right["score"]


@pytest.mark.parametrize("solution_kernel", ["read_stream"], indirect=True)
def test_check_in_the_browser_notices_the_course_answer_and_stops_an_endless_loop(solution_kernel):
    lite_page, exercise = solution_kernel
    define(lite_page, COURSE_ANSWER)
    course = check_in_kernel(lite_page, exercise)
    assert course == check_here(exercise, COURSE_ANSWER)
    assert "write your own reader" in course["feedback"]
    budget = execute(
        lite_page.page,
        "from lessonkit.grading import timed_calls\n"
        "with timed_calls.time_budget(1.0, timed_calls.Recorder(), {}) as how:\n"
        "    print(how)",
    )
    assert budget["stdout"].strip() == "monitoring"  # Pyodide's Python 3.14 has sys.monitoring
    define(lite_page, ENDLESS)
    endless = check_in_kernel(lite_page, exercise, limit_s=1)
    assert endless == check_here(exercise, ENDLESS, limit_s=1)
    assert "no answer within 1 s" in endless["feedback"]


def test_no_request_left_the_site_while_the_notebooks_ran(lite_page):
    assert lite_page.outside_requests() == []
