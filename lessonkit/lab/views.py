"""How the notebooks draw things: HTML and text views, one colour palette.

Every function takes plain data (from lessonkit.core or a lesson module) and
returns a string; nothing here computes lesson state. Colours are the Okabe-Ito
palette, safe for the common colour-vision deficiencies, and named once here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from lessonkit.core import sse
from lessonkit.lab.lesson01 import decode_step_text, timeline_panes

if TYPE_CHECKING:
    from lessonkit.lab.lesson01 import DecodeStep, TimelineView
    from lessonkit.lab.lesson02 import FieldRow, WalkStep, WireRow


class Html(str):
    """A string that is already HTML: widgets show it as is instead of escaping it as text."""


# The Okabe-Ito palette, by name; every colour in the course's views and plots is one of these.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}
C = OKABE_ITO
# What each SSE field is drawn in, in the wire views.
FIELD_COLOURS = {
    "event": C["vermillion"],
    "data": C["blue"],
    "id": C["green"],
    "retry": C["purple"],
    "comment": C["grey"],
}
# A reader's verdict on one cut: right, wrong text, or an exception.
VERDICT_COLOURS = {"ok": C["green"], "wrong": C["orange"], "error": C["purple"]}
# The edge of a check's feedback box: passed, failed, not attempted yet.
FEEDBACK_COLOURS = {"pass": C["green"], "fail": C["vermillion"], "todo": C["orange"]}


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def show_newlines(text: str | bytes) -> str:
    """Return `text` with each newline drawn as ⏎ (bytes are decoded, bad bytes shown as \\xNN)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    return text.replace("\n", "⏎")


def _token_box(token: str, colour: str, *, bold: bool = False) -> str:
    weight = "font-weight:bold;" if bold else ""
    return (
        f'<span style="display:inline-block;margin:1px;padding:1px 4px;border-radius:3px;'
        f'border:1px solid {colour};{weight}white-space:pre">{_esc(token)}</span>'
    )


