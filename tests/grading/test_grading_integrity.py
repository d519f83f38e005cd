"""The course's own answers: check() and grading see what the learner's function really uses.

check() records, in the process that runs the learner's function (its worker,
or the kernel itself with the in-process runner), every call the function
makes into the course's answers (the readers of lessonkit.sse / client /
dialects, the timing model, the checker's reference answers and cases), and
reads the function for pasted code and held data; it says "write your own
..." instead of passing. Each exercise states what it may use (exercise 4 may
use lessonkit.sse).
"""

from __future__ import annotations

import csv
import json
import sys

import pytest
from answers import solved
from calling import in_process
from classroom import LESSON_READER, RIGHT, function_from, solution, with_function, write

from lessonkit.core import client, sse
from lessonkit.grading import check, engine, integrity
from lessonkit.grading import ex3_now_change_it as ex3
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import report_text
from lessonkit.grading.timed_calls import in_this_process, in_worker

RUNNERS = pytest.mark.parametrize("runner", [in_worker, in_this_process], ids=["worker", "here"])

_lesson_reader_by_hand = function_from(LESSON_READER, "read_stream")


@RUNNERS
def test_a_reader_that_calls_the_course_client_is_told_to_write_its_own_and_scores_0(runner):
    from lessonkit.client import read_stream as course_read_stream

    def read_stream(chunks):
        reply = course_read_stream(chunks, "lesson")
        return reply.text, reply.complete

    result = check("read_stream", read_stream, show=False, runner=runner)
    assert (result.passed, result.score) == (False, 0.0)
    assert result.feedback.startswith(
        "read_stream: write your own reader; lessonkit.client.read_stream is the course's answer."
    )


def test_a_parser_that_wraps_the_course_decoder_is_caught_by_what_it_calls():
    def parse_sse(chunks):
        decoder = sse.SSEDecoder()
        return [(e.event, e.data, e.id) for chunk in chunks for e in decoder.feed(chunk)]

    result = check("parse_sse", parse_sse, show=False)
    assert (
        result.score == 0 and "lessonkit.sse.SSEDecoder is the course's answer" in result.feedback
    )


def test_exercise_4_may_use_lessonkit_sse_but_exercise_2_may_not():
    def read_anthropic(chunks):
        text, complete, stop = "", False, None
        for event in sse.decode_all(chunks):
            if event.event == "content_block_delta":
                delta = json.loads(event.data)["delta"]
                text += delta["text"] if delta.get("type") == "text_delta" else ""
            elif event.event == "message_delta":
                stop = json.loads(event.data)["delta"]["stop_reason"]
            elif event.event == "message_stop":
                complete = True
        return text, complete, stop

    def read_stream(chunks):
        events = [e.data for e in sse.decode_all(chunks)]
        text = "".join(json.loads(d)["delta"] for d in events if d != "[DONE]")
        return text, "[DONE]" in events

    assert check("read_anthropic", read_anthropic, show=False).passed
    assert EXERCISES["read_anthropic"].allowed == ("lessonkit.sse",)
    flagged = check("read_stream", read_stream, show=False)
    assert (
        flagged.score == 0 and "lessonkit.sse.decode_all is the course's answer" in flagged.feedback
    )


@RUNNERS
def test_answers_looked_up_in_the_checkers_cases_while_running_are_caught(runner):
    def parse_sse(chunks):
        from lessonkit.grading.ex6_parse_sse import conformance_cases

        data = b"".join(chunks)
        for case in conformance_cases():
            if case["input"] == data:
                return case["events"]
        return []

    result = check("parse_sse", parse_sse, show=False, runner=runner)
    assert "lessonkit.grading.ex6_parse_sse.conformance_cases is the course's answer" in (
        result.feedback
    )


def test_a_pasted_copy_of_the_course_source_is_caught_by_its_code():
    import inspect

    namespace: dict = {}
    exec(inspect.getsource(sse), namespace)  # the whole module pasted into a cell
    decode_all = namespace["decode_all"]

    def parse_sse(chunks):
        return [(e.event, e.data, e.id) for e in decode_all(chunks)]

    result = check("parse_sse", parse_sse, show=False)
    assert (
        result.score == 0 and "lessonkit.sse.decode_all is the course's answer" in result.feedback
    )


