"""The explorers' live figures as inline SVG: cheap to redraw on every slider move.

A matplotlib figure takes 60-120 ms to draw and encode as PNG, more than a slider
tick allows; an SVG string built from the same state takes well under a
millisecond, and the browser draws it. So the explorers show these, and the
static figures in the notebooks stay matplotlib PNGs (lessonkit.lab.plots).
Cost goal: every function here returns in under 5 ms for the largest explorer
setting (1,000 tokens), measured by `make bench` (bench/bench_explorers.py); the
tests check the clock-free part: the work grows linearly with the tokens.

Every function takes plain state (from lessonkit.lab.lesson01 / lesson04) and
returns a ``views.Html`` string: a fixed-size <svg> with no ids (several copies
can share a page), numbers rounded to 0.1 px so the same state always gives the
same bytes. Colours are JupyterLab's theme variables (``views.THEME``), set in
``style`` attributes (an SVG presentation attribute cannot read a CSS variable),
and text never sits on a coloured shape: it is read on the page's own background.
Each figure is an ``role="img"`` whose ``aria-label`` says what it shows, numbers
included, for a screen reader (the ``*_text`` functions below).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lessonkit.lab import figures
from lessonkit.lab.views import THEME, Html

# svg imports no lesson module, not even for a type (lesson01 imports svg): timeline_*
# take a lesson01.TimelineView, cancel_* a lesson01.CancelView, typed Any here.

FONT = 'font-family="sans-serif" font-size="11"'


def _n(value: float) -> str:
    """Return a coordinate with at most one decimal ("12", "12.5"), the same for the same value."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _paint(*, fill: str = "none", stroke: str = "none", **extra: str) -> str:
    """Return a style attribute painting a shape in theme colours (an SVG attribute cannot)."""
    rules = [f"fill:{fill}", f"stroke:{stroke}"] + [
        f"{k.replace('_', '-')}:{v}" for k, v in extra.items()
    ]
    return f'style="{";".join(rules)}"'


@dataclass(frozen=True)
class Scale:
    """A linear map from data values (lo..hi) to pixels (px_lo..px_hi)."""

    lo: float
    hi: float
    px_lo: float
    px_hi: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo or 1.0
        value = min(max(value, self.lo), self.hi)
        return self.px_lo + (value - self.lo) / span * (self.px_hi - self.px_lo)


