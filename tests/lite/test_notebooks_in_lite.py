"""Every lesson and exercise notebook in the zero-install site, and check() in its kernel.

Each notebook is opened in the site (its own Pyodide kernel), cleared and run with Run All
Cells, as a learner does: no error output. That covers the lessons' live server (in-process
there), raw bytes, cancelled streams, figures (drawn as SVG: no matplotlib offline), lesson
03's demo cells and the cells whose stored full-edition results are shown instead.

check() in the browser kernel must give what it gives in JupyterLab, word for word: the
solution's full marks, a known wrong answer's points and hint, the course-answer notice,
and an endless loop stopped within its limit (by sys.monitoring: no threads there).
"""

from __future__ import annotations

import json
import textwrap

import nbformat
import pytest
from answers import solved
from classroom import MISTAKES
from labdriver import REPO_ROOT, STDERR_MIME, code_cell_indices, tracebacks
from litesite import clear_and_run_all, execute, open_notebook
from survey import SHUT_DOWN_KERNELS_JS

pytestmark = pytest.mark.browser

RUN_ALL_DEADLINE_S = 600.0  # only stops a hung page; the times are printed, not judged
OPEN_DEADLINE_S = 600.0

LESSONS = sorted(p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("notebooks/*.ipynb"))
EXERCISES = sorted(p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("exercises/*.ipynb"))

RUN_ALL = [*LESSONS, *EXERCISES]


@pytest.fixture
def fresh_page(lite_page):
    """The site's page with no kernel running (each notebook gets a kernel of its own)."""
    lite_page.page.evaluate(SHUT_DOWN_KERNELS_JS)
    return lite_page


@pytest.mark.parametrize("path", RUN_ALL)
def test_run_all_gives_no_error_output_in_the_browser_kernel(fresh_page, times, path):
    page = fresh_page.page
    open_notebook(page, path, timeout_s=OPEN_DEADLINE_S)
    code = code_cell_indices(REPO_ROOT / path)
    cells, seconds = clear_and_run_all(page, path, code, timeout_s=RUN_ALL_DEADLINE_S)
    times.note(f"run all: {path}", seconds)
    assert tracebacks(cells) == []
    assert [o.text for c in cells for o in c.outputs if o.mime == STDERR_MIME] == []
    by_index = {c.index: c for c in cells}
    assert all(by_index[i].executed for i in code), "every code cell ran"


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
    from lessonkit.grading import check, runners

    result = check(exercise, namespace[exercise], show=False, runner=runners.in_worker, **options)
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
        "from lessonkit.grading import runners\n"
        "with runners.time_budget(1.0, runners.Recorder(), {}) as how:\n"
        "    print(how)",
    )
    assert budget["stdout"].strip() == "monitoring"  # Pyodide's Python 3.14 has sys.monitoring
    define(lite_page, ENDLESS)
    endless = check_in_kernel(lite_page, exercise, limit_s=1)
    assert endless == check_here(exercise, ENDLESS, limit_s=1)
    assert "no answer within 1 s" in endless["feedback"]


def test_no_request_left_the_site_while_the_notebooks_ran(lite_page):
    assert lite_page.outside_requests() == []
