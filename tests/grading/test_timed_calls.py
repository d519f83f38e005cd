"""check()'s two runners give the same verdicts: a worker process, and this process under a budget.

The in-process runner is the one lessonkit picks in a browser kernel
(JupyterLite's Pyodide has no processes and no threads); here it is selected
explicitly. Each test runs the same function through both runners and
compares the feedback word for word: the same points, hints and smallest
failing input.
"""

from __future__ import annotations

import sys
import textwrap

import pytest
from answers import buggy_reader, solved
from classroom import LESSON_READER, MISTAKES, RIGHT, function_from

from lessonkit.grading import check, timed_calls
from lessonkit.grading.engine import Case, Ended, Mode, NotWritten, Raised, Returned, TimedOut
from lessonkit.grading.exercises import EXERCISES


def _both(exercise_id: str, fn, **options) -> tuple[str, str]:
    """Return the feedback of check() with the worker and with the in-process runner."""
    worker = check(exercise_id, fn, show=False, runner=timed_calls.in_worker, **options)
    here = check(exercise_id, fn, show=False, runner=timed_calls.in_this_process, **options)
    assert (worker.score, worker.passed) == (here.score, here.passed)
    return worker.feedback, here.feedback


@pytest.mark.parametrize("exercise_id", [e for e in EXERCISES if e != "now_change_it"])
def test_both_runners_give_the_same_feedback_on_each_solution(exercise_id):
    worker, here = _both(exercise_id, solved(exercise_id))
    assert worker == here
    assert "pass" in worker.splitlines()[0]


@pytest.mark.parametrize(
    "bug", ["per_chunk", "use_if", "chunk_is_event", "loads_done", "replace", "no_comments"]
)
def test_both_runners_give_the_same_feedback_on_each_known_wrong_reader(bug):
    worker, here = _both("read_stream", buggy_reader(**{bug: True}))
    assert worker == here and "FAILED" in worker


@pytest.mark.parametrize(
    ("exercise_id", "source"),
    [
        ("response_times", MISTAKES["response_times"]["rounded"]),
        ("read_stream", MISTAKES["read_stream"]["loose_ping"]),
        ("read_anthropic", MISTAKES["read_anthropic"]["loose_ping"]),
        ("read_stream", RIGHT["read_stream"]),
    ],
)
def test_both_runners_agree_on_the_classrooms_learners(exercise_id, source):
    worker, here = _both(exercise_id, function_from(source, exercise_id))
    assert worker == here


def test_both_runners_stop_an_endless_loop_within_the_limit_and_say_so_alike():
    def read_stream(chunks):
        while True:
            pass

    worker, here = _both("read_stream", read_stream, limit_s=1)
    assert worker == here
    assert "no answer within 1 s" in worker and "look for a loop that never ends" in worker


def test_the_worker_stops_a_call_by_the_cpu_time_it_spends_not_by_the_wall_clock():
    # A busy machine gives a call a share of a core: it takes longer on the wall clock but
    # spends no more CPU time. Waiting past the limit (here: sleeping) is not computing.
    import time

    def slow_but_right(chunks):
        time.sleep(1.0)
        return "ok", True

    with timed_calls.in_worker(slow_but_right, Mode(limit_s=0.5)) as calls:
        [outcome] = calls([Case("x", ([b""],))])
    assert isinstance(outcome, Returned) and outcome.value == ["ok", True], outcome


def test_a_worker_call_that_hangs_without_computing_is_stopped_by_the_wall_clock_too():
    import time

    def hangs(chunks):
        time.sleep(3600)

    with timed_calls.in_worker(hangs, Mode(limit_s=0.2)) as calls:
        outcomes = calls([Case("x", ([b""],)), Case("y", ([b""],))])
    assert [type(o) for o in outcomes] == [TimedOut]  # the batch stops at the first


