"""A real local streaming LLM server: the only place in lessonkit with sockets and sleeps.

Everything it sends is decided elsewhere. ``lessonkit.llm`` answers a prompt and
turns the answer into a plan of writes, ``(at_ms, bytes)`` pairs, without ever
touching a clock. This module does the two things that plan cannot do itself:

1. **sleep** until each write is due, measured on a monotonic clock from the
   moment the request arrived (``start + at_ms``, never a sum of sleeps, so
   timing errors do not pile up over a long answer), and
2. **write** the bytes to the socket at once, so every token leaves the machine
   when it is generated instead of waiting in a buffer.

While it sleeps it listens for the client going away, and stops generating
within one token when it does; ``GET /v1/stats`` shows the counters.

Built on Starlette (routing, CORS, request parsing) and uvicorn (the HTTP server).
Streaming responses are written as plain ASGI messages so each write is visible.

Endpoints (see /work/shared/CONTRACT.md section 3)::

    POST /v1/chat/completions   OpenAI-compatible, streaming and not
    POST /v1/messages           Anthropic-compatible, streaming and not
    GET  /v1/stream             plain SSE for the browser's EventSource (id:, retry:, resume)
    GET  /v1/models             the one model this server pretends to be
    GET  /v1/stats              counters: active_streams, tokens_generated, ...
    WS   /v1/ws                 the same answer over a WebSocket, for comparison

Fault injection, as query parameters on the streaming endpoints: ``drop_after_bytes``,
``stall_ms``, ``heartbeat_ms``; and per-request ``prefill_ms`` / ``per_token_ms``.

In a notebook::

    with lessonkit.server.running(prefill_ms=300, per_token_ms=40) as url:
        ...  # url == "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import errno
import ipaddress
import itertools
import json
import logging
import math
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from lessonkit import llm
from lessonkit.sse import comment

__all__ = [
    "MAX_BODY_BYTES",
    "MODEL",
    "Settings",
    "Stats",
    "configure_parser",
    "create_app",
    "main",
    "running",
]

MODEL = "lessonkit-sim"
MAX_BODY_BYTES = 1 << 20  # 1 MiB: larger request bodies get 413
MAX_DELAY_MS = 600_000.0  # no query parameter may ask for a pause longer than 10 minutes
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_PORT = 65535

# Why each streaming header is there:
STREAM_HEADERS = [
    # The browser's EventSource and the SDKs only treat the body as an event stream
    # with this media type; everything else is an ordinary download.
    (b"content-type", b"text/event-stream; charset=utf-8"),
    # Tells browsers and caches not to store the stream or answer a later request
    # from a stored copy: every request must reach the model.
    (b"cache-control", b"no-cache"),
    # Nginx reads this response header and then passes the bytes on as they arrive
    # instead of collecting the response in its proxy buffer (see lessonkit.proxy).
    (b"x-accel-buffering", b"no"),
]


# --------------------------------------------------------------------------- settings & stats


@dataclass(frozen=True)
class Settings:
    """Server-wide defaults; each request may override the timing with query parameters."""

    prefill_ms: float = 300.0
    per_token_ms: float = 40.0
    jitter_ms: float = 0.0
    seed: int = 0
    max_body_bytes: int = MAX_BODY_BYTES
    retry_ms: int = 3000
    model: str = MODEL

    def __post_init__(self) -> None:
        """Refuse values the server could not use, so the mistake shows here, not per request."""
        for name in ("prefill_ms", "per_token_ms", "jitter_ms"):
            check_milliseconds(name, getattr(self, name))
        for name, low in (("seed", None), ("max_body_bytes", 1), ("retry_ms", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            if low is not None and value < low:
                raise ValueError(f"{name} must be {low} or more, got {value!r}")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"model must be a non-empty string, got {self.model!r}")

    @classmethod
    def from_options(cls, **options: Any) -> Settings:
        """Return Settings from options; an unknown name is a TypeError naming the valid ones."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [name for name in options if name not in names]
        if unknown:
            raise TypeError(
                f"unknown server option {unknown[0]!r}; the options are: {', '.join(names)}"
            )
        return cls(**options)


def check_milliseconds(name: str, value: Any) -> float:
    """Return `value` if it is a usable duration (a finite number of ms, 0 to MAX_DELAY_MS)."""
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not number or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a number of milliseconds, 0 or more, got {value!r}")
    if value > MAX_DELAY_MS:
        raise ValueError(
            f"{name} must be at most {MAX_DELAY_MS:.0f} ms (10 minutes), got {value!r}"
        )
    return value


@dataclass
class Stats:
    """Counters shown by GET /v1/stats (one instance per server; mutated on its event loop)."""

    requests: int = 0  # every HTTP request and WebSocket that reached the app
    active_streams: int = 0  # responses being written right now
    streams_completed: int = 0  # ended with their end marker
    streams_dropped: int = 0  # cut on purpose by drop_after_bytes
    tokens_generated: int = 0  # tokens the simulated model produced
    tokens_after_disconnect: int = 0  # of those, produced for a client that was already gone
    disconnects: int = 0  # clients that left before the end
    streams_stopped: int = 0  # WebSocket answers the client stopped with {"stop": true}

    def as_dict(self) -> dict[str, int]:
        """Return the counters as a plain dict (the JSON body of /v1/stats)."""
        return asdict(self)


# --------------------------------------------------------------------------- errors


