"""The official SDKs, httpx-sse and curl against lessonkit serve, with timing seen at the client.

The session server runs at prefill 200 ms and 50 ms per token, so the first token
is due 250 ms after the request. The timing checks have no upper bound, so a busy
machine cannot fail them: the first token comes no earlier than 0.9 x that, and the
tokens come paced (several separate reads, gaps near 50 ms; tests/support/pacing.py).
A buffer that held the tokens back would deliver them in one read, every gap ~0.
"""

from __future__ import annotations

import subprocess
import time

import anthropic
import httpx
import openai
import pacing
import processes
import pytest
from httpx_sse import connect_sse

from lessonkit.core import llm, network
from lessonkit.core.client import read_stream

pytestmark = pytest.mark.server

PROMPT = "Tell me everything about my parcel."
N_TOKENS = 12  # max_tokens for timed runs: 200 + 12 * 50 = 800 ms each
EXPECTED = llm.answer_for(PROMPT, max_tokens=N_TOKENS)
MESSAGES = [{"role": "user", "content": PROMPT}]


@pytest.fixture
def paced_run(server_pace_ms):
    """Return run(measure): the first of three measurements whose timing keeps the server's pace.

    `measure()` returns (sent_s, token_arrivals_s, anything else): `sent_s` a time no later
    than when the request was sent. A stall of the machine longer than the answer squeezes
    one run into a burst; a client or server that holds tokens back bursts every time.
    """
    prefill_ms, per_token_ms = server_pace_ms

    def check(measured: tuple) -> None:
        sent_s, token_arrivals_s = measured[0], measured[1]
        assert len(token_arrivals_s) >= 5
        ttft_ms = (token_arrivals_s[0] - sent_s) * 1000
        due_ms = prefill_ms + per_token_ms
        assert ttft_ms >= 0.9 * due_ms, f"first token after {ttft_ms:.0f} ms"
        pacing.assert_paced(token_arrivals_s, per_token_ms / 1000)

    return lambda measure: pacing.paced_in_one_of(measure, check)


@pytest.fixture
def openai_client(server_url):
    with openai.OpenAI(base_url=server_url + "/v1", api_key="x", max_retries=0) as client:
        yield client


@pytest.fixture
def anthropic_client(server_url):
    with anthropic.Anthropic(base_url=server_url, api_key="x", max_retries=0) as client:
        yield client


FAST_QUERY = {"prefill_ms": "5", "per_token_ms": "2"}


# --------------------------------------------------------------------------- openai


def test_openai_sdk_streams_tokens_as_they_are_generated(openai_client, paced_run):
    # warm up: the SDK builds its chunk models on first use, which is not the server's time
    list(
        openai_client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, max_tokens=1, extra_query=FAST_QUERY
        )
    )

    def measure():
        start = time.monotonic()
        stream = openai_client.chat.completions.create(
            model="lessonkit-sim", messages=MESSAGES, stream=True, max_tokens=N_TOKENS
        )
        texts, arrivals = [], []
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append(time.monotonic())
                texts.append(chunk.choices[0].delta.content)
        return start, arrivals, texts

    _, _, texts = paced_run(measure)
    assert "".join(texts) == EXPECTED.text


def test_openai_sdk_stream_ends_with_finish_reason_length_under_max_tokens(openai_client):
    stream = openai_client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, max_tokens=3, extra_query=FAST_QUERY
    )
    finishes = [c.choices[0].finish_reason for c in stream if c.choices]
    assert finishes[-1] == "length"


def test_openai_sdk_non_streaming_create(openai_client):
    completion = openai_client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": llm.RUNNING_PROMPT}],
        extra_query=FAST_QUERY,
    )
    assert completion.choices[0].message.content == llm.RUNNING_ANSWER
    assert completion.usage.completion_tokens == 6


def test_openai_sdk_include_usage_gives_a_usage_chunk(openai_client):
    stream = openai_client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": llm.RUNNING_PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
        extra_query=FAST_QUERY,
    )
    usages = [chunk.usage for chunk in stream if chunk.usage]
    assert [u.total_tokens for u in usages] == [12]


def test_openai_stream_helper_events_and_final_completion(openai_client):
    with openai_client.chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": llm.RUNNING_PROMPT}],
        extra_query=FAST_QUERY,
    ) as stream:
        deltas = [event.delta for event in stream if event.type == "content.delta"]
        final = stream.get_final_completion()
    assert "".join(deltas) == llm.RUNNING_ANSWER
    assert final.choices[0].message.content == llm.RUNNING_ANSWER
    assert final.choices[0].finish_reason == "stop"


def test_openai_sdk_raises_bad_request_with_the_servers_message(openai_client):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.chat.completions.create(model="m", messages=[])
    assert caught.value.status_code == 400
    assert "at least one message" in caught.value.message


def test_openai_sdk_lists_models(openai_client):
    assert [m.id for m in openai_client.models.list()] == ["lessonkit-sim"]


