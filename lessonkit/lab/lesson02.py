"""Lesson 02, SSE on the wire: the state behind its tables, inspector and walkthrough.

    sse_field_rows, field_rows_text        the standard fields, encoded and decoded back
    wire_rows, row_summary, wire_rows_text the wire inspector (lesson / openai / anthropic /
      wire_readouts                          responses)
    final_events, side_by_side             the end of the stream: [DONE] vs named final events
    screens_after                          deltas append, never replace
    walkthrough_steps, walk_step_text      one streamed answer, end to end, in five steps
      walkthrough_readouts

The HTTP framing (response head, chunked encoding, HTTP/2-3 frames) is in
lessonkit.core.framing; the HTML versions of these tables are in lessonkit.lab.views.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lessonkit.core import dialects, llm, sse
from lessonkit.core.framing import encode_chunked, request_bytes
from lessonkit.lab import views
from lessonkit.lab.views import event_text, show_newlines

DIALECTS = ("lesson", "openai", "anthropic", "responses")


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


def field_rows_text(rows: Iterable[FieldRow]) -> str:
    """Return the field table as plain text: field, wire bytes, decoded event."""
    out = []
    for row in rows:
        decoded = ", ".join(event_text(e) for e in row.events) or "(no event: ignored)"
        out.append(
            f"{row.field:<6} {row.meaning}\n       wire: {row.wire!r}\n       back: {decoded}"
        )
    return "\n".join(out)


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
    include_usage: bool = False,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
) -> list[WireRow]:
    """Return every write of the streamed answer in `dialect`, decoded and applied to a screen.

    include_usage applies to "openai": it is the request's
    stream_options.include_usage, off by default as in the API (then no usage chunk
    and no "usage" field). The other dialects report usage by themselves or not at all.
    """
    timing = llm.Timing(prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    usage = llm.OpenAIOptions(include_usage=include_usage) if dialect == "openai" else None
    writes = llm.stream_writes(llm.answer_for(prompt), dialect, timing=timing, options=usage)
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
    named = [event.event for event in row.events if event.event != "message"]
    if not notes and named:  # a named event without new text: say which
        return f"no new text ({', '.join(named)})"
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


def dialect_rows(prompt: str = llm.RUNNING_PROMPT) -> dict[str, list[WireRow]]:
    """Return wire_rows(dialect, prompt) for each of the inspector's dialects, by name."""
    return {dialect: wire_rows(dialect, prompt) for dialect in DIALECTS}


def wire_readouts(
    dialect: str, upto: int, *, rows: Mapping[str, Sequence[WireRow]] | None = None
) -> dict[str, Any]:
    """Return what the wire inspector shows for a dialect and a write number, by name.

    The last write's number (last, the slider's end), the write shown (upto: the asked
    one, or the last when the dialect has fewer writes), the bytes so far (view), what
    the write means (meaning), the screen after it (screen) and the writes so far as
    text (text).
    `rows` is dialect_rows(), computed once by the explorer (and here when it is None).
    """
    rows_of = rows[dialect] if rows is not None else wire_rows(dialect)
    shown = max(0, min(upto, len(rows_of) - 1))
    row = rows_of[shown]
    return {
        "last": len(rows_of) - 1,
        "upto": shown,
        "view": views.Html(views.inspector_html(rows_of, shown)),
        "meaning": f"write {row.index} at {row.at_ms:.0f} ms: {row_summary(row)}",
        "screen": f"screen: {row.screen!r}" + ("  (complete)" if row.done else ""),
        "text": wire_rows_text(rows_of[: shown + 1], max_bytes=72),
    }


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


def side_by_side(
    prompt: str = llm.RUNNING_PROMPT, *, last: int = 4, include_usage: bool = True
) -> dict[str, list[WireRow]]:
    """Return the last `last` writes of the Chat Completions, Responses and Anthropic streams.

    The Chat Completions stream ("openai") is requested with stream_options.include_usage
    (on by default here), so its end carries token usage as the other two always do.
    """
    return {
        "openai": wire_rows("openai", prompt, include_usage=include_usage)[-last:],
        "responses": wire_rows("responses", prompt)[-last:],
        "anthropic": wire_rows("anthropic", prompt)[-last:],
    }


def hide_port(text: str, base_url: str) -> str:
    """Return `text` with the host:port of `base_url` written as 127.0.0.1:<port>.

    The notebooks' servers get a free port each run; a stored output should not
    carry it (it says nothing about the lesson and differs on every machine).
    """
    host = base_url.split("://", 1)[-1].split("/", 1)[0]
    return text.replace(host, host.rsplit(":", 1)[0] + ":<port>")


def side_by_side_text(streams: dict[str, list[WireRow]]) -> str:
    """Return each dialect's writes as text, one after the other (⏎ = newline).

    The plain-text twin of views.side_by_side_html; `streams` comes from side_by_side().
    """
    lines = []
    for dialect, rows in streams.items():
        lines.append(f"{dialect} (last {len(rows)} writes)")
        lines += ["  " + show_newlines(row.raw) for row in rows]
    return "\n".join(lines)


def screens_after(deltas: Iterable[str], *, replace: bool = False) -> list[str]:
    """Return the screen after each delta: appended (correct) or replaced (the bug)."""
    screens, screen = [], ""
    for delta in deltas:
        screen = delta if replace else screen + delta
        screens.append(screen)
    return screens


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
    rows = wire_rows("openai", prompt)
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


def walkthrough_readouts(number: int, *, steps: Sequence[WalkStep]) -> dict[str, Any]:
    """Return what the walkthrough shows at step `number` (1-5), by name.

    The step's bytes and explanation (view), the screen after it (screen), whether the
    back and next buttons are off (first, last) and the step as text (text).
    """
    number = max(1, min(number, len(steps)))
    current = steps[number - 1]
    return {
        "view": views.Html(views.walk_step_html(current)),
        "screen": f"on screen after step {number}: {current.screen!r}",
        "first": number == 1,
        "last": number == len(steps),
        "text": walk_step_text(current),
    }


def walk_step_text(step: WalkStep) -> str:
    """Return one step of the walkthrough as plain text."""
    return (
        f"Step {step.number}: {step.title} ({step.actor})\n"
        f"  wire:   {step.wire!r}\n"
        + "".join(f"  {line}\n" for line in step.explain.split("\n"))
        + f"  screen: {step.screen!r}"
    )
