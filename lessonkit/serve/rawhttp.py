"""HTTP seen from the client side, live: raw socket bytes, timed requests, a cancelled stream.

An edge module: it opens sockets and reads the clock. A URL of the in-process network
(``serve.running()`` in the browser kernel, lessonkit.serve.inprocess) is read in-process
instead, with the same bytes on the wire and each write arriving as it is sent. What the bytes mean is
decided by the pure core (lessonkit.core.framing.split_response / parse_chunked,
lessonkit.core.client.StreamReader, lessonkit.core.timeline.measure).

    raw_http(url, body)        the exact bytes of a response, read over a plain socket
    target_from_env(url)       where to measure: LESSON_BASE_URL etc., else the local server
    time_request(target, ...)  time to first token and total time of one real request
    cancel_stream(url, n)      read n tokens, hang up, and read /v1/stats
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from lessonkit.core import framing, llm, timeline
from lessonkit.core.client import StreamReader
from lessonkit.serve import inprocess

__all__ = [
    "CancelResult",
    "RawExchange",
    "Target",
    "TimedReply",
    "cancel_stream",
    "raw_http",
    "target_from_env",
    "time_request",
]


@dataclass(frozen=True)
class RawExchange:
    """One request and its response as bytes, with when each piece of the response arrived."""

    request: bytes
    response: bytes
    arrivals: tuple[tuple[float, bytes], ...]  # (ms since the request was sent, bytes)

    @property
    def head(self) -> framing.ResponseHead:
        """The status line and headers."""
        return framing.split_response(self.response)[0]

    @property
    def body(self) -> bytes:
        """The body bytes exactly as they came (still chunk-framed if chunked)."""
        return framing.split_response(self.response)[1]


def _response_complete(raw: bytes) -> bool:
    try:
        head, body = framing.split_response(raw)
    except ValueError:
        return False
    if (head.header("Transfer-Encoding") or "").lower() == "chunked":
        return framing.chunked_complete(body)
    length = head.header("Content-Length")
    return length is not None and len(body) >= int(length)


def raw_http(
    url: str,
    body: dict | None = None,
    *,
    method: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
) -> RawExchange:
    """Return the raw bytes of one HTTP/1.1 exchange with `url`, read over a plain socket.

    POST with a JSON `body`, else GET. Reading stops when the response is
    complete (the zero-size chunk, or Content-Length bytes) or the server closes.
    Only http:// URLs (no TLS): meant for the local server. An in-process server's
    response is the one h11 writes for it (lessonkit.serve.inprocess.raw_exchange).
    """
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise ValueError(f"raw_http speaks plain http:// only, got {url!r}")
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    request = framing.request_bytes(
        path or "/",
        body,
        method=method or ("POST" if body is not None else "GET"),
        host=f"{host}:{port}",
        headers=tuple((headers or {}).items()),
    )
    if inprocess.is_in_process(url):  # the browser kernel's server: the same bytes, no socket
        raw, in_process_arrivals = inprocess.raw_exchange(url, request)
        return RawExchange(request, raw, tuple(in_process_arrivals))
    arrivals: list[tuple[float, bytes]] = []
    raw = b""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        start = time.perf_counter()
        sock.sendall(request)
        while not _response_complete(raw):
            data = sock.recv(65536)
            if not data:
                break
            arrivals.append(((time.perf_counter() - start) * 1000, data))
            raw += data
    return RawExchange(request, raw, tuple(arrivals))


@dataclass(frozen=True)
class Target:
    """Where to send measured requests: an OpenAI-compatible base URL, key and model."""

    base_url: str
    api_key: str
    model: str
    local: bool

    def describe(self) -> str:
        """Return a one-line description that never shows the key."""
        where = "the local lessonkit server" if self.local else self.base_url
        return f"{where}, model {self.model!r}"


def target_from_env(default_url: str, env: Mapping[str, str] | None = None) -> Target:
    """Return the target from LESSON_BASE_URL, LESSON_API_KEY and LESSON_MODEL, else `default_url`.

    The base URL is the part before /chat/completions (for example
    https://api.openai.com/v1). With no LESSON_BASE_URL the local server at
    `default_url` is used.
    """
    env = os.environ if env is None else env
    base = env.get("LESSON_BASE_URL", "").strip().rstrip("/")
    if not base:
        return Target(default_url.rstrip("/") + "/v1", "not-needed", "lessonkit-sim", True)
    return Target(
        base, env.get("LESSON_API_KEY", ""), env.get("LESSON_MODEL", "gpt-4o-mini"), False
    )


@dataclass(frozen=True)
class TimedReply:
    """One real request, timed on this machine's clock."""

    stream: bool
    text: str
    token_ms: tuple[float, ...]  # when each piece of text arrived (ms since the request)
    measured: timeline.Measured

    @property
    def n_pieces(self) -> int:
        """How many text pieces (deltas) arrived; 1 for a blocking reply."""
        return len(self.token_ms)


def time_request(
    target: Target,
    *,
    stream: bool,
    prompt: str = llm.RUNNING_PROMPT,
    max_tokens: int | None = None,
    timeout_s: float = 60.0,
) -> TimedReply:
    """Return the text of one chat completion and when its pieces arrived.

    Streaming: each delta is timed when its bytes arrive. Blocking: the whole
    text arrives with the JSON body, so the first token is the total time.
    """
    body: dict = {"model": target.model, "messages": [{"role": "user", "content": prompt}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body["stream"] = stream
    headers = {"Authorization": f"Bearer {target.api_key}"}
    url = target.base_url + "/chat/completions"
    with inprocess.http_client(timeout=timeout_s) as client:
        start = time.perf_counter()
        if not stream:
            reply = client.post(url, json=body, headers=headers)
            reply.raise_for_status()
            done_ms = (time.perf_counter() - start) * 1000
            text = reply.json()["choices"][0]["message"]["content"] or ""
            return TimedReply(False, text, (done_ms,), timeline.measure([done_ms]))
        reader, token_ms = StreamReader("openai"), []
        with client.stream("POST", url, json=body, headers=headers) as reply:
            reply.raise_for_status()
            for chunk in reply.iter_raw():
                at_ms = (time.perf_counter() - start) * 1000
                token_ms += [at_ms for delta in reader.feed(chunk) if delta]
        result = reader.close()
    return TimedReply(True, result.text, tuple(token_ms), timeline.measure(token_ms))


@dataclass(frozen=True)
class CancelResult:
    """A stream the client hung up on, and what the server's counters say afterwards."""

    text: str
    tokens_received: int
    answer_tokens: int
    stats_before: dict
    stats_after: dict

    @property
    def tokens_generated(self) -> int:
        """Tokens the server generated for this request."""
        return self.stats_after["tokens_generated"] - self.stats_before["tokens_generated"]


def _stats(client: httpx.Client, base_url: str) -> dict:
    return client.get(base_url + "/v1/stats").json()


def _stats_when_idle(client: httpx.Client, base_url: str, active: int, timeout_s: float) -> dict:
    """Return /v1/stats once no more streams are active than `active` (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = _stats(client, base_url)
        if stats["active_streams"] <= active or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


def cancel_stream(
    base_url: str,
    after_tokens: int,
    *,
    prompt: str = "Tell me everything about my parcel.",
    settle_s: float = 5.0,
    timeout_s: float = 30.0,
) -> CancelResult:
    """Return the CancelResult of reading `after_tokens` deltas, then hanging up.

    Streams an answer from the local server, hangs up after `after_tokens` deltas, and
    polls /v1/stats (up to `settle_s`) until the server has noticed the hang-up: a
    server that stops on disconnect has generated about `after_tokens` tokens, not
    the whole answer.
    """
    body = {"model": "lessonkit-sim", "stream": True,
            "messages": [{"role": "user", "content": prompt}]}  # fmt: skip
    reader, received = StreamReader("openai"), 0
    with inprocess.http_client(timeout=timeout_s) as client:
        before = _stats(client, base_url)
        with client.stream("POST", base_url + "/v1/chat/completions", json=body) as reply:
            for chunk in reply.iter_raw():
                received += sum(1 for delta in reader.feed(chunk) if delta)
                if received >= after_tokens:
                    break  # leaving the with-block closes the connection
        after = _stats_when_idle(client, base_url, before["active_streams"], settle_s)
    answer_tokens = len(llm.answer_for(prompt).tokens)
    return CancelResult(reader.text, received, answer_tokens, before, after)
