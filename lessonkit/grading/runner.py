"""One learner's code, run sandboxed for grading: ``LearnerHost`` and ``NotebookRun``.

A ``LearnerHost`` is one learner's sandbox (``lessonkit.grading.sandbox``)
holding one ``python -m lessonkit.grading.child``: started once per learner
(not per notebook), it imports the course once and runs each notebook in a
fork of itself. ``NotebookRun`` is one notebook in it: its cells ran, its
exercise functions answer calls. When a call never returns or the notebook's
process dies, the whole sandbox is killed (everything the learner started dies
with it) and the next call starts a fresh one and runs the notebook again.

Everything the sandboxes said -- how each ended, what the guard inside saw,
how each notebook's process ended -- is kept in ``LearnerHost.reports`` and
``LearnerHost.endings``; ``lessonkit.grading.grade`` turns them into the row's
status and flags. This module never runs learner code itself.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import lessonkit
from lessonkit.grading import sandbox
from lessonkit.grading.channel import Channel, ChildGone
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.notebook import GRADING_ENV

__all__ = ["CHILD", "LearnerHost", "NotebookRun", "Setup", "course_paths"]

CHILD = [sys.executable, "-m", "lessonkit.grading.child"]
_KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")


@dataclass(frozen=True)
class Setup:
    """How learner code runs: time limits, resource limits, sandbox or not."""

    timeout_s: float = 60.0
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    use_sandbox: bool = True
    require_sandbox: bool = False


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
    """One learner's sandboxed child; ``open(cells)`` runs a notebook in it."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.box: sandbox.Sandbox | None = None
        self.channel: Channel | None = None
        self.reports: list[sandbox.Report] = []  # one per sandbox started for this learner
        self.endings: list[dict] = []  # how each notebook's process ended, when not cleanly

    def _start(self) -> Channel:
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        try:
            self.box = sandbox.Sandbox(
                CHILD,
                readonly_paths=course_paths(),
                limits=self.setup.limits,
                env=_child_env(),
                stdin=down_read,
                stdout=up_write,
                require=self.setup.require_sandbox,
                enabled=self.setup.use_sandbox,
            )
        except BaseException:
            for fd in (down_write, up_read):
                os.close(fd)
            raise
        finally:
            os.close(down_read)
            os.close(up_write)
        box = self.box

        def stop() -> None:
            box.kill()
            self.reports.append(box.wait())

        self.channel = Channel(up_read, down_write, stop, grace_s=1.0)
        return self.channel

    def live(self) -> Channel | None:
        """Return the channel when the sandbox runs and a notebook's process is open in it."""
        channel = self.channel
        return channel if channel is not None and channel.alive and channel.ended is None else None

    def open(self, cells: list[str]) -> dict:
        """Run a notebook's cells in a fresh process of the sandbox; return its "ready" message.

        Raises ChildGone when the code never finishes or ends its process.
        """
        channel = self.channel if self.channel is not None and self.channel.alive else None
        channel = channel or self._start()
        channel.ended = None
        functions = [e.id for e in EXERCISES.values() if e.kind == "function"]
        values = [e.id for e in EXERCISES.values() if e.kind == "value"]
        limit_s = self.setup.timeout_s
        channel.send(
            {"op": "notebook", "cells": cells, "names": functions, "values": values,
             "exec_limit_s": limit_s}
        )  # fmt: skip
        try:
            ready = channel.receive(limit_s + 2.0)
        except ChildGone:
            self._note_ending(channel)
            raise
        if ready is None:
            raise ChildGone(f"the notebook's code did not finish within {limit_s:g} s")
        if ready.get("op") != "ready":
            channel.close()
            raise ChildGone("the notebook's code broke the grading process")
        return ready

    def finish(self) -> None:
        """End the current notebook's process (the sandbox stays for the next notebook)."""
        channel = self.live()
        if channel is None:
            return
        try:
            channel.send({"op": "quit"})
            if channel.receive(5.0) is not None:  # anything but "ended": not to be trusted
                channel.close()
        except ChildGone:
            self._note_ending(channel)

    def _note_ending(self, channel: Channel) -> None:
        """Keep how a notebook's process ended, when badly; a garbled or closed channel is gone."""
        ended = channel.ended
        if ended is None:
            channel.close()
            return
        if ended.get("signal") or ended.get("code"):
            self.endings.append(ended)

    def close(self) -> None:
        """End the sandbox and everything in it; its Report joins ``reports``."""
        channel = self.channel
        if channel is not None and channel.alive:
            self.finish()
            try:
                channel.send({"op": "quit"})
            except ChildGone:
                pass
            channel.close()

    def ended_code(self) -> int | None:
        """Return the exit status (or -signal) of the last notebook process that ended."""
        channel = self.channel
        ended = channel.ended if channel is not None and channel.ended else None
        ended = ended or (self.endings[-1] if self.endings else None)
        if ended is None:
            return None
        signum, code = ended.get("signal"), ended.get("code")
        if isinstance(signum, int) and signum:
            return -signum
        return code if isinstance(code, int) else None


class NotebookRun:
    """One notebook of a learner, run in their sandbox; runs again after a kill."""

    def __init__(self, host: LearnerHost, cells: list[str]) -> None:
        self.host = host
        self.cells = cells
        self.found: list[str] = []
        self.cell_errors: list[dict] = []
        self.stopped = ""
        self.cell_used: list[str] = []
        self.copied: dict[str, list[str]] = {}
        self.tampered: list[str] = []

    def start(self) -> None:
        """Run the cells; raise ChildGone if the code never finishes or ends its process."""
        ready = self.host.open(self.cells)
        self.found = [str(n) for n in ready.get("found", [])]
        self.cell_errors = [e for e in ready.get("cell_errors", []) if isinstance(e, dict)]
        self.stopped = str(ready.get("stopped") or "")
        self.cell_used = _names(ready.get("cell_used"))
        copied = ready.get("copied")
        self.copied = (
            {str(k): _names(v) for k, v in copied.items()} if isinstance(copied, dict) else {}
        )
        self.tampered = _names(ready.get("tampered"))

    def ensure(self) -> Channel:
        """Return a live channel, running the notebook again if its process is gone."""
        channel = self.host.live()
        if channel is None:
            self.start()
            channel = self.host.live()
        if channel is None:
            raise ChildGone("the notebook's code ended the Python process")
        return channel

    def close(self) -> None:
        """End this notebook's process."""
        self.host.finish()


def _names(value: object) -> list[str]:
    return [str(v)[:200] for v in value[:20]] if isinstance(value, list) else []
