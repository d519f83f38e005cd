"""The solution notebooks' own answers, and a reader with the common mistakes, for the tests.

``solved(exercise_id)`` runs a solution notebook the way the grader runs a learner's, and
returns its function: an honest answer that calls no course reader. ``buggy_reader``
returns a read_stream with the mistakes named in its flags switched on.

Used by tests/grading (test_grading.py, test_runners.py) and tests/lite.
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

import nbformat

from lessonkit.grading import child
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.notebook import GRADING_ENV

ROOT = Path(__file__).resolve().parents[2]

_SOLVED: dict[str, object] = {}


def solved(exercise_id: str):
    """Return the solution notebook's own function: an honest answer that calls no course reader."""
    if exercise_id not in _SOLVED:
        path = next((ROOT / "solutions").glob(f"ex*_{exercise_id}.ipynb"))
        nb = nbformat.read(path, as_version=4)
        cells = [c.source for c in nb.cells if c.cell_type == "code"]
        saved = os.environ.get(GRADING_ENV)
        os.environ[GRADING_ENV] = "1"
        try:
            found, _, _ = child.run_cells(cells, list(EXERCISES), [], 20)
        finally:
            if saved is None:
                del os.environ[GRADING_ENV]
            else:
                os.environ[GRADING_ENV] = saved
        _SOLVED[exercise_id] = found[exercise_id]
    return _SOLVED[exercise_id]


def buggy_reader(*, per_chunk=False, use_if=False, chunk_is_event=False, loads_done=False,
                 replace=False, no_comments=False, always_complete=False):  # fmt: skip
    """Return a read_stream with the named mistakes (the lesson's "now change it" bugs)."""

    def read_stream(chunks):
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer, text, done = "", "", False
        for chunk in chunks:
            if chunk_is_event:
                events = [chunk.decode("utf-8").strip("\n")]
            else:
                buffer += chunk.decode("utf-8") if per_chunk else decoder.decode(chunk)
                events = []
                while "\n\n" in buffer:
                    event, buffer = buffer.split("\n\n", 1)
                    events.append(event)
                    if use_if:
                        break
            for event in events:
                if event.startswith(":") and not no_comments:
                    continue
                data = event.removeprefix("data: ")
                if data == "[DONE]" and not loads_done:
                    done = True
                elif data:
                    delta = json.loads(data)["delta"]
                    text = delta if replace else text + delta
        return text, done or always_complete

    return read_stream
