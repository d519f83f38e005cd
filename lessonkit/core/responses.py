"""OpenAI's Responses API as the simulated model writes it: typed events, then one Response.

``POST /v1/responses`` streams typed events. Each has an ``event:`` line naming its type,
the same ``type`` in its JSON, and a ``sequence_number`` that counts up from 0::

    response.created              the response exists: status "in_progress", no output yet
    response.in_progress
    response.output_item.added    output_index 0: a message item, still empty
    response.content_part.added   content_index 0 of it: an output_text part, still empty
    response.output_text.delta    one per token (the only events that carry answer text)
    response.output_text.done     the whole text of the part
    response.content_part.done
    response.output_item.done     the finished message item
    response.completed            the whole Response, with output and usage
      or response.incomplete      the same, cut by max_output_tokens: incomplete_details
      or response.failed          a failure part way (ResponsesOptions.fail_after_tokens)

Every life-cycle event (``response.created`` ... the final one) carries the same
``response.id``. Nothing follows the final event: this API sends no ``data: [DONE]``.
The field names are those of the openai SDK's ``types/responses`` models; the course's
server leaves out the optional ``obfuscation`` padding that OpenAI adds to delta events.

    writes(answer, ...)           (opening, one write per token sent, closing), as bytes
    response_object(answer, ...)  the Response: the non-streamed reply and the final event's

``lessonkit.core.llm`` times these writes like every other dialect's. Pure: json and
lessonkit.core.sse and the answer's type (lessonkit.core.answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lessonkit.core import sse
from lessonkit.core.answer import Answer

__all__ = ["FAILURE_CODE", "ResponsesOptions", "item_id_for", "response_object", "writes"]

# The error code of an injected failure: the Response error code OpenAI uses for its own faults.
FAILURE_CODE = "server_error"


def _count_or_none(name: str, value: Any, low: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be a whole number of at least {low} or None, got {value!r}")


@dataclass(frozen=True)
class ResponsesOptions:
    """The "responses" dialect's options: what the request asked, and an injected failure.

    max_output_tokens is echoed in the Response, as the API does (the answer itself is
    already cut to it: llm.answer_for's max_tokens). With fail_after_tokens N the model
    fails after its N-th token: N text deltas, then ``response.failed`` (no failure when
    the answer has N tokens or fewer).
    """

    max_output_tokens: int | None = None
    fail_after_tokens: int | None = None

    def __post_init__(self) -> None:
        _count_or_none("max_output_tokens", self.max_output_tokens, 1)
        _count_or_none("fail_after_tokens", self.fail_after_tokens, 0)

    def fails(self, n_tokens: int) -> bool:
        """Return True if an answer of `n_tokens` tokens fails before its end."""
        return self.fail_after_tokens is not None and self.fail_after_tokens < n_tokens


def _json(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def item_id_for(rid: str) -> str:
    """Return the message item's id for the response `rid` ("resp_000001" -> "msg_000001")."""
    return "msg_" + rid.split("_", 1)[-1]


def _usage(answer: Answer) -> dict[str, Any]:
    """Return the Response's usage: input and output tokens, their details, the total."""
    return {
        "input_tokens": answer.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": answer.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
    }


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message(rid: str, status: str, text: str | None) -> dict[str, Any]:
    """Return the message item: empty while in progress (text None), else with its one part."""
    content = [] if text is None else [_part(text)]
    return {"id": item_id_for(rid), "type": "message", "status": status, "role": "assistant",
            "content": content}  # fmt: skip


def _status(answer: Answer, options: ResponsesOptions) -> str:
    if options.fails(len(answer.tokens)):
        return "failed"
    return "incomplete" if answer.finish_reason == "length" else "completed"


def response_object(
    answer: Answer,
    *,
    rid: str,
    created_at: int,
    model: str,
    options: ResponsesOptions = ResponsesOptions(),
    status: str | None = None,
) -> dict[str, Any]:
    """Return the Response object for `answer` (status None: the answer's final status).

    "completed", "incomplete" (max_output_tokens cut it: incomplete_details.reason
    "max_output_tokens") or "failed" (an injected failure: the text before it, an error,
    no usage). Status "in_progress" gives the object of the opening events: no output yet.
    The non-streamed reply is this object; its SDK property ``output_text`` joins the text.
    """
    status = status or _status(answer, options)
    sent = answer.tokens
    if status == "failed":
        sent = answer.tokens[: options.fail_after_tokens]
    output, usage, error, details = [], None, None, None
    if status != "in_progress":
        item_status = "completed" if status == "completed" else "incomplete"
        output = [_message(rid, item_status, "".join(sent))]
    if status in ("completed", "incomplete"):
        usage = _usage(answer)
    if status == "incomplete":
        details = {"reason": "max_output_tokens"}
    if status == "failed":
        message = (
            f"The simulated model failed after {len(sent)} tokens "
            f"(fail_after_tokens={options.fail_after_tokens}, a fault injected for the lessons)"
        )
        error = {"code": FAILURE_CODE, "message": message}
    return {
        "id": rid,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": error,
        "incomplete_details": details,
        "instructions": None,
        "max_output_tokens": options.max_output_tokens,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }


class _Events:
    """Numbers the events of one stream as they are written: sequence_number 0, 1, 2, ..."""

    def __init__(self) -> None:
        self.sequence_number = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        """Return one event as SSE bytes: its type on the event: line and in the JSON."""
        obj = {"type": kind, "sequence_number": self.sequence_number, **fields}
        self.sequence_number += 1
        return sse.encode(_json(obj), event=kind)


def writes(
    answer: Answer,
    *,
    rid: str,
    created_at: int,
    model: str,
    options: ResponsesOptions = ResponsesOptions(),
) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Return the stream's writes: (what opens it, one write per token sent, what closes it).

    Opening: response.created, response.in_progress, and the empty message item and
    text part that the deltas fill. Closing: the text, part and item done, then
    response.completed or response.incomplete; after an injected failure only
    response.failed (and fewer token writes than the answer has tokens).
    """
    events = _Events()
    item = {"item_id": item_id_for(rid), "output_index": 0, "content_index": 0}

    def response(status: str | None = None) -> dict[str, Any]:
        return response_object(
            answer, rid=rid, created_at=created_at, model=model, options=options, status=status
        )

    opening = [
        events.event("response.created", response=response("in_progress")),
        events.event("response.in_progress", response=response("in_progress")),
        events.event("response.output_item.added", output_index=0,
                     item=_message(rid, "in_progress", None)),
        events.event("response.content_part.added", **item, part=_part("")),
    ]  # fmt: skip
    failing = options.fails(len(answer.tokens))
    sent = answer.tokens[: options.fail_after_tokens] if failing else answer.tokens
    per_token = [
        events.event("response.output_text.delta", **item, delta=token, logprobs=[])
        for token in sent
    ]
    final = response()
    if failing:
        return opening, per_token, [events.event("response.failed", response=final)]
    message = final["output"][0]
    text = message["content"][0]["text"]
    closing = [
        events.event("response.output_text.done", **item, text=text, logprobs=[]),
        events.event("response.content_part.done", **item, part=_part(text)),
        events.event("response.output_item.done", output_index=0, item=message),
        events.event(f"response.{final['status']}", response=final),
    ]
    return opening, per_token, closing
