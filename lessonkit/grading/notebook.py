"""Graded exercises in the notebook: ``check(exercise_id, fn) -> CheckResult``.

    from lessonkit.grading import check
    check("read_stream", read_stream)

``check`` runs the public checks of one exercise (``lessonkit.grading.engine``)
and shows what failed: the rule, the smallest input that shows the learner's
root bug, what was expected and what came back, and a hint. It never raises.

The learner's function runs out of the kernel's reach, under a time limit per
call (``lessonkit.grading.timed_calls``): in a worker process started for the
check, or -- in a browser kernel, which has no processes -- in the kernel
under a time budget (``sys.monitoring``, else ``sys.settrace``) that stops a
loop written in Python (not one inside C code). Both give the same points and hints. The kernel compares each
result with the reference, so nothing the function does can change the
verdict. ``try_it`` runs one call the same way.

No OS sandbox here, on purpose: this is the learner's own code in the
learner's own kernel, which it could harm without ``check`` anyway, and the
check must work wherever the notebook runs. The calls still record the
course's own answers they run into (``integrity``), so ``check`` says "write
your own reader" where ``lessonkit grade`` would give no points.
``lessonkit grade`` is where submissions run sandboxed, and where the hidden
checks run.

Each learner's own ``check()`` writes its outcome into the progress record
(``lessonkit.course.record``): the public checks passed, the points, when; never
the code. A check while grading (``grading_mode()``: ``lessonkit grade``, and
``public_results`` for ``submit()``) records nothing, nor does a stub's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from lessonkit.grading import integrity
from lessonkit.grading.codec import materialize, to_jsonable
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    Answers,
    Case,
    Ended,
    Exercise,
    Mode,
    Plan,
    Raised,
    Report,
    Returned,
    TimedOut,
    evaluate,
    evaluate_answers,
)
from lessonkit.grading.ex5_resume import FakeFetch, FetchScript
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import feedback_html, report_text
from lessonkit.grading.timed_calls import Runner, choose_runner

GRADING_ENV = "LESSONKIT_GRADING"
SHOWN_RESULT_CHARS = 10_000  # longest result repr try_it prints


def grading_mode() -> bool:
    """Return True inside ``lessonkit grade``, where checks and live demos are skipped."""
    return os.environ.get(GRADING_ENV) == "1"


@dataclass(frozen=True)
class CheckResult:
    """The verdict of ``check``: passed (all public checks), score, max_score, feedback."""

    passed: bool
    score: float
    max_score: float
    feedback: str = field(repr=False, default="")
    report: Report | None = field(repr=False, default=None, compare=False)
    exercise: str = ""
    shown_in_cell: int | None = field(repr=False, default=None, compare=False)

    def __repr__(self) -> str:
        """Return a one-line summary, e.g. "CheckResult(read_stream: 30/30 passed)"."""
        report = self.report
        if report is not None and report.not_attempted:
            verdict = "not attempted"
        else:
            verdict = "passed" if self.passed else "not passed yet"
        name = self.exercise or "check"
        return f"CheckResult({name}: {self.score:g}/{self.max_score:g} {verdict})"

    def _ipython_display_(self) -> None:
        """Show the feedback in a notebook, unless check() has just shown it in this cell.

        So a check cell shows its feedback once, with or without a trailing
        ``;`` (nbval runs cells without history, where IPython ignores the ``;``).
        """
        if self.shown_in_cell is None or self.shown_in_cell != _execution_count():
            _display(self)


# ---------------------------------------------------------------------------
# check()


def check(
    exercise_id: str,
    fn: Any,
    *,
    show: bool = True,
    limit_s: float = CALL_LIMIT_S,
    runner: Runner | None = None,
) -> CheckResult:
    """Return the CheckResult of the public checks of one exercise, shown in the notebook.

    ``fn`` is the learner's function (for the "now change it" exercise: the
    dict of answers). ``runner`` picks where the calls run (tests; by default
    lessonkit chooses, see ``timed_calls.choose_runner``). Never raises: problems
    become feedback.
    """
    exercise = EXERCISES.get(exercise_id)
    if exercise is None:
        known = ", ".join(EXERCISES)
        text = f"unknown exercise {exercise_id!r}; the exercises are: {known}"
        return _finish(CheckResult(False, 0.0, 0.0, text), show)
    if grading_mode():
        return CheckResult(
            False, 0.0, exercise.points, "checked by `lessonkit grade`", exercise=exercise_id
        )
    try:
        report = public_report(exercise, fn, Mode(limit_s=limit_s), runner or choose_runner())
    except Exception as exc:  # the checker's own bug must not break the learner's notebook
        text = (
            f"{exercise_id}: the checker itself failed ({type(exc).__name__}: {exc}); "
            "please tell the instructor."
        )
        return _finish(CheckResult(False, 0.0, exercise.points, text, exercise=exercise_id), show)
    result = CheckResult(
        report.passed, report.score, exercise.points, report_text(report), report, exercise_id
    )
    _record(report)
    return _finish(result, show)


def _record(report: Report) -> None:
    """Write a learner's check into their progress record; never raises, never shows."""
    try:
        line = report.public_result()
        if line["state"] != "not started":
            from lessonkit.course.record import record

            record(
                report.id,
                passed=line["state"] == "passed",
                checks_passed=line["checks_passed"],
                checks=line["checks"],
                points=line["points"],
                max_points=line["max_points"],
            )
    except Exception:  # the record is a bonus: a check's feedback never depends on it
        pass


