"""The process that runs learner code: ``python -m lessonkit.grading.child [--worker]``.

It answers requests such as "call read_stream with these chunks" or "send me
the value of now_change_it", and only ever sends results back; the other side
(out of reach of the learner's code) compares them with the reference. So a
submission that redefines ``check``, patches ``lessonkit`` or prints "passed"
changes nothing the grader believes. Every call runs while an
``integrity.Recorder`` records, and each reply lists the course answers it ran
into.

Two uses:

* ``lessonkit grade``: one child serves one learner, inside that learner's
  sandbox (``lessonkit.grading.sandbox``). It sets up the sandbox's guard
  (``guard.child_setup``), imports the course once, then runs the learner's
  notebooks one after the other, each in a namespace of its own. A timer stops
  a call after its limit of CPU time (see ``CPU_TIMER``) and the cells after the
  notebook's wall-clock time (``--timeout``), raising ``codec.TimeUp`` in them. A notebook whose code ends the
  process ends the child: the grader starts a fresh sandbox for what is left.
* ``check`` in a notebook (``--worker``): a worker started for one check. Its
  first message is the learner's function, pickled by value with what it refers
  to (``cloudpickle``: helpers from other cells, constants, classes; modules by
  name); then it serves calls, each stopped after its limit of CPU time (or,
  without a CPU-time timer, by the kernel when the limit has passed).

The protocol is one JSON object per line. Grader -> child, on stdin::

    {"op": "function", "name": "read_stream", "pickle": base64}   (--worker: first, once; it
                                                answers {"op": "ready", "cpu_limit": true})
    {"op": "notebook", "cells": [source, ...], "names": [...], "values": [...], "exec_limit_s": 30}
    {"op": "calls", "name": "read_stream", "cases": [[arg, ...], ...], "limit_s": 3}
    {"op": "value", "name": "now_change_it"}
    {"op": "fetched", "chunks": [...]}   /   {"op": "fetch_failed", "message": "..."}
    {"op": "quit"}     (ends the notebook; a second one, or the end of input, ends the child)

A notebook's code that ends the process (``os._exit``, a crash, a limit) ends
the child: the grader sees its pipe close, and the sandbox's report says how.

Child -> grader, on the stdout it had at start (fd 1 then points to /dev/null)::

    {"op": "ready", "found": [...], "cell_errors": [...], "stopped": "...",
     "cell_used": [...], "copied": {name: {answer: what it holds of it}},
     "cpu_limit": true}
    {"op": "result", "value": ..., "used": [...]}
    {"op": "raised", "type": ..., "message": ..., "where": ..., "at": [file, line], ...}
    {"op": "timeout"}  /  {"op": "exited"} (sys.exit)  /  {"op": "fetch", "last_event_id": ...}

A "calls" request gets one reply per case, in order, and stops after a
"timeout".
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import linecache
import os
import pickle
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from lessonkit.grading import guard
from lessonkit.grading.codec import (
    TimeUp,
    call_reply,
    decode_args,
    from_jsonable,
    learner_line,
    message_of,
    to_jsonable,
)
from lessonkit.grading.integrity import Catalogue, Recorder


class Wire:
    """JSON lines over two file descriptors."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.reader = os.fdopen(read_fd, "rb")
        self.writer = os.fdopen(write_fd, "wb")

    def send(self, message: dict) -> None:
        """Send one message."""
        self.writer.write(json.dumps(message, allow_nan=True).encode("utf-8") + b"\n")
        self.writer.flush()

    def receive(self) -> dict | None:
        """Return the next message, or None at the end of input."""
        line = self.reader.readline()
        return json.loads(line) if line else None


# One call's limit counts the CPU time this process spends (ITIMER_PROF: user plus system
# time), not the wall clock: on a busy machine a call gets a share of a core and takes
# longer, but only code that computes for the whole limit (an endless loop) is stopped.
# Where the system has no such timer (Windows), the grader stops the process by its wall
# clock instead. The "ready" message says which ("cpu_limit").
CPU_TIMER = getattr(signal, "ITIMER_PROF", None)


@contextlib.contextmanager
def time_limit(limit_s: float | None, timer: int | None = CPU_TIMER) -> Iterator[None]:
    """Raise TimeUp in the block once ``limit_s`` seconds of ``timer``'s time have passed."""
    if timer is None or not limit_s:
        yield
        return
    signal.setitimer(timer, limit_s)
    try:
        yield
    finally:
        signal.setitimer(timer, 0)


def _catch_time_limits() -> None:
    """Make both timers raise TimeUp in the learner's code."""
    signal.signal(signal.SIGALRM, _time_up)
    if CPU_TIMER is not None:
        signal.signal(signal.SIGPROF, _time_up)


def _time_up(signum: int, frame: Any) -> None:
    raise TimeUp


def _call(
    target: Callable[..., Any], args: list, limit_s: Any, recorder: Recorder, watch: bool
) -> dict:
    """Return the reply to one call of the learner's function, with the course answers it used.

    ``watch`` False runs the call without the recorder (see ``watched``).
    """
    with recorder.recording() if watch else contextlib.nullcontext():
        reply = call_reply(target, args, time_limit(limit_s), everything=True)
    used = recorder.take()
    if used:
        reply["used"] = used
    return reply


WATCH_FIRST, WATCH_EVERY = 3, 8


def watched(index: int) -> bool:
    """Return True for the calls of a batch that run under the recorder.

    Watching a call costs the trace hook on each Python call it makes (about
    3x the time of a reader's call), so each rule's first three cases -- its
    smallest -- and every eighth case after them are watched: a function that
    hands its work to the course's answer does it on every input.
    """
    return index < WATCH_FIRST or index % WATCH_EVERY == 0


