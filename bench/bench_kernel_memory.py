"""Memory of a kernel after each lesson: its PSS once every code cell of the notebook has run.

    .venv/bin/python bench/bench_kernel_memory.py            (about a minute)

Each lesson runs in a fresh kernel from its own folder, as JupyterLab runs it (nbclient, the
same way tools/execute_notebooks.py does); once its last cell has run, the kernel's
proportional set size (PSS: its private memory plus its share of the pages it shares with
other processes) is read from /proc/<pid>/smaps_rollup (Linux). A bare kernel, started and
given one empty cell, is measured first as the floor. The course's rule: load only what a
lesson uses, when it uses it (a kernel that drew one inline matplotlib figure holds about
twice a bare kernel's memory), so a lesson that draws no matplotlib figure should stay near
the floor. Results are recorded in bench/README.md ("Kernel memory per lesson").
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
KIB_PER_MIB = 1024


def pss_mib(pid: int) -> float:
    """Return the PSS of process `pid` in MiB, read from /proc/<pid>/smaps_rollup."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / KIB_PER_MIB
    raise LookupError(f"/proc/{pid}/smaps_rollup has no Pss line")


def draws_a_matplotlib_figure(notebook: nbformat.NotebookNode) -> bool:
    """Return True if any stored output of `notebook` is a PNG image (a matplotlib figure)."""
    return any(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def kernel_pss_after(notebook: nbformat.NotebookNode, folder: Path) -> tuple[float, bool]:
    """Return the kernel's PSS in MiB after running `notebook`, and whether matplotlib is loaded."""
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
        probe = nbformat.v4.new_code_cell("import sys; print('matplotlib' in sys.modules)")
        notebook.cells.append(probe)
        client.execute_cell(probe, len(notebook.cells) - 1)
        loaded = probe.outputs[0]["text"].strip() == "True"
        return pss_mib(client.km.provisioner.pid), loaded


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Python {platform.python_version()}, load average {load} at the start")
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")])
    floor, _ = kernel_pss_after(bare, ROOT / "notebooks")
    print("| kernel after | PSS (MiB) | above a bare kernel | draws matplotlib figures | "
          "matplotlib loaded |")  # fmt: skip
    print("|---|---|---|---|---|")
    print(f"| a bare kernel (one empty cell) | {floor:.1f} | - | no | no |")
    for path in LESSONS:
        notebook = nbformat.read(path, as_version=4)
        figures = draws_a_matplotlib_figure(notebook)
        pss, loaded = kernel_pss_after(notebook, path.parent)
        print(
            f"| {path.stem} | {pss:.1f} | {pss - floor:+.1f} | {'yes' if figures else 'no'} | "
            f"{'yes' if loaded else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
