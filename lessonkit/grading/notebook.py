"""Graded exercises in the notebook: ``check(exercise_id, fn) -> CheckResult``.

    from lessonkit.grading import check
    check("read_stream", read_stream)

``check`` runs the public checks of one exercise (``lessonkit.grading.engine``)
and shows what failed: the rule, the smallest input that breaks the function,
what was expected and what came back, and a hint. It never raises.

The learner's function runs in a forked copy of the kernel, a rule's inputs
per round trip, with a time limit per call: a function that never returns is
killed after a few seconds and the kernel stays usable. (Where fork is
missing, a thread runs it instead; a runaway thread is then left behind.) The
kernel compares each result with the reference, so nothing the function does
in its copy can change the verdict. ``try_it`` runs one call the same way.

No OS sandbox here, on purpose: this is the learner's own code in the
learner's own kernel, which it could harm without ``check`` anyway, and the
check must stay fast and work wherever the notebook runs (a laptop, Binder,
JupyterHub), with or without bubblewrap. The fork still records calls into the
course's own answers (``integrity``), so ``check`` says "write your own
reader" where ``lessonkit grade`` would give no points. ``lessonkit grade``
is where submissions run sandboxed.

Hidden checks run only at grading (``lessonkit grade``), and their feedback
names the rule, never the input.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lessonkit.grading import integrity
from lessonkit.grading.channel import Channel
from lessonkit.grading.codec import materialize, to_jsonable
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    Case,
    Exercise,
    Outcome,
    Report,
    call_in_process,
    evaluate,
    evaluate_value,
    one_at_a_time,
)
from lessonkit.grading.ex5_resume import FakeFetch, FetchScript
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import feedback_html

__all__ = [
    "GRADING_ENV",
    "CheckResult",
    "check",
    "grading_mode",
    "http_fetch",
    "isolated_calls",
    "live_resume",
    "practice_fetch",
    "try_it",
]

GRADING_ENV = "LESSONKIT_GRADING"


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
        if getattr(self, "_shown_in_cell", None) == _execution_count():
            return
        _display(self)


# ---------------------------------------------------------------------------
# Running the learner's function out of the kernel's reach


class Calls:
    """Calls of one learner function out of the kernel's reach: ``call`` one, ``many`` a batch."""

    def __init__(
        self,
        call: Callable[[Case, float], Outcome],
        many: Callable[[Sequence[Case], float], list[Outcome]] | None = None,
    ) -> None:
        self.call = call
        self._many = many

    def many(self, cases: Sequence[Case], limit_s: float) -> list[Outcome]:
        """Return the Outcomes of the cases in order, stopping after a time-out or a crash."""
        if self._many is not None:
            return self._many(cases, limit_s)
        return one_at_a_time(lambda case: self.call(case, limit_s))(cases)


@contextlib.contextmanager
def isolated_calls(name: str, fn: Callable[..., Any]) -> Iterator[Calls]:
    """Yield Calls of fn(*case.args), each call under a time limit.

    The calls run in a forked copy of this process, stopped when the block
    ends; where fork is missing (or fails), in a daemon thread instead.
    """
    channel = None
    if hasattr(os, "fork"):
        try:
            channel = _fork_channel(name, fn)
        except OSError:  # no processes left to fork: fall back to a thread
            channel = None
    if channel is None:
        yield Calls(_ThreadRunner(fn).call)
        return
    try:
        yield Calls(
            lambda case, limit_s: channel.call(name, case, limit_s),
            lambda cases, limit_s: channel.call_many(name, cases, limit_s),
        )
    finally:
        channel.quit()


def _fork_channel(name: str, fn: Callable[..., Any]) -> Channel:
    """Return a Channel to a forked copy of this process that serves ``fn`` under ``name``."""
    # Imported here: `python -m lessonkit.grading.child` must not find it loaded already.
    from lessonkit.grading import child

    down_read, down_write = os.pipe()
    up_read, up_write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork in a threaded kernel
        pid = os.fork()
    if pid == 0:  # the child: never return into the caller's code
        try:
            os.close(down_write)
            os.close(up_read)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            sys.stdout = sys.stderr = io.StringIO()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            integrity.install()  # in this copy only: the kernel's lessonkit stays as it is
            wire = child.Wire(down_read, up_write)
            child.serve(wire, {name: fn}.get, use_alarm=False)
        finally:
            os._exit(0)
    os.close(down_read)
    os.close(up_write)

    def stop() -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    return Channel(up_read, down_write, stop)


