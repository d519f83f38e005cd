"""check() and the checker: solutions pass, stubs and realistic mistakes are caught, feedback helps."""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path

import pytest
from answers import buggy_reader, solved
from calling import in_process
from classroom import MISTAKES, RIGHT, function_from

from lessonkit import grading
from lessonkit.core import llm, practice
from lessonkit.grading import check, child, engine, feedback, notebook
from lessonkit.grading import ex1_response_times as ex1
from lessonkit.grading import ex2_read_stream as ex2
from lessonkit.grading import ex3_now_change_it as ex3
from lessonkit.grading import ex4_read_anthropic as ex4
from lessonkit.grading import ex5_resume as ex5
from lessonkit.grading import ex6_parse_sse as ex6
from lessonkit.grading.codec import to_jsonable
from lessonkit.grading.engine import (
    Answers,
    Mode,
    evaluate,
    evaluate_answers,
)
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import report_text
from lessonkit.grading.notebook import GRADING_ENV

ROOT = Path(__file__).resolve().parents[2]
FUNCTION_IDS = [e for e in EXERCISES if not isinstance(EXERCISES[e], Answers)]
REFERENCES = {
    "response_times": ex1.reference,
    "read_stream": ex2.reference,
    "read_anthropic": ex4.reference,
    "resume": ex5.reference,
    "parse_sse": ex6.reference,
}


def _named(name: str, fn):
    """Return fn under a learner's function name (try_it prints the name)."""

    def named(*args):
        return fn(*args)

    named.__name__ = name
    return named