class BadRequest(Exception):
    """A client mistake: becomes a 4xx with a JSON error body in the endpoint's API style."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param


_OPENAI_CODES = {404: "unknown_url", 405: "method_not_allowed", 413: "request_too_large"}
_ANTHROPIC_TYPES = {404: "not_found_error", 413: "request_too_large", 500: "api_error"}


def error_response(path: str, status: int, message: str, param: str | None = None) -> JSONResponse:
    """Return the error body in the style of the API that owns `path`.

    OpenAI: {"error": {"message", "type", "param", "code"}};
    Anthropic (/v1/messages): {"type": "error", "error": {"type", "message"}}.
    """
    if path.startswith("/v1/messages"):
        kind = _ANTHROPIC_TYPES.get(status, "invalid_request_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        error = {
            "message": message,
            "type": "server_error" if status >= 500 else "invalid_request_error",
            "param": param,
            "code": _OPENAI_CODES.get(status),
        }
        body = {"error": error}
    return JSONResponse(body, status_code=status)


async def _on_bad_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BadRequest)
    return error_response(request.url.path, exc.status, exc.message, exc.param)


async def _on_unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    """The last resort: a bug in the server still answers in the API's JSON error style.

    Bad input never gets here (every parameter is checked and becomes a 4xx). Starlette
    logs the traceback after this response is sent, because a bug should be seen.
    """
    message = f"The lessonkit server failed ({type(exc).__name__}); this is a bug in lessonkit"
    return error_response(request.url.path, 500, message)


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    """Turn Starlette's own 404/405 into JSON errors (keeping the Allow header)."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"Unknown path {request.url.path!r}; see GET /v1/models for what this server has"
    elif exc.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    response = error_response(request.url.path, exc.status_code, message)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


# --------------------------------------------------------------------------- reading requests


async def read_json_body(request: Request, max_body_bytes: int) -> dict[str, Any]:
    """Return the request body parsed as a JSON object; BadRequest (400 or 413) otherwise."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body_bytes:
        raise BadRequest(f"Request body is larger than {max_body_bytes} bytes", status=413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body_bytes:
            raise BadRequest(f"Request body is larger than {max_body_bytes} bytes", status=413)
    if not body:
        raise BadRequest("Request body is empty; send a JSON object")
    try:
        value = json.loads(bytes(body))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadRequest(f"Request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"Request body must be a JSON object, not {type(value).__name__}")
    _check_unicode(value)
    return value


def _check_unicode(value: Any) -> None:
    """Raise BadRequest if a JSON value holds a lone surrogate escape such as \\ud800.

    JSON allows such escapes but they are not text: no UTF-8 encoding exists for them,
    and the simulated model hashes the prompt's UTF-8 bytes.
    """
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(
            "The JSON contains an unpaired surrogate escape (\\ud800-\\udfff), "
            "which is not valid Unicode text"
        ) from None


def _field(body: dict, name: str, kinds: tuple[type, ...], *, required: bool = False) -> Any:
    """Return body[name] after checking its JSON type (bool is never accepted as a number)."""
    value = body.get(name)
    if value is None:
        if required:
            raise BadRequest(f"Missing required parameter: '{name}'", param=name)
        return None
    wrong_bool = isinstance(value, bool) and bool not in kinds
    if wrong_bool or not isinstance(value, kinds):
        want = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
        raise BadRequest(
            f"Invalid type for '{name}': expected {want}, got {_json_name(value)}", param=name
        )
    return value


_JSON_NAMES = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
}


def _json_name(value: Any) -> str:
    for kind, name in [(bool, "a boolean"), (int, "an integer"), (float, "a number")]:
        if isinstance(value, kind):
            return name
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _positive_int(body: dict, name: str, *, required: bool = False) -> int | None:
    value = _field(body, name, (int,), required=required)
    if value is not None and value < 1:
        raise BadRequest(f"'{name}' must be at least 1, got {value}", param=name)
    return value


def _message_text(content: Any, where: str) -> str:
    """Return the text of one chat message's content (a string or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise BadRequest(
                    f"{where}.content[{i}] must be an object with a 'type'", param=where
                )
            if part["type"] == "text":
                if not isinstance(part.get("text"), str):
                    raise BadRequest(f"{where}.content[{i}].text must be a string", param=where)
                texts.append(part["text"])
        return "".join(texts)
    raise BadRequest(f"{where}.content must be a string or an array of parts", param=where)


def _last_user_text(messages: list, roles: tuple[str, ...]) -> str:
    """Return the text of the last user message (the prompt the simulated model answers)."""
    if not messages:
        raise BadRequest("'messages' must contain at least one message", param="messages")
    prompt = None
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{where} must be an object", param=where)
        role = message.get("role")
        if role not in roles:
            raise BadRequest(f"{where}.role must be one of {', '.join(roles)}", param=where)
        if message.get("content") is None and role == "assistant":
            continue
        text = _message_text(message.get("content"), where)
        if role == "user":
            prompt = text
    if prompt is None:
        raise BadRequest("'messages' must contain a user message", param="messages")
    return prompt


@dataclass(frozen=True)
class Pace:
    """The timing and faults of one request, read from its query parameters."""

    prefill_ms: float
    per_token_ms: float
    drop_after_bytes: int | None = None
    stall_ms: float = 0.0
    heartbeat_ms: float | None = None


