"""The notebooks' static figures: drawn with matplotlib, or as SVG where there is none.

Each figure is first a description (lessonkit.lab.figures: its series, axes, labels,
numbers and its text alternative). ``show(description)`` is what a notebook cell ends
with: where matplotlib can be imported, the description drawn by matplotlib
(``draw``) as a PNG whose alt text is the description's words; where it cannot (the
zero-install edition's browser kernel, which has no matplotlib offline), the same
description drawn as inline SVG by lessonkit.lab.svg, in JupyterLab's theme colours,
with the same words as its <title> and aria-label. The notebook does not choose:

    plots.show(figures.arrival_curves(series, title="Simulated"))

Each ``plot_*`` function returns the matplotlib Figure of one description (for tests,
and for a learner who wants to change one); each ``*_text`` function its words. The
explorers draw live SVG (lessonkit.lab.svg), which is fast enough to follow a slider.

matplotlib is imported inside the functions, never when this module is imported, and
``show`` draws in a helper process: matplotlib and numpy, once imported, hold about 35 MiB
of a kernel until it stops (bench/README.md, "Kernel memory per lesson"), and a learner's
kernel lives for the whole lesson, beside the kernels of the other lessons and learners.
So ``show`` hands the description to a short-lived Python process (the kernel's own
interpreter and sys.path), which draws it with matplotlib and answers with the PNG bytes,
then exits; the kernel keeps only the picture. Where no process can be started (the
browser kernel), it draws in the kernel instead. No pyplot: a Figure is drawn to PNG by its
own Agg canvas and then dropped, so no figure stays alive in either process.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import io
import pickle
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from lessonkit.lab import figures, svg
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


@dataclass(frozen=True)
class SvgPicture:
    """A static figure drawn as inline SVG (theme colours, <title>), and the same figure in words.

    text/html is the <svg> itself, so JupyterLab's theme variables colour it (an SVG in
    an <img> could not read them); text/plain is `text`, as for a Picture.
    """

    svg: str
    text: str

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, str]:
        return {"text/html": f'<div class="lk-figure">{self.svg}</div>', "text/plain": self.text}


def has_matplotlib() -> bool:
    """Return True if matplotlib can be imported here (it is not imported to find out)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a finder that refuses it; a module set to None
        return False


def show(
    description: figures.Figure, *, engine: Literal["matplotlib", "svg"] | None = None
) -> Picture | SvgPicture:
    """Return a description as a notebook shows it: matplotlib's PNG, or SVG where there is none.

    engine=None chooses: matplotlib where it can be imported, else the course's SVG
    (the browser kernel of the zero-install edition, offline). Both carry the
    description's words as their text alternative.
    """
    if engine is None:
        engine = "matplotlib" if has_matplotlib() else "svg"
    if engine == "matplotlib":
        return Picture(drawn_png(description), description.text)
    if engine == "svg":
        return SvgPicture(svg.figure_svg(description), description.text)
    raise ValueError(f"engine must be 'matplotlib', 'svg' or None, got {engine!r}")


def picture(figure: Figure, text: str, *, dpi: int = 100) -> Picture:
    """Return `figure` drawn as PNG with `text` as its text alternative (the Figure is not kept)."""
    return Picture(png(figure, dpi=dpi), text)


def png(figure: Figure, *, dpi: int = 80) -> bytes:
    """Return a Figure as PNG bytes (no pyplot, no inline backend needed), for an image widget."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


# The helper process: the kernel's interpreter, given the kernel's sys.path (so it imports
# the same lessonkit and matplotlib), reads (description, dpi) pickled on stdin and writes
# the PNG on stdout. Only the kernel writes that pickle, for its own child.
_HELPER = (
    "import sys; sys.path[:] = sys.argv[1:]; from lessonkit.lab import plots; plots.serve_png()"
)
HELPER_TIMEOUT_S = 300  # far above the 1-3 s a figure takes, so a stuck helper cannot hang a cell


def drawn_png(description: figures.Figure, *, dpi: int = 100) -> bytes:
    """Return the PNG bytes of a description drawn by matplotlib in a helper process.

    The kernel never imports matplotlib for it (see the module docstring). What the helper
    writes on stderr (a matplotlib warning) is written on this process's stderr. Where no
    process can be started (the browser kernel; a hub that allows no more processes) the
    description is drawn here instead, with the same PNG as the result.
    """
    if sys.platform == "emscripten":  # Pyodide: no processes
        return png(draw(description), dpi=dpi)
    try:
        helper = subprocess.run(
            [sys.executable, "-c", _HELPER, *sys.path],
            input=pickle.dumps((description, dpi)),
            capture_output=True,
            timeout=HELPER_TIMEOUT_S,
        )
    except OSError:  # no process could be started
        return png(draw(description), dpi=dpi)
    if helper.stderr:
        sys.stderr.write(helper.stderr.decode("utf-8", "replace"))
    if helper.returncode != 0 or not helper.stdout.startswith(b"\x89PNG"):
        raise RuntimeError(f"the helper process drawing the figure exited {helper.returncode}")
    return helper.stdout


def serve_png() -> None:
    """Read a pickled (description, dpi) on stdin, write its PNG on stdout: the helper's work."""
    description, dpi = pickle.load(sys.stdin.buffer)
    sys.stdout.buffer.write(png(draw(description), dpi=dpi))


