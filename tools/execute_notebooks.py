"""Run notebooks top to bottom and store their outputs: python tools/execute_notebooks.py NB...

What `make execute` uses after a lesson or a solution changes. Each notebook runs
in a fresh kernel from its own folder (as JupyterLab runs it), with the widget
state saved, and without per-cell timing metadata, so that re-running an
unchanged notebook changes nothing but widget model ids.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout_s: int = 600) -> float:
    """Execute the notebook at `path` in place; return the seconds it took."""
    notebook = nbformat.read(path, as_version=4)
    started = time.monotonic()
    client = NotebookClient(
        notebook,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=True,
    )
    client.execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)
    return time.monotonic() - started


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tools/execute_notebooks.py NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    for name in argv:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
