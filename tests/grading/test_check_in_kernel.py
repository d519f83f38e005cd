"""check() in a real Jupyter kernel: a reader built from several cells gets the same points anywhere.

A worker process started for the check does not have the learner's other
cells. The function travels by value with what it refers to (a helper
function, a constant and a class, each defined in a cell of its own), so the
worker, the in-process runner and lessonkit's own choice give the same
feedback; and a line that raises is shown with its source, read from the
kernel's cells. The check cell writes nothing to stderr (no fork warning).
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    "import codecs, json\n"
    "from lessonkit.grading import check\n"
    "from lessonkit.grading.timed_calls import in_this_process, in_worker",
    'END = "[DONE]"',
    "def split_events(buffer):\n"
    '    """Return (complete events, the rest) of a text buffer."""\n'
    '    *events, rest = buffer.split("\\n\\n")\n'
    "    return events, rest",
    "class Text:\n"
    "    def __init__(self):\n"
    "        self.pieces = []\n"
    "    def add(self, data):\n"
    '        self.pieces.append(json.loads(data)["delta"])\n'
    "    def __str__(self):\n"
    '        return "".join(self.pieces)',
    "def read_stream(chunks):\n"
    '    decoder = codecs.getincrementaldecoder("utf-8")()\n'
    '    buffer, text, complete = "", Text(), False\n'
    "    for chunk in chunks:\n"
    "        events, buffer = split_events(buffer + decoder.decode(chunk))\n"
    "        for event in events:\n"
    '            if event.startswith(":"):\n'
    "                continue\n"
    '            data = event.removeprefix("data: ")\n'
    "            if data == END:\n"
    "                complete = True\n"
    "            else:\n"
    "                text.add(data)\n"
    "    return str(text), complete",
    "def crashes_on_done(chunks):\n"
    '    return json.loads(b"".join(chunks).decode().split("data: ")[-1]), True',
    "results = {}\n"
    "for name, runner in [('worker', in_worker), ('here', in_this_process), ('chosen', None)]:\n"
    "    r = check('read_stream', read_stream, show=False, runner=runner)\n"
    "    results[name] = [r.score, r.passed, r.feedback]\n"
    "crash = check('read_stream', crashes_on_done, show=False, runner=in_worker)\n"
    "results['crash'] = crash.feedback\n"
    "print(json.dumps(results))",
]


@pytest.fixture(scope="module")
def kernel_results() -> tuple[dict, list]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    outputs = nb.cells[-1].outputs
    text = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    stderr = [o for o in outputs if o.get("name") == "stderr" or o.get("output_type") == "error"]
    return json.loads(text), stderr


def test_a_reader_using_helpers_from_other_cells_gets_full_public_points_in_the_worker(
    kernel_results,
):
    results, _ = kernel_results
    score, passed, feedback = results["worker"]
    assert (score, passed) == (26, True), feedback


def test_the_worker_the_in_process_runner_and_lessonkits_choice_give_the_same_feedback(
    kernel_results,
):
    results, _ = kernel_results
    assert results["worker"] == results["here"] == results["chosen"]


def test_a_line_that_raises_in_the_worker_is_shown_with_its_source_from_the_cell(kernel_results):
    results, _ = kernel_results
    assert 'at: line 2: return json.loads(b"".join(chunks).decode()' in results["crash"]


def test_the_check_cell_writes_nothing_to_stderr(kernel_results):
    _, stderr = kernel_results
    assert stderr == []
