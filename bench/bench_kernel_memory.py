"""Memory of a kernel after each lesson: its PSS once every code cell of the notebook has run.

    .venv/bin/python bench/bench_kernel_memory.py [--runs 3]      (about 4 minutes)

Each lesson runs in a fresh kernel from its own folder, as JupyterLab runs it (nbclient, the
same way tools/execute_notebooks.py does); once its last cell has run, the kernel's memory
is read from /proc/<pid>/smaps_rollup (Linux):

* PSS, proportional set size: the kernel's private pages plus its share of the pages it
  shares with other processes (libpython and the other shared libraries, split between
  every process that maps them, so it is a little larger on an idle machine);
* private: the pages no other process shares (what stopping the kernel gives back), the
  same whatever else runs on the machine.

A bare kernel, started and given one empty cell, is measured first as the floor. Each row
is the median of `--runs` passes, after one pass that is not measured: that pass writes
Python's bytecode caches (.pyc) and matplotlib's font cache, as `pip install` and a
learner's first lesson do. A kernel that compiles its imports from source, because the
caches are missing and PYTHONDONTWRITEBYTECODE keeps them from being written, holds about
25 MiB more heap for the rest of its life: the bench removes that variable from the kernels'
environment (as the Makefile does) and says when a kernel still found no cache for a module.

The course's rule: load only what a lesson uses, when it uses it, and keep no figure
library in the kernel (lessonkit.lab.plots draws matplotlib figures in a helper process).
The last column names the large libraries a kernel holds at the end. Results are recorded
in bench/README.md ("Kernel memory per lesson").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
KIB_PER_MIB = 1024
# The libraries that cost a kernel most when imported (bench/README.md lists their sizes).
LARGE = ("matplotlib", "numpy", "openai", "anthropic", "pydantic", "uvicorn")
# Run in the kernel after the lesson: which large libraries it holds, and how many of its
# modules have a source file but no bytecode cache (each was compiled from source).
PROBE = f"""
import importlib.util as _u, json as _j, os as _o, sys as _s
def _uncached():
    for _m in list(_s.modules.values()):
        _f = getattr(_m, "__file__", None) or ""
        if _f.endswith(".py") and not _o.path.exists(_u.cache_from_source(_f)):
            yield _m.__name__
print(_j.dumps({{"large": [n for n in {LARGE!r} if n in _s.modules],
                "uncached": sorted(_uncached())}}))
"""


@dataclass(frozen=True)
class Reading:
    """One kernel after one notebook: its PSS and private memory (MiB), and what it holds."""

    pss_mib: float
    private_mib: float
    large: tuple[str, ...]  # the LARGE libraries in its sys.modules
    uncached: tuple[str, ...]  # modules it imported without a bytecode cache


def memory_mib(pid: int) -> tuple[float, float]:
    """Return the PSS and the private memory of process `pid` in MiB (/proc/<pid>/smaps_rollup)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) / KIB_PER_MIB
    return fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"]


def draws_a_matplotlib_figure(notebook: nbformat.NotebookNode) -> bool:
    """Return True if any stored output of `notebook` is a PNG image (a matplotlib figure)."""
    return any(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def kernel_after(notebook: nbformat.NotebookNode, folder: Path) -> Reading:
    """Return the reading of a fresh kernel that has run every code cell of `notebook`."""
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        pss, private = memory_mib(client.km.provisioner.pid)  # before the probe adds anything
        probe = nbformat.v4.new_code_cell(PROBE)
        notebook.cells.append(probe)
        client.execute_cell(probe, len(notebook.cells) - 1)
        found = json.loads(probe.outputs[0]["text"])
        return Reading(pss, private, tuple(found["large"]), tuple(found["uncached"]))


def one_pass() -> dict[str, Reading]:
    """Return one reading per row: the bare kernel, then each lesson, each in a fresh kernel."""
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")])
    readings = {"a bare kernel (one empty cell)": kernel_after(bare, ROOT / "notebooks")}
    for path in LESSONS:
        readings[path.stem] = kernel_after(nbformat.read(path, as_version=4), path.parent)
    return readings


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured passes (median shown)")
    args = parser.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the kernels inherit this environment
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Python {platform.python_version()}, load average {load} at the start")
    one_pass()  # not measured: writes the bytecode and font caches
    passes = [one_pass() for _ in range(args.runs)]
    figures = {p.stem: draws_a_matplotlib_figure(nbformat.read(p, as_version=4)) for p in LESSONS}
    floor = statistics.median(run["a bare kernel (one empty cell)"].pss_mib for run in passes)
    print(f"median of {args.runs} run(s), MiB (range in brackets)")
    print("| kernel after | PSS | private | PSS above a bare kernel | draws matplotlib figures "
          "| large libraries in the kernel |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for row in passes[0]:
        pss = [run[row].pss_mib for run in passes]
        private = [run[row].private_mib for run in passes]
        above = "-" if row not in figures else f"{statistics.median(pss) - floor:+.1f}"
        draws = "yes" if figures.get(row) else "no"
        large = ", ".join(passes[-1][row].large) or "none"
        print(
            f"| {row} | {statistics.median(pss):.1f} ({min(pss):.1f}-{max(pss):.1f}) "
            f"| {statistics.median(private):.1f} | {above} | {draws} | {large} |"
        )
    uncached = sorted({m for run in passes for r in run.values() for m in r.uncached})
    if uncached:
        print(f"warning: {len(uncached)} module(s) ran without a bytecode cache, e.g. "
              f"{', '.join(uncached[:5])}: compiled from source, they leave more heap")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