def public_report(exercise: Exercise, fn: Any, mode: Mode, runner: Runner) -> Report:
    """Return the Report of ``fn`` (a dict for ``Answers``) on the exercise's public rules."""
    if isinstance(exercise, Answers):
        return evaluate_answers(exercise, to_jsonable(fn), mode, used=integrity.copies(fn))
    if not callable(fn):
        problem = f"check({exercise.id!r}, ...) needs your function; it got {_kind_of(fn)}."
        return Report(exercise, problem=problem)
    copied = integrity.copies(fn)  # a pasted copy of the course's code, or of its cases
    plan = Plan(exercise, mode)
    with runner(fn, mode, plan) as calls:
        return evaluate(exercise, calls, mode, plan=plan, used=copied)


def _kind_of(value: Any) -> str:
    return "nothing (None)" if value is None else f"a {type(value).__name__}"


def _finish(result: CheckResult, show: bool) -> CheckResult:
    if not show:
        return result
    # Remember the cell, so the result echoed at the end of that cell shows nothing more.
    shown = replace(result, shown_in_cell=_execution_count())
    _display(shown)
    return shown


def _ipython() -> Any:
    """Return the running IPython shell, or None outside IPython."""
    shell = sys.modules.get("IPython")
    try:
        return shell.get_ipython() if shell is not None else None
    except Exception:
        return None


def _execution_count() -> int | None:
    """Return the number of the cell IPython is running now (None outside IPython)."""
    return getattr(_ipython(), "execution_count", None)


def _display(result: CheckResult) -> None:
    if _ipython() is not None:
        from IPython.display import display

        html = feedback_html(result.feedback, result.report)
        display({"text/plain": result.feedback, "text/html": html}, raw=True)
    else:
        print(result.feedback)


# ---------------------------------------------------------------------------
# Small helpers for the exercise notebooks


def try_it(
    fn: Callable[..., Any],
    *args: Any,
    limit_s: float = CALL_LIMIT_S,
    runner: Runner | None = None,
) -> None:
    """Print what ``fn(*args)`` returns; a stub, an error or an endless loop is printed, never raised.

    The exercise notebooks use it for their "try it" cells, so that they run
    top to bottom before the learner has written anything. The call runs like
    ``check``'s, stopped after ``limit_s`` seconds, so a loop that never ends
    cannot hang the kernel. What the function prints is shown above its
    result. A ``practice_fetch`` argument still records the Last-Event-ID of
    each call in ``.requests``. Inside ``lessonkit grade`` nothing runs.
    """
    name = getattr(fn, "__name__", "your function")
    if grading_mode():
        print(f"{name}: try it skipped while grading")
        return
    if not callable(fn):
        print(f"try_it needs your function first; it got {_kind_of(fn)}")
        return
    printed, verdict = _try_call(name, fn, args, limit_s, runner or choose_runner())
    if printed:
        print(printed, end="" if printed.endswith("\n") else "\n")
    print(verdict)


def _shown_call(fn: Callable[..., Any], name: str, args: tuple, *fetches: Any) -> dict:
    """Return {"printed": ..., "verdict": ...} of fn(*args); a fetch replaces the FakeFetch."""
    real = [fetches[0] if isinstance(a, FakeFetch) and fetches else a for a in args]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = materialize(fn(*real))
    except NotImplementedError:
        verdict = f"{name} is not written yet"
    except Exception as exc:
        verdict = f"{name} raised {type(exc).__name__}: {exc}"
    else:
        text = repr(value)
        if len(text) > SHOWN_RESULT_CHARS:
            text = text[:SHOWN_RESULT_CHARS] + f" ... ({len(text)} characters in all)"
        verdict = f"{name} -> {text}"
    return {"printed": printed.getvalue(), "verdict": verdict}


