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
  ``sys.path`` and working folder. The time limit counts from the worker
  saying it is ready, so a slow start on a busy machine costs no points, and
  counts the CPU time the worker spends (Linux, macOS), so a busy machine slows
  a call but does not stop it; the worker stops a call that computes past its
  limit and answers "timeout". A worker that stops answering (or any overrun,
  where there is no CPU-time timer) is killed; the kernel never forks and never
  waits on a thread that may not end. Works wherever ``subprocess`` does:
  Linux, macOS, Windows.
* ``in_this_process``: where no process can be started (JupyterLite's Pyodide
  kernel), or the function cannot be copied. Each call runs here under a time
  budget: ``sys.monitoring`` (Python 3.12+, Pyodide's too) calls back when a
  function starts and on every jump back of a loop, ``sys.settrace`` (older
  Pythons) on every line; past the limit the callback raises ``TimeUp``
  inside the learner's code, which ends the call. It stops any loop written in
  Python. It cannot stop a loop inside C code (a huge regular expression,
  ``time.sleep``), nor one that catches every exception
  (``except BaseException``) and goes on.

``choose_runner()`` is lessonkit's choice: in this process on
``sys.platform == "emscripten"``, else in a worker (which falls back to this
process by itself when no worker can start).
"""

from __future__ import annotations

import base64
import contextlib
import dis
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from lessonkit.grading import integrity
from lessonkit.grading.channel import Channel, ChildGone
from lessonkit.grading.codec import Served, TimeUp, call_reply, encode_args
from lessonkit.grading.engine import Calls, Case, Mode, Outcome, Plan, outcome_of
from lessonkit.grading.integrity import Recorder

Runner = Callable[..., contextlib.AbstractContextManager[Calls]]  # (fn, mode, plan=None)
WORKER = [sys.executable, "-m", "lessonkit.grading.child", "--worker"]
# A worker is ready in about 0.2-0.5 s; a machine busy with other work can take seconds.
# The learner's time limit starts once it is ready, so a slow start never stops a call.
WORKER_START_S = 60.0


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
    ready = channel.receive(WORKER_START_S)  # raises ChildGone if it could not load fn
    if ready is None or ready.get("op") != "ready":
        channel.close()
        raise ChildGone(f"the worker was not ready within {WORKER_START_S:g} s")
    channel.counts_cpu = ready.get("cpu_limit") is True
    return channel


def _code_files(fn: Any) -> dict[str, str]:
    """Return code name -> file of ``fn`` and the functions it reaches (cloudpickle drops files).

    The worker reports where an exception was raised by code name and line; the
    kernel reads the line from its own cells with this map.
    """
    functions = [f for f in integrity.reach(fn, 500) if isinstance(f, types.FunctionType)]
    return {c.co_qualname: c.co_filename for f in functions for c in integrity.codes_in(f.__code__)}


# ---------------------------------------------------------------------------
# In this process, under a time budget (sys.monitoring, else sys.settrace)


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
    """Return the Outcome of ``fn(*case.args)``, stopped by its time budget past ``limit_s``."""
    fetch = next((a.serving() for a in case.args if isinstance(a, Served)), None)
    args = [fetch if isinstance(a, Served) else a for a in case.args]
    reply = call_reply(fn, args, time_budget(limit_s, recorder, spins))
    outcome = outcome_of(reply, tuple(fetch.requests) if fetch is not None else None)
    return replace(outcome, used=tuple(recorder.take()))


# sys.monitoring's ids 0-5 are for tools (debugger 0, coverage 1, profiler 2, optimizer 5):
# the first free one, from the end, so a debugger or coverage keeps its own.
MONITORING_TOOL_IDS = (4, 3, 2, 1, 0, 5)
HERE = __file__  # this module's code (the block around the call, its exit) is never stopped


def time_budget(limit_s: float, recorder: Recorder, spins: dict[types.CodeType, bool]) -> Budget:
    """Return a block that raises TimeUp in Python code still running after ``limit_s``.

    ``sys.monitoring`` (Python 3.12+, the browser's Pyodide too) where a tool id is free:
    it calls back only when a function starts and on each unconditional jump (every loop
    takes one per turn), which costs next to nothing; else ``sys.settrace``, which calls
    back on every line (several times slower). Both note the course answers the block
    calls. ``with time_budget(...) as how:`` says which one: "monitoring" or "settrace".
    """
    monitoring = getattr(sys, "monitoring", None)
    tool = None
    if monitoring is not None:
        tool = next((t for t in MONITORING_TOOL_IDS if monitoring.get_tool(t) is None), None)
    return Budget(time.monotonic() + limit_s, recorder, spins, tool)


class Budget:
    """The block of ``time_budget``. Its own code (this module's) is never stopped, so
    leaving it always turns the callbacks off, even once the time has run out."""

    def __init__(
        self,
        deadline: float,
        recorder: Recorder,
        spins: dict[types.CodeType, bool],
        tool: int | None,
    ) -> None:
        self.deadline = deadline
        self.recorder = recorder
        self.spins = spins
        self.tool = tool  # a free sys.monitoring tool id, or None: sys.settrace
        self.monitoring = getattr(sys, "monitoring", None) if tool is not None else None
        self.before: Any = None

    def __enter__(self) -> str:
        if self.monitoring is not None:
            self._monitor()
            return "monitoring"
        self.before = sys.gettrace()
        sys.settrace(self._on_call)
        return "settrace"

    def __exit__(self, *exc_info: object) -> None:
        monitoring, tool = self.monitoring, self.tool
        if monitoring is None:
            sys.settrace(self.before)
            return
        monitoring.set_events(tool, monitoring.events.NO_EVENTS)
        monitoring.register_callback(tool, monitoring.events.PY_START, None)
        monitoring.register_callback(tool, monitoring.events.JUMP, None)
        monitoring.free_tool_id(tool)

    def _monitor(self) -> None:
        monitoring, tool, events = self.monitoring, self.tool, self.monitoring.events
        files, note, deadline = self.recorder.files, self.recorder.note, self.deadline

        def on_start(code: types.CodeType, offset: int) -> None:
            filename = code.co_filename
            if filename in files:
                note(sys._getframe(1))  # the frame that is starting
            if time.monotonic() > deadline and filename != HERE:
                raise TimeUp

        def on_jump(code: types.CodeType, offset: int, destination: int) -> None:
            if time.monotonic() > deadline and code.co_filename != HERE:
                raise TimeUp

        monitoring.use_tool_id(tool, "lessonkit check")
        monitoring.register_callback(tool, events.PY_START, on_start)
        monitoring.register_callback(tool, events.JUMP, on_jump)
        monitoring.set_events(tool, events.PY_START | events.JUMP)

    def _on_line(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > self.deadline:
            raise TimeUp
        return self._on_line

    def _on_call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if code.co_filename == HERE:
            return None  # the budget's own exit
        if code.co_filename in self.recorder.files:
            self.recorder.note(frame)
        spin = self.spins.get(code)
        if spin is None:
            spin = self.spins[code] = _spins(code)
        if spin:
            frame.f_trace_opcodes = True  # a jump to itself never starts a line again
        return self._on_line(frame, event, arg)


def _spins(code: types.CodeType) -> bool:
    """Return True when ``code`` holds a jump to itself (``while True: pass``).

    Such a loop never starts a line again, so it sends no "line" event: its
    frame is traced by opcode instead (slower, and only for such code).
    """
    return any(
        i.opname.startswith("JUMP_BACKWARD") and i.argval == i.offset
        for i in dis.get_instructions(code)
    )
