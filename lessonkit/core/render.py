"""Render streamed markdown without flicker: a tiny markdown model, naive and stable.

Pure functions, no widgets and no HTML library. The markdown understood here is
deliberately small: fenced code blocks (a line starting with three backticks),
inline `code`, **strong** and *em*. A rendering is a list of ``Span(style, text)``.

A naive renderer re-renders the whole text after every token. While a construct is
still open (``**Mon`` before its closing ``**``), it shows the markers as literal
characters; when the closer arrives, the characters already on screen change style
and the markers vanish: the screen flickers.

The stable renderer holds back the unfinished tail: from the first unclosed opener
(or a marker that might still grow, like a trailing ``*``) to the end. An open code
fence whose first line is complete is shown as a code block straight away (its
content is code whatever comes next), minus a last line that might be the closing
fence. What it shows is always a prefix of what it will show later:
``is_prefix(flatten(stable(a)), flatten(stable(a + b)))`` holds for these rules.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "FLICKER_ANSWER",
    "FlickerFrame",
    "Span",
    "describe_rewrites",
    "flatten",
    "flicker_frames",
    "naive_render",
    "split_tokens",
    "stable_render",
    "to_html",
    "to_text",
]

FENCE = "```"
FLICKER_ANSWER = (
    "Your order ships on **Monday**. Track it with:\n"
    "```\ntrack --order 4217\n```\n"
    "Delivery takes *two to three* days; the `status` page shows each step."
)


@dataclass(frozen=True)
class Span:
    """A run of characters in one style: "text", "strong", "em", "code" or "codeblock"."""

    style: str
    text: str


def _at_line_start(md: str, i: int) -> bool:
    return i == 0 or md[i - 1] == "\n"


def _scan(md: str) -> tuple[list[Span], int | None, int | None]:
    """Return (spans of the closed constructs and literals, index to hold back from, open fence).

    The spans are the naive rendering: an unclosed opener is a literal character.
    The hold index is where the first unclosed or still-ambiguous construct starts
    (None if everything is settled); the open-fence index is the start of a code
    fence whose first line is complete but whose closing line has not arrived.
    """
    spans: list[Span] = []
    literal: list[str] = []
    hold: int | None = None
    open_fence: int | None = None

    def emit(style: str, text: str) -> None:
        if literal:
            spans.append(Span("text", "".join(literal)))
            literal.clear()
        spans.append(Span(style, text))

    def held(i: int) -> None:
        nonlocal hold
        if hold is None:
            hold = i

    i, n = 0, len(md)
    while i < n:
        if _at_line_start(md, i) and FENCE.startswith(md[i:]):
            held(i)  # "`" or "``" at the very end of a line start: maybe a fence
        if _at_line_start(md, i) and md.startswith(FENCE, i):
            newline = md.find("\n", i)
            close = -1 if newline == -1 else md.find("\n" + FENCE, newline)
            if newline == -1:
                held(i)  # the opening line (and its language tag) is not complete yet
            elif close == -1:
                held(i)
                if open_fence is None:
                    open_fence = i
            if newline == -1 or close == -1:
                literal.append(FENCE)  # the naive view: an unclosed fence is just backticks
                i += len(FENCE)
                continue
            emit("codeblock", md[newline + 1 : close])
            i = close + 1 + len(FENCE)
            continue
        char = md[i]
        marker = "**" if md.startswith("**", i) else char
        if char == "`" or char == "*":
            after = i + len(marker)
            if after >= n:
                held(i)  # a trailing marker: the next token decides what it is
            elif char == "*" and md[after].isspace():
                pass  # "2 * 3": a star before a space opens nothing
            else:
                close = md.find(marker, after)
                if close == -1:
                    held(i)
                else:
                    style = {"`": "code", "**": "strong", "*": "em"}[marker]
                    emit(style, md[after:close])
                    i = close + len(marker)
                    continue
            literal.append(marker)
            i += len(marker)
            continue
        literal.append(char)
        i += 1
    if literal:
        spans.append(Span("text", "".join(literal)))
    return spans, hold, open_fence


def naive_render(md: str) -> list[Span]:
    """Return the rendering of `md` as it stands: unclosed markers show as literal characters."""
    return _merge(_scan(md)[0])


def stable_render(md: str, *, final: bool = False) -> list[Span]:
    """Return a rendering of `md` that only ever grows: the unsettled tail is held back.

    With final=True (the stream has ended) everything is rendered: open inline markers as
    literal characters, an open code fence as a code block running to the end.
    """
    _, hold, open_fence = _scan(md)
    if final:
        if open_fence is None:
            return naive_render(md)
        hold = open_fence  # a fence never closed runs to the end of the text (CommonMark)
    if hold is None:
        return naive_render(md)
    spans = _scan(md[:hold])[0]
    if open_fence == hold:
        content = md[md.index("\n", open_fence) + 1 :]
        last_newline = content.rfind("\n")
        last_line = content[last_newline + 1 :]
        if not final and FENCE.startswith(last_line):  # may become the closing fence: hold it
            content = content[: max(last_newline, 0)]
        if content:
            spans.append(Span("codeblock", content))
    return _merge(spans)


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in spans:
        if not span.text and span.style == "text":
            continue
        if merged and merged[-1].style == span.style == "text":
            merged[-1] = Span("text", merged[-1].text + span.text)
        else:
            merged.append(span)
    return merged


def flatten(spans: Iterable[Span]) -> list[tuple[str, str]]:
    """Return the screen as (character, style) pairs, the unit in which flicker is counted."""
    return [(char, span.style) for span in spans for char in span.text]


def to_text(spans: Iterable[Span]) -> str:
    """Return a plain-text view: <b>strong</b>, <i>em</i>, <code>code</code>, [code block]."""
    parts = []
    for span in spans:
        if span.style == "text":
            parts.append(span.text)
        elif span.style == "strong":
            parts.append(f"<b>{span.text}</b>")
        elif span.style == "em":
            parts.append(f"<i>{span.text}</i>")
        elif span.style == "code":
            parts.append(f"<code>{span.text}</code>")
        else:
            parts.append(f"[code block: {span.text!r}]")
    return "".join(parts)


def to_html(spans: Iterable[Span]) -> str:
    """Return HTML for the spans (text escaped); wrap it in an element with white-space: pre-wrap."""
    tags = {"strong": "strong", "em": "em", "code": "code"}
    parts = []
    for span in spans:
        text = html.escape(span.text)
        if span.style == "text":
            parts.append(text)
        elif span.style == "codeblock":
            parts.append(f"<pre><code>{text}</code></pre>")
        else:
            parts.append(f"<{tags[span.style]}>{text}</{tags[span.style]}>")
    return "".join(parts)


def split_tokens(text: str, max_chars: int = 4) -> list[str]:
    """Return `text` cut into token-like pieces of at most `max_chars` characters.

    Whitespace sticks to the front of the next piece, as in GPT-style tokens;
    joining the pieces gives the text back.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars!r}")
    return re.findall(rf"\s*[^\s]{{1,{max_chars}}}|\s+", text)


