"""Step 2 of grading: run one learner's notebooks sandboxed, ``LearnerHost`` and ``NotebookRun``.

A ``LearnerHost`` is one learner's sandbox (``lessonkit.grading.sandbox``)
holding one ``python -m lessonkit.grading.child``: it imports the course once
and runs the learner's notebooks one after the other. ``NotebookRun`` is one
notebook in it, given as its code cells (from a file or from bytes, the
caller read them): its cells ran, its exercise functions answer calls. When a
call never returns or the learner's code ends the process, the whole sandbox
ends (everything the learner started dies with it); the next call starts a
fresh one and runs the notebook again.

A notebook has ``Setup.timeout_s`` seconds in all, for its cells and its
checks: past that deadline no further check starts. How a notebook could not
run is a type: ``NotebookTimedOut`` or ``NotebookEnded``. Everything the
sandboxes said (how each ended, what the guard inside saw) is kept in
``LearnerHost.reports``; ``lessonkit.grading.grade`` turns it into the row's
status and flags. This module never runs learner code itself.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lessonkit
from lessonkit.grading import sandbox
from lessonkit.grading.channel import Channel, ChildGone
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    Answers,
    Calls,
    Case,
    Ended,
    Exercise,
    Mode,
    Outcome,
    Plan,
    Report,
    TimedOut,
    evaluate,
    evaluate_answers,
)
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.notebook import GRADING_ENV

CHILD = [sys.executable, "-m", "lessonkit.grading.child"]
_KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")
_GRACE_S = 2.0  # the child's own alarm goes first; the grader kills the sandbox after this


@dataclass(frozen=True)
class Setup:
    """How learner code runs: the time per notebook, resource limits, which sandbox."""

    timeout_s: float = 60.0  # one notebook: its cells and its checks together
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    support: sandbox.SandboxSupport | None = None  # None: sandbox.detect() once per class


class NotebookProblem(Exception):
    """A notebook could not run to the end of its cells."""


class NotebookTimedOut(NotebookProblem):
    """The notebook's cells did not finish within its time."""


class NotebookEnded(NotebookProblem):
    """The notebook's code ended the process running it (the message says how)."""


def course_paths() -> list[str]:
    """Return what the child must see read-only: the Python installation and the course package."""
    return [*sandbox.python_paths(), str(Path(lessonkit.__file__).resolve().parent)]


def _child_env() -> dict[str, str]:
    """Return the child's environment: none of the instructor's tokens or keys."""
    env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV}
    env["PYTHONPATH"] = str(Path(lessonkit.__file__).resolve().parent.parent)
    env[GRADING_ENV] = "1"
    env["MPLBACKEND"] = "Agg"
    return env


class LearnerHost:
    """One learner's sandboxed child; ``open(cells, deadline)`` runs a notebook in it."""

    def __init__(self, setup: Setup, slot: int = 0) -> None:
        self.setup = setup
        self.slot = slot  # tells parallel learners' sandboxes apart (their uid as root)
        self.channel: Channel | None = None
        self.reports: list[sandbox.Report] = []  # one per sandbox started for this learner

    def _start(self) -> Channel:
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        try:
            box = sandbox.Sandbox(
                CHILD,
                readonly_paths=course_paths(),
                limits=self.setup.limits,
                env=_child_env(),
                stdin=down_read,
                stdout=up_write,
                support=self.setup.support,
                slot=self.slot,
            )
        except BaseException:
            for fd in (down_write, up_read):
                os.close(fd)
            raise
        finally:
            os.close(down_read)
            os.close(up_write)

        def stop() -> None:
            box.kill()
            self.reports.append(box.wait())

        self.channel = Channel(up_read, down_write, stop, grace_s=1.0)
        return self.channel

    def live(self) -> Channel | None:
        """Return the channel while the sandbox runs."""
        channel = self.channel
        return channel if channel is not None and channel.alive else None

    def open(self, cells: list[str], deadline: float) -> dict:
        """Run a notebook's cells in the sandbox; return its "ready" message.

        Raises NotebookTimedOut or NotebookEnded when the cells never finish
        or end the process.
        """
        channel = self.live() or self._start()
        limit_s = max(deadline - time.monotonic(), 0.1)
        functions = [e.id for e in EXERCISES.values() if not isinstance(e, Answers)]
        values = [e.id for e in EXERCISES.values() if isinstance(e, Answers)]
        try:
            channel.send(
                {"op": "notebook", "cells": cells, "names": functions, "values": values,
                 "exec_limit_s": round(limit_s, 3), "timeout_s": self.setup.timeout_s}
            )  # fmt: skip
            ready = channel.receive(limit_s + _GRACE_S)
        except ChildGone:
            channel.close()
            raise NotebookEnded(self.ended_text()) from None
        if ready is None:
            limit = f"{self.setup.timeout_s:g} s (--timeout)"
            raise NotebookTimedOut(f"the notebook's code did not finish within {limit}")
        if ready.get("op") != "ready":
            channel.close()
            raise NotebookEnded("the notebook's code broke the grading process")
        channel.counts_cpu = ready.get("cpu_limit") is True
        return ready

    def finish(self) -> None:
        """End the current notebook (the sandbox stays for the next notebook)."""
        channel = self.live()
        if channel is not None:
            try:
                channel.send({"op": "quit"})
            except ChildGone:
                channel.close()

    def close(self) -> None:
        """End the sandbox and everything in it; its Report joins ``reports``."""
        channel = self.channel
        if channel is not None and channel.alive:
            self.finish()
            channel.quit()

    def ended_text(self) -> str:
        """Return how the last sandbox's process ended, in words."""
        last = self.reports[-1] if self.reports else None
        if last is not None and last.ending in (sandbox.Ending.OK, sandbox.Ending.EXIT):
            return f"the notebook's code ended the Python process (exit status {last.exit_code})"
        if last is not None and last.ending is sandbox.Ending.KILLED:
            return f"the notebook's code ended the Python process ({last.status})"
        return "the notebook's code ended the Python process"


