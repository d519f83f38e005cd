"""What each static figure shows, as plain data: drawn by matplotlib or as SVG, told in words.

One description per figure (its series, axes, labels and numbers), made by the functions
below from a lesson's data. Three things are made from that one description:

- lessonkit.lab.plots draws it with matplotlib (``plots.draw``), the full edition's PNG;
- lessonkit.lab.svg draws it as inline SVG (``svg.figure_svg``), where the kernel has no
  matplotlib (the zero-install edition's browser kernel, offline);
- its ``text`` is the figure in words, the text alternative of either drawing.

So the two drawings cannot disagree about what is plotted, and the words state the numbers
the drawings show. Nothing here imports matplotlib, a widget or a lesson module.

Colours are named by role ("accent", "alarm", ...): matplotlib maps a role to the
Okabe-Ito palette (``plots.ROLE_COLOURS``), the SVG to JupyterLab's theme variables
(``views.THEME``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

# A reader's verdict on one cut, by colour role: right, wrong text, an exception.
VERDICT_ROLES = {"ok": "good", "wrong": "warm", "error": "alarm"}
VERDICT_LABELS = {"ok": "right text and flag", "wrong": "wrong text", "error": "exception"}


@dataclass(frozen=True)
class Line:
    """One series of a step chart: (x, y) points joined as a staircase (y holds until the next x)."""

    label: str
    role: str  # colour role
    points: tuple[tuple[float, float], ...]
    style: Literal["solid", "dashed", "wide"] = "solid"  # "wide": a broad pale line beneath
    dots: bool = False  # a dot at every point but the first (each arrival)


@dataclass(frozen=True)
class Rule:
    """A vertical line across a chart at x (a marked moment), with its own legend entry."""

    x: float
    label: str
    role: str
    y_dot: float | None = None  # a dot on the line at this height


@dataclass(frozen=True)
class StepChart:
    """Staircases against one x axis: text on screen, bytes received, characters shown."""

    title: str
    x_label: str
    y_label: str
    x_max: float
    y_max: float
    lines: tuple[Line, ...]
    text: str
    rules: tuple[Rule, ...] = ()
    integer_y: bool = False


@dataclass(frozen=True)
class Row:
    """One response on a row chart: its writes, its silences, and where a proxy cut it."""

    label: str
    data_s: tuple[float, ...]  # when data was written (s)
    beats_s: tuple[float, ...]  # when a heartbeat was written (s)
    short: tuple[tuple[float, float], ...]  # silences within the timeout, (from_s, to_s)
    long: tuple[tuple[float, float], ...]  # silences longer than the timeout
    cut_s: float | None  # when the proxy closes the connection, if it does


@dataclass(frozen=True)
class RowChart:
    """One row per response along a time axis (s), and the proxy's idle timeout."""

    x_label: str
    x_max: float
    timeout_s: float
    rows: tuple[Row, ...]
    text: str