def _namespace_of(folder: str, notebook: str, monkeypatch) -> dict:
    """Return the exercise objects a notebook defines, run the way the grader runs it."""
    import nbformat

    monkeypatch.setenv(GRADING_ENV, "1")
    nb = nbformat.read(ROOT / folder / notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    functions = [e for e in EXERCISES if not isinstance(EXERCISES[e], Answers)]
    values = [e for e in EXERCISES if isinstance(EXERCISES[e], Answers)]
    found, errors, stopped = child.run_cells(cells, functions, values, 20)
    assert not stopped
    return found


def _notebook_for(exercise_id: str) -> str:
    return next(p.name for p in (ROOT / "solutions").glob("ex*_" + exercise_id + ".ipynb"))


def _graded(exercise_id: str, fn) -> engine.Report:
    return evaluate(EXERCISES[exercise_id], in_process(fn), Mode(hidden=True))


def _failed_rules(report: engine.Report) -> set[str]:
    return {f.rule for f in report.findings if not f.passed}


# ---------------------------------------------------------------------------
# Solutions and stubs


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_each_solution_notebook_passes_every_check_public_and_hidden(exercise_id, monkeypatch):
    found = _namespace_of("solutions", _notebook_for(exercise_id), monkeypatch)
    exercise = EXERCISES[exercise_id]
    if isinstance(exercise, Answers):
        report = evaluate_answers(exercise, to_jsonable(found[exercise_id]), Mode(hidden=True))
    else:
        report = _graded(exercise_id, found[exercise_id])
    assert report.passed, report_text(report)
    assert report.score == exercise.points


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_each_generated_stub_is_not_attempted_and_scores_zero(exercise_id, monkeypatch):
    found = _namespace_of("exercises", _notebook_for(exercise_id), monkeypatch)
    exercise = EXERCISES[exercise_id]
    if isinstance(exercise, Answers):
        report = evaluate_answers(exercise, to_jsonable(found[exercise_id]), Mode(hidden=True))
    else:
        report = _graded(exercise_id, found[exercise_id])
    assert report.not_attempted and report.score == 0
    assert "not attempted yet" in report_text(report)


def test_check_on_a_stub_reports_not_attempted_without_raising(capsys):
    def read_stream(chunks):
        raise NotImplementedError("read_stream: not written yet")

    result = check("read_stream", read_stream)
    assert (result.passed, result.score) == (False, 0.0)
    assert "not attempted yet" in capsys.readouterr().out


def test_the_reference_answers_pass_their_own_checks():
    for exercise_id in FUNCTION_IDS:
        report = _graded(exercise_id, REFERENCES[exercise_id])
        assert report.passed, report_text(report)


# ---------------------------------------------------------------------------
# Realistic mistakes in read_stream: the lesson's "now change it" bugs and common mistakes


@pytest.mark.parametrize(
    ("bug", "rule"),
    [
        ("per_chunk", "a character split across chunks survives"),
        ("use_if", "several events in one chunk are all handled"),
        ("chunk_is_event", "an event cut across two chunks waits for the rest"),
        ("loads_done", "[DONE] ends the stream and is not JSON"),
        ("replace", "deltas are appended, never replaced"),
        ("no_comments", "heartbeat comments (': ping') are skipped"),
        ("always_complete", "complete only after [DONE] arrives"),
    ],
)
def test_each_common_read_stream_mistake_fails_the_rule_named_for_it(bug, rule):
    report = _graded("read_stream", buggy_reader(**{bug: True}))
    assert rule in _failed_rules(report)
    assert report.score < EXERCISES["read_stream"].points


def test_feedback_shows_the_smallest_failing_chunk_list_with_expected_and_got():
    report = evaluate(EXERCISES["read_stream"], in_process(buggy_reader(per_chunk=True)))
    finding = next(
        f for f in report.findings if f.rule == "a character split across chunks survives"
    )
    block = "\n".join(feedback.finding_lines(finding))  # the block shown when it fails first
    assert 'chunks = [b\'data: {"delta": "\\xc3\', b\'\\xa9"}\\n\\ndata' in block
    assert "expected  ('é ü', True)" in block
    assert "got       raised UnicodeDecodeError" in block
    assert "hint      Decode with codecs.getincrementaldecoder" in block


def test_feedback_names_the_learners_line_that_raised():
    report = evaluate(EXERCISES["read_stream"], in_process(buggy_reader(loads_done=True)))
    assert "at: line" in report_text(report) and "json.loads(data)" in report_text(report)


def test_public_feedback_counts_public_checks_and_promises_more_at_grading():
    report = evaluate(EXERCISES["read_stream"], in_process(buggy_reader(use_if=True)))
    public = len([r for r in EXERCISES["read_stream"].rules if not r.hidden])
    assert re.search(rf"public checks \d+/{public} pass", report_text(report))
    assert "hidden checks at grading carry 4 points more" in report_text(report)
    assert not any(f.hidden for f in report.findings)


def test_a_fully_passing_public_check_never_claims_all_tests_passed():
    result = check("read_stream", solved("read_stream"), show=False)
    assert result.passed and result.score == 26
    assert (
        "26 of 30 points; the other 4 points come from hidden checks at grading, "
        "so this is not your final score" in result.feedback
    )
    assert "all tests passed" not in result.feedback.lower()


def test_hidden_failures_name_the_rule_but_never_show_the_input():
    def read_stream(chunks):
        text, complete = ex2.reference(chunks)
        return (text.replace("日", "?"), complete)  # wrong only on the hidden CJK input

    report = _graded("read_stream", read_stream)
    assert _failed_rules(report) == {"characters from other scripts, split anywhere"}
    text = report_text(report)
    assert "[hidden] characters from other scripts" in text
    assert "its input is not shown" in text
    assert "日本" not in text and "chunks =" not in text


def test_feedback_text_is_the_same_on_every_run():
    runs = [
        evaluate(EXERCISES["read_stream"], in_process(buggy_reader(per_chunk=True)))
        for _ in range(2)
    ]
    assert report_text(runs[0]) == report_text(runs[1])


def test_differently_written_correct_readers_are_accepted():
    bytes_buffer = function_from(RIGHT["read_stream"], "read_stream")  # returns a list

    def with_the_library_decoder(chunks):
        from lessonkit.core.sse import SSEDecoder

        decoder, pieces, complete = SSEDecoder(), [], False
        for chunk in chunks:
            for event in decoder.feed(chunk):
                if event.data == "[DONE]":
                    complete = True
                else:
                    pieces.append(json.loads(event.data)["delta"])
        return "".join(pieces), complete

    for fn in (bytes_buffer, with_the_library_decoder, practice.practice_reader):
        assert _graded("read_stream", fn).passed, fn.__name__


def test_a_wrong_return_shape_is_explained():
    report = _graded("read_stream", lambda chunks: ex2.reference(chunks)[0])
    assert "read_stream must return a tuple (text, complete)" in report_text(report)


# ---------------------------------------------------------------------------
# response_times


@pytest.mark.parametrize(
    ("times", "rule"),
    [
        (lambda p, t, n: (p, p + n * t, p + n * t), "streaming shows the first token after"),
        (lambda p, t, n: (p + t, p + (n - 1) * t, p + (n - 1) * t), "total time is prefill"),
        (lambda p, t, n: (p + t, p + t, p + n * t), "blocking shows nothing until"),
        (
            lambda p, t, n: (p + 2 * t, p + n * t, p + n * t),
            "streaming shows the first token after",
        ),
    ],
)
def test_off_by_one_timings_are_caught(times, rule):
    def response_times(prefill_ms, per_token_ms, n_tokens):
        first, blocking, total = times(prefill_ms, per_token_ms, n_tokens)
        return {"streaming_first_ms": first, "blocking_first_ms": blocking, "total_ms": total}

    report = _graded("response_times", response_times)
    assert any(name.startswith(rule) for name in _failed_rules(report))


def test_response_times_written_with_floats_and_extra_keys_is_accepted():
    def response_times(prefill_ms, per_token_ms, n_tokens):
        first = float(prefill_ms) + float(per_token_ms)
        total = float(prefill_ms) + float(per_token_ms) * n_tokens
        return {
            "total_ms": total,
            "blocking_first_ms": total,
            "streaming_first_ms": first,
            "n": n_tokens,
        }

    assert _graded("response_times", response_times).passed


# ---------------------------------------------------------------------------
# now_change_it


def test_a_wrong_drop_prediction_fails_only_that_prediction():
    answers = ex3.reference() | {"drop40_text": "Your caf"}
    report = evaluate_answers(EXERCISES["now_change_it"], to_jsonable(answers), Mode(hidden=True))
    assert _failed_rules(report) == {"experiment 3, prediction: the text after a drop at 40 bytes"}


def test_predictions_accept_lowercase_letters_and_quoted_text_but_never_reveal_answers():
    answers = ex3.reference() | {"decode_why": " b) ", "drop40_text": "'Your'"}
    assert evaluate_answers(EXERCISES["now_change_it"], to_jsonable(answers)).passed
    wrong = answers | {"if_why": "C", "decode_1000_text": "Your caf"}
    text = report_text(evaluate_answers(EXERCISES["now_change_it"], to_jsonable(wrong)))
    assert "not shown" in text and "Your café order ships." not in text


def test_half_answered_predictions_score_their_share():
    answers = ex3.reference()
    half = {k: (v if k.startswith("decode") else ...) for k, v in answers.items()}
    report = evaluate_answers(EXERCISES["now_change_it"], to_jsonable(half))
    assert report.passed_rules == 3 and not report.not_attempted
    assert "no answer yet" in report_text(report)


# ---------------------------------------------------------------------------
# read_anthropic, resume, parse_sse mistakes


def _anthropic(*, done_at_delta=False, all_text=False, strict_events=False):
    def read_anthropic(chunks):
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer, text, complete, stop = "", "", False, None
        for chunk in chunks:
            buffer += decoder.decode(chunk)
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                lines = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
                kind = lines.get("event")
                if strict_events:  # every block is taken to be an event with JSON data
                    data = json.loads(block.split("data: ", 1)[1])
                elif kind is None:
                    continue
                else:
                    data = json.loads(lines["data"]) if "data" in lines else {}
                if kind == "content_block_delta" or (all_text and "text" in str(data)):
                    text += data.get("delta", {}).get("text", "")
                elif kind == "message_delta":
                    stop = data["delta"]["stop_reason"]
                    complete = complete or done_at_delta
                elif kind == "message_stop":
                    complete = True
        return text, complete, stop

    return read_anthropic


def test_anthropic_reader_complete_at_message_delta_is_caught():
    report = _graded("read_anthropic", _anthropic(done_at_delta=True))
    assert "complete only after message_stop" in _failed_rules(report)


def test_anthropic_reader_that_parses_comments_as_events_is_caught():
    report = _graded("read_anthropic", _anthropic(strict_events=True))
    assert "ping events and comments are ignored" in _failed_rules(report)


def test_a_resume_that_starts_over_or_keeps_the_old_buffer_is_caught():
    def start_over(fetch):
        while True:
            text = ""
            decoder = codecs.getincrementaldecoder("utf-8")()
            buffer = ""
            for chunk in fetch(None):
                buffer += decoder.decode(chunk)
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    if "event: done" in block:
                        return text
                    for line in block.split("\n"):
                        if line.startswith("data: "):
                            text += json.loads(line[6:])["delta"]

    def keeps_buffer(fetch):
        text, last_id, buffer = "", None, b""
        while True:
            for chunk in fetch(last_id):
                buffer += chunk  # a half event of the dropped connection stays in front
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    fields = dict(
                        line.split(": ", 1) for line in block.decode().split("\n") if ": " in line
                    )
                    last_id = fields.get("id", last_id)
                    if fields.get("event") == "done":
                        return text
                    if "data" in fields:
                        text += json.loads(fields["data"])["delta"]

    assert "one drop: reconnect with the id of the last event received" in _failed_rules(
        _graded("resume", start_over)
    )
    assert "a drop inside an event: that event is not counted and comes again" in _failed_rules(
        _graded("resume", keeps_buffer)
    )


def test_a_parser_that_only_knows_lf_or_strips_all_spaces_is_caught():
    def lf_only(chunks):
        events, data, kind, last_id, buffer = [], [], "", "", b""
        for chunk in chunks:
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                line = raw.decode("utf-8", "replace")
                if not line:
                    if data:
                        events.append((kind or "message", "\n".join(data), last_id))
                    data, kind = [], ""
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    value = value.strip()  # also a bug: only one space may go
                    if name == "data":
                        data.append(value)
                    elif name == "event":
                        kind = value
                    elif name == "id":
                        last_id = value
        return events

    failed = _failed_rules(_graded("parse_sse", lf_only))
    assert "conformance: CR, LF and CRLF all end lines" in failed
    assert "conformance: only one leading space is removed" in failed
    assert "conformance: an id containing NUL is ignored" in failed


# ---------------------------------------------------------------------------
# check(): never raises, stops runaway functions, keeps the process usable


def test_check_stops_a_function_that_never_returns_and_stays_usable(capsys):
    def read_stream(chunks):
        while True:
            pass

    result = check("read_stream", read_stream, limit_s=0.5)
    out = capsys.readouterr().out
    assert not result.passed and "no answer within 0.5 s" in out
    assert "not run (read_stream was stopped after 0.5 s)" in out
    assert check("read_stream", solved("read_stream"), show=False).passed  # still usable


def test_check_reports_a_crash_with_the_input_instead_of_raising():
    def read_stream(chunks):
        raise KeyError("delta")

    result = check("read_stream", read_stream, show=False)
    assert "raised KeyError: 'delta'" in result.feedback and "chunks = [" in result.feedback


def test_check_never_raises_for_bad_arguments():
    assert (
        "unknown exercise 'read_streams'"
        in check("read_streams", ex2.reference, show=False).feedback
    )
    assert "needs your function" in check("read_stream", "oops", show=False).feedback


def test_check_result_repr_is_one_short_line_naming_the_exercise_and_score():
    result = check("response_times", solved("response_times"), show=False)
    assert repr(result) == "CheckResult(response_times: 7/10 passed)"


def test_check_result_repr_says_not_attempted_for_a_stub():
    def read_stream(chunks):
        raise NotImplementedError

    assert repr(check("read_stream", read_stream, show=False)) == (
        "CheckResult(read_stream: 0/30 not attempted)"
    )


def test_check_is_skipped_quietly_while_grading(monkeypatch, capsys):
    monkeypatch.setenv(GRADING_ENV, "1")
    result = check("read_stream", ex2.reference)
    assert (result.passed, capsys.readouterr().out) == (False, "")


def test_a_function_that_patches_the_library_in_its_process_cannot_change_the_verdict():
    def read_stream(chunks):
        import lessonkit.grading.ex2_read_stream

        lessonkit.grading.ex2_read_stream.reference = lambda chunks: ("", False)
        return "", False

    assert not check("read_stream", read_stream, show=False).passed
    assert ex2.reference([b"data: [DONE]\n\n"]) == ("", True)  # the kernel's copy is intact


def test_the_notebook_display_has_html_and_the_same_plain_text():
    result = check("read_stream", buggy_reader(use_if=True), show=False)
    html_text = feedback.feedback_html(result.feedback, result.report)
    assert "several events in one chunk" in html_text and "<details>" in html_text


# ---------------------------------------------------------------------------
# Packaged conformance cases


def test_packaged_conformance_cases_agree_with_the_course_decoder():
    for case in ex6.conformance_cases():
        assert ex6.reference([case["input"]]) == case["events"], case["name"]


def test_generated_parser_streams_are_seeded():
    assert ex6.generated_stream(5) == ex6.generated_stream(5)
    assert ex6.generated_stream(5) != ex6.generated_stream(6)


def test_practice_fetch_serves_the_event_stream_and_records_ids():
    fetch = grading.practice_fetch(drops=[40])
    first = b"".join(fetch(None))
    assert first == llm.wire_bytes(llm.Answer(tuple(fetch.script.tokens)), "eventsource")[:40]
    b"".join(fetch("0"))
    assert fetch.requests == [None, "0"]


def test_a_parser_written_as_a_generator_is_accepted():
    def parse_sse(chunks):
        yield from ex6.reference(chunks)

    assert _graded("parse_sse", parse_sse).passed

    by_hand = solved("parse_sse")

    def parse_sse_by_hand(chunks):
        yield from by_hand(chunks)

    assert check("parse_sse", parse_sse_by_hand, show=False).passed


# ---------------------------------------------------------------------------
# try_it: the "try it" cells run with the same time limit as check


def test_try_it_stops_a_function_that_never_returns_and_the_kernel_stays_usable(capsys):
    def read_stream(chunks):
        while True:
            pass

    grading.try_it(read_stream, [b"data: [DONE]\n\n"], limit_s=0.5)
    assert "read_stream gave no answer within 0.5 s and was stopped" in capsys.readouterr().out
    grading.try_it(_named("read_stream", ex2.reference), [b"data: [DONE]\n\n"])
    assert capsys.readouterr().out == "read_stream -> ('', True)\n"


def test_try_it_reports_a_function_that_ends_its_process(capsys):
    import os

    def read_stream(chunks):
        os._exit(3)

    grading.try_it(read_stream, [b""])
    assert capsys.readouterr().out == (
        "read_stream ended the process running it (sys.exit / os._exit?)\n"
    )


def test_try_it_shows_what_the_function_prints_above_its_result(capsys):
    def response_times(prefill_ms, per_token_ms, n_tokens):
        print("thinking about", n_tokens)
        return {"total_ms": prefill_ms + n_tokens * per_token_ms}

    grading.try_it(response_times, 300, 40, 6)
    assert capsys.readouterr().out == "thinking about 6\nresponse_times -> {'total_ms': 540}\n"


def test_try_it_prints_a_stub_and_an_error_instead_of_raising(capsys):
    def stub(chunks):
        raise NotImplementedError

    def broken(chunks):
        raise KeyError("delta")

    grading.try_it(stub, [b""])
    grading.try_it(broken, [b""])
    assert capsys.readouterr().out == ("stub is not written yet\nbroken raised KeyError: 'delta'\n")


def test_try_it_still_records_the_ids_a_practice_fetch_was_called_with(capsys):
    fetch = grading.practice_fetch(drops=[70, 30, 100])
    grading.try_it(_named("resume", ex5.reference), fetch)
    assert capsys.readouterr().out == "resume -> 'Your café order ships on Monday.'\n"
    assert fetch.requests == [None, "0", "0", "2"]


def test_try_it_runs_nothing_while_grading(monkeypatch, capsys):
    def read_stream(chunks):
        raise AssertionError("ran while grading")

    monkeypatch.setenv(GRADING_ENV, "1")
    grading.try_it(read_stream, [b""])
    assert capsys.readouterr().out == "read_stream: try it skipped while grading\n"


# ---------------------------------------------------------------------------
# Feedback wording


def test_a_function_that_ends_its_process_is_reported_in_plain_words():
    import os

    def read_stream(chunks):
        os._exit(1)

    feedback = check("read_stream", read_stream, show=False).feedback
    assert "got       your function ended the process running it (sys.exit / os._exit?)" in (
        feedback
    )
    assert "raised the process" not in feedback


def test_a_hidden_rule_that_ends_the_process_still_says_what_happened():
    finding = engine.Finding("long answers", False, hidden=True, got=engine.PROCESS_ENDED, hint="h")
    assert f"  got       {engine.PROCESS_ENDED}" in feedback.finding_lines(finding)


def test_each_parse_sse_conformance_rule_has_its_own_hint():
    rules = [r for r in EXERCISES["parse_sse"].rules if r.name.startswith("conformance: ")]
    hints = [r.hint for r in rules]
    assert len(set(hints)) == len(hints) == len(ex6.conformance_cases())
    assert ex6.CONFORMANCE_HINT not in hints


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("the last event id persists", "only an id: line changes it"),
        ("one leading BOM is dropped", "Drop one leading BOM"),
        ("an id containing NUL is ignored", "An id containing NUL"),
        ("retry with non-digits is ignored", "retry takes ASCII digits only"),
        ("CR, LF and CRLF all end lines", "also when CR and LF arrive in different chunks"),
    ],
)
def test_a_parse_sse_conformance_failure_shows_the_hint_for_that_rule(rule, words):
    hint = next(r.hint for r in EXERCISES["parse_sse"].rules if r.name == f"conformance: {rule}")
    assert words in hint


