"""Synthetic learners for the grading tests and the grading benchmark.

A learner is a set of exercise notebooks made from the solution notebooks,
with one function replaced (a typical mistake, a loose reader, a function that
hands its work to the course's own answer) or one cell added (an endless loop,
``exit()``, an attack on the grader). ``write_class`` lays a whole class out
as a folder per learner (or as a Canvas flat export), mixed the way a real
class is: mostly right answers written differently, typical mistakes, a few
loops, exits, corrupt files and duplicates.

Used by tests/grading/test_grade_class.py, tests/grading/test_sandbox.py and bench/bench_grading.py.
"""

from __future__ import annotations

import copy
import random
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = {
    "response_times": "ex1_response_times",
    "read_stream": "ex2_read_stream",
    "now_change_it": "ex3_now_change_it",
    "read_anthropic": "ex4_read_anthropic",
    "resume": "ex5_resume",
    "parse_sse": "ex6_parse_sse",
}

_solutions: dict[str, nbformat.NotebookNode] = {}


def solution(exercise_id: str) -> nbformat.NotebookNode:
    """Return (a copy of) the solution notebook of an exercise."""
    name = NOTEBOOKS[exercise_id]
    if name not in _solutions:
        _solutions[name] = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
    return copy.deepcopy(_solutions[name])


def with_function(nb: nbformat.NotebookNode, name: str, source: str) -> nbformat.NotebookNode:
    """Return a copy of nb whose cell defining `name` is replaced by `source`."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and f"def {name}(" in cell.source:
            cell.source = textwrap.dedent(source).strip("\n")
            return nb
    raise AssertionError(f"no cell defines {name}")


def with_first_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    """Return a copy of nb with a code cell put before all others."""
    nb = copy.deepcopy(nb)
    nb.cells.insert(0, nbformat.v4.new_code_cell(textwrap.dedent(source).strip("\n")))
    return nb


def with_cell_before_check(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    """Return a copy of nb with a code cell put just before its check cell."""
    nb = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(nb.cells) if c.source.lstrip().startswith("check("))
    nb.cells.insert(at, nbformat.v4.new_code_cell(textwrap.dedent(source).strip("\n")))
    return nb


def with_answers(nb: nbformat.NotebookNode, **answers: object) -> nbformat.NotebookNode:
    """Return a copy of the exercise 3 notebook with some answers changed."""
    lines = [f"now_change_it[{key!r}] = {value!r}" for key, value in answers.items()]
    return with_cell_before_check(nb, "\n".join(lines))


def code_notebook(*sources: str) -> nbformat.NotebookNode:
    """Return a notebook of plain code cells (no lessonkit metadata)."""
    cells = [nbformat.v4.new_code_cell(textwrap.dedent(s).strip("\n")) for s in sources]
    return nbformat.v4.new_notebook(cells=cells)


def write(folder: Path, name: str, nb: nbformat.NotebookNode) -> Path:
    """Write nb as folder/name (folders created); return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


def write_learner(folder: Path, changes: dict[str, nbformat.NotebookNode] | None = None) -> Path:
    """Write a learner folder of all six solution notebooks, some replaced by ``changes``."""
    changes = changes or {}
    for exercise_id, name in NOTEBOOKS.items():
        write(folder, f"{name}.ipynb", changes.get(exercise_id) or solution(exercise_id))
    return folder


# ---------------------------------------------------------------------------
# Functions: right ones written differently, typical mistakes, the course's answer

RIGHT = {
    "response_times": """
        def response_times(prefill_ms, per_token_ms, n_tokens):
            last = prefill_ms + per_token_ms * n_tokens
            return dict(total_ms=last, blocking_first_ms=last,
                        streaming_first_ms=prefill_ms + per_token_ms)
        """,
    "read_stream": """
        import json

        def read_stream(chunks):
            buffer, text, complete = b"", "", False
            for chunk in chunks:
                buffer += chunk
                *events, buffer = buffer.split(b"\\n\\n")
                for event in events:
                    line = event.decode("utf-8")
                    if line.startswith(":"):
                        continue
                    if line == "data: [DONE]":
                        complete = True
                    elif line.startswith("data: "):
                        text += json.loads(line[6:])["delta"]
            return [text, complete]
        """,
}

LESSON_READER = """
    import codecs, json

    def read_stream(chunks):
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer, text, complete = "", "", False
        for chunk in chunks:
            buffer += decoder.decode(chunk)
            while "\\n\\n" in buffer:
                event, buffer = buffer.split("\\n\\n", 1)
                if event.startswith(":"):
                    continue
                data = event.removeprefix("data: ")
                if data == "[DONE]":
                    complete = True
                else:
                    text += json.loads(data)["delta"]
        return text, complete
    """