# --------------------------------------------------------------------------- openai: Responses API

FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed", "error")


def _sdk_reading(events) -> tuple[str, str | None, list[float]]:
    """Return (text, last event type, when each text delta arrived) of a Responses stream.

    The last type is "cut" when the body ended early (the SDK raises APIConnectionError).
    """
    text, kind, arrivals = "", None, []
    try:
        for event in events:
            kind = event.type
            if event.type == "response.output_text.delta":
                arrivals.append(time.monotonic())
                text += event.delta
    except openai.APIConnectionError:
        kind = "cut"
    return text, kind, arrivals


def test_responses_create_stream_yields_typed_events_as_tokens_are_generated(
    openai_client, paced_run
):
    list(openai_client.responses.create(  # warm up the SDK's event models
        model="m", input=PROMPT, stream=True, max_output_tokens=1, extra_query=FAST_QUERY
    ))  # fmt: skip

    def measure():
        start = time.monotonic()
        events = openai_client.responses.create(
            model="lessonkit-sim", input=PROMPT, stream=True, max_output_tokens=N_TOKENS
        )
        text, kind, arrivals = _sdk_reading(events)
        return start, arrivals, (text, kind)

    _, _, (text, kind) = paced_run(measure)
    assert (text, kind) == (EXPECTED.text, "response.incomplete")  # max_output_tokens cut it


def test_responses_stream_helper_gives_deltas_and_the_final_response(openai_client):
    with openai_client.responses.stream(
        model="m", input=llm.RUNNING_PROMPT, extra_query=FAST_QUERY
    ) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == llm.RUNNING_ANSWER
    assert (final.status, final.usage.output_tokens) == ("completed", 6)


def test_responses_non_streamed_create_returns_the_answer_as_output_text(openai_client):
    response = openai_client.responses.create(
        model="m", input=llm.RUNNING_PROMPT, instructions="Be brief.", extra_query=FAST_QUERY
    )
    assert (response.output_text, response.status) == (llm.RUNNING_ANSWER, "completed")
    assert response.usage.total_tokens == 12


@pytest.mark.parametrize(
    ("options", "last", "text"),
    [
        ({"max_output_tokens": 3}, "response.incomplete", "Your order ships"),
        ({"extra_query": {**FAST_QUERY, "fail_after_tokens": 2}}, "response.failed", "Your order"),
    ],
    ids=["incomplete", "failed"],
)
def test_responses_create_stream_yields_the_end_of_an_unfinished_answer_without_raising(
    openai_client, options, last, text
):
    events = openai_client.responses.create(
        model="m", input=llm.RUNNING_PROMPT, stream=True, **{"extra_query": FAST_QUERY, **options}
    )
    assert _sdk_reading(events)[:2] == (text, last)


@pytest.mark.parametrize(
    "options",
    [{"max_output_tokens": 3}, {"extra_query": {**FAST_QUERY, "fail_after_tokens": 2}},
     {"extra_query": {**FAST_QUERY, "drop_after_bytes": 2000}}],
    ids=["incomplete", "failed", "cut"],
)  # fmt: skip
def test_responses_stream_helpers_final_response_raises_when_the_answer_did_not_complete(
    openai_client, options
):
    with openai_client.responses.stream(
        model="m", input=llm.RUNNING_PROMPT, **{"extra_query": FAST_QUERY, **options}
    ) as stream:
        with pytest.raises((RuntimeError, openai.APIConnectionError)):
            stream.get_final_response()


def test_responses_sdk_raises_bad_request_with_the_servers_message(openai_client):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.responses.create(model="m", input=[])
    assert caught.value.status_code == 400
    assert "at least one item" in caught.value.message


@pytest.mark.parametrize(
    "query", [{}, {"fail_after_tokens": "3"}, {"drop_after_bytes": "1800"}],
    ids=["completed", "failed", "dropped"],
)  # fmt: skip
def test_the_reader_on_every_cut_of_a_recorded_stream_agrees_with_the_sdks_iteration(
    server_url, openai_client, read_raw, query
):
    params = {**FAST_QUERY, **query}
    recorded, _ = read_raw("POST", server_url + "/v1/responses", params=params,
                           json={"model": "m", "input": llm.RUNNING_PROMPT, "stream": True})  # fmt: skip
    events = openai_client.responses.create(
        model="m", input=llm.RUNNING_PROMPT, stream=True, extra_query=params
    )
    text, last, _ = _sdk_reading(events)
    assert last == {"fail_after_tokens": "response.failed", "drop_after_bytes": "cut"}.get(
        next(iter(query), None), "response.completed"
    )
    whole = read_stream([recorded], "responses")
    assert whole.text == text
    assert whole.complete == (last == "response.completed")
    assert (whole.error is not None) == (last == "response.failed")
    for chunks in network.every_cut(recorded):
        assert read_stream(chunks, "responses") == whole


# --------------------------------------------------------------------------- anthropic