def _query_number(query: Any, name: str, *, integer: bool = False, low: float = 0.0) -> Any:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise BadRequest(
            f"Query parameter '{name}' must be {kind}, got {raw!r}", param=name
        ) from None
    if not math.isfinite(value) or value < low or (not integer and value > MAX_DELAY_MS):
        raise BadRequest(f"Query parameter '{name}' is out of range: {raw!r}", param=name) from None
    return value


def read_pace(query: Any, settings: Settings) -> Pace:
    """Return the Pace for one request: server defaults overridden by query parameters."""
    prefill_ms = _query_number(query, "prefill_ms")
    per_token_ms = _query_number(query, "per_token_ms")
    heartbeat_ms = _query_number(query, "heartbeat_ms", low=1.0)
    return Pace(
        prefill_ms=settings.prefill_ms if prefill_ms is None else prefill_ms,
        per_token_ms=settings.per_token_ms if per_token_ms is None else per_token_ms,
        drop_after_bytes=_query_number(query, "drop_after_bytes", integer=True),
        stall_ms=_query_number(query, "stall_ms") or 0.0,
        heartbeat_ms=heartbeat_ms,
    )


# --------------------------------------------------------------------------- the plan of writes


def stall_point_ms(token_times_ms: list[float]) -> float:
    """Return when a stall starts: right after half of the tokens (rounded up) exist."""
    if not token_times_ms:
        return 0.0
    return token_times_ms[(len(token_times_ms) + 1) // 2 - 1]


def with_stall(
    writes: Iterable[tuple[float, Any]],
    *,
    after_ms: float,
    stall_ms: float,
    heartbeat_ms: float | None = None,
    ping: Any = b": ping\n\n",
) -> Iterator[tuple[float, Any]]:
    """Yield the writes with everything due after `after_ms` moved `stall_ms` later.

    This is the mid-stream pause of ``stall_ms=M``. When ``heartbeat_ms`` is set the
    pause is filled with `ping` writes, as an idle server keeps a connection warm.
    """
    paused = False
    for at_ms, data in writes:
        if stall_ms > 0 and at_ms > after_ms:
            if not paused:
                paused = True
                if heartbeat_ms:
                    beat_ms = after_ms + heartbeat_ms
                    while beat_ms < after_ms + stall_ms:
                        yield beat_ms, ping
                        beat_ms += heartbeat_ms
            at_ms += stall_ms
        yield at_ms, data


def shifted_times(times_ms: list[float], after_ms: float, stall_ms: float) -> list[float]:
    """Return token times with the stall applied (the same shift as with_stall)."""
    return [t + stall_ms if stall_ms > 0 and t > after_ms else t for t in times_ms]


# --------------------------------------------------------------------------- pacing


class Pacer:
    """Sleeps until ``start + at_ms`` on the event loop's monotonic clock, unless woken early.

    One Pacer belongs to one response. The disconnect watcher (or the server shutting
    down) calls `hang_up`, which wakes a pending `sleep_until` at once, so a client
    that leaves stops generation before the next token, not after the next sleep.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        start: float,
        lateness_ms: collections.deque[float] | None = None,
    ) -> None:
        self.loop = loop
        self.start = start  # loop.time() when the request arrived
        self.lateness_ms = lateness_ms  # where to note how late each wake-up was
        self.gone = False  # True once the client left (or the server is stopping)
        self.reason = ""  # why: "gone" (client left), "stop" (client asked), "shutdown"
        self._wake: asyncio.Future[None] | None = None

    async def sleep_until(self, at_ms: float) -> bool:
        """Wait until `at_ms` after the start; return True if the client is still there."""
        if self.gone:
            return False
        deadline = self.start + at_ms / 1000.0
        if deadline > self.loop.time():
            # A bare future woken by a timer or by hang_up: cheaper than a task per token.
            self._wake = self.loop.create_future()
            timer = self.loop.call_at(deadline, _resolve, self._wake)
            try:
                await self._wake
            finally:
                timer.cancel()
                self._wake = None
        if self.lateness_ms is not None and not self.gone:
            self.lateness_ms.append((self.loop.time() - deadline) * 1000.0)
        return not self.gone

    def hang_up(self, reason: str = "gone") -> None:
        """Mark the response as over (see `reason`) and wake the sleeper."""
        if not self.gone:
            self.reason = reason
        self.gone = True
        if self._wake is not None:
            _resolve(self._wake)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class TokenClock:
    """Counts the tokens the simulated model has produced by a given at_ms."""

    def __init__(self, times_ms: list[float]) -> None:
        self.times_ms = times_ms
        self.produced = 0

    def advance(self, at_ms: float) -> int:
        """Return how many more tokens exist at `at_ms` than at the previous call."""
        before = self.produced
        while self.produced < len(self.times_ms) and self.times_ms[self.produced] <= at_ms:
            self.produced += 1
        return self.produced - before


# --------------------------------------------------------------------------- timed responses


class TimedResponse:
    """An ASGI response that plays a plan of ``(at_ms, bytes)`` writes in real time.

    A streaming answer has many writes; a blocking answer is the same thing with a
    single write at the end. Each write is one ``http.response.body`` message, which
    uvicorn hands to the socket right away: that is the flush.
    """

    def __init__(
        self,
        server: ServerState,
        writes: Iterable[tuple[float, bytes]],
        *,
        start: float,
        token_times_ms: list[float],
        headers: list[tuple[bytes, bytes]],
        drop_after_bytes: int | None = None,
        status: int = 200,
    ) -> None:
        self.server = server
        self.writes = writes
        self.start = start
        self.tokens = TokenClock(token_times_ms)
        self.headers = headers
        self.drop_after_bytes = drop_after_bytes
        self.status = status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stats = self.server.stats
        pacer = self.server.pacer(self.start)
        watcher = asyncio.ensure_future(_watch_disconnect(receive, pacer))
        self.server.pacers.add(pacer)
        stats.active_streams += 1
        try:
            await send(
                {"type": "http.response.start", "status": self.status, "headers": self.headers}
            )
            await self._play(send, pacer)
        finally:
            stats.active_streams -= 1
            self.server.pacers.discard(pacer)
            watcher.cancel()

    async def _play(self, send: Send, pacer: Pacer) -> None:
        stats = self.server.stats
        sent_bytes = 0
        for at_ms, data in self.writes:
            if not await pacer.sleep_until(at_ms):
                if pacer.reason == "gone":
                    stats.disconnects += 1
                return  # (or the server is shutting down: the stream just ends)
            new_tokens = self.tokens.advance(at_ms)
            stats.tokens_generated += new_tokens
            limit = self.drop_after_bytes
            if limit is not None and sent_bytes + len(data) >= limit:
                # Fault injection: the bytes up to the limit, then an abrupt close (no end
                # marker, no final empty chunk). Returning without finishing the response
                # makes uvicorn close the TCP connection.
                await send(
                    {
                        "type": "http.response.body",
                        "body": data[: limit - sent_bytes],
                        "more_body": True,
                    }
                )
                if sent_bytes + len(data) > limit:
                    stats.streams_dropped += 1
                    return
            else:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            sent_bytes += len(data)
            await asyncio.sleep(0)  # let the disconnect watcher run before the next token
            if pacer.reason == "gone":
                # The client was gone by the time these tokens were written (at most one
                # token's worth, because the pacer never sleeps past a hang-up).
                stats.tokens_after_disconnect += new_tokens
                stats.disconnects += 1
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        stats.streams_completed += 1


async def _watch_disconnect(receive: Receive, pacer: Pacer) -> None:
    """Wait for the ASGI ``http.disconnect`` message, then hang up the pacer."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            pacer.hang_up()
            return


# --------------------------------------------------------------------------- the app


class ServerState:
    """What the endpoints share: settings, counters, live pacers and id counters."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stats = Stats()
        self.pacers: set[Pacer] = set()
        # How late each write was (ms after its at_ms), the last 100,000 of them
        self.lateness_ms: collections.deque[float] = collections.deque(maxlen=100_000)
        # How long each request waited between reaching the socket and reaching the app
        self.arrival_to_app_ms: collections.deque[float] = collections.deque(maxlen=100_000)
        self._ids = itertools.count(1)

    def pacer(self, start: float) -> Pacer:
        """Return a Pacer for one response that started at `start` (loop time)."""
        return Pacer(asyncio.get_running_loop(), start, self.lateness_ms)

    def report(self) -> dict[str, Any]:
        """Return the counters plus percentiles of write lateness and of the wait to the app."""
        return {
            **self.stats.as_dict(),
            "write_lateness_ms": _percentiles(self.lateness_ms),
            "arrival_to_app_ms": _percentiles(self.arrival_to_app_ms),
        }

    def reset(self) -> None:
        """Zero the counters (streams in progress stay counted as active)."""
        for name in self.stats.as_dict():
            if name != "active_streams":
                setattr(self.stats, name, 0)
        self.lateness_ms.clear()
        self.arrival_to_app_ms.clear()

    def next_id(self, prefix: str) -> str:
        """Return a fresh response id such as 'chatcmpl-000001'."""
        return f"{prefix}{next(self._ids):06d}"

    def hang_up_all(self) -> None:
        """End every response in progress (the server is stopping)."""
        for pacer in list(self.pacers):
            pacer.hang_up("shutdown")


def _percentiles(values_ms: Iterable[float]) -> dict[str, Any]:
    """Return {"count", "p50", "p95", "max"} of some milliseconds (None when empty)."""
    ordered = sorted(values_ms)

    def at(q: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else None

    return {"count": len(ordered), "p50": at(0.5), "p95": at(0.95), "max": at(1.0)}


def _start(request: Request) -> float:
    """Return the loop time when this request reached the server (the timing anchor)."""
    return request.state.start


def _token_times(n_tokens: int, pace: Pace, settings: Settings, *, jitter: bool = True) -> list:
    """Return when each of the `n_tokens` tokens this response sends is generated."""
    return llm.token_times_ms(
        n_tokens,
        prefill_ms=pace.prefill_ms,
        per_token_ms=pace.per_token_ms,
        jitter_ms=settings.jitter_ms if jitter else 0.0,
        seed=settings.seed,
    )


def _timed(
    state: ServerState,
    request: Request,
    times: list[float],
    pace: Pace,
    writes: Iterable[tuple[float, bytes]],
    headers: list[tuple[bytes, bytes]],
) -> TimedResponse:
    """Return the TimedResponse for a plan of writes, with the stall fault applied."""
    after_ms = stall_point_ms(times)
    stalled = with_stall(
        writes,
        after_ms=after_ms,
        stall_ms=pace.stall_ms,
        heartbeat_ms=pace.heartbeat_ms,
        ping=comment("ping"),
    )
    return TimedResponse(
        state,
        stalled,
        start=_start(request),
        token_times_ms=shifted_times(times, after_ms, pace.stall_ms),
        headers=headers,
        drop_after_bytes=pace.drop_after_bytes,
    )


def _stream(
    state: ServerState,
    request: Request,
    answer: llm.Answer,
    pace: Pace,
    dialect: str,
    n_tokens: int | None = None,
    **options: Any,
) -> TimedResponse:
    """Return a streamed answer (`n_tokens`: how many it sends, if fewer than all)."""
    writes = llm.stream_writes(
        answer,
        dialect,
        prefill_ms=pace.prefill_ms,
        per_token_ms=pace.per_token_ms,
        jitter_ms=state.settings.jitter_ms,
        seed=state.settings.seed,
        heartbeat_ms=pace.heartbeat_ms,
        model=state.settings.model,
        **options,
    )
    if n_tokens is None:
        n_tokens = len(answer.tokens)
    times = _token_times(n_tokens, pace, state.settings)
    return _timed(state, request, times, pace, writes, list(STREAM_HEADERS))


def _blocking(
    state: ServerState,
    request: Request,
    answer: llm.Answer,
    pace: Pace,
    dialect: str,
    **options: Any,
) -> TimedResponse:
    at_ms, body = llm.blocking_body(
        answer,
        dialect,
        prefill_ms=pace.prefill_ms,
        per_token_ms=pace.per_token_ms,
        model=state.settings.model,
        **options,
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    # A blocking answer is a stream with one write, due when the last token exists.
    times = _token_times(len(answer.tokens), pace, state.settings, jitter=False)
    return _timed(state, request, times, pace, [(at_ms, body)], headers)


async def chat_completions(request: Request) -> TimedResponse:
    """POST /v1/chat/completions: the OpenAI Chat Completions API, streaming or not."""
    state: ServerState = request.app.state.lessonkit
    pace = read_pace(request.query_params, state.settings)
    body = await read_json_body(request, state.settings.max_body_bytes)
    _field(body, "model", (str,), required=True)
    messages = _field(body, "messages", (list,), required=True)
    roles = ("system", "developer", "user", "assistant", "tool")
    prompt = _last_user_text(messages, roles)
    stream = _field(body, "stream", (bool,)) or False
    max_tokens = _positive_int(body, "max_completion_tokens") or _positive_int(body, "max_tokens")
    options = _field(body, "stream_options", (dict,)) or {}
    include_usage = _field(options, "include_usage", (bool,)) or False
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    ids = {"created": int(time.time()), "response_id": state.next_id("chatcmpl-")}
    if stream:
        return _stream(state, request, answer, pace, "openai", include_usage=include_usage, **ids)
    return _blocking(state, request, answer, pace, "openai", **ids)


async def messages(request: Request) -> TimedResponse:
    """POST /v1/messages: the Anthropic Messages API, streaming or not."""
    state: ServerState = request.app.state.lessonkit
    pace = read_pace(request.query_params, state.settings)
    body = await read_json_body(request, state.settings.max_body_bytes)
    _field(body, "model", (str,), required=True)
    max_tokens = _positive_int(body, "max_tokens", required=True)
    messages_ = _field(body, "messages", (list,), required=True)
    system = body.get("system")
    if system is not None:
        _message_text(system, "system")
    prompt = _last_user_text(messages_, ("user", "assistant"))
    stream = _field(body, "stream", (bool,)) or False
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    ids = {"response_id": state.next_id("msg_")}
    if stream:
        return _stream(state, request, answer, pace, "anthropic", **ids)
    return _blocking(state, request, answer, pace, "anthropic", **ids)


async def event_stream(request: Request) -> TimedResponse | Response:
    """GET /v1/stream?prompt=...: plain SSE for EventSource, resumable with Last-Event-ID.

    Every token event carries ``id: <token index>``. A reconnecting EventSource sends
    the last id it saw in the ``Last-Event-ID`` header (``?last_event_id=`` works too,
    for clients that cannot set headers); the answer then continues with the next
    token, so nothing is missing and nothing is repeated.
    """
    state: ServerState = request.app.state.lessonkit
    query = request.query_params
    pace = read_pace(query, state.settings)
    prompt = query.get("prompt") or llm.RUNNING_PROMPT
    max_tokens = _query_number(query, "max_tokens", integer=True, low=1)
    dialect = query.get("dialect", "eventsource")
    if dialect not in ("eventsource", "lesson"):
        raise BadRequest(
            "Query parameter 'dialect' must be 'eventsource' or 'lesson'", param="dialect"
        )
    last_id = request.headers.get("last-event-id") or query.get("last_event_id") or ""
    resume_after_id = None
    if last_id.strip():
        if not last_id.strip().isascii() or not last_id.strip().isdigit():
            raise BadRequest(
                f"Last-Event-ID must be a token index, got {last_id!r}", param="last_event_id"
            )
        resume_after_id = int(last_id)
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    n_tokens = len(answer.tokens)
    if dialect == "lesson":
        return _stream(state, request, answer, pace, dialect)
    if resume_after_id is not None and resume_after_id >= n_tokens:
        # The client already saw the final event (its id is the token count): 204 No
        # Content is the one answer that tells EventSource to stop reconnecting.
        return Response(status_code=204)
    skipped = 0 if resume_after_id is None else resume_after_id + 1
    return _stream(
        state,
        request,
        answer,
        pace,
        dialect,
        n_tokens=n_tokens - skipped,
        resume_after_id=resume_after_id,
        retry_ms=state.settings.retry_ms,
    )


async def models(request: Request) -> JSONResponse:
    """GET /v1/models: the one model this server simulates, in OpenAI's list format."""
    state: ServerState = request.app.state.lessonkit
    model = {
        "id": state.settings.model,
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "lessonkit",
    }
    return JSONResponse({"object": "list", "data": [model]})


async def stats(request: Request) -> JSONResponse:
    """GET /v1/stats: the counters (see Stats) and how late writes were; DELETE zeroes them.

    ``write_lateness_ms`` (p50, p95, max) is how long after its due time each write
    actually happened: the server's own timing error, before any network or client.
    """
    state: ServerState = request.app.state.lessonkit
    if request.method == "DELETE":
        state.reset()
    return JSONResponse(state.report())


async def websocket_stream(websocket: WebSocket) -> None:
    """WS /v1/ws: the same answer as JSON messages {"delta": t} ... {"done": true}.

    The prompt comes from ``?prompt=`` or, if absent, from the first message the client
    sends (a JSON object {"prompt": ..., "max_tokens": ...} or plain text). While the
    answer streams the client may send {"stop": true}: the two-way talk SSE cannot do.
    """
    state: ServerState = websocket.app.state.lessonkit
    await websocket.accept()
    try:
        pace = read_pace(websocket.query_params, state.settings)
        prompt = websocket.query_params.get("prompt")
        max_tokens = _query_number(websocket.query_params, "max_tokens", integer=True, low=1)
        if not prompt:
            prompt, max_tokens = _ws_prompt(await websocket.receive_text(), max_tokens)
    except BadRequest as exc:
        await websocket.send_json({"error": exc.message})
        await websocket.close(code=1008)
        return
    except WebSocketDisconnect:
        state.stats.disconnects += 1
        return
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    writes, tokens = _ws_plan(answer, pace, state.settings)
    pacer = state.pacer(asyncio.get_running_loop().time())  # the clock starts at the prompt
    listener = asyncio.ensure_future(_ws_listen(websocket, pacer))
    state.pacers.add(pacer)
    state.stats.active_streams += 1
    try:
        await _ws_play(websocket, state.stats, pacer, writes, tokens, pace.drop_after_bytes)
    except (WebSocketDisconnect, RuntimeError):  # the client went away while we were sending
        state.stats.disconnects += 1
    finally:
        state.stats.active_streams -= 1
        state.pacers.discard(pacer)
        listener.cancel()


PING = {"ping": True}


def _ws_plan(
    answer: llm.Answer, pace: Pace, settings: Settings
) -> tuple[Iterator[tuple[float, dict]], TokenClock]:
    """Return the timed WebSocket messages of an answer (faults applied) and its token clock."""
    times = _token_times(len(answer.tokens), pace, settings)
    plan = [(t, {"delta": tok}) for t, tok in zip(times, answer.tokens, strict=True)]
    end_ms = times[-1] if times else pace.prefill_ms
    plan.append((end_ms, {"done": True, "finish_reason": answer.finish_reason}))
    if pace.heartbeat_ms:
        plan = _with_heartbeats(plan, pace.heartbeat_ms, PING)
    after_ms = stall_point_ms(times)
    writes = with_stall(
        plan, after_ms=after_ms, stall_ms=pace.stall_ms, heartbeat_ms=pace.heartbeat_ms, ping=PING
    )
    return writes, TokenClock(shifted_times(times, after_ms, pace.stall_ms))


async def _ws_play(
    websocket: WebSocket,
    stats: Stats,
    pacer: Pacer,
    writes: Iterable[tuple[float, dict]],
    tokens: TokenClock,
    drop_after_bytes: int | None,
) -> None:
    """Send each message when it is due; stop early if the client leaves or says stop."""
    sent_bytes = 0
    for at_ms, message in writes:
        if not await pacer.sleep_until(at_ms):
            if pacer.reason == "stop":  # the client asked to stop: end politely
                stats.streams_stopped += 1
                await websocket.send_json({"done": True, "finish_reason": "stopped"})
                await websocket.close()
            elif pacer.reason == "shutdown":
                await websocket.close(code=1001)  # 1001: going away
            else:
                stats.disconnects += 1
            return
        stats.tokens_generated += tokens.advance(at_ms)
        text = json.dumps(message, ensure_ascii=False)
        sent_bytes += len(text.encode())
        if drop_after_bytes is not None and sent_bytes > drop_after_bytes:
            # Messages are atomic on a WebSocket: stop before the one that crosses the
            # limit and close with 1011 (server error) instead of a done message.
            stats.streams_dropped += 1
            await websocket.close(code=1011)
            return
        await websocket.send_text(text)
    stats.streams_completed += 1
    await websocket.close()


def _ws_prompt(first_message: str, max_tokens: int | None) -> tuple[str, int | None]:
    """Return (prompt, max_tokens) from the client's first WebSocket message."""
    try:
        value = json.loads(first_message)
    except ValueError:
        return first_message, max_tokens
    if not isinstance(value, dict):
        return first_message, max_tokens
    _check_unicode(value)
    prompt = _field(value, "prompt", (str,), required=True)
    return prompt, _positive_int(value, "max_tokens") or max_tokens


def _with_heartbeats(plan: list[tuple[float, Any]], heartbeat_ms: float, ping: Any) -> list:
    """Return the plan with a ping wherever `heartbeat_ms` passes without a write."""
    out: list[tuple[float, Any]] = []
    last_ms = 0.0
    for at_ms, message in plan:
        while at_ms - last_ms > heartbeat_ms:
            last_ms += heartbeat_ms
            out.append((last_ms, ping))
        out.append((at_ms, message))
        last_ms = at_ms
    return out


async def _ws_listen(websocket: WebSocket, pacer: Pacer) -> None:
    """Hang up the pacer when the client disconnects or sends {"stop": true}."""
    try:
        while True:
            message = await websocket.receive_text()
            with contextlib.suppress(ValueError):
                if json.loads(message) == {"stop": True}:
                    pacer.hang_up("stop")
                    return
    except (WebSocketDisconnect, RuntimeError):
        pacer.hang_up("gone")


class _StampStart:
    """ASGI middleware: record the monotonic arrival time and count every request."""

    def __init__(self, app: Any, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            now = asyncio.get_running_loop().time()
            state = scope.setdefault("state", {})
            # The protocol (see _arrival_stamped) noted when the request's bytes came in;
            # under load that is earlier than now, and the answer's clock starts there.
            arrived = state.setdefault("start", now)
            self.state.arrival_to_app_ms.append((now - arrived) * 1000.0)
            self.state.stats.requests += 1
        await self.app(scope, receive, send)


# Pages served by JupyterLab, Voila or a local file server live on another localhost
# port: a different origin, so the browser asks (CORS) before it lets them read us.
LOCAL_ORIGINS = r"https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?"


def create_app(settings: Settings | None = None) -> Starlette:
    """Return the Starlette app; its ServerState is at ``app.state.lessonkit``."""
    state = ServerState(settings or Settings())
    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/stream", event_stream, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/stats", stats, methods=["GET", "DELETE"]),
        WebSocketRoute("/v1/ws", websocket_stream),
    ]
    middleware = [
        Middleware(_StampStart, state=state),
        # allow_headers=["*"] echoes what the preflight asks for, which is needed
        # because a wildcard never covers Authorization; no cookies are involved.
        Middleware(
            CORSMiddleware,
            allow_origin_regex=LOCAL_ORIGINS,
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["*"],
            max_age=600,
        ),
    ]
    handlers = {
        BadRequest: _on_bad_request,
        HTTPException: _on_http_exception,
        Exception: _on_unexpected_error,
    }
    app = Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)
    app.state.lessonkit = state
    return app