def decode_step_html(step: DecodeStep) -> str:
    """Return HTML boxes: prompt tokens (grey), generated tokens (blue), the new token (orange)."""
    boxes = [_token_box(t, C["grey"]) for t in step.prompt]
    boxes += [_token_box(t, C["blue"]) for t in step.generated]
    arrow = '<span style="margin:0 6px">→ model →</span>'
    new = _token_box(step.new_token, C["orange"], bold=True)
    return (
        f'<div class="lk-decode-step">{"".join(boxes)}{arrow}{new}'
        f'<div style="color:#555">{_esc(decode_step_text(step))}</div></div>'
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


def highlight_sse_html(raw: bytes, *, mark: bool = False, wrap: bool = True) -> str:
    """Return SSE bytes as HTML: each field name coloured, newlines drawn as ⏎, blank lines shown.

    `mark` gives the block a pale yellow background (the event being inspected).
    `wrap=False` keeps every line on one line (short examples in a table): a wire line
    is never broken inside a token such as "Your" or "message_stop".
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
            colour = FIELD_COLOURS.get(name, C["black"])
            out.append(
                f'<span style="color:{colour};font-weight:bold">{_esc(name)}{colon}</span>'
                f"{_esc(value)}"
            )
        out.append(end + "\n")
    if wrap:
        style = "margin:0;white-space:pre-wrap;word-break:break-all;font-size:85%"
    else:
        style = "margin:0;white-space:pre;font-size:85%"
    if mark:
        style += ";background:#fff3b0"
    return f'<pre class="lk-wire" style="{style}">{"".join(out)}</pre>'


def field_rows_html(rows: Iterable[FieldRow]) -> str:
    """Return the field table as HTML with the wire bytes highlighted.

    The wire and decoded columns never wrap inside a token: each wire line stays on one
    line and the decoded event wraps only between its fields; a narrow page scrolls
    the table sideways instead.
    """
    cell = 'style="vertical-align:top;text-align:left"'
    body = "".join(
        f"<tr><td {cell}><code>{_esc(row.field)}</code></td><td {cell}>{_esc(row.meaning)}</td>"
        f"<td {cell}>{highlight_sse_html(row.wire, wrap=False)}</td>"
        f"<td {cell}>{_decoded_html(row.events)}</td></tr>"
        for row in rows
    )
    head = "<tr><th>field</th><th>what it does</th><th>on the wire</th><th>decoded</th></tr>"
    return f'<div style="overflow-x:auto"><table class="lk-field-table">{head}{body}</table></div>'


def _decoded_html(events: Iterable[sse.Event]) -> str:
    """Return decoded events, one per line, each field kept whole (no break inside a value)."""
    lines = []
    for event in events:
        fields = [f"event={event.event!r}", f"data={event.data!r}"]
        if event.id:
            fields.append(f"id={event.id!r}")
        if event.retry is not None:
            fields.append(f"retry={event.retry}")
        kept = ", ".join(f'<span style="white-space:pre">{_esc(f)}</span>' for f in fields)
        lines.append(f"<code>Event({kept})</code>")
    return "<br>".join(lines) or "<code>(ignored)</code>"


def inspector_html(rows: list[WireRow], upto: int) -> str:
    """Return the wire so far as HTML: earlier writes dimmed, write `upto` marked."""
    upto = max(0, min(upto, len(rows) - 1))
    parts = [
        f'<div style="opacity:{1.0 if i == upto else 0.55}">'
        f"{highlight_sse_html(row.raw, mark=i == upto)}</div>"
        for i, row in enumerate(rows[: upto + 1])
    ]
    return '<div class="lk-wire-bytes">' + "".join(parts) + "</div>"


def side_by_side_html(streams: Mapping[str, Sequence[WireRow]]) -> str:
    """Return each dialect's writes in its own column (HTML), e.g. lesson02.side_by_side()."""
    columns = []
    for dialect, rows in streams.items():
        wire = "".join(highlight_sse_html(row.raw) for row in rows)
        columns.append(
            f'<div style="flex:1;min-width:0"><b>{dialect}</b> (last {len(rows)} writes){wire}</div>'
        )
    return (
        '<div class="lk-side-by-side" style="display:flex;gap:12px">' + "".join(columns) + "</div>"
    )


def line_end_badge(ending: str) -> str:
    """Return a labelled badge for a line end: "CR LF" (HTTP's) or "LF" (an SSE line's)."""
    label = "CR LF" if ending == "\r\n" else "LF"
    return (
        '<span class="lk-line-end" style="display:inline-block;font-family:sans-serif;'
        "font-size:11px;line-height:13px;color:#555;border:1px solid #999;border-radius:3px;"
        f'padding:0 3px;margin-left:3px">{label}</span>'
    )


def walk_step_html(step: WalkStep) -> str:
    """Return one step of the walkthrough as HTML: title, bytes, explanation, screen.

    Each line end is drawn as a readable badge, "CR LF" for HTTP's and "LF" for an SSE
    line's, followed by a real line break: a blank line shows as a badge on its own.
    """
    text = step.wire.decode("utf-8", errors="replace")
    pieces = re.split(r"(\r\n|\n)", text)
    wire = "".join(
        line_end_badge(piece) + "\n" if piece in ("\r\n", "\n") else _esc(piece) for piece in pieces
    )
    return (
        f'<div class="lk-walk-step"><b>Step {step.number} of 5: {_esc(step.title)}</b>'
        f" <i>({_esc(step.actor)})</i>"
        f'<pre style="white-space:pre-wrap;word-break:break-all;font-size:85%">{wire}</pre>'
        f'<pre style="white-space:pre-wrap;color:#333">{_esc(step.explain)}</pre>'
        f"<div>screen: <code>{_esc(step.screen) or '(nothing yet)'}</code></div></div>"
    )


def twin_html(headline: str, what: str, text: str = "") -> str:
    """Return what a page shows in place of a widget before its cell runs (see widgets.Twinned).

    A calm box: the headline ("Run this cell to open the timeline explorer."), what the
    widget will let you do, and (optionally) the same state as text, for a reader
    without a kernel.
    """
    note = f'<div style="color:#555">{_esc(what)}</div>' if what else ""
    shown = (
        '<pre style="margin:6px 0 0 0;white-space:pre-wrap;font-size:85%;color:#333">'
        f"{_esc(text)}</pre>"
        if text
        else ""
    )
    return (
        '<div class="lk-twin" style="border:1px dashed #999;border-radius:6px;padding:6px 10px;'
        'background:#f7f7f7;font-family:sans-serif">'
        f"<b>▶ {_esc(headline)}</b>{note}{shown}</div>"
    )


def event_text(event: sse.Event) -> str:
    """Return an Event as one short line: Event(event='message', data='...', id='1')."""
    parts = [f"event={event.event!r}", f"data={event.data!r}"]
    if event.id:
        parts.append(f"id={event.id!r}")
    if event.retry is not None:
        parts.append(f"retry={event.retry}")
    return "Event(" + ", ".join(parts) + ")"
