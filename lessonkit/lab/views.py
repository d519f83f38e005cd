"""How the notebooks draw things: HTML and text views, and the colours they use.

Every function takes plain data (from lessonkit.core or a lesson module) and returns a
string; nothing here computes lesson state, and nothing here imports a lesson module
(they import this one). The colours of HTML and SVG are JupyterLab's theme variables,
so the light, dark and high-contrast themes each draw them readably (text at 4.5:1 or
more, tests/browser/test_browser_accessibility.py); each variable has a fallback for a
page without JupyterLab's styles (nbconvert's HTML, a PDF). matplotlib figures are
images and keep the Okabe-Ito palette, safe for the common colour-vision deficiencies.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lessonkit.core import sse

# The lesson modules import views, never the reverse, not even for a type, so their steps
# and rows are typed Any here: decode_step_html takes a lesson01.DecodeStep,
# field_rows_html lesson02.FieldRow rows, inspector_html and side_by_side_html
# lesson02.WireRow rows, walk_step_html a lesson02.WalkStep.


class Html(str):
    """A string that is already HTML: widgets show it as is instead of escaping it as text."""


# The Okabe-Ito palette, by name: the colours of the matplotlib figures (lessonkit.lab.plots).
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
# A reader's verdict on one cut, in the figures: right, wrong text, or an exception.
VERDICT_COLOURS = {
    "ok": OKABE_ITO["green"],
    "wrong": OKABE_ITO["orange"],
    "error": OKABE_ITO["purple"],
}

# The colours of the course's HTML and SVG, by role. Text colours are read on the page's own
# background (--jp-layout-color0); the rest mark shapes and borders.
THEME = {
    "text": "var(--jp-content-font-color1, rgba(0, 0, 0, 0.87))",
    "muted": "var(--jp-content-font-color2, rgba(0, 0, 0, 0.54))",
    "border": "var(--jp-border-color1, #bdbdbd)",
    "accent": "var(--jp-brand-color1, #1976d2)",  # a mark, a focus, "now"; text too (4.6:1)
    "alarm": "var(--jp-error-color1, #d32f2f)",  # the total time; text too (5:1)
    "warm": "var(--jp-warn-color1, #f57c00)",  # prefill bars: a shape, never text
    "good": "var(--jp-success-color1, #388e3c)",
    "grey": "var(--jp-layout-color3, #bdbdbd)",  # the network round trip: a shape
}
# What each SSE field is drawn in, in the wire views: the editor's own syntax colours.
FIELD_COLOURS = {
    "event": "var(--jp-mirror-editor-string-color, #ba2121)",
    "data": "var(--jp-mirror-editor-property-color, #05a)",
    "id": "var(--jp-mirror-editor-keyword-color, #008000)",
    "retry": "var(--jp-mirror-editor-operator-color, #7800c2)",
    "comment": THEME["muted"],
}
# The edge of a check's feedback box (lessonkit.grading): passed, failed, not attempted yet.
FEEDBACK_COLOURS = {
    "pass": "var(--jp-success-color1, #388e3c)",
    "fail": "var(--jp-error-color1, #d32f2f)",
    "todo": "var(--jp-warn-color1, #f57c00)",
}


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
        f'border:2px solid {colour};{weight}white-space:pre">{_esc(token)}</span>'
    )


def decode_step_html(step: Any, caption: str) -> str:
    """Return HTML boxes: prompt tokens (grey), generated ones (blue), the new token (bold, orange).

    `caption` is the pass in words (lesson01.decode_step_text), shown under the boxes.
    """
    boxes = [_token_box(t, THEME["grey"]) for t in step.prompt]
    boxes += [_token_box(t, THEME["accent"]) for t in step.generated]
    arrow = '<span style="margin:0 6px">→ model →</span>'
    new = _token_box(step.new_token, THEME["warm"], bold=True)
    return (
        f'<div class="lk-decode-step">{"".join(boxes)}{arrow}{new}'
        f'<div style="color:{THEME["text"]}">{_esc(caption)}</div></div>'
    )


def timeline_panes_html(blocking: str, streaming: str) -> str:
    """Return the two screens side by side as HTML: the blocking text left, the streamed right."""
    box = (
        '<div class="{cls}" style="flex:1;border:1px solid {border};border-radius:6px;'
        'padding:6px;min-height:4.5em;font-family:sans-serif">'
        '<div style="font-size:85%;font-weight:bold">{title}</div><div>{text}</div></div>'
    )
    return (
        '<div style="display:flex;gap:8px">'
        + box.format(cls="lk-pane-blocking", border=THEME["border"],
                     title="Blocking (newspaper)", text=_esc(blocking))
        + box.format(cls="lk-pane-streaming", border=THEME["border"],
                     title="Streaming (radio)", text=_esc(streaming))
        + "</div>"
    )  # fmt: skip


def highlight_sse_html(raw: bytes, *, mark: bool = False, wrap: bool = True) -> str:
    """Return SSE bytes as HTML: each field name coloured, newlines drawn as ⏎, blank lines shown.

    `mark` draws a bar beside the block (the event being inspected) and marks it
    aria-current for a screen reader. `wrap=False` keeps every line on one line (short examples in a table):
    a wire line is never broken inside a token such as "Your" or "message_stop".
    """
    text = raw.decode("utf-8", errors="replace")
    muted = f'style="color:{THEME["muted"]}"'
    out = []
    for line in re.split(r"(?<=\n)", text):
        if not line:
            continue
        body = line.rstrip("\r\n")
        end = f"<span {muted}>⏎</span>" if line != body else ""
        if body == "":
            out.append(f"<span {muted}>⏎ (blank line: end of event)</span>\n")
            continue
        if body.startswith(":"):
            colour = FIELD_COLOURS["comment"]
            out.append(f'<span style="color:{colour};font-style:italic">{_esc(body)}</span>')
        else:
            name, colon, value = body.partition(":")
            colour = FIELD_COLOURS.get(name, THEME["text"])
            out.append(
                f'<span style="color:{colour};font-weight:bold">{_esc(name)}{colon}</span>'
                f"{_esc(value)}"
            )
        out.append(end + "\n")
    if wrap:
        style = "margin:0;white-space:pre-wrap;word-break:break-all;font-size:85%"
    else:
        style = "margin:0;white-space:pre;font-size:85%"
    current = ""
    if mark:
        style += f";border-left:4px solid {THEME['accent']};padding-left:6px"
        current = ' aria-current="true"'
    return f'<pre class="lk-wire" style="{style}"{current}>{"".join(out)}</pre>'


def field_rows_html(rows: Iterable[Any]) -> str:
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


def inspector_html(rows: Sequence[Any], upto: int) -> str:
    """Return the wire so far as HTML, every write up to `upto`, that one marked with a bar."""
    upto = max(0, min(upto, len(rows) - 1))
    parts = [highlight_sse_html(row.raw, mark=i == upto) for i, row in enumerate(rows[: upto + 1])]
    return '<div class="lk-wire-bytes">' + "".join(parts) + "</div>"


def side_by_side_html(streams: Mapping[str, Sequence[Any]]) -> str:
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
        f"font-size:11px;line-height:13px;color:{THEME['text']};border:1px solid"
        f' {THEME["border"]};border-radius:3px;padding:0 3px;margin-left:3px">{label}</span>'
    )


def walk_step_html(step: Any) -> str:
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
        f'<pre style="white-space:pre-wrap">{_esc(step.explain)}</pre>'
        f"<div>screen: <code>{_esc(step.screen) or '(nothing yet)'}</code></div></div>"
    )


# A widget's twin (one output) stands in for the widget (the next output of the same cell)
# whenever that one is not live: before the cell runs, while it loads, in a saved notebook
# reopened without its kernel ("Error displaying widget" is hidden), after the kernel
# restarted or stopped (ipywidgets marks the view .jupyter-widgets-disconnected; the box's
# Lifeline marks it .lk-stale). It is plain CSS, so it works wherever JupyterLab draws the
# page, JupyterLite too; an untrusted notebook drops the style and shows the twin anyway.
TWIN_CSS = (
    ".jp-OutputArea-child:has(.lk-twin):has(+ .jp-OutputArea-child"
    " .lk-twinned:not(.jupyter-widgets-disconnected):not(.lk-stale)) { display: none; }"
    " .jp-OutputArea-child:has(.lk-twin) + .jp-OutputArea-child:not(:has("
    ".lk-twinned:not(.jupyter-widgets-disconnected):not(.lk-stale))) { display: none; }"
    " .lk-twin .lk-twin-stale { display: none; }"
    " .jp-OutputArea-child:has(.lk-twin):has(+ .jp-OutputArea-child .lk-twinned)"
    " .lk-twin .lk-twin-stale { display: block; }"
)
STALE_NOTE = (
    "This cell's kernel restarted or stopped since it ran, so its widget no longer answers:"
    " run the cell again (Shift+Enter)."
)


def twin_html(headline: str, what: str, text: str = "") -> str:
    """Return what a page shows in place of a widget that is not live (see binding.Twinned).

    A calm box: the headline ("Run this cell to open the timeline explorer."), what the
    widget will let you do, and (optionally) its state as text, for a reader without a
    kernel. After a restart it also says why the widget stopped.
    """
    note = f"<div><i>{_esc(what)}</i></div>" if what else ""
    shown = (
        f'<pre style="margin:6px 0 0 0;white-space:pre-wrap;font-size:85%">{_esc(text)}</pre>'
        if text
        else ""
    )
    return (
        f'<div class="lk-twin" role="note" style="border:1px dashed {THEME["border"]};'
        f'border-radius:6px;padding:6px 10px;font-family:sans-serif;color:{THEME["text"]}">'
        f"<style>{TWIN_CSS}</style>"
        f'<div class="lk-twin-stale"><b>{_esc(STALE_NOTE)}</b></div>'
        f"<b>▶ {_esc(headline)}</b>{note}{shown}</div>"
    )


class Collapsed:
    """An output that stays folded until the learner opens it: a "Pause and think" answer.

    JupyterLab shows a <details> box with `summary` on it; a page without HTML (nbval's
    text, a PDF) shows `summary` and then the text.
    """

    def __init__(self, summary: str, text: str) -> None:
        self.summary, self.text = summary, text

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, str]:
        return {
            "text/html": f"<details class='lk-collapsed'><summary>{_esc(self.summary)}</summary>"
            f"<pre style='white-space:pre-wrap'>{_esc(self.text)}</pre></details>",
            "text/plain": f"{self.summary}\n{self.text}",
        }


def event_text(event: sse.Event) -> str:
    """Return an Event as one short line: Event(event='message', data='...', id='1')."""
    parts = [f"event={event.event!r}", f"data={event.data!r}"]
    if event.id:
        parts.append(f"id={event.id!r}")
    if event.retry is not None:
        parts.append(f"retry={event.retry}")
    return "Event(" + ", ".join(parts) + ")"
