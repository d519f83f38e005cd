"""The grader's end of the JSON-lines protocol with the process that runs learner code.

``Channel(read_fd, write_fd, stop)`` talks to ``lessonkit.grading.child`` (a
fresh interpreter, for ``lessonkit grade``) or to a forked copy of the kernel
(the notebook's ``check``); both speak the protocol that ``child`` describes.
``Channel.call_many(name, cases, limit_s) -> [Outcome]`` sends a rule's cases
in one request and reads one reply per case (``call`` sends one); it never
raises for what the other side does: silence past the limit is a time-out, a
closed pipe, garbage or the child's host reporting that the notebook's process
ended (``ended``) is ``ChildGone``, reported as an Outcome. Exercise 5's fetch
requests are served here, from the case's ``Served`` argument. Each case's
arguments are encoded once per process and reused for every learner.
"""

from __future__ import annotations

import json
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from lessonkit.grading.codec import Served, encode_args, to_jsonable
from lessonkit.grading.engine import PROCESS_ENDED, Case, Outcome

__all__ = ["Channel", "ChildGone"]


class ChildGone(Exception):
    """The process running the learner's code ended or stopped answering."""


class Channel:
    """The grader's end of the JSON-lines protocol of ``lessonkit.grading.child``."""

    def __init__(
        self, read_fd: int, write_fd: int, stop: Callable[[], None], grace_s: float = 0.0
    ) -> None:
        self.read_fd = read_fd
        self.grace_s = grace_s  # extra wait past a call's limit (a child with its own alarm)
        self.write_fd = write_fd
        self._stop = stop
        self._buffer = b""
        self.alive = True
        self.ended: dict | None = None  # the host's {"op": "ended", ...} once it came

    def send(self, message: dict) -> None:
        """Send one message; a dead child raises ChildGone."""
        self.send_line(json.dumps(message))

    def send_line(self, line: str) -> None:
        """Send one JSON text as a line; a dead child raises ChildGone."""
        data = (line + "\n").encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.write_fd, view) :]
        except OSError as exc:  # BrokenPipeError: the child is gone
            self.close()
            raise ChildGone(PROCESS_ENDED) from exc

    def receive(self, timeout_s: float) -> dict | None:
        """Return the next message, or None if none came within timeout_s (then stop it)."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close()
                return None
            ready, _, _ = select.select([self.read_fd], [], [], remaining)
            if not ready:
                continue
            piece = os.read(self.read_fd, 1 << 16)
            if not piece:
                self.close()
                raise ChildGone(PROCESS_ENDED)
            self._buffer += piece
            if len(self._buffer) > 64 << 20:
                self.close()
                raise ChildGone("the code sent back more than 64 MB")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError as exc:
            self.close()
            raise ChildGone("the process running the code sent garbage") from exc
        if not isinstance(message, dict):
            self.close()
            raise ChildGone("the process running the code sent garbage")
        if message.get("op") == "ended":
            self.ended = message
            raise ChildGone(PROCESS_ENDED)
        return message

    def call(self, name: str, case: Case, limit_s: float) -> Outcome:
        """Return the Outcome of name(*case.args) in the child; fetch requests are served here."""
        return self.call_many(name, [case], limit_s)[0]

    def call_many(self, name: str, cases: Sequence[Case], limit_s: float) -> list[Outcome]:
        """Return the Outcomes of name(*case.args) for each case, in one request.

        Stops after a time-out or a gone child: the list is then shorter than
        ``cases`` and ends with that outcome.
        """
        if not self.alive:
            return [Outcome(timed_out=True)]
        fakes = [next((a.serving() for a in c.args if isinstance(a, Served)), None) for c in cases]
        outcomes: list[Outcome] = []
        try:
            head = json.dumps({"op": "calls", "name": name, "limit_s": limit_s})
            self.send_line(f'{head[:-1]}, "cases": [{",".join(_encoded(c) for c in cases)}]}}')
            for fake in fakes:
                while True:
                    message = self.receive(limit_s + self.grace_s)
                    if message is None:
                        outcomes.append(Outcome(timed_out=True, requests=_requests(fake)))
                        return outcomes
                    if message.get("op") == "fetch" and fake is not None:
                        self._serve_fetch(fake, message.get("last_event_id"))
                        continue
                    break
                outcomes.append(_outcome(message, fake))
                if outcomes[-1].timed_out:
                    return outcomes
        except ChildGone as exc:
            fake = fakes[len(outcomes)] if len(outcomes) < len(fakes) else None
            outcomes.append(
                Outcome(error=str(exc), error_type="ChildGone", requests=_requests(fake))
            )
        return outcomes

    def _serve_fetch(self, fake: Any, last_event_id: Any) -> None:
        if last_event_id is not None and not isinstance(last_event_id, str):
            last_event_id = str(last_event_id)
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
        """Stop the child and free the pipes (safe to call twice)."""
        if not self.alive:
            return
        self.alive = False
        try:
            self._stop()
        finally:
            for fd in (self.read_fd, self.write_fd):
                try:
                    os.close(fd)
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


_encoded_args: dict[int, tuple[Case, str]] = {}
_encoded_lock = threading.Lock()


def _encoded(case: Case) -> str:
    """Return the JSON text of a case's arguments, encoded once per case in this process."""
    known = _encoded_args.get(id(case))
    if known is not None and known[0] is case:
        return known[1]
    text = json.dumps(encode_args(case.args))
    with _encoded_lock:
        if len(_encoded_args) > 50_000:
            _encoded_args.clear()
        _encoded_args[id(case)] = (case, text)
    return text


def _requests(fake: Any) -> tuple | None:
    return tuple(fake.requests) if fake is not None else None


def _outcome(message: dict, fake: Any) -> Outcome:
    op = message.get("op")
    listed = message.get("used")
    used = tuple(str(u)[:200] for u in listed[:20]) if isinstance(listed, list) else ()
    if op == "result":
        return Outcome(value=message.get("value"), requests=_requests(fake), used=used)
    if op == "timeout":
        return Outcome(timed_out=True, requests=_requests(fake), used=used)
    if op == "raised":
        kind = str(message.get("type", "Exception"))
        text = str(message.get("message", ""))
        where = message.get("where")
        return Outcome(
            error=f"{kind}: {text}" if text else kind,
            error_type=kind,
            where=str(where) if where else None,
            requests=_requests(fake),
            detail=str(message["detail"]) if message.get("detail") is not None else None,
            used=used,
        )
    return Outcome(error="an unexpected reply", error_type="Protocol", requests=_requests(fake))
