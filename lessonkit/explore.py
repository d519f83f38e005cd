"""Pure explorer state for the notebooks: state in, state out, no widgets or clocks.

Each explorer widget in lessonkit.widgets calls one of these functions, and the
notebooks print the same frames headless, so a PDF and nbval see the content.

Map of this file, by notebook (search for the quoted section comment; in the file
the code for notebooks 03-05 comes first, then 01-02):

  01 Why streaming                  "# ## 01 ·"
     decode_steps, decode_step_text       the prefill/decode loop, one pass per token
     timeline_view, timeline_text,        the timeline explorer: what each user sees at t
       timeline_readouts
     cancel_view, cancel_text             stop early: tokens and cost saved
     idle_report, idle_text               proxy idle timeouts and heartbeats
     fit_timing, line_ready_times         a measured stream's speeds; render sooner
  02 SSE on the wire                 "# ## 02 ·"
     split_response, parse_chunked,       the response head, chunked encoding,
       encode_chunked, h2_data_frames      HTTP/2 and HTTP/3 DATA frames
     sse_field_rows, field_rows_text      the standard fields, encoded and decoded
     wire_rows, wire_rows_text            the wire inspector (lesson/openai/anthropic)
     side_by_side_html, side_by_side_text the end of the stream: [DONE] vs message_stop
     screens_after, walkthrough_steps     deltas append; the five-step walkthrough
  03 Reading the stream              "# --- a reader you can watch"
     lesson_wire, worked_example          the practice and worked-example bytes
     feed_reader, ReaderState             the lesson's client loop, one arrival at a time
                                          (for the stepper; a test keeps it equal to
                                          lesson_read_stream at every cut)
     lesson_read_stream, READERS,         whole-stream readers, correct and buggy
       BUGGY_READERS
     every_cut_verdicts,                  testing by cutting
       chunk_size_verdicts
     arrival_steps, utf8_frame            the arrival stepper and the UTF-8 explorer
  04 Practice: cuts and drops        "# --- the drop explorer", "# --- predict, then run"
     drop_frame, drop_staircase           what survives a dropped connection
     practice_lines, compare_prediction   the "now change it" runs and predictions
  05 Streaming in the real world     "# --- notebook 05"
     late_check, json_prefix_parses       checks that only run at the end; strict JSON

The widgets' readouts (stepper_readouts, utf8_readouts, drop_readouts) sit in
"# --- readouts". The practice stream and reader are exercises_ref's
(practice_wire, practice_reader), so the lessons and the grading share them.
"""

from __future__ import annotations

import codecs
import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lessonkit import dialects, exercises_ref, llm, network, sse, timeline

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
    return exercises_ref.practice_wire(tokens, heartbeat=heartbeat)


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


def _check_knobs(decode: str, loop: str) -> None:
    """Raise ValueError unless decode and loop name one of the reader's variants."""
    if decode not in ("incremental", "per-chunk"):
        raise ValueError(f"decode must be 'incremental' or 'per-chunk', got {decode!r}")
    if loop not in ("while", "if"):
        raise ValueError(f"loop must be 'while' or 'if', got {loop!r}")


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
    _check_knobs(decode, loop)
    if decode == "incremental":
        new_text, held = _decode_incrementally(state.held_bytes, chunk)
    else:
        new_text, held = chunk.decode("utf-8"), b""
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
    """Return (text, complete) for lesson-dialect chunks, read with the lesson's client loop.

    The reader itself is exercises_ref.practice_reader (the one exercise 3 grades
    against); this wrapper names its two switches the way feed_reader does.
    """
    _check_knobs(decode, loop)
    return exercises_ref.practice_reader(
        chunks, decode_each_chunk=decode == "per-chunk", if_not_while=loop == "if"
    )


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


# ---------------------------------------------------------------------------
# Lessons 01-02 (why streaming; SSE on the wire)
# ---------------------------------------------------------------------------

EOS = "<eos>"  # the end-of-sequence token, drawn the way a model vocabulary names it
SPINNER = "◐◓◑◒"  # one quarter turn per 100 ms of virtual time
# Okabe-Ito colours, safe for the common colour-vision deficiencies.
FIELD_COLOURS = {
    "event": "#D55E00",  # vermillion
    "data": "#0072B2",  # blue
    "id": "#009E73",  # bluish green
    "retry": "#CC79A7",  # reddish purple
    "comment": "#7f7f7f",  # grey
}


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _tail(text: str, max_chars: int) -> str:
    """Return the last `max_chars` characters of `text`, with "…" in front when cut."""
    return text if len(text) <= max_chars else "…" + text[-max_chars:]