class NotebookRun:
    """One notebook of a learner, run in their sandbox; runs again after a kill."""

    def __init__(self, host: LearnerHost, cells: list[str], timeout_s: float) -> None:
        self.host = host
        self.cells = cells
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.found: list[str] = []
        self.cell_errors: list[dict] = []
        self.stopped = ""
        self.cell_used: list[str] = []
        self.copied: dict[str, dict[str, str]] = {}  # exercise -> {answer: what it holds}

    def start(self) -> None:
        """Run the cells; raise NotebookTimedOut or NotebookEnded if they cannot finish."""
        ready = self.host.open(self.cells, self.deadline)
        self.found = [str(n) for n in ready.get("found", [])]
        self.cell_errors = [e for e in ready.get("cell_errors", []) if isinstance(e, dict)]
        self.stopped = str(ready.get("stopped") or "")
        self.cell_used = [str(v)[:200] for v in _listed(ready.get("cell_used"))]
        copied = _listed(ready.get("copied"))  # exercise -> {answer: what it holds of it}
        self.copied = {
            str(k): {str(a)[:200]: str(w)[:300] for a, w in _listed(v)} for k, v in copied
        }

    def _channel(self) -> Channel:
        """Return a live channel, running the notebook again if its process is gone."""
        channel = self.host.live()
        if channel is None:
            self.start()
            channel = self.host.live()
        if channel is None:
            raise ChildGone("the notebook's code ended the Python process")
        return channel

    def calls(self, exercise_id: str, plan: Plan, limit_s: float) -> Calls:
        """Return calls(cases) of the notebook's function; none start past the deadline."""

        def calls(cases: Sequence[Case]) -> list[Outcome]:
            if time.monotonic() > self.deadline:
                used_up = f"the notebook's time ran out (--timeout {self.timeout_s:g} s)"
                return [TimedOut(budget=used_up)]
            try:
                return self._channel().call_many(exercise_id, cases, limit_s, plan.encoded)
            except NotebookTimedOut:
                return [TimedOut()]
            except (ChildGone, NotebookEnded) as exc:
                return [Ended(reason=str(exc))]

        return calls

    def judge(self, exercise: Exercise, mode: Mode, plan: Plan | None = None) -> Report:
        """Return the Report of one exercise on this notebook under ``mode``: its function
        called on the cases of ``plan`` (built once per class), or its dict of answers."""
        copied = self.copied.get(exercise.id, {})
        if isinstance(exercise, Answers):
            used = [*copied, *self.cell_used]
            return evaluate_answers(exercise, self.value(exercise.id), mode, used=used)
        plan = plan or Plan(exercise, mode)
        calls = self.calls(exercise.id, plan, mode.limit_s)
        return evaluate(exercise, calls, mode, plan=plan, used=copied)

    def value(self, exercise_id: str) -> object:
        """Return the JSON form of the notebook's answers dict (raises ChildGone on trouble)."""
        try:
            return self._channel().value(exercise_id, CALL_LIMIT_S)
        except NotebookProblem as exc:
            raise ChildGone(str(exc)) from None

    def close(self) -> None:
        """End this notebook."""
        self.host.finish()


def _listed(value: object) -> list:
    """Return the first 20 items of a list, or (key, value) pairs of a dict, the child sent."""
    if isinstance(value, dict):
        return list(value.items())[:20]
    return value[:20] if isinstance(value, list) else []
