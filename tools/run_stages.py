#!/usr/bin/env python3
"""Run make targets as the stages of `make test`: the set-up first, then the stages side by side.

Usage: python3 tools/run_stages.py [--make MAKE] [--setup "TARGET..."] [--jobs N] STAGE...

The set-up targets run first, one after another, as one stage called "setup" (.venv,
then Chromium), so no two stages install anything at once; if the first fails nothing
else runs, if a later one fails the stages that need it fail with its message. Then up to N stages
run at the same time, each as `make STAGE`: they spend most of their time waiting
(for kernels, browsers, paced streams), so running them together saves minutes even
on two cores. Each stage's output goes to test-artifacts/stages/STAGE.log and is
printed whole when the stage ends; at the end comes the time of each stage (and its
CPU time, which a busy machine changes far less), and the exit status fails if any
stage failed. Standard library only: it runs before .venv.

A stage's CPU time counts every process it started, Chromium's renderers and Jupyter's
kernels included: on Linux each process is read from /proc once a second and counted
for the stage it descends from (getrusage alone misses what the stage never waited for,
and Chromium's renderers were two thirds of all CPU here). The table's last line says how
busy the whole machine was, so a run that had no idle core to spare says so.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

LOG_DIR = Path("test-artifacts") / "stages"
TIMES_FILE = LOG_DIR / "times.txt"
PROC = Path("/proc")
SAMPLE_EVERY_S = 1.0  # how often CpuMeter reads /proc: a process that lives less is missed


class CpuMeter:
    """CPU seconds of every process under each stage, from /proc (Linux), sampled.

    sample() reads each process's CPU time (utime + stime) and parent; a process is counted
    for the stage whose make it descends from, found the first time the process is seen
    (while its parents still live). What a process used before the first sample of the run
    is not counted; a process that starts and ends between two samples is missed.
    """

    def __init__(self) -> None:
        self.available = (PROC / "stat").exists()
        self.ticks_per_s = os.sysconf("SC_CLK_TCK") if self.available else 100
        # (pid, start time) -> (CPU seconds at the last sample, the stage it counts for)
        self.seen: dict[tuple[int, int], tuple[float, str | None]] = {}
        self.cpu_s: dict[str, float] = {}
        self.busy_at_start = self.machine_busy_s()
        self.first = True

    def machine_busy_s(self) -> float:
        """Return the CPU seconds the whole machine has been busy since boot (0 off Linux)."""
        if not self.available:
            return 0.0
        fields = (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
        return (user + nice + system + irq + softirq + steal) / self.ticks_per_s

    def read(self, pid: int) -> tuple[int, float, int] | None:
        """Return (parent pid, CPU seconds, start time in ticks) of pid, or None if it ended."""
        try:
            text = (PROC / str(pid) / "stat").read_text()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()  # the name in () may hold spaces
        cpu_s = (int(fields[11]) + int(fields[12])) / self.ticks_per_s
        return int(fields[1]), cpu_s, int(fields[19])

    def sample(self, stages: list[Stage]) -> None:
        """Read every process once and add what each used since the last sample to its stage."""
        if not self.available:
            return
        roots = {s.process.pid: s.name for s in stages if s.process is not None}
        processes = {}
        for entry in PROC.iterdir():
            if entry.name.isdigit() and (found := self.read(int(entry.name))) is not None:
                processes[int(entry.name)] = found

        def stage_of(pid: int) -> str | None:
            for _ in range(64):  # a process tree deeper than this is not a stage's
                if pid in roots:
                    return roots[pid]
                if pid not in processes:
                    return None
                pid = processes[pid][0]
            return None

        for pid, (_, cpu_s, start) in processes.items():
            before, stage = self.seen.get((pid, start), (None, None))
            if before is None:
                stage = stage_of(pid)
                before = cpu_s if self.first else 0.0  # running before the run: not counted
            if stage is not None:
                self.cpu_s[stage] = self.cpu_s.get(stage, 0.0) + cpu_s - before
            self.seen[(pid, start)] = (cpu_s, stage)
        self.first = False


@dataclass
class Stage:
    """One make invocation, its log and, once it ended, its exit status and time."""

    name: str
    targets: list[str]
    log: Path
    process: subprocess.Popen | None = None
    started_s: float = 0.0
    seconds: float | None = None
    cpu_seconds: float | None = None
    status: int | None = None
    output: list[str] = field(default_factory=list)

    def start(self, make: list[str]) -> None:
        """Start make on the stage's targets, one after another (all of them, -k)."""
        self.started_s = time.monotonic()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [*make, "--no-print-directory", "-k", *self.targets],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def poll(self) -> bool:
        """Return True once the stage has ended (its status, time and CPU time then set)."""
        if self.process is None or self.status is not None:
            return self.status is not None
        pid, wait_status, usage = os.wait4(self.process.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.status = self.process.returncode = os.waitstatus_to_exitcode(wait_status)
        self.seconds = time.monotonic() - self.started_s
        # CPU of the stage's whole process tree (every process its parent waited for)
        self.cpu_seconds = usage.ru_utime + usage.ru_stime
        return True

    @property
    def result(self) -> str:
        if self.status is None:
            return "not run" if self.process is None else "stopped"
        return "passed" if self.status == 0 else f"FAILED ({self.status})"


def minutes(seconds: float) -> str:
    """Return 75.3 as '1 min 15 s', 8.2 as '8 s'."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


def print_ended(stage: Stage) -> None:
    """Print the stage's whole log between two rules that name it and its result."""
    text = stage.log.read_text(errors="replace")
    print(
        f"\n===== {stage.name}: {stage.result} in {minutes(stage.seconds or 0)} =====", flush=True
    )
    print(text.rstrip("\n"))
    print(f"===== end of {stage.name} ({stage.log}) =====", flush=True)


def table(stages: list[Stage], wall_s: float, jobs: int, meter: CpuMeter) -> str:
    """Return the stage times as a small table, the wall time of the whole run below."""
    width = max(len(s.name) for s in stages)
    lines = ["", "Stage times:", f"  {'':<{width}}  {'':<11} {'time':>10} {'CPU':>10}"]
    for stage in stages:
        took = "-" if stage.seconds is None else minutes(stage.seconds)
        cpu = "-" if stage.cpu_seconds is None else minutes(stage.cpu_seconds)
        lines.append(f"  {stage.name:<{width}}  {stage.result:<11} {took:>10} {cpu:>10}")
    cpu_s = sum(s.cpu_seconds or 0 for s in stages)
    together = "one after another" if jobs == 1 else f"up to {jobs} at the same time"
    lines.append(
        f"  {'total':<{width}}  {'':<11} {minutes(wall_s):>10} {minutes(cpu_s):>10}"
        f"  (stages {together}; load average {os.getloadavg()[0]:.1f} at the end)"
    )
    if meter.available:
        cores = os.cpu_count() or 1
        busy_s = meter.machine_busy_s() - meter.busy_at_start
        lines.append(
            f"  the machine's {cores} cores were busy {100 * busy_s / (cores * wall_s):.0f}% of"
            f" the run ({minutes(busy_s)} of CPU, every process counted)"
        )
    return "\n".join(lines)


def run(stages: list[Stage], make: list[str], jobs: int, meter: CpuMeter) -> None:
    """Run stages, at most `jobs` at once, printing each one's log when it ends."""
    waiting, running = list(stages), []
    sampled_at = 0.0
    while waiting or running:
        if time.monotonic() - sampled_at >= SAMPLE_EVERY_S:
            meter.sample(running)
            sampled_at = time.monotonic()
        while waiting and len(running) < jobs:
            stage = waiting.pop(0)
            stage.start(make)
            running.append(stage)
            print(f"started {stage.name}", flush=True)
        for stage in [s for s in running if s.poll()]:
            running.remove(stage)
            print_ended(stage)
        time.sleep(0.2)  # the poll interval


def setup_usable(setup: list[Stage], make: list[str]) -> bool:
    """Return True unless the set-up's first target (the environment) is still not built."""
    if not setup or setup[0].status == 0:
        return True
    first = setup[0].targets[0]
    # make -q: exit 0 if the target is up to date, without building anything
    return subprocess.run([*make, "-q", first], stdout=subprocess.DEVNULL).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make", default="make", help="the make command (default: make)")
    parser.add_argument("--setup", default="", help="targets to build first, as stage 'setup'")
    parser.add_argument("--jobs", type=int, default=0, help="stages at once (0: all)")
    parser.add_argument("stages", nargs="+")
    args = parser.parse_args()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    make = shlex.split(args.make)
    jobs = args.jobs if args.jobs > 0 else len(args.stages)
    setup = [Stage("setup", args.setup.split(), LOG_DIR / "setup.log")] if args.setup else []
    stages = [Stage(name, [name], LOG_DIR / f"{name}.log") for name in args.stages]
    started = time.monotonic()
    meter = CpuMeter()
    try:
        if setup:
            run(setup, make, 1, meter)
        if setup_usable(setup, make):
            print(f"\nRunning {', '.join(args.stages)} ({'one by one' if jobs == 1 else 'side by side'});"
                  " each stage's output follows when it ends.", flush=True)  # fmt: skip
            run(stages, make, jobs, meter)
    except KeyboardInterrupt:  # Ctrl-C reached every stage too (same process group)
        for stage in [*setup, *stages]:
            if stage.process is not None and stage.process.poll() is None:
                stage.process.send_signal(signal.SIGINT)
        for stage in [*setup, *stages]:
            if stage.process is not None:
                stage.process.wait()
        print("\ninterrupted", file=sys.stderr)
    for stage in [*setup, *stages]:  # the sampled CPU time, where /proc gave one (it sees more)
        if stage.name in meter.cpu_s:
            stage.cpu_seconds = max(stage.cpu_seconds or 0.0, meter.cpu_s[stage.name])
    report = table([*setup, *stages], time.monotonic() - started, jobs, meter)
    print(report, flush=True)
    TIMES_FILE.write_text(report.lstrip("\n") + "\n")
    everything = [*setup, *stages]
    return 0 if all(s.status == 0 for s in everything) else 1


if __name__ == "__main__":
    sys.exit(main())
