"""lessonkit.core.llm: the deterministic simulated model and the bytes it writes, checked
against our own stream reader and the official SDKs' pydantic models."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anthropic
import anthropic.types
import httpx
import httpx2
import openai
import openai.types.chat
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit.core.client import read_stream
from lessonkit.core.llm import (
    DIALECTS,
    RUNNING_ANSWER,
    RUNNING_PROMPT,
    Answer,
    Envelope,
    EventSourceOptions,
    OpenAIOptions,
    Timing,
    answer_for,
    blocking_body,
    long_answer,
    stream_writes,
    token_times_ms,
    tokenize,
    wire_bytes,
)
from lessonkit.core.network import cut, random_cuts
from lessonkit.core.sse import decode_all

RUNNING = answer_for(RUNNING_PROMPT)
CUT_SHORT = answer_for("Where is my parcel right now?", max_tokens=5)
ANTHROPIC_EVENTS = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)

seeds = st.integers(min_value=0, max_value=2**32)
dialects = st.sampled_from(DIALECTS)


def events_of(answer: Answer, dialect: str, **options):
    """Return the events of the answer's wire; the options are wire_bytes' own."""
    return decode_all([wire_bytes(answer, dialect, **options)])


def with_usage(dialect: str) -> OpenAIOptions | None:
    """Return include_usage for "openai" (the dialect that has the option), else None."""
    return OpenAIOptions(include_usage=True) if dialect == "openai" else None


# --- tokenize -----------------------------------------------------------------------


def test_tokenize_splits_the_running_answer_like_the_lesson():
    assert tokenize(RUNNING_ANSWER) == ["Your", " order", " ships", " on", " Monday", "."]


def test_tokenize_keeps_a_non_ascii_word_whole_with_its_leading_space():
    assert tokenize("Your café order") == ["Your", " café", " order"]


def test_tokenize_puts_punctuation_in_its_own_tokens():
    assert tokenize("Hi, you!") == ["Hi", ",", " you", "!"]


@given(st.text())
def test_tokenize_pieces_always_join_back_to_the_text(text):
    tokens = tokenize(text)
    assert "".join(tokens) == text
    assert all(tokens)


# --- answers ------------------------------------------------------------------------


def test_answer_for_the_running_prompt_is_the_running_answer():
    assert RUNNING.text == RUNNING_ANSWER
    assert RUNNING.finish_reason == "stop"


def test_prompt_tokens_counts_the_prompts_tokens():
    assert RUNNING.prompt_tokens == len(tokenize(RUNNING_PROMPT)) == 6


def test_answer_for_another_prompt_is_40_to_80_tokens_of_whole_sentences():
    for prompt in ["hello", "Can I change the address?", "Why stream tokens?", "ñ"]:
        answer = answer_for(prompt)
        assert 40 <= len(answer.tokens) <= 80, prompt
        assert answer.text.endswith(".")
        assert answer.tokens == tuple(tokenize(answer.text))


def test_answer_for_the_same_prompt_is_the_same_answer():
    assert answer_for("Is shipping free?") == answer_for("Is shipping free?")


def test_answer_for_different_prompts_differ():
    texts = {answer_for(f"question {i}").text for i in range(10)}
    assert len(texts) > 5


def test_answer_for_does_not_depend_on_pythons_hash_seed():
    code = "from lessonkit.core.llm import answer_for; print(answer_for('Is shipping free?').text)"
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(run.stdout)
    assert outputs == {answer_for("Is shipping free?").text + "\n"}


def test_max_tokens_below_the_answer_length_cuts_it_with_finish_reason_length():
    answer = answer_for(RUNNING_PROMPT, max_tokens=3)
    assert answer.tokens == ("Your", " order", " ships")
    assert answer.finish_reason == "length"


def test_max_tokens_at_or_above_the_answer_length_keeps_finish_reason_stop():
    assert answer_for(RUNNING_PROMPT, max_tokens=6) == RUNNING


@pytest.mark.parametrize("max_tokens", [0, -3])
def test_max_tokens_below_one_is_refused(max_tokens):
    with pytest.raises(ValueError, match="at least 1"):
        answer_for(RUNNING_PROMPT, max_tokens=max_tokens)


@given(st.integers(min_value=0, max_value=600), seeds)
def test_long_answer_has_exactly_n_tokens(n_tokens, seed):
    answer = long_answer(n_tokens, seed)
    assert len(answer.tokens) == n_tokens
    assert answer.finish_reason == "stop"


def test_long_answer_ends_with_a_full_stop_and_is_seeded():
    answer = long_answer(500, seed=2)
    assert answer.text.endswith(".")
    assert answer == long_answer(500, seed=2) != long_answer(500, seed=3)


def test_answer_usage_adds_prompt_and_completion_tokens():
    assert RUNNING.usage() == {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}


def test_answer_refuses_an_unknown_finish_reason():
    with pytest.raises(ValueError, match="finish_reason"):
        Answer(("a",), "tired", 0)


# --- token times --------------------------------------------------------------------


def test_token_i_is_generated_at_prefill_plus_i_plus_one_per_token():
    assert token_times_ms(6) == [340.0, 380.0, 420.0, 460.0, 500.0, 540.0]


def test_the_500_token_answer_takes_20300_ms():
    assert token_times_ms(500, prefill_ms=300, per_token_ms=40)[-1] == 20_300


@given(st.integers(min_value=0, max_value=200), st.floats(min_value=0, max_value=300), seeds)
def test_jitter_never_makes_token_times_go_backwards_or_early(n_tokens, jitter_ms, seed):
    times = token_times_ms(n_tokens, jitter_ms=jitter_ms, seed=seed)
    assert times == sorted(times)
    assert all(t >= base for t, base in zip(times, token_times_ms(n_tokens), strict=True))


def test_jitter_is_the_same_for_the_same_seed():
    assert token_times_ms(20, jitter_ms=30, seed=1) == token_times_ms(20, jitter_ms=30, seed=1)
    assert token_times_ms(20, jitter_ms=30, seed=1) != token_times_ms(20, jitter_ms=30, seed=2)


@pytest.mark.parametrize("options", [{"prefill_ms": -1}, {"per_token_ms": -1}, {"jitter_ms": -1}])
def test_token_times_refuses_negative_durations(options):
    with pytest.raises(ValueError, match="0 or more"):
        token_times_ms(3, **options)


# --- stream_writes: timing ----------------------------------------------------------


def test_the_lesson_dialect_writes_each_token_at_its_time_then_done_with_the_last():
    writes = list(stream_writes(RUNNING, "lesson"))
    assert [at for at, _ in writes] == [340.0, 380.0, 420.0, 460.0, 500.0, 540.0, 540.0]
    assert writes[0][1] == b'data: {"delta":"Your"}\n\n'
    assert writes[-1][1] == b"data: [DONE]\n\n"


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "eventsource"])
def test_opening_writes_go_out_at_zero_ms_before_any_text(dialect):
    first_at, first = next(iter(stream_writes(RUNNING, dialect)))
    assert first_at == 0.0
    assert read_stream([first], dialect).text == ""


@given(
    dialects,
    st.floats(min_value=0, max_value=200),
    seeds,
    st.none() | st.floats(min_value=1, max_value=500),
)
def test_write_times_never_go_down_in_any_dialect(dialect, jitter_ms, seed, heartbeat_ms):
    times = [
        at
        for at, _ in stream_writes(
            RUNNING,
            dialect,
            timing=Timing(jitter_ms=jitter_ms, seed=seed),
            heartbeat_ms=heartbeat_ms,
        )
    ]
    assert times == sorted(times)


def test_heartbeats_fill_the_prefill_silence_with_ping_comments():
    writes = list(stream_writes(RUNNING, "lesson", heartbeat_ms=100))
    pings = [at for at, data in writes if data == b": ping\n\n"]
    assert pings == [100.0, 200.0, 300.0]


def test_no_heartbeat_is_sent_while_tokens_come_faster_than_heartbeat_ms():
    writes = list(stream_writes(long_answer(50), "openai", heartbeat_ms=100))
    pings = [at for at, data in writes if data.startswith(b":")]
    assert all(at <= 300 for at in pings)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_heartbeats_are_only_comments_and_dispatch_no_event(dialect):
    plain = events_of(RUNNING, dialect)
    assert events_of(RUNNING, dialect, heartbeat_ms=50) == plain


def test_an_answer_with_no_tokens_ends_right_after_prefill():
    empty = Answer((), "stop", 3)
    writes = list(stream_writes(empty, "openai", timing=Timing(prefill_ms=250)))
    assert writes[-1] == (250.0, b"data: [DONE]\n\n")


# --- stream_writes: read back -------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("answer", [RUNNING, CUT_SHORT, long_answer(120, seed=4)])
def test_every_dialect_reads_back_to_the_whole_answer(dialect, answer):
    reply = read_stream([wire_bytes(answer, dialect, options=with_usage(dialect))], dialect)
    assert (reply.text, reply.complete, reply.error) == (answer.text, True, None)


@pytest.mark.parametrize("dialect", ["lesson", "openai", "eventsource"])
@pytest.mark.parametrize("answer", [RUNNING, CUT_SHORT])
def test_the_finish_reason_arrives_as_stop_or_length(dialect, answer):
    reply = read_stream([wire_bytes(answer, dialect)], dialect)
    assert reply.finish_reason == answer.finish_reason


def test_anthropic_says_end_turn_or_max_tokens():
    assert read_stream([wire_bytes(RUNNING, "anthropic")], "anthropic").finish_reason == "end_turn"
    reply = read_stream([wire_bytes(CUT_SHORT, "anthropic")], "anthropic")
    assert reply.finish_reason == "max_tokens"


def test_openai_usage_arrives_only_with_include_usage():
    assert read_stream([wire_bytes(RUNNING, "openai")], "openai").usage is None
    reply = read_stream(
        [wire_bytes(RUNNING, "openai", options=OpenAIOptions(include_usage=True))], "openai"
    )
    assert reply.usage == RUNNING.usage()


def test_anthropic_usage_reports_input_and_output_tokens():
    reply = read_stream([wire_bytes(CUT_SHORT, "anthropic")], "anthropic")
    assert reply.usage == {"input_tokens": CUT_SHORT.prompt_tokens, "output_tokens": 5}


@settings(max_examples=60)
@given(dialects, seeds, st.integers(min_value=1, max_value=40))
def test_every_dialect_reads_back_the_same_whatever_the_cuts(dialect, seed, max_piece_bytes):
    wire = wire_bytes(CUT_SHORT, dialect, options=with_usage(dialect), heartbeat_ms=10)
    whole = read_stream([wire], dialect)
    assert read_stream(random_cuts(wire, seed, max_piece_bytes), dialect) == whole


def test_non_ascii_text_goes_out_as_raw_utf8_not_escapes():
    answer = Answer(tuple(tokenize("Your café order")), "stop", 1)
    wire = wire_bytes(answer, "openai")
    assert " café".encode() in wire and b"\\u00e9" not in wire
    assert read_stream(cut(wire, 1), "openai").text == "Your café order"


def test_an_unknown_dialect_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="lesson, openai, anthropic, eventsource"):
        list(stream_writes(RUNNING, "grpc"))


def test_response_id_model_and_created_go_into_every_openai_chunk():
    envelope = Envelope(response_id="chatcmpl-42", model="tiny", created=123)
    for event in events_of(RUNNING, "openai", envelope=envelope)[:-1]:
        chunk = json.loads(event.data)
        assert (chunk["id"], chunk["model"], chunk["created"]) == ("chatcmpl-42", "tiny", 123)


# --- the official SDKs' models ------------------------------------------------------


@pytest.mark.parametrize("answer", [RUNNING, CUT_SHORT])
def test_every_openai_chunk_is_a_valid_sdk_chat_completion_chunk(answer):
    events = events_of(answer, "openai", options=OpenAIOptions(include_usage=True))
    assert events[-1].data == "[DONE]"
    chunks = [
        openai.types.chat.ChatCompletionChunk.model_validate_json(e.data) for e in events[:-1]
    ]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == answer.text
    assert chunks[-2].choices[0].finish_reason == answer.finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == sum(
        [answer.prompt_tokens, len(answer.tokens)]
    )


@pytest.mark.parametrize("answer", [RUNNING, CUT_SHORT])
def test_every_anthropic_event_is_a_valid_sdk_stream_event_named_by_its_type(answer):
    events = events_of(answer, "anthropic")
    parsed = [ANTHROPIC_EVENTS.validate_json(e.data) for e in events]
    assert [e.event for e in events] == [p.type for p in parsed]
    assert [p.type for p in parsed][:2] == ["message_start", "content_block_start"]
    assert [p.type for p in parsed][-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(p.delta.text for p in parsed if p.type == "content_block_delta")
    assert text == answer.text
    assert parsed[-2].usage.output_tokens == len(answer.tokens)


def test_blocking_openai_body_is_a_valid_sdk_chat_completion():
    at_ms, body = blocking_body(CUT_SHORT, "openai")
    completion = openai.types.chat.ChatCompletion.model_validate_json(body)
    assert completion.choices[0].message.content == CUT_SHORT.text
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 5


def test_blocking_anthropic_body_is_a_valid_sdk_message():
    _, body = blocking_body(RUNNING, "anthropic")
    message = anthropic.types.Message.model_validate_json(body)
    assert message.content[0].text == RUNNING_ANSWER
    assert (message.stop_reason, message.usage.output_tokens) == ("end_turn", 6)


def test_blocking_lesson_body_carries_text_and_finish_reason():
    _, body = blocking_body(CUT_SHORT, "lesson")
    obj = json.loads(body)
    assert (obj["text"], obj["finish_reason"]) == (CUT_SHORT.text, "length")


def test_a_blocking_body_is_ready_only_when_the_last_token_exists():
    assert blocking_body(RUNNING, "openai")[0] == 540.0
    assert blocking_body(long_answer(500), "lesson", timing=Timing(300, 40))[0] == 20_300


def test_eventsource_has_no_blocking_body():
    with pytest.raises(ValueError, match="streaming-only"):
        blocking_body(RUNNING, "eventsource")


# --- eventsource: ids, retry and resume ---------------------------------------------


def test_eventsource_starts_with_retry_and_numbers_every_event():
    wire = wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(retry_ms=1500))
    assert wire.startswith(b"retry: 1500\n\n")
    events = decode_all([wire])
    assert [e.id for e in events] == ["0", "1", "2", "3", "4", "5", "6"]
    assert (events[-1].event, events[-1].data) == ("done", "[DONE]")


@pytest.mark.parametrize("last_id", [0, 2, 4, "3"])
def test_resuming_after_an_id_continues_with_no_gap_and_no_duplicate(last_id):
    k = int(last_id)
    before = "".join(RUNNING.tokens[: k + 1])
    resumed = read_stream(
        [wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(last_id))], "eventsource"
    )
    assert before + resumed.text == RUNNING_ANSWER
    assert resumed.complete


def test_resuming_restarts_the_clock_with_a_new_prefill():
    writes = list(
        stream_writes(RUNNING, "eventsource", options=EventSourceOptions(3, retry_ms=None))
    )
    assert [at for at, _ in writes] == [340.0, 380.0, 380.0]


def test_resuming_after_the_last_token_sends_only_the_end():
    reply = read_stream(
        [wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(5))], "eventsource"
    )
    assert (reply.text, reply.complete) == ("", True)


@pytest.mark.parametrize("last_id", range(len(RUNNING.tokens)))
def test_every_resumed_eventsource_event_carries_an_id(last_id):
    events = decode_all([wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(last_id))])
    assert events and all(e.id for e in events)


def test_resuming_after_the_last_token_repeats_its_id_on_the_finish_event():
    last_id = len(RUNNING.tokens) - 1
    events = decode_all([wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(last_id))])
    assert [(e.event, e.id) for e in events] == [("message", "5"), ("done", "6")]
    assert json.loads(events[0].data) == {"delta": "", "finish_reason": "stop"}


def test_end_after_tokens_ends_the_body_after_those_tokens_with_no_end_event():
    events = decode_all(
        [wire_bytes(RUNNING, "eventsource", options=EventSourceOptions(end_after_tokens=2))]
    )
    assert [(e.event, e.id) for e in events] == [("message", "0"), ("message", "1")]
    assert all("finish_reason" not in json.loads(e.data) for e in events)


def test_an_early_end_plays_its_tokens_at_their_times_and_nothing_after():
    options = EventSourceOptions(retry_ms=None, end_after_tokens=2)
    assert [at for at, _ in stream_writes(RUNNING, "eventsource", options=options)] == [
        340.0,
        380.0,
    ]


@pytest.mark.parametrize(
    ("last_id", "sent"), [(0, ["1"]), (1, ["2", "3", "4", "5", "6"]), (4, ["5", "6"])]
)
def test_a_resume_is_cut_only_where_it_starts_before_the_end(last_id, sent):
    options = EventSourceOptions(last_id, end_after_tokens=2)
    events = decode_all([wire_bytes(RUNNING, "eventsource", options=options)])
    assert [e.id for e in events] == sent


def test_an_end_past_the_answer_sends_the_whole_answer():
    options = EventSourceOptions(end_after_tokens=len(RUNNING.tokens))
    assert read_stream(
        [wire_bytes(RUNNING, "eventsource", options=options)], "eventsource"
    ).complete


@pytest.mark.parametrize("end", [0, -1, 2.5, True, "3"])
def test_an_end_that_is_not_a_whole_number_of_tokens_is_refused(end):
    with pytest.raises(ValueError, match="end_after_tokens must be a whole number, 1 or more"):
        EventSourceOptions(end_after_tokens=end)


def test_a_resume_id_that_is_not_a_token_index_is_refused_when_the_options_are_made():
    with pytest.raises(ValueError, match="token index"):
        EventSourceOptions(resume_after_id="abc")


@pytest.mark.parametrize("retry_ms", [-1, 1.5, True, "3000"])
def test_a_retry_that_is_not_a_whole_number_of_ms_is_refused(retry_ms):
    with pytest.raises(ValueError, match="retry_ms must be a whole number"):
        EventSourceOptions(retry_ms=retry_ms)


@pytest.mark.parametrize(
    ("dialect", "options", "owner"),
    [
        ("openai", EventSourceOptions(2), "eventsource"),
        ("lesson", EventSourceOptions(2), "eventsource"),
        ("anthropic", OpenAIOptions(include_usage=True), "openai"),
        ("eventsource", OpenAIOptions(), "openai"),
    ],
)
def test_one_dialects_options_are_refused_in_another_naming_their_dialect(dialect, options, owner):
    with pytest.raises(ValueError, match=f"only applies to the '{owner}' dialect"):
        list(stream_writes(RUNNING, dialect, options=options))


# --- the options objects ------------------------------------------------------------


def test_timing_gives_the_same_times_as_token_times_ms():
    timing = Timing(prefill_ms=120, per_token_ms=15, jitter_ms=30, seed=7)
    expected = token_times_ms(9, prefill_ms=120, per_token_ms=15, jitter_ms=30, seed=7)
    assert timing.token_times_ms(9) == expected
    assert timing.done_ms(9) == expected[-1]
    assert timing.done_ms(0) == 120.0


@pytest.mark.parametrize(
    "options", [{"prefill_ms": -1}, {"per_token_ms": float("nan")}, {"jitter_ms": "5"}]
)
def test_timing_refuses_a_duration_that_is_not_ms_zero_or_more(options):
    name = next(iter(options))
    with pytest.raises(ValueError, match=f"{name} must be a number of ms, 0 or more"):
        Timing(**options)


def test_without_a_response_id_the_same_answer_gets_the_same_id():
    first = Envelope().id_for(RUNNING, "anthropic")
    assert first == Envelope().id_for(RUNNING, "anthropic") and first.startswith("msg_sim")
    assert Envelope().id_for(RUNNING, "openai").startswith("chatcmpl-sim")


# --- the official SDKs end to end, over an in-memory transport (no sockets) ---------


def sdk_handler(response_class, answer: Answer):
    """Return a transport handler that answers like our server, in 7-byte pieces."""

    def handle(request):
        body = json.loads(request.content)
        dialect = "anthropic" if request.url.path.endswith("/messages") else "openai"
        if body.get("stream"):
            include_usage = bool(body.get("stream_options", {}).get("include_usage"))
            usage = OpenAIOptions(include_usage=include_usage) if dialect == "openai" else None
            wire = wire_bytes(answer, dialect, options=usage, heartbeat_ms=10)
            headers = {"content-type": "text/event-stream"}
            return response_class(200, headers=headers, content=iter(cut(wire, 7)))
        _, json_body = blocking_body(answer, dialect)
        return response_class(200, headers={"content-type": "application/json"}, content=json_body)

    return handle


def openai_client(answer: Answer) -> openai.OpenAI:
    transport = httpx.MockTransport(sdk_handler(httpx.Response, answer))
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1", api_key="x", http_client=httpx.Client(transport=transport)
    )


def anthropic_client(answer: Answer) -> anthropic.Anthropic:
    # anthropic 2.x ships its own fork of httpx, httpx2, and accepts only its clients
    transport = httpx2.MockTransport(sdk_handler(httpx2.Response, answer))
    return anthropic.Anthropic(
        base_url="http://127.0.0.1:9", api_key="x", http_client=httpx2.Client(transport=transport)
    )


MESSAGES = [{"role": "user", "content": "Where is my parcel right now?"}]


def test_the_openai_sdk_streams_the_answer_with_finish_reason_and_usage():
    stream = openai_client(CUT_SHORT).chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == CUT_SHORT.text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 5


def test_the_openai_sdk_stream_helper_assembles_the_final_completion():
    answer = answer_for("Where is my parcel right now?")
    with openai_client(answer).chat.completions.stream(model="m", messages=MESSAGES) as stream:
        completion = stream.get_final_completion()
    assert completion.choices[0].message.content == answer.text
    assert completion.choices[0].finish_reason == "stop"


def test_the_openai_sdk_reads_the_blocking_body():
    completion = openai_client(RUNNING).chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == RUNNING_ANSWER


def test_the_anthropic_sdk_stream_helper_assembles_the_final_message():
    client = anthropic_client(CUT_SHORT)
    with client.messages.stream(model="m", max_tokens=5, messages=MESSAGES) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == message.content[0].text == CUT_SHORT.text
    assert (message.stop_reason, message.usage.output_tokens) == ("max_tokens", 5)


def test_the_anthropic_sdk_reads_the_blocking_body():
    message = anthropic_client(RUNNING).messages.create(model="m", max_tokens=50, messages=MESSAGES)
    assert message.content[0].text == RUNNING_ANSWER
