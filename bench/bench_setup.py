"""The learner's set-up and `make test`'s stages, measured: `python bench/bench_setup.py`.

1. A copy of the course (its tracked files) installed as a learner installs it, into a new
   venv each time: `pip install .` with uv (when uv is on the PATH) and with pip. Each is
   timed as a whole (creating the venv included), and the venv's size is measured: every
   file counted once, as the disk holds it.
2. The stage times of the last `make test` in this folder (tools/run_stages.py writes them
   to test-artifacts/stages/times.txt), printed as they are.

Needs the package registry (or uv's and pip's caches) for the installs. `--no-pip` skips
the pip install (the slower one, ~40 s and more). Prints a small table; nothing asserted.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "test-artifacts" / "stages" / "times.txt"
LEARNER_LIMIT_MB = 550


def tracked_copy(target: Path) -> Path:
    """Copy the repository's tracked files into `target`; return it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def megabytes(folder: Path) -> float:
    """Return the size of every file under `folder` in MB, each inode counted once."""
    seen, total = set(), 0
    for path in folder.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink() and info.st_ino not in seen:
            seen.add(info.st_ino)
            total += info.st_size
    return total / 1e6


def install(tool: str, course: Path, venv: Path) -> float:
    """Install the course with `tool` ("uv" or "pip") into a new `venv`; return the seconds."""
    started = time.perf_counter()
    if tool == "uv":
        subprocess.run(["uv", "venv", "--quiet", "--python", sys.executable, venv], check=True)
        command = ["uv", "pip", "install", "--quiet", "--compile-bytecode",
                   "--python", venv / "bin" / "python", "."]  # fmt: skip
    else:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        command = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "."]
    subprocess.run(command, cwd=course, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pip", action="store_true", help="skip the pip install")
    args = parser.parse_args()
    tools = [t for t in ("uv", "pip") if (t == "pip" and not args.no_pip) or shutil.which(t)]
    print("A learner's install (`pip install .` of a copy of the course, into a new venv):")
    print(f"  {'installer':<10} {'time':>8} {'venv':>9}  {'test tools?':<12}")
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as scratch:
        course = tracked_copy(Path(scratch) / "course")
        for tool in tools:
            venv = Path(scratch) / f"venv-{tool}"
            seconds = install(tool, course, venv)
            size = megabytes(venv)
            has_tools = any(
                subprocess.run([venv / "bin" / "python", "-c", f"import {m}"],
                               capture_output=True).returncode == 0
                for m in ("pytest", "playwright", "jupyterhub")
            )  # fmt: skip
            print(
                f"  {tool:<10} {seconds:>7.1f}s {size:>6.0f} MB  {'yes' if has_tools else 'none':<12}"
            )
    print(f"  (limit for a learner's venv: {LEARNER_LIMIT_MB} MB)")
    print()
    if TIMES.exists():
        print(f"The last `make test` here ({TIMES.relative_to(ROOT)}):")
        print(TIMES.read_text().rstrip())
    else:
        print("No `make test` has run here yet: its stage times appear here after one.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