class _ThreadRunner:
    """Fallback without fork: each call in a daemon thread, abandoned if it overruns."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.broken = False

    def call(self, case: Case, limit_s: float) -> Outcome:
        if self.broken:
            return Outcome(timed_out=True)
        box: list[Outcome] = []
        worker = threading.Thread(
            target=lambda: box.append(call_in_process(self.fn, case)), daemon=True
        )
        worker.start()
        worker.join(limit_s)
        if not box:
            self.broken = True
            return Outcome(timed_out=True)
        return box[0]


# ---------------------------------------------------------------------------
# check()


def check(
    exercise_id: str, fn: Any, *, show: bool = True, limit_s: float = CALL_LIMIT_S
) -> CheckResult:
    """Return the CheckResult of the public checks of one exercise, shown in the notebook.

    ``fn`` is the learner's function (for the "now change it" exercise: the
    dict of answers). Never raises: problems become feedback.
    """
    exercise = EXERCISES.get(exercise_id)
    if exercise is None:
        known = ", ".join(EXERCISES)
        return _finish(
            CheckResult(
                False, 0.0, 0.0, f"unknown exercise {exercise_id!r}; the exercises are: {known}"
            ),
            show,
        )
    if grading_mode():
        return CheckResult(
            False, 0.0, exercise.points, "checked by `lessonkit grade`", exercise=exercise_id
        )
    try:
        report = _run_public(exercise, fn, limit_s)
    except Exception as exc:  # the checker's own bug must not break the learner's notebook
        text = (
            f"{exercise_id}: the checker itself failed ({type(exc).__name__}: {exc}); "
            "please tell the instructor."
        )
        return _finish(CheckResult(False, 0.0, exercise.points, text, exercise=exercise_id), show)
    result = CheckResult(
        report.passed, report.score, exercise.points, report.text(), report, exercise_id
    )
    return _finish(result, show)


def _run_public(exercise: Exercise, fn: Any, limit_s: float) -> Report:
    if exercise.kind == "value":
        return evaluate_value(exercise, to_jsonable(fn))
    if not callable(fn):
        return Report(
            exercise.id,
            exercise.title,
            exercise.points,
            problem=f"check({exercise.id!r}, ...) needs your function; it got {_kind_of(fn)}.",
        )
    copied = integrity.copies(fn)  # a pasted copy of the course's answer, read from its code
    with isolated_calls(exercise.id, fn) as calls:
        return evaluate(
            exercise,
            run_many=lambda cases: calls.many(cases, limit_s),
            call_limit_s=limit_s,
            used=copied,
        )


def _kind_of(value: Any) -> str:
    return "nothing (None)" if value is None else f"a {type(value).__name__}"


def _finish(result: CheckResult, show: bool) -> CheckResult:
    if show:
        _display(result)
    return result


def _in_ipython() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        return shell.get_ipython() is not None
    except Exception:
        return False


def _execution_count() -> int | None:
    """Return the number of the cell IPython is running now (None outside IPython)."""
    shell = sys.modules.get("IPython")
    try:
        ip = shell.get_ipython() if shell is not None else None
    except Exception:
        return None
    return getattr(ip, "execution_count", None) if ip is not None else None


def _display(result: CheckResult) -> None:
    # Remember the cell, so the result echoed at the end of that cell shows nothing more.
    object.__setattr__(result, "_shown_in_cell", _execution_count())
    if _in_ipython():
        from IPython.display import display

        display({"text/plain": result.feedback, "text/html": feedback_html(result)}, raw=True)
    else:
        print(result.feedback)


# ---------------------------------------------------------------------------
# Small helpers for the exercise notebooks


def try_it(fn: Callable[..., Any], *args: Any, limit_s: float = CALL_LIMIT_S) -> None:
    """Print what ``fn(*args)`` returns; a stub, an error or an endless loop is printed, never raised.

    The exercise notebooks use it for their "try it" cells, so that they run
    top to bottom before the learner has written anything. The call runs like
    ``check``'s: in a forked copy of the kernel, stopped after ``limit_s``
    seconds, so a loop that never ends cannot hang the kernel. What the
    function prints is shown above its result. A ``practice_fetch`` argument
    still records the Last-Event-ID of each call in ``.requests``. Inside
    ``lessonkit grade`` nothing runs.
    """
    name = getattr(fn, "__name__", "your function")
    if grading_mode():
        print(f"{name}: try it skipped while grading")
        return
    if not callable(fn):
        print(f"try_it needs your function first; it got {_kind_of(fn)}")
        return
    printed, verdict = _try_call(name, fn, args, limit_s)
    if printed:
        print(printed, end="" if printed.endswith("\n") else "\n")
    print(verdict)


SHOWN_RESULT_CHARS = 10_000  # longest result repr try_it prints


def _try_call(name: str, fn: Callable[..., Any], args: tuple, limit_s: float) -> tuple[str, str]:
    """Return (what fn printed, a verdict line) for one call of fn(*args) under a time limit."""
    fetch_at = next((i for i, a in enumerate(args) if isinstance(a, FakeFetch)), None)

    def shown(*fetches: Any) -> dict:
        real = list(args)
        if fetch_at is not None and fetches:
            real[fetch_at] = fetches[0]
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

    case = Case("try it", () if fetch_at is None else (args[fetch_at],))
    with isolated_calls("try_it", shown) as calls:
        outcome = calls.call(case, limit_s)
    if outcome.timed_out:
        return "", (
            f"{name} gave no answer within {limit_s:g} s and was stopped "
            "(an endless loop? a `while` whose condition never changes?)"
        )
    if outcome.error_type == "ChildGone":
        return "", f"{name} ended the process running it (sys.exit / os._exit?)"
    if outcome.error is not None:
        return "", f"{name} raised {outcome.error}"
    value = outcome.value if isinstance(outcome.value, dict) else {}
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

    def fetch(last_event_id: str | None = None) -> Iterator[bytes]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = str(last_event_id)
        try:
            with httpx.stream(
                "GET", base_url + "/v1/stream", params=query, headers=headers, timeout=10.0
            ) as response:
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
    # The one place this layer starts the server: only this live demo needs it.
    from lessonkit.serve.background import running

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