# --------------------------------------------------------------------------- running it


class _QuietDeliberateDrops(logging.Filter):
    """Hide uvicorn's complaint about a response we cut short on purpose (drop_after_bytes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


_DROP_FILTER = _QuietDeliberateDrops()
logging.getLogger("uvicorn.error").addFilter(_DROP_FILTER)


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """Return a listening TCP socket; port 0 lets the OS pick a free port."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise ValueError(f"port must be an integer from 0 to {MAX_PORT}, got {port!r}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Naming IPPROTO_TCP matters: asyncio only switches Nagle's algorithm off on
    # sockets whose proto says TCP. With Nagle on, a small write (one token) waits
    # for the ACK of the previous one, and the client delays that ACK up to 40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """Return the http:// base URL of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _http_protocol() -> type[asyncio.Protocol]:
    """Return uvicorn's HTTP protocol class (httptools if installed, else h11), stamped."""
    try:  # the C parser: several times cheaper per request than pure-Python h11
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    return _arrival_stamped(base)


def _arrival_stamped(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """Return a subclass of a uvicorn HTTP protocol that notes when each request arrived.

    When a hundred requests come in together, the last one reaches the app only after
    the event loop has parsed and routed the other ninety-nine. Starting its clock
    then would make its first token late by that wait; a real model's time to first
    token counts from the request's arrival, so the clock starts at the first
    ``data_received`` of each request (``scope["state"]["start"]``, loop time).
    """

    class ArrivalStamped(base):  # type: ignore[misc, valid-type]
        def data_received(self, data: bytes) -> None:
            arrived = self.loop.time()
            before = getattr(self, "scope", None)
            super().data_received(data)
            scope = getattr(self, "scope", None)
            if scope is not None and scope is not before and isinstance(scope.get("state"), dict):
                scope["state"].setdefault("start", arrived)  # a request began in this data

    ArrivalStamped.__name__ = ArrivalStamped.__qualname__ = f"ArrivalStamped{base.__name__}"
    return ArrivalStamped


def _uvicorn_config(
    app: Any, *, log_level: str, access_log: bool, log_config: Any
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        http=_http_protocol(),
        # Not uvloop, even when installed: its loop.time() and timers have a resolution
        # of 1 ms, too coarse for pacing tokens and for measuring how late they are.
        loop="asyncio",
        log_level=log_level,
        access_log=access_log,
        log_config=log_config,
        lifespan="off",
        ws="websockets-sansio",  # the maintained websockets API (no deprecation warnings)
        timeout_graceful_shutdown=2,
        # Our routes are the only ones; uvicorn's Server header adds nothing here.
        server_header=False,
    )


class BackgroundServer:
    """A uvicorn server running an ASGI app on its own event loop in a daemon thread.

    A Jupyter kernel already runs an event loop in the main thread, so the server
    gets a new thread with its own loop (``asyncio.run`` there); uvicorn only installs
    signal handlers in the main thread, so none are touched.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.sock = bind_socket(host, port)
        self.url = url_of(self.sock)
        config = _uvicorn_config(app, log_level="warning", access_log=False, log_config=None)
        self.server = uvicorn.Server(config)
        self.on_stop = on_stop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name=f"lessonkit {self.url}", daemon=True)

    def _run(self) -> None:
        async def serve() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve(sockets=[self.sock])

        asyncio.run(serve())

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the thread and return the URL once the server accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.005)
        return self.url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving: end open streams, let uvicorn shut down, join the thread."""
        if self.loop is not None and self.on_stop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may close meanwhile
                self.loop.call_soon_threadsafe(self.on_stop)
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout_s)
            if self.thread.is_alive():
                self.server.force_exit = True
                self.thread.join(timeout_s)
        self.sock.close()


