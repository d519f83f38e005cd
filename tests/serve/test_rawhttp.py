"""lessonkit.serve.rawhttp: raw socket reads, timed requests and a cancelled stream, against the real server."""

from __future__ import annotations

import pytest
from pacing import assert_paced

from lessonkit import server
from lessonkit.core import framing, llm, sse
from lessonkit.core.client import read_stream
from lessonkit.serve import rawhttp

pytestmark = pytest.mark.server

CHAT = "/v1/chat/completions"
BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}]}


def test_target_defaults_to_the_local_server_without_environment_variables():
    target = rawhttp.target_from_env("http://127.0.0.1:9", env={})
    assert (target.base_url, target.local) == ("http://127.0.0.1:9/v1", True)


def test_target_reads_base_url_key_and_model_from_the_environment():
    env = {"LESSON_BASE_URL": "https://example.test/v1/", "LESSON_API_KEY": "k",
           "LESSON_MODEL": "m"}  # fmt: skip
    target = rawhttp.target_from_env("http://127.0.0.1:9", env=env)
    assert target == rawhttp.Target("https://example.test/v1", "k", "m", False)


def test_target_description_never_shows_the_key():
    env = {"LESSON_BASE_URL": "https://example.test/v1", "LESSON_API_KEY": "secret"}
    assert "secret" not in rawhttp.target_from_env("http://x", env=env).describe()


def test_raw_http_refuses_https():
    with pytest.raises(ValueError, match="http://"):
        rawhttp.raw_http("https://127.0.0.1/", {})


def test_raw_streamed_response_is_sse_in_chunks_ending_with_a_zero_chunk(server_url, fast):
    query = "?prefill_ms=5&per_token_ms=2"
    exchange = rawhttp.raw_http(server_url + CHAT + query, BODY)
    assert exchange.head.status == 200
    assert exchange.head.header("content-type").startswith("text/event-stream")
    assert exchange.head.header("cache-control") == "no-cache"
    steps = framing.parse_chunked(exchange.body)
    assert steps[-1].kind == "last"
    reply = read_stream([framing.dechunk(exchange.body)], dialect="openai")
    assert (reply.text, reply.complete) == (llm.RUNNING_ANSWER, True)


def test_raw_http_get_reads_a_heartbeat_comment(server_url):
    query = "?prompt=hi&prefill_ms=120&per_token_ms=2&heartbeat_ms=30"
    exchange = rawhttp.raw_http(server_url + "/v1/stream" + query)
    assert b": ping" in framing.dechunk(exchange.body)
    assert sse.decode_all([framing.dechunk(exchange.body)])[-1].event == "done"


def test_streaming_first_token_comes_well_before_the_blocking_reply(server_url):
    target = rawhttp.target_from_env(server_url, env={})
    streamed = rawhttp.time_request(target, stream=True)
    blocking = rawhttp.time_request(target, stream=False)
    assert streamed.text == blocking.text == llm.RUNNING_ANSWER
    assert streamed.n_pieces == 6 and blocking.n_pieces == 1
    # prefill 200 + 50 per token: the streamed tokens come one by one from ~250 ms on, the
    # blocking reply in one piece once the last is generated (~500 ms). Shapes and lower
    # bounds only: a busy machine can make a reply late, never early.
    assert_paced(streamed.token_ms, 50, "the streamed reply")
    assert blocking.measured.total_ms >= 200 + 5 * 50


def test_a_cancelled_stream_stops_generation():
    # 500 ms per token: "at most two more" leaves a second to hang up, however busy the machine
    with server.running(prefill_ms=0, per_token_ms=500) as url:
        result = rawhttp.cancel_stream(url, 3)
    assert result.tokens_received == 3
    assert result.tokens_generated <= 5 < result.answer_tokens
    assert result.stats_after["disconnects"] == result.stats_before["disconnects"] + 1
