"""The local streaming LLM server's routes: a Starlette app over the simulated model.

Endpoints (docs/learning.md, "The local server", lists them with their options)::

    POST /v1/chat/completions   OpenAI-compatible, streaming and not
    POST /v1/messages           Anthropic-compatible, streaming and not
    POST /v1/responses          OpenAI Responses API, streaming and not (+ fail_after_tokens)
    GET  /v1/stream             plain SSE for the browser's EventSource (id:, retry:, resume)
    GET  /v1/models             the one model this server pretends to be
    GET  /v1/stats              counters: active_streams, tokens_generated, ...
    WS   /v1/ws                 the same answer over a WebSocket (lessonkit.serve.websocket)

Each endpoint checks its request (lessonkit.serve.checks), asks lessonkit.core.llm
for the answer as a plan of timed writes, applies the faults asked for
(``drop_after_bytes``, ``stall_ms``, ``heartbeat_ms``: lessonkit.core.network) and
returns a TimedResponse (lessonkit.serve.pacing) that plays the plan on a real clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send

from lessonkit.core import llm, network
from lessonkit.serve.checks import (
    ENDING_PARAMETERS,
    BadRequest,
    Pace,
    Settings,
    error_response,
    input_text,
    json_field,
    last_user_text,
    message_text,
    positive_int,
    query_number,
    read_json_body,
    read_pace,
    read_stream_ending,
    refuse_others_options,
)
from lessonkit.serve.pacing import TimedResponse
from lessonkit.serve.state import ServerState, timing_for
from lessonkit.serve.websocket import websocket_stream

# Why each streaming header is there:
STREAM_HEADERS = [
    # The browser's EventSource and the SDKs only treat the body as an event stream
    # with this media type; everything else is an ordinary download.
    (b"content-type", b"text/event-stream; charset=utf-8"),
    # no-cache: a cache may keep a copy but must revalidate it with us before any reuse
    # (RFC 9111 §5.2.2.4; no-store would forbid the copy); with no validators to check
    # against, every request reaches the model. It says nothing about buffering: that
    # is x-accel-buffering below.
    (b"cache-control", b"no-cache"),
    # Nginx reads this response header and then passes the bytes on as they arrive
    # instead of collecting the response in its proxy buffer (see lessonkit.serve.proxy).
    (b"x-accel-buffering", b"no"),
]


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


def _start(request: Request) -> float:
    """Return the loop time when this request reached the server (the timing anchor)."""
    return request.state.start


def _timed(
    state: ServerState,
    request: Request,
    times: list[float],
    pace: Pace,
    writes: Iterable[tuple[float, bytes]],
    headers: list[tuple[bytes, bytes]],
) -> TimedResponse:
    """Return the TimedResponse for a plan of writes, with the stall and heartbeats applied."""
    after_ms = network.stall_point_ms(times)
    planned = network.stall(writes, after_ms=after_ms, stall_ms=pace.stall_ms)
    if pace.heartbeat_ms:
        planned = network.with_heartbeats(planned, heartbeat_ms=pace.heartbeat_ms)
    return TimedResponse(
        planned,
        pacer=state.pacer(_start(request)),
        stats=state.stats,
        live=state.pacers,
        token_times_ms=network.stalled_times(times, after_ms=after_ms, stall_ms=pace.stall_ms),
        headers=headers,
        drop_after_bytes=pace.drop_after_bytes,
    )


def _stream(
    state: ServerState,
    request: Request,
    answer: llm.Answer,
    pace: Pace,
    dialect: str,
    envelope: llm.Envelope,
    options: llm.DialectOptions | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> TimedResponse:
    """Return a streamed answer (after a resume: the tokens not sent yet)."""
    timing = timing_for(pace, state.settings)
    writes = llm.stream_writes(answer, dialect, timing=timing, envelope=envelope, options=options)
    first, end = 0, len(answer.tokens)
    if isinstance(options, llm.EventSourceOptions):
        first, end = options.first_index(len(answer.tokens)), options.end_index(len(answer.tokens))
    times = timing.token_times_ms(end - first)
    return _timed(state, request, times, pace, writes, list(headers or STREAM_HEADERS))


def _blocking(
    state: ServerState,
    request: Request,
    answer: llm.Answer,
    pace: Pace,
    dialect: str,
    envelope: llm.Envelope,
    options: llm.ResponsesOptions | None = None,
) -> TimedResponse:
    """Return a non-streaming answer: one JSON body, due when the last token exists."""
    timing = timing_for(pace, state.settings)
    at_ms, body = llm.blocking_body(
        answer, dialect, timing=timing, envelope=envelope, options=options
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    # A blocking answer is a stream with one write, due when the last token exists.
    times = timing.token_times_ms(len(answer.tokens))
    return _timed(state, request, times, pace, [(at_ms, body)], headers)


async def chat_completions(request: Request) -> TimedResponse:
    """POST /v1/chat/completions: the OpenAI Chat Completions API, streaming or not."""
    state: ServerState = request.app.state.lessonkit
    pace = read_pace(request.query_params, state.settings)
    refuse_others_options(request.query_params, "/v1/chat/completions")
    body = await read_json_body(request, state.settings.max_body_bytes)
    json_field(body, "model", (str,), required=True)
    messages = json_field(body, "messages", (list,), required=True)
    roles = ("system", "developer", "user", "assistant", "tool")
    prompt = last_user_text(messages, roles)
    stream = json_field(body, "stream", (bool,)) or False
    max_tokens = positive_int(body, "max_completion_tokens") or positive_int(body, "max_tokens")
    stream_options = json_field(body, "stream_options", (dict,)) or {}
    include_usage = json_field(stream_options, "include_usage", (bool,)) or False
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    envelope = llm.Envelope(
        model=state.settings.model,
        created=int(time.time()),
        response_id=state.next_id("chatcmpl-"),
    )
    if stream:
        usage = llm.OpenAIOptions(include_usage=include_usage)
        return _stream(state, request, answer, pace, "openai", envelope, usage)
    return _blocking(state, request, answer, pace, "openai", envelope)


async def messages(request: Request) -> TimedResponse:
    """POST /v1/messages: the Anthropic Messages API, streaming or not."""
    state: ServerState = request.app.state.lessonkit
    pace = read_pace(request.query_params, state.settings)
    refuse_others_options(request.query_params, "/v1/messages")
    body = await read_json_body(request, state.settings.max_body_bytes)
    json_field(body, "model", (str,), required=True)
    max_tokens = positive_int(body, "max_tokens", required=True)
    messages_ = json_field(body, "messages", (list,), required=True)
    system = body.get("system")
    if system is not None:
        message_text(system, "system")
    prompt = last_user_text(messages_, ("user", "assistant"))
    stream = json_field(body, "stream", (bool,)) or False
    answer = llm.answer_for(prompt, max_tokens=max_tokens)
    envelope = llm.Envelope(model=state.settings.model, response_id=state.next_id("msg_"))
    if stream:
        return _stream(state, request, answer, pace, "anthropic", envelope)
    return _blocking(state, request, answer, pace, "anthropic", envelope)


async def event_stream(request: Request) -> TimedResponse | Response:
    """GET /v1/stream?prompt=...: plain SSE for EventSource, resumable with Last-Event-ID.

    Every token event carries ``id: <token index>``. A reconnecting EventSource sends
    the last id it saw in the ``Last-Event-ID`` header (``?last_event_id=`` works too,
    for clients that cannot set headers); the answer then continues with the next
    token, so nothing is missing and nothing is repeated.

    For lesson 03's EventSource life cycle (lessonkit.serve.checks.read_stream_ending):
    ``retry=N`` or ``retry=none`` sets the retry: field, ``end_after_tokens=N`` ends the
    body cleanly after N tokens (EventSource reconnects), and a reconnect gets
    ``reconnect_status`` (204 or 400-599) or a stream labelled ``reconnect_content_type``:
    either ends an EventSource for good.
    """
    state: ServerState = request.app.state.lessonkit
    query = request.query_params
    pace = read_pace(query, state.settings)
    refuse_others_options(query, "/v1/stream")
    ending = read_stream_ending(query, state.settings)
    prompt = query.get("prompt") or llm.RUNNING_PROMPT
    max_tokens = query_number(query, "max_tokens", integer=True, low=1)
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
    envelope = llm.Envelope(model=state.settings.model)
    if dialect == "lesson":
        asked = [name for name in ENDING_PARAMETERS if query.get(name)]
        if asked:
            raise BadRequest(
                f"Query parameter {asked[0]!r} applies to the EventSource stream only; "
                "leave out dialect=lesson",
                param=asked[0],
            )
        return _stream(state, request, answer, pace, dialect, envelope)
    headers = STREAM_HEADERS
    if resume_after_id is not None:  # a reconnect
        if ending.reconnect_status == 204:
            return Response(status_code=204)
        if ending.reconnect_status is not None:
            message = (
                f"reconnect_status={ending.reconnect_status} asked for this answer to a "
                "reconnect: a status other than 200 ends an EventSource for good"
            )
            return error_response(request.url.path, ending.reconnect_status, message)
        if ending.reconnect_content_type is not None:
            # The same events, labelled as something else: EventSource refuses them. With
            # nosniff the browser takes the label as sent, at once (the Jupyter server adds
            # it to what the course's route relays, too); without it Chromium first reads a
            # text/plain body to its end, to guess what it is.
            content_type = ending.reconnect_content_type.encode("ascii")
            headers = [
                (b"content-type", content_type),
                (b"x-content-type-options", b"nosniff"),
                *STREAM_HEADERS[1:],
            ]
        elif resume_after_id >= len(answer.tokens):
            # The client already saw the final event (its id is the token count). Any
            # answer other than 200 with text/event-stream makes EventSource give up
            # instead of reconnecting (the spec's "fail the connection"); 204 No Content
            # also says plainly that nothing is left to send.
            return Response(status_code=204)
    resume = llm.EventSourceOptions(
        resume_after_id, retry_ms=ending.retry_ms, end_after_tokens=ending.end_after_tokens
    )
    return _stream(state, request, answer, pace, dialect, envelope, resume, headers)


async def responses_api(request: Request) -> TimedResponse:
    """POST /v1/responses: the OpenAI Responses API, streaming or not.

    ``max_output_tokens`` ends the answer with ``response.incomplete``. The query
    parameter ``fail_after_tokens=N`` (beside the other faults) makes the model fail
    after N tokens: the stream ends with ``response.failed``, and the non-streamed
    Response has status "failed".
    """
    state: ServerState = request.app.state.lessonkit
    pace = read_pace(request.query_params, state.settings)
    refuse_others_options(request.query_params, "/v1/responses")
    fail_after = query_number(request.query_params, "fail_after_tokens", integer=True)
    body = await read_json_body(request, state.settings.max_body_bytes)
    json_field(body, "model", (str,), required=True)
    if body.get("input") is None:
        raise BadRequest("Missing required parameter: 'input'", param="input")
    prompt = input_text(body["input"])
    json_field(body, "instructions", (str,))
    stream = json_field(body, "stream", (bool,)) or False
    max_output_tokens = positive_int(body, "max_output_tokens")
    stream_options = json_field(body, "stream_options", (dict,)) or {}
    json_field(stream_options, "include_obfuscation", (bool,))  # checked; never padded here
    answer = llm.answer_for(prompt, max_tokens=max_output_tokens)
    options = llm.ResponsesOptions(max_output_tokens, fail_after_tokens=fail_after)
    envelope = llm.Envelope(
        model=state.settings.model, created=int(time.time()), response_id=state.next_id("resp_")
    )
    if stream:
        return _stream(state, request, answer, pace, "responses", envelope, options)
    return _blocking(state, request, answer, pace, "responses", envelope, options)


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
        Route("/v1/responses", responses_api, methods=["POST"]),
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