def test_reloading_the_course_module_to_hide_the_calls_is_still_caught():
    def read_stream(chunks):
        import importlib

        fresh = importlib.reload(client)  # a fresh copy of the module: the same file runs
        reply = fresh.read_stream(chunks, "lesson")
        return reply.text, reply.complete

    result = check("read_stream", read_stream, show=False)
    assert result.score == 0 and "lessonkit.client.read_stream is the course's answer" in (
        result.feedback
    )


@RUNNERS
def test_an_honest_reader_is_not_flagged_and_the_kernels_lessonkit_stays_untouched(runner):
    original, tracer = client.read_stream.__code__, sys.gettrace()
    result = check("read_stream", _lesson_reader_by_hand, show=False, runner=runner)
    assert result.passed and "course's answer" not in result.feedback
    assert client.read_stream.__code__ is original and sys.gettrace() is tracer


def test_the_score_of_a_report_that_uses_the_course_answer_is_0_unless_allowed():
    exercise = EXERCISES["read_stream"]
    run = in_process(_lesson_reader_by_hand)
    used = ["lessonkit.client.read_stream"]
    barred = engine.evaluate(exercise, run, used=used)
    allowed = engine.evaluate(exercise, run, engine.Mode(allow_lessonkit=True), used=used)
    assert (barred.score, barred.earned, barred.integrity) == (0.0, 26.0, tuple(used))
    assert (allowed.score, allowed.allowed_use) == (26.0, tuple(used))
    assert "accepted by --allow-lessonkit" in report_text(allowed)


def test_every_exercise_states_what_it_may_use_in_its_module():
    assert {e: EXERCISES[e].allowed for e in EXERCISES} == {
        "response_times": (),
        "read_stream": (),
        "now_change_it": ("lessonkit.core", "lessonkit.sse", "lessonkit.client"),
        "read_anthropic": ("lessonkit.sse",),
        "resume": (),
        "parse_sse": (),
    }


# ---------------------------------------------------------------------------
# Answers held as data: exercise 3's key in the dict, exercise 6's cases in a table


def test_predictions_filled_from_the_checkers_answer_key_are_flagged_and_score_0():
    now_change_it = ex3.reference()  # the whole key, as a learner's cell could write it
    result = check("now_change_it", now_change_it, show=False)
    assert result.score == 0 and not result.passed
    assert "lessonkit.grading.ex3_now_change_it.reference is the course's answer" in (
        result.feedback
    )


def test_one_prediction_copied_from_the_answer_key_is_flagged_too():
    now_change_it = {key: "..." for key in ex3.reference()}
    now_change_it["drop40_text"] = ex3.reference()["drop40_text"]
    assert "is the course's answer" in check("now_change_it", now_change_it, show=False).feedback


def test_honest_predictions_equal_to_the_key_are_not_flagged():
    typed = {k: (v if isinstance(v, bool) else str(v)) for k, v in ex3.reference().items()}
    assert not any(isinstance(v, ex3.KeyText) for v in typed.values())
    result = check("now_change_it", typed, show=False)
    assert result.passed and result.score == 15


@RUNNERS
def test_a_lookup_table_of_the_conformance_cases_built_outside_the_function_is_flagged(runner):
    from lessonkit.grading.ex6_parse_sse import conformance_cases

    table = {case["input"]: case["events"] for case in conformance_cases()}  # a cell's table

    def parse_sse(chunks):
        return [tuple(e) for e in table.get(b"".join(chunks), [])]

    result = check("parse_sse", parse_sse, show=False, runner=runner)
    assert result.score == 0
    assert "lessonkit.grading.ex6_parse_sse.conformance_cases is the course's answer" in (
        result.feedback
    )