# ---------------------------------------------------------------------------
# Drawing a description (lessonkit.lab.figures) with matplotlib
# ---------------------------------------------------------------------------

# A colour role of lessonkit.lab.figures, in the Okabe-Ito palette.
ROLE_COLOURS = {
    "accent": C["blue"],
    "alarm": C["vermillion"],
    "muted": C["grey"],
    "good": C["green"],
    "warm": C["orange"],
    "text": C["black"],
}


def draw(description: figures.Figure) -> Figure:
    """Return a matplotlib Figure of a description from lessonkit.lab.figures."""
    if isinstance(description, figures.StepChart):
        return _draw_steps(description)
    if isinstance(description, figures.RowChart):
        return _draw_rows(description)
    if isinstance(description, figures.StripChart):
        return _draw_strips(description)
    raise TypeError(f"expected a description from lessonkit.lab.figures, got {description!r}")


def _draw_steps(chart: figures.StepChart) -> Figure:
    fig = _figure(figsize=(8, 3.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    for line in chart.lines:
        xs = [x for x, _ in line.points]
        ys = [y for _, y in line.points]
        colour = ROLE_COLOURS[line.role]
        style = {"solid": {}, "dashed": {"linestyle": "--"},
                 "wide": {"linewidth": 3, "alpha": 0.6}}[line.style]  # fmt: skip
        ax.step(xs, ys, where="post", color=colour, label=line.label, **style)
        if line.dots:
            ax.plot(xs[1:], ys[1:], ".", color=colour)
    for rule in chart.rules:
        colour = ROLE_COLOURS[rule.role]
        if rule.label:
            ax.axvline(rule.x, color=colour, linewidth=1.5, label=rule.label)
        else:
            ax.axvline(rule.x, color=colour, linewidth=0.6, linestyle=":")
        if rule.y_dot is not None:
            ax.plot([rule.x], [rule.y_dot], "o", color=colour)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label)
    if chart.integer_y:
        ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(0, chart.x_max)
    ax.set_ylim(0, chart.y_max)
    if chart.title:
        ax.set_title(chart.title, fontsize=10)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return fig


def _draw_rows(chart: figures.RowChart) -> Figure:
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    labels = [row.label for row in chart.rows]
    fig = _figure(figsize=(8, 0.75 * len(labels) + 1.3), dpi=100, layout="constrained")
    ax = fig.subplots()
    short, long = [], []  # one segment per silence: two collections, not one line per write
    for i, row in enumerate(chart.rows):
        y = len(labels) - 1 - i
        short += [[(x0, y), (x1, y)] for x0, x1 in row.short]
        long += [[(x0, y), (x1, y)] for x0, x1 in row.long]
        ax.plot(row.data_s, [y] * len(row.data_s), "|", color=C["blue"], markersize=14)
        ax.plot(row.beats_s, [y] * len(row.beats_s), "o", color=C["green"], markersize=6)
        if row.cut_s is not None:
            ax.plot([row.cut_s], [y], "X", color=C["black"], markersize=11)
    ax.add_collection(LineCollection(short, colors=C["sky"], linewidths=2, capstyle="butt"))
    ax.add_collection(LineCollection(long, colors=C["vermillion"], linewidths=6, capstyle="butt"))
    handles = [
        Line2D([], [], color=C["blue"], marker="|", linestyle="", markersize=12, label="data"),
        Line2D([], [], color=C["green"], marker="o", linestyle="", label=": ping heartbeat"),
        Line2D([], [], color=C["sky"], linewidth=2, label="short silence"),
        Line2D([], [], color=C["vermillion"], linewidth=6, label="silence > idle timeout"),
        Line2D([], [], color=C["black"], marker="X", linestyle="", label="proxy closes"),
    ]
    ax.set_yticks(range(len(labels)), list(reversed(labels)))
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_xlim(0, chart.x_max)
    ax.set_xlabel(chart.x_label)
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    return fig


def _draw_strips(chart: figures.StripChart) -> Figure:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    fig = _figure(figsize=(9, 2.3 * len(chart.strips)), layout="constrained")
    axes = fig.subplots(len(chart.strips), 1, squeeze=False)[:, 0]
    codes = {"ok": 0, "wrong": 1, "error": 2}
    cmap = ListedColormap(
        [VERDICT_COLOURS["ok"], VERDICT_COLOURS["wrong"], VERDICT_COLOURS["error"]]
    )
    for ax, strip in zip(axes, chart.strips, strict=True):
        xs = strip.columns
        step = xs[1] - xs[0] if len(xs) > 1 else 1
        extent = (xs[0] - step / 2, xs[-1] + step / 2, len(strip.rows) - 0.5, -0.5)
        grid = [[codes[v] for v in verdicts] for _, verdicts in strip.rows]
        ax.imshow(
            grid, aspect="auto", cmap=cmap, vmin=0, vmax=2, interpolation="nearest", extent=extent
        )
        ax.set_yticks(range(len(strip.rows)), [name for name, _ in strip.rows])
        ax.set_xlabel(strip.x_label)
        ax.set_title(strip.title)
    handles = [Patch(color=c, label=label) for label, c in VERDICT_COLOURS.items()]
    fig.legend(handles=handles, loc="outside right upper", title="result")
    return fig


# ---------------------------------------------------------------------------
# Lessons 03-05: every-cut strips, the drop staircase, arrival times
# ---------------------------------------------------------------------------


def plot_cut_verdicts(
    cut_rows: Mapping[str, Sequence[str]],
    size_rows: Mapping[str, Sequence[str]],
    sizes: Sequence[int],
) -> Figure:
    """Return a two-panel strip chart: reader verdicts for every cut position and every chunk size.

    Each row is a reader; each column a cut. Green = right text and flag, orange = wrong
    text, purple = the reader raised an exception.
    """
    return draw(figures.cut_verdicts(cut_rows, size_rows, sizes))


def plot_drop_staircase(
    lengths: Sequence[int], *, mark_bytes: int | None = None, event_ends: Sequence[int] = ()
) -> Figure:
    """Return the characters on screen against the byte after which the connection drops."""
    return draw(figures.drop_staircase(lengths, mark_bytes=mark_bytes, event_ends=event_ends))


def plot_arrival_curves(
    series: Mapping[str, Sequence[tuple[float, int]]], *, title: str, x_max_ms: float | None = None
) -> Figure:
    """Return bytes received against time (ms) for each named series of (at_ms, n_bytes) arrivals."""
    return draw(figures.arrival_curves(series, title=title, x_max_ms=x_max_ms))


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
    return draw(figures.measured_vs_model(streamed_ms, blocking_ms, model_ms, title=title))


def plot_idle_silences(reports: Mapping[str, object]) -> Figure:
    """Return one row per response: its writes, and every silence longer than the proxy allows.

    `reports` maps a label to a lessonkit.lab.lesson01.IdleReport (all with the same timeout).
    """
    return draw(figures.idle_silences(reports))


# ---------------------------------------------------------------------------
# The same figures in words: each figure's text alternative, numbers included
# ---------------------------------------------------------------------------


def cut_verdicts_text(
    cut_rows: Mapping[str, Sequence[str]],
    size_rows: Mapping[str, Sequence[str]],
    sizes: Sequence[int],
) -> str:
    """Return plot_cut_verdicts in words: each reader's right, wrong and error counts."""
    return figures.cut_verdicts(cut_rows, size_rows, sizes).text


def arrival_curves_text(series: Mapping[str, Sequence[tuple[float, int]]], *, title: str) -> str:
    """Return plot_arrival_curves in words: for each series, its arrivals and when they came."""
    return figures.arrival_curves(series, title=title).text


def measured_vs_model_text(
    streamed_ms: Sequence[float], blocking_ms: float, model_ms: Sequence[float]
) -> str:
    """Return plot_measured_vs_model in words: measured and modelled first and last pieces."""
    return figures.measured_vs_model(streamed_ms, blocking_ms, model_ms).text


def idle_silences_text(reports: Mapping[str, Any]) -> str:
    """Return plot_idle_silences in words: each response's longest silence and whether it is cut."""
    return figures.idle_silences(reports).text
