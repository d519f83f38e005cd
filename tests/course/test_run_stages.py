"""tools/run_stages.py, which runs `make test`'s stages: the set-up first, then the stages side by side.

Run on a small Makefile of its own in a temporary folder: stages that print, pass, fail
and take a moment, so the order, the logs, the exit status and the times can be seen.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import processes

ROOT = Path(__file__).resolve().parents[2]
RUN_STAGES = ROOT / "tools" / "run_stages.py"

MAKEFILE = """\
.PHONY: env extra ok slow bad waits makes
env: env.txt
env.txt:
\t@echo env ready > env.txt
extra:
\t@echo no extra here; exit 1
ok:
\t@test -f env.txt && echo ok saw the env
slow:
\t@sleep 1; echo slow done
bad:
\t@echo bad says why; exit 3
waits:
\t@for i in $$(seq 600); do [ -f made.txt ] && echo waits saw it && exit 0; sleep 0.1; done; exit 1
makes:
\t@touch made.txt
"""


def run_stages(folder: Path, *args: str) -> tuple[int, str]:
    """Return (exit status, output) of run_stages.py in folder."""
    done = processes.run(
        [sys.executable, str(RUN_STAGES), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout_s=120,
    )
    return done.returncode, done.stdout + done.stderr


def test_stages_run_after_the_setup_and_each_prints_its_output_and_time(tmp_path):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    status, out = run_stages(tmp_path, "--setup", "env", "slow", "ok", "waits", "makes")
    assert status == 0, out
    assert out.index("started slow") > out.index("===== setup: passed")
    assert "ok saw the env" in out and "slow done" in out
    assert "waits saw it" in out  # only if "makes" ran while "waits" was still running
    times = (tmp_path / "test-artifacts" / "stages" / "times.txt").read_text()
    assert re.search(r"^  setup +passed +\d+ s +\d+ s$", times, re.M), times
    assert int(re.search(r"^  slow +passed +(\d+) s +\d+ s$", times, re.M).group(1)) >= 1, times
    assert re.search(r"^  total .*\(stages up to 4 at the same time; load", times, re.M), times
    assert times in out.replace("\nStage times:", "Stage times:")


def test_a_failing_stage_fails_the_run_and_the_others_still_run(tmp_path):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    status, out = run_stages(tmp_path, "--setup", "env", "--jobs", "1", "bad", "ok")
    assert status == 1
    assert "bad says why" in out and "ok saw the env" in out
    assert re.search(r"^  bad +FAILED \(2\)", out, re.M), out  # make's status for a failure
    assert (
        (tmp_path / "test-artifacts" / "stages" / "bad.log").read_text().startswith("bad says why")
    )
    assert "(stages one after another;" in out


def test_a_later_setup_target_that_fails_leaves_the_stages_to_run(tmp_path):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    status, out = run_stages(tmp_path, "--setup", "env extra", "ok")
    assert status == 1 and "no extra here" in out and "ok saw the env" in out


def test_without_its_environment_no_stage_runs(tmp_path):
    (tmp_path / "Makefile").write_text(MAKEFILE.replace("@echo env ready > env.txt", "@exit 1"))
    status, out = run_stages(tmp_path, "--setup", "env", "ok")
    assert status == 1 and "started ok" not in out
    assert re.search(r"^  ok +not run +- +-$", out, re.M), out


# A stage whose CPU goes to a process it never waits for, as Chromium's renderers do: the
# parent kills its child and exits without reaping it, so getrusage never sees that time.
BURNER = """\
import os, pathlib, signal, subprocess, sys, time
if sys.argv[1:] == ["child"]:
    end = time.process_time() + 1.5
    while time.process_time() < end:
        pass
    pathlib.Path("burnt.txt").touch()
    time.sleep(600)
child = subprocess.Popen([sys.executable, __file__, "child"])
while not pathlib.Path("burnt.txt").exists():
    time.sleep(0.05)
time.sleep(2.5)  # two of run_stages' samples see the child's last CPU time
child.send_signal(signal.SIGKILL)
os._exit(0)  # without waiting for the child
"""


def test_a_stages_cpu_counts_the_processes_it_never_waited_for(tmp_path):
    (tmp_path / "Makefile").write_text(
        MAKEFILE.replace(".PHONY:", ".PHONY: burns") + f"burns:\n\t@{sys.executable} burner.py\n"
    )
    (tmp_path / "burner.py").write_text(BURNER)
    status, out = run_stages(tmp_path, "burns")
    assert status == 0, out
    cpu_s = int(re.search(r"^  burns +passed +\d+ s +(\d+) s$", out, re.M).group(1))
    assert cpu_s >= 1, out  # the child burnt 1.5 s; its parent and make used almost none
    assert re.search(r"^  the machine's \d+ cores were busy \d+% of the run", out, re.M), out