def _try_call(
    name: str, fn: Callable[..., Any], args: tuple, limit_s: float, runner: Runner
) -> tuple[str, str]:
    """Return (what fn printed, a verdict line) for one call of fn(*args) under a time limit."""
    fetch = next((a for a in args if isinstance(a, FakeFetch)), None)
    case = Case("try it", () if fetch is None else (fetch,))
    shown = functools.partial(_shown_call, fn, name, args)
    with runner(shown, Mode(limit_s=limit_s)) as calls:
        [outcome] = calls([case])[:1] or [Ended()]
    if isinstance(outcome, TimedOut):
        return "", (
            f"{name} gave no answer within {limit_s:g} s and was stopped "
            "(an endless loop? a `while` whose condition never changes?)"
        )
    if isinstance(outcome, Ended):
        return "", f"{name} ended the process running it (sys.exit / os._exit?)"
    if isinstance(outcome, Raised):
        return "", f"{name} raised {outcome.error}"
    value = (
        outcome.value if isinstance(outcome, Returned) and isinstance(outcome.value, dict) else {}
    )
    return str(value.get("printed", "")), str(value.get("verdict", f"{name} -> ?"))


def practice_fetch(
    drops: Iterable[int | None] = (),
    *,
    tokens: Iterable[str] = ("Your", " café", " order", " ships", " on", " Monday", "."),
    seed: int = 0,
    heartbeat_ms: float | None = None,
) -> FakeFetch:
    """Return a fake ``fetch(last_event_id) -> chunks`` whose connection i drops after drops[i] bytes.

    It serves the GET /v1/stream format (``id:`` per token, ``event: done`` at
    the end) and records the Last-Event-ID of each call in ``.requests``.
    ``seed`` picks where each connection's bytes are cut; ``heartbeat_ms`` adds
    ``: ping`` comments. The resume check's feedback prints the exact call.
    """
    return FakeFetch(FetchScript(tuple(tokens), tuple(drops), seed, heartbeat_ms))


# ---------------------------------------------------------------------------
# Exercise 5, live: the real server's GET /v1/stream


def http_fetch(base_url: str, **query: Any) -> Callable[[str | None], Iterator[bytes]]:
    """Return fetch(last_event_id) -> chunks of one GET /v1/stream to the local server.

    ``query`` goes into the URL (prompt=..., drop_after_bytes=...). A dropped
    connection simply ends the chunks, as it would for a browser.
    """
    import httpx

    from lessonkit.serve.inprocess import http_client  # also reaches the browser's in-process one

    def fetch(last_event_id: str | None = None) -> Iterator[bytes]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = str(last_event_id)
        try:
            with (
                http_client(timeout=10.0) as client,
                client.stream(
                    "GET", base_url + "/v1/stream", params=query, headers=headers
                ) as response,
            ):
                if response.status_code == 204:
                    return
                yield from response.iter_raw()
        except httpx.HTTPError:
            return  # the connection dropped: what came so far is all there is

    return fetch


def live_resume(
    resume: Callable[[Callable[..., Iterable[bytes]]], str],
    *,
    drop_after_bytes: int = 120,
    prompt: str = "When will my order arrive?",
    prefill_ms: float = 50,
    per_token_ms: float = 5,
) -> str | None:
    """Run ``resume`` against the real local server, which drops every connection early.

    Prints each request's Last-Event-ID and the text; returns the text
    (None while grading, where live demos are skipped).
    """
    if grading_mode():
        print("live demo skipped while grading")
        return None
    # The one place this layer starts the server: only this live demo needs it (in the
    # browser kernel, serve.running puts it in-process: no socket there).
    from lessonkit.serve import running

    with running(prefill_ms=prefill_ms, per_token_ms=per_token_ms) as url:
        fetch = http_fetch(url, prompt=prompt, drop_after_bytes=drop_after_bytes)
        asked: list[str | None] = []

        def logged_fetch(last_event_id: str | None = None) -> Iterator[bytes]:
            asked.append(last_event_id)
            if len(asked) > 50:
                raise RuntimeError("more than 50 connections; does your loop stop at 'done'?")
            return fetch(last_event_id)

        try:
            text = resume(logged_fetch)
        except NotImplementedError:
            print("resume is not written yet")
            return None
        except Exception as exc:
            print(f"resume raised {type(exc).__name__}: {exc}")
            return None
    print(f"{len(asked)} connections, Last-Event-ID sent: {asked}")
    print(f"text: {text!r}")
    return text
