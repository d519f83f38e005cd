"""Pure explorer state for the notebooks: state in, state out, no widgets or clocks.

Each explorer widget in lessonkit.widgets calls one of these functions, and the
notebooks print the same frames headless, so a PDF and nbval see the content.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lessonkit import network

# ---------------------------------------------------------------------------
# Lessons 03-05 (reading the stream, cuts and drops, the real world)
# ---------------------------------------------------------------------------

BLANK_LINE = "\n\n"  # a blank line ends an SSE event
PRACTICE_TOKENS = ("Your", " café", " order", " ships", ".")
WORKED_TOKENS = ("Your", " order")


def lesson_wire(tokens: Iterable[str] = PRACTICE_TOKENS, *, heartbeat: bool = True) -> bytes:
    """Return the bytes of a lesson-dialect stream: optional `: ping`, one event per token, [DONE].

    Non-ASCII text stays raw UTF-8 on the wire (json.dumps with ensure_ascii=False),
    so " café" puts the two bytes of "é" on the network, as in the lesson's practice.
    """
    events = [": ping"] if heartbeat else []
    events += ["data: " + json.dumps({"delta": t}, ensure_ascii=False) for t in tokens]
    events.append("data: [DONE]")
    return (BLANK_LINE.join(events) + BLANK_LINE).encode("utf-8")


def worked_example() -> tuple[bytes, tuple[int, int]]:
    """Return the worked example's wire ("Your", " order", [DONE]) and its two cut offsets.

    The cuts give the lesson's three arrivals: half of the first event (cut inside
    the JSON string), then the rest of it plus the second event plus "da", then the rest.
    """
    wire = lesson_wire(WORKED_TOKENS, heartbeat=False)
    first_cut = wire.index(b"Your") + 2  # inside the string "Your"
    second_cut = wire.index(b"data: [DONE]") + 2  # the "da" of the end marker
    return wire, (first_cut, second_cut)


def show_newlines(text: str | bytes) -> str:
    """Return `text` with each newline drawn as ⏎ (bytes are decoded, bad bytes shown as \\xNN)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    return text.replace("\n", "⏎")


# --- a reader you can watch: the lesson's client loop with its state in the open ---


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
    The knobs reproduce the "now change it" bugs: decode="per-chunk" decodes each
    chunk on its own (raises UnicodeDecodeError on a split character) and
    loop="if" handles at most one event per arrival. Bad JSON raises ValueError.
    """
    if decode == "incremental":
        new_text, held = _decode_incrementally(state.held_bytes, chunk)
    elif decode == "per-chunk":
        new_text, held = chunk.decode("utf-8"), b""
    else:
        raise ValueError(f"decode must be 'incremental' or 'per-chunk', got {decode!r}")
    if loop not in ("while", "if"):
        raise ValueError(f"loop must be 'while' or 'if', got {loop!r}")
    buffer, text, done, count = state.buffer + new_text, state.text, state.done, state.events
    events: list[str] = []
    deltas: list[str] = []
    while BLANK_LINE in buffer:
        event, buffer = buffer.split(BLANK_LINE, 1)
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


def lesson_read_stream(
    chunks: Iterable[bytes], *, decode: str = "incremental", loop: str = "while"
) -> tuple[str, bool]:
    """Return (text, complete) for lesson-dialect chunks, read with the lesson's client loop."""
    state = ReaderState()
    for chunk in chunks:
        state = feed_reader(state, chunk, decode=decode, loop=loop).state
    return state.text, state.done


def read_chunk_as_events(chunks: Iterable[bytes]) -> tuple[str, bool]:
    """Return (text, complete) from the classic bug: each chunk is taken as whole events.

    No buffer survives between chunks: a chunk is decoded, split on blank lines and
    every piece is parsed at once. It works while every event arrives whole (a fast
    local connection) and breaks (ValueError) when a cut lands inside an event.
    """
    text, done = "", False
    for chunk in chunks:
        for event in chunk.decode("utf-8").split(BLANK_LINE):
            if not event or event.startswith(":"):
                continue
            data = event.removeprefix("data: ")
            if data == "[DONE]":
                done = True
            else:
                text += json.loads(data)["delta"]
    return text, done


def _read_with_if(chunks: Iterable[bytes]) -> tuple[str, bool]:
    return lesson_read_stream(chunks, loop="if")


def _read_decoding_each_chunk(chunks: Iterable[bytes]) -> tuple[str, bool]:
    return lesson_read_stream(chunks, decode="per-chunk")


CORRECT_READER = lesson_read_stream
BUGGY_READERS: dict[str, Callable[[Iterable[bytes]], tuple[str, bool]]] = {
    "chunk = event": read_chunk_as_events,
    "if instead of while": _read_with_if,
    "per-chunk decode": _read_decoding_each_chunk,
}
READERS: dict[str, Callable[[Iterable[bytes]], tuple[str, bool]]] = {
    "correct": CORRECT_READER,
    **BUGGY_READERS,
}


