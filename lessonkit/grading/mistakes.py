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
import enum
import functools
import json
from collections.abc import Callable, Iterable, Iterator

__all__ = ["ANTHROPIC_MISTAKES", "LESSON_MISTAKES", "Slip"]


class Slip(enum.Enum):
    """The one mistake a reader makes (each reader below makes exactly one)."""

    PER_CHUNK = "each chunk decoded on its own"
    USE_IF = "one event per chunk: if instead of while"
    CHUNK_IS_EVENT = "each chunk taken for a whole event"
    AT_LINE_END = "an event ends at the end of a line, not at a blank line"
    LOADS_DONE = "json.loads on the end marker too"
    REPLACE = "text = delta instead of text += delta"
    NO_COMMENTS = "comments parsed as events"
    ALWAYS_COMPLETE = "complete whatever arrived"
    DONE_AT_DELTA = "(Anthropic) complete at message_delta"
    ANY_DELTA = "(Anthropic) thinking and tool JSON taken for text"
    FIND_PING = "a comment or ping found by searching the text for 'ping'"
    FIND_DONE = "the end marker found by searching the text for '[DONE]'"
    FIND_DATA = "the data found by searching the text for 'data: '"
    FIND_STOP = "(Anthropic) the end found by searching the text for 'message_stop'"


def _events(chunks: Iterable[bytes], slip: Slip) -> Iterator[str]:
    """Yield the events a reader sees: split at blank lines, or (mistakes) otherwise."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    at_line_end = slip is Slip.AT_LINE_END
    end = "\n" if at_line_end else "\n\n"
    buffer = ""
    for chunk in chunks:
        if slip is Slip.CHUNK_IS_EVENT:
            text = chunk.decode("utf-8").strip("\n")
            if text:
                yield text
            continue
        buffer += chunk.decode("utf-8") if slip is Slip.PER_CHUNK else decoder.decode(chunk)
        while end in buffer:
            event, buffer = buffer.split(end, 1)
            if event or not at_line_end:  # a line reader skips the blank lines
                yield event
            if slip is Slip.USE_IF:
                break


def _lesson(chunks: Iterable[bytes], slip: Slip) -> tuple[str, bool]:
    """Return (text, complete) of a lesson-dialect stream, read with the slip's mistakes."""
    text, complete = "", False
    for event in _events(chunks, slip):
        if slip is Slip.FIND_PING and "ping" in event:
            continue
        if event.startswith(":") and slip is not Slip.NO_COMMENTS:
            continue
        if slip is Slip.FIND_DATA:
            data = event.split("data: ")[-1]
        else:
            data = event.removeprefix("data: ")
        if (slip is Slip.FIND_DONE and "[DONE]" in data) or (
            data == "[DONE]" and slip is not Slip.LOADS_DONE
        ):
            complete = True
            continue
        delta = json.loads(data)["delta"]
        text = delta if slip is Slip.REPLACE else text + delta
    return text, complete or slip is Slip.ALWAYS_COMPLETE


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
        if slip is Slip.FIND_PING and "ping" in block:
            continue
        if slip is Slip.FIND_STOP and "message_stop" in block:
            complete = True
            continue
        kind, data = _fields(block)
        if not data:
            continue
        if kind == "content_block_delta":
            delta = json.loads(data)["delta"]
            if slip is Slip.ANY_DELTA or delta.get("type") == "text_delta":
                piece = (
                    delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
                )
                text = piece if slip is Slip.REPLACE else text + piece
        elif kind == "message_delta":
            stop = json.loads(data)["delta"].get("stop_reason")
            complete = complete or slip is Slip.DONE_AT_DELTA
        elif kind == "message_stop":
            complete = True
    return text, complete, stop


def _making(reader: Callable[[Iterable[bytes], Slip], object], slip: Slip) -> Callable:
    """Return `reader` as a function of the chunks alone, making `slip`."""
    return functools.partial(reader, slip=slip)


LESSON_MISTAKES: dict[str, Callable[[list[bytes]], object]] = {
    "decode": _making(_lesson, Slip.PER_CHUNK),
    "while": _making(_lesson, Slip.USE_IF),
    "chunk_not_event": _making(_lesson, Slip.CHUNK_IS_EVENT),
    "early": _making(_lesson, Slip.AT_LINE_END),
    "done_json": _making(_lesson, Slip.LOADS_DONE),
    "append": _making(_lesson, Slip.REPLACE),
    "comment": _making(_lesson, Slip.NO_COMMENTS),
    "complete": _making(_lesson, Slip.ALWAYS_COMPLETE),
    "loose": _making(_lesson, Slip.FIND_PING),
    "loose-done": _making(_lesson, Slip.FIND_DONE),
    "loose-data": _making(_lesson, Slip.FIND_DATA),
}

ANTHROPIC_MISTAKES: dict[str, Callable[[list[bytes]], object]] = {
    "decode": _making(_anthropic, Slip.PER_CHUNK),
    "while": _making(_anthropic, Slip.USE_IF),
    "chunk_not_event": _making(_anthropic, Slip.CHUNK_IS_EVENT),
    "append": _making(_anthropic, Slip.REPLACE),
    "complete": _making(_anthropic, Slip.DONE_AT_DELTA),
    "blocks": _making(_anthropic, Slip.ANY_DELTA),
    "loose": _making(_anthropic, Slip.FIND_PING),
    "loose-stop": _making(_anthropic, Slip.FIND_STOP),
}