def test_a_loop_that_starts_no_new_line_is_stopped_in_this_process_too():
    def spin(chunks):
        total = 0
        while True:
            total += 1

    outcome = timed_calls._call_with_budget(
        spin, Case("x", ([b""],)), 0.2, timed_calls.Recorder(), spins={}
    )
    assert isinstance(outcome, TimedOut)


def test_a_helper_defined_apart_from_the_function_travels_with_it_to_the_worker():
    namespace = {"__name__": "__main__"}  # as in a notebook: another cell's helper
    exec(textwrap.dedent(LESSON_READER).replace("def read_stream(", "def _reader_core("), namespace)
    exec("def read_stream(chunks):\n    return _reader_core(chunks)\n", namespace)
    worker, here = _both("read_stream", namespace["read_stream"])
    assert worker == here and "public checks 13/13 pass" in worker


def test_how_a_call_ended_is_a_type_in_both_runners():
    import os

    def stub(chunks):
        raise NotImplementedError

    def broken(chunks):
        raise KeyError("delta")

    def fine(chunks):
        return "", False

    def exits(chunks):
        sys.exit(3)

    def ends(chunks):
        os._exit(3)

    case = Case("x", ([b""],))
    expected = {stub: NotWritten, broken: Raised, fine: Returned, exits: Ended}
    for runner in (timed_calls.in_worker, timed_calls.in_this_process):
        for fn, kind in expected.items():
            with runner(fn, Mode(limit_s=2)) as calls:
                [outcome] = calls([case])
            assert type(outcome) is kind, (runner.__name__, fn.__name__, outcome)
    with timed_calls.in_worker(ends, Mode(limit_s=2)) as calls:
        assert isinstance(calls([case])[0], Ended)


def test_lessonkit_picks_the_in_process_runner_in_a_browser_kernel(monkeypatch):
    assert timed_calls.choose_runner() is timed_calls.in_worker
    monkeypatch.setattr(sys, "platform", "emscripten")
    assert timed_calls.choose_runner() is timed_calls.in_this_process


def test_a_function_that_cannot_be_copied_to_a_worker_is_checked_in_this_process():
    import threading

    lock = threading.Lock()  # cloudpickle cannot copy a lock

    def read_stream(chunks):
        with lock:
            return function_from(LESSON_READER, "read_stream")(chunks)

    result = check("read_stream", read_stream, show=False, runner=timed_calls.in_worker)
    assert result.passed


def test_a_worker_slow_to_start_costs_the_learner_no_time(monkeypatch):
    # A busy machine: the worker takes longer to start than a call may run. The limit
    # counts from the worker's "ready", so the call still gets its whole second.
    slow_start = (
        "import runpy, sys, time; time.sleep(2.5); sys.argv = ['child', '--worker'];"
        " runpy.run_module('lessonkit.grading.child', run_name='__main__')"
    )
    monkeypatch.setattr(timed_calls, "WORKER", [sys.executable, "-c", slow_start])
    with timed_calls.in_worker(lambda chunks: ("ok", True), Mode(limit_s=1)) as calls:
        [outcome] = calls([Case("x", ([b""],))])
    assert isinstance(outcome, Returned) and outcome.value == ["ok", True], outcome


def test_a_worker_that_never_says_ready_leaves_the_check_to_this_process(monkeypatch):
    monkeypatch.setattr(
        timed_calls, "WORKER", [sys.executable, "-c", "import sys; sys.stdin.read()"]
    )
    monkeypatch.setattr(timed_calls, "WORKER_START_S", 1.0)
    result = check("read_stream", solved("read_stream"), show=False, runner=timed_calls.in_worker)
    assert result.passed, result.feedback


def test_the_in_process_budget_uses_sys_monitoring_where_python_has_it_else_settrace():
    # Python 3.12+ (the browser's Pyodide is 3.14) has sys.monitoring: a callback per
    # function start and per loop turn instead of per line.
    expected = "monitoring" if hasattr(sys, "monitoring") else "settrace"
    with timed_calls.time_budget(1.0, timed_calls.Recorder(), spins={}) as how:
        assert how == expected
    assert sys.gettrace() is None
