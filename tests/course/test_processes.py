"""tests/support/processes.py: what the tests start gets default signals, whatever started the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import processes

SUPPORT = Path(processes.__file__).parent

# A run started as a shell's background job: SIGINT and SIGQUIT ignored, and here SIGUSR1
# blocked too. It reports what a plain subprocess and what processes.run's child inherit.
AS_A_BACKGROUND_JOB = f"""
import signal, subprocess, sys
sys.path.insert(0, {str(SUPPORT)!r})
import processes
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGQUIT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGUSR1}})
status = ["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
print(subprocess.run(status, capture_output=True, text=True).stdout, end="")
print(processes.run(status, capture_output=True, text=True, timeout_s=30).stdout, end="")
"""


def _mask(lines: list[str], name: str) -> int:
    return int(next(line for line in lines if line.startswith(name)).split()[1], 16)


def test_a_started_process_has_no_signal_ignored_or_blocked_that_its_starter_had():
    out = subprocess.run(
        [sys.executable, "-c", AS_A_BACKGROUND_JOB], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    plain, started = out[:2], out[2:]
    sigint, sigquit, sigusr1 = 1 << 1, 1 << 2, 1 << 9  # bit n-1 for signal n
    assert _mask(plain, "SigIgn") & (sigint | sigquit) == sigint | sigquit  # what a shell leaves
    assert _mask(plain, "SigBlk") & sigusr1
    # Signals 1-31; the C library keeps 32 and 33 for itself (they cannot be reset).
    standard = (1 << 31) - 1
    assert _mask(started, "SigIgn") & standard == 0 and _mask(started, "SigBlk") & standard == 0


def test_a_started_process_keeps_its_pid_and_gets_the_environment_it_is_given():
    child = processes.start(
        ["sh", "-c", 'echo "$$ $ONLY_THIS"'], env={"ONLY_THIS": "yes"}, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    out, _ = child.communicate(timeout=30)
    assert out.split() == [str(child.pid), "yes"]
