"""lessonkit.serve.proxy between a client and lessonkit.server: holding back versus passing through."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import httpx
import processes
import pytest
from pacing import assert_paced, paced_in_one_of

from lessonkit.core import llm
from lessonkit.core.client import read_stream
from lessonkit.serve.proxy import PoolShards, create_proxy_app, running_proxy

pytestmark = pytest.mark.server

PER_TOKEN_S = 0.05
PACE = {"prefill_ms": "100", "per_token_ms": "50", "dialect": "lesson"}
TOTAL_S = (100 + 6 * 50) / 1000  # the running answer ends 400 ms after the request


def _token_times(pieces: list[tuple[float, bytes]]) -> list[float]:
    """Return the arrival time of each token event (several may share one piece)."""
    return [t for t, piece in pieces for _ in range(piece.count(b'data: {"delta"'))]


def test_pass_through_proxy_keeps_the_token_pacing(server_url, arrivals):
    with running_proxy(server_url, buffer=False) as proxy_url:
        pieces = paced_in_one_of(
            lambda: arrivals("GET", proxy_url + "/v1/stream", params=PACE),
            lambda pieces: assert_paced(
                _token_times(pieces), PER_TOKEN_S, "through the pass-through proxy"
            ),
        )
    assert len(_token_times(pieces)) == 6
    assert read_stream([b"".join(p for _, p in pieces)], "lesson").text == llm.RUNNING_ANSWER


def test_buffering_proxy_delivers_every_token_at_the_end_in_one_burst(server_url, arrivals):
    with running_proxy(server_url, buffer=True) as proxy_url:
        pieces = arrivals("GET", proxy_url + "/v1/stream", params=PACE)
    times = _token_times(pieces)
    assert len(times) == 6
    assert times[0] >= 0.9 * TOTAL_S  # nothing before the upstream finished
    # One burst, no pacing left: the held body is one write, so all six tokens come in
    # one read, however busy the machine (paced tokens come in separate reads).
    assert len(set(times)) == 1, times
    with pytest.raises(AssertionError, match="a burst, not a stream"):
        assert_paced(times, PER_TOKEN_S)  # the check the pass-through proxy passes
    assert read_stream([b"".join(p for _, p in pieces)], "lesson").text == llm.RUNNING_ANSWER


def test_buffering_proxy_sends_a_content_length_instead_of_chunks(server_url, fast):
    with running_proxy(server_url, buffer=True) as proxy_url:
        response = httpx.get(proxy_url + "/v1/stream", params=fast)
    assert int(response.headers["content-length"]) == len(response.content)
    assert "transfer-encoding" not in response.headers


def test_honoring_x_accel_buffering_no_passes_the_stream_through(server_url, arrivals):
    with running_proxy(server_url, buffer=True, honor_accel_buffering=True) as proxy_url:
        pieces = paced_in_one_of(
            lambda: arrivals("GET", proxy_url + "/v1/stream", params=PACE),
            lambda pieces: assert_paced(
                _token_times(pieces), PER_TOKEN_S, "with X-Accel-Buffering: no"
            ),
        )
    assert len(_token_times(pieces)) == 6


def test_proxy_forwards_post_bodies_queries_status_and_error_bodies(server_url, fast):
    ask = {"model": "m", "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}]}
    with running_proxy(server_url, buffer=False) as proxy_url:
        ok = httpx.post(proxy_url + "/v1/chat/completions", params=fast, json=ask)
        bad = httpx.post(proxy_url + "/v1/chat/completions", params=fast, json={"model": "m"})
    assert ok.json()["choices"][0]["message"]["content"] == llm.RUNNING_ANSWER
    assert ok.headers["via"] == "1.1 lessonkit-proxy"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "messages"


def test_proxy_keeps_the_streaming_headers(server_url, fast):
    with running_proxy(server_url, buffer=False) as proxy_url:
        response = httpx.get(proxy_url + "/v1/stream", params=fast)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert len(response.headers.get_list("date")) == 1


@pytest.mark.parametrize("buffer", [False, True])
def test_an_upstream_drop_reaches_the_client_as_a_drop(server_url, fast, read_raw, buffer):
    with running_proxy(server_url, buffer=buffer) as proxy_url:
        body, clean = read_raw(
            "GET", proxy_url + "/v1/stream", params={**fast, "drop_after_bytes": 50}
        )
    assert len(body) == 50 and not clean


def test_a_client_leaving_the_proxy_stops_generation_upstream(fresh_server_url, wait_for_stats):
    # 500 ms per token: three tokens' time (1.5 s) for the hang-up to reach the server
    params = {"prompt": "Tell me everything.", "prefill_ms": "0", "per_token_ms": "500"}
    with running_proxy(fresh_server_url, buffer=False) as proxy_url:
        with httpx.stream("GET", proxy_url + "/v1/stream", params=params) as response:
            for piece in response.iter_raw():
                if b"id: 1" in piece:
                    break
        stats = wait_for_stats(fresh_server_url, lambda s: s["active_streams"] == 0)
    assert stats["disconnects"] == 1
    assert stats["tokens_generated"] <= 5  # of 40 or more
    assert stats["tokens_after_disconnect"] in (0, 1)


def test_an_unreachable_upstream_gives_502_with_a_json_error():
    with running_proxy("http://127.0.0.1:1", buffer=False) as proxy_url:
        response = httpx.get(proxy_url + "/v1/models")
    assert response.status_code == 502
    assert "127.0.0.1:1" in response.json()["error"]["message"]


def test_the_upstream_must_be_an_http_url():
    with pytest.raises(ValueError, match="http://"):
        create_proxy_app("127.0.0.1:8000")


def test_lessonkit_proxy_cli_prints_its_url_and_passes_streams_through(server_url, fast):
    command = [sys.executable, "-m", "lessonkit", "proxy", "--upstream", server_url]
    process = processes.start(
        [*command, "--no-buffer", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert "pass-through" in line
        proxy_url = line.split("listening on ")[1].split()[0]
        response = httpx.get(proxy_url + "/v1/stream", params=fast, timeout=10)
        assert read_stream([response.content], "eventsource").text == llm.RUNNING_ANSWER
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    assert "Traceback" not in err


def test_upstream_requests_spread_over_small_pools_and_are_released(server_url):
    shards = PoolShards(streams_per_pool=4)

    async def open_then_close(n_streams: int) -> list[int]:
        async with httpx.AsyncClient(transport=shards, timeout=30) as client:
            url = server_url + "/v1/stream?prefill_ms=5000"  # headers now, tokens much later
            requests = [client.build_request("GET", url) for _ in range(n_streams)]
            responses = await asyncio.gather(*(client.send(r, stream=True) for r in requests))
            busiest = list(shards.open_streams)
            for response in responses:
                await response.aclose()
            return busiest

    busiest = asyncio.run(open_then_close(10))
    assert busiest == [4, 4, 2]
    assert shards.open_streams == [0, 0, 0]


def test_the_course_clients_and_proxies_load_the_tls_certificates_once(
    server_url, fast, monkeypatch
):
    # httpx loads its CA certificates into a new context (about 1 MiB that the kernel
    # keeps) for each client it makes: lesson 05's proxy runs alone used to make nine.
    import ssl

    from lessonkit.serve.inprocess import http_client, tls_context

    made = []
    real = ssl.create_default_context
    monkeypatch.setattr(
        ssl, "create_default_context", lambda *a, **k: made.append(1) or real(*a, **k)
    )
    tls_context.cache_clear()
    try:
        texts = []
        for buffer in (False, True):
            with running_proxy(server_url, buffer=buffer) as proxy_url:
                for _ in range(2):
                    with http_client(timeout=30) as client:
                        reply = client.get(
                            proxy_url + "/v1/stream", params={**fast, "dialect": "lesson"}
                        )
                    texts.append(read_stream([reply.content], "lesson").text)
    finally:
        tls_context.cache_clear()  # later tests' clients make their own, unpatched
    assert texts == [llm.RUNNING_ANSWER] * 4
    assert len(made) == 1
