"""Committed notebooks carry nothing of the machine that ran them.

Every notebook in notebooks/, solutions/ and exercises/ is scanned as committed: each
cell's outputs (text, HTML, any text-like data) and the notebook's metadata (saved widget
state included). They must not name a path on that machine, its host name, or a port
that was free on it for one run. Port 8000 is allowed: it is `lessonkit serve`'s documented
port, the one a learner types, not a port of the run.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(
    path
    for folder in ("notebooks", "solutions", "exercises")
    for path in (ROOT / folder).glob("*.ipynb")
)
DOCUMENTED_PORTS = {"8000"}

# A path on some machine: a home or work folder, a temp folder, a virtualenv's insides.
MACHINE_PATHS = re.compile(
    r"(?<![\w.])(?:/home/|/root/|/Users/|/work/|/tmp/|/private/var/|/var/folders/|[A-Z]:\\\\Users\\\\)"
    r"|site-packages|\.venv/bin/|dist-packages"
)
# host:port on the loopback (or any named host) with a number for the port.
HOST_PORT = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0):(\d{2,5})\b")
# Pixels inside HTML (a figure's <img src="data:...">): base64 can spell "/tmp/" by chance.
DATA_URI = re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+")


def _texts(notebook) -> list[tuple[str, str]]:
    """Return (where, text) for every output and the metadata of a notebook."""
    found = [("metadata", json.dumps(notebook.metadata, ensure_ascii=False))]
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            where = f"cell {index}"
            if "text" in output:
                found.append((where, output["text"]))
            for mime, data in output.get("data", {}).items():
                if mime.startswith("image/"):
                    continue  # pixels, not text
                text = data if isinstance(data, str) else json.dumps(data)
                found.append((f"{where} {mime}", DATA_URI.sub("data:image", text)))
            if output.get("output_type") == "error":
                found.append((f"{where} traceback", "\n".join(output.get("traceback", []))))
    return found


def machine_traces(text: str, *, host: str = socket.gethostname()) -> list[str]:
    """Return every trace of a machine in `text`: paths, its host name, a run's port."""
    traces = [m.group() for m in MACHINE_PATHS.finditer(text)]
    traces += [m.group() for m in HOST_PORT.finditer(text) if m.group(1) not in DOCUMENTED_PORTS]
    if len(host) >= 4 and host.lower() not in {"localhost"} and host in text:
        traces.append(f"host name {host!r}")
    return traces


def test_the_scan_skips_the_pixels_of_a_figure_but_not_its_words():
    html = '<img alt="cut at 127.0.0.1:37971" src="data:image/png;base64,AAAA/tmp/BBBB+/root/CC==">'
    assert DATA_URI.sub("data:image", html) == '<img alt="cut at 127.0.0.1:37971" src="data:image">'
    assert machine_traces(DATA_URI.sub("data:image", html)) == ["127.0.0.1:37971"]


def test_the_scan_finds_each_kind_of_trace():
    assert machine_traces("(/work/main/.venv/bin/python)")
    assert machine_traces("curl http://127.0.0.1:37971/v1/messages")
    assert machine_traces("running on laptop-of-kim", host="laptop-of-kim")
    assert not machine_traces("lessonkit serve listens on http://127.0.0.1:8000")
    assert not machine_traces("Host: 127.0.0.1:<port>")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_committed_output_names_a_path_host_or_port_of_the_machine_that_ran_it(path):
    notebook = nbformat.read(path, as_version=4)
    problems = [
        f"{where}: {trace}" for where, text in _texts(notebook) for trace in machine_traces(text)
    ]
    assert not problems, f"{path.relative_to(ROOT)}:\n" + "\n".join(sorted(set(problems)))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_committed_cell_keeps_one_printed_stream_in_several_pieces(path):
    # How a kernel splits printed text depends on when it flushes: stored whole, a re-run
    # of an unchanged notebook changes nothing (tools/execute_notebooks.py joins them).
    notebook = nbformat.read(path, as_version=4)
    split = [
        f"cell {index}: {earlier.name}"
        for index, cell in enumerate(notebook.cells)
        for earlier, later in zip(
            cell.get("outputs", []), cell.get("outputs", [])[1:], strict=False
        )
        if earlier.output_type == later.output_type == "stream" and earlier.name == later.name
    ]
    assert not split, f"{path.relative_to(ROOT)}: re-run tools/execute_notebooks.py on it: {split}"
