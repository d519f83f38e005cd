"""What one SSE event means in each streaming format: ``interpret(event, dialect) -> Step``.

The wire format (``lessonkit.sse``) is the same for every LLM API; what the
events carry differs. A dialect reads one event and says which piece of text
it adds, whether it ends the answer, and any finish reason, usage or error:

- ``"lesson"``: ``data: {"delta": "..."}`` per token, ``data: [DONE]`` at the end
  (the lesson's practice code);
- ``"openai"``: ``chat.completion.chunk`` objects, text in
  ``choices[0].delta.content``, ``finish_reason`` in the last choice, an optional
  usage chunk (``choices: []``), then ``data: [DONE]``;
- ``"anthropic"``: named events ``message_start`` ... ``content_block_delta``
  (``delta.type == "text_delta"``, text in ``delta.text``) ... ``message_delta``
  (``stop_reason``, ``usage``) ... ``message_stop``; an ``error`` event on failure;
- ``"eventsource"``: the browser flavour served at ``GET /v1/stream``: the lesson's
  ``{"delta": ...}`` with an ``id:`` per event, ending with ``event: done``
  (whose data is ``[DONE]``);
- ``"responses"``: OpenAI's Responses API, typed events ``response.created`` ...
  ``response.output_text.delta`` (text in ``delta``) ... ending with the final event
  ``response.completed`` or ``response.incomplete`` (finish reason from
  ``incomplete_details``, usage from the response); ``response.failed`` and ``error``
  events are errors. No ``[DONE]`` (one after the final event changes nothing).

Pure: json and lessonkit.sse only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lessonkit.core.sse import Event

__all__ = ["DIALECTS", "Step", "interpret"]

DIALECTS = ("lesson", "openai", "anthropic", "eventsource", "responses")

_DONE = "[DONE]"
_SHOWN_CHARS = 80  # how much of a bad event's data an error message quotes


@dataclass(frozen=True)
class Step:
    """What one event contributes to the answer (all fields optional)."""

    delta: str = ""
    done: bool = False
    finish_reason: str | None = None
    usage: dict | None = None
    error: str | None = None


def _shown(data: str) -> str:
    """Return ``data`` quoted for an error message, cut to a readable length."""
    if len(data) <= _SHOWN_CHARS:
        return repr(data)
    return f"{data[:_SHOWN_CHARS]!r}... ({len(data)} characters)"


class _BadEvent(Exception):
    """An event whose data does not have the shape the dialect expects."""


def _load_json(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise _BadEvent(f"malformed JSON ({exc}) in data {_shown(data)}") from None


def _object(data: str) -> dict:
    value = _load_json(data)
    if not isinstance(value, dict):
        raise _BadEvent(f"expected a JSON object, got data {_shown(data)}")
    return value


def _text_or_none(value: Any, what: str, data: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _BadEvent(f"{what} should be a string, got data {_shown(data)}")
    return value


def _error_text(error: Any) -> str:
    """Return "type: message" for an API error object (or its JSON if it has neither)."""
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        if kind or message:
            return ": ".join(str(part) for part in (kind, message) if part)
    return json.dumps(error)[:_SHOWN_CHARS]


def _lesson(event: Event) -> Step:
    # [DONE] is checked before any JSON parse: it is not JSON.
    if event.data.strip() == _DONE:
        return Step(done=True)
    obj = _object(event.data)
    if "error" in obj:
        return Step(error=f"server error: {_error_text(obj['error'])}")
    if "delta" not in obj:
        raise _BadEvent(f'no "delta" key in data {_shown(event.data)}')
    step_delta = _text_or_none(obj["delta"], '"delta"', event.data)
    finish = obj.get("finish_reason")
    return Step(delta=step_delta, finish_reason=finish if isinstance(finish, str) else None)


def _openai(event: Event) -> Step:
    # The SDK does the same: `if sse.data.startswith("[DONE]")` before json.loads.
    if event.data.strip() == _DONE:
        return Step(done=True)
    obj = _object(event.data)
    if obj.get("error") is not None:
        return Step(error=f"server error: {_error_text(obj['error'])}")
    usage = obj.get("usage")
    usage = usage if isinstance(usage, dict) else None
    choices = obj.get("choices") or []
    if not isinstance(choices, list):
        raise _BadEvent(f'"choices" should be a list, got data {_shown(event.data)}')
    if not choices:  # the usage chunk of stream_options.include_usage
        return Step(usage=usage)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise _BadEvent(f"choices[0] should be an object, got data {_shown(event.data)}")
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    finish = choice.get("finish_reason")
    return Step(
        delta=_text_or_none(content, "choices[0].delta.content", event.data),
        finish_reason=finish if isinstance(finish, str) else None,
        usage=usage,
    )


def _anthropic(event: Event) -> Step:
    kind = event.event
    if kind == "ping" or (kind == "message" and event.data.strip() == _DONE):
        return Step()
    if kind == "message_stop":
        return Step(done=True)
    obj = _object(event.data)
    if kind == "message" and isinstance(obj.get("type"), str):
        kind = obj["type"]  # a server that left out the `event:` line
        if kind == "message_stop":
            return Step(done=True)
    if kind == "error":
        return Step(error=f"server error: {_error_text(obj.get('error', obj))}")
    if kind == "message_start":
        message = obj.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        return Step(usage=usage if isinstance(usage, dict) else None)
    if kind == "content_block_delta":
        delta = obj.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            return Step(delta=_text_or_none(delta.get("text"), "delta.text", event.data))
        return Step()  # tool-use JSON, thinking, ...: not text for the screen
    if kind == "message_delta":
        delta = obj.get("delta")
        stop = delta.get("stop_reason") if isinstance(delta, dict) else None
        usage = obj.get("usage")
        return Step(
            finish_reason=stop if isinstance(stop, str) else None,
            usage=usage if isinstance(usage, dict) else None,
        )
    return Step()  # content_block_start/stop and future event types carry no text


def _eventsource(event: Event) -> Step:
    if event.event == "done":
        return Step(done=True)
    return _lesson(event)


# Why a Responses API answer stopped early, as the other dialects' finish reasons say it.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _code_and_message(error: Any) -> str:
    """Return "code: message" of a Responses API error (its type if it has no code; a flat
    error event's own type, "error", is left out: "server error: error: ..." says it twice)."""
    if isinstance(error, dict):
        code = error.get("code") or (error.get("type") if error.get("type") != "error" else None)
        return ": ".join(str(part) for part in (code, error.get("message")) if part)
    return json.dumps(error)[:_SHOWN_CHARS]


def _final_response(obj: dict, data: str) -> dict:
    response = obj.get("response")
    if not isinstance(response, dict):
        raise _BadEvent(f'"response" should be an object, got data {_shown(data)}')
    return response


def _responses(event: Event) -> Step:
    # This API sends no [DONE]; the Open Responses specification ends its streams with
    # one after the final event. Either way it says nothing: the final event ended it.
    if event.data.strip() == _DONE:
        return Step()
    obj = _object(event.data)
    kind = obj.get("type", event.event)  # the SDK reads the type in the JSON, as here
    if kind == "response.output_text.delta":  # only a message item's text part has these
        return Step(delta=_text_or_none(obj.get("delta"), '"delta"', event.data))
    if kind == "error":  # flat (code, message), or with the details under "error"
        details = obj["error"] if isinstance(obj.get("error"), dict) else obj
        return Step(error=f"server error: {_code_and_message(details)}")
    if kind not in ("response.completed", "response.incomplete", "response.failed"):
        return Step()  # created, in_progress, added, done, reasoning, ...: no answer text
    response = _final_response(obj, event.data)
    if kind == "response.failed":
        return Step(error=f"response failed: {_code_and_message(response.get('error'))}")
    usage = response.get("usage")
    finish = "stop"
    if kind == "response.incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = _INCOMPLETE.get(reason, reason) if isinstance(reason, str) else None
    return Step(done=True, finish_reason=finish, usage=usage if isinstance(usage, dict) else None)


_READERS = {
    "lesson": _lesson,
    "openai": _openai,
    "anthropic": _anthropic,
    "eventsource": _eventsource,
    "responses": _responses,
}


def interpret(event: Event, dialect: str) -> Step:
    """Return the Step one event adds in ``dialect``; bad data becomes Step(error=...).

    Never raises for what a server sent (malformed JSON, wrong shapes): those come
    back as ``Step.error`` quoting the data. An unknown dialect is a caller's
    mistake and raises ValueError naming the valid ones.
    """
    try:
        read = _READERS[dialect]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}"
        ) from None
    try:
        return read(event)
    except _BadEvent as exc:
        return Step(error=str(exc))
