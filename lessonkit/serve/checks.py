"""What a request may ask of the local server, and the 4xx errors it gets otherwise.

Every parameter a client sends is checked here before anything is generated, so
bad input becomes a 4xx with a JSON error body in the style of the endpoint's
API (OpenAI or Anthropic), never a 500:

    Settings                 the server's defaults, refused at start-up when unusable
    read_json_body(request)  the body as a JSON object (400 / 413 otherwise)
    read_pace(query, ...)    per-request timing and faults from the query string
    read_stream_ending(...)  GET /v1/stream's retry: and how it ends, from the query string
    error_response(...)      the error body in the API's style
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

MODEL = "lessonkit-sim"


MAX_BODY_BYTES = 1 << 20  # 1 MiB: larger request bodies get 413


MAX_DELAY_MS = 600_000.0  # no query parameter may ask for a pause longer than 10 minutes


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
    check_unicode(value)
    return value


def check_unicode(value: Any) -> None:
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


def json_field(body: dict, name: str, kinds: tuple[type, ...], *, required: bool = False) -> Any:
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


def positive_int(body: dict, name: str, *, required: bool = False) -> int | None:
    value = json_field(body, name, (int,), required=required)
    if value is not None and value < 1:
        raise BadRequest(f"'{name}' must be at least 1, got {value}", param=name)
    return value


def message_text(content: Any, where: str) -> str:
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


def last_user_text(messages: list, roles: tuple[str, ...]) -> str:
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
        text = message_text(message.get("content"), where)
        if role == "user":
            prompt = text
    if prompt is None:
        raise BadRequest("'messages' must contain a user message", param="messages")
    return prompt


def input_text(value: Any) -> str:
    """Return the prompt of a Responses API ``input``: the string, or the last user message's text.

    ``input`` is a string, or a list of input items: messages ``{"role", "content"}``
    (``"type": "message"`` may be given) whose content is a string or a list of parts;
    the text parts are ``input_text`` (and ``output_text`` in earlier assistant turns).
    Other items (tool calls and their outputs, reasoning) are passed over.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BadRequest("'input' must be a string or an array of input items", param="input")
    if not value:
        raise BadRequest("'input' must contain at least one item", param="input")
    prompt = None
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{where} must be an object", param=where)
        if "role" not in item and item.get("type", "message") != "message":
            continue  # a function call, its output, a reasoning item: no prompt text
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise BadRequest(
                f"{where}.role must be one of user, assistant, system, developer", param=where
            )
        text = _input_content(item.get("content"), where)
        if role == "user":
            prompt = text
    if prompt is None:
        raise BadRequest("'input' must contain a user message", param="input")
    return prompt


def _input_content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content must be a string or an array of parts", param=where)
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise BadRequest(f"{where}.content[{i}] must be an object with a 'type'", param=where)
        if part["type"] in ("input_text", "output_text", "text"):
            if not isinstance(part.get("text"), str):
                raise BadRequest(f"{where}.content[{i}].text must be a string", param=where)
            texts.append(part["text"])
    return "".join(texts)


@dataclass(frozen=True)
class Pace:
    """The timing and faults of one request, read from its query parameters."""

    prefill_ms: float
    per_token_ms: float
    drop_after_bytes: int | None = None
    stall_ms: float = 0.0
    heartbeat_ms: float | None = None


def query_number(query: Any, name: str, *, integer: bool = False, low: float = 0.0) -> Any:
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
    prefill_ms = query_number(query, "prefill_ms")
    per_token_ms = query_number(query, "per_token_ms")
    heartbeat_ms = query_number(query, "heartbeat_ms", low=1.0)
    return Pace(
        prefill_ms=settings.prefill_ms if prefill_ms is None else prefill_ms,
        per_token_ms=settings.per_token_ms if per_token_ms is None else per_token_ms,
        drop_after_bytes=query_number(query, "drop_after_bytes", integer=True),
        stall_ms=query_number(query, "stall_ms") or 0.0,
        heartbeat_ms=heartbeat_ms,
    )


