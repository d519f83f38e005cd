"""lessonkit.client: read_stream and StreamReader turn bytes into the answer."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import build_wire, chunkings, finish_reasons, sim_answers, token_lists

from lessonkit.core.client import Reply, StreamReader, read_stream
from lessonkit.core.dialects import DIALECTS
from lessonkit.core.llm import (
    RUNNING_ANSWER,
    RUNNING_PROMPT,
    OpenAIOptions,
    answer_for,
    stream_writes,
    wire_bytes,
)
from lessonkit.core.sse import comment, encode

RUNNING = answer_for(RUNNING_PROMPT)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_read_stream_rebuilds_the_running_answer_in_every_dialect(dialect):
    reply = read_stream([wire_bytes(RUNNING, dialect)], dialect)
    assert reply.text == RUNNING_ANSWER
    assert reply.complete
    assert reply.error is None


def test_openai_finish_reason_and_usage_come_from_the_final_chunks():
    reply = read_stream(
        [wire_bytes(RUNNING, "openai", options=OpenAIOptions(include_usage=True))], "openai"
    )
    assert reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}


def test_openai_without_the_usage_chunk_has_no_usage():
    assert read_stream([wire_bytes(RUNNING, "openai")], "openai").usage is None


def test_anthropic_usage_joins_message_start_and_message_delta():
    reply = read_stream([wire_bytes(RUNNING, "anthropic")], "anthropic")
    assert reply.finish_reason == "end_turn"
    assert reply.usage == {"input_tokens": 6, "output_tokens": 6}


def test_anthropic_usage_in_message_delta_is_cumulative_so_the_last_one_wins():
    def event(kind: str, body: dict) -> bytes:
        return encode(json.dumps({"type": kind, **body}), event=kind)

    start = {"message": {"id": "msg_1", "usage": {"input_tokens": 6, "output_tokens": 1}}}
    wire = [
        event("message_start", start),
        event("message_delta", {"delta": {}, "usage": {"output_tokens": 3}}),
        event(
            "message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}
        ),
        event("message_stop", {}),
    ]
    reply = read_stream(wire, "anthropic")
    assert reply.usage == {"input_tokens": 6, "output_tokens": 7}  # 7, never 1 + 3 + 7


def test_a_cut_answer_reports_finish_reason_length():
    short = answer_for(RUNNING_PROMPT, max_tokens=3)
    assert read_stream([wire_bytes(short, "openai")], "openai").finish_reason == "length"
    assert read_stream([wire_bytes(short, "anthropic")], "anthropic").finish_reason == "max_tokens"


def test_events_counts_the_dispatched_events():
    assert read_stream([encode('{"delta": "a"}') + comment() + encode("[DONE]")]).events == 2


def test_the_default_dialect_is_lesson():
    assert read_stream([encode('{"delta": "a"}'), encode("[DONE]")]) == Reply("a", True, events=2)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_heartbeat_comments_are_ignored(dialect):
    wire = wire_bytes(RUNNING, dialect, heartbeat_ms=15)
    assert b": ping" in wire
    assert read_stream([wire], dialect).text == RUNNING_ANSWER


# --- complete only after the end marker ---------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_reply_is_complete_only_after_the_end_marker(dialect):
    wire = wire_bytes(RUNNING, dialect)
    assert read_stream([wire], dialect).complete
    assert not read_stream([wire[:-1]], dialect).complete


def test_lesson_without_done_is_not_complete_even_with_all_text():
    wire = b"".join(encode(json.dumps({"delta": t})) for t in RUNNING.tokens)
    reply = read_stream([wire])
    assert reply.text == RUNNING_ANSWER and not reply.complete


@given(st.sampled_from(DIALECTS), token_lists, st.data())
@settings(max_examples=150, deadline=None)
def test_a_drop_at_any_byte_gives_a_prefix_of_the_answer_and_not_complete(dialect, tokens, data):
    wire = build_wire(tokens, dialect)
    n_bytes = data.draw(st.integers(0, len(wire) - 1))
    reply = read_stream([wire[:n_bytes]], dialect)
    assert "".join(tokens).startswith(reply.text)
    assert not reply.complete
    assert reply.error is None


# --- any cut, same answer ---------------------------------------------------------------


@given(st.sampled_from(DIALECTS), token_lists, finish_reasons, st.booleans(), st.data())
@settings(max_examples=150, deadline=None)
def test_every_cut_rebuilds_exactly_the_answer(dialect, tokens, finish, heartbeat, data):
    wire = build_wire(tokens, dialect, finish_reason=finish, heartbeat=heartbeat)
    chunks = data.draw(chunkings(wire, max_cuts=30))
    reply = read_stream(chunks, dialect)
    assert reply.text == "".join(tokens)
    assert reply.complete
    if tokens or dialect in ("openai", "anthropic", "responses"):  # lesson: on the last token
        assert reply.finish_reason == finish
    assert reply == read_stream([wire], dialect)


@given(st.sampled_from(DIALECTS), sim_answers(), st.data())
@settings(max_examples=100, deadline=None)
def test_every_cut_of_the_simulated_server_rebuilds_exactly_the_answer(dialect, answer, data):
    usage = OpenAIOptions(include_usage=True) if dialect == "openai" else None
    wire = wire_bytes(answer, dialect, options=usage, heartbeat_ms=25)
    chunks = data.draw(chunkings(wire, max_cuts=30))
    reply = read_stream(chunks, dialect)
    assert reply.text == answer.text
    assert reply.complete


@given(sim_answers())
@settings(max_examples=30, deadline=None)
def test_one_byte_pieces_rebuild_the_answer(answer):
    wire = wire_bytes(answer, "openai")
    assert read_stream([wire[i : i + 1] for i in range(len(wire))], "openai").text == answer.text


# --- errors ---------------------------------------------------------------------------------


def test_an_anthropic_error_event_becomes_reply_error_naming_the_event():
    wire = wire_bytes(RUNNING, "anthropic")
    first_three = b"".join(wire.split(b"\n\n")[i] + b"\n\n" for i in range(3))
    error = encode(
        json.dumps(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
        event="error",
    )
    reply = read_stream([first_three, error, wire], "anthropic")
    assert reply.error == "event 4 (error): server error: overloaded_error: Overloaded"
    assert not reply.complete
    assert reply.text == "Your"


def test_malformed_json_becomes_reply_error_naming_the_event_and_its_data():
    wire = encode('{"delta": "a"}') + encode('{"delta": "b') + encode("[DONE]")
    reply = read_stream([wire])
    assert reply.error is not None
    assert reply.error.startswith("event 2 (message): malformed JSON")
    assert '{"delta": "b' in reply.error
    assert reply.text == "a"
    assert not reply.complete


def test_after_an_error_the_rest_of_the_stream_is_ignored_and_the_reply_not_complete():
    reader = StreamReader()
    assert reader.feed(encode("not json")) == []
    assert reader.feed(encode('{"delta": "late"}') + encode("[DONE]")) == []
    reply = reader.close()
    assert reply.text == "" and not reply.complete and reply.events == 1


def test_an_event_over_max_event_bytes_becomes_reply_error():
    reply = read_stream([encode('{"delta": "' + "x" * 500 + '"}')], max_event_bytes=100)
    assert reply.error is not None and "max_event_bytes=100" in reply.error
    assert not reply.complete


OVERSIZED = encode('{"delta": "' + "x" * 200 + '"}')


def test_the_deltas_before_an_oversized_event_in_the_same_chunk_are_kept():
    wire = encode('{"delta": "a"}') + encode('{"delta": "b"}') + OVERSIZED
    reader = StreamReader(max_event_bytes=100)
    assert reader.feed(wire) == ["a", "b"]
    reply = reader.close()
    assert reply.text == "ab" and reply.events == 2 and not reply.complete
    assert reply.error is not None and reply.error.startswith("event 3: ")


@given(token_lists, st.integers(0, 12), st.booleans(), st.data())
@settings(max_examples=150, deadline=None)
def test_every_cut_gives_the_same_reply_when_an_event_is_over_the_limit(
    tokens, where, done_first, data
):
    events = [encode(json.dumps({"delta": token})) for token in tokens]
    where = min(where, len(events))
    before = [*events[:where], encode("[DONE]")] if done_first else events[:where]
    wire = b"".join([*before, OVERSIZED, *events[where:], encode("[DONE]")])
    whole = read_stream([wire], max_event_bytes=150)
    assert whole.text == "".join(tokens[:where])
    assert whole.complete == done_first and (whole.error is None) == done_first
    chunks = data.draw(chunkings(wire, max_cuts=30))
    assert read_stream(chunks, max_event_bytes=150) == whole


def test_events_after_the_end_marker_are_ignored():
    wire = encode('{"delta": "a"}') + encode("[DONE]") + encode('{"delta": "b"}')
    assert read_stream([wire]).text == "a"


def test_an_unknown_dialect_is_refused_up_front():
    with pytest.raises(ValueError, match="lesson"):
        StreamReader("gemini")


# --- the incremental reader ------------------------------------------------------------------


def test_stream_reader_feed_returns_the_deltas_each_chunk_completes():
    reader = StreamReader("openai")
    pieces = [data for _, data in stream_writes(RUNNING, "openai")]
    per_write = [reader.feed(piece) for piece in pieces]
    assert [d for d in per_write if d] == [[t] for t in RUNNING.tokens]
    assert reader.complete and reader.text == RUNNING_ANSWER


def test_stream_reader_shows_a_delta_only_once_its_event_is_whole():
    reader = StreamReader()
    assert reader.feed(b'data: {"delta": "Hi"}\n') == []
    assert reader.text == ""
    assert reader.feed(b"\n") == ["Hi"]
    assert reader.text == "Hi"


def test_stream_reader_reply_is_a_frozen_snapshot():
    reader = StreamReader()
    reader.feed(encode('{"delta": "a"}'))
    snapshot = reader.reply
    reader.feed(encode('{"delta": "b"}'))
    assert snapshot.text == "a" and reader.reply.text == "ab"
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.text = "x"  # type: ignore[misc]


def test_close_drops_an_unfinished_event():
    reader = StreamReader()
    reader.feed(encode('{"delta": "a"}') + b'data: {"delta": "b"}\n')
    assert reader.close() == Reply("a", False, events=1)


@pytest.mark.parametrize("whole", [b"data: [DONE]\n\n", "data: [DONE]\n\n"])
def test_one_bytes_or_str_object_instead_of_a_chunk_list_gets_an_error_that_says_to_wrap_it(whole):
    with pytest.raises(TypeError, match=r"wrap it in a list \(\[wire\]\)"):
        read_stream(whole)


def test_feeding_text_to_a_stream_reader_says_to_encode_it():
    with pytest.raises(TypeError, match="encode text first"):
        StreamReader("lesson").feed("data: [DONE]\n\n")
