"""The browser kernel's serve.running(): the course's server in-process, reached by URL.

In JupyterLite there is no socket, so ``serve.running()`` puts the app on the in-process
network (lessonkit.serve.inprocess.NETWORK) and lessonkit's readers that take a URL --
``serve.http_client()``, ``rawhttp`` and the exercises' live fetch -- call it there. Here
on CPython the same code runs on a private loop; the real server over loopback is the
reference the bytes are compared with. tests/lite runs the lessons that use it in Pyodide.
"""

from __future__ import annotations

import re
import sys

import httpx
import pytest

from lessonkit import serve
from lessonkit.core import framing, llm, sse
from lessonkit.core.client import read_stream
from lessonkit.grading.notebook import http_fetch
from lessonkit.serve import rawhttp
from lessonkit.serve.inprocess import FIRST_PORT, IN_PROCESS_HOST, is_in_process, running_in_process

CHAT = "/v1/chat/completions"
BODY = {"model": "lessonkit-sim", "stream": True,
        "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}]}  # fmt: skip
QUICK = "?prefill_ms=30&per_token_ms=10"


def masked(body: bytes) -> list[tuple[str, str]]:
    """Return (event, data) of each SSE event, the response ids and creation times masked."""
    events = sse.decode_all([body])
    ids = [(e.event, re.sub(r'"(msg_|chatcmpl-)[0-9a-z]+"', '"<id>"', e.data)) for e in events]
    return [(event, re.sub(r'"created":\d+', '"created":0', data)) for event, data in ids]


def test_running_in_process_gives_a_url_on_the_in_process_network_for_the_block():
    with running_in_process() as url:
        assert url == f"http://{IN_PROCESS_HOST}:{FIRST_PORT}"
        assert is_in_process(url + CHAT)
        with running_in_process() as second:
            assert second == f"http://{IN_PROCESS_HOST}:{FIRST_PORT + 1}"
    assert not is_in_process(url)
    assert not is_in_process("http://127.0.0.1:8001")


def test_serve_running_is_in_process_in_the_browser_kernel_and_on_loopback_elsewhere(monkeypatch):
    from lessonkit.serve.background import running

    assert serve.running is running
    monkeypatch.setattr(sys, "platform", "emscripten")
    assert serve.running is running_in_process


def test_raw_http_in_process_shows_the_same_chunked_framing_as_the_real_server(server_url):
    over_tcp = rawhttp.raw_http(server_url + CHAT + QUICK, BODY)
    with running_in_process() as url:
        in_process = rawhttp.raw_http(url + CHAT + QUICK, BODY)
    assert in_process.request.startswith(b"POST /v1/chat/completions?")
    for exchange in (over_tcp, in_process):
        assert exchange.head.status_line == "HTTP/1.1 200 OK"
        assert exchange.head.header("transfer-encoding") == "chunked"
        assert framing.parse_chunked(exchange.body)[-1].kind == "last"
    assert masked(framing.dechunk(in_process.body)) == masked(framing.dechunk(over_tcp.body))
    tcp_headers = {k.lower(): v for k, v in over_tcp.head.headers if k.lower() != "date"}
    assert dict((k.lower(), v) for k, v in in_process.head.headers) == tcp_headers


def test_raw_http_in_process_hands_over_the_head_then_one_chunk_per_write():
    timing = llm.Timing(prefill_ms=30, per_token_ms=10)
    plan = list(llm.stream_writes(llm.answer_for(llm.RUNNING_PROMPT), "openai", timing=timing))
    with running_in_process() as url:
        exchange = rawhttp.raw_http(url + CHAT + QUICK, BODY)
    head, *writes, last = exchange.arrivals
    assert head[1].startswith(b"HTTP/1.1 200 OK\r\n") and head[1].endswith(b"\r\n\r\n")
    sent = [framing.dechunk(data + b"0\r\n\r\n") for _, data in writes]
    assert [masked(data) for data in sent] == [masked(data) for _, data in plan]
    assert last[1] == b"0\r\n\r\n"
    # Sleeps never return early: each write is read no sooner than the app planned it.
    for (read_ms, _), (due_ms, _) in zip(writes, plan, strict=True):
        assert read_ms >= due_ms - 1.0


def test_raw_http_in_process_reads_a_heartbeat_comment():
    with running_in_process() as url:
        exchange = rawhttp.raw_http(url + "/v1/stream?prompt=hi&prefill_ms=120&heartbeat_ms=30")
    assert b": ping" in framing.dechunk(exchange.body)
    assert sse.decode_all([framing.dechunk(exchange.body)])[-1].event == "done"


def test_http_client_reaches_an_in_process_server_and_a_real_one(server_url):
    with running_in_process() as url, serve.http_client(timeout=30) as client:
        here = client.get(url + "/v1/stream", params={"prefill_ms": 0, "per_token_ms": 0})
        there = client.get(server_url + "/v1/stream", params={"prefill_ms": 0, "per_token_ms": 0})
    assert masked(here.content) == masked(there.content)
    assert here.headers["x-accel-buffering"] == there.headers["x-accel-buffering"] == "no"


def test_http_client_streams_in_process_chunk_by_chunk_and_a_drop_raises():
    with running_in_process(prefill_ms=0, per_token_ms=5) as url, serve.http_client() as client:
        with client.stream("GET", url + "/v1/stream") as response:
            chunks = list(response.iter_raw())
        assert chunks[0] == b"retry: 3000\n\n"  # then one event per chunk:
        assert len(chunks[1:]) == len(sse.decode_all([b"".join(chunks)]))
        with pytest.raises(httpx.RemoteProtocolError):  # as a dropped connection does
            with client.stream("GET", url + "/v1/stream?drop_after_bytes=100") as response:
                assert sum(len(chunk) for chunk in response.iter_raw()) == 100


def test_a_cancelled_in_process_stream_stops_generation():
    with running_in_process(prefill_ms=0, per_token_ms=500) as url:
        result = rawhttp.cancel_stream(url, 3)
    assert result.tokens_received == 3
    assert result.tokens_generated <= 5 < result.answer_tokens
    assert result.stats_after["disconnects"] == result.stats_before["disconnects"] + 1
    assert result.stats_after["active_streams"] == 0


def test_time_request_in_process_streams_the_first_token_before_the_blocking_reply():
    with running_in_process(prefill_ms=100, per_token_ms=30) as url:
        target = rawhttp.target_from_env(url, env={})
        streamed = rawhttp.time_request(target, stream=True)
        blocking = rawhttp.time_request(target, stream=False)
    assert target.local
    assert streamed.text == blocking.text == llm.RUNNING_ANSWER
    assert streamed.n_pieces == 6 and blocking.n_pieces == 1
    assert streamed.token_ms[0] >= 100 + 30 - 1.0  # sleeps never return early
    assert blocking.measured.total_ms >= 100 + 6 * 30 - 1.0


def test_the_exercises_live_fetch_reads_an_in_process_server_and_its_drops():
    with running_in_process(prefill_ms=0, per_token_ms=0) as url:
        fetch = http_fetch(url, prompt=llm.RUNNING_PROMPT, drop_after_bytes=120)
        first = b"".join(fetch())
        last_id = sse.decode_all([first])[-1].id
        rest = b"".join(fetch(last_id))
    assert len(first) == 120
    assert read_stream([rest], "eventsource").text  # the rest of the answer, resumed
