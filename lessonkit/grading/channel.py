"""The grader's end of the JSON-lines protocol with the process that runs learner code.

``Channel(read_fd, write_fd, stop)`` talks to ``lessonkit.grading.child``: the
sandboxed child of ``lessonkit grade``, or the worker process of the
notebook's ``check``; both speak the protocol that ``child`` describes.
``Channel.call_many(name, cases, limit_s, encode) -> [Outcome]`` sends a rule's
cases in one request and reads one reply per case. It never raises for what
the other side does: silence past the wait (``wall_wait_s``) is ``TimedOut``,
a closed pipe or garbage is ``Ended``. Exercise 5's fetch requests are served
here, from the case's ``Served`` argument.

Lines are read by a small thread per channel (a pipe cannot be waited on with
a time limit in the same way on every system; a thread and a queue can), so
this works on Linux, macOS and Windows.

How the other side went away is a type: ``ChildGone`` (the pipe closed: the
process ended) and its subclass ``Garbled`` (it sent something that is not
the protocol, and was stopped).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lessonkit.grading.codec import Served, line_at, to_jsonable
from lessonkit.grading.engine import PROCESS_ENDED, Case, Ended, Outcome, TimedOut, outcome_of

MAX_REPLY_BYTES = 64 << 20

WALL_PER_CPU = 10  # wall seconds waited per second of a call's CPU-time limit


class ChildGone(Exception):
    """The process running the learner's code ended (its pipe closed)."""


class Garbled(ChildGone):
    """The other side sent something that is not the protocol."""


class Channel:
    """The grader's end of the JSON-lines protocol of ``lessonkit.grading.child``."""

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        stop: Callable[[], None],
        grace_s: float = 0.0,
        files: Mapping[str, str] | None = None,
    ) -> None:
        self.write_fd = write_fd
        self.files = files or {}  # code name -> its file here, for a source line to show
        self.grace_s = grace_s  # extra wait past a call's limit (a child with its own alarm)
        self.counts_cpu = False  # set from the child's "ready": it stops a call on CPU time
        self.alive = True
        self._read_fd = read_fd
        self._stop = stop
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        """Put each line the other side writes on the queue; None at the end of the pipe.

        This thread alone closes the read end, once the pipe has ended: closed from
        another thread while this one waits in ``os.read``, its number could be given
        to the next channel's pipe, and this thread would read (and lose) that
        channel's first reply.
        """
        buffer = b""
        try:
            while True:
                piece = os.read(self._read_fd, 1 << 16)
                if not piece:
                    break
                buffer += piece
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self._lines.put(line)
                if len(buffer) > MAX_REPLY_BYTES:
                    self._lines.put(b"\x00 more than 64 MB in one line")
                    break
        except OSError:
            pass
        finally:
            os.close(self._read_fd)
        self._lines.put(None)

    def send(self, message: dict | str) -> None:
        """Send one message (or its JSON text) as a line; a dead child raises ChildGone."""
        line = message if isinstance(message, str) else json.dumps(message)
        data = memoryview((line + "\n").encode("utf-8"))
        try:
            while data:
                data = data[os.write(self.write_fd, data) :]
        except OSError as exc:  # BrokenPipeError: the child is gone
            self.close()
            raise ChildGone(PROCESS_ENDED) from exc

    def receive(self, timeout_s: float) -> dict | None:
        """Return the next message, or None if none came within timeout_s (then stop the child).

        Raises ChildGone when the pipe closes, Garbled for anything that is not
        a message.
        """
        try:
            line = self._lines.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            self.close()
            return None
        if line is None:
            self._lines.put(None)  # every later read sees the end too
            self.close()
            raise ChildGone(PROCESS_ENDED)
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.close()
            raise Garbled("the process running the code sent garbage")
        return message

    def call_many(
        self, name: str, cases: Sequence[Case], limit_s: float, encode: Callable[[Case], str]
    ) -> list[Outcome]:
        """Return the Outcomes of name(*case.args) for each case, in one request.

        Stops after a time-out or a gone child: the list is then shorter than
        ``cases`` and ends with that outcome. ``encode(case)`` gives the JSON
        text of a case's arguments (a Plan encodes each case once).
        """
        if not self.alive:
            return [TimedOut()]
        fakes = [next((a.serving() for a in c.args if isinstance(a, Served)), None) for c in cases]
        outcomes: list[Outcome] = []
        try:
            head = json.dumps({"op": "calls", "name": name, "limit_s": limit_s})
            self.send(f'{head[:-1]}, "cases": [{",".join(encode(c) for c in cases)}]}}')
            wait_s = self.wall_wait_s(limit_s)
            for fake in fakes:
                message = self.receive(wait_s)
                while message is not None and message.get("op") == "fetch" and fake is not None:
                    self._serve_fetch(fake, message.get("last_event_id"))
                    message = self.receive(wait_s)
                outcomes.append(_outcome(message, fake, self.files))
                if outcomes[-1].stops:
                    return outcomes
        except ChildGone as exc:
            fake = fakes[len(outcomes)] if len(outcomes) < len(fakes) else None
            outcomes.append(Ended(reason=str(exc), requests=_requests(fake)))
        return outcomes

    def wall_wait_s(self, limit_s: float) -> float:
        """Return how long to wait, on the wall clock, for the answer to a call with ``limit_s``.

        A child that stops its calls after ``limit_s`` of CPU time answers "timeout" itself; the
        wait here is only for one that hangs without computing (sleeping, blocked), and lets a
        call run with a tenth of a core, as on a busy machine. Without that child timer this
        wait is the limit.
        """
        factor = WALL_PER_CPU if self.counts_cpu else 1
        return limit_s * factor + self.grace_s

    def _serve_fetch(self, fake: Any, last_event_id: Any) -> None:
        try:
            chunks = fake(last_event_id)
        except RuntimeError as exc:
            self.send({"op": "fetch_failed", "message": str(exc)})
            return
        self.send({"op": "fetched", "chunks": to_jsonable(chunks)})

    def value(self, name: str, limit_s: float) -> Any:
        """Return the JSON form of a value the child holds (raises ChildGone on trouble)."""
        self.send({"op": "value", "name": name})
        message = self.receive(limit_s)
        if message is None:
            raise ChildGone(f"no answer within {limit_s:g} s")
        return message.get("value")

    def close(self) -> None:
        """Stop the child and close the pipe to it (safe to call twice).

        The pipe from it ends when the child does; its reading thread closes it then.
        """
        if not self.alive:
            return
        self.alive = False
        try:
            self._stop()
        finally:
            try:
                os.close(self.write_fd)
            except OSError:
                pass

    def quit(self) -> None:
        """Ask the child to end, then stop it."""
        if self.alive:
            try:
                self.send({"op": "quit"})
            except ChildGone:
                pass
        self.close()


def _requests(fake: Any) -> tuple | None:
    return tuple(fake.requests) if fake is not None else None


def _outcome(message: dict | None, fake: Any, files: Mapping[str, str]) -> Outcome:
    """Return the Outcome a reply stands for (None: no reply in time).

    A worker cannot read a notebook cell's source; the line it names is read
    here, from ``files`` (code name -> file) when the worker's copy lost it.
    """
    if message is not None and message.get("op") == "raised":
        where, at = message.get("where"), message.get("at")
        if isinstance(where, str) and ":" not in where and isinstance(at, list) and len(at) == 3:
            message = {**message, "where": line_at(files.get(str(at[2]), str(at[0])), int(at[1]))}
    return outcome_of(message, _requests(fake))