@contextlib.contextmanager
def serving(app: Any, *, on_stop: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield the base URL of `app` served on a free loopback port for the with-block.

    Shared by running() and lessonkit.proxy.running_proxy(); `on_stop` runs on the
    server's loop when the block ends, before uvicorn shuts down.
    """
    background = BackgroundServer(app, on_stop=on_stop)
    url = background.start()
    try:
        yield url
    finally:
        background.stop()


@contextlib.contextmanager
def running(prefill_ms: float = 300, per_token_ms: float = 40, **options: Any) -> Iterator[str]:
    """Yield the base URL ("http://127.0.0.1:PORT") of a server running in the background.

    The server lives as long as the with-block, on a free port of the loopback
    interface, in a thread with its own event loop (so it works inside Jupyter).
    It stops when the block ends, also when a cell is interrupted. Other options
    are Settings fields (jitter_ms, seed, max_body_bytes, retry_ms, model). A value
    the server could not use (a negative or non-numeric time, an unknown option)
    raises here, before anything starts::

        with running(prefill_ms=300, per_token_ms=40) as url:
            httpx.get(url + "/v1/stream?prompt=hi")
    """
    settings = Settings.from_options(prefill_ms=prefill_ms, per_token_ms=per_token_ms, **options)
    app = create_app(settings)
    with serving(app, on_stop=app.state.lessonkit.hang_up_all) as url:
        yield url


# --------------------------------------------------------------------------- command line


def is_loopback(host: str) -> bool:
    """Return True if `host` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def port_number(text: str) -> int:
    """Return `text` as a TCP port (0-65535); argparse shows the error otherwise."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"must be a port number from 0 to {MAX_PORT} (0 picks a free one), got {text!r}"
        )
    return port


def milliseconds(text: str) -> float:
    """Return `text` as a duration in ms (finite, 0 or more); argparse shows the error otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a number of milliseconds, 0 or more, got {text!r}"
        )
    if value > MAX_DELAY_MS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_DELAY_MS:.0f} ms (10 minutes), got {text!r}"
        )
    return value


