"""The lesson's practice stream and the reader it teaches, with its state in the open.

The practice stream is the lesson dialect at its simplest: an optional ``: ping``
comment, one ``data: {"delta": ...}`` event per token, then ``data: [DONE]``::

    practice_wire()                  the bytes, with " café" as raw UTF-8 on the wire
    feed_reader(state, chunk)        the lesson's client loop, one arrival at a time
    practice_reader(chunks)          the same loop over a whole stream -> (text, done)

The reader is written once, as ``feed_reader``: a pure step from one
``ReaderState`` to the next. ``practice_reader`` folds it over the chunks, the
arrival stepper shows each step, and exercise 3 grades predictions against it.
Its two switches reproduce the lesson's "now change it" experiments:
``decode="per-chunk"`` decodes each chunk on its own (a character cut across
chunks raises UnicodeDecodeError) and ``loop="if"`` handles at most one event
per arrival.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DECODE_MODES",
    "EVENT_BORDER",
    "LOOP_MODES",
    "PRACTICE_TOKENS",
    "WORKED_TOKENS",
    "Fed",
    "ReaderState",
    "feed_reader",
    "practice_reader",
    "practice_wire",
]

# The lesson's reader ends an event at "\n\n", which is what the lesson's server sends.
# (The SSE spec also allows CRLF and CR line ends; lessonkit.core.sse handles all three.)
EVENT_BORDER = "\n\n"
PRACTICE_TOKENS = ("Your", " café", " order", " ships", ".")
WORKED_TOKENS = ("Your", " order")
DECODE_MODES = ("incremental", "per-chunk")
LOOP_MODES = ("while", "if")


def practice_wire(
    tokens: Iterable[str] = PRACTICE_TOKENS, *, heartbeat: bool = True, done: bool = True
) -> bytes:
    """Return the bytes of a practice stream: `: ping`, one event per token, `data: [DONE]`.

    Non-ASCII text stays raw UTF-8 on the wire (json.dumps with ensure_ascii=False),
    so " café" puts the two bytes of "é" on the network, as in the lesson's practice.
    """
    events = [": ping"] if heartbeat else []
    events += ["data: " + json.dumps({"delta": t}, ensure_ascii=False) for t in tokens]
    if done:
        events.append("data: [DONE]")
    return (EVENT_BORDER.join(events) + EVENT_BORDER).encode("utf-8")


@dataclass(frozen=True)
class ReaderState:
    """What the lesson's stream reader remembers between arrivals.

    held_bytes: the start of a UTF-8 character whose other bytes have not arrived;
    buffer: decoded text of an event whose blank line has not arrived;
    text: what is on screen; done: the end marker arrived; events: events handled.
    """

    held_bytes: bytes = b""
    buffer: str = ""
    text: str = ""
    done: bool = False
    events: int = 0


@dataclass(frozen=True)
class Fed:
    """Return value of feed_reader: the new state, events completed, deltas appended."""

    state: ReaderState
    events: tuple[str, ...]
    deltas: tuple[str, ...]


def _check_modes(decode: str, loop: str) -> None:
    """Raise ValueError unless `decode` and `loop` name one of the reader's variants."""
    if decode not in DECODE_MODES:
        raise ValueError(f"decode must be 'incremental' or 'per-chunk', got {decode!r}")
    if loop not in LOOP_MODES:
        raise ValueError(f"loop must be 'while' or 'if', got {loop!r}")


def _decode_incrementally(held: bytes, chunk: bytes) -> tuple[str, bytes]:
    """Return (text, bytes still held) after decoding `held + chunk` as far as it goes."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    decoder.setstate((held, 0))
    text = decoder.decode(chunk)
    return text, decoder.getstate()[0]


def feed_reader(
    state: ReaderState, chunk: bytes, *, decode: str = "incremental", loop: str = "while"
) -> Fed:
    """Return the reader's state after one arrival, with the events and deltas it completed.

    The lesson's client loop: decode the bytes, append them to the buffer, cut
    complete events (ending in a blank line) off the front, skip `:` comments,
    check for [DONE] before parsing JSON, append each delta to the screen text.
    decode="per-chunk" decodes each chunk alone (UnicodeDecodeError on a split
    character); loop="if" handles at most one event per arrival. Bad JSON raises
    ValueError.
    """
    _check_modes(decode, loop)
    if decode == "incremental":
        new_text, held = _decode_incrementally(state.held_bytes, chunk)
    else:
        new_text, held = chunk.decode("utf-8"), b""
    buffer, text, done, count = state.buffer + new_text, state.text, state.done, state.events
    events: list[str] = []
    deltas: list[str] = []
    while EVENT_BORDER in buffer:
        event, buffer = buffer.split(EVENT_BORDER, 1)
        events.append(event)
        count += 1
        if not event.startswith(":"):  # a comment line is a heartbeat: skip it
            data = event.removeprefix("data: ")
            if data == "[DONE]":  # checked before any JSON parse
                done = True
            else:
                delta = json.loads(data)["delta"]
                deltas.append(delta)
                text += delta
        if loop == "if":
            break
    return Fed(ReaderState(held, buffer, text, done, count), tuple(events), tuple(deltas))


def practice_reader(
    chunks: Iterable[bytes], *, decode: str = "incremental", loop: str = "while"
) -> tuple[str, bool]:
    """Return (text, done) after feeding every chunk to the lesson's reader (feed_reader)."""
    _check_modes(decode, loop)
    state = ReaderState()
    for chunk in chunks:
        state = feed_reader(state, chunk, decode=decode, loop=loop).state
    return state.text, state.done
