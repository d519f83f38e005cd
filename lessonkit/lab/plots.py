"""Matplotlib figures for the notebooks: fixed sizes, Okabe-Ito colours, labelled axes.

Each ``plot_*`` function returns a matplotlib Figure (for tests, and for a learner who
wants to change one); each ``*_text`` function says in words what that figure shows,
numbers included; ``picture(figure, text)`` turns the two into what a notebook shows:
the PNG as an <img> whose alt text is the description (a screen reader reads it; PNG
pixels alone have no words), the same text as text/plain for nbval and PDFs. The
explorers draw live SVG instead (lessonkit.lab.svg), which is fast enough to follow a
slider.

matplotlib is imported inside the functions, never when this module is imported: it
adds some 35-45 MiB to a kernel, and a lesson that draws no figure should not pay it
(the kernel of a learner on a shared hub stays small). No pyplot: a Figure is drawn to
PNG by its own Agg canvas and then dropped, so no figure stays alive in the kernel.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lessonkit.lab.views import OKABE_ITO, VERDICT_COLOURS

if TYPE_CHECKING:  # types only: matplotlib loads when a figure is drawn
    from matplotlib.figure import Figure

C = OKABE_ITO


def _figure(**options: Any) -> Figure:
    from matplotlib.figure import Figure

    return Figure(**options)


@dataclass(frozen=True)
class Picture:
    """A static figure as a notebook shows it: PNG pixels and the same figure in words.

    JupyterLab shows an <img> whose alt text is `text`; text/plain is `text` too, and
    image/png the pixels (nbval does not compare pixels, and its sanitize file leaves
    the <img>'s data out, so a new matplotlib that moves one pixel changes nothing).
    """

    png: bytes
    text: str

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, str]:
        data = base64.b64encode(self.png).decode("ascii")
        alt = html.escape(self.text, quote=True)
        return {
            "text/html": f'<img class="lk-figure" alt="{alt}" src="data:image/png;base64,{data}">',
            "image/png": data,
            "text/plain": self.text,
        }


def picture(figure: Figure, text: str, *, dpi: int = 100) -> Picture:
    """Return `figure` drawn as PNG with `text` as its text alternative (the Figure is not kept)."""
    return Picture(png(figure, dpi=dpi), text)


# ---------------------------------------------------------------------------
# Lessons 03-05: every-cut strips, the drop staircase, arrival times
# ---------------------------------------------------------------------------


def png(figure: Figure, *, dpi: int = 80) -> bytes:
    """Return a Figure as PNG bytes (no pyplot, no inline backend needed), for an image widget."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _verdict_strip(ax, rows, xs, xlabel: str) -> None:
    from matplotlib.colors import ListedColormap

    names = list(rows)
    codes = {"ok": 0, "wrong": 1, "error": 2}
    grid = [[codes[v] for v in rows[name]] for name in names]
    cmap = ListedColormap(
        [VERDICT_COLOURS["ok"], VERDICT_COLOURS["wrong"], VERDICT_COLOURS["error"]]
    )
    step = xs[1] - xs[0] if len(xs) > 1 else 1
    extent = (xs[0] - step / 2, xs[-1] + step / 2, len(names) - 0.5, -0.5)
    ax.imshow(
        grid, aspect="auto", cmap=cmap, vmin=0, vmax=2, interpolation="nearest", extent=extent
    )
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel(xlabel)


def plot_cut_verdicts(
    cut_rows: Mapping[str, Sequence[str]],
    size_rows: Mapping[str, Sequence[str]],
    sizes: Sequence[int],
) -> Figure:
    """Return a two-panel strip chart: reader verdicts for every cut position and every chunk size.

    Each row is a reader; each column a cut. Green = right text and flag, orange = wrong
    text, vermillion = the reader raised an exception.
    """
    from matplotlib.patches import Patch

    fig = _figure(figsize=(9, 4.6), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    n_positions = len(next(iter(cut_rows.values())))
    _verdict_strip(
        top, cut_rows, list(range(n_positions)), "cut position (bytes): [wire[:i], wire[i:]]"
    )
    top.set_title("One cut at every position")
    _verdict_strip(bottom, size_rows, list(sizes), "chunk size (bytes): network.cut(wire, size)")
    bottom.set_title("Every chunk size")
    handles = [Patch(color=c, label=label) for label, c in VERDICT_COLOURS.items()]
    fig.legend(handles=handles, loc="outside right upper", title="result")
    return fig


def plot_drop_staircase(
    lengths: Sequence[int], *, mark_bytes: int | None = None, event_ends: Sequence[int] = ()
) -> Figure:
    """Return the characters on screen against the byte after which the connection drops."""
    fig = _figure(figsize=(8, 3.4), layout="constrained")
    ax = fig.subplots()
    ax.step(range(len(lengths)), lengths, where="post", color=C["blue"], label="text on screen")
    for end in event_ends:
        ax.axvline(end, color=C["grey"], linewidth=0.6, linestyle=":")
    if mark_bytes is not None:
        ax.axvline(
            mark_bytes, color=C["vermillion"], linewidth=1.5, label=f"drop after {mark_bytes} bytes"
        )
        ax.plot(
            [mark_bytes], [lengths[min(mark_bytes, len(lengths) - 1)]], "o", color=C["vermillion"]
        )
    ax.set_xlabel("connection drops after this many bytes")
    ax.set_ylabel("characters on screen")
    ax.set_xlim(0, len(lengths) - 1)
    ax.set_ylim(0, max(lengths) * 1.1 + 1)
    ax.set_title("Only whole events reach the screen: a staircase")
    ax.legend(loc="upper left")
    return fig


def plot_arrival_curves(
    series: Mapping[str, Sequence[tuple[float, int]]], *, title: str, x_max_ms: float | None = None
) -> Figure:
    """Return bytes received against time (ms) for each named series of (at_ms, n_bytes) arrivals."""
    colours = [C["blue"], C["vermillion"], C["green"], C["purple"]]
    fig = _figure(figsize=(8, 3.4), layout="constrained")
    ax = fig.subplots()
    for (name, arrivals), colour in zip(series.items(), colours, strict=False):
        times = [0.0] + [at_ms for at_ms, _ in arrivals]
        totals = [0]
        for _, n_bytes in arrivals:
            totals.append(totals[-1] + n_bytes)
        ax.step(times, totals, where="post", color=colour, label=name)
        ax.plot(times[1:], totals[1:], ".", color=colour)
    ax.set_xlabel("time since the request (ms)")
    ax.set_ylabel("bytes received")
    if x_max_ms is not None:
        ax.set_xlim(0, x_max_ms)
    ax.set_title(title)
    ax.legend(loc="upper left")
    return fig


# ---------------------------------------------------------------------------
# Lessons 01-02: the response timeline, stopping early, measured vs model, idle timeouts
# ---------------------------------------------------------------------------


T_MARKER_GID = "timeline-now"  # the gid of the "now (t)" line in plot_timeline


def plot_timeline(view) -> Figure:
    """Return the blocking and streaming timelines of one answer, TTFT and total marked.

    `view` is a lessonkit.lab.lesson01.TimelineView: its t_ms is drawn as a moving line.
    """
    timings = view.timings
    fig = _figure(figsize=(8, 3.0), dpi=100, layout="constrained")
    ax = fig.subplots()
    latency, prefill = view.latency_ms, view.prefill_ms
    for row in (0, 1):
        if latency:
            ax.barh(row, latency, left=0, height=0.5, color=C["grey"], label=None)
        ax.barh(row, prefill, left=latency, height=0.5, color=C["orange"])
    # streaming (row 1): every token visible at its own time
    ax.vlines(
        view.arrival_ms, 0.75, 1.25, color=C["blue"], linewidth=1 if view.n_tokens < 60 else 0.3
    )
    # blocking (row 0): a spinner until everything arrives at once
    ax.barh(0, timings.total_ms - latency - prefill, left=latency + prefill, height=0.5,
            color=C["sky"], hatch="//", edgecolor="white")  # fmt: skip
    # The dashed lines stop short of their labels (TTFT above, total below): no line
    # crosses a label, however close the two times are.
    ax.vlines(timings.streaming_first_ms, -0.35, 1.32, color=C["blue"], linestyle="--",
              linewidth=1.2)  # fmt: skip
    ax.vlines(timings.total_ms, -0.35, 1.32, color=C["vermillion"], linestyle="--",
              linewidth=1.2)  # fmt: skip
    ax.axvline(view.t_ms, color=C["black"], linewidth=1.5, gid=T_MARKER_GID)
    ax.text(timings.streaming_first_ms, 1.5, f"TTFT {timings.streaming_first_ms:,.0f} ms",
            color=C["blue"], va="center", ha="left", fontsize=9)  # fmt: skip
    ax.text(timings.total_ms, -0.58, f"total {timings.total_ms:,.0f} ms",
            color=C["vermillion"], va="center", ha="right", fontsize=9)  # fmt: skip
    ax.set_yticks([0, 1], ["blocking", "streaming"])
    ax.set_ylim(-0.75, 1.7)
    ax.set_xlim(0, view.t_max_ms)
    ax.set_xlabel(f"time since the request was sent (ms); now t = {view.t_ms:,.0f} ms")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Patch(color=C["orange"], label="prefill (reading the prompt)"),
        Patch(facecolor=C["sky"], hatch="//", edgecolor="white", label="blocking: spinner"),
        Line2D([], [], color=C["blue"], label="streaming: a token appears"),
        Line2D([], [], color=C["black"], label="now (t)"),
    ]
    if latency:
        handles.insert(0, Patch(color=C["grey"], label="network latency"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    return fig


def plot_cancel(view) -> Figure:
    """Return one bar of the answer's tokens: generated before the stop vs never generated.

    `view` is a lessonkit.lab.lesson01.CancelView.
    """
    fig = _figure(figsize=(8, 1.9), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.barh(0, view.tokens_generated, color=C["blue"], label="generated (paid for)")
    ax.barh(0, view.tokens_saved, left=view.tokens_generated, color=C["sky"], hatch="..",
            edgecolor="white", label="never generated (saved)")  # fmt: skip
    ax.set_xlim(0, view.n_tokens)
    ax.set_yticks([])
    ax.set_xlabel(f"output tokens of the answer (the user stops at {view.cancel_at_ms:,.0f} ms)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.55), ncol=2, frameon=False, fontsize=8)
    return fig


def plot_measured_vs_model(
    streamed_ms: Sequence[float],
    blocking_ms: float,
    model_ms: Sequence[float],
    *,
    title: str = "",
) -> Figure:
    """Return text pieces on screen against time: measured streaming and blocking vs the model.

    streamed_ms: when each streamed piece arrived; blocking_ms: when the blocking
    body arrived; model_ms: when the formula says each token is visible.
    """
    fig = _figure(figsize=(8, 3.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    n = max(len(streamed_ms), len(model_ms))
    if model_ms:
        ax.step([0, *model_ms], range(len(model_ms) + 1), where="post", color=C["grey"],
                linewidth=3, alpha=0.6, label="formula: prefill + (i+1) x per_token")  # fmt: skip
    if streamed_ms:
        ax.step([0, *streamed_ms], range(len(streamed_ms) + 1), where="post", color=C["blue"],
                label="measured: streaming")  # fmt: skip
    ax.step([0, blocking_ms], [0, n], where="post", color=C["vermillion"], linestyle="--",
            label="measured: blocking")  # fmt: skip
    ax.set_xlabel("time since the request was sent (ms)")
    ax.set_ylabel("text pieces on screen")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylim(0, n * 1.08 + 0.5)
    ax.set_xlim(0, max([blocking_ms, *streamed_ms, *model_ms]) * 1.05)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return fig


def plot_idle_silences(reports: Mapping[str, object]) -> Figure:
    """Return one row per response: its writes, and every silence longer than the proxy allows.

    `reports` maps a label to a lessonkit.lab.lesson01.IdleReport (all with the same timeout).
    """
    labels = list(reports)
    fig = _figure(figsize=(8, 0.75 * len(labels) + 1.3), dpi=100, layout="constrained")
    ax = fig.subplots()
    from matplotlib.collections import LineCollection

    end_s = max((r.write_ms[-1] if r.write_ms else 0) for r in reports.values()) / 1000
    short, long = [], []  # one segment per silence: two collections, not one line per write
    for row, label in enumerate(labels):
        r = reports[label]
        y = len(labels) - 1 - row
        last = 0.0
        for at_ms in r.write_ms:
            (long if at_ms - last > r.idle_timeout_ms else short).append(
                [(last / 1000, y), (at_ms / 1000, y)]
            )
            last = at_ms
        data_s = [t / 1000 for t, beat in zip(r.write_ms, r.is_heartbeat, strict=True) if not beat]
        beat_s = [t / 1000 for t, beat in zip(r.write_ms, r.is_heartbeat, strict=True) if beat]
        ax.plot(data_s, [y] * len(data_s), "|", color=C["blue"], markersize=14)
        ax.plot(beat_s, [y] * len(beat_s), "o", color=C["green"], markersize=6)
        if r.cut_at_ms is not None:
            ax.plot([r.cut_at_ms / 1000], [y], "X", color=C["black"], markersize=11)
    ax.add_collection(LineCollection(short, colors=C["sky"], linewidths=2, capstyle="butt"))
    ax.add_collection(LineCollection(long, colors=C["vermillion"], linewidths=6, capstyle="butt"))
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=C["blue"], marker="|", linestyle="", markersize=12, label="data"),
        Line2D([], [], color=C["green"], marker="o", linestyle="", label=": ping heartbeat"),
        Line2D([], [], color=C["sky"], linewidth=2, label="short silence"),
        Line2D([], [], color=C["vermillion"], linewidth=6, label="silence > idle timeout"),
        Line2D([], [], color=C["black"], marker="X", linestyle="", label="proxy closes"),
    ]
    timeout_s = next(iter(reports.values())).idle_timeout_ms / 1000
    ax.set_yticks(range(len(labels)), list(reversed(labels)))
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_xlim(0, end_s * 1.03)
    ax.set_xlabel(f"time since the request (s); the proxy's idle timeout is {timeout_s:g} s")
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    return fig


# ---------------------------------------------------------------------------
# The same figures in words: each figure's text alternative, numbers included
# ---------------------------------------------------------------------------


def _counts(verdicts: Sequence[str]) -> str:
    total = len(verdicts)
    parts = [f"right at {verdicts.count('ok')} of {total}"]
    parts += [f"{kind} at {verdicts.count(kind)}" for kind in ("wrong", "error")
              if verdicts.count(kind)]  # fmt: skip
    return ", ".join(parts)


def cut_verdicts_text(
    cut_rows: Mapping[str, Sequence[str]],
    size_rows: Mapping[str, Sequence[str]],
    sizes: Sequence[int],
) -> str:
    """Return plot_cut_verdicts in words: each reader's right, wrong and error counts."""
    readers = "; ".join(
        f"{name}: {_counts(cut_rows[name])} cut positions, {_counts(size_rows[name])} chunk sizes"
        for name in cut_rows
    )
    return (
        f"Strip chart of {len(cut_rows)} readers, each cut at every position"
        f" ({len(next(iter(cut_rows.values())))} of them) and at every chunk size"
        f" from {min(sizes)} to {max(sizes)} bytes (wrong: wrong text; error: an exception). "
        + readers
        + "."
    )


def arrival_curves_text(series: Mapping[str, Sequence[tuple[float, int]]], *, title: str) -> str:
    """Return plot_arrival_curves in words: for each series, its arrivals and when they came."""
    parts = []
    for name, arrivals in series.items():
        if not arrivals:
            parts.append(f"{name}: nothing arrived")
            continue
        total = sum(n for _, n in arrivals)
        first, last = arrivals[0][0], arrivals[-1][0]
        when = (
            f"at {first:,.0f} ms" if len(arrivals) == 1 else f"from {first:,.0f} to {last:,.0f} ms"
        )
        parts.append(f"{name}: {total:,} bytes in {len(arrivals)} arrivals {when}")
    return f"{title}. Bytes received against time since the request: " + "; ".join(parts) + "."


def measured_vs_model_text(
    streamed_ms: Sequence[float], blocking_ms: float, model_ms: Sequence[float]
) -> str:
    """Return plot_measured_vs_model in words: measured and modelled first and last pieces."""
    parts = []
    if streamed_ms:
        parts.append(
            f"measured streaming: {len(streamed_ms)} pieces from {streamed_ms[0]:,.0f} to"
            f" {streamed_ms[-1]:,.0f} ms"
        )
    if model_ms:
        parts.append(f"the formula: from {model_ms[0]:,.0f} to {model_ms[-1]:,.0f} ms")
    parts.append(f"measured blocking: everything at {blocking_ms:,.0f} ms")
    return "Text pieces on screen against time since the request: " + "; ".join(parts) + "."


def idle_silences_text(reports: Mapping[str, Any]) -> str:
    """Return plot_idle_silences in words: each response's longest silence and whether it is cut."""
    timeout_s = next(iter(reports.values())).idle_timeout_ms / 1000
    parts = []
    for label, r in reports.items():
        verdict = (
            f"cut by the proxy at {r.cut_at_ms / 1000:,.0f} s"
            if r.cut_at_ms is not None
            else "not cut"
        )
        beats = f", {r.heartbeats} heartbeats" if r.heartbeats else ""
        parts.append(
            f"{label}: longest silence {r.longest_silence_ms / 1000:,.1f} s{beats}, {verdict}"
        )
    return (
        f"One row per response, its writes and its silences, against a proxy's {timeout_s:g} s"
        " idle timeout. " + "; ".join(parts) + "."
    )