def test_copies_finds_the_cases_held_in_a_global_and_nothing_in_an_honest_parser():
    from lessonkit.grading.ex6_parse_sse import conformance_cases

    namespace = {"TABLE": [(c["input"], c["events"]) for c in conformance_cases()]}
    exec("def parse_sse(chunks):\n    return dict(TABLE).get(b''.join(chunks), [])", namespace)
    assert list(integrity.copies(namespace["parse_sse"])) == [
        "lessonkit.grading.ex6_parse_sse.conformance_cases"
    ]
    assert integrity.copies(_lesson_reader_by_hand) == {}


# Lookup tables of the conformance cases as learners write them: each a cell that builds
# the table, then the function that looks the answer up (the grader sees the cells' globals).
_CASES = (
    "from lessonkit.grading.ex6_parse_sse import conformance_cases\nCASES = conformance_cases()\n"
)
_DATA_FILE = (
    "import json\nfrom importlib import resources\n"
    "PATH = resources.files('lessonkit').joinpath('data/sse_cases.json')\n"
)
HELD_TABLES = {
    "keyed by the inputs as str": _CASES
    + "TABLE = {c['input'].decode('utf-8', 'replace'): c['events'] for c in CASES}\n"
    "def parse_sse(chunks):\n"
    "    return [tuple(e) for e in TABLE.get(b''.join(chunks).decode('utf-8', 'replace'), [])]\n",
    "keyed by the inputs' byte values": _CASES
    + "TABLE = {tuple(c['input']): c['events'] for c in CASES}\n"
    "def parse_sse(chunks):\n"
    "    return [tuple(e) for e in TABLE.get(tuple(b''.join(chunks)), [])]\n",
    "built from the data file read directly": _DATA_FILE
    + "RAW = json.loads(PATH.read_text('utf-8'))\n"
    "TABLE = {c['input']: c['events'] for c in RAW if 'input' in c}\n"
    "def parse_sse(chunks):\n"
    "    return [tuple(e) for e in TABLE.get(b''.join(chunks).decode('utf-8', 'replace'), [])]\n",
    "of the expected events alone, keyed by length": _CASES
    + "TABLE = {len(c['input']): c['events'] for c in CASES}\n"
    "def parse_sse(chunks):\n"
    "    return [tuple(e) for e in TABLE.get(len(b''.join(chunks)), [])]\n",
    "in a default argument, keyed by hex": _CASES
    + "def parse_sse(chunks, _table={c['input'].hex(): c['events'] for c in CASES}):\n"
    "    return [tuple(e) for e in _table.get(b''.join(chunks).hex(), [])]\n",
    "in a closure, keyed by str": _CASES + "def make():\n"
    "    table = {c['input'].decode('latin-1'): c['events'] for c in CASES}\n"
    "    def parse_sse(chunks):\n"
    "        return [tuple(e) for e in table.get(b''.join(chunks).decode('latin-1'), [])]\n"
    "    return parse_sse\n"
    "parse_sse = make()\n",
    "read from the data file at each call": "import json\nfrom importlib import resources\n"
    "def parse_sse(chunks):\n"
    "    cases = json.loads(resources.files('lessonkit').joinpath('data/sse_cases.json')"
    ".read_text('utf-8'))\n"
    "    data = b''.join(chunks).decode('utf-8', 'replace')\n"
    "    return next((list(map(tuple, c['events'])) for c in cases if c.get('input') == data), [])\n",
    "parsed from the data file's text at each call": _DATA_FILE + "TEXT = PATH.read_text('utf-8')\n"
    "def parse_sse(chunks):\n"
    "    data = b''.join(chunks).decode('utf-8', 'replace')\n"
    "    cases = json.loads(TEXT)\n"
    "    return next((list(map(tuple, c['events'])) for c in cases if c.get('input') == data), [])\n",
}
HELD_WORDS = {
    "keyed by the inputs as str": "the inputs of 32 of its cases (as str)",
    "keyed by the inputs' byte values": "the inputs of 32 of its cases (as byte values)",
    "built from the data file read directly": "the inputs of 31 of its cases (as str)",
    "of the expected events alone, keyed by length": "the expected events of 14 of its cases",
    "in a default argument, keyed by hex": "the inputs of 32 of its cases (as hex)",
    "in a closure, keyed by str": "the inputs of 32 of its cases (as str)",
    "read from the data file at each call": "the path of its data file, lessonkit/data/sse_cases.json",
    "parsed from the data file's text at each call": "the text of its data file",
}


