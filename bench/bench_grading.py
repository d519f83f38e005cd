"""Benchmark `lessonkit grade` on a synthetic class, with and without the sandbox.

Run: .venv/bin/python bench/bench_grading.py [--learners 300] [--jobs 2] [--overhead 30]

Writes a class of ``--learners`` synthetic learners x 6 exercise notebooks
(tests/support/classroom.py: right answers written differently, typical
mistakes, a function handing its work to the course's answer, endless loops,
exit(), untouched stubs, a few corrupt files and -Copy1 duplicates), then
grades it with ``lessonkit grade -j N`` in a fresh process, once sandboxed
(bubblewrap + rlimits, one sandbox per learner) and once with
``--no-sandbox`` (rlimits only), the two runs taken in turns. It also times
one sandbox's start-up against a plain process (median of ``--overhead``
interleaved starts), which is what the sandbox adds per learner.

Measured on this kind of machine (2 cores shared with other work, Python
3.11.7, as root), 300 learners x 6 notebooks, -j 2:

    load average ~3:  sandboxed 99.0 s, --no-sandbox 96.4 s
    load average ~7:  sandboxed 214 s,  --no-sandbox 238 s  (the cores 3-4x oversubscribed)
    per sandbox:      python -c pass 36.7 ms plain, 47.5 ms sandboxed (+10.7 ms, median of 30)

(Before the learner's sandbox and batched calls, one fresh interpreter per
notebook and one round trip per case: 10 solution learners took 10.2 s, about
300 s for 300.) Issue 24's grader (no fork: a learner's notebooks run one after
the other in its child; course answers watched by a trace hook) is compared
with the one before it in bench/README.md, both runs taken in turns on the
same loaded machine.

Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the synthetic class tests/grading uses
from classroom import write_class  # noqa: E402

from lessonkit.grading import sandbox  # noqa: E402


def grade_once(folder: Path, out: Path, jobs: int, *extra: str) -> tuple[float, str]:
    """Return (wall seconds, the grader's last stderr line) of one `lessonkit grade` run."""
    command = [sys.executable, "-m", "lessonkit", "grade", str(folder), "--out", str(out)]
    command += ["-j", str(jobs), "--seed", "1", "--timeout", "10", *extra]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"lessonkit grade failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done.stderr.strip().splitlines()[-1]


def start_overhead_ms(runs: int) -> dict[str, float]:
    """Return the median start-up of `python -c pass`, plain and sandboxed (interleaved runs)."""
    argv = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"plain": [], "sandboxed": []}
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(argv, check=True)
        times["plain"].append(time.monotonic() - started)
        started = time.monotonic()
        box = sandbox.Sandbox(argv, readonly_paths=sandbox.python_paths())
        report = box.wait()
        times["sandboxed"].append(time.monotonic() - started)
        assert report.status == "ok", report
    return {name: 1000 * statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--overhead", type=int, default=30, metavar="N", help="start-ups to time")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each mode, taken in turns")
    args = parser.parse_args(argv)
    support = sandbox.detect()
    print(f"{support.reason}; {os.cpu_count()} cores; Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        folder = Path(tmp) / "class"
        started = time.monotonic()
        kinds = write_class(folder, args.learners, seed=1)
        print(f"wrote {len(kinds)} learners x 6 notebooks in {time.monotonic() - started:.1f} s")
        results: dict[str, list[float]] = {"sandboxed": [], "--no-sandbox": []}
        for _ in range(args.rounds):
            for mode in results:
                extra = ("--no-sandbox",) if mode == "--no-sandbox" else ("--require-sandbox",)
                elapsed, last = grade_once(folder, Path(tmp) / f"{mode}.csv", args.jobs, *extra)
                results[mode].append(elapsed)
                print(f"  {mode:13s} {elapsed:6.1f} s   ({last})")
        for mode, values in results.items():
            print(f"{mode:13s} median {statistics.median(values):6.1f} s over {len(values)} run(s)")
    if support.available and args.overhead:
        overhead = start_overhead_ms(args.overhead)
        print(
            f"start-up, median of {args.overhead}: plain {overhead['plain']:.1f} ms, "
            f"sandboxed {overhead['sandboxed']:.1f} ms "
            f"(+{overhead['sandboxed'] - overhead['plain']:.1f} ms per learner's sandbox)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