def test_a_parser_that_forgets_the_last_event_id_is_told_that_the_id_persists():
    def parse_sse(chunks):
        return [(kind, data, "" if i else last) for i, (kind, data, last) in enumerate(
            ex6.reference(chunks))]  # fmt: skip

    report = _graded("parse_sse", parse_sse)
    failed = next(f for f in report.findings if f.rule == "conformance: the last event id persists")
    assert "only an id: line changes it" in failed.hint


# ---------------------------------------------------------------------------
# The empty-chunk rule


EMPTY_RULE = "empty chunks change nothing"


def _stops_at_empty_chunk(chunks):
    kept = []
    for chunk in chunks:
        if not chunk:
            break
        kept.append(chunk)
    return ex2.reference(kept)


def test_every_case_of_the_empty_chunk_rule_holds_an_empty_chunk():
    rule = next(r for r in EXERCISES["read_stream"].rules if r.name == EMPTY_RULE)
    assert all(b"" in case.args[0] for case in rule.cases())


def test_a_reader_that_stops_at_an_empty_chunk_fails_the_empty_chunk_rule_showing_an_empty_chunk():
    report = evaluate(EXERCISES["read_stream"], in_process(_stops_at_empty_chunk))
    failed = [f for f in report.findings if not f.passed]
    # random cuts hold empty reads too, so the long-answer rule fails with it
    assert [f.rule for f in failed] == [EMPTY_RULE, "long answers cut at random points"]
    assert "b''" in failed[0].shown_input