@dataclass(frozen=True)
class Strip:
    """One panel of a strip chart: for each reader, a verdict per column (a cut, a size)."""

    title: str
    x_label: str
    columns: tuple[int, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (reader, verdict per column)


@dataclass(frozen=True)
class StripChart:
    """Panels of verdict strips, coloured by VERDICT_ROLES."""

    strips: tuple[Strip, ...]
    text: str


Figure = StepChart | RowChart | StripChart


def _ms(value: float) -> str:
    return f"{value:,.0f} ms"


# ---------------------------------------------------------------------------------------------
# Lesson 01: measured vs model, idle silences


def measured_vs_model(
    streamed_ms: Sequence[float], blocking_ms: float, model_ms: Sequence[float], *, title: str = ""
) -> StepChart:
    """Return text pieces on screen against time: measured streaming and blocking vs the formula.

    streamed_ms: when each streamed piece arrived; blocking_ms: when the blocking body
    arrived; model_ms: when the formula says each token is visible.
    """
    n = max(len(streamed_ms), len(model_ms))
    lines = []
    if model_ms:
        lines.append(Line("formula: prefill + (i+1) x per_token", "muted",
                          _staircase(model_ms), "wide"))  # fmt: skip
    if streamed_ms:
        lines.append(Line("measured: streaming", "accent", _staircase(streamed_ms)))
    lines.append(Line("measured: blocking", "alarm", ((0, 0), (blocking_ms, n)), "dashed"))
    parts = []
    if streamed_ms:
        parts.append(f"measured streaming: {len(streamed_ms)} pieces from"
                     f" {streamed_ms[0]:,.0f} to {_ms(streamed_ms[-1])}")  # fmt: skip
    if model_ms:
        parts.append(f"the formula: from {model_ms[0]:,.0f} to {_ms(model_ms[-1])}")
    parts.append(f"measured blocking: everything at {_ms(blocking_ms)}")
    text = "Text pieces on screen against time since the request: " + "; ".join(parts) + "."
    return StepChart(
        title=title,
        x_label="time since the request was sent (ms)",
        y_label="text pieces on screen",
        x_max=max([blocking_ms, *streamed_ms, *model_ms]) * 1.05,
        y_max=n * 1.08 + 0.5,
        lines=tuple(lines),
        text=text,
        integer_y=True,
    )


def _staircase(times_ms: Sequence[float]) -> tuple[tuple[float, float], ...]:
    """Return (0, 0) then (t_i, i + 1): one more piece on screen at each time."""
    return ((0.0, 0.0), *((float(t), float(i + 1)) for i, t in enumerate(times_ms)))


def idle_silences(reports: Mapping[str, Any]) -> RowChart:
    """Return one row per response: its writes, and every silence longer than the proxy allows.

    `reports` maps a label to a lessonkit.lab.lesson01.IdleReport (all with the same timeout).
    """
    timeout_ms = next(iter(reports.values())).idle_timeout_ms
    rows, parts = [], []
    for label, r in reports.items():
        short, long, last = [], [], 0.0
        for at_ms in r.write_ms:
            (long if at_ms - last > r.idle_timeout_ms else short).append(
                (last / 1000, at_ms / 1000)
            )
            last = at_ms
        pairs = list(zip(r.write_ms, r.is_heartbeat, strict=True))
        cut_s = r.cut_at_ms / 1000 if r.cut_at_ms is not None else None
        rows.append(Row(
            label,
            data_s=tuple(t / 1000 for t, beat in pairs if not beat),
            beats_s=tuple(t / 1000 for t, beat in pairs if beat),
            short=tuple(short),
            long=tuple(long),
            cut_s=cut_s,
        ))  # fmt: skip
        verdict = f"cut by the proxy at {cut_s:,.0f} s" if cut_s is not None else "not cut"
        beats = f", {r.heartbeats} heartbeats" if r.heartbeats else ""
        parts.append(
            f"{label}: longest silence {r.longest_silence_ms / 1000:,.1f} s{beats}, {verdict}"
        )
    timeout_s = timeout_ms / 1000
    end_s = max((r.write_ms[-1] if r.write_ms else 0) for r in reports.values()) / 1000
    return RowChart(
        x_label=f"time since the request (s); the proxy's idle timeout is {timeout_s:g} s",
        x_max=end_s * 1.03,
        timeout_s=timeout_s,
        rows=tuple(rows),
        text=f"One row per response, its writes and its silences, against a proxy's"
        f" {timeout_s:g} s idle timeout. " + "; ".join(parts) + ".",
    )


# ---------------------------------------------------------------------------------------------
# Lessons 03-05: every-cut strips, the drop staircase, arrival times


def _counts(verdicts: Sequence[str]) -> str:
    total = len(verdicts)
    parts = [f"right at {verdicts.count('ok')} of {total}"]
    parts += [f"{kind} at {verdicts.count(kind)}" for kind in ("wrong", "error")
              if verdicts.count(kind)]  # fmt: skip
    return ", ".join(parts)


def cut_verdicts(
    cut_rows: Mapping[str, Sequence[str]],
    size_rows: Mapping[str, Sequence[str]],
    sizes: Sequence[int],
) -> StripChart:
    """Return two strip panels: each reader's verdict at every cut position and chunk size."""
    n_positions = len(next(iter(cut_rows.values())))
    strips = (
        Strip("One cut at every position", "cut position (bytes): [wire[:i], wire[i:]]",
              tuple(range(n_positions)), tuple((n, tuple(v)) for n, v in cut_rows.items())),
        Strip("Every chunk size", "chunk size (bytes): network.cut(wire, size)",
              tuple(sizes), tuple((n, tuple(v)) for n, v in size_rows.items())),
    )  # fmt: skip
    readers = "; ".join(
        f"{name}: {_counts(cut_rows[name])} cut positions, {_counts(size_rows[name])} chunk sizes"
        for name in cut_rows
    )
    text = (
        f"Strip chart of {len(cut_rows)} readers, each cut at every position"
        f" ({n_positions} of them) and at every chunk size from {min(sizes)} to"
        f" {max(sizes)} bytes (wrong: wrong text; error: an exception). " + readers + "."
    )
    return StripChart(strips, text)


def drop_staircase(
    lengths: Sequence[int], *, mark_bytes: int | None = None, event_ends: Sequence[int] = ()
) -> StepChart:
    """Return the characters on screen against the byte after which the connection drops."""
    n = max(0, len(lengths) - 1)
    points = [(0.0, float(lengths[0] if lengths else 0))]
    points += [(float(i), float(lengths[i])) for i in range(1, len(lengths))
               if lengths[i] != lengths[i - 1]]  # fmt: skip
    points.append((float(n), float(lengths[-1] if lengths else 0)))
    rules = tuple(Rule(float(end), "", "muted") for end in event_ends)
    steps = [int(x) for x, _ in points[1:-1]]
    text = (
        f"Staircase of the characters on screen for a drop after 0 to {n} bytes: the text"
        f" grows only at bytes {', '.join(map(str, steps)) or 'none'} (where an event ends),"
        f" up to {max(lengths, default=0)} characters."
    )
    if mark_bytes is not None:
        mark = min(max(0, mark_bytes), n)
        shown = lengths[mark] if lengths else 0
        rules += (Rule(float(mark), f"drop after {mark} bytes", "alarm", float(shown)),)
        text += f" A drop after {mark} bytes leaves {shown} characters on screen."
    return StepChart(
        title="Only whole events reach the screen: a staircase",
        x_label="connection drops after this many bytes",
        y_label="characters on screen",
        x_max=float(n),
        y_max=max(lengths, default=0) * 1.1 + 1,
        lines=(Line("text on screen", "accent", tuple(points)),),
        rules=rules,
        text=text,
    )


ARRIVAL_ROLES = ("accent", "alarm", "good", "warm")


def arrival_curves(
    series: Mapping[str, Sequence[tuple[float, int]]], *, title: str, x_max_ms: float | None = None
) -> StepChart:
    """Return bytes received against time (ms) for each named series of (at_ms, n_bytes) arrivals."""
    lines, parts = [], []
    for (name, arrivals), role in zip(series.items(), ARRIVAL_ROLES, strict=False):
        points, total = [(0.0, 0.0)], 0
        for at_ms, n_bytes in arrivals:
            total += n_bytes
            points.append((float(at_ms), float(total)))
        lines.append(Line(name, role, tuple(points), dots=True))
        if not arrivals:
            parts.append(f"{name}: nothing arrived")
            continue
        first, last = arrivals[0][0], arrivals[-1][0]
        when = f"at {_ms(first)}" if len(arrivals) == 1 else f"from {first:,.0f} to {_ms(last)}"
        parts.append(f"{name}: {total:,} bytes in {len(arrivals)} arrivals {when}")
    x_max = x_max_ms if x_max_ms is not None else max(
        (x for line in lines for x, _ in line.points), default=1.0) * 1.05  # fmt: skip
    y_max = max((y for line in lines for _, y in line.points), default=1.0) * 1.08 + 1
    return StepChart(
        title=title,
        x_label="time since the request (ms)",
        y_label="bytes received",
        x_max=x_max,
        y_max=y_max,
        lines=tuple(lines),
        text=f"{title}. Bytes received against time since the request: " + "; ".join(parts) + ".",
    )
