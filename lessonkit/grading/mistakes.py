"""The classic reader mistakes as code: ``LESSON_MISTAKES`` and ``ANTHROPIC_MISTAKES``.

Each mistake is a small reader that makes exactly one of the mistakes the
lessons warn about, paired with the ``cause`` a rule is about ("decode": each
chunk decoded on its own; "while": ``if`` instead of ``while``;
"chunk_not_event": each chunk taken for an event; "loose": a comment, the end
marker or a field found by searching the text...). One cause may have several
readers, one per way learners write it: a chunk is taken for an event whole,
or split at blank lines with no buffer carried to the next chunk (its pieces
stripped or not), or read line by line with no buffer. The diagnosis
(``streams.ReaderExercise.diagnose``) runs them on an input the learner's function
failed: when one of them gives exactly what the learner's gave (the same
value, or the same exception), the feedback names its cause. The readers are
the grader's own code, never the learner's; they run only on failures.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

import codecs
import enum
import functools
import json
from collections.abc import Callable, Iterable, Iterator


class Slip(enum.Enum):
    """The one mistake a reader makes (each reader below makes exactly one)."""

    PER_CHUNK = "each chunk decoded on its own"
    USE_IF = "one event per chunk: if instead of while"
    CHUNK_IS_EVENT = "each chunk taken for a whole event"
    SPLIT_EACH_CHUNK = "each chunk split at blank lines on its own: a half event is parsed"
    STRIP_EACH_CHUNK = "each chunk split at blank lines on its own, each piece stripped"
    LINES_EACH_CHUNK = "each chunk read line by line on its own: a cut line is skipped"
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


_NO_BUFFER = (
    Slip.CHUNK_IS_EVENT,
    Slip.SPLIT_EACH_CHUNK,
    Slip.STRIP_EACH_CHUNK,
    Slip.LINES_EACH_CHUNK,
)


def _pieces(chunk: bytes, slip: Slip) -> list[str]:
    """Return the events a reader with no buffer takes from one chunk (the empty ones skipped)."""
    text = chunk.decode("utf-8")
    if slip is Slip.CHUNK_IS_EVENT:
        pieces = [text.strip("\n")]
    elif slip is Slip.SPLIT_EACH_CHUNK:
        pieces = text.split("\n\n")
    elif slip is Slip.STRIP_EACH_CHUNK:
        pieces = [piece.strip() for piece in text.split("\n\n")]
    else:  # LINES_EACH_CHUNK
        pieces = text.split("\n")
    return [piece for piece in pieces if piece]


def _events(chunks: Iterable[bytes], slip: Slip) -> Iterator[str]:
    """Yield the events a reader sees: split at blank lines, or (mistakes) otherwise."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    at_line_end = slip is Slip.AT_LINE_END
    end = "\n" if at_line_end else "\n\n"
    buffer = ""
    for chunk in chunks:
        if slip in _NO_BUFFER:
            yield from _pieces(chunk, slip)
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
        try:
            delta = json.loads(data)["delta"]
        except ValueError:
            if slip is not Slip.LINES_EACH_CHUNK:
                raise
            continue  # its way of living with the lines a cut broke: skip them
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


Mistakes = tuple[tuple[str, Callable[[list[bytes]], object]], ...]
"""(cause, reader) pairs in the order the diagnosis tries them; a cause may come more than once."""


def _table(reader: Callable[..., object], slips: tuple[tuple[str, Slip], ...]) -> Mistakes:
    """Return (cause, `reader` making the slip) for each (cause, slip), in order."""
    return tuple((cause, functools.partial(reader, slip=slip)) for cause, slip in slips)


LESSON_MISTAKES: Mistakes = _table(
    _lesson,
    (
        ("decode", Slip.PER_CHUNK),
        ("while", Slip.USE_IF),
        ("chunk_not_event", Slip.CHUNK_IS_EVENT),
        ("early", Slip.AT_LINE_END),
        ("done_json", Slip.LOADS_DONE),
        ("append", Slip.REPLACE),
        ("comment", Slip.NO_COMMENTS),
        ("complete", Slip.ALWAYS_COMPLETE),
        ("loose", Slip.FIND_PING),
        ("loose-done", Slip.FIND_DONE),
        ("loose-data", Slip.FIND_DATA),
        # Other ways of taking chunks for events, tried last: where a mistake above
        # gives the same answer too, the one above names the failure.
        ("chunk_not_event", Slip.SPLIT_EACH_CHUNK),
        ("chunk_not_event", Slip.STRIP_EACH_CHUNK),
        ("chunk_not_event", Slip.LINES_EACH_CHUNK),
    ),
)

ANTHROPIC_MISTAKES: Mistakes = _table(
    _anthropic,
    (
        ("decode", Slip.PER_CHUNK),
        ("while", Slip.USE_IF),
        ("chunk_not_event", Slip.CHUNK_IS_EVENT),
        ("append", Slip.REPLACE),
        ("complete", Slip.DONE_AT_DELTA),
        ("blocks", Slip.ANY_DELTA),
        ("loose", Slip.FIND_PING),
        ("loose-stop", Slip.FIND_STOP),
    ),
)