@dataclass(frozen=True)
class FlickerFrame:
    """The screen after `step` tokens, rendered naively and stably, and whether each rewrote."""

    step: int
    text: str
    naive: list[Span]
    stable: list[Span]
    naive_rewrote: bool
    stable_rewrote: bool


def flicker_frames(tokens: Iterable[str]) -> list[FlickerFrame]:
    """Return one frame per token (the last one final), comparing naive and stable rendering."""
    tokens = list(tokens)
    frames: list[FlickerFrame] = []
    text = ""
    previous_naive: list[tuple[str, str]] = []
    previous_stable: list[tuple[str, str]] = []
    for step, token in enumerate(tokens, start=1):
        text += token
        naive = naive_render(text)
        stable = stable_render(text, final=step == len(tokens))
        flat_naive, flat_stable = flatten(naive), flatten(stable)
        frames.append(
            FlickerFrame(
                step,
                text,
                naive,
                stable,
                flat_naive[: len(previous_naive)] != previous_naive,
                flat_stable[: len(previous_stable)] != previous_stable,
            )
        )
        previous_naive, previous_stable = flat_naive, flat_stable
    return frames


def describe_rewrites(frames: list[FlickerFrame], context_chars: int = 14) -> list[str]:
    """Return a short report of every token at which the naive screen rewrote what it showed.

    For each such token: the token, then both screens (naive and stable) just before
    it and just after it, from a little before the first character that changed to the
    end (to_text's notation: <b>bold</b>, <i>italic</i>, <code>code</code>, [code block],
    ⏎ for a newline). The last line counts the rewrites of each renderer.
    """

    def shown(spans: list[Span]) -> str:
        return to_text(spans).replace("\n", "⏎")

    lines = []
    for frame in frames:
        if not frame.naive_rewrote:
            continue
        before = frames[frame.step - 2]
        token = frame.text[len(before.text) :]
        naive_before, naive_after = shown(before.naive), shown(frame.naive)
        same = 0
        while same < min(len(naive_before), len(naive_after)) and (
            naive_before[same] == naive_after[same]
        ):
            same += 1
        start = max(0, same - context_chars)
        space = naive_before.rfind(" ", 0, start + 1)
        start = space + 1 if start and space >= 0 else start  # begin at a word

        def clip(text: str, start: int = start) -> str:
            return ("…" if start else "") + text[start:]

        lines.append(
            f"token {frame.step} {token!r}: the naive screen changes what it already showed"
        )
        lines.append(f"  naive  before: {clip(naive_before)}")
        lines.append(f"         after : {clip(naive_after)}")
        lines.append(f"  stable before: {clip(shown(before.stable))}")
        lines.append(f"         after : {clip(shown(frame.stable))}")
    naive = sum(f.naive_rewrote for f in frames)
    stable = sum(f.stable_rewrote for f in frames)
    lines.append(f"screen rewrites over {len(frames)} tokens: naive {naive}, stable {stable}")
    return lines
