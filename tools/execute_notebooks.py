"""Run notebooks top to bottom and store their outputs: python tools/execute_notebooks.py NB...

Run it after a lesson or a solution changes (notebook 00 is written by
tools/build_start_here.py, then executed here like the others). Each notebook runs
in a fresh kernel from its own folder (as JupyterLab runs it), with the widget
state saved, and without per-cell timing metadata. A cell's printed text can reach
the kernel's output in one piece or in several, as the kernel's flushes fall; the
pieces of one stream are joined, so that re-running an unchanged notebook changes
nothing but widget model ids.

Each run records its checks into a temporary progress record, never the course folder's.

A widget may keep the address of a server the notebook started; the port was free
for that one run, so the saved state writes it as <port>, and the browser demo's
socket name (random per run) as <name> (tests/course/test_committed_outputs.py checks
that no trace of the machine is committed).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

RUN_PORT = re.compile(r"(127\.0\.0\.1|localhost):(?!8000\b)\d{2,5}\b")
RUN_SOCKET = re.compile(r'("socket_name": )"[a-z0-9]{12}"')


def without_run_ports(widget_state: dict) -> dict:
    """Return the saved widget state with this run's loopback ports and demo sockets as <port>, <name>."""
    text = RUN_PORT.sub(r"\1:<port>", json.dumps(widget_state, ensure_ascii=False))
    return json.loads(RUN_SOCKET.sub(r'\1"<name>"', text))


def joined_streams(outputs: list) -> list:
    """Return `outputs` with each run of consecutive same-stream text outputs joined into one."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            joined.append(output)
    return joined


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
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
    if "widgets" in notebook.metadata:
        notebook.metadata["widgets"] = without_run_ports(notebook.metadata["widgets"])
    nbformat.write(notebook, path)
    return time.monotonic() - started


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tools/execute_notebooks.py NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    # The checks these runs make never reach your progress record, and every stored
    # progress() shows a course not yet started (lessonkit.course.record).
    os.environ["LESSONKIT_RECORD_DIR"] = tempfile.mkdtemp(prefix="lessonkit-record-")
    for name in argv:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
