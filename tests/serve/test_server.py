"""lessonkit.server over real loopback HTTP: endpoints, headers, faults, stats, bad requests.

The official SDKs, curl and client-side timing are in test_server_sdks.py.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import processes
import pytest
import websockets
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lessonkit import server
from lessonkit.core import llm
from lessonkit.core.client import read_stream
from lessonkit.core.sse import decode_all
from lessonkit.serve import app, background, cli

pytestmark = pytest.mark.server

ASK = {"model": "lessonkit-sim", "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}]}
ASK_ANTHROPIC = {**ASK, "max_tokens": 100}
LONG_PROMPT = "Tell me everything about my parcel."  # a 40-80 token answer


# --------------------------------------------------------------------------- headers


def test_streams_carry_event_stream_no_cache_and_no_accel_buffering_headers(server_url, fast):
    for method, path, body in [
        ("GET", "/v1/stream", None),
        ("POST", "/v1/chat/completions", {**ASK, "stream": True}),
        ("POST", "/v1/messages", {**ASK_ANTHROPIC, "stream": True}),
    ]:
        with httpx.stream(method, server_url + path, params=fast, json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            assert response.headers["x-accel-buffering"] == "no"
            response.read()


def test_a_streamed_body_is_sent_chunked_not_with_a_content_length(server_url, fast):
    with httpx.stream("GET", server_url + "/v1/stream", params=fast) as response:
        assert response.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in response.headers
        response.read()


# --------------------------------------------------------------------------- OpenAI


def test_openai_stream_ends_with_done_and_spells_the_running_answer(server_url, fast, read_raw):
    body, clean = read_raw(
        "POST", server_url + "/v1/chat/completions", params=fast, json={**ASK, "stream": True}
    )
    reply = read_stream([body], "openai")
    assert clean and reply.complete
    assert reply.text == llm.RUNNING_ANSWER
    assert reply.finish_reason == "stop"
    assert body.endswith(b"data: [DONE]\n\n")


def test_openai_include_usage_adds_a_usage_chunk_with_empty_choices(server_url, fast, read_raw):
    request = {**ASK, "stream": True, "stream_options": {"include_usage": True}}
    body, _ = read_raw("POST", server_url + "/v1/chat/completions", params=fast, json=request)
    chunks = [json.loads(e.data) for e in decode_all([body]) if e.data != "[DONE]"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 6
    assert read_stream([body], "openai").usage["total_tokens"] == 12


def test_openai_without_include_usage_sends_no_usage_chunk(server_url, fast, read_raw):
    body, _ = read_raw(
        "POST", server_url + "/v1/chat/completions", params=fast, json={**ASK, "stream": True}
    )
    assert all(json.loads(e.data)["choices"] for e in decode_all([body]) if e.data != "[DONE]")


def test_openai_max_tokens_cuts_the_stream_with_finish_reason_length(server_url, fast, read_raw):
    request = {**ASK, "stream": True, "max_tokens": 2}
    body, _ = read_raw("POST", server_url + "/v1/chat/completions", params=fast, json=request)
    reply = read_stream([body], "openai")
    assert (reply.text, reply.finish_reason, reply.complete) == ("Your order", "length", True)


def test_openai_non_streaming_returns_one_chat_completion(server_url, fast):
    response = httpx.post(server_url + "/v1/chat/completions", params=fast, json=ASK)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    completion = response.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"]["content"] == llm.RUNNING_ANSWER
    assert completion["choices"][0]["finish_reason"] == "stop"


def test_openai_non_streaming_max_completion_tokens_gives_length(server_url, fast):
    response = httpx.post(
        server_url + "/v1/chat/completions", params=fast, json={**ASK, "max_completion_tokens": 3}
    )
    choice = response.json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("Your order ships", "length")


def test_openai_message_content_may_be_a_list_of_text_parts(server_url, fast):
    parts = [{"type": "text", "text": "When will my order "}, {"type": "text", "text": "arrive?"}]
    request = {"model": "m", "messages": [{"role": "user", "content": parts}]}
    response = httpx.post(server_url + "/v1/chat/completions", params=fast, json=request)
    assert response.json()["choices"][0]["message"]["content"] == llm.RUNNING_ANSWER


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_stream_goes_from_message_start_to_message_stop(server_url, fast, read_raw):
    body, clean = read_raw(
        "POST", server_url + "/v1/messages", params=fast, json={**ASK_ANTHROPIC, "stream": True}
    )
    events = decode_all([body])
    assert events[0].event == "message_start" and events[-1].event == "message_stop"
    reply = read_stream([body], "anthropic")
    assert clean and reply.complete and reply.text == llm.RUNNING_ANSWER


def test_anthropic_max_tokens_stops_with_stop_reason_max_tokens(server_url, fast):
    request = {**ASK_ANTHROPIC, "max_tokens": 1}
    message = httpx.post(server_url + "/v1/messages", params=fast, json=request).json()
    assert message["type"] == "message"
    assert message["content"] == [{"type": "text", "text": "Your"}]
    assert message["stop_reason"] == "max_tokens"


# --------------------------------------------------------------------------- EventSource


def test_eventsource_stream_starts_with_retry_and_puts_an_id_on_every_event(
    server_url, fast, read_raw
):
    body, _ = read_raw("GET", server_url + "/v1/stream", params=fast)
    assert body.startswith(b"retry: 3000\n\n")
    blocks = body.decode().split("\n\n")[1:-1]
    assert all("\nid: " in "\n" + block for block in blocks)
    events = decode_all([body])
    assert [e.id for e in events] == ["0", "1", "2", "3", "4", "5", "6"]
    assert events[-1].event == "done"


def test_eventsource_prompt_query_parameter_chooses_the_answer(server_url, fast, read_raw):
    body, _ = read_raw("GET", server_url + "/v1/stream", params={**fast, "prompt": LONG_PROMPT})
    assert read_stream([body], "eventsource").text == llm.answer_for(LONG_PROMPT).text


@pytest.mark.parametrize("last_id", range(6))
def test_last_event_id_header_resumes_with_no_gap_and_no_duplicate(
    server_url, fast, read_raw, last_id
):
    first, _ = read_raw("GET", server_url + "/v1/stream", params=fast)
    seen = [e for e in decode_all([first]) if e.event == "message" and int(e.id) <= last_id]
    rest, _ = read_raw(
        "GET", server_url + "/v1/stream", params=fast, headers={"Last-Event-ID": str(last_id)}
    )
    resumed_events = decode_all([rest])
    assert all(e.id for e in resumed_events)
    resumed = [e for e in resumed_events if e.event == "message"]
    ids = [int(e.id) for e in seen + resumed]
    # No gap: every token index is there; no duplicate token: the text is the answer once.
    # (Resuming after the last token gets an empty finish event that repeats its id.)
    assert set(ids) == set(range(6)) and ids == sorted(ids)
    text = "".join(json.loads(e.data)["delta"] for e in seen + resumed)
    assert text == llm.RUNNING_ANSWER
    assert read_stream([rest], "eventsource").complete


def test_last_event_id_query_parameter_is_a_fallback_for_the_header(server_url, fast, read_raw):
    rest, _ = read_raw("GET", server_url + "/v1/stream", params={**fast, "last_event_id": "3"})
    assert [e.id for e in decode_all([rest])] == ["4", "5", "6"]


def test_resuming_after_the_done_event_gets_204_so_eventsource_stops(server_url, fast):
    response = httpx.get(server_url + "/v1/stream", params=fast, headers={"Last-Event-ID": "6"})
    assert response.status_code == 204


@pytest.mark.parametrize(("retry", "first"), [("none", b"id: 0\n"), ("1500", b"retry: 1500\n\n")])
def test_retry_chooses_the_retry_field_or_none_at_all(server_url, fast, read_raw, retry, first):
    body, _ = read_raw("GET", server_url + "/v1/stream", params={**fast, "retry": retry})
    assert body.startswith(first) and body.count(b"retry:") == (retry != "none")


def test_end_after_tokens_ends_the_body_cleanly_and_the_reconnect_gets_the_rest(
    server_url, fast, read_raw
):
    params = {**fast, "end_after_tokens": "3"}
    response = httpx.get(server_url + "/v1/stream", params=params)
    events = decode_all([response.content])
    assert response.status_code == 200 and [e.id for e in events] == ["0", "1", "2"]
    assert all(e.event == "message" for e in events)  # no done event: EventSource reconnects
    rest, _ = read_raw(
        "GET", server_url + "/v1/stream", params=params, headers={"Last-Event-ID": "2"}
    )
    text = "".join(json.loads(e.data)["delta"] for e in events)
    assert text + read_stream([rest], "eventsource").text == llm.RUNNING_ANSWER
    assert decode_all([rest])[-1].event == "done"


@pytest.mark.parametrize("status", [204, 500, 410])
def test_reconnect_status_answers_only_a_reconnect_with_that_status(server_url, fast, status):
    params = {**fast, "reconnect_status": str(status)}
    first = httpx.get(server_url + "/v1/stream", params=params)
    again = httpx.get(server_url + "/v1/stream", params=params, headers={"Last-Event-ID": "2"})
    assert first.status_code == 200 and decode_all([first.content])[-1].event == "done"
    assert again.status_code == status
    if status == 204:
        assert again.content == b""
    else:  # the course's JSON error, saying why
        assert "ends an EventSource for good" in again.json()["error"]["message"]


def test_reconnect_content_type_labels_only_a_reconnect_as_something_else(server_url, fast):
    params = {**fast, "reconnect_content_type": "text/plain"}
    first = httpx.get(server_url + "/v1/stream", params=params)
    again = httpx.get(server_url + "/v1/stream", params=params, headers={"Last-Event-ID": "6"})
    assert first.headers["content-type"].startswith("text/event-stream")
    assert (again.status_code, again.headers["content-type"]) == (200, "text/plain")
    assert again.headers["x-content-type-options"] == "nosniff"  # taken as labelled, at once
    assert [e.event for e in decode_all([again.content])] == ["message", "done"]


def test_lesson_dialect_on_v1_stream_is_data_delta_then_done(server_url, fast, read_raw):
    body, _ = read_raw("GET", server_url + "/v1/stream", params={**fast, "dialect": "lesson"})
    reply = read_stream([body], "lesson")
    assert reply.complete and reply.text == llm.RUNNING_ANSWER
    assert b"id:" not in body


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("n_bytes", [0, 1, 20, 57, 100])
def test_drop_after_bytes_sends_exactly_n_body_bytes_then_closes_without_end_marker(
    server_url, fast, read_raw, n_bytes
):
    body, clean = read_raw(
        "GET", server_url + "/v1/stream", params={**fast, "drop_after_bytes": n_bytes}
    )
    full = llm.wire_bytes(llm.answer_for(llm.RUNNING_PROMPT), "eventsource")
    assert body == full[:n_bytes]
    assert not clean
    assert not read_stream([body], "eventsource").complete


def test_drop_after_bytes_on_openai_stream_leaves_no_done(server_url, fast, read_raw):
    request = {**ASK, "stream": True}
    params = {**fast, "drop_after_bytes": 400}
    body, clean = read_raw("POST", server_url + "/v1/chat/completions", params=params, json=request)
    assert len(body) == 400 and not clean
    assert b"[DONE]" not in body


def test_drop_after_bytes_beyond_the_body_changes_nothing(server_url, fast, read_raw):
    body, clean = read_raw(
        "GET", server_url + "/v1/stream", params={**fast, "drop_after_bytes": 10**6}
    )
    assert clean and read_stream([body], "eventsource").complete


def test_drop_after_bytes_also_cuts_a_blocking_json_reply(server_url, fast, read_raw):
    body, clean = read_raw(
        "POST",
        server_url + "/v1/chat/completions",
        params={**fast, "drop_after_bytes": 30},
        json=ASK,
    )
    assert len(body) == 30 and not clean


def test_heartbeat_ms_sends_ping_comments_during_prefill(server_url, read_raw):
    params = {"prefill_ms": "120", "per_token_ms": "1", "heartbeat_ms": "25"}
    body, _ = read_raw("GET", server_url + "/v1/stream", params=params)
    before_first_token = body.split(b"id: 0")[0]
    assert before_first_token.count(b": ping\n\n") == 4  # at 25, 50, 75, 100 ms (the token at 121)
    assert read_stream([body], "eventsource").text == llm.RUNNING_ANSWER


def test_no_heartbeat_unless_asked(server_url, fast, read_raw):
    body, _ = read_raw("GET", server_url + "/v1/stream", params=fast)
    assert b": ping" not in body


def test_stall_ms_pauses_after_half_of_the_tokens(server_url, arrivals):
    params = {"prefill_ms": "0", "per_token_ms": "5", "stall_ms": "1000", "heartbeat_ms": "200",
              "dialect": "lesson"}  # fmt: skip
    pieces = arrivals("GET", server_url + "/v1/stream", params=params)
    whole = b"".join(p for _, p in pieces)
    assert read_stream([whole], "lesson").text == llm.RUNNING_ANSWER
    # Where the pause is, without a clock: a ping fills each 200 ms of silence, and the
    # only silence comes after 3 of the 6 tokens (the order of the writes, not their times).
    lines = [line for line in whole.split(b"\n") if line.startswith((b": ping", b'data: {"delta'))]
    kinds = "".join("p" if line == b": ping" else "t" for line in lines)
    assert kinds.startswith("tttpppp") and kinds.endswith("pttt") and kinds.count("t") == 6, kinds
    # And the second half never comes before the stall is over (a lower bound).
    token_arrivals_s = [t for t, piece in pieces for _ in range(piece.count(b'data: {"delta'))]
    assert token_arrivals_s[3] >= 1.0


def test_stall_with_heartbeat_fills_the_pause_with_pings(server_url, read_raw):
    params = {"prefill_ms": "0", "per_token_ms": "1", "stall_ms": "100", "heartbeat_ms": "30"}
    body, _ = read_raw("GET", server_url + "/v1/stream", params=params)
    assert body.count(b": ping") >= 3
    assert read_stream([body], "eventsource").complete


def test_per_request_prefill_ms_overrides_the_server_default(server_url, arrivals):
    params = {"prefill_ms": "600", "per_token_ms": "1", "dialect": "lesson"}
    pieces = arrivals("GET", server_url + "/v1/stream", params=params)
    first_token_s = next(t for t, piece in pieces if b"delta" in piece)
    # A lower bound only, so a busy machine cannot fail it: with the server default
    # (prefill 200, 50 per token) the first token would be due at 250 ms, never 600.
    assert first_token_s >= 0.6
    assert read_stream([b"".join(p for _, p in pieces)], "lesson").text == llm.RUNNING_ANSWER


# --------------------------------------------------------------------------- disconnects and load


def test_a_client_that_disconnects_stops_generation_within_one_token(
    fresh_server_url, wait_for_stats
):
    # 500 ms per token: "one in flight, at most one after" leaves the client a second to
    # hang up and the server to notice, however busy the machine.
    params = {"prompt": LONG_PROMPT, "prefill_ms": "0", "per_token_ms": "500", "dialect": "lesson"}
    received = 0
    with httpx.stream("GET", fresh_server_url + "/v1/stream", params=params) as response:
        for piece in response.iter_raw():
            received += piece.count(b"data:")
            if received >= 3:
                break
    stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 0)
    assert stats["active_streams"] == 0
    assert stats["disconnects"] == 1
    assert stats["tokens_after_disconnect"] in (0, 1)
    assert stats["tokens_generated"] <= received + 2  # one in flight, at most one after
    assert len(llm.answer_for(LONG_PROMPT).tokens) >= 40


def test_disconnect_during_prefill_generates_no_token(fresh_server_url, wait_for_stats):
    params = {"prefill_ms": "5000", "heartbeat_ms": "20"}
    with httpx.stream("GET", fresh_server_url + "/v1/stream", params=params) as response:
        next(response.iter_raw())
    stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 0)
    assert (stats["active_streams"], stats["tokens_generated"], stats["disconnects"]) == (0, 0, 1)


def test_stats_count_requests_completed_streams_and_tokens(fresh_server_url, get_stats, fast):
    httpx.get(fresh_server_url + "/v1/stream", params=fast)
    httpx.post(fresh_server_url + "/v1/chat/completions", params=fast, json=ASK)
    stats = get_stats(fresh_server_url)
    assert stats["requests"] == 3  # two answers, then this stats request
    assert stats["streams_completed"] == 2
    assert stats["tokens_generated"] == 12
    assert stats["active_streams"] == 0


def test_stats_report_how_late_the_writes_were(fresh_server_url, get_stats, fast):
    httpx.get(fresh_server_url + "/v1/stream", params=fast)
    lateness = get_stats(fresh_server_url)["write_lateness_ms"]
    assert lateness["count"] == 8  # retry, six tokens, done
    assert 0 <= lateness["p50"] <= lateness["p95"] <= lateness["max"]


def test_stats_report_how_long_requests_waited_between_socket_and_app(
    fresh_server_url, get_stats, fast
):
    httpx.get(fresh_server_url + "/v1/stream", params=fast)
    waited = get_stats(fresh_server_url)["arrival_to_app_ms"]
    assert waited["count"] == 2  # the stream, then this stats request
    assert 0 <= waited["p50"] <= waited["p95"] <= waited["max"]


def test_the_answer_clock_starts_when_the_request_bytes_arrive_before_the_app_runs():
    seen: list[tuple[float | None, float]] = []

    async def app(scope, receive, send):
        seen.append((scope["state"].get("start"), asyncio.get_running_loop().time()))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    background = server.BackgroundServer(app)
    url = background.start()
    try:
        assert httpx.get(url + "/anything").status_code == 204
    finally:
        background.stop()
    [(arrived, app_called)] = seen
    assert arrived is not None and arrived <= app_called


def test_delete_stats_zeroes_the_counters(fresh_server_url, get_stats, fast):
    httpx.get(fresh_server_url + "/v1/stream", params=fast)
    zeroed = httpx.delete(fresh_server_url + "/v1/stats").json()
    assert zeroed["tokens_generated"] == 0 and zeroed["requests"] == 0
    assert zeroed["write_lateness_ms"] == {"count": 0, "p50": None, "p95": None, "max": None}


def test_stats_show_an_open_stream_as_active(fresh_server_url, wait_for_stats):
    with httpx.stream("GET", fresh_server_url + "/v1/stream", params={"prefill_ms": "5000"}):
        stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 1)
        assert stats["active_streams"] == 1


def test_a_hundred_concurrent_streams_all_complete_and_are_correct(fresh_server_url, get_stats):
    params = {"prefill_ms": "20", "per_token_ms": "10"}

    async def one(client: httpx.AsyncClient, i: int):
        dialect = ["openai", "anthropic", "eventsource"][i % 3]
        prompt = f"question number {i}"
        if dialect == "eventsource":
            request = client.build_request("GET", "/v1/stream", params={**params, "prompt": prompt})
        else:
            path = "/v1/chat/completions" if dialect == "openai" else "/v1/messages"
            body = {"model": "m", "max_tokens": 500, "stream": True}
            body["messages"] = [{"role": "user", "content": prompt}]
            request = client.build_request("POST", path, params=params, json=body)
        response = await client.send(request, stream=True)
        body = b"".join([piece async for piece in response.aiter_raw()])
        await response.aclose()
        return read_stream([body], dialect), llm.answer_for(prompt).text

    async def all_of_them():
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(
            base_url=fresh_server_url, limits=limits, timeout=60
        ) as client:
            return await asyncio.gather(*(one(client, i) for i in range(100)))

    results = asyncio.run(all_of_them())
    assert all(reply.complete and reply.text == expected for reply, expected in results)
    stats = get_stats(fresh_server_url)
    assert stats["streams_completed"] == 100 and stats["disconnects"] == 0


# --------------------------------------------------------------------------- bad requests

OPENAI = "/v1/chat/completions"
ANTHROPIC = "/v1/messages"
BAD_REQUESTS = [
    # (name, method, path, raw body, status)
    ("invalid json", "POST", OPENAI, b'{"model": ', 400),
    ("invalid json", "POST", ANTHROPIC, b"{nope}", 400),
    ("invalid utf-8", "POST", OPENAI, b'{"model": "\xff"}', 400),
    ("deeply nested json", "POST", OPENAI, b"[" * 100_000 + b"]" * 100_000, 400),
    ("empty body", "POST", OPENAI, b"", 400),
    ("body is an array", "POST", ANTHROPIC, b"[1, 2]", 400),
    ("missing messages", "POST", OPENAI, b'{"model": "m"}', 400),
    ("missing model", "POST", OPENAI, b'{"messages": [{"role": "user", "content": "hi"}]}', 400),
    ("missing max_tokens", "POST", ANTHROPIC, json.dumps(ASK).encode(), 400),
    ("messages not a list", "POST", OPENAI, b'{"model": "m", "messages": "hi"}', 400),
    ("empty messages", "POST", OPENAI, b'{"model": "m", "messages": []}', 400),
    ("message not an object", "POST", OPENAI, b'{"model": "m", "messages": [3]}', 400),
    (
        "unknown role",
        "POST",
        ANTHROPIC,
        json.dumps({**ASK_ANTHROPIC, "messages": [{"role": "robot", "content": "x"}]}).encode(),
        400,
    ),
    (
        "content a number",
        "POST",
        OPENAI,
        b'{"model": "m", "messages": [{"role": "user", "content": 5}]}',
        400,
    ),
    ("stream a string", "POST", OPENAI, json.dumps({**ASK, "stream": "yes"}).encode(), 400),
    ("max_tokens a bool", "POST", OPENAI, json.dumps({**ASK, "max_tokens": True}).encode(), 400),
    (
        "max_tokens zero",
        "POST",
        ANTHROPIC,
        json.dumps({**ASK_ANTHROPIC, "max_tokens": 0}).encode(),
        400,
    ),
    (
        "max_tokens a float",
        "POST",
        ANTHROPIC,
        json.dumps({**ASK_ANTHROPIC, "max_tokens": 2.5}).encode(),
        400,
    ),
    (
        "stream_options a list",
        "POST",
        OPENAI,
        json.dumps({**ASK, "stream_options": []}).encode(),
        400,
    ),
    (
        "include_usage a string",
        "POST",
        OPENAI,
        json.dumps({**ASK, "stream_options": {"include_usage": "y"}}).encode(),
        400,
    ),
    (
        "system a number",
        "POST",
        ANTHROPIC,
        json.dumps({**ASK_ANTHROPIC, "system": 7}).encode(),
        400,
    ),
    (
        "no user message",
        "POST",
        OPENAI,
        b'{"model": "m", "messages": [{"role": "system", "content": "x"}]}',
        400,
    ),
    ("body over 1 MiB", "POST", OPENAI, b" " * (server.MAX_BODY_BYTES + 1), 413),
    ("body over 1 MiB", "POST", ANTHROPIC, b" " * (server.MAX_BODY_BYTES + 1), 413),
    ("wrong method", "GET", OPENAI, None, 405),
    ("wrong method", "GET", ANTHROPIC, None, 405),
    ("wrong method", "POST", "/v1/stream", b"{}", 405),
    ("wrong method", "DELETE", "/v1/models", None, 405),
    ("unknown path", "GET", "/v2/everything", None, 404),
    ("unknown path", "POST", "/v1/messages/batches", b"{}", 404),
]


def _check_error_body(path: str, response: httpx.Response) -> None:
    error = response.json()
    if path.startswith(ANTHROPIC):
        assert error["type"] == "error"
        assert isinstance(error["error"]["type"], str)
        assert error["error"]["message"]
    else:
        assert set(error["error"]) == {"message", "type", "param", "code"}
        assert error["error"]["type"] == "invalid_request_error"
        assert error["error"]["message"]


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "status"),
    BAD_REQUESTS,
    ids=[f"{row[0]} {row[2]}" for row in BAD_REQUESTS],
)
def test_a_bad_request_gets_its_4xx_with_an_api_style_json_error(
    server_url, fast, capfd, name, method, path, body, status
):
    response = httpx.request(method, server_url + path, params=fast, content=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    _check_error_body(path, response)
    assert httpx.get(server_url + "/v1/models").status_code == 200  # still serving
    assert "Traceback" not in capfd.readouterr().err


def test_anthropic_errors_use_anthropic_types(server_url):
    assert httpx.get(server_url + ANTHROPIC).json()["error"]["type"] == "invalid_request_error"
    assert httpx.post(server_url + "/v1/messages/x").json()["error"]["type"] == "not_found_error"


def test_a_wrong_type_error_names_the_parameter(server_url):
    response = httpx.post(server_url + OPENAI, json={**ASK, "max_tokens": "ten"})
    assert response.json()["error"]["param"] == "max_tokens"


def test_405_says_which_methods_are_allowed(server_url):
    assert httpx.get(server_url + OPENAI).headers["allow"] == "POST"


@pytest.mark.parametrize(
    "params",
    [
        {"drop_after_bytes": "many"},
        {"drop_after_bytes": "-1"},
        {"stall_ms": "nan"},
        {"per_token_ms": "-5"},
        {"prefill_ms": "1e12"},
        {"heartbeat_ms": "0"},
        {"max_tokens": "0"},
        {"dialect": "klingon"},
        {"last_event_id": "abc"},
        {"last_event_id": "\u00b2"},  # a superscript two: str.isdigit() says yes, int() no
        {"prefill_ms": "inf"},
        {"stall_ms": "-1"},
        {"heartbeat_ms": "x"},
        {"retry": "soon"},
        {"retry": "-1"},
        {"retry": "1e3"},
        {"retry": "600001"},
        {"end_after_tokens": "0"},
        {"reconnect_status": "200"},
        {"reconnect_status": "302"},
        {"reconnect_status": "2040"},
        {"reconnect_content_type": "text plain"},
        {"reconnect_content_type": "text/event-stream; charset=utf-8"},
        {"reconnect_content_type": "text/event-stream"},
        {"reconnect_content_type": "TEXT/Event-Stream"},
    ],
)
def test_bad_query_parameters_get_400_with_the_parameter_named(server_url, params):
    response = httpx.get(server_url + "/v1/stream", params=params)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == next(iter(params))


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"retry": "soon"}, "a whole number of milliseconds from 0 to 600000, or 'none'"),
        ({"reconnect_status": "200"}, "must be 204 or a status from 400 to 599"),
        ({"reconnect_content_type": "a b"}, "must be a media type such as text/plain"),
        ({"reconnect_content_type": "text/event-stream"}, "another type than text/event-stream"),
        ({"reconnect_status": "204", "reconnect_content_type": "text/plain"}, "Give either"),
        ({"dialect": "lesson", "retry": "5"}, "applies to the EventSource stream only"),
    ],
)
def test_an_eventsource_option_that_cannot_be_used_gets_400_saying_what_to_send(
    server_url, params, said
):
    response = httpx.get(server_url + "/v1/stream", params=params)
    assert response.status_code == 400 and said in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("POST", "/v1/chat/completions", {"retry": "abc"}),
        ("POST", "/v1/chat/completions", {"reconnect_status": "204"}),
        ("POST", "/v1/messages", {"end_after_tokens": "2"}),
        ("POST", "/v1/responses", {"reconnect_content_type": "text/plain"}),
        ("POST", "/v1/chat/completions", {"fail_after_tokens": "3"}),
        ("GET", "/v1/stream", {"fail_after_tokens": "3"}),
    ],
)
def test_an_option_of_another_endpoint_gets_400_naming_where_it_applies(
    server_url, method, path, params
):
    bodies = {
        "/v1/chat/completions": ASK,
        "/v1/messages": ASK_ANTHROPIC,
        "/v1/responses": {"model": "m", "input": "hi"},
    }
    response = httpx.request(method, server_url + path, params=params, json=bodies.get(path))
    assert response.status_code == 400
    name = next(iter(params))
    owner = "/v1/responses" if name == "fail_after_tokens" else "/v1/stream"
    assert f"{name!r} applies to {owner} only" in response.text


def test_bad_fault_parameter_on_anthropic_endpoint_gets_anthropic_error(server_url):
    response = httpx.post(server_url + ANTHROPIC, params={"stall_ms": "x"}, json=ASK_ANTHROPIC)
    assert response.status_code == 400 and response.json()["type"] == "error"


# --------------------------------------------------------------------------- models, CORS


def test_models_lists_the_simulated_model(server_url):
    listing = httpx.get(server_url + "/v1/models").json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == [server.MODEL]


def test_cors_preflight_lets_a_jupyter_page_post_json_with_authorization(server_url):
    response = httpx.options(
        server_url + OPENAI,
        headers={
            "Origin": "http://localhost:8888",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "http://localhost:8888"
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed = response.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed


def test_cors_lets_a_page_on_another_localhost_port_read_the_stream(server_url, fast):
    origin = "http://127.0.0.1:8888"
    response = httpx.get(server_url + "/v1/stream", params=fast, headers={"Origin": origin})
    assert response.headers["access-control-allow-origin"] == origin


def test_cors_grants_nothing_to_a_foreign_website(server_url, fast):
    response = httpx.get(server_url + "/v1/models", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers


# --------------------------------------------------------------------------- WebSocket


def _ws_url(url: str, query: str = "") -> str:
    return url.replace("http://", "ws://") + "/v1/ws" + query


def test_websocket_streams_the_same_answer_then_done(server_url):
    async def talk():
        async with websockets.connect(_ws_url(server_url, "?per_token_ms=2&prefill_ms=5")) as ws:
            await ws.send(json.dumps({"prompt": llm.RUNNING_PROMPT}))
            return [json.loads(message) async for message in ws]

    messages = asyncio.run(talk())
    assert "".join(m.get("delta", "") for m in messages) == llm.RUNNING_ANSWER
    assert messages[-1] == {"done": True, "finish_reason": "stop"}


def test_websocket_takes_the_prompt_from_the_query_too(server_url):
    async def talk():
        query = "?per_token_ms=1&prefill_ms=1&max_tokens=2&prompt=" + quote(llm.RUNNING_PROMPT)
        async with websockets.connect(_ws_url(server_url, query)) as ws:
            return [json.loads(message) async for message in ws]

    messages = asyncio.run(talk())
    assert messages == [
        {"delta": "Your"},
        {"delta": " order"},
        {"done": True, "finish_reason": "length"},
    ]


def test_websocket_stop_message_stops_generation(fresh_server_url, wait_for_stats):
    async def talk():
        async with websockets.connect(
            _ws_url(fresh_server_url, "?per_token_ms=500&prefill_ms=0")  # 1 s for the stop
        ) as ws:
            await ws.send(json.dumps({"prompt": LONG_PROMPT}))
            first = json.loads(await ws.recv())
            await ws.send(json.dumps({"stop": True}))
            rest = [json.loads(m) async for m in ws]
            return first, rest

    first, rest = asyncio.run(talk())
    assert "delta" in first
    assert rest[-1] == {"done": True, "finish_reason": "stopped"}
    deltas = [m for m in rest if "delta" in m]
    # Expected: at most one more token (the stop comes well within the 500 ms before the
    # next); a stalled machine can delay the stop, so the bound is 10x that. The server
    # generates what it sent, plus at most the one it was making when the stop came.
    assert len(deltas) <= 10, rest
    stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 0)
    assert stats["tokens_generated"] in (1 + len(deltas), 2 + len(deltas)), (stats, rest)


def test_websocket_bad_first_message_gets_an_error_and_close(server_url):
    async def talk():
        async with websockets.connect(_ws_url(server_url)) as ws:
            await ws.send(json.dumps({"prompt": 5}))
            message = json.loads(await ws.recv())
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
            return message, ws.close_code

    message, code = asyncio.run(talk())
    assert "prompt" in message["error"] and code == 1008


# --------------------------------------------------------------------------- running() and the CLI


def test_running_works_twice_in_a_row_on_free_ports():
    urls = []
    for _ in range(2):
        with server.running(prefill_ms=0, per_token_ms=0) as url:
            assert httpx.get(url + "/v1/models").status_code == 200
            urls.append(url)
    assert all(u.startswith("http://127.0.0.1:") for u in urls)
    for url in urls:
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/v1/models")


def test_running_stops_the_server_when_the_block_is_interrupted():
    with pytest.raises(KeyboardInterrupt):
        with server.running() as url:
            raise KeyboardInterrupt
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/v1/models")


def test_running_stops_promptly_even_with_a_stream_open():
    with server.running(prefill_ms=60_000) as url:
        client = httpx.Client(timeout=30)
        response = client.send(client.build_request("GET", url + "/v1/stream"), stream=True)
    # The open stream's first token is a minute away; stopping must not wait for it: the
    # stream is cut before any token (a server that waited would send them all, a minute on).
    body = b""
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
        for piece in response.iter_raw():
            body += piece
    assert body == b"retry: 3000\n\n"
    response.close()
    client.close()


def test_running_works_inside_a_running_event_loop_as_in_a_jupyter_kernel():
    async def cell():
        with server.running(prefill_ms=1, per_token_ms=1) as url:
            async with httpx.AsyncClient() as client:
                response = await client.get(url + "/v1/stream")
        return read_stream([response.content], "eventsource").text

    assert asyncio.run(cell()) == llm.RUNNING_ANSWER


def test_running_leaves_no_thread_behind():
    import threading

    before = {t.name for t in threading.enumerate()}
    with server.running():
        pass
    assert {t.name for t in threading.enumerate()} <= before


def test_the_listening_socket_turns_nagle_off_so_small_writes_leave_at_once():
    import socket

    sock = background.bind_socket()
    try:
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_only_non_loopback_hosts_get_a_warning():
    assert cli.bind_warning("127.0.0.1") is None
    assert cli.bind_warning("::1") is None
    assert cli.bind_warning("localhost") is None
    assert "0.0.0.0" in cli.bind_warning("0.0.0.0")
    assert cli.bind_warning("192.168.1.20") is not None


def _start_cli(*args: str) -> tuple[subprocess.Popen, str]:
    process = processes.start(
        [sys.executable, "-m", "lessonkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    url = line.split("listening on ")[1].split()[0]
    return process, url


def _stop_cli(process: subprocess.Popen) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=15)
    return process.returncode, out, err


def test_lessonkit_serve_prints_its_url_and_serves_until_ctrl_c():
    process, url = _start_cli("serve", "--port", "0", "--prefill-ms", "1", "--per-token-ms", "1")
    try:
        assert url.startswith("http://127.0.0.1:")
        response = httpx.get(url + "/v1/stream", timeout=10)
        assert read_stream([response.content], "eventsource").text == llm.RUNNING_ANSWER
    finally:
        code, out, err = _stop_cli(process)
    assert code == 130  # the usual exit code after Ctrl+C
    assert "Traceback" not in err
    assert '"GET /v1/stream' in out  # the access log, one line per request


def test_lessonkit_serve_defaults_come_from_its_flags():
    process, url = _start_cli(
        "serve", "--port", "0", "--prefill-ms", "700", "--per-token-ms", "0", "--quiet"
    )
    try:
        start = time.monotonic()
        response = httpx.get(url + "/v1/stream", timeout=30)
        # A lower bound only (robust on a busy machine): the default prefill of 300 ms
        # plus 40 ms per token would finish the running answer after 540 ms.
        assert time.monotonic() - start >= 0.7
        assert read_stream([response.content], "eventsource").text == llm.RUNNING_ANSWER
    finally:
        code, out, err = _stop_cli(process)
    assert out == ""  # --quiet: no access log
    assert code == 130 and err == "stopped.\n"  # --quiet: no access log


def test_lessonkit_serve_reports_a_port_in_use_in_one_line_without_a_traceback():
    with server.running() as url:
        port = url.rsplit(":", 1)[1]
        result = processes.run(
            [sys.executable, "-m", "lessonkit", "serve", "--port", port],
            capture_output=True,
            text=True,
            timeout_s=30,
            env={**os.environ, "PYTHONWARNINGS": "error"},
        )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: port {port} is in use; "
        "pick another with --port, or --port 0 for a free one"
    ]


# --------------------------------------------------------------------------- unusable settings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"per_token_ms": -5}, "per_token_ms must be a number of milliseconds, 0 or more, got -5"),
        ({"prefill_ms": "a"}, "prefill_ms must be a number of milliseconds, 0 or more, got 'a'"),
        ({"prefill_ms": math.nan}, "prefill_ms must be a number of milliseconds, 0 or more"),
        ({"per_token_ms": math.inf}, "per_token_ms must be a number of milliseconds, 0 or more"),
        ({"per_token_ms": True}, "per_token_ms must be a number of milliseconds, 0 or more"),
        ({"jitter_ms": -1.0}, "jitter_ms must be a number of milliseconds, 0 or more"),
        ({"prefill_ms": 1e9}, "prefill_ms must be at most 600000 ms"),
        ({"seed": 1.5}, "seed must be an integer, got 1.5"),
        ({"retry_ms": -1}, "retry_ms must be 0 or more, got -1"),
        ({"max_body_bytes": 0}, "max_body_bytes must be 1 or more, got 0"),
        ({"model": ""}, "model must be a non-empty string"),
    ],
)
def test_running_refuses_an_unusable_setting_before_the_server_starts(options, message):
    with pytest.raises(ValueError) as caught:
        with server.running(**options):
            pytest.fail("the server started")
    assert str(caught.value).startswith(message)


def test_running_with_an_unknown_option_names_the_valid_options():
    with pytest.raises(TypeError) as caught:
        with server.running(bogus=1):
            pytest.fail("the server started")
    message = str(caught.value)
    assert "'bogus'" in message
    for name in ("prefill_ms", "per_token_ms", "jitter_ms", "seed", "retry_ms", "model"):
        assert name in message


def test_settings_accept_zero_and_integer_milliseconds():
    defaults = server.Settings(prefill_ms=0, per_token_ms=0, jitter_ms=0)
    assert defaults.prefill_ms == 0 and defaults.per_token_ms == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--per-token-ms", "-5"], "--per-token-ms: must be a number of milliseconds"),
        (["serve", "--prefill-ms", "nan"], "--prefill-ms: must be a number of milliseconds"),
        (["serve", "--jitter-ms", "fast"], "--jitter-ms: must be a number of milliseconds"),
        (["serve", "--prefill-ms", "1e9"], "--prefill-ms: must be at most 600000 ms"),
        (["serve", "--port", "99999"], "--port: must be a port number from 0 to 65535"),
        (["serve", "--port", "eighty"], "--port: must be a port number from 0 to 65535"),
        (["proxy", "--upstream", "http://127.0.0.1:1", "--port", "99999"], "--port: must be"),
        (["proxy", "--upstream", "http://127.0.0.1:1", "--port", "-1"], "--port: must be"),
    ],
)
def test_the_command_line_refuses_unusable_times_and_ports_with_a_usage_error(
    capsys, argv, message
):
    from lessonkit import cli

    with pytest.raises(SystemExit) as caught:
        cli.main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bind_socket_refuses_a_port_outside_0_to_65535_with_a_value_error():
    with pytest.raises(ValueError, match="0 to 65535"):
        background.bind_socket(port=99999)


# --------------------------------------------------------------------------- never a 500


def test_a_lone_surrogate_escape_in_a_json_prompt_gets_400_not_500(server_url, fast):
    body = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "\\ud800"}]}'
    for path in (OPENAI, ANTHROPIC):
        response = httpx.post(server_url + path, params=fast, content=body)
        assert response.status_code == 400, response.text
        _check_error_body(path, response)
        assert "surrogate" in response.text


def test_a_lone_surrogate_in_a_websocket_prompt_gets_an_error_message(server_url):
    async def talk():
        async with websockets.connect(_ws_url(server_url)) as ws:
            await ws.send('{"prompt": "\\udfff"}')
            return json.loads(await ws.recv())

    assert "surrogate" in asyncio.run(talk())["error"]


@pytest.mark.parametrize("params", [{"per_token_ms": "-5"}, {"prefill_ms": "a"}])
def test_bad_timing_overrides_on_a_post_endpoint_get_400_not_500(server_url, params):
    response = httpx.post(server_url + OPENAI, params=params, json={**ASK, "stream": True})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == next(iter(params))


@pytest.fixture(scope="module")
def quick_server_url() -> Iterator[str]:
    """A server of this module that answers at once (for many requests in a row)."""
    with server.running(prefill_ms=0, per_token_ms=0) as url:
        yield url


QUERY_NAMES = [
    "prefill_ms",
    "per_token_ms",
    "drop_after_bytes",
    "stall_ms",
    "heartbeat_ms",
    "max_tokens",
    "last_event_id",
    "dialect",
    "prompt",
    "retry",
    "end_after_tokens",
    "reconnect_status",
    "reconnect_content_type",
]
QUERY_VALUES = st.one_of(
    st.text(max_size=8),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["", " 1", "1e3", "0x10", "\u00b2", "\u0663", "-0", "lesson", "1_000"]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(["/v1/stream", OPENAI, ANTHROPIC]),
    query=st.dictionaries(st.sampled_from(QUERY_NAMES), QUERY_VALUES, max_size=4),
    stream=st.booleans(),
)
@example(path="/v1/stream", query={"last_event_id": "\u00b2"}, stream=False)  # was a 500
@example(path=OPENAI, query={"per_token_ms": "-5", "prefill_ms": "a"}, stream=True)
@example(path=ANTHROPIC, query={"stall_ms": "nan", "heartbeat_ms": "0"}, stream=True)
def test_any_query_parameters_get_a_2xx_or_a_json_4xx_never_a_500(
    quick_server_url, path, query, stream
):
    if path == "/v1/stream":
        request = httpx.Request("GET", quick_server_url + path, params=query)
    else:
        body = {**ASK_ANTHROPIC, "stream": stream}
        request = httpx.Request("POST", quick_server_url + path, params=query, json=body)
    with httpx.Client(timeout=30) as client:
        response = client.send(request, stream=True)  # the status comes before any token
        try:
            asked = query.get("reconnect_status", "")  # a 5xx asked for is not a failure
            assert not response.is_server_error or str(response.status_code) == asked
            if response.status_code >= 400:
                response.read()
                _check_error_body(path, response)
        finally:
            response.close()


def test_an_unexpected_server_error_still_answers_with_an_api_style_json_error(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug")

    with server.running(prefill_ms=0, per_token_ms=0) as url:
        monkeypatch.setattr(app.llm, "answer_for", broken)
        openai_reply = httpx.post(url + OPENAI, json=ASK)
        anthropic_reply = httpx.post(url + ANTHROPIC, json=ASK_ANTHROPIC)
        monkeypatch.undo()
        still_serving = httpx.get(url + "/v1/stream")
    assert openai_reply.status_code == 500
    assert openai_reply.json()["error"]["type"] == "server_error"
    assert "bug in lessonkit" in openai_reply.json()["error"]["message"]
    assert anthropic_reply.status_code == 500
    assert anthropic_reply.json()["error"]["type"] == "api_error"
    assert read_stream([still_serving.content], "eventsource").text == llm.RUNNING_ANSWER


# --------------------------------------------------------------------------- serving()


def test_serving_runs_any_asgi_app_for_the_with_block_then_stops_it():
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    stops = []

    async def hello(request):
        return PlainTextResponse("hello")

    app = Starlette(routes=[Route("/", hello)])
    with server.serving(app, on_stop=lambda: stops.append(True)) as url:
        assert httpx.get(url + "/").text == "hello"
    assert stops == [True]
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/")
