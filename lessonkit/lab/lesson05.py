"""Lesson 05, streaming in the real world: checks that run only at the end, strict JSON.

    flicker_readouts                the flicker demo: the naive and the stable screen
    late_check, find_phone_number   a policy check that can only judge the whole answer
    json_prefix_parses              why a strict-JSON consumer cannot parse a prefix
    ws_frame_header_bytes           what a WebSocket frame costs beyond its payload

The flicker demo's markdown renderer is lessonkit.core.render.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lessonkit.core import render
from lessonkit.lab import views

_SCREEN_STYLE = (
    f"white-space: pre-wrap; border: 1px solid {views.THEME['border']}; padding: 4px;"
    " min-height: 6em"
)


def flicker_readouts(upto: int, *, frames: Sequence[render.FlickerFrame]) -> dict[str, Any]:
    """Return what the flicker demo shows after `upto` tokens, by name.

    Both screens as HTML (naive, stable), how often each renderer rewrote what it had
    already shown so far (count) and the frame as text (text). `frames` is
    render.flicker_frames(tokens), computed once by the demo.
    """
    upto = max(1, min(upto, len(frames)))
    so_far = frames[:upto]
    frame = so_far[-1]
    count = (
        f"after {frame.step} tokens: naive rewrote the screen"
        f" {sum(f.naive_rewrote for f in so_far)} times,"
        f" stable {sum(f.stable_rewrote for f in so_far)}"
    )
    return {
        "naive": views.Html(
            f'<b>naive</b><div style="{_SCREEN_STYLE}">{render.to_html(frame.naive)}</div>'
        ),
        "stable": views.Html(
            f'<b>stable</b><div style="{_SCREEN_STYLE}">{render.to_html(frame.stable)}</div>'
        ),
        "count": count,
        "text": f"naive : {render.to_text(frame.naive)}\nstable: {render.to_text(frame.stable)}\n"
        + count,
    }


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


def ws_frame_header_bytes(payload_bytes: int, *, masked: bool = False) -> int:
    """Return a WebSocket frame's header size for a payload (RFC 6455 §5.2).

    2 bytes for payloads up to 125 bytes, 4 up to 65,535, else 10; a client's frames
    are masked and carry 4 more bytes (the masking key, §5.3).
    """
    if payload_bytes < 0:
        raise ValueError(f"payload_bytes must be 0 or more, got {payload_bytes!r}")
    size = 2 if payload_bytes <= 125 else 4 if payload_bytes <= 0xFFFF else 10
    return size + (4 if masked else 0)
