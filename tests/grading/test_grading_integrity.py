"""The course's own answers: check() and grading see what the learner's function really calls.

The notebook's check records, in its forked copy of the kernel, every call
the learner's function makes into the course's answers (the readers of
lessonkit.sse / client / dialects, the timing model, the checker's reference
answers) and says "write your own ..." instead of passing; each exercise
states what it may use (exercise 4 may use lessonkit.sse).
"""

from __future__ import annotations

import json

from classroom import LESSON_READER, function_from

from lessonkit.core import client, sse
from lessonkit.grading import check, engine, integrity
from lessonkit.grading.exercises import EXERCISES

_lesson_reader_by_hand = function_from(LESSON_READER, "read_stream")


def test_a_reader_that_calls_the_course_client_is_told_to_write_its_own_and_scores_0():
    from lessonkit.client import read_stream as course_read_stream

    def read_stream(chunks):
        reply = course_read_stream(chunks, "lesson")
        return reply.text, reply.complete

    result = check("read_stream", read_stream, show=False)
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


def test_answers_looked_up_in_the_checkers_cases_while_running_are_caught():
    def parse_sse(chunks):
        from lessonkit.grading.ex6_parse_sse import conformance_cases

        data = b"".join(chunks)
        for case in conformance_cases():
            if case["input"] == data:
                return case["events"]
        return []

    result = check("parse_sse", parse_sse, show=False)
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


def test_reloading_the_course_module_to_hide_the_calls_is_caught():
    def read_stream(chunks):
        import importlib

        fresh = importlib.reload(client)  # a fresh, unwatched copy of the module
        reply = fresh.read_stream(chunks, "lesson")
        return reply.text, reply.complete

    result = check("read_stream", read_stream, show=False)
    assert result.score == 0 and "lessonkit.client (executed again)" in result.feedback


def test_an_honest_reader_is_not_flagged_and_the_kernels_lessonkit_stays_untouched():
    original = client.read_stream.__code__
    result = check("read_stream", _lesson_reader_by_hand, show=False)
    assert result.passed and "course's answer" not in result.feedback
    assert client.read_stream.__code__ is original and not integrity.installed()


def test_the_score_of_a_report_that_uses_the_course_answer_is_0_unless_allowed():
    exercise = EXERCISES["read_stream"]

    def run(case):
        return engine.call_in_process(_lesson_reader_by_hand, case)

    used = ["lessonkit.client.read_stream"]
    barred = engine.evaluate(exercise, run, used=used)
    allowed = engine.evaluate(exercise, run, used=used, allow_lessonkit=True)
    assert (barred.score, barred.earned, barred.integrity) == (0.0, 26.0, tuple(used))
    assert (allowed.score, allowed.allowed_use) == (26.0, tuple(used))
    assert "accepted by --allow-lessonkit" in allowed.text()


def test_every_exercise_states_what_it_may_use_in_its_module():
    assert {e: EXERCISES[e].allowed for e in EXERCISES} == {
        "response_times": (),
        "read_stream": (),
        "now_change_it": ("lessonkit.core", "lessonkit.sse", "lessonkit.client"),
        "read_anthropic": ("lessonkit.sse",),
        "resume": (),
        "parse_sse": (),
    }