def _cell_function(source: str):
    namespace: dict = {}
    exec(source, namespace)
    return namespace["parse_sse"]


@pytest.mark.parametrize("table", list(HELD_TABLES))
def test_a_lookup_table_of_the_conformance_cases_in_any_form_scores_0_and_says_what_it_holds(
    table,
):
    parse_sse = _cell_function(HELD_TABLES[table])
    result = check("parse_sse", parse_sse, show=False, runner=in_this_process)
    assert (result.score, result.passed, result.report.earned > 0) == (0.0, False, True)
    first = result.feedback.splitlines()[0]
    assert first.startswith(
        "parse_sse: write your own parser; lessonkit.grading.ex6_parse_sse.conformance_cases "
        "is the course's answer. Your function holds "
    )
    assert HELD_WORDS[table] in first and "calls it" not in first


def test_the_flag_of_a_function_that_calls_the_cases_still_says_it_calls_them():
    def parse_sse(chunks):
        from lessonkit.grading.ex6_parse_sse import conformance_cases

        data = b"".join(chunks)
        return next((c["events"] for c in conformance_cases() if c["input"] == data), [])

    first = check("parse_sse", parse_sse, show=False).feedback.splitlines()[0]
    assert "While your function calls it, this exercise earns 0 of 30 points" in first


def test_a_pasted_copy_of_the_course_code_is_told_it_holds_a_copy_not_that_it_calls_it():
    import inspect

    namespace: dict = {}
    exec(inspect.getsource(sse), namespace)
    decode_all = namespace["decode_all"]

    def parse_sse(chunks):
        return [(e.event, e.data, e.id) for e in decode_all(chunks)]

    first = check("parse_sse", parse_sse, show=False).feedback.splitlines()[0]
    assert "; lessonkit.sse.decode_all is the course's answer (and " in first
    assert "Your function holds a copy of its code: while it does" in first
    assert "calls it" not in first


def test_honest_parsers_and_readers_hold_nothing_of_the_course():
    parse_sse = solved("parse_sse")
    assert integrity.copies(parse_sse) == {}
    assert integrity.copies(solved("read_stream")) == {}
    assert integrity.copies(function_from(RIGHT["read_stream"], "read_stream")) == {}
    result = check("parse_sse", parse_sse, show=False)
    assert result.passed and "course's answer" not in result.feedback


def test_a_parser_whose_docstring_names_the_data_file_is_not_flagged():
    def parse_sse(chunks):
        """My parser; I compared it with the cases in lessonkit/data/sse_cases.json by hand."""
        return solved("parse_sse")(chunks)

    assert integrity.copies(parse_sse) == {}


def test_grading_flags_a_table_of_the_cases_held_as_str_and_its_feedback_says_so(tmp_path):
    from lessonkit import cli
    from lessonkit.grading import grade

    source = HELD_TABLES["keyed by the inputs as str"]
    nb = with_function(solution("parse_sse"), "parse_sse", source)
    write(tmp_path / "in" / "lee", "ex6_parse_sse.ipynb", nb)
    out = tmp_path / "out" / "grades.csv"
    argv = ["grade", str(tmp_path / "in"), "--out", str(out), "--seed", "3", "-j", "1"]
    argv += ["--timeout", "20", "--feedback", str(tmp_path / "out" / "feedback")]
    assert grade.main(cli.build_parser("grade").parse_args(argv)) == 0
    row = next(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert (row["parse_sse"], row["flags"]) == ("0", "course-answer:parse_sse")
    text = (tmp_path / "out" / "feedback" / "lee.txt").read_text(encoding="utf-8")
    assert "Your function holds the inputs of 32 of its cases (as str)" in text