def test_a_reader_broken_without_empty_chunks_too_is_not_blamed_on_them_when_another_case_judges():
    def read_stream(chunks):  # fails only when the first piece is not the whole stream
        chunks = [c for c in chunks if c]
        return ex2.reference(chunks) if len(chunks) == 1 else ("", False)

    finding = next(f for f in _graded("read_stream", read_stream).findings if f.rule == EMPTY_RULE)
    assert finding.passed


def test_a_reader_that_fails_every_control_still_fails_the_empty_chunk_rule_with_a_note():
    def read_stream(chunks):
        return chunks[0].decode(), True

    finding = next(f for f in _graded("read_stream", read_stream).findings if f.rule == EMPTY_RULE)
    assert not finding.passed and "b''" in finding.shown_input
    assert "even with the b'' removed" in finding.hint


# ---------------------------------------------------------------------------
# The map in the package docstring


def test_the_grading_package_map_names_every_module_and_only_modules_that_exist():
    doc = grading.__doc__
    listed = set(re.findall(r"^ {4}(\w+)  ", doc, re.M)) | set(re.findall(r"\bex\d_\w+", doc))
    modules = {p.stem for p in Path(grading.__file__).parent.glob("*.py")} - {"__init__"}
    assert listed == modules


def test_a_check_result_echoed_in_the_cell_that_showed_it_shows_nothing_more(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "_execution_count", lambda: 7)
    result = check("response_times", solved("response_times"))
    capsys.readouterr()
    result._ipython_display_()  # what IPython calls for the cell's last expression
    assert capsys.readouterr().out == ""


