"""Lesson 03, reading the stream: readers right and wrong, the arrival stepper, UTF-8 cuts.

    worked_example                          the lesson's worked example and its two cuts
    READERS, BUGGY_READERS                  the correct reader and the three classic bugs
    every_cut_verdicts, chunk_size_verdicts testing a reader by cutting its input
    arrival_steps, stepper_readouts         the arrival stepper: one arrival at a time
    utf8_frame, utf8_readouts               the UTF-8 explorer: one text cut at one byte

Each ``*_readouts`` function is one explorer's whole state for its controls' values.

The reader itself (feed_reader, practice_reader) is lessonkit.core.practice's.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lessonkit.core import network
from lessonkit.core.practice import (
    EVENT_BORDER,
    WORKED_TOKENS,
    ReaderState,
    feed_reader,
    practice_reader,
    practice_wire,
)
from lessonkit.lab.views import show_newlines


def worked_example() -> tuple[bytes, tuple[int, int]]:
    """Return the worked example's wire ("Your", " order", [DONE]) and its two cut offsets.

    The cuts give the lesson's three arrivals: half of the first event (cut inside
    the JSON string), then the rest of it plus the second event plus "da", then the rest.
    """
    wire = practice_wire(WORKED_TOKENS, heartbeat=False)
    first_cut = wire.index(b"Your") + 2  # inside the string "Your"
    second_cut = wire.index(b"data: [DONE]") + 2  # the "da" of the end marker
    return wire, (first_cut, second_cut)


def read_chunk_as_events(chunks: Iterable[bytes]) -> tuple[str, bool]:
    """Return (text, complete) from the classic bug: each chunk is taken as whole events.

    No buffer survives between chunks: a chunk is decoded, split on blank lines and
    every piece is parsed at once. It works while every event arrives whole (a fast
    local connection) and breaks (ValueError) when a cut lands inside an event.
    """
    text, done = "", False
    for chunk in chunks:
        for event in chunk.decode("utf-8").split(EVENT_BORDER):
            if not event or event.startswith(":"):
                continue
            data = event.removeprefix("data: ")
            if data == "[DONE]":
                done = True
            else:
                text += json.loads(data)["delta"]
    return text, done


def _read_with_if(chunks: Iterable[bytes]) -> tuple[str, bool]:
    return practice_reader(chunks, loop="if")


def _read_decoding_each_chunk(chunks: Iterable[bytes]) -> tuple[str, bool]:
    return practice_reader(chunks, decode="per-chunk")


CORRECT_READER = practice_reader


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


@dataclass(frozen=True)
class ArrivalStep:
    """One arrival as the reader sees it: the bytes, the events they completed, the state after."""

    number: int
    chunk: bytes
    events: tuple[str, ...]
    deltas: tuple[str, ...]
    state: ReaderState


@dataclass(frozen=True)
class TypedCuts:
    """Cut offsets read from what the learner typed, and a note per word that was not used."""

    positions: tuple[int, ...]
    problems: tuple[str, ...]


def read_cut_positions(text: str, n_bytes: int) -> TypedCuts:
    """Return the sorted, distinct cut offsets in `text` (e.g. "19, 54") and why others were left out.

    An offset k cuts after byte k, so it must be a whole number from 1 to n_bytes - 1:
    0 or n_bytes would leave an empty piece, larger numbers are past the end.
    """
    positions: set[int] = set()
    problems: list[str] = []
    for word in text.replace(",", " ").split():
        if not (word.isascii() and word.isdigit()):
            problems.append(f"{word!r} is not a whole number")
        elif int(word) == 0:
            problems.append("0 would cut before the first byte")
        elif int(word) >= n_bytes:
            problems.append(f"{int(word)} is past the last cut (the wire has {n_bytes} bytes)")
        else:
            positions.add(int(word))
    return TypedCuts(tuple(sorted(positions)), tuple(problems))


def parse_cut_positions(text: str, n_bytes: int) -> tuple[int, ...]:
    """Return the usable cut offsets in `text` inside 1..n_bytes-1 (see read_cut_positions)."""
    return read_cut_positions(text, n_bytes).positions


CUT_MODES = ("even chunks", "typed offsets")


def stepper_cuts(
    n_bytes: int, *, chunk_bytes: int, positions_text: str = "", mode: str | None = None
) -> tuple[int, ...]:
    """Return the stepper's cut offsets: every chunk_bytes, or the typed positions.

    `mode` is one of CUT_MODES; without it, typed positions win when there are any.
    """
    if mode is None:
        mode = CUT_MODES[1] if parse_cut_positions(positions_text, n_bytes) else CUT_MODES[0]
    if mode not in CUT_MODES:
        raise ValueError(f"mode must be one of {CUT_MODES}, got {mode!r}")
    if mode == CUT_MODES[1]:
        return parse_cut_positions(positions_text, n_bytes)
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


def stepper_readouts(
    wire: bytes,
    *,
    chunk_bytes: int,
    positions_text: str = "",
    step: int = 1,
    mode: str | None = None,
) -> dict[str, str]:
    """Return what the arrival stepper shows for its controls' values, by name.

    The five lines (cuts, arrival, events, buffer, screen), the number of arrivals (the
    step slider's end), the step shown (step), which cutting control shows (size_display,
    positions_display: CSS display values) and the arrival as text (text).

    `mode` picks the cutting: "even chunks" (chunk_bytes) or "typed offsets"
    (positions_text); without it, typed offsets win when there are any. Typed words
    that cannot be used are named in the "cuts" readout; with no usable offset the
    wire arrives in one piece, and the readout says so. `step` is clamped to the
    number of arrivals, so a slider left past the end shows the last one.
    """
    if mode is None:
        mode = CUT_MODES[1] if parse_cut_positions(positions_text, len(wire)) else CUT_MODES[0]
    cuts = stepper_cuts(
        len(wire), chunk_bytes=chunk_bytes, positions_text=positions_text, mode=mode
    )
    steps = arrival_steps(wire, cuts)
    shown = max(1, min(step, len(steps)))
    current = steps[shown - 1]
    events = [show_newlines(e) for e in current.events]
    arrivals = f"{len(steps)} arrival{'s' if len(steps) != 1 else ''}"
    if mode == CUT_MODES[0]:
        cuts_text = (
            f"even chunks of {chunk_bytes} bytes: cuts after bytes {list(cuts)} -> {arrivals}"
        )
    else:
        typed = read_cut_positions(positions_text, len(wire))
        if cuts:
            cuts_text = f"typed offsets: cuts after bytes {list(cuts)} -> {arrivals}"
        else:
            cuts_text = f"typed offsets: none usable, so the wire arrives whole -> {arrivals}"
        if typed.problems:
            cuts_text += ". Left out: " + "; ".join(typed.problems)
        if not cuts:
            cuts_text += f". Type offsets from 1 to {len(wire) - 1}, e.g. 19, 54"
    lines = {
        "cuts": cuts_text,
        "arrival": f"arrival {current.number}/{len(steps)}: {show_newlines(current.chunk)!r}",
        "events": f"events completed: {events}" if events else "events completed: none yet",
        "buffer": f"buffer: {show_newlines(current.state.buffer)!r}",
        "screen": f"screen: {current.state.text!r}"
        + (" (complete)" if current.state.done else " (streaming)"),
    }
    typed_mode = mode == CUT_MODES[1]
    return {
        **lines,
        "arrivals": len(steps),
        "step": shown,
        "size_display": "none" if typed_mode else "",
        "positions_display": "" if typed_mode else "none",
        "text": "\n".join(lines.values()),
    }


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


def utf8_readouts(text: str, cut_at_byte: int) -> dict[str, Any]:
    """Return what the UTF-8 explorer shows for a text and a cut, by name.

    The five lines (bytes, cut, per_chunk, replace, incremental), the cut slider's end
    (cut_max: the text's length in bytes), the cut shown (cut_at_byte: the asked one, or
    the text's end when the text is shorter) and the frame as text (text).
    """
    n_bytes = len(text.encode("utf-8"))
    cut_at_byte = max(0, min(cut_at_byte, n_bytes))
    frame = utf8_frame(text, cut_at_byte)
    table = "  ".join(f"{ch!r}={hex_bytes}" for ch, _, hex_bytes in utf8_bytes_table(text))
    where = "inside a character" if frame.inside_character else "between characters"
    first, second = frame.pieces
    return {
        "bytes": f"{len(text.encode())} bytes: {table}",
        "cut": f"cut after byte {cut_at_byte} ({where}): {first!r} | {second!r}",
        "per_chunk": "per-chunk decode: " + " | ".join(frame.per_chunk_strict),
        "replace": "per-chunk, errors='replace': " + " | ".join(frame.per_chunk_replace),
        "incremental": "incremental decoder: "
        + " | ".join(repr(t) for t in frame.incremental)
        + f" -> {''.join(frame.incremental)!r}",
        "cut_max": n_bytes,
        "cut_at_byte": cut_at_byte,
        "text": format_utf8_frame(frame),
    }
