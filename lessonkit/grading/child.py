"""The process that runs a learner's code for grading: ``python -m lessonkit.grading.child``.

It runs the notebook's code cells, then answers the grader's requests: "call
read_stream with these chunks", "send me the value of now_change_it". It only
ever sends results back; the grader (another process, out of reach of the
learner's code) compares them with the reference. So a submission that
redefines ``check``, patches ``lessonkit`` or prints "passed" changes nothing
the grader believes.

One child serves one learner, inside that learner's sandbox
(``lessonkit.grading.sandbox``): it sets up the sandbox's guard
(``guard.child_setup``), imports the course once and records calls into the
course's own answers (``integrity.install``), then runs each of the learner's
notebooks in a forked copy of itself, so no notebook pays for an interpreter
and the imports again and no notebook's state leaks into the next.

The protocol is one JSON object per line. Grader -> child, on stdin::

    {"op": "notebook", "cells": [source, ...], "names": [...], "values": [...], "exec_limit_s": 30}
    {"op": "calls", "name": "read_stream", "cases": [[arg, ...], ...], "limit_s": 3}
    {"op": "call", "name": "read_stream", "args": [...], "limit_s": 3}
    {"op": "value", "name": "now_change_it"}
    {"op": "fetched", "chunks": [...]}   /   {"op": "fetch_failed", "message": "..."}
    {"op": "quit"}     (ends the notebook; a second one, or the end of input, ends the child)

Child -> grader, on the stdout it had at start (fd 1 then points to /dev/null)::

    {"op": "ready", "found": [...], "cell_errors": [...], "stopped": "...",
     "cell_used": [...], "copied": {name: [...]}, "tampered": [...]}
    {"op": "result", "value": ..., "used": [...]}  /  {"op": "raised", "type": ..., ...}
    {"op": "timeout"}  /  {"op": "fetch", "last_event_id": ...}
    {"op": "ended", "code": N} or {"op": "ended", "signal": N}   (the notebook's process ended)

A "calls" request gets one reply per case, in order, and stops after a
"timeout". ``serve`` is shared with the notebook's ``check``, whose forked
child speaks the same protocol.
"""

from __future__ import annotations

import io
import json
import linecache
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from lessonkit.grading import guard, integrity
from lessonkit.grading.codec import (
    decode_args,
    error_detail,
    from_jsonable,
    learner_line,
    materialize,
    to_jsonable,
)

__all__ = ["Wire", "main", "run_cells", "serve"]


class CallTimeout(BaseException):
    """Raised inside the learner's code when its time is up (a BaseException on purpose)."""


class _Discard(io.TextIOBase):
    """A text stream that forgets everything written to it."""

    def write(self, text: str) -> int:
        return len(text)

    def writable(self) -> bool:
        return True


class Wire:
    """JSON lines over two file descriptors."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.buffer = b""

    def send(self, message: dict) -> None:
        """Send one message."""
        data = (json.dumps(message, allow_nan=True) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self.write_fd, view)
            view = view[written:]

    def receive(self) -> dict | None:
        """Return the next message, or None at the end of input."""
        while b"\n" not in self.buffer:
            piece = os.read(self.read_fd, 1 << 16)
            if not piece:
                return None
            self.buffer += piece
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def _arm(limit_s: float | None) -> None:
    if limit_s:
        signal.setitimer(signal.ITIMER_REAL, limit_s)


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def _on_alarm(signum: int, frame: Any) -> None:
    raise CallTimeout


def _call(target: Callable[..., Any], args: list, limit_s: Any, use_alarm: bool) -> dict:
    """Return the reply to one call of the learner's function, with the course answers it used."""
    with integrity.recording() as used:
        try:
            if use_alarm:
                _arm(limit_s)
            try:
                value = materialize(target(*args))
            finally:
                if use_alarm:
                    _disarm()
            reply = {"op": "result", "value": to_jsonable(value)}
        except CallTimeout:
            reply = {"op": "timeout"}
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: report them
            reply = {
                "op": "raised",
                "type": type(exc).__name__,
                "message": _message(exc),
                "where": learner_line(exc.__traceback__),
                "detail": error_detail(exc),
            }
    if used:
        reply["used"] = list(used)
    return reply


def serve(wire: Wire, lookup: Callable[[str], Any], *, use_alarm: bool) -> None:
    """Answer call, calls and value requests until "quit" or the end of input."""

    def fetch(last_event_id: str | None = None) -> list[bytes]:
        if last_event_id is not None and not isinstance(last_event_id, str):
            last_event_id = str(last_event_id)
        wire.send({"op": "fetch", "last_event_id": last_event_id})
        reply = wire.receive()
        if reply is None or reply.get("op") != "fetched":
            message = "fetch failed" if reply is None else reply.get("message", "fetch failed")
            raise RuntimeError(message)
        chunks = from_jsonable(reply["chunks"])
        return chunks if isinstance(chunks, list) else []

    while True:
        request = wire.receive()
        if request is None or request.get("op") == "quit":
            return
        name = request.get("name", "")
        target = lookup(name)
        op = request.get("op")
        if op == "value":
            wire.send({"op": "result", "value": to_jsonable(target)})
            continue
        batch = request.get("cases", []) if op == "calls" else [request.get("args", [])]
        for args in batch:
            if not callable(target):
                reply = {"op": "raised", "type": "LookupError", "message": f"no function {name}"}
            else:
                reply = _call(target, decode_args(args, fetch), request.get("limit_s"), use_alarm)
            wire.send(reply)
            if reply["op"] == "timeout":
                break


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except Exception:
        return "(the exception's message could not be shown)"