def test_a_check_result_shown_again_in_a_later_cell_shows_its_feedback(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "_execution_count", lambda: 7)
    result = check("response_times", solved("response_times"))
    capsys.readouterr()
    monkeypatch.setattr(notebook, "_execution_count", lambda: 8)
    result._ipython_display_()
    assert capsys.readouterr().out == result.feedback + "\n"


# ---------------------------------------------------------------------------
# Focused feedback: the first failing rule in full, with a hint for the bug behind it


def _public(exercise_id: str, fn) -> engine.Report:
    return evaluate(EXERCISES[exercise_id], in_process(fn))


def _first_hint(report: engine.Report) -> str:
    text = report_text(report)
    block = text[text.index("FAILED") :]
    return next(line for line in block.splitlines() if line.startswith("  hint"))


def test_feedback_shows_the_root_bugs_rule_in_full_and_only_names_the_others():
    text = report_text(_public("read_stream", buggy_reader(use_if=True)))
    assert text.count("FAILED") == 1 and text.count("  hint") == 1
    assert "FAILED  several events in one chunk are all handled" in text
    also = text[text.index(feedback.ALSO_SAME) :]
    assert "  - the whole stream in one chunk" in also
    assert "ok  a dropped connection keeps the text so far" in text
    assert re.search(r"public checks 2/\d+ pass", text)


