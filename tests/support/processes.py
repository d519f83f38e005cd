"""Start the processes tests need as if from a terminal, whatever started the tests.

A shell starts a background job (``make test &`` in a script) with SIGINT and SIGQUIT
ignored, and an ignored signal stays ignored across fork and exec. So a `lessonkit
serve` that a test starts from such a run ignores the Ctrl-C the test sends it: it
exited 0 instead of 130. `start` and `run` therefore launch every command through this
file: it sets each signal back to its default action and unblocks all of them, then
execs the command (same process, same pid). What else a process needs, the test says:
its environment (`env`, the whole of it) and, for a process group the test stops as
one, its own session (`new_session`).

Run as a script, this file is that launcher: ``python processes.py COMMAND [ARG...]``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

LAUNCHER = Path(__file__).resolve()


def launcher_command(command: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Return command prefixed with the launcher (`-I -S`: stdlib only, ~15 ms)."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), *map(str, command)]


def start(
    command: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
    **popen_kwargs: Any,
) -> subprocess.Popen:
    """Return the started process: default signal dispositions, no blocked signals.

    env: the process's whole environment (default: a copy of this one).
    new_session: its own session and process group (stop it with os.killpg), so signals
    meant for the test run's terminal do not reach it.
    Other keywords go to subprocess.Popen.
    """
    return subprocess.Popen(
        launcher_command(command),
        env=dict(os.environ if env is None else env),
        start_new_session=new_session,
        **popen_kwargs,
    )


def run(
    command: Sequence[str | os.PathLike[str]],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    **run_kwargs: Any,
) -> subprocess.CompletedProcess:
    """Return the finished process (as subprocess.run), started as `start` starts one."""
    return subprocess.run(
        launcher_command(command),
        env=dict(os.environ if env is None else env),
        timeout=timeout_s,
        **run_kwargs,
    )


def _exec_with_default_signals(command: list[str]) -> None:
    """Reset every catchable signal to its default action, unblock all, exec command."""
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):  # real-time signals the C library keeps for itself
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.execvp(command[0], command)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python processes.py COMMAND [ARG...]")
    _exec_with_default_signals(sys.argv[1:])