def _spinner(t_ms: float) -> str:
    return SPINNER[int(t_ms // 100) % len(SPINNER)]


# ## 01 · The decode loop


@dataclass(frozen=True)
class DecodeStep:
    """One forward pass of the model: what it reads and the one token it writes.

    `phase` is "prefill" for the pass over the whole prompt, then "decode".
    `stop_reason` is None while the loop goes on, "eos" when the model writes
    the end-of-sequence token, "length" when max_tokens stops it.
    """

    index: int
    phase: str
    prompt: tuple[str, ...]
    generated: tuple[str, ...]
    new_token: str
    at_ms: float
    stop_reason: str | None = None

    @property
    def reads(self) -> int:
        """How many tokens this pass reads (the prompt plus everything generated so far)."""
        return len(self.prompt) + len(self.generated)


def decode_steps(
    prompt: str = llm.RUNNING_PROMPT,
    *,
    max_tokens: int | None = None,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
) -> list[DecodeStep]:
    """Return every pass of the decode loop for `prompt`, ending at <eos> or max_tokens.

    Token i exists at prefill_ms + (i + 1) * per_token_ms (the lesson's model).
    When the model stops by itself, one more pass writes <eos>; the lesson's
    simulation leaves that pass out, so its stream closes with the last token.
    """
    answer = llm.answer_for(prompt, max_tokens)
    prompt_tokens = tuple(llm.tokenize(prompt))
    times = llm.token_times_ms(len(answer.tokens), prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    steps = []
    for i, token in enumerate(answer.tokens):
        last = i == len(answer.tokens) - 1
        steps.append(
            DecodeStep(
                index=i,
                phase="prefill" if i == 0 else "decode",
                prompt=prompt_tokens,
                generated=answer.tokens[:i],
                new_token=token,
                at_ms=times[i],
                stop_reason="length" if last and answer.finish_reason == "length" else None,
            )
        )
    if answer.finish_reason == "stop":
        n = len(answer.tokens)
        steps.append(
            DecodeStep(
                index=n,
                phase="prefill" if n == 0 else "decode",
                prompt=prompt_tokens,
                generated=answer.tokens,
                new_token=EOS,
                at_ms=float(prefill_ms + (n + 1) * per_token_ms),
                stop_reason="eos",
            )
        )
    return steps


def decode_step_text(step: DecodeStep) -> str:
    """Return one line describing a pass: what it reads, what it writes, when."""
    how = "reads the whole prompt at once" if step.phase == "prefill" else "reads"
    line = (
        f"pass {step.index:>2} ({step.phase:<7}) {how} {step.reads:>2} tokens"
        f" -> writes {step.new_token!r:<10} at {step.at_ms:>5.0f} ms"
    )
    if step.stop_reason == "eos":
        line += "  (end of sequence: the loop stops)"
    elif step.stop_reason == "length":
        line += "  (max_tokens reached: the loop stops)"
    return line


def _token_box(token: str, colour: str, *, bold: bool = False) -> str:
    weight = "font-weight:bold;" if bold else ""
    return (
        f'<span style="display:inline-block;margin:1px;padding:1px 4px;border-radius:3px;'
        f'border:1px solid {colour};{weight}white-space:pre">{_esc(token)}</span>'
    )


def decode_step_html(step: DecodeStep) -> str:
    """Return HTML boxes: prompt tokens (grey), generated tokens (blue), the new token (orange)."""
    boxes = [_token_box(t, "#999999") for t in step.prompt]
    boxes += [_token_box(t, "#0072B2") for t in step.generated]
    arrow = '<span style="margin:0 6px">→ model →</span>'
    new = _token_box(step.new_token, "#E69F00", bold=True)
    return (
        f'<div class="lk-decode-step">{"".join(boxes)}{arrow}{new}'
        f'<div style="color:#555">{_esc(decode_step_text(step))}</div></div>'
    )


# ## 01 · Time to first token and total time: the timeline explorer


def explorer_tokens(n_tokens: int) -> tuple[str, ...]:
    """Return `n_tokens` tokens: the running answer's first ones, or a longer seeded answer."""
    running = tuple(llm.tokenize(llm.RUNNING_ANSWER))
    if n_tokens <= len(running):
        return running[:n_tokens]
    return llm.long_answer(n_tokens).tokens


@dataclass(frozen=True)
class TimelineView:
    """What the timeline explorer shows at time t: both screens, both numbers, all arrivals."""

    t_ms: float
    prefill_ms: float
    per_token_ms: float
    n_tokens: int
    latency_ms: float
    frame: timeline.Frame
    timings: timeline.Timings
    arrival_ms: tuple[float, ...]  # when each token becomes visible when streaming

    @property
    def t_max_ms(self) -> float:
        """A good end for the time slider: the total time plus a little room."""
        return timeline_t_max_ms(self.prefill_ms, self.per_token_ms, self.n_tokens, self.latency_ms)


def timeline_t_max_ms(
    prefill_ms: float, per_token_ms: float, n_tokens: int, latency_ms: float = 0
) -> float:
    """Return the end of the time axis: total time plus 10% (at least 100 ms) of room."""
    total = timeline.response_times(prefill_ms, per_token_ms, n_tokens, latency_ms).total_ms
    return float(total + max(100.0, 0.1 * total))


def timeline_view(
    t_ms: float,
    *,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
    n_tokens: int = 6,
    latency_ms: float = 0,
) -> TimelineView:
    """Return what a user sees at `t_ms` with and without streaming, plus TTFT and total time."""
    tokens = explorer_tokens(n_tokens)
    times = timeline.visible_times_ms(
        n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms, latency_ms=latency_ms
    )
    return TimelineView(
        t_ms=float(t_ms),
        prefill_ms=prefill_ms,
        per_token_ms=per_token_ms,
        n_tokens=n_tokens,
        latency_ms=latency_ms,
        frame=timeline.frame(
            t_ms,
            list(tokens),
            prefill_ms=prefill_ms,
            per_token_ms=per_token_ms,
            latency_ms=latency_ms,
        ),
        timings=timeline.response_times(prefill_ms, per_token_ms, n_tokens, latency_ms),
        arrival_ms=tuple(times),
    )


def timeline_readouts(view: TimelineView) -> dict[str, str]:
    """Return the explorer's readouts by name: t, ttft, blocking, total, visible."""
    timings = view.timings
    return {
        "t": f"t = {view.t_ms:,.0f} ms",
        "ttft": f"streaming: first token at {timings.streaming_first_ms:,.0f} ms",
        "blocking": f"blocking: first text at {timings.blocking_first_ms:,.0f} ms",
        "total": f"both finish at {timings.total_ms:,.0f} ms",
        "visible": f"{view.frame.tokens_visible} of {view.n_tokens} tokens on screen",
    }


def _screen(text: str, done: bool, t_ms: float, *, max_chars: int) -> str:
    if done:
        return _tail(text, max_chars)
    if not text:
        return f"{_spinner(t_ms)} waiting…"
    return _tail(text, max_chars) + "▌"


def timeline_panes(view: TimelineView, *, max_chars: int = 160) -> tuple[str, str]:
    """Return the (blocking, streaming) screen texts at view.t_ms: spinner, cursor or full text."""
    frame = view.frame
    blocking = _screen(frame.blocking_text, frame.blocking_done, view.t_ms, max_chars=max_chars)
    streaming = _screen(frame.streaming_text, frame.streaming_done, view.t_ms, max_chars=max_chars)
    return blocking, streaming


def timeline_text(view: TimelineView) -> str:
    """Return a plain-text frame of the explorer (its twin for nbval, nbconvert and PDF)."""
    blocking, streaming = timeline_panes(view, max_chars=70)
    r = timeline_readouts(view)
    return "\n".join(
        [
            f"{r['t']}  (phase: {view.frame.phase}; {r['visible']})",
            f"  blocking  | {blocking}",
            f"  streaming | {streaming}",
            f"  {r['ttft']}; {r['blocking']}; {r['total']}",
        ]
    )


def timeline_panes_html(view: TimelineView) -> str:
    """Return the two screens side by side as HTML (blocking left, streaming right)."""
    blocking, streaming = timeline_panes(view)
    box = (
        '<div class="{cls}" style="flex:1;border:1px solid #bbb;border-radius:6px;'
        'padding:6px;min-height:4.5em;font-family:sans-serif">'
        '<div style="color:#555;font-size:85%">{title}</div><div>{text}</div></div>'
    )
    return (
        '<div style="display:flex;gap:8px">'
        + box.format(cls="lk-pane-blocking", title="Blocking (newspaper)", text=_esc(blocking))
        + box.format(cls="lk-pane-streaming", title="Streaming (radio)", text=_esc(streaming))
        + "</div>"
    )


# ## 01 · Stop early


@dataclass(frozen=True)
class CancelView:
    """What cancelling a stream at `cancel_at_ms` saves: tokens, time and money."""

    cancel_at_ms: float
    n_tokens: int
    tokens_generated: int
    seen_text: str
    generation_ms_saved: float
    usd_per_million_tokens: float

    @property
    def tokens_saved(self) -> int:
        """Tokens the model never had to generate."""
        return self.n_tokens - self.tokens_generated

    def usd_per_thousand_answers(self, tokens: int) -> float:
        """Return what `tokens` output tokens cost per 1,000 answers at the given price."""
        return tokens * self.usd_per_million_tokens / 1_000_000 * 1_000


def cancel_view(
    cancel_at_ms: float,
    *,
    n_tokens: int = 500,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
    usd_per_million_tokens: float = 10.0,
) -> CancelView:
    """Return the savings when the user stops the stream at `cancel_at_ms`.

    A server that notices the disconnect stops generating: tokens generated up
    to the cancel time are paid for, the rest are never produced.
    """
    tokens = explorer_tokens(n_tokens)
    times = llm.token_times_ms(n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    generated = sum(1 for at in times if at <= cancel_at_ms)
    total_ms = times[-1] if times else float(prefill_ms)
    return CancelView(
        cancel_at_ms=float(cancel_at_ms),
        n_tokens=n_tokens,
        tokens_generated=generated,
        seen_text="".join(tokens[:generated]),
        generation_ms_saved=max(0.0, total_ms - cancel_at_ms),
        usd_per_million_tokens=usd_per_million_tokens,
    )


def cancel_readouts(view: CancelView) -> dict[str, str]:
    """Return the cancel explorer's readouts by name: generated, saved, time, cost, seen."""
    spent = view.usd_per_thousand_answers(view.tokens_generated)
    saved = view.usd_per_thousand_answers(view.tokens_saved)
    return {
        "seen": f"the user saw: {_tail(view.seen_text, 90)!r}",
        "generated": f"generated before the stop: {view.tokens_generated} of {view.n_tokens} tokens",
        "saved": f"never generated: {view.tokens_saved} tokens",
        "time": f"GPU time saved: {view.generation_ms_saved / 1000:,.1f} s",
        "cost": (
            f"per 1,000 answers at ${view.usd_per_million_tokens:g}/M tokens:"
            f" ${spent:,.2f} spent, ${saved:,.2f} saved"
        ),
    }


def cancel_text(view: CancelView) -> str:
    """Return a plain-text summary of a cancel point (the explorer's headless twin)."""
    r = cancel_readouts(view)
    return "\n".join(
        [f"stop at {view.cancel_at_ms:,.0f} ms"]
        + [f"  {r[k]}" for k in ("seen", "generated", "saved", "time", "cost")]
    )


# ## 01 · Proxy and gateway idle timeouts


@dataclass(frozen=True)
class IdleReport:
    """The silences in one response, as an idle-timeout proxy sees them."""

    write_ms: tuple[float, ...]  # when each write left the server
    is_heartbeat: tuple[bool, ...]  # True for writes that are only `:` comments
    longest_silence_ms: float
    idle_timeout_ms: float
    cut_at_ms: float | None  # when the proxy gives up, or None if bytes kept flowing

    @property
    def heartbeats(self) -> int:
        """How many writes were heartbeat comments."""
        return sum(self.is_heartbeat)


def idle_report(
    writes: Iterable[tuple[float, bytes]], *, idle_timeout_ms: float, start_ms: float = 0.0
) -> IdleReport:
    """Return the longest silence in `writes` and when a proxy with `idle_timeout_ms` cuts it.

    The proxy's clock starts at `start_ms` (the request) and restarts at every
    byte; a silence longer than idle_timeout_ms closes the connection.
    """
    write_ms: list[float] = []
    beats: list[bool] = []
    for at_ms, data in writes:
        write_ms.append(float(at_ms))
        beats.append(data.startswith(b":"))
    longest, cut_at, last = 0.0, None, float(start_ms)
    for at_ms in write_ms:
        gap = at_ms - last
        if cut_at is None and gap > idle_timeout_ms:
            cut_at = last + idle_timeout_ms
        longest = max(longest, gap)
        last = at_ms
    return IdleReport(tuple(write_ms), tuple(beats), longest, float(idle_timeout_ms), cut_at)


def idle_text(label: str, report: IdleReport) -> str:
    """Return one line: the longest silence, heartbeats sent, and whether the proxy cut it."""
    verdict = (
        f"CUT by the proxy at {report.cut_at_ms / 1000:,.0f} s"
        if report.cut_at_ms is not None
        else "bytes kept flowing: not cut"
    )
    return (
        f"{label:<28} longest silence {report.longest_silence_ms / 1000:6.1f} s,"
        f" {report.heartbeats:>2} heartbeats -> {verdict}"
    )


def fit_timing(arrival_ms: Iterable[float]) -> tuple[float, float]:
    """Return (prefill_ms, per_token_ms) of the lesson's formula fitted to measured arrivals.

    per_token_ms is the median gap between pieces; prefill_ms is what is left of
    the first arrival: ttft - per_token_ms (the formula's first token).
    """
    times = sorted(arrival_ms)
    if not times:
        raise ValueError("no arrivals to fit: the reply had no text")
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    per_token = gaps[len(gaps) // 2] if gaps else 0.0
    return max(0.0, times[0] - per_token), per_token


# ## 01 · Render sooner


@dataclass(frozen=True)
class LineReady:
    """When one finished line of a markdown answer can be rendered, streaming vs blocking."""

    line: str
    streaming_ms: float
    blocking_ms: float


MARKDOWN_TOKENS = (
    "**", "Order", " 1042", "**", "\n",
    "-", " Ships", " on", " Monday", "\n",
    "-", " Arrives", " Wednesday", "\n",
    "-", " Track", " it", " at", " /", "orders", "/", "1042", "\n",
)  # fmt: skip


def line_ready_times(
    tokens: Iterable[str] = MARKDOWN_TOKENS, *, prefill_ms: float = 300, per_token_ms: float = 40
) -> list[LineReady]:
    """Return each complete line with the time a front end can render it, streaming and blocking.

    A line is safe to render as markdown once its newline arrives; blocking
    delivers every line at the end.
    """
    tokens = list(tokens)
    times = llm.token_times_ms(len(tokens), prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    end_ms = times[-1] if times else float(prefill_ms)
    ready, line = [], ""
    for token, at_ms in zip(tokens, times, strict=True):
        line += token
        while "\n" in line:
            done, line = line.split("\n", 1)
            ready.append(LineReady(done, at_ms, end_ms))
    if line:
        ready.append(LineReady(line, end_ms, end_ms))
    return ready


# ## 02 · HTTP on the wire: the response head and chunked transfer encoding


def request_bytes(
    path: str,
    body: dict | None = None,
    *,
    method: str = "POST",
    host: str = "127.0.0.1:8000",
    headers: Iterable[tuple[str, str]] = (),
) -> bytes:
    """Return the bytes of an HTTP/1.1 request (a JSON body if given), as a client writes them."""
    payload = b"" if body is None else json.dumps(body).encode("utf-8")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Accept: text/event-stream"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


@dataclass(frozen=True)
class ResponseHead:
    """The status line and headers of an HTTP/1.1 response."""

    status_line: str
    headers: tuple[tuple[str, str], ...]

    @property
    def status(self) -> int:
        """The status code, e.g. 200."""
        return int(self.status_line.split()[1])

    def header(self, name: str) -> str | None:
        """Return the first header called `name` (any case), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


def split_response(raw: bytes) -> tuple[ResponseHead, bytes]:
    """Return (head, body bytes) of a raw HTTP/1.1 response; the head ends at the first CRLF CRLF."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError("no blank line (CRLF CRLF) after the headers: the head is not complete")
    lines = raw[:end].decode("latin-1").split("\r\n")
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    )
    return ResponseHead(lines[0], headers), raw[end + 4 :]


@dataclass(frozen=True)
class ChunkStep:
    """One step of decoding a chunked body: a size line and the bytes it announces.

    kind: "chunk" (size > 0), "last" (the zero-size chunk: the body is over) or
    "incomplete" (the bytes stop in the middle: more must arrive).
    """

    offset: int
    size_line: bytes
    size: int
    data: bytes
    kind: str

    def describe(self, max_data_bytes: int = 64) -> str:
        """Return one line: where the step starts in the body, the hex size, its value, the data.

        The start is a byte offset into the body ("at byte  219"), not a time.
        The data is shortened to about max_data_bytes.
        """
        where = f"at byte {self.offset:>4}"
        size_line = f"{self.size_line.decode('latin-1')!r:>6}"
        if self.kind == "last":
            return f"{where}  {size_line} = 0 bytes: end of body"
        if self.kind == "incomplete":
            return f"{where}  incomplete: {len(self.data)} bytes wait for the rest"
        data = self.data
        if len(data) > max_data_bytes:
            data = data[: max_data_bytes // 2] + b"..." + data[-max_data_bytes // 2 :]
        return f"{where}  {size_line} = {self.size:>3} bytes: {data!r}"


def parse_chunked(body: bytes) -> list[ChunkStep]:
    """Return the steps of decoding an HTTP/1.1 chunked body, up to the zero-size chunk.

    Each chunk is `<size in hex>[;extensions]CRLF <size bytes> CRLF`; a chunk of
    size 0 (then optional trailer lines and a final CRLF) ends the body. Bytes
    that stop mid-chunk give a last step of kind "incomplete".
    """
    steps: list[ChunkStep] = []
    pos = 0
    while pos < len(body):
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            steps.append(ChunkStep(pos, body[pos:], 0, b"", "incomplete"))
            break
        size_line = body[pos:eol]
        size_hex = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_hex, 16)
        except ValueError:
            raise ValueError(f"bad chunk size line {size_line!r} at byte {pos}") from None
        start = eol + 2
        if size == 0:
            end = body.find(b"\r\n\r\n", eol)  # trailer lines, if any, end with a blank line
            kind = "last" if end >= 0 else "incomplete"
            steps.append(ChunkStep(pos, size_line, 0, b"", kind))
            break
        if len(body) < start + size + 2:
            steps.append(ChunkStep(pos, size_line, size, body[start : start + size], "incomplete"))
            break
        if body[start + size : start + size + 2] != b"\r\n":
            raise ValueError(f"chunk at byte {pos} announced {size} bytes but no CRLF follows them")
        steps.append(ChunkStep(pos, size_line, size, body[start : start + size], "chunk"))
        pos = start + size + 2
    return steps


def encode_chunked(pieces: Iterable[bytes]) -> bytes:
    """Return `pieces` framed with chunked transfer encoding, ending with the zero-size chunk."""
    out = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p]
    return b"".join(out) + b"0\r\n\r\n"


def dechunk(body: bytes) -> bytes:
    """Return the payload of a chunked body: the data of every complete chunk, joined."""
    return b"".join(step.data for step in parse_chunked(body) if step.kind == "chunk")


def chunked_complete(body: bytes) -> bool:
    """Return True once the zero-size chunk (and its final CRLF) has arrived."""
    steps = parse_chunked(body)
    return bool(steps) and steps[-1].kind == "last"


def h2_data_frames(pieces: Iterable[bytes], *, stream_id: int = 1) -> list[bytes]:
    """Return HTTP/2 DATA frames for `pieces`: a 9-byte header each, END_STREAM on the last.

    Header: 24-bit length, type 0x0 (DATA), flags (0x1 = END_STREAM), a reserved
    bit and the 31-bit stream id. The end of the body is a flag, not a zero chunk.
    """
    pieces = [p for p in pieces if p] + [b""]
    frames = []
    for i, piece in enumerate(pieces):
        flags = 0x1 if i == len(pieces) - 1 else 0x0
        header = len(piece).to_bytes(3, "big") + bytes([0x0, flags])
        frames.append(header + (stream_id & 0x7FFFFFFF).to_bytes(4, "big") + piece)
    return frames


def _quic_varint(n: int) -> bytes:
    for size, prefix in ((1, 0x00), (2, 0x40), (4, 0x80), (8, 0xC0)):
        if n < 1 << (8 * size - 2):
            raw = bytearray(n.to_bytes(size, "big"))
            raw[0] |= prefix
            return bytes(raw)
    raise ValueError(f"{n} is too large for a QUIC variable-length integer")


def h3_data_frames(pieces: Iterable[bytes]) -> list[bytes]:
    """Return HTTP/3 DATA frames: type 0x00 and a QUIC varint length, then the bytes.

    HTTP/3 has no end flag in the frame: QUIC closes the stream (FIN) instead.
    """
    return [_quic_varint(0x00) + _quic_varint(len(p)) + p for p in pieces if p]


# ## 02 · The event format


@dataclass(frozen=True)
class FieldRow:
    """One row of the SSE field table: an example on the wire and what a parser makes of it."""

    field: str
    meaning: str
    wire: bytes
    events: tuple[sse.Event, ...]


def sse_field_rows() -> list[FieldRow]:
    """Return the standard fields (data, event, id, retry) and comments, encoded and decoded back."""
    examples = [
        ("data", "the payload; several data: lines join with a newline",
         sse.encode('{"delta": "Your"}')),
        ("data", "(two lines of data in one event)", sse.encode("first line\nsecond line")),
        ("event", "the event type; without it, the type is 'message'",
         sse.encode('{"type": "message_stop"}', event="message_stop")),
        ("id", "the last event ID; a reconnecting browser sends it as Last-Event-ID",
         sse.encode('{"delta": " order"}', id="1")),
        ("retry", "how long (ms) a browser waits before reconnecting",
         sse.encode('{"delta": " ships"}', retry=3000)),
        (":", "a comment: the parser ignores it; keeps an idle connection busy",
         sse.comment("ping")),
    ]  # fmt: skip
    return [
        FieldRow(field, meaning, wire, tuple(sse.decode_all([wire])))
        for field, meaning, wire in examples
    ]


def _event_text(event: sse.Event) -> str:
    parts = [f"event={event.event!r}", f"data={event.data!r}"]
    if event.id:
        parts.append(f"id={event.id!r}")
    if event.retry is not None:
        parts.append(f"retry={event.retry}")
    return "Event(" + ", ".join(parts) + ")"


def field_rows_text(rows: Iterable[FieldRow]) -> str:
    """Return the field table as plain text: field, wire bytes, decoded event."""
    out = []
    for row in rows:
        decoded = ", ".join(_event_text(e) for e in row.events) or "(no event: ignored)"
        out.append(
            f"{row.field:<6} {row.meaning}\n       wire: {row.wire!r}\n       back: {decoded}"
        )
    return "\n".join(out)


def field_rows_html(rows: Iterable[FieldRow]) -> str:
    """Return the field table as HTML with the wire bytes highlighted."""
    body = "".join(
        f"<tr><td><code>{_esc(row.field)}</code></td><td>{_esc(row.meaning)}</td>"
        f"<td>{highlight_sse_html(row.wire)}</td>"
        f"<td><code>{_esc(', '.join(_event_text(e) for e in row.events) or '(ignored)')}"
        "</code></td></tr>"
        for row in rows
    )
    head = "<tr><th>field</th><th>what it does</th><th>on the wire</th><th>decoded</th></tr>"
    return f'<table class="lk-field-table">{head}{body}</table>'


def highlight_sse_html(raw: bytes, *, mark: bool = False) -> str:
    """Return SSE bytes as HTML: each field name coloured, newlines drawn as ⏎, blank lines shown.

    `mark` gives the block a pale yellow background (the event being inspected).
    """
    text = raw.decode("utf-8", errors="replace")
    out = []
    for line in re.split(r"(?<=\n)", text):
        if not line:
            continue
        body = line.rstrip("\r\n")
        end = '<span style="color:#bbb">⏎</span>' if line != body else ""
        if body == "":
            out.append('<span style="color:#bbb">⏎ (blank line: end of event)</span>\n')
            continue
        if body.startswith(":"):
            colour = FIELD_COLOURS["comment"]
            out.append(f'<span style="color:{colour};font-style:italic">{_esc(body)}</span>')
        else:
            name, colon, value = body.partition(":")
            colour = FIELD_COLOURS.get(name, "#000000")
            out.append(
                f'<span style="color:{colour};font-weight:bold">{_esc(name)}{colon}</span>'
                f"{_esc(value)}"
            )
        out.append(end + "\n")
    style = "margin:0;white-space:pre-wrap;word-break:break-all;font-size:85%"
    if mark:
        style += ";background:#fff3b0"
    return f'<pre class="lk-wire" style="{style}">{"".join(out)}</pre>'


# ## 02 · The wire inspector: the same answer in each dialect


@dataclass(frozen=True)
class WireRow:
    """One write of a streamed answer: its bytes, the events, the deltas and the screen after it."""

    index: int
    at_ms: float
    raw: bytes
    events: tuple[sse.Event, ...]
    steps: tuple[dialects.Step, ...]
    screen: str
    done: bool

    @property
    def delta(self) -> str:
        """The text this write adds to the screen."""
        return "".join(step.delta for step in self.steps)


def wire_rows(
    dialect: str,
    prompt: str = llm.RUNNING_PROMPT,
    *,
    include_usage: bool = True,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
) -> list[WireRow]:
    """Return every write of the streamed answer in `dialect`, decoded and applied to a screen.

    include_usage applies to "openai" (stream_options.include_usage); the other
    dialects report usage by themselves or not at all.
    """
    options: dict = {"prefill_ms": prefill_ms, "per_token_ms": per_token_ms}
    if dialect == "openai":
        options["include_usage"] = include_usage
    writes = llm.stream_writes(llm.answer_for(prompt), dialect, **options)
    decoder = sse.SSEDecoder()
    rows, screen, done = [], "", False
    for i, (at_ms, raw) in enumerate(writes):
        events = tuple(decoder.feed(raw))
        steps = tuple(dialects.interpret(event, dialect) for event in events)
        screen += "".join(step.delta for step in steps)
        done = done or any(step.done for step in steps)
        rows.append(WireRow(i, at_ms, raw, events, steps, screen, done))
    return rows


def row_summary(row: WireRow) -> str:
    """Return what one write means: the delta, a finish reason, usage or the end marker."""
    notes = []
    if row.delta:
        notes.append(f"delta {row.delta!r}")
    for step in row.steps:
        if step.finish_reason:
            notes.append(f"finish_reason {step.finish_reason!r}")
        if step.usage:
            notes.append(f"usage {step.usage}")
        if step.done:
            notes.append("end marker: the answer is complete")
        if step.error:
            notes.append(f"error {step.error!r}")
    if not row.events:
        notes.append("no event (comment or unfinished)")
    return "; ".join(notes) or "no text (bookkeeping event)"


def wire_rows_text(rows: Iterable[WireRow], *, max_bytes: int = 90) -> str:
    """Return one block per write: time, raw bytes (shortened), meaning and the screen after it."""
    out = []
    for row in rows:
        shown = row.raw if len(row.raw) <= max_bytes else row.raw[: max_bytes - 3] + b"..."
        out.append(
            f"[{row.at_ms:>4.0f} ms] {shown!r}\n"
            f"          -> {row_summary(row)}\n          screen: {row.screen!r}"
        )
    return "\n".join(out)


def inspector_html(rows: list[WireRow], upto: int) -> str:
    """Return the wire so far as HTML: earlier writes dimmed, write `upto` marked."""
    upto = max(0, min(upto, len(rows) - 1))
    parts = [
        f'<div style="opacity:{1.0 if i == upto else 0.55}">'
        f"{highlight_sse_html(row.raw, mark=i == upto)}</div>"
        for i, row in enumerate(rows[: upto + 1])
    ]
    return '<div class="lk-wire-bytes">' + "".join(parts) + "</div>"


def final_events(rows: Iterable[WireRow]) -> dict[str, object]:
    """Return what the end of a stream carries: finish reason, usage and whether it completed."""
    info: dict[str, object] = {"finish_reason": None, "usage": None, "complete": False}
    for row in rows:
        for step in row.steps:
            if step.finish_reason:
                info["finish_reason"] = step.finish_reason
            if step.usage:
                info["usage"] = step.usage
            if step.done:
                info["complete"] = True
    return info


def side_by_side_html(prompt: str = llm.RUNNING_PROMPT, *, last: int = 4) -> str:
    """Return the last `last` writes of the OpenAI and Anthropic streams side by side (HTML)."""
    columns = []
    for dialect in ("openai", "anthropic"):
        rows = wire_rows(dialect, prompt)
        wire = "".join(highlight_sse_html(row.raw) for row in rows[-last:])
        columns.append(
            f'<div style="flex:1;min-width:0"><b>{dialect}</b> (last {last} writes){wire}</div>'
        )
    return (
        '<div class="lk-side-by-side" style="display:flex;gap:12px">' + "".join(columns) + "</div>"
    )


def side_by_side_text(prompt: str = llm.RUNNING_PROMPT, *, last: int = 4) -> str:
    """Return the last `last` writes of the OpenAI and Anthropic streams as text (⏎ = newline).

    The plain-text twin of side_by_side_html, one dialect after the other.
    """
    lines = []
    for dialect in ("openai", "anthropic"):
        lines.append(f"{dialect} (last {last} writes)")
        lines += ["  " + show_newlines(row.raw) for row in wire_rows(dialect, prompt)[-last:]]
    return "\n".join(lines)


# ## 02 · Deltas: append, never replace


def screens_after(deltas: Iterable[str], *, replace: bool = False) -> list[str]:
    """Return the screen after each delta: appended (correct) or replaced (the bug)."""
    screens, screen = [], ""
    for delta in deltas:
        screen = delta if replace else screen + delta
        screens.append(screen)
    return screens


# ## 02 · One streamed answer, end to end: the five steps


@dataclass(frozen=True)
class WalkStep:
    """One of the five steps from request to screen: who acts, the bytes, what the user sees."""

    number: int
    title: str
    actor: str
    wire: bytes
    explain: str
    screen: str


SSE_RESPONSE_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Connection: keep-alive\r\n"
    b"Transfer-Encoding: chunked\r\n"
    b"\r\n"
)


def parse_stages(raw: bytes, dialect: str = "openai") -> list[tuple[str, str]]:
    """Return the client's parsing stages for one event: buffer, event, data, JSON, delta."""
    buffer = raw.decode("utf-8")
    block, _, rest = buffer.partition("\n\n")
    data = "\n".join(
        line.removeprefix("data:").removeprefix(" ")
        for line in block.split("\n")
        if line.startswith("data:")
    )
    stages = [
        ("bytes in the buffer", repr(buffer)),
        ("cut at the blank line", repr(block)),
        ("strip 'data: '", data),
    ]
    if data == "[DONE]":
        return stages + [("end marker?", "yes: stop reading, the answer is complete")]
    stages.append(("json.loads", repr(json.loads(data))))
    step = dialects.interpret(sse.decode_all([raw])[0], dialect)
    return stages + [("delta to append", repr(step.delta))]


def walkthrough_steps(prompt: str = llm.RUNNING_PROMPT) -> list[WalkStep]:
    """Return the five steps of one OpenAI-style streamed answer, from request to end marker."""
    rows = wire_rows("openai", prompt, include_usage=False)
    first = next(row for row in rows if row.delta)
    request = request_bytes(
        "/v1/chat/completions",
        {"model": "lessonkit-sim", "stream": True,
         "messages": [{"role": "user", "content": prompt}]},
    )  # fmt: skip
    stages = "\n".join(f"{name:<22} {value}" for name, value in parse_stages(first.raw))
    end = rows[-2:]
    return [
        WalkStep(1, "Request", "client", request,
                 'A normal POST; "stream": true asks for the answer piece by piece.', ""),
        WalkStep(2, "Headers first", "server", SSE_RESPONSE_HEAD,
                 "200 OK and text/event-stream go out at once; the model starts; the"
                 " response stays open.", ""),
        WalkStep(3, "Token generated", "server", encode_chunked([first.raw])[:-5],
                 f"At {first.at_ms:.0f} ms the first token exists: wrap it in JSON, write"
                 " 'data: ...' plus a blank line, flush (here inside one HTTP chunk).", ""),
        WalkStep(4, "Client parses", "client", first.raw, stages, first.screen),
        WalkStep(5, "Stream ends", "server", b"".join(row.raw for row in end),
                 f"At {end[-1].at_ms:.0f} ms the finish reason, then data: [DONE]; the"
                 " client stops reading and marks the answer complete.", end[-1].screen),
    ]  # fmt: skip


def walk_step_text(step: WalkStep) -> str:
    """Return one step of the walkthrough as plain text."""
    return (
        f"Step {step.number}: {step.title} ({step.actor})\n"
        f"  wire:   {step.wire!r}\n"
        + "".join(f"  {line}\n" for line in step.explain.split("\n"))
        + f"  screen: {step.screen!r}"
    )


def walk_step_html(step: WalkStep) -> str:
    """Return one step of the walkthrough as HTML: title, bytes, explanation, screen."""
    wire = _esc(step.wire.decode("utf-8", errors="replace").replace("\r\n", "␍␊\n"))
    return (
        f'<div class="lk-walk-step"><b>Step {step.number} of 5: {_esc(step.title)}</b>'
        f" <i>({_esc(step.actor)})</i>"
        f'<pre style="white-space:pre-wrap;word-break:break-all;font-size:85%">{wire}</pre>'
        f'<pre style="white-space:pre-wrap;color:#333">{_esc(step.explain)}</pre>'
        f"<div>screen: <code>{_esc(step.screen) or '(nothing yet)'}</code></div></div>"
    )


# --- readouts: what each explorer widget shows for given control values ---


def stepper_readouts(
    wire: bytes, *, chunk_bytes: int, positions_text: str = "", step: int = 1
) -> dict[str, str]:
    """Return the arrival stepper's readouts (cuts, arrival, events, buffer, screen) for one step.

    `step` is clamped to the number of arrivals, so a slider left past the end shows the last one.
    """
    cuts = stepper_cuts(len(wire), chunk_bytes=chunk_bytes, positions_text=positions_text)
    steps = arrival_steps(wire, cuts)
    current = steps[max(1, min(step, len(steps))) - 1]
    events = [show_newlines(e) for e in current.events]
    return {
        "cuts": f"cuts after bytes {list(cuts)} -> {len(steps)} arrivals",
        "arrival": f"arrival {current.number}/{len(steps)}: {show_newlines(current.chunk)!r}",
        "events": f"events completed: {events}" if events else "events completed: none yet",
        "buffer": f"buffer: {show_newlines(current.state.buffer)!r}",
        "screen": f"screen: {current.state.text!r}"
        + (" (complete)" if current.state.done else " (streaming)"),
        "arrivals": str(len(steps)),
    }


def utf8_readouts(text: str, cut_at_byte: int) -> dict[str, str]:
    """Return the UTF-8 explorer's readouts (bytes, per-chunk, replace, incremental) for one cut."""
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
    }


def drop_readouts(wire: bytes, n_bytes: int) -> dict[str, str]:
    """Return the drop explorer's readouts (screen, complete flag, held bytes) for one drop point."""
    frame = drop_frame(wire, n_bytes)
    return {
        "position": f"dropped after {frame.n_bytes} of {frame.total_bytes} bytes",
        "screen": f"on screen: {frame.text!r}",
        "complete": f"complete={frame.complete}",
        "held": f"held back (never shown): {show_newlines(frame.held)!r}",
    }


# --- notebook 05: checks that can only run at the end, strict-JSON consumers ---


def find_phone_number(text: str) -> str | None:
    """Return a reason if `text` contains a phone number like 555-0142, else None (a toy policy)."""
    match = re.search(r"\b\d{3}-\d{4}\b", text)
    return None if match is None else f"contains the phone number {match.group()}"


@dataclass(frozen=True)
class LateCheck:
    """A streamed answer checked once, at the end: the log, the verdict and how long it showed.

    streamed_failure_ms is when the first offending prefix was already on screen (None if none).
    """

    lines: tuple[str, ...]
    passed: bool
    first_visible_ms: float
    checked_ms: float
    streamed_failure_ms: float | None


def late_check(
    tokens: Sequence[str], times_ms: Sequence[float], check: Callable[[str], str | None]
) -> LateCheck:
    """Return what the user sees when `check` can only judge the full answer after the stream.

    Each token is on screen at its time; the check runs when the last one arrived.
    `check(text)` returns None when the text is fine, else the reason it fails.
    """
    if len(tokens) != len(times_ms) or not tokens:
        raise ValueError("need one time per token, and at least one token")
    lines, text, streamed_failure_ms = [], "", None
    for token, at_ms in zip(tokens, times_ms, strict=True):
        text += token
        lines.append(f"[{at_ms:5.0f} ms] on screen: {text!r}")
        if streamed_failure_ms is None and check(text) is not None:
            streamed_failure_ms = at_ms
    reason = check(text)
    end_ms = times_ms[-1]
    if reason is None:
        lines.append(f"[{end_ms:5.0f} ms] check on the full answer: passed")
    else:
        shown_ms = end_ms - times_ms[0]
        lines.append(f"[{end_ms:5.0f} ms] check on the full answer: FAILED, {reason}")
        lines.append(f"           the answer had been on screen for {shown_ms:.0f} ms")
    return LateCheck(tuple(lines), reason is None, times_ms[0], end_ms, streamed_failure_ms)


def json_prefix_parses(pieces: Iterable[str]) -> list[bool]:
    """Return, after each streamed piece, whether the text so far parses as JSON."""
    text, results = "", []
    for piece in pieces:
        text += piece
        try:
            json.loads(text)
        except ValueError:
            results.append(False)
        else:
            results.append(True)
    return results