def verdict(
    reader: Callable[[Iterable[bytes]], tuple[str, bool]],
    chunks: list[bytes],
    expected: tuple[str, bool],
) -> str:
    """Return "ok" if the reader gives `expected`, "wrong" for other output, "error" if it raises."""
    try:
        got = reader(chunks)
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError and JSONDecodeError too
        return "error"
    return "ok" if tuple(got) == tuple(expected) else "wrong"


def every_cut_verdicts(
    reader: Callable[[Iterable[bytes]], tuple[str, bool]], wire: bytes
) -> list[str]:
    """Return one verdict per cut position 0..len(wire): is [wire[:i], wire[i:]] read right?"""
    expected = CORRECT_READER([wire])
    return [verdict(reader, chunks, expected) for chunks in network.every_cut(wire)]


def chunk_size_verdicts(
    reader: Callable[[Iterable[bytes]], tuple[str, bool]], wire: bytes, sizes: Iterable[int]
) -> list[str]:
    """Return one verdict per chunk size: is network.cut(wire, size) read right?"""
    expected = CORRECT_READER([wire])
    return [verdict(reader, network.cut(wire, size), expected) for size in sizes]


def summarize_verdicts(verdicts: list[str]) -> str:
    """Return "ok 71/81, wrong 3, error 7" style counts for a row of verdicts."""
    total = len(verdicts)
    parts = [f"ok {verdicts.count('ok')}/{total}"]
    parts += [f"{v} {verdicts.count(v)}" for v in ("wrong", "error") if verdicts.count(v)]
    return ", ".join(parts)


# --- the arrival stepper (worked example) ---


@dataclass(frozen=True)
class ArrivalStep:
    """One arrival as the reader sees it: the bytes, the events they completed, the state after."""

    number: int
    chunk: bytes
    events: tuple[str, ...]
    deltas: tuple[str, ...]
    state: ReaderState


def parse_cut_positions(text: str, n_bytes: int) -> tuple[int, ...]:
    """Return the sorted, distinct cut offsets written in `text` (e.g. "18, 52") inside 1..n_bytes-1.

    Anything that is not a whole number, and offsets outside the data, are left out.
    """
    positions = set()
    for word in text.replace(",", " ").split():
        if word.strip().isdigit() and 0 < int(word) < n_bytes:
            positions.add(int(word))
    return tuple(sorted(positions))


def stepper_cuts(n_bytes: int, *, chunk_bytes: int, positions_text: str = "") -> tuple[int, ...]:
    """Return the cut offsets for the stepper: the typed positions if any, else every chunk_bytes."""
    typed = parse_cut_positions(positions_text, n_bytes)
    if typed:
        return typed
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes!r}")
    return tuple(range(chunk_bytes, n_bytes, chunk_bytes))


def arrival_steps(wire: bytes, positions: Iterable[int]) -> list[ArrivalStep]:
    """Return what the lesson's reader does at each arrival when `wire` is cut at `positions`."""
    state = ReaderState()
    steps = []
    for number, chunk in enumerate(network.cut_at(wire, sorted(positions)), start=1):
        fed = feed_reader(state, chunk)
        state = fed.state
        steps.append(ArrivalStep(number, chunk, fed.events, fed.deltas, state))
    return steps


def format_step(step: ArrivalStep, n_arrivals: int) -> str:
    """Return a plain-text frame of one arrival: bytes in, events out, buffer and screen after."""
    if step.events:
        events = "; ".join(show_newlines(e) for e in step.events)
    else:
        events = "none yet: no blank line in the buffer"
    status = "complete" if step.state.done else "still streaming"
    return "\n".join(
        [
            f"arrival {step.number}/{n_arrivals}: {len(step.chunk)} bytes {show_newlines(step.chunk)!r}",
            f"  events completed : {events}",
            f"  deltas appended  : {list(step.deltas)}",
            f"  buffer after     : {show_newlines(step.state.buffer)!r}",
            f"  screen after     : {step.state.text!r} ({status})",
        ]
    )


# --- the UTF-8 explorer ---


@dataclass(frozen=True)
class Utf8Frame:
    """A text cut at one byte offset, decoded three ways.

    per_chunk_strict: each piece decoded alone ("UnicodeDecodeError: ..." if it fails);
    per_chunk_replace: each piece decoded alone with errors="replace" (U+FFFD shows up);
    incremental: what an incremental decoder outputs for each piece.
    """

    text: str
    cut_at_byte: int
    pieces: tuple[bytes, bytes]
    inside_character: bool
    per_chunk_strict: tuple[str, ...]
    per_chunk_replace: tuple[str, ...]
    incremental: tuple[str, ...]


def utf8_bytes_table(text: str) -> list[tuple[str, int, str]]:
    """Return (character, byte count, hex bytes) for each character of `text`."""
    return [(ch, len(ch.encode()), ch.encode().hex(" ")) for ch in text]


