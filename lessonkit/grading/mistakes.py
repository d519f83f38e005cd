"""The classic reader mistakes as code: ``LESSON_MISTAKES`` and ``ANTHROPIC_MISTAKES``.

Each mistake is a small reader that makes exactly one of the mistakes the
lessons warn about, keyed by the ``cause`` a rule is about ("decode": each
chunk decoded on its own; "while": ``if`` instead of ``while``;
"chunk_not_event": each chunk taken for an event; "loose": a comment, the end
marker or a field found by searching the text...). The diagnosis
(``streams.stream_diagnosis``) runs them on an input the learner's function
failed: when one of them gives exactly what the learner's gave (the same
value, or the same exception), the feedback names that mistake. The readers
are the grader's own code, never the learner's; they run only on failures.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

__all__ = ["ANTHROPIC_MISTAKES", "LESSON_MISTAKES", "Slip"]


@dataclass(frozen=True)
class Slip:
    """The mistakes a reader makes, each off by default; ``loose`` names what it searches for."""

    per_chunk: bool = False  # each chunk decoded on its own
    use_if: bool = False  # one event per chunk
    chunk_is_event: bool = False  # each chunk taken for a whole event
    at_line_end: bool = False  # an event ends at the end of a line, not at a blank line
    loads_done: bool = False  # json.loads on the end marker too
    replace: bool = False  # text = delta
    no_comments: bool = False  # comments parsed as events
    always_complete: bool = False  # complete whatever arrived
    done_at_delta: bool = False  # (Anthropic) complete at message_delta
    any_delta: bool = False  # (Anthropic) thinking and tool JSON taken for text
    loose: str = ""  # a comment, the end marker or a field found by searching the text


def _events(chunks: Iterable[bytes], slip: Slip) -> Iterator[str]:
    """Yield the events a reader sees: split at blank lines, or (mistakes) otherwise."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    end = "\n" if slip.at_line_end else "\n\n"
    buffer = ""
    for chunk in chunks:
        if slip.chunk_is_event:
            text = chunk.decode("utf-8").strip("\n")
            if text:
                yield text
            continue
        buffer += chunk.decode("utf-8") if slip.per_chunk else decoder.decode(chunk)
        while end in buffer:
            event, buffer = buffer.split(end, 1)
            if event or not slip.at_line_end:  # a line reader skips the blank lines
                yield event
            if slip.use_if:
                break


def _lesson(chunks: Iterable[bytes], slip: Slip) -> tuple[str, bool]:
    """Return (text, complete) of a lesson-dialect stream, read with the slip's mistakes."""
    text, complete = "", False
    for event in _events(chunks, slip):
        if slip.loose == "ping" and "ping" in event:
            continue
        if event.startswith(":") and not slip.no_comments:
            continue
        if slip.loose == "data":
            data = event.split("data: ")[-1]
        else:
            data = event.removeprefix("data: ")
        if (slip.loose == "done" and "[DONE]" in data) or (
            data == "[DONE]" and not slip.loads_done
        ):
            complete = True
            continue
        delta = json.loads(data)["delta"]
        text = delta if slip.replace else text + delta
    return text, complete or slip.always_complete


def _fields(block: str) -> tuple[str, str]:
    """Return (event type, data) of one event's lines, read correctly."""
    kind, data = "message", []
    for line in block.split("\n"):
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
    return kind, "\n".join(data)


def _anthropic(chunks: Iterable[bytes], slip: Slip) -> tuple[str, bool, str | None]:
    """Return (text, complete, stop_reason) of an Anthropic stream, read with the slip's mistakes."""
    text, complete, stop = "", False, None
    for block in _events(chunks, slip):
        if slip.loose == "ping" and "ping" in block:
            continue
        if slip.loose == "stop" and "message_stop" in block:
            complete = True
            continue
        kind, data = _fields(block)
        if not data:
            continue
        if kind == "content_block_delta":
            delta = json.loads(data)["delta"]
            if slip.any_delta or delta.get("type") == "text_delta":
                piece = (
                    delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
                )
                text = piece if slip.replace else text + piece
        elif kind == "message_delta":
            stop = json.loads(data)["delta"].get("stop_reason")
            complete = complete or slip.done_at_delta
        elif kind == "message_stop":
            complete = True
    return text, complete, stop


def _with(reader: Callable[[Iterable[bytes], Slip], object], **slip: object) -> Callable:
    mistake = Slip(**slip)  # type: ignore[arg-type]
    return lambda chunks: reader(chunks, mistake)


LESSON_MISTAKES: dict[str, Callable[[list[bytes]], object]] = {
    "decode": _with(_lesson, per_chunk=True),
    "while": _with(_lesson, use_if=True),
    "chunk_not_event": _with(_lesson, chunk_is_event=True),
    "early": _with(_lesson, at_line_end=True),
    "done_json": _with(_lesson, loads_done=True),
    "append": _with(_lesson, replace=True),
    "comment": _with(_lesson, no_comments=True),
    "complete": _with(_lesson, always_complete=True),
    "loose": _with(_lesson, loose="ping"),
    "loose-done": _with(_lesson, loose="done"),
    "loose-data": _with(_lesson, loose="data"),
}

ANTHROPIC_MISTAKES: dict[str, Callable[[list[bytes]], object]] = {
    "decode": _with(_anthropic, per_chunk=True),
    "while": _with(_anthropic, use_if=True),
    "chunk_not_event": _with(_anthropic, chunk_is_event=True),
    "append": _with(_anthropic, replace=True),
    "complete": _with(_anthropic, done_at_delta=True),
    "blocks": _with(_anthropic, any_delta=True),
    "loose": _with(_anthropic, loose="ping"),
    "loose-stop": _with(_anthropic, loose="stop"),
}