@dataclass(frozen=True)
class StreamEnding:
    """How one GET /v1/stream sets EventSource's retry and ends, read from its query.

    retry_ms: the retry: field (None: none is sent, so the browser's own delay applies);
    end_after_tokens: the body ends cleanly after that many tokens, with no done event;
    reconnect_status: a reconnect (a request with a Last-Event-ID) gets this status and
    no stream; reconnect_content_type: a reconnect's stream is labelled with this type.
    """

    retry_ms: int | None
    end_after_tokens: int | None = None
    reconnect_status: int | None = None
    reconnect_content_type: str | None = None


# The query parameters read_stream_ending reads (GET /v1/stream's EventSource flavour only).
ENDING_PARAMETERS = ("retry", "end_after_tokens", "reconnect_status", "reconnect_content_type")

# Query options that belong to one endpoint: anywhere else they would be silently ignored.
OWN_OPTIONS = {"/v1/stream": ENDING_PARAMETERS, "/v1/responses": ("fail_after_tokens",)}


def refuse_others_options(query: Any, endpoint: str) -> None:
    """Return None; raise BadRequest naming the first option in `query` that belongs to an
    endpoint other than `endpoint` (``retry`` sent to POST /v1/chat/completions, say)."""
    for owner, names in OWN_OPTIONS.items():
        asked = [name for name in names if owner != endpoint and query.get(name)]
        if asked:
            raise BadRequest(
                f"Query parameter {asked[0]!r} applies to {owner} only", param=asked[0]
            )


# A media type without parameters, "text/plain": two RFC 9110 tokens around a slash.
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,60}/[A-Za-z0-9!#$%&'*+.^_`|~-]{1,60}")


def read_stream_ending(query: Any, settings: Settings) -> StreamEnding:
    """Return GET /v1/stream's StreamEnding; BadRequest naming the parameter for a bad value.

    ``retry=N`` (whole ms, 0 to MAX_DELAY_MS) or ``retry=none``; without it the server's
    own retry_ms. ``reconnect_status`` is 204 or 400-599: the statuses that end an
    EventSource for good (a 200 resumes, a redirect would be followed).
    """
    raw_retry = query.get("retry")
    if raw_retry is None or raw_retry == "":
        retry_ms = settings.retry_ms
    elif raw_retry == "none":
        retry_ms = None
    elif raw_retry.isascii() and raw_retry.isdigit() and int(raw_retry) <= MAX_DELAY_MS:
        retry_ms = int(raw_retry)
    else:
        raise BadRequest(
            f"Query parameter 'retry' must be a whole number of milliseconds from 0 to "
            f"{MAX_DELAY_MS:.0f}, or 'none' for no retry: field, got {raw_retry!r}",
            param="retry",
        )
    raw_status = query.get("reconnect_status") or None
    status = None
    if raw_status is not None:
        if raw_status.isascii() and raw_status.isdigit() and len(raw_status) == 3:
            status = int(raw_status)
        if status is None or not (status == 204 or 400 <= status <= 599):
            raise BadRequest(
                "Query parameter 'reconnect_status' must be 204 or a status from 400 to 599 "
                f"(an answer that ends an EventSource for good), got {raw_status!r}",
                param="reconnect_status",
            )
    content_type = query.get("reconnect_content_type") or None
    if content_type is not None and not _MEDIA_TYPE.fullmatch(content_type):
        raise BadRequest(
            "Query parameter 'reconnect_content_type' must be a media type such as "
            f"text/plain, got {content_type!r}",
            param="reconnect_content_type",
        )
    if content_type is not None and content_type.lower() == "text/event-stream":
        raise BadRequest(  # media types are case-insensitive (RFC 9110 8.3.1)
            "Query parameter 'reconnect_content_type' must be another type than "
            "text/event-stream, which resumes the stream; try text/plain",
            param="reconnect_content_type",
        )
    if status is not None and content_type is not None:
        raise BadRequest(
            "Give either 'reconnect_status' or 'reconnect_content_type': a reconnect gets one answer",
            param="reconnect_content_type",
        )
    end = query_number(query, "end_after_tokens", integer=True, low=1)
    return StreamEnding(retry_ms, end, status, content_type)