def utf8_frame(text: str, cut_at_byte: int) -> Utf8Frame:
    """Return how `text` encoded as UTF-8 and cut at `cut_at_byte` decodes per chunk and incrementally."""
    data = text.encode("utf-8")
    if not 0 <= cut_at_byte <= len(data):
        raise ValueError(f"cut_at_byte must be in 0..{len(data)}, got {cut_at_byte!r}")
    pieces = (data[:cut_at_byte], data[cut_at_byte:])
    strict = []
    for piece in pieces:
        try:
            strict.append(piece.decode("utf-8"))
        except UnicodeDecodeError as exc:
            strict.append(f"UnicodeDecodeError: {exc.reason}")
    replace = tuple(piece.decode("utf-8", "replace") for piece in pieces)
    decoder = codecs.getincrementaldecoder("utf-8")()
    incremental = (decoder.decode(pieces[0]), decoder.decode(pieces[1], final=True))
    inside = 0 < cut_at_byte < len(data) and (data[cut_at_byte] & 0xC0) == 0x80
    return Utf8Frame(text, cut_at_byte, pieces, inside, tuple(strict), replace, incremental)


def format_utf8_frame(frame: Utf8Frame) -> str:
    """Return a plain-text view of a Utf8Frame."""
    where = "inside a character" if frame.inside_character else "between characters"
    first, second = frame.pieces
    return "\n".join(
        [
            f"cut after byte {frame.cut_at_byte} ({where}): {first!r} | {second!r}",
            f"  per-chunk decode        : {frame.per_chunk_strict[0]!r} | {frame.per_chunk_strict[1]!r}",
            f"  per-chunk, errors=replace: {frame.per_chunk_replace[0]!r} | {frame.per_chunk_replace[1]!r}",
            f"  incremental decoder     : {frame.incremental[0]!r} | {frame.incremental[1]!r}"
            f" -> {''.join(frame.incremental)!r}",
        ]
    )


# --- the drop explorer ---


@dataclass(frozen=True)
class DropFrame:
    """What the client has when the connection dies after `n_bytes` bytes of `total_bytes`."""

    n_bytes: int
    total_bytes: int
    text: str
    complete: bool
    events: int
    held: str


def drop_frame(wire: bytes, n_bytes: int) -> DropFrame:
    """Return the screen text, complete flag and unfinished buffer after a drop at `n_bytes`."""
    received = network.drop_after(wire, n_bytes)
    state = feed_reader(ReaderState(), received).state
    held = state.buffer + state.held_bytes.decode("utf-8", "backslashreplace")
    return DropFrame(min(n_bytes, len(wire)), len(wire), state.text, state.done, state.events, held)


def format_drop_frame(frame: DropFrame) -> str:
    """Return a one-screen text view of a DropFrame."""
    return "\n".join(
        [
            f"dropped after {frame.n_bytes} of {frame.total_bytes} bytes",
            f"  on screen : {frame.text!r}",
            f"  complete  : {frame.complete}",
            f"  held back : {show_newlines(frame.held)!r} (an unfinished event, never shown)",
        ]
    )


def drop_staircase(wire: bytes) -> list[int]:
    """Return the number of characters on screen for a drop after 0, 1, ..., len(wire) bytes."""
    state = ReaderState()
    lengths = [0]
    for i in range(len(wire)):
        state = feed_reader(state, wire[i : i + 1]).state
        lengths.append(len(state.text))
    return lengths


# --- predict, then run ---

PREDICTION_PLACEHOLDER = "(write your prediction here)"


def practice_lines(
    reader: Callable[[Iterable[bytes]], tuple[str, bool]],
    wire: bytes,
    *,
    sizes: Iterable[int] = (1000, 16, 5),
    drop_after_bytes: int | None = 70,
) -> list[str]:
    """Return the practice script's printed lines for `reader`; an exception becomes its own line."""
    runs = [
        (f"{{n:2d}} chunks of up to {size:4d} bytes", network.cut(wire, size)) for size in sizes
    ]
    if drop_after_bytes is not None:
        label = f"dropped after {drop_after_bytes} bytes"
        runs.append((f"{label:<28}", network.cut(network.drop_after(wire, drop_after_bytes), 16)))
    lines = []
    for label, chunks in runs:
        label = label.format(n=len(chunks))
        try:
            text, done = reader(chunks)
        except (ValueError, KeyError) as exc:
            lines.append(f"{label} -> {type(exc).__name__}: {exc}")
        else:
            lines.append(f"{label} -> {text!r} complete={done}")
    return lines


def compare_prediction(prediction: str, actual: str) -> str:
    """Return a short verdict comparing a recorded prediction with what the run printed."""
    guess = prediction.strip()
    if not guess or guess == PREDICTION_PLACEHOLDER:
        return f"no prediction recorded; the run gave: {actual}"
    if guess == actual.strip():
        return f"your prediction matches: {actual}"
    return f"you predicted {guess!r}; the run gave {actual!r}. Which step of the loop explains it?"