def test_anthropic_sdk_stream_helper_paces_text_and_builds_the_final_message(
    anthropic_client, paced_run
):
    with anthropic_client.messages.stream(  # warm up the SDK, as above
        model="m", max_tokens=1, messages=MESSAGES, extra_query=FAST_QUERY
    ) as stream:
        stream.get_final_message()

    def measure():
        start = time.monotonic()
        arrivals, texts = [], []
        with anthropic_client.messages.stream(
            model="lessonkit-sim", max_tokens=N_TOKENS, messages=MESSAGES
        ) as stream:
            for text in stream.text_stream:
                arrivals.append(time.monotonic())
                texts.append(text)
            return start, arrivals, (texts, stream.get_final_message())

    _, _, (texts, message) = paced_run(measure)
    assert "".join(texts) == EXPECTED.text
    assert message.content[0].text == EXPECTED.text
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == N_TOKENS


def test_anthropic_sdk_raw_stream_events_in_order(anthropic_client):
    events = anthropic_client.messages.create(
        model="m",
        max_tokens=100,
        messages=[{"role": "user", "content": llm.RUNNING_PROMPT}],
        stream=True,
        extra_query=FAST_QUERY,
    )
    kinds = [event.type for event in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert kinds.count("content_block_delta") == 6


def test_anthropic_sdk_non_streaming_create(anthropic_client):
    message = anthropic_client.messages.create(
        model="m",
        max_tokens=100,
        system="You are a helpful shop assistant.",
        messages=[{"role": "user", "content": llm.RUNNING_PROMPT}],
        extra_query=FAST_QUERY,
    )
    assert message.content[0].text == llm.RUNNING_ANSWER
    assert message.stop_reason == "end_turn"


def test_anthropic_sdk_raises_bad_request_with_the_servers_message(anthropic_client):
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_client.messages.create(model="m", max_tokens=0, messages=MESSAGES)
    assert "max_tokens" in str(caught.value)


# --------------------------------------------------------------------------- httpx-sse


def test_httpx_sse_reads_ids_and_tokens_on_time(server_url, paced_run):
    params = {"prompt": PROMPT, "max_tokens": str(N_TOKENS)}

    def measure():
        arrivals, events = [], []
        with httpx.Client(timeout=30) as client:
            client.get(server_url + "/v1/models")  # open the connection before the clock runs
            start = time.monotonic()
            with connect_sse(client, "GET", server_url + "/v1/stream", params=params) as source:
                for sse in source.iter_sse():
                    events.append(sse)
                    if sse.event == "message" and sse.data:  # (also retry-only blocks come)
                        arrivals.append(time.monotonic())
        return start, arrivals, events

    _, _, events = paced_run(measure)
    tokens = [e for e in events if e.event == "message" and e.data]
    assert [e.id for e in tokens] == [str(i) for i in range(N_TOKENS)]
    assert events[-1].event == "done" and events[-1].data == "[DONE]"


def test_httpx_sse_sees_the_retry_field(server_url):
    with httpx.Client(timeout=30) as client:
        with connect_sse(client, "GET", server_url + "/v1/stream", params=FAST_QUERY) as source:
            retries = [sse.retry for sse in source.iter_sse() if sse.retry is not None]
    # httpx-sse dispatches the retry-only block as an (empty) event of its own
    assert retries == [3000]


# --------------------------------------------------------------------------- curl


def _curl(*args: str) -> subprocess.Popen:
    return processes.start(
        ["curl", "-sS", "-N", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_curl_no_buffer_prints_each_token_when_it_is_generated(server_url, paced_run):
    query = f"max_tokens={N_TOKENS}&prompt=Tell%20me%20everything%20about%20my%20parcel."

    def measure():
        launched = time.monotonic()
        process = _curl(f"{server_url}/v1/stream?{query}")
        arrivals, lines = [], []
        for line in process.stdout:
            if line.startswith(b"data: {"):
                arrivals.append(time.monotonic())
            lines.append(line)
        assert process.wait(timeout=30) == 0
        return launched, arrivals, lines

    _, _, lines = paced_run(measure)
    assert read_stream([b"".join(lines)], "eventsource").text == EXPECTED.text


def test_curl_resumes_with_a_last_event_id_header(server_url):
    url = server_url + "/v1/stream?prefill_ms=5&per_token_ms=2"
    process = _curl("-H", "Last-Event-ID: 2", url)
    out, _ = process.communicate(timeout=30)
    reply = read_stream([out], "eventsource")
    assert reply.text == " on Monday." and reply.complete


def test_curl_reports_a_dropped_stream_as_a_transfer_error(server_url):
    url = server_url + "/v1/stream?prefill_ms=5&per_token_ms=2&drop_after_bytes=50"
    process = _curl(url)
    out, err = process.communicate(timeout=30)
    assert len(out) == 50
    assert process.returncode == 18  # CURLE_PARTIAL_FILE: the body ended early