def test_only_failures_diagnosed_as_the_same_mistake_are_said_to_share_its_cause():
    def two_bugs(chunks):  # skips no comments, and decodes each chunk on its own
        text, complete, buffer = "", False, ""
        for chunk in chunks:
            buffer += chunk.decode("utf-8")
            while "\n\n" in buffer:
                event, buffer = buffer.split("\n\n", 1)
                data = event.removeprefix("data: ")
                if data == "[DONE]":
                    complete = True
                else:
                    text += json.loads(data)["delta"]
        return text, complete

    report = _public("read_stream", two_bugs)
    text = report_text(report)
    same = text[text.index(feedback.ALSO_SAME) : text.index(feedback.ALSO_FAILING)]
    other = text[text.index(feedback.ALSO_FAILING) :]
    assert "FAILED  heartbeat comments (': ping') are skipped" in text and "is a comment" in text
    assert "the whole stream in one chunk" in same
    assert "a character split across chunks survives" in other
    assert "a character split across chunks survives" not in same


def test_graded_feedback_is_as_focused_as_the_notebook_check():
    text = report_text(_graded("read_stream", buggy_reader(no_comments=True)))
    assert text.count("FAILED") == 1 and feedback.ALSO_SAME in text
    assert "checks " in text and "(public and hidden)" in text


def test_the_notebook_html_opens_only_the_first_failing_rule():
    result = check("read_stream", buggy_reader(replace=True), show=False)
    html_text = feedback.feedback_html(result.feedback, result.report)
    assert html_text.count("<pre") == 1 and "also failing" in html_text


