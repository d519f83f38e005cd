"""Shared fixtures: real lessonkit servers on free loopback ports, and helpers to read them.

Timing tests use the session server (prefill 200 ms, 50 ms per token); everything
else asks that same server to hurry with ``?prefill_ms=...&per_token_ms=...``.
Tests that read /v1/stats start a fresh server so no other test moves its counters.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import httpx
import processes
import pytest
from hypothesis import HealthCheck, settings

from lessonkit.server import running

# Hypothesis has two clocks of its own: a 200 ms deadline per example and a health check
# that fails a test whose inputs come slowly. Both made verdicts depend on how busy the
# machine was (seen: 265 ms for one example), so every property test runs without them.
settings.register_profile(
    "any-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("any-machine")

TIMED_PREFILL_MS = 200.0
TIMED_PER_TOKEN_MS = 50.0
FAST = {"prefill_ms": "5", "per_token_ms": "2"}  # query parameters for a quick stream


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """Base URL of one `lessonkit serve` process shared by the session (prefill 200, 50/token).

    A separate process, as in real use: the timing tests then measure the server,
    not a server thread waiting for the test's own thread to let go of the GIL.
    """
    command = [sys.executable, "-m", "lessonkit", "serve", "--port", "0", "--quiet"]
    command += ["--prefill-ms", str(TIMED_PREFILL_MS), "--per-token-ms", str(TIMED_PER_TOKEN_MS)]
    process = processes.start(command, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "listening on " in line, f"lessonkit serve did not start: {line!r}"
        yield line.split("listening on ")[1].split()[0]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def server_pace_ms() -> tuple[float, float]:
    """(prefill_ms, per_token_ms) of the session server."""
    return TIMED_PREFILL_MS, TIMED_PER_TOKEN_MS


@pytest.fixture
def fresh_server_url() -> Iterator[str]:
    """Base URL of a server of this test alone (fresh /v1/stats; prefill 20, 20 per token)."""
    with running(prefill_ms=20, per_token_ms=20) as url:
        yield url


@pytest.fixture
def fast() -> dict[str, str]:
    """Query parameters that make a stream finish in a few milliseconds."""
    return dict(FAST)


@pytest.fixture
def get_stats() -> Callable[[str], dict]:
    """Return a function: base URL -> the /v1/stats counters."""

    def get(url: str) -> dict:
        return httpx.get(url + "/v1/stats").json()

    return get


@pytest.fixture
def wait_for_stats() -> Callable[..., dict]:
    """Return a function polling /v1/stats until `condition(stats)` holds (fails after 10 s)."""

    def wait(url: str, condition: Callable[[dict], bool], timeout_s: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            stats = httpx.get(url + "/v1/stats").json()
            if condition(stats) or time.monotonic() > deadline:
                return stats
            time.sleep(0.01)

    return wait


@pytest.fixture
def read_raw() -> Callable[..., tuple[bytes, bool]]:
    """Return a function reading a whole response body: -> (bytes, ended cleanly)."""

    def read(method: str, url: str, **kwargs) -> tuple[bytes, bool]:
        body = bytearray()
        try:
            with httpx.stream(method, url, timeout=30, **kwargs) as response:
                for piece in response.iter_raw():
                    body += piece
        except httpx.RemoteProtocolError:
            return bytes(body), False
        return bytes(body), True

    return read


@pytest.fixture
def arrivals() -> Callable[..., list[tuple[float, bytes]]]:
    """Return a function streaming a GET or POST: -> [(seconds since the request, piece)]."""

    def read(method: str, url: str, **kwargs) -> list[tuple[float, bytes]]:
        out = []
        start = time.monotonic()
        with httpx.stream(method, url, timeout=30, **kwargs) as response:
            for piece in response.iter_raw():
                out.append((time.monotonic() - start, piece))
        return out

    return read