def add_bind_options(parser: argparse.ArgumentParser, default_port: int) -> None:
    """Add --host and --port (shared with lessonkit proxy)."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=default_port,
        help=f"port to listen on; 0 picks a free one (default {default_port})",
    )
    parser.add_argument("--quiet", action="store_true", help="no access log")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit serve`."""
    add_bind_options(parser, 8000)
    parser.add_argument(
        "--prefill-ms",
        type=milliseconds,
        default=300.0,
        help="time before the first token (default 300)",
    )
    parser.add_argument(
        "--per-token-ms", type=milliseconds, default=40.0, help="time between tokens (default 40)"
    )
    parser.add_argument(
        "--jitter-ms",
        type=milliseconds,
        default=0.0,
        help="seeded random variation of each token time (default 0)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the jitter")


def bind_warning(host: str, what: str = "server") -> str | None:
    """Return the warning to print when `host` is reachable from other machines, else None."""
    if is_loopback(host):
        return None
    return (
        f"warning: binding to {host} lets other machines reach this {what}; "
        "it has no authentication. Use --host 127.0.0.1 to keep it local."
    )


def serve_forever(app: Any, host: str, port: int, what: str, quiet: bool) -> int:
    """Bind, print the URL, and run uvicorn in this thread until Ctrl+C."""
    warning = bind_warning(host, what)
    if warning:
        print(warning, file=sys.stderr)
    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            reason = f"port {port} is in use; pick another with --port, or --port 0 for a free one"
        else:
            reason = exc.strerror or str(exc)
        print(f"error: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
        return 1
    print(f"lessonkit {what} listening on {url_of(sock)}  (Ctrl+C to stop)", flush=True)
    config = _uvicorn_config(
        app, log_level="warning", access_log=not quiet, log_config=uvicorn.config.LOGGING_CONFIG
    )
    if not quiet:  # one line per request, but no start-up chatter
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit serve`; return the exit code."""
    settings = Settings(
        prefill_ms=args.prefill_ms,
        per_token_ms=args.per_token_ms,
        jitter_ms=args.jitter_ms,
        seed=args.seed,
    )
    return serve_forever(create_app(settings), args.host, args.port, "server", args.quiet)
