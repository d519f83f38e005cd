"""The process that runs a learner's code for grading: ``python -m lessonkit.grading.child``.

It runs the notebook's code cells, then answers the grader's requests: "call
read_stream with these chunks", "send me the value of now_change_it". It only
ever sends results back; the grader (another process, out of reach of the
learner's code) compares them with the reference. So a submission that
redefines ``check``, patches ``lessonkit`` or prints "passed" changes nothing
the grader believes.

The protocol is one JSON object per line. Grader -> child, on stdin::

    {"op": "run", "cells": [source, ...], "names": [...], "values": [...], "exec_limit_s": 30}
    {"op": "call", "name": "read_stream", "args": [...], "limit_s": 3}
    {"op": "value", "name": "now_change_it"}
    {"op": "fetched", "chunks": [...]}   /   {"op": "fetch_failed", "message": "..."}
    {"op": "quit"}

Child -> grader, on the stdout it had at start (fd 1 then points to /dev/null)::

    {"op": "ready", "found": [...], "cell_errors": [...], "stopped": "..."}
    {"op": "result", "value": ...}  /  {"op": "raised", "type": ..., "message": ..., "where": ...}
    {"op": "timeout"}  /  {"op": "fetch", "last_event_id": ...}

``serve`` is shared with the notebook's ``check``, whose forked child speaks
the same protocol.
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

from lessonkit.grading.codec import (
    decode_args,
    error_detail,
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


def serve(wire: Wire, lookup: Callable[[str], Any], *, use_alarm: bool) -> None:
    """Answer call and value requests until "quit" or the end of input."""

    def fetch(last_event_id: str | None = None) -> list[bytes]:
        if last_event_id is not None and not isinstance(last_event_id, str):
            last_event_id = str(last_event_id)
        wire.send({"op": "fetch", "last_event_id": last_event_id})
        reply = wire.receive()
        if reply is None or reply.get("op") != "fetched":
            message = "fetch failed" if reply is None else reply.get("message", "fetch failed")
            raise RuntimeError(message)
        return decode_args(reply["chunks"])

    while True:
        request = wire.receive()
        if request is None or request.get("op") == "quit":
            return
        name = request.get("name", "")
        target = lookup(name)
        if request.get("op") == "value":
            wire.send({"op": "result", "value": to_jsonable(target)})
            continue
        if not callable(target):
            wire.send({"op": "raised", "type": "LookupError", "message": f"no function {name}"})
            continue
        args = decode_args(request.get("args", []), fetch)
        try:
            if use_alarm:
                _arm(request.get("limit_s"))
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
        wire.send(reply)


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
                errors.append({"cell": index + 1, "error": message, "where": where})
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


def _limit_memory() -> None:
    try:
        import resource

        limit = 3 << 30  # 3 GiB of address space: a runaway list fails, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def main() -> int:
    """Run the protocol on the original stdin/stdout; learner output goes nowhere."""
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = _Discard()
    _limit_memory()
    signal.signal(signal.SIGALRM, _on_alarm)
    wire = Wire(read_fd, write_fd)
    setup = wire.receive()
    if setup is None or setup.get("op") != "run":
        return 2
    names, values = list(setup.get("names", [])), list(setup.get("values", []))
    found, errors, stopped = run_cells(
        list(setup.get("cells", [])), names, values, float(setup.get("exec_limit_s", 30))
    )
    wire.send({"op": "ready", "found": sorted(found), "cell_errors": errors, "stopped": stopped})
    serve(wire, found.get, use_alarm=True)
    return 0


if __name__ == "__main__":
    os._exit(main())