def nice_ticks(hi: float, max_ticks: int = 6) -> list[float]:
    """Return round tick values 0, step, 2 step, ... <= hi, with a 1, 2 or 5 x 10^k step."""
    if hi <= 0:
        return [0.0]
    raw = hi / max_ticks
    power = 10 ** math.floor(math.log10(raw))
    step = next(f * power for f in (1, 2, 5, 10) if f * power >= raw)
    return [i * step for i in range(int(hi // step) + 1)]


def _svg(
    width: int, height: int, body: list[str], css_class: str, label: str, *, title: bool = False
) -> Html:
    """Return the <svg>: role="img", `label` as its aria-label (and as its <title> if asked)."""
    heading = f"<title>{_esc(label)}</title>" if title else ""
    return Html(
        f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" width="{width}"'
        f' height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="{_esc(label)}">' + heading + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", colour: str = "") -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" {FONT}'
        f" {_paint(fill=colour or THEME['text'])}>{_esc(text)}</text>"
    )


def _x_axis(scale: Scale, y: float, hi: float, title: str) -> list[str]:
    axis = _paint(stroke=THEME["muted"])
    parts = [
        f'<line x1="{_n(scale.px_lo)}" y1="{_n(y)}" x2="{_n(scale.px_hi)}" y2="{_n(y)}" {axis}/>'
    ]
    for tick in nice_ticks(hi):
        x = scale(tick)
        parts.append(f'<line x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x)}" y2="{_n(y + 4)}" {axis}/>')
        parts.append(_text(x, y + 15, f"{tick:,.0f}", anchor="middle"))
    if title:
        parts.append(_text((scale.px_lo + scale.px_hi) / 2, y + 30, title, anchor="middle"))
    return parts


def _legend(items: list[tuple[str, str]], x: float, y: float) -> list[str]:
    """Return a row of legend entries; each item is (SVG shape at (0, 0), label)."""
    parts = []
    for shape, label in items:
        parts.append(f'<g transform="translate({_n(x)},{_n(y)})">{shape}</g>')
        parts.append(_text(x + 16, y + 4, label))
        x += 24 + 6.2 * len(label)
    return parts


def _ticks_path(xs: Sequence[float], y_top: float, y_bottom: float) -> str:
    """Return one path with a vertical stroke at each x (strokes on the same half pixel merged)."""
    seen = dict.fromkeys(round(x * 2) / 2 for x in xs)
    return "".join(f"M{_n(x)} {_n(y_top)}V{_n(y_bottom)}" for x in seen)


def _bar(x0: float, x1: float, top: float, colour: str) -> str:
    return (
        f'<rect x="{_n(x0)}" y="{_n(top)}" width="{_n(max(0.0, x1 - x0))}" height="26"'
        f" {_paint(fill=colour)}/>"
    )


def _outlined_bar(x0: float, x1: float, top: float, colour: str) -> str:
    """Return a bar drawn as a dashed outline: text may sit inside it, on the page's background."""
    return (
        f'<rect x="{_n(x0)}" y="{_n(top)}" width="{_n(max(0.0, x1 - x0))}" height="26"'
        f" {_paint(stroke=colour, stroke_width='1.5', stroke_dasharray='4 3')}/>"
    )


def _swatch(colour: str, *, outlined: bool = False) -> str:
    paint = _paint(stroke=colour, stroke_dasharray="3 2") if outlined else _paint(fill=colour)
    return f'<rect x="0" y="-5" width="12" height="10" {paint}/>'


def _mark(colour: str) -> str:
    return f'<path d="M6 -6V6" {_paint(stroke=colour, stroke_width="2")}/>'


TIMELINE_SIZE = (760, 214)


def timeline_text(view: Any) -> str:
    """Return the timeline figure in words: the time t, both first-text times, the total."""
    timings = view.timings
    return (
        f"Timeline at t = {view.t_ms:,.0f} ms: streaming shows its first token at"
        f" {timings.streaming_first_ms:,.0f} ms and has {view.frame.tokens_visible} of"
        f" {view.n_tokens} tokens on screen; blocking shows nothing until"
        f" {timings.blocking_first_ms:,.0f} ms; both finish at {timings.total_ms:,.0f} ms."
    )


def timeline_svg(view: Any) -> Html:
    """Return the timeline as SVG: both rows, TTFT and total marked, and the "now" line at t.

    The TTFT and total labels sit above the plot area, on two lines of their own, and
    their dashed lines start below them: no line crosses a label, even when the two
    times are close.
    """
    width, height = TIMELINE_SIZE
    top, bottom = 40.0, 150.0
    x = Scale(0, view.t_max_ms, 84, width - 16)
    timings = view.timings
    latency, prefill = view.latency_ms, view.prefill_ms
    rows = {"streaming": 62.0, "blocking": 112.0}  # row top; each row is 26 px high
    body = []
    for name, row_top in rows.items():
        body.append(_text(76, row_top + 17, name, anchor="end"))
        if latency:
            body.append(_bar(x(0), x(latency), row_top, THEME["grey"]))
        body.append(_bar(x(latency), x(latency + prefill), row_top, THEME["warm"]))
    stream_top = rows["streaming"]
    ticks = _ticks_path([x(t) for t in view.arrival_ms], stream_top, stream_top + 26)
    stroke = "1.5" if view.n_tokens < 60 else "0.6"
    body.append(f'<path d="{ticks}" {_paint(stroke=THEME["accent"], stroke_width=stroke)}/>')
    block_top = rows["blocking"]
    body.append(
        _outlined_bar(x(latency + prefill), x(timings.total_ms), block_top, THEME["accent"])
    )
    body.append(_text(x(latency + prefill) + 4, block_top + 17, "◐ waiting…"))
    for at_ms, colour, label, label_y in (
        (timings.streaming_first_ms, THEME["accent"], f"TTFT {timings.streaming_first_ms:,.0f} ms", 32),
        (timings.total_ms, THEME["alarm"], f"total {timings.total_ms:,.0f} ms", 16),
    ):  # fmt: skip
        lx = x(at_ms)
        body.append(
            f'<line x1="{_n(lx)}" y1="{_n(top - 2)}" x2="{_n(lx)}" y2="{_n(bottom)}"'
            f" {_paint(stroke=colour, stroke_width='1.2', stroke_dasharray='5 3')}/>"
        )
        anchor = "start" if lx < width - 110 else "end"
        body.append(_text(lx + (3 if anchor == "start" else -3), label_y, label, anchor=anchor,
                          colour=colour))  # fmt: skip
    now = x(view.t_ms)
    body.append(
        f'<line class="lk-now" x1="{_n(now)}" y1="{_n(top + 8)}" x2="{_n(now)}" y2="{_n(bottom)}"'
        f" {_paint(stroke=THEME['text'], stroke_width='2')}/>"
    )
    body += _x_axis(x, bottom, view.t_max_ms, "time since the request was sent (ms)")
    legend = [
        (_swatch(THEME["warm"]), "prefill"),
        (_swatch(THEME["accent"], outlined=True), "blocking: spinner"),
        (_mark(THEME["accent"]), "a token appears"),
        (_mark(THEME["text"]), "now (t)"),
    ]
    if latency:
        legend.insert(0, (_swatch(THEME["grey"]), "network round trip"))
    body += _legend(legend, 84, height - 14)
    return _svg(width, height, body, "lk-timeline-svg", timeline_text(view))


CANCEL_SIZE = (640, 92)


def cancel_text(view: Any) -> str:
    """Return the stop-early bar in words: tokens generated before the stop and never generated."""
    return (
        f"Bar of the answer's {view.n_tokens} tokens, stopped at {view.cancel_at_ms:,.0f} ms:"
        f" {view.tokens_generated} generated and paid for, {view.tokens_saved} never generated."
    )


def cancel_svg(view: Any) -> Html:
    """Return one bar of the answer's tokens: generated before the stop vs never generated."""
    width, height = CANCEL_SIZE
    x = Scale(0, max(1, view.n_tokens), 20, width - 20)
    top = 8.0
    body = [
        _bar(x(0), x(view.tokens_generated), top, THEME["accent"]),
        _outlined_bar(x(view.tokens_generated), x(view.n_tokens), top, THEME["accent"]),
    ]
    body += _x_axis(x, top + 26, view.n_tokens, "")  # ticks only; the legend says the rest
    body += _legend(
        [
            (_swatch(THEME["accent"]), f"{view.tokens_generated} generated (paid for)"),
            (_swatch(THEME["accent"], outlined=True),
             f"{view.tokens_saved} never generated (saved)"),
        ],
        20,
        height - 14,
    )  # fmt: skip
    return _svg(width, height, body, "lk-cancel-svg", cancel_text(view))


DROP_SIZE = (640, 250)


def drop_text(lengths: Sequence[int], mark_bytes: int) -> str:
    """Return the drop staircase in words: where the text grows, and the marked drop."""
    n = max(0, len(lengths) - 1)
    mark = min(max(0, mark_bytes), n)
    steps = [i for i in range(1, len(lengths)) if lengths[i] != lengths[i - 1]]
    shown = lengths[mark] if lengths else 0
    return (
        f"Staircase of the characters on screen for a drop after 0 to {n} bytes: the text"
        f" grows only at bytes {', '.join(map(str, steps)) or 'none'} (where an event ends),"
        f" up to {max(lengths, default=0)} characters. A drop after {mark} bytes leaves"
        f" {shown} characters on screen."
    )


def drop_svg(lengths: Sequence[int], mark_bytes: int) -> Html:
    """Return the drop staircase (characters on screen per drop position) with a marked drop."""
    width, height = DROP_SIZE
    n = max(1, len(lengths) - 1)
    top, bottom = 14.0, 186.0
    y_max = max(lengths) * 1.1 + 1 if lengths else 1
    x = Scale(0, n, 56, width - 16)
    y = Scale(0, y_max, bottom, top)
    steps = [f"M{_n(x(0))} {_n(y(lengths[0] if lengths else 0))}"]
    for i in range(1, len(lengths)):
        if lengths[i] != lengths[i - 1]:
            steps.append(f"H{_n(x(i))}V{_n(y(lengths[i]))}")
    steps.append(f"H{_n(x(n))}")
    body = [f'<path d="{"".join(steps)}" {_paint(stroke=THEME["accent"], stroke_width="2")}/>']
    for tick in nice_ticks(y_max, 4):
        body.append(_text(50, y(tick) + 4, f"{tick:,.0f}", anchor="end"))
    body.append(
        f'<text x="14" y="{_n((top + bottom) / 2)}" text-anchor="middle" {FONT}'
        f" {_paint(fill=THEME['text'])}"
        f' transform="rotate(-90 14 {_n((top + bottom) / 2)})">characters on screen</text>'
    )
    mark = min(max(0, mark_bytes), n)
    mx, my = x(mark), y(lengths[mark] if lengths else 0)
    body.append(
        f'<line class="lk-drop-mark" x1="{_n(mx)}" y1="{_n(top)}" x2="{_n(mx)}" y2="{_n(bottom)}"'
        f" {_paint(stroke=THEME['alarm'], stroke_width='1.5')}/>"
        f'<circle cx="{_n(mx)}" cy="{_n(my)}" r="4" {_paint(fill=THEME["alarm"])}/>'
    )
    body += _x_axis(x, bottom, n, "connection drops after this many bytes")
    body += _legend(
        [
            (f'<path d="M0 0H12" {_paint(stroke=THEME["accent"], stroke_width="2")}/>',
             "text on screen"),
            (_swatch(THEME["alarm"]), f"drop after {mark} bytes"),
        ],
        56,
        height - 10,
    )  # fmt: skip
    return _svg(width, height, body, "lk-drop-svg", drop_text(lengths, mark_bytes))


# ---------------------------------------------------------------------------------------------
# The notebooks' static figures (lessonkit.lab.figures), where there is no matplotlib


def figure_svg(description: figures.Figure) -> Html:
    """Return a description from lessonkit.lab.figures as SVG: the figure matplotlib would draw.

    Its words (``description.text``) are the <svg>'s <title> and aria-label.
    """
    if isinstance(description, figures.StepChart):
        return steps_svg(description)
    if isinstance(description, figures.RowChart):
        return rows_svg(description)
    if isinstance(description, figures.StripChart):
        return strips_svg(description)
    raise TypeError(f"expected a description from lessonkit.lab.figures, got {description!r}")


def _wrapped_legend(
    items: list[tuple[str, str]], x0: float, y: float, right: float
) -> tuple[list[str], float]:
    """Return legend entries in rows that fit left of `right`, and the y of the last row."""
    parts, x = [], x0
    for shape, label in items:
        width = 24 + 6.2 * len(label)
        if x > x0 and x + width > right:
            x, y = x0, y + 18
        parts.append(f'<g transform="translate({_n(x)},{_n(y)})">{shape}</g>')
        parts.append(_text(x + 16, y + 4, label))
        x += width
    return parts, y


def _y_axis(scale: Scale, x: float, hi: float, title: str, top: float, bottom: float) -> list[str]:
    axis = _paint(stroke=THEME["muted"])
    parts = [f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(bottom)}" {axis}/>']
    for tick in nice_ticks(hi, 4):
        y = scale(tick)
        parts.append(f'<line x1="{_n(x - 4)}" y1="{_n(y)}" x2="{_n(x)}" y2="{_n(y)}" {axis}/>')
        parts.append(_text(x - 6, y + 4, f"{tick:,.0f}", anchor="end"))
    middle = (top + bottom) / 2
    parts.append(
        f'<text x="14" y="{_n(middle)}" text-anchor="middle" {FONT} {_paint(fill=THEME["text"])}'
        f' transform="rotate(-90 14 {_n(middle)})">{_esc(title)}</text>'
    )
    return parts


_LINE_STYLES = {
    "solid": {"stroke_width": "2"},
    "dashed": {"stroke_width": "2", "stroke_dasharray": "6 4"},
    "wide": {"stroke_width": "6", "stroke_opacity": "0.45"},
}


def _line_shape(line: figures.Line) -> str:
    paint = _paint(stroke=THEME[line.role], **_LINE_STYLES[line.style])
    return f'<path d="M0 0H12" {paint}/>'


def steps_svg(chart: figures.StepChart) -> Html:
    """Return a StepChart as SVG: each line a staircase, each rule a vertical line, a legend."""
    width = 640
    top, bottom, left, right = (30.0 if chart.title else 14.0), 190.0, 64.0, width - 16.0
    x = Scale(0, chart.x_max, left, right)
    y = Scale(0, chart.y_max, bottom, top)
    body = []
    if chart.title:
        body.append(_text((left + right) / 2, 16, chart.title, anchor="middle"))
    for line in chart.lines:
        (x0, y0), rest = line.points[0], line.points[1:]
        steps = [f"M{_n(x(x0))} {_n(y(y0))}"] + [f"H{_n(x(px))}V{_n(y(py))}" for px, py in rest]
        if rest and chart.x_max > rest[-1][0]:
            steps.append(f"H{_n(x(chart.x_max))}")  # the last value holds to the axis's end
        paint = _paint(stroke=THEME[line.role], **_LINE_STYLES[line.style])
        body.append(f'<path class="lk-series" d="{"".join(steps)}" {paint}/>')
        if line.dots:
            body += [f'<circle cx="{_n(x(px))}" cy="{_n(y(py))}" r="2.5"'
                     f" {_paint(fill=THEME[line.role])}/>" for px, py in rest]  # fmt: skip
    for rule in chart.rules:
        rx = x(rule.x)
        paint = (
            _paint(stroke=THEME[rule.role], stroke_width="1.5")
            if rule.label
            else _paint(stroke=THEME[rule.role], stroke_width="0.6", stroke_dasharray="2 2")
        )
        body.append(f'<line x1="{_n(rx)}" y1="{_n(top)}" x2="{_n(rx)}" y2="{_n(bottom)}" {paint}/>')
        if rule.y_dot is not None:
            body.append(f'<circle cx="{_n(rx)}" cy="{_n(y(rule.y_dot))}" r="4"'
                        f" {_paint(fill=THEME[rule.role])}/>")  # fmt: skip
    body += _y_axis(y, left, chart.y_max, chart.y_label, top, bottom)
    body += _x_axis(x, bottom, chart.x_max, chart.x_label)
    items = [(_line_shape(line), line.label) for line in chart.lines]
    items += [(_swatch(THEME[r.role]), r.label) for r in chart.rules if r.label]
    legend, last_y = _wrapped_legend(items, left, bottom + 50, right)
    body += legend
    return _svg(width, int(last_y + 12), body, "lk-figure-svg lk-steps-svg", chart.text, title=True)


def rows_svg(chart: figures.RowChart) -> Html:
    """Return a RowChart as SVG: a row per response, its writes, silences and the proxy's cut."""
    width, row_h, top, left, right = 720, 32.0, 10.0, 170.0, 704.0
    x = Scale(0, chart.x_max, left, right)
    body = []
    for i, row in enumerate(chart.rows):
        cy = top + row_h * i + row_h / 2
        body.append(_text(left - 8, cy + 4, row.label, anchor="end"))
        for segments, role, stroke in ((row.short, "muted", "2"), (row.long, "alarm", "6")):
            if segments:
                d = "".join(f"M{_n(x(a))} {_n(cy)}H{_n(x(b))}" for a, b in segments)
                body.append(f'<path d="{d}" {_paint(stroke=THEME[role], stroke_width=stroke)}/>')
        if row.data_s:
            ticks = _ticks_path([x(t) for t in row.data_s], cy - 8, cy + 8)
            body.append(f'<path d="{ticks}" {_paint(stroke=THEME["accent"], stroke_width="1.5")}/>')
        body += [f'<circle cx="{_n(x(t))}" cy="{_n(cy)}" r="3.5" {_paint(fill=THEME["good"])}/>'
                 for t in row.beats_s]  # fmt: skip
        if row.cut_s is not None:
            cx = x(row.cut_s)
            body.append(
                f'<path class="lk-cut" d="M{_n(cx - 6)} {_n(cy - 6)}l12 12M{_n(cx + 6)} {_n(cy - 6)}'
                f'l-12 12" {_paint(stroke=THEME["text"], stroke_width="2.5")}/>'
            )
    bottom = top + row_h * len(chart.rows) + 4
    body += _x_axis(x, bottom, chart.x_max, chart.x_label)
    items = [
        (_mark(THEME["accent"]), "data"),
        (f'<circle cx="6" cy="0" r="3.5" {_paint(fill=THEME["good"])}/>', ": ping heartbeat"),
        (f'<path d="M0 0H12" {_paint(stroke=THEME["muted"], stroke_width="2")}/>', "short silence"),
        (f'<path d="M0 0H12" {_paint(stroke=THEME["alarm"], stroke_width="6")}/>',
         "silence > idle timeout"),
        (f'<path d="M1 -5l10 10M11 -5l-10 10" {_paint(stroke=THEME["text"], stroke_width="2")}/>',
         "proxy closes"),
    ]  # fmt: skip
    legend, last_y = _wrapped_legend(items, left, bottom + 50, right)
    body += legend
    return _svg(width, int(last_y + 12), body, "lk-figure-svg lk-rows-svg", chart.text, title=True)


def strips_svg(chart: figures.StripChart) -> Html:
    """Return a StripChart as SVG: per panel, a row of verdict cells per reader, runs merged."""
    width, left, right, row_h = 720, 160.0, 704.0, 16.0
    body, y0 = [], 8.0
    for strip in chart.strips:
        body.append(_text((left + right) / 2, y0 + 12, strip.title, anchor="middle"))
        top = y0 + 20
        n = len(strip.columns)
        cell = (right - left) / max(1, n)
        for i, (name, verdicts) in enumerate(strip.rows):
            ry = top + i * row_h
            body.append(_text(left - 6, ry + 12, name, anchor="end"))
            start = 0
            for j in range(1, n + 1):  # one rect per run of equal verdicts
                if j == n or verdicts[j] != verdicts[start]:
                    role = figures.VERDICT_ROLES[verdicts[start]]
                    body.append(
                        f'<rect class="lk-verdict-{verdicts[start]}" x="{_n(left + start * cell)}"'
                        f' y="{_n(ry + 1)}" width="{_n((j - start) * cell)}"'
                        f' height="{_n(row_h - 2)}" {_paint(fill=THEME[role])}/>'
                    )
                    start = j
        bottom = top + len(strip.rows) * row_h
        first, last = strip.columns[0], strip.columns[-1]
        x = Scale(first - 0.5, last + 0.5, left, right)
        axis = _paint(stroke=THEME["muted"])
        body.append(
            f'<line x1="{_n(left)}" y1="{_n(bottom)}" x2="{_n(right)}" y2="{_n(bottom)}" {axis}/>'
        )
        for tick in nice_ticks(last):
            if tick >= first:
                body.append(_text(x(tick), bottom + 14, f"{tick:,.0f}", anchor="middle"))
        body.append(_text((left + right) / 2, bottom + 28, strip.x_label, anchor="middle"))
        y0 = bottom + 40
    items = [(_swatch(THEME[figures.VERDICT_ROLES[v]]), figures.VERDICT_LABELS[v])
             for v in figures.VERDICT_ROLES]  # fmt: skip
    legend, last_y = _wrapped_legend(items, left, y0 + 6, right)
    body += legend
    return _svg(width, int(last_y + 12), body, "lk-figure-svg lk-strips-svg", chart.text,
                title=True)  # fmt: skip