def serve(wire: Wire, lookup: Callable[[str], Any], *, recorder: Recorder) -> None:
    """Answer calls and value requests until "quit" or the end of input."""

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
        if request.get("op") == "value":
            wire.send({"op": "result", "value": to_jsonable(target)})
            continue
        for index, args in enumerate(request.get("cases", [])):
            if not callable(target):
                reply = {"op": "raised", "type": "LookupError", "message": f"no function {name}"}
            else:
                call_args = decode_args(args, fetch)
                reply = _call(target, call_args, request.get("limit_s"), recorder, watched(index))
            wire.send(reply)
            if reply["op"] == "timeout":
                break


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
    cells: list[str],
    names: list[str],
    values: list[str],
    exec_limit_s: float,
    shown_limit_s: float | None = None,
    limit: Callable[[float], contextlib.AbstractContextManager[Any]] | None = None,
) -> tuple[dict[str, Any], list[dict], str]:
    """Run the cells in one namespace; return (graded objects, cell errors, why it stopped).

    A name is kept from the last cell after which it was bound to the right kind
    of object (a function for "names", a dict for "values"), so reusing the name
    later for something else does not lose the learner's answer. Each cell runs in
    ``limit(seconds left)``, a block that raises TimeUp in it when they are up: by
    default a wall-clock alarm (``public_results`` passes the browser kernel's budget).
    """
    limit = limit or functools.partial(time_limit, timer=signal.ITIMER_REAL)
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "display": lambda *args, **kwargs: None,
        "get_ipython": lambda: None,
    }
    found: dict[str, Any] = {}
    errors: list[dict] = []
    stopped = ""
    too_long = f"the notebook's code did not finish within {shown_limit_s or exec_limit_s:g} s" + (
        " (--timeout)" if shown_limit_s else ""
    )
    deadline = time.monotonic() + exec_limit_s  # the notebook's wall-clock time
    for index, source in enumerate(cells):
        filename = f"<cell {index + 1}>"
        code_text = _clean_cell(source)
        linecache.cache[filename] = (len(code_text), None, code_text.splitlines(True), filename)
        try:
            with limit(max(deadline - time.monotonic(), 0.001)):
                exec(compile(code_text, filename, "exec"), namespace)
        except TimeUp:
            stopped = too_long
            errors.append({"cell": index + 1, "error": stopped})
            break
        except SystemExit:
            stopped = f"cell {index + 1} called exit()"
            errors.append({"cell": index + 1, "error": "SystemExit (exit() was called)"})
            break
        except BaseException as exc:
            kind = type(exc).__name__
            errors.append(
                {
                    "cell": index + 1,
                    "error": f"{kind}: {message_of(exc)}",
                    "where": learner_line(exc.__traceback__),
                    "type": kind,
                    "errno": exc.errno if isinstance(exc, OSError) else None,
                }
            )
        finally:
            for name in names:
                if callable(namespace.get(name)):
                    found[name] = namespace[name]
            for name in values:
                if isinstance(namespace.get(name), dict):
                    found[name] = namespace[name]
    return found, errors, stopped


def run_notebook(wire: Wire, setup: dict, catalogue: Catalogue) -> None:
    """Run one notebook's cells (recording course answers they call), report, then serve calls."""
    recorder = Recorder()
    with recorder.recording():
        found, errors, stopped = run_cells(
            list(setup.get("cells", [])),
            list(setup.get("names", [])),
            list(setup.get("values", [])),
            float(setup.get("exec_limit_s", 30)),
            setup.get("timeout_s"),
        )
    cell_used = recorder.take()
    copied = {name: catalogue.copies(value) for name, value in found.items()}
    wire.send(
        {
            "op": "ready",
            "found": sorted(found),
            "cell_errors": errors,
            "stopped": stopped,
            "cell_used": cell_used,
            "copied": {name: names for name, names in copied.items() if names},
            "cpu_limit": CPU_TIMER is not None,
        }
    )
    serve(wire, found.get, recorder=recorder)


def _notebooks(wire: Wire) -> int:
    """Run each "notebook" request in its own namespace, one after the other, until "quit"."""
    catalogue = Catalogue()  # the course's answers, read once for every notebook
    while True:
        request = wire.receive()
        if request is None or request.get("op") == "quit":
            return 0
        if request.get("op") != "notebook":
            return 2
        run_notebook(wire, request, catalogue)


def _own_pipes() -> Wire:
    """Return the protocol's wire on the original stdin/stdout; learner output then goes nowhere."""
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")
    return Wire(read_fd, write_fd)


def main() -> int:
    """Serve one learner's notebooks (grading, in the sandbox)."""
    guard.child_setup()  # first: the sandbox's guard sees everything after it
    wire = _own_pipes()
    _catch_time_limits()
    import lessonkit.grading.exercises  # noqa: F401  the notebooks' imports, loaded once

    return _notebooks(wire)


def worker_main() -> int:
    """Serve one learner function for ``check``: each call stopped after its CPU-time limit.

    Where there is no CPU-time timer, the kernel stops this process when a call's limit
    has passed on its wall clock.
    """
    wire = _own_pipes()
    _catch_time_limits()
    first = wire.receive()
    if first is None or first.get("op") != "function":
        return 2
    fn = pickle.loads(base64.b64decode(first["pickle"]))  # sent by the learner's own kernel
    wire.send({"op": "ready", "cpu_limit": CPU_TIMER is not None})  # the limits count from here
    serve(wire, {str(first.get("name")): fn}.get, recorder=Recorder())
    return 0


if __name__ == "__main__":
    os._exit(worker_main() if sys.argv[1:] == ["--worker"] else main())