def _lesson_reader_with(line: str, mistaken: str) -> str:
    """Return the lesson's reader with one line changed: one learner's one mistake."""
    assert line in LESSON_READER
    return LESSON_READER.replace(line, mistaken)


def function_from(source: str, name: str):
    """Return the function ``name`` that ``source`` (a learner's cell) defines."""
    namespace: dict = {}
    exec(textwrap.dedent(source), namespace)
    return namespace[name]


MISTAKES = {
    "response_times": {
        # the first token at the prefill alone
        "first_is_prefill": """
            def response_times(prefill_ms, per_token_ms, n_tokens):
                total = prefill_ms + n_tokens * per_token_ms
                return {"streaming_first_ms": prefill_ms, "blocking_first_ms": total,
                        "total_ms": total}
            """,
        # int() everywhere: right on whole milliseconds only
        "rounded": """
            def response_times(prefill_ms, per_token_ms, n_tokens):
                total = int(prefill_ms + n_tokens * per_token_ms)
                return {"streaming_first_ms": int(prefill_ms + per_token_ms),
                        "blocking_first_ms": total, "total_ms": total}
            """,
    },
    "read_stream": {
        # each chunk taken for an event, the [DONE] check right
        "chunk_is_event": """
            import json

            def read_stream(chunks):
                text, complete = "", False
                for chunk in chunks:
                    event = chunk.decode("utf-8").strip("\\n")
                    if not event or event.startswith(":"):
                        continue
                    data = event.removeprefix("data: ")
                    if data == "[DONE]":
                        complete = True
                    else:
                        text += json.loads(data)["delta"]
                return text, complete
            """,
        # no buffer: each chunk split at blank lines on its own, every piece parsed (a half
        # event too: the [DONE] of a stream cut before its blank line reaches json.loads)
        "split_each_chunk": """
            import json

            def read_stream(chunks):
                text, complete = "", False
                for chunk in chunks:
                    for event in chunk.decode("utf-8").split("\\n\\n"):
                        if not event or event.startswith(":"):
                            continue
                        data = event.removeprefix("data: ")
                        if data == "[DONE]":
                            complete = True
                        else:
                            text += json.loads(data)["delta"]
                return text, complete
            """,
        # the same with each piece stripped: a [DONE] before its blank line counts
        "split_each_chunk_stripped": """
            import json

            def read_stream(chunks):
                text, complete = "", False
                for chunk in chunks:
                    for event in chunk.decode("utf-8").split("\\n\\n"):
                        event = event.strip()
                        if not event or event.startswith(":"):
                            continue
                        data = event.removeprefix("data: ")
                        if data == "[DONE]":
                            complete = True
                        else:
                            text += json.loads(data)["delta"]
                return text, complete
            """,
        # no buffer: each chunk's lines parsed as they come, a line the cut broke skipped
        "lines_each_chunk": """
            import json

            def read_stream(chunks):
                text, complete = "", False
                for chunk in chunks:
                    for line in chunk.decode("utf-8").split("\\n"):
                        if not line.startswith("data: "):
                            continue
                        data = line[6:]
                        if data == "[DONE]":
                            complete = True
                        else:
                            try:
                                text += json.loads(data)["delta"]
                            except ValueError:
                                pass
                return text, complete
            """,
        # json.loads on every event: the end marker written as "DONE", not "[DONE]"
        "crash_on_done": _lesson_reader_with('if data == "[DONE]":', 'if data == "DONE":'),
        # comments found by searching the text for "ping"
        "loose_ping": _lesson_reader_with('if event.startswith(":"):', 'if "ping" in event:'),
        # the end marker found by searching the text for "DONE"
        "loose_done": _lesson_reader_with('if data == "[DONE]":', 'if "DONE" in data:'),
    },
    "read_anthropic": {
        "loose_ping": """
            import codecs, json

            def read_anthropic(chunks):
                decoder = codecs.getincrementaldecoder("utf-8")()
                buffer, text, complete, stop = "", "", False, None
                for chunk in chunks:
                    buffer += decoder.decode(chunk)
                    while "\\n\\n" in buffer:
                        block, buffer = buffer.split("\\n\\n", 1)
                        if "ping" in block:
                            continue
                        lines = dict(l.split(": ", 1) for l in block.split("\\n") if ": " in l)
                        kind, data = lines.get("event"), lines.get("data")
                        if kind == "content_block_delta":
                            delta = json.loads(data)["delta"]
                            if delta.get("type") == "text_delta":
                                text += delta["text"]
                        elif kind == "message_delta":
                            stop = json.loads(data)["delta"]["stop_reason"]
                        elif kind == "message_stop":
                            complete = True
                return text, complete, stop
            """,
    },
}