@pytest.mark.parametrize(
    ("bug", "words"),
    [
        ("per_chunk", "getincrementaldecoder('utf-8')"),
        ("use_if", "`while`, not `if`"),
        ("chunk_is_event", "A chunk is not an event"),
        ("loads_done", "Compare the data with '[DONE]' before calling json.loads"),
        ("replace", "text += delta, not text = delta"),
        ("no_comments", "starts with ':' is a comment"),
        ("always_complete", "set it to True only when the [DONE] event comes"),
    ],
)
def test_the_first_hint_shown_for_each_realistic_bug_names_that_bug(bug, words):
    assert words in _first_hint(_public("read_stream", buggy_reader(**{bug: True})))


def test_a_per_chunk_decoder_is_told_about_decoding_even_under_the_drop_rule():
    report = _public("read_stream", buggy_reader(per_chunk=True))
    drop = next(f for f in report.findings if f.rule.startswith("a dropped connection"))
    assert not drop.passed and "UnicodeDecodeError" in drop.got
    assert "getincrementaldecoder" in drop.hint and "half event" not in drop.hint


def test_the_json_diagnosis_survives_the_forked_process_of_check():
    result = check("read_stream", buggy_reader(loads_done=True), show=False)
    assert "hint      Compare the data with '[DONE]' before calling json.loads" in result.feedback
    assert result.feedback.count("FAILED") == 1


def test_a_failure_that_cannot_be_diagnosed_keeps_the_rules_own_hint():
    def read_stream(chunks):
        text, complete = ex2.reference(chunks)
        return text.upper(), complete

    hint = _first_hint(_public("read_stream", read_stream))
    assert "Split the buffer at blank lines" in hint


# ---------------------------------------------------------------------------
# read_anthropic: only text_delta is text; long inputs show their end


def _appends_every_delta(chunks):
    from lessonkit.core.sse import decode_all

    text, complete, stop = "", False, None
    for event in decode_all(chunks):
        data = json.loads(event.data) if event.data else {}
        if event.event == "content_block_delta":
            delta = data["delta"]
            text += delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
        elif event.event == "message_delta":
            stop = data["delta"]["stop_reason"]
        elif event.event == "message_stop":
            complete = True
    return text, complete, stop


TEXT_DELTA_RULE = "only text_delta deltas are text: thinking and tool_use blocks are not"
HIDDEN_BLOCKS_RULE = "tool calls, thinking and look-alike text in longer answers, cut at random"


def test_an_anthropic_reader_that_appends_thinking_or_tool_json_fails_the_text_delta_rule():
    report = _graded("read_anthropic", _appends_every_delta)
    assert _failed_rules(report) == {TEXT_DELTA_RULE, HIDDEN_BLOCKS_RULE}
    assert "delta['type'] == 'text_delta'" in _first_hint(report)


def test_the_text_delta_rule_is_public_and_has_a_hidden_variant():
    rules = {r.name: r.hidden for r in EXERCISES["read_anthropic"].rules}
    assert rules[TEXT_DELTA_RULE] is False
    assert rules[HIDDEN_BLOCKS_RULE] is True


def test_the_course_client_keeps_only_text_delta_text_of_a_stream_with_tool_and_thinking_blocks():
    wire = ex4.blocks_wire(("Let me check.",), thinking=ex4.THINKING, tool_json=ex4.TOOL_JSON)
    assert b"input_json_delta" in wire and b"thinking_delta" in wire
    assert ex4.reference([wire]) == ("Let me check.", True, "tool_use")


def test_a_long_stream_input_shows_its_end_and_says_what_is_missing():
    report = _public("read_anthropic", _anthropic(done_at_delta=True))
    finding = next(f for f in report.findings if f.rule == "complete only after message_stop")
    assert finding.shown_input.startswith("chunks = [b'event: message_start")
    assert '"stop_reason":"end_turn"' in finding.shown_input  # the tail: message_delta
    assert "the middle left out" in finding.shown_input
    assert "without its last event, message_stop" in finding.shown_input


# ---------------------------------------------------------------------------
# resume: the feedback prints the call that replays the case


def test_resume_feedback_prints_the_practice_fetch_call_that_replays_the_case_exactly():
    def no_reconnect(fetch):
        text = ""
        for chunk in fetch(None):
            text += chunk.decode("utf-8", "replace")
        return text

    report = _public("resume", no_reconnect)
    shown = next(f for f in report.findings if not f.passed).shown_input
    call = re.search(r"resume\((practice_fetch\(.*\))\)", shown).group(1)
    replay = eval(call, {"practice_fetch": grading.practice_fetch})
    case = next(
        c
        for r in EXERCISES["resume"].rules
        for c in r.cases()
        if c.args[0].describe().startswith(f"resume({call})")
    )
    assert replay.script == case.args[0]
    assert [replay(None), replay("2")] == [
        case.args[0].respond(0, None),
        case.args[0].respond(1, "2"),
    ]
    assert "tokens=(" in call and "seed=" in call


# ---------------------------------------------------------------------------
# now_change_it: the notebook says what is graded