def _clean_cell(source: str) -> str:
    """Return a cell's code with IPython magics and shell escapes made harmless."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        lines = lines[1:]
    out = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            out.append(line[: len(line) - len(stripped)] + "pass  # " + stripped)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def run_cells(
    cells: list[str], names: list[str], values: list[str], exec_limit_s: float
) -> tuple[dict[str, Any], list[dict], str]:
    """Run the cells in one namespace; return (graded objects, cell errors, why it stopped).

    A name is kept from the last cell after which it was bound to the right kind
    of object (a function for "names", a dict for "values"), so reusing the name
    later for something else does not lose the learner's answer.
    """
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "display": lambda *args, **kwargs: None,
        "get_ipython": lambda: None,
    }
    found: dict[str, Any] = {}
    errors: list[dict] = []
    stopped = ""
    _arm(exec_limit_s)
    try:
        for index, source in enumerate(cells):
            filename = f"<cell {index + 1}>"
            code_text = _clean_cell(source)
            linecache.cache[filename] = (len(code_text), None, code_text.splitlines(True), filename)
            try:
                exec(compile(code_text, filename, "exec"), namespace)
            except CallTimeout:
                stopped = f"the notebook's code did not finish within {exec_limit_s:g} s"
                errors.append({"cell": index + 1, "error": stopped})
                break
            except SystemExit:
                stopped = f"cell {index + 1} called exit()"
                errors.append({"cell": index + 1, "error": "SystemExit (exit() was called)"})
                break
            except BaseException as exc:
                where = learner_line(exc.__traceback__)
                message = f"{type(exc).__name__}: {_message(exc)}"
                errors.append(
                    {
                        "cell": index + 1,
                        "error": message,
                        "where": where,
                        "type": type(exc).__name__,
                    }
                )
                if isinstance(exc, OSError) and exc.errno is not None:
                    errors[-1]["errno"] = exc.errno
            finally:
                for name in names:
                    if callable(namespace.get(name)):
                        found[name] = namespace[name]
                for name in values:
                    if isinstance(namespace.get(name), dict):
                        found[name] = namespace[name]
    except CallTimeout:
        stopped = f"the notebook's code did not finish within {exec_limit_s:g} s"
    finally:
        _disarm()
    return found, errors, stopped


def run_notebook(wire: Wire, setup: dict) -> None:
    """Run one notebook's cells (recording course answers they call), report, then serve calls."""
    names, values = list(setup.get("names", [])), list(setup.get("values", []))
    with integrity.recording() as cell_used:
        found, errors, stopped = run_cells(
            list(setup.get("cells", [])), names, values, float(setup.get("exec_limit_s", 30))
        )
    copied = {name: integrity.copies(found[name]) for name in names if name in found}
    wire.send(
        {
            "op": "ready",
            "found": sorted(found),
            "cell_errors": errors,
            "stopped": stopped,
            "cell_used": list(cell_used),
            "copied": {name: names for name, names in copied.items() if names},
            "tampered": integrity.tampering(),
        }
    )
    serve(wire, found.get, use_alarm=True)


def _host(wire: Wire) -> int:
    """Run each "notebook" request in a forked copy of this process, one after the other."""
    while True:
        request = wire.receive()
        if request is None or request.get("op") == "quit":
            return 0
        if request.get("op") != "notebook":
            return 2
        with guard.trusted():  # the host's own fork is not the learner's
            pid = os.fork()
        if pid == 0:
            try:
                run_notebook(wire, request)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        wire.buffer = b""  # what the notebook's process read is its own
        if os.WIFSIGNALED(status):
            wire.send({"op": "ended", "signal": os.WTERMSIG(status)})
        else:
            wire.send({"op": "ended", "code": os.waitstatus_to_exitcode(status)})


def main() -> int:
    """Serve one learner's notebooks on the original stdin/stdout; learner output goes nowhere."""
    guard.child_setup()  # first: the sandbox's guard sees everything after it
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = _Discard()
    signal.signal(signal.SIGALRM, _on_alarm)
    from lessonkit.grading.exercises import EXERCISES  # the notebooks' imports, loaded once

    len(EXERCISES)  # built here once, not in every notebook's process

    integrity.install()
    return _host(Wire(read_fd, write_fd))


if __name__ == "__main__":
    os._exit(main())