# The work handed to the course's own answer (issue 13's copies).
COURSE_ANSWER = {
    "read_stream": """
        from lessonkit.client import read_stream as course_read_stream

        def read_stream(chunks):
            reply = course_read_stream(chunks, "lesson")
            return reply.text, reply.complete
        """,
    "parse_sse": """
        from lessonkit.sse import SSEDecoder

        def parse_sse(chunks):
            decoder, out = SSEDecoder(), []
            for chunk in chunks:
                out += [(e.event, e.data, e.id) for e in decoder.feed(chunk)]
            return out
        """,
    "response_times": """
        from lessonkit.grading import ex1_response_times

        def response_times(prefill_ms, per_token_ms, n_tokens):
            return ex1_response_times.reference(prefill_ms, per_token_ms, n_tokens)
        """,
    # exercise 4 may use lessonkit.sse for the wire format: this one is honest
    "read_anthropic": """
        import json
        from lessonkit.sse import SSEDecoder

        def read_anthropic(chunks):
            decoder, text, complete, stop = SSEDecoder(), "", False, None
            for chunk in chunks:
                for event in decoder.feed(chunk):
                    if event.event == "content_block_delta":
                        delta = json.loads(event.data)["delta"]
                        if delta.get("type") == "text_delta":
                            text += delta["text"]
                    elif event.event == "message_delta":
                        stop = json.loads(event.data)["delta"]["stop_reason"]
                    elif event.event == "message_stop":
                        complete = True
            return text, complete, stop
        """,
}
EX3_FROM_THE_KEY = """
from lessonkit.grading.ex3_now_change_it import reference
now_change_it = reference()
"""

LOOPS = """
def read_stream(chunks):
    while True:
        pass
"""
EXITS = "import os\nos._exit(0)"


# ---------------------------------------------------------------------------
# A synthetic class for the benchmark


def _learner_changes(rng: random.Random) -> tuple[str, dict[str, nbformat.NotebookNode]]:
    """Return (kind, notebooks that differ from the solutions) of one random learner."""
    roll = rng.random()
    if roll < 0.45:
        kind = "right"
        changes = {ex: with_function(solution(ex), ex, src) for ex, src in RIGHT.items()}
    elif roll < 0.85:
        exercise_id = rng.choice(sorted(MISTAKES))
        mistake = rng.choice(sorted(MISTAKES[exercise_id]))
        kind = f"mistake:{exercise_id}:{mistake}"
        source = MISTAKES[exercise_id][mistake]
        changes = {exercise_id: with_function(solution(exercise_id), exercise_id, source)}
    elif roll < 0.9:
        exercise_id = rng.choice(["read_stream", "parse_sse"])
        kind = f"course-answer:{exercise_id}"
        changes = {
            exercise_id: with_function(
                solution(exercise_id), exercise_id, COURSE_ANSWER[exercise_id]
            )
        }
    elif roll < 0.93:
        kind = "loop"
        changes = {"read_stream": with_function(solution("read_stream"), "read_stream", LOOPS)}
    elif roll < 0.96:
        kind = "exit"
        changes = {"resume": with_first_cell(solution("resume"), EXITS)}
    else:
        kind = "stub"
        changes = {ex: nbformat.read(ROOT / "exercises" / f"{NOTEBOOKS[ex]}.ipynb", as_version=4)
                   for ex in ("parse_sse", "resume")}  # fmt: skip
    return kind, changes


def write_class(
    folder: Path, n_learners: int, *, seed: int = 0, layout: str = "folders"
) -> dict[str, str]:
    """Write a synthetic class of ``n_learners``; return learner id -> kind of learner.

    layout "folders": folder/<learner>/ex*.ipynb; "canvas": folder/<name>_<id>_<n>_ex*.ipynb.
    About one learner in fifty also has a corrupt file or a -Copy1 duplicate.
    """
    rng = random.Random(seed)
    kinds = {}
    for i in range(n_learners):
        kind, changes = _learner_changes(rng)
        name = f"learner{i:04d}"
        if layout == "canvas":
            learner = f"{name}_{10000 + i}"
            for exercise_id, notebook in NOTEBOOKS.items():
                nb = changes.get(exercise_id) or solution(exercise_id)
                write(folder, f"{learner}_{50000 + 7 * i}_{notebook}.ipynb", nb)
        else:
            learner = name
            write_learner(folder / name, changes)
            extra = rng.random()
            if extra < 0.02:
                (folder / name / "ex6_parse_sse.ipynb").write_bytes(b"\x00not a notebook")
                kind += "+corrupt"
            elif extra < 0.04:
                write(folder / name, "ex2_read_stream-Copy1.ipynb", solution("read_stream"))
                kind += "+copy"
        kinds[learner] = kind
    return kinds
