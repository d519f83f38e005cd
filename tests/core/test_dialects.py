"""lessonkit.core.dialects: what one event means in each format."""

from __future__ import annotations

import json

import pytest

from lessonkit.core.dialects import DIALECTS, Step, interpret
from lessonkit.core.sse import Event


def data_event(obj: object, event: str = "message", id: str = "") -> Event:
    return Event(event=event, data=obj if isinstance(obj, str) else json.dumps(obj), id=id)


def anthropic_event(kind: str, **fields: object) -> Event:
    return data_event({"type": kind, **fields}, event=kind)


def openai_chunk(delta: dict, finish_reason: str | None = None, **extra: object) -> Event:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return data_event({"object": "chat.completion.chunk", "choices": [choice], **extra})


def test_an_unknown_dialect_raises_value_error_naming_the_valid_ones():
    with pytest.raises(ValueError) as info:
        interpret(Event(data="{}"), "gemini")
    for name in DIALECTS:
        assert name in str(info.value)


@pytest.mark.parametrize("dialect", ["lesson", "openai", "eventsource"])
def test_done_is_checked_before_any_json_parse(dialect):
    assert interpret(Event(data="[DONE]"), dialect) == Step(done=True)


# --- lesson ----------------------------------------------------------------------


def test_lesson_delta_is_the_text_of_the_event():
    assert interpret(data_event({"delta": "Your"}), "lesson") == Step(delta="Your")


def test_lesson_finish_reason_rides_on_the_last_delta():
    step = interpret(data_event({"delta": ".", "finish_reason": "stop"}), "lesson")
    assert step == Step(delta=".", finish_reason="stop")


def test_lesson_malformed_json_becomes_an_error_quoting_the_data():
    step = interpret(Event(data='{"delta": "Yo'), "lesson")
    assert step.error is not None and "malformed JSON" in step.error
    assert '{"delta": "Yo' in step.error


def test_an_error_quotes_long_data_truncated():
    step = interpret(Event(data="x" * 5000), "lesson")
    assert step.error is not None
    assert len(step.error) < 300 and "5000 characters" in step.error


def test_lesson_json_without_a_delta_is_an_error():
    assert "delta" in (interpret(data_event({"text": "hi"}), "lesson").error or "")


# --- openai ------------------------------------------------------------------------


def test_openai_text_is_choices_0_delta_content():
    assert interpret(openai_chunk({"content": " order"}), "openai").delta == " order"


@pytest.mark.parametrize("delta", [{}, {"role": "assistant"}, {"content": None}])
def test_openai_a_missing_or_null_content_adds_no_text(delta):
    assert interpret(openai_chunk(delta), "openai") == Step()


def test_openai_finish_reason_comes_from_the_final_chunk():
    assert interpret(openai_chunk({}, "length"), "openai") == Step(finish_reason="length")


def test_openai_usage_comes_from_the_usage_chunk_with_empty_choices():
    usage = {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}
    event = data_event({"object": "chat.completion.chunk", "choices": [], "usage": usage})
    assert interpret(event, "openai") == Step(usage=usage)


def test_openai_an_error_object_becomes_step_error():
    event = data_event({"error": {"type": "server_error", "message": "overloaded"}})
    assert interpret(event, "openai").error == "server error: server_error: overloaded"


def test_openai_malformed_json_becomes_step_error_not_an_exception():
    assert "malformed JSON" in (interpret(Event(data="{oops"), "openai").error or "")


def test_openai_content_that_is_not_a_string_is_an_error():
    assert interpret(openai_chunk({"content": 5}), "openai").error is not None


# --- anthropic -----------------------------------------------------------------------


def test_anthropic_text_comes_from_text_delta_blocks():
    event = anthropic_event(
        "content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}
    )
    assert interpret(event, "anthropic") == Step(delta="Hi")


def test_anthropic_non_text_deltas_add_no_text():
    event = anthropic_event(
        "content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": "{"}
    )
    assert interpret(event, "anthropic") == Step()


def test_anthropic_message_start_carries_the_input_usage():
    usage = {"input_tokens": 6, "output_tokens": 0}
    event = anthropic_event("message_start", message={"content": [], "usage": usage})
    assert interpret(event, "anthropic") == Step(usage=usage)


def test_anthropic_message_delta_carries_stop_reason_and_usage():
    event = anthropic_event(
        "message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 9}
    )
    assert interpret(event, "anthropic") == Step(
        finish_reason="max_tokens", usage={"output_tokens": 9}
    )


def test_anthropic_message_stop_is_the_end_marker():
    assert interpret(anthropic_event("message_stop"), "anthropic") == Step(done=True)


def test_anthropic_an_error_event_becomes_step_error():
    event = anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    assert interpret(event, "anthropic").error == "server error: overloaded_error: Overloaded"


@pytest.mark.parametrize("kind", ["ping", "content_block_start", "content_block_stop", "future"])
def test_anthropic_other_events_add_nothing(kind):
    assert interpret(anthropic_event(kind, index=0), "anthropic") == Step()


def test_anthropic_done_data_is_not_its_end_marker():
    assert interpret(Event(data="[DONE]"), "anthropic") == Step()


def test_anthropic_events_without_an_event_line_are_read_by_their_type_field():
    event = data_event({"type": "message_stop"})
    assert interpret(event, "anthropic") == Step(done=True)


# --- eventsource ---------------------------------------------------------------------


def test_eventsource_reads_lesson_deltas():
    assert interpret(data_event({"delta": "a"}, id="3"), "eventsource") == Step(delta="a")


def test_eventsource_ends_with_a_done_event():
    assert interpret(Event(event="done", data="[DONE]", id="6"), "eventsource") == Step(done=True)
    assert interpret(Event(event="done", data="bye", id="6"), "eventsource") == Step(done=True)
