"""Live measurements for the notebooks: real HTTP on a real clock, warmed up first.

A first request pays for things a lesson is not about: the proxy's and the
server's first connection, imports and caches warming up in the kernel. Measured
cold, a pass-through proxy can finish after a buffering one, which tells the
opposite of the lesson's story. So every measurement here first sends the same
request `warmups` times and throws those runs away.

Each run records, on a monotonic clock from just before the request:

- first_bytes_ms: the first bytes of the body (for OpenAI, the role chunk, sent
  at once: it says the stream started, not that text is there);
- first_token_ms: the first bytes that complete an event carrying text (TTFT);
- last_ms: the last bytes of the body.

An edge module: it opens sockets and reads a clock. The stream is read with
lessonkit.core.client.StreamReader, the course's own reader.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from lessonkit.core.client import StreamReader
from lessonkit.serve import proxy
from lessonkit.serve.inprocess import http_client

PROXY_MODES: dict[str, dict[str, bool]] = {
    "proxy --no-buffer": {"buffer": False},
    "proxy --buffer": {"buffer": True},
    "--buffer, honours X-Accel-Buffering": {"buffer": True, "honor_accel_buffering": True},
}


@dataclass(frozen=True)
class Run:
    """One measured streaming request: every arrival and the three times that matter."""

    arrivals: tuple[tuple[float, int], ...]  # (ms since the request, bytes) per read
    first_bytes_ms: float
    first_token_ms: float | None
    last_ms: float
    text: str
    complete: bool

    def line(self, name: str) -> str:
        """Return one line: arrivals, first bytes, first token and last bytes."""
        token = "-" if self.first_token_ms is None else f"{self.first_token_ms:4.0f} ms"
        return (
            f"{name:36} {len(self.arrivals)} arrivals, first bytes {self.first_bytes_ms:4.0f} ms,"
            f" first token {token}, last {self.last_ms:4.0f} ms"
        )


def stream_run(base_url: str, body: Mapping, *, dialect: str = "openai") -> Run:
    """Return the timing of one POST /v1/chat/completions stream to `base_url`."""
    reader = StreamReader(dialect)
    arrivals: list[tuple[float, int]] = []
    first_token_ms = None
    with http_client(timeout=30) as client:  # made before the clock starts
        start = time.perf_counter()
        with client.stream("POST", base_url + "/v1/chat/completions", json=dict(body)) as response:
            for chunk in response.iter_raw():
                at_ms = (time.perf_counter() - start) * 1000
                arrivals.append((at_ms, len(chunk)))
                if reader.feed(chunk) and first_token_ms is None:
                    first_token_ms = at_ms
    reply = reader.close()
    if not arrivals:
        raise RuntimeError(f"{base_url} sent an empty body")
    return Run(
        tuple(arrivals), arrivals[0][0], first_token_ms, arrivals[-1][0], reply.text, reply.complete
    )


def warmed_run(base_url: str, body: Mapping, *, warmups: int = 1) -> Run:
    """Return stream_run(base_url, body) after `warmups` identical runs that are thrown away."""
    for _ in range(warmups):
        stream_run(base_url, body)
    return stream_run(base_url, body)


def through_proxies(
    upstream: str, body: Mapping, *, warmups: int = 1, modes: Mapping[str, Mapping] = PROXY_MODES
) -> dict[str, Run]:
    """Return one warmed-up run per proxy mode, each through its own proxy to `upstream`."""
    runs = {}
    for name, options in modes.items():
        with proxy.running_proxy(upstream, **options) as proxy_url:
            runs[name] = warmed_run(proxy_url, body, warmups=warmups)
    return runs


def story_holds(runs: Mapping[str, Run]) -> list[str]:
    """Return what contradicts the lesson's story in `runs` (an empty list when it holds).

    The story: passing bytes through shows the first token well before the buffered
    proxy shows anything, and does not finish later than it; honouring
    X-Accel-Buffering streams like passing through.
    """
    problems = []
    through, buffered = runs["proxy --no-buffer"], runs["proxy --buffer"]
    honoured = runs["--buffer, honours X-Accel-Buffering"]
    if through.first_token_ms is None or buffered.first_token_ms is None:
        return ["a run carried no text"]
    if not through.first_token_ms < buffered.first_bytes_ms:
        problems.append("pass-through's first token came no earlier than buffered's first bytes")
    if len(buffered.arrivals) != 1:
        problems.append(f"the buffering proxy delivered {len(buffered.arrivals)} arrivals, not 1")
    if through.last_ms > buffered.last_ms + 50:
        problems.append("pass-through finished more than 50 ms after the buffered run")
    if honoured.first_token_ms is None or not honoured.first_token_ms < buffered.first_bytes_ms:
        problems.append("honouring X-Accel-Buffering did not stream")
    return problems
