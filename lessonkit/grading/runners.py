"""How ``check`` calls the learner's function under a time limit: in a worker, or in this process.

A runner is ``runner(fn, mode, plan=None)``, a context manager that yields
``calls(cases) -> [Outcome]`` (see ``engine.Calls``). Both runners give the
same outcomes, so ``check`` gives the same points, hints and smallest failing
input with either; both record the course answers the calls run into
(``integrity.Recorder``).

* ``in_worker``: a fresh ``python -m lessonkit.grading.child --worker``,
  started for this check and stopped at its end. The function travels by value
  (``cloudpickle``): a function written in a notebook goes with what it refers
  to -- a helper defined in another cell, a constant, a class -- and modules
  by name, so the worker imports them itself from the kernel's own
  ``sys.path`` and working folder. A call that overruns its limit is stopped by
  killing the worker; the kernel never forks and never waits on a thread that
  may not end. Works wherever ``subprocess`` does: Linux, macOS, Windows.
* ``in_this_process``: where no process can be started (JupyterLite's Pyodide
  kernel), or the function cannot be copied. Each call runs here under
  ``sys.settrace``; the trace function also counts time and, past the limit,
  raises ``OutOfTime`` inside the learner's code, which ends the call. It stops
  any loop written in Python. It cannot stop a loop inside C code (a huge
  regular expression, ``time.sleep``), nor one that catches every exception
  (``except BaseException``) and goes on.

``choose_runner()`` is lessonkit's choice: in this process on
``sys.platform == "emscripten"``, else in a worker (which falls back to this
process by itself when no worker can start).
"""

from __future__ import annotations

import base64
import contextlib
import dis
import functools
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from lessonkit.grading.channel import Channel
from lessonkit.grading.codec import (
    Served,
    encode_args,
    error_detail,
    learner_line,
    materialize,
    message_of,
    to_jsonable,
)
from lessonkit.grading.engine import (
    Calls,
    Case,
    Ended,
    Mode,
    Outcome,
    Plan,
    Returned,
    TimedOut,
    raised,
)
from lessonkit.grading.integrity import Recorder

__all__ = ["OUT_OF_TIME", "OutOfTime", "Runner", "choose_runner", "in_this_process", "in_worker"]

Runner = Callable[..., contextlib.AbstractContextManager[Calls]]  # (fn, mode, plan=None)
OUT_OF_TIME = "stopped: no answer within the time limit"
WORKER = [sys.executable, "-m", "lessonkit.grading.child", "--worker"]
WORKER_START_S = 120.0  # a deadline for a start that takes about 0.3-1 s, not a speed goal


def choose_runner() -> Runner:
    """Return the runner for this kernel: in this process in the browser, else in a worker."""
    return in_this_process if sys.platform == "emscripten" else in_worker


# ---------------------------------------------------------------------------
# In a worker process


@contextlib.contextmanager
def in_worker(fn: Callable[..., Any], mode: Mode, plan: Plan | None = None) -> Iterator[Calls]:
    """Yield calls of ``fn`` in a worker process started for them (here if none can start).

    ``plan`` (when given) encodes each case's arguments once for every check.
    """
    try:
        channel = _start_worker(fn)
    except Exception:  # no process can start, or the function cannot be copied
        with in_this_process(fn, mode, plan) as calls:
            yield calls
        return
    try:
        encode = plan.encoded if plan is not None else _encoded
        yield lambda cases: channel.call_many("fn", cases, mode.limit_s, encode)
    finally:
        channel.quit()


def _encoded(case: Case) -> str:
    return json.dumps(encode_args(case.args))