def test_the_now_change_it_notebook_says_plainly_what_is_graded():
    import nbformat

    intro = nbformat.read(ROOT / "solutions" / "ex3_now_change_it.ipynb", as_version=4).cells[0]
    assert "graded as you recorded" not in intro.source
    assert "What is graded is whether each answer in the dict is right" in intro.source
    assert "Nothing checks *when* you wrote it" in intro.source


# ---------------------------------------------------------------------------
# The root bug first (issue 22): the rule about the mistake, on the smallest input


LINE_READER = """
import codecs, json

def read_stream(chunks):
    decoder = codecs.getincrementaldecoder("utf-8")()
    buffer, text, complete = "", "", False
    for chunk in chunks:
        buffer += decoder.decode(chunk)
        while "\\n" in buffer:
            line, buffer = buffer.split("\\n", 1)
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    complete = True
                else:
                    text += json.loads(data)["delta"]
    return text, complete
"""


def test_a_reader_that_parses_before_the_blank_line_is_told_so_on_a_two_piece_input():
    report = _public("read_stream", function_from(LINE_READER, "read_stream"))
    shown = report.shown
    assert shown.rule == "a dropped connection keeps the text so far, with complete=False"
    assert shown.shown_input == "chunks = [b'data: {\"delta\": ', b'\"Hi\"}\\n']"
    assert "An event counts only once its blank line has arrived" in shown.hint
    text = report_text(report)
    assert "Compare the data with '[DONE]'" not in text
    same = text[text.index(feedback.ALSO_SAME) :]
    assert "complete only after [DONE] arrives" in same


CUT_RULE = "an event cut across two chunks waits for the rest"
CUT_HINT = "A chunk is not an event: keep a buffer and act only on events ended by a blank line."
CUT_AFTER_ONE_BYTE = "chunks = [b'd', b'ata: {\"delta\": \"Hi\"}\\n\\ndata: [DONE]\\n\\n']"


def _shows_the_cut_rule_first(report: engine.Report) -> None:
    """Assert the report shows the rule about a chunk taken for an event, on a 2-piece cut."""
    shown = report.shown
    assert (shown.rule, shown.hint, shown.shown_input) == (CUT_RULE, CUT_HINT, CUT_AFTER_ONE_BYTE)
    text = report_text(report)
    assert text.count("FAILED") == 1 and f"FAILED  {CUT_RULE}" in text
    same = text[text.index(feedback.ALSO_SAME) :]
    assert "complete only after [DONE] arrives" in same  # failed first, for the same reason
    assert "Compare the data with '[DONE]'" not in text and "Start with complete" not in text


def _classroom(name: str):
    return function_from(MISTAKES["read_stream"][name], "read_stream")


def test_a_reader_that_splits_each_chunk_with_no_buffer_is_first_told_a_cut_event_waits():
    result = check("read_stream", _classroom("split_each_chunk"), show=False)
    _shows_the_cut_rule_first(result.report)  # through check(): the outcome crossed a process


def test_a_reader_that_splits_and_strips_each_chunk_is_first_told_a_cut_event_waits():
    _shows_the_cut_rule_first(_public("read_stream", _classroom("split_each_chunk_stripped")))


def test_a_reader_that_parses_each_chunks_lines_with_no_buffer_is_first_told_a_cut_event_waits():
    _shows_the_cut_rule_first(_public("read_stream", _classroom("lines_each_chunk")))


def test_graded_feedback_of_a_reader_with_no_buffer_shows_the_same_root_bug():
    for name in ("split_each_chunk", "split_each_chunk_stripped", "lines_each_chunk"):
        shown = _graded("read_stream", _classroom(name)).shown
        assert (shown.rule, shown.hint, shown.shown_input) == (
            CUT_RULE,
            CUT_HINT,
            CUT_AFTER_ONE_BYTE,
        ), name


def test_a_function_that_never_returns_gets_the_hint_about_loops_not_the_formula():
    def response_times(prefill_ms, per_token_ms, n_tokens):
        while True:
            pass

    result = check("response_times", response_times, show=False, limit_s=1)
    assert "hint      Your function did not return: look for a loop that never ends" in (
        result.feedback
    )
    assert "prefill" not in result.feedback.split("hint", 1)[1].split("\n")[0]


def test_a_wrong_type_gets_the_hint_about_the_type():
    report = _public("read_stream", lambda chunks: "text")
    assert report.shown.hint.startswith("Return a tuple of 2: `return text, complete`")


def test_no_for_a_yes_no_flag_is_told_to_answer_true_or_false():
    answers = ex3.reference() | {"if_1000_complete": "no"}
    answers = {k: (v if isinstance(v, bool) else str(v)) for k, v in answers.items()}
    text = report_text(evaluate_answers(EXERCISES["now_change_it"], to_jsonable(answers)))
    assert "answer True or False" in text