def _start_worker(fn: Callable[..., Any]) -> Channel:
    """Return a Channel to a new worker that serves ``fn`` (raises if either cannot be had)."""
    import cloudpickle

    pickled = base64.b64encode(cloudpickle.dumps(fn)).decode("ascii")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.curdir for p in sys.path)}
    process = subprocess.Popen(
        WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert process.stdin is not None and process.stdout is not None

    def stop() -> None:
        process.kill()
        process.wait()

    read_fd, write_fd = os.dup(process.stdout.fileno()), os.dup(process.stdin.fileno())
    channel = Channel(read_fd, write_fd, stop, files=_code_files(fn))
    process.stdout.close()
    process.stdin.close()
    channel.send({"op": "function", "name": "fn", "pickle": pickled})
    # A call's limit is the learner's code's time alone: the worker's start (an interpreter,
    # the course's imports, the function unpickled) can take seconds on a busy machine, so
    # the first call is sent only once the worker says it is ready.
    ready = channel.receive(WORKER_START_S)
    if ready is None or ready.get("op") != "ready":
        channel.quit()
        raise RuntimeError(f"the worker did not start within {WORKER_START_S:g} s")
    return channel


def _code_files(fn: Any, limit: int = 500) -> dict[str, str]:
    """Return code name -> file of ``fn`` and the functions it reaches (cloudpickle drops files).

    The worker reports where an exception was raised by code name and line; the
    kernel reads the line from its own cells with this map.
    """
    files: dict[str, str] = {}
    todo, seen = [fn], set()
    while todo and len(seen) < limit:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, functools.partial):
            todo += [item.func, *item.args]
        elif isinstance(item, types.FunctionType):
            codes = [item.__code__]
            while codes:
                code = codes.pop()
                files.setdefault(code.co_qualname, code.co_filename)
                codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
                todo += [item.__globals__.get(n) for n in code.co_names]
            for cell in item.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
    return files


# ---------------------------------------------------------------------------
# In this process, under a sys.settrace time budget


class OutOfTime(BaseException):
    """Raised inside the learner's code when its time is up (a BaseException on purpose)."""


@contextlib.contextmanager
def in_this_process(
    fn: Callable[..., Any], mode: Mode, plan: Plan | None = None
) -> Iterator[Calls]:
    """Yield calls of ``fn`` in this process, each stopped after ``mode.limit_s`` seconds."""
    recorder = Recorder()
    spins: dict[types.CodeType, bool] = {}  # code -> holds a jump to itself (read once)

    def calls(cases: Sequence[Case]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for case in cases:
            outcomes.append(_call_with_budget(fn, case, mode.limit_s, recorder, spins))
            if outcomes[-1].stops:
                break
        return outcomes

    yield calls


def _call_with_budget(
    fn: Callable[..., Any],
    case: Case,
    limit_s: float,
    recorder: Recorder,
    spins: dict[types.CodeType, bool],
) -> Outcome:
    """Return the Outcome of ``fn(*case.args)``, stopped by the trace function past ``limit_s``."""
    fetch = next((a.serving() for a in case.args if isinstance(a, Served)), None)
    args = [fetch if isinstance(a, Served) else a for a in case.args]
    deadline = time.monotonic() + limit_s

    def on_line(frame: types.FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise OutOfTime(OUT_OF_TIME)
        return on_line

    files = recorder.files

    def on_call(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename in files:
            recorder.note(frame)
        spin = spins.get(frame.f_code)
        if spin is None:
            spin = spins[frame.f_code] = _spins(frame.f_code)
        if spin:
            frame.f_trace_opcodes = True  # a jump to itself never starts a line again
        return on_line(frame, event, arg)

    before = sys.gettrace()
    sys.settrace(on_call)
    try:
        value = materialize(fn(*args))
        outcome: Outcome = Returned(value=to_jsonable(value))
    except OutOfTime:
        outcome = TimedOut()
    except SystemExit:
        outcome = Ended()
    except Exception as exc:
        outcome = raised(
            type(exc).__name__,
            message_of(exc),
            where=learner_line(exc.__traceback__),
            detail=error_detail(exc),
        )
    finally:
        sys.settrace(before)
    requests = tuple(fetch.requests) if fetch is not None else None
    return replace(outcome, requests=requests, used=tuple(recorder.take()))


def _spins(code: types.CodeType) -> bool:
    """Return True when ``code`` holds a jump to itself (``while True: pass``).

    Such a loop never starts a line again, so it sends no "line" event: its
    frame is traced by opcode instead (slower, and only for such code).
    """
    return any(
        i.opname.startswith("JUMP_BACKWARD") and i.argval == i.offset
        for i in dis.get_instructions(code)
    )
