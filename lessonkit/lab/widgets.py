"""Thin ipywidgets front-ends for the explorers: controls -> a pure function -> readouts.

Every explorer is built the same way, in the spirit of mpl-interactions:

    controls = {"n_bytes": slider}                      the learner's knobs, by name
    def readouts(n_bytes): return {"screen": ...}       pure: lesson04.drop_readouts etc.
    bind(controls, readouts, {"screen": readout})       redraw what changed, on every move

``bind`` calls the readouts function with the controls' values, by name, and
writes each value it returns into the output of the same name: a text readout,
an HTML view (a ``views.Html`` value), a PNG image (bytes), or a trait of another
widget such as a slider's ``max``. An output whose value did not change is not
written, so a slider tick redraws only what moved. The state functions live in
the lesson modules (lessonkit.lab.lesson01 ... lesson05); tests call them headless.

Each explorer is an ``Explorer`` box: where no widget can run (a notebook
opened before its cells ran, nbconvert, a PDF) it shows its text twin instead
of the raw widget repr.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets

from lessonkit.core import llm, practice, render, timeline
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, plots, views

# An output is a widget (its value is set) or a (widget, trait name) pair.
Output = widgets.Widget | tuple[widgets.Widget, str]


class Explorer(widgets.VBox):
    """The box around one explorer; its plain-text form says what it is and how to open it."""

    def __init__(self, children: Iterable[widgets.Widget], *, css_class: str, title: str) -> None:
        super().__init__(list(children))
        self.add_class(css_class)
        self.title = title

    @property
    def text_twin(self) -> str:
        """Return what a page without a running kernel shows in place of the explorer."""
        return f"[{self.title}: run this cell to open it]"

    def __repr__(self) -> str:
        return self.text_twin

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text_twin  # ipywidgets would cut the repr at 110 characters
        return bundle


def bind(
    controls: Mapping[str, widgets.ValueWidget],
    readouts: Callable[..., Mapping[str, Any]],
    outputs: Mapping[str, Output],
) -> Callable[[], None]:
    """Show readouts(**control values) in `outputs` now and after every control change.

    Returns the update function. Keys of the readouts that name no output are
    ignored. If writing an output moves a control (a smaller ``max`` clamps a
    slider), the readouts are computed once more with the new values.
    """
    shown: dict[str, Any] = {}
    state = {"busy": False, "again": False}

    def update(_change: Any = None) -> None:
        if state["busy"]:  # a control moved because we wrote an output: go round once more
            state["again"] = True
            return
        state["busy"] = True
        try:
            for _ in range(3):
                state["again"] = False
                values = readouts(**{name: c.value for name, c in controls.items()})
                for name, value in values.items():
                    if name in outputs and shown.get(name, _UNSET) != value:
                        shown[name] = value
                        _write(outputs[name], value)
                if not state["again"]:
                    break
        finally:
            state["busy"] = False

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return update


_UNSET = object()


def _write(output: Output, value: Any) -> None:
    if isinstance(output, tuple):
        widget, trait = output
        setattr(widget, trait, value)
    elif isinstance(output, widgets.HTML):
        output.value = value if isinstance(value, views.Html) else _monospace(str(value))
    else:
        output.value = value


def _monospace(text: str) -> str:
    return f'<span style="white-space: pre-wrap; font-family: monospace">{html.escape(text)}</span>'


def _readout(css_class: str) -> widgets.HTML:
    """Return an empty readout: an HTML widget with a stable CSS class for browser tests."""
    readout = widgets.HTML(layout=widgets.Layout(margin="0 1.5em 0 0"))  # room between readouts
    readout.add_class("lk-readout")
    readout.add_class(css_class)
    return readout


def _readouts(prefix: str, names: Iterable[str]) -> dict[str, widgets.HTML]:
    return {name: _readout(f"{prefix}-{name.replace('_', '-')}") for name in names}


def _image(css_class: str) -> widgets.Image:
    image = widgets.Image(format="png")
    image.add_class(css_class)
    return image


def _styled(control: widgets.Widget, css_class: str) -> widgets.Widget:
    control.add_class(css_class)
    if hasattr(control, "style") and hasattr(control.style, "description_width"):
        control.style.description_width = "initial"  # show "per token ms" in full
    return control


def _played(slider: widgets.IntSlider, interval_ms: int) -> widgets.HBox:
    """Return [Play | slider], the Play widget linked to the slider in the kernel.

    A Play widget only ticks in a browser; the animation itself is the slider's callback.
    """
    play = widgets.Play(
        value=slider.value, min=slider.min, max=slider.max, step=slider.step, interval=interval_ms
    )
    play.add_class("lk-play")
    widgets.link((play, "value"), (slider, "value"))
    widgets.link((play, "max"), (slider, "max"))
    widgets.link((play, "step"), (slider, "step"))
    return widgets.HBox([play, slider])


# ---------------------------------------------------------------------------
# Lesson 01: the decode loop, the timeline, stopping early


def decode_loop_player(
    prompt: str = llm.RUNNING_PROMPT, *, max_tokens: int | None = None, index: int = 0
) -> Explorer:
    """Return the decode-loop player: Play steps through the passes of lesson01.decode_steps.

    CSS: lk-decode-explorer; slider lk-decode-pass; readout lk-decode-view (the tokens
    the pass reads and the one it writes).
    """
    steps = lesson01.decode_steps(prompt, max_tokens=max_tokens)
    step = _styled(
        widgets.IntSlider(index, 0, len(steps) - 1, description="pass"), "lk-decode-pass"
    )
    view = _readout("lk-decode-view")
    bind(
        {"index": step},
        lambda index: {"view": views.Html(views.decode_step_html(steps[index]))},
        {"view": view},
    )
    return Explorer([_played(step, 800), view], css_class="lk-decode-explorer", title="decode loop")


def _round_step(step: int) -> int:
    """Return the largest 1, 2 or 5 x 10^k that is <= step (at least 1).

    A round slider step keeps round start values (t = 400 ms) on the slider's grid, so the
    browser does not snap them to a neighbour.
    """
    best = 1
    scale = 1
    while scale <= step:
        for factor in (1, 2, 5):
            if factor * scale <= step:
                best = factor * scale
        scale *= 10
    return best


@functools.lru_cache(maxsize=8)
def _timeline_figure(**speeds: float) -> plots.TimelinePlot:
    """Return the drawn timeline for one set of speeds; moving t only moves its marker."""
    return plots.TimelinePlot(lesson01.timeline_view(0, **speeds))


@functools.lru_cache(maxsize=64)
def _timeline_png(t_ms: float, **speeds: float) -> bytes:
    """Return the timeline's PNG with the "now" marker at t_ms (Play revisits the same frames)."""
    return _timeline_figure(**speeds).png_at(t_ms)


def timeline_readouts(t_ms: int, **speeds: float) -> dict[str, Any]:
    """Return everything the timeline explorer shows for these slider values."""
    t_max = int(lesson01.timeline_t_max_ms(**speeds))
    view = lesson01.timeline_view(min(t_ms, t_max), **speeds)
    return {
        **lesson01.timeline_readouts(view),
        "screens": views.Html(views.timeline_panes_html(view)),
        "plot": _timeline_png(view.t_ms, **speeds),
        "t_max": t_max,
        "t_step": _round_step(t_max // 100),
    }


def timeline_explorer(
    *,
    prefill_ms: int = 300,
    per_token_ms: int = 40,
    n_tokens: int = 6,
    latency_ms: int = 0,
    t_ms: int = 400,
) -> Explorer:
    """Return the timeline explorer: four sliders, Play for time t, two screens, a plot, readouts.

    CSS: lk-timeline-explorer; sliders lk-prefill-ms, lk-per-token-ms, lk-n-tokens,
    lk-latency-ms, lk-t-ms; panes lk-timeline-screens; plot lk-timeline-plot; readouts
    lk-timeline-t, -ttft, -blocking, -total, -visible (lesson01.timeline_readouts).
    """
    controls = {
        "prefill_ms": widgets.IntSlider(prefill_ms, 0, 3000, 10, description="prefill ms"),
        "per_token_ms": widgets.IntSlider(per_token_ms, 1, 200, 1, description="per token ms"),
        "n_tokens": widgets.IntSlider(n_tokens, 1, 1000, 1, description="tokens"),
        "latency_ms": widgets.IntSlider(latency_ms, 0, 1000, 10, description="round trip ms"),
    }
    for name, slider in controls.items():
        _styled(slider, "lk-" + name.replace("_", "-"))
    t = widgets.IntSlider(t_ms, 0, 10**9, 1, description="t (ms)")
    t.add_class("lk-t-ms")
    readouts = _readouts("lk-timeline", ("t", "ttft", "blocking", "total", "visible"))
    screens, plot = _readout("lk-timeline-screens"), _image("lk-timeline-plot")
    outputs = {**readouts, "screens": screens, "plot": plot, "t_max": (t, "max")}
    outputs["t_step"] = (t, "step")
    bind({**controls, "t_ms": t}, timeline_readouts, outputs)
    rows = [
        widgets.HBox([controls["prefill_ms"], controls["per_token_ms"]]),
        widgets.HBox([controls["n_tokens"], controls["latency_ms"]]),
        _played(t, 100),
        screens,
        widgets.HBox([readouts["ttft"], readouts["blocking"], readouts["total"]]),
        widgets.HBox([readouts["t"], readouts["visible"]]),
        plot,
    ]
    return Explorer(rows, css_class="lk-timeline-explorer", title="timeline explorer")


def cancel_explorer(
    *, n_tokens: int = 500, prefill_ms: int = 300, per_token_ms: int = 40, cancel_at_ms: int = 2000
) -> Explorer:
    """Return the stop-early explorer: a cancel-time slider and what stopping there saves.

    CSS: lk-cancel-explorer; slider lk-cancel-at-ms; price lk-cancel-price; plot
    lk-cancel-plot; readouts lk-cancel-generated, -saved, -time, -cost, -seen.
    """
    total = int(timeline.response_times(prefill_ms, per_token_ms, n_tokens).total_ms)
    at = _styled(
        widgets.IntSlider(cancel_at_ms, 0, total, 50, description="stop at ms"), "lk-cancel-at-ms"
    )
    price = widgets.BoundedFloatText(10.0, min=0, max=1000, description="$ / M tokens")
    _styled(price, "lk-cancel-price")
    readouts = _readouts("lk-cancel", ("seen", "generated", "saved", "time", "cost"))
    plot = _image("lk-cancel-plot")
    options = {"n_tokens": n_tokens, "prefill_ms": prefill_ms, "per_token_ms": per_token_ms}

    def shown(cancel_at_ms: int, usd_per_million_tokens: float) -> dict[str, Any]:
        view = lesson01.cancel_view(
            cancel_at_ms, usd_per_million_tokens=usd_per_million_tokens, **options
        )
        return {**lesson01.cancel_readouts(view), "plot": plots.png(plots.plot_cancel(view))}

    bind(
        {"cancel_at_ms": at, "usd_per_million_tokens": price},
        shown,
        {**readouts, "plot": plot},
    )
    children = [widgets.HBox([at, price]), *readouts.values(), plot]
    return Explorer(children, css_class="lk-cancel-explorer", title="stop-early explorer")


# ---------------------------------------------------------------------------
# Lesson 02: the wire inspector, the five-step walkthrough


def wire_inspector(dialect: str = "openai", index: int = 1) -> Explorer:
    """Return the wire inspector: pick a dialect, step through the writes of the same answer.

    CSS: lk-wire-inspector; dialect buttons lk-dialect; slider lk-wire-write; bytes
    lk-wire-view (fields coloured, the current write marked); readouts lk-wire-meaning
    (what this write means: delta, finish reason, usage, end marker), lk-wire-screen
    (the text on screen after it).
    """
    choice = widgets.ToggleButtons(options=["lesson", "openai", "anthropic"], value=dialect)
    choice.add_class("lk-dialect")
    write = widgets.IntSlider(index, 0, 100, description="write")
    write.add_class("lk-wire-write")
    view = _readout("lk-wire-view")
    meaning, screen = _readout("lk-wire-meaning"), _readout("lk-wire-screen")
    rows_of = functools.lru_cache(maxsize=4)(lesson02.wire_rows)

    def shown(dialect: str, upto: int) -> dict[str, Any]:
        rows = rows_of(dialect)
        row = rows[min(upto, len(rows) - 1)]
        return {
            "last": len(rows) - 1,
            "view": views.Html(views.inspector_html(rows, upto)),
            "meaning": f"write {row.index} at {row.at_ms:.0f} ms: {lesson02.row_summary(row)}",
            "screen": f"screen: {row.screen!r}" + ("  (complete)" if row.done else ""),
        }

    bind(
        {"dialect": choice, "upto": write},
        shown,
        {"last": (write, "max"), "view": view, "meaning": meaning, "screen": screen},
    )
    children = [choice, _played(write, 700), meaning, screen, view]
    return Explorer(children, css_class="lk-wire-inspector", title="wire inspector")


def walkthrough_stepper(number: int = 1) -> Explorer:
    """Return the five-step walkthrough: Back/Next buttons and the bytes and screen of each step.

    CSS: lk-walkthrough; buttons lk-walk-back, lk-walk-next (disabled at the ends);
    slider lk-walk-step; readouts lk-walk-view (title, bytes, explanation), lk-walk-screen.
    """
    steps = lesson02.walkthrough_steps()
    step = widgets.IntSlider(number, 1, len(steps), description="step")
    step.add_class("lk-walk-step")
    back, forward = widgets.Button(description="◀ back"), widgets.Button(description="next ▶")
    back.add_class("lk-walk-back")
    forward.add_class("lk-walk-next")
    view, screen = _readout("lk-walk-view"), _readout("lk-walk-screen")

    def shown(number: int) -> dict[str, Any]:
        current = steps[number - 1]
        return {
            "view": views.Html(views.walk_step_html(current)),
            "screen": f"on screen after step {number}: {current.screen!r}",
            "first": number == 1,
            "last": number == len(steps),
        }

    back.on_click(lambda _: setattr(step, "value", max(step.min, step.value - 1)))
    forward.on_click(lambda _: setattr(step, "value", min(step.max, step.value + 1)))
    outputs = {"view": view, "screen": screen, "first": (back, "disabled")}
    outputs["last"] = (forward, "disabled")
    bind({"number": step}, shown, outputs)
    children = [widgets.HBox([back, step, forward]), view, screen]
    return Explorer(children, css_class="lk-walkthrough", title="five-step walkthrough")


# ---------------------------------------------------------------------------
# Lessons 03-05: the arrival stepper, UTF-8 cuts, drops, predictions, flicker


def arrival_stepper(
    wire: bytes | None = None, *, positions_text: str | None = None, chunk_bytes: int = 16
) -> Explorer:
    """Return the arrival stepper: cut the wire (chunk size or typed offsets), step through arrivals.

    Readouts (CSS classes): lk-stepper-cuts, lk-stepper-arrival, lk-stepper-events,
    lk-stepper-buffer, lk-stepper-screen; state from lesson03.stepper_readouts.
    """
    if wire is None:
        wire, cuts = lesson03.worked_example()
        positions_text = ", ".join(map(str, cuts)) if positions_text is None else positions_text
    size = widgets.IntSlider(chunk_bytes, 1, len(wire), description="chunk bytes")
    size.add_class("lk-chunk-size")
    positions = widgets.Text(
        positions_text or "", description="cut after", placeholder="e.g. 19, 54"
    )
    positions.add_class("lk-cut-positions")
    step = widgets.IntSlider(1, 1, len(wire), description="arrival")
    step.add_class("lk-arrival-step")
    readouts = _readouts("lk-stepper", ("cuts", "arrival", "events", "buffer", "screen"))

    def shown(chunk_bytes: int, positions_text: str, step: int) -> dict[str, Any]:
        values = lesson03.stepper_readouts(
            wire, chunk_bytes=chunk_bytes, positions_text=positions_text, step=step
        )
        return {**values, "arrivals": int(values["arrivals"])}

    bind(
        {"chunk_bytes": size, "positions_text": positions, "step": step},
        shown,
        {**readouts, "arrivals": (step, "max")},
    )
    children = [size, positions, step, *readouts.values()]
    return Explorer(children, css_class="lk-arrival-stepper", title="arrival stepper")


def utf8_explorer(text: str = "café 🙂", cut_at_byte: int = 4) -> Explorer:
    """Return the UTF-8 explorer: cut a text's bytes anywhere and compare three ways to decode.

    Readouts: lk-utf8-bytes, lk-utf8-cut, lk-utf8-per-chunk, lk-utf8-replace,
    lk-utf8-incremental; state from lesson03.utf8_readouts.
    """
    source = widgets.Text(text, description="text")
    source.add_class("lk-utf8-text")
    cut = widgets.IntSlider(cut_at_byte, 0, len(text.encode()), description="cut after byte")
    cut.add_class("lk-utf8-cut")
    names = ("bytes", "cut", "per_chunk", "replace", "incremental")
    readouts = _readouts("lk-utf8", names)

    def shown(text: str, cut_at_byte: int) -> dict[str, Any]:
        n_bytes = len(text.encode())
        return {"n_bytes": n_bytes, **lesson03.utf8_readouts(text, min(cut_at_byte, n_bytes))}

    bind({"text": source, "cut_at_byte": cut}, shown, {**readouts, "n_bytes": (cut, "max")})
    return Explorer(
        [source, cut, *readouts.values()], css_class="lk-utf8-explorer", title="UTF-8 explorer"
    )


def drop_explorer(wire: bytes | None = None, n_bytes: int = 70) -> Explorer:
    """Return the drop explorer: a drop-position slider, what is on screen, and the staircase plot.

    Readouts: lk-drop-position-readout, lk-drop-screen, lk-drop-complete, lk-drop-held;
    the plot is an image with class lk-drop-plot. State from lesson04.drop_readouts.
    """
    wire = practice.practice_wire() if wire is None else wire
    lengths = lesson04.drop_staircase(wire)
    position = widgets.IntSlider(n_bytes, 0, len(wire), description="drop after")
    position.add_class("lk-drop-position")
    readouts = {
        "position": _readout("lk-drop-position-readout"),
        **_readouts("lk-drop", ("screen", "complete", "held")),
    }
    plot = _image("lk-drop-plot")

    def shown(n_bytes: int) -> dict[str, Any]:
        figure = plots.plot_drop_staircase(lengths, mark_bytes=n_bytes)
        return {**lesson04.drop_readouts(wire, n_bytes), "plot": plots.png(figure)}

    bind({"n_bytes": position}, shown, {**readouts, "plot": plot})
    children = [position, *readouts.values(), plot]
    return Explorer(children, css_class="lk-drop-explorer", title="drop explorer")


def prediction_picker(
    choices: Iterable[str], *, css_class: str = "lk-prediction"
) -> widgets.Dropdown:
    """Return a dropdown to record a prediction before a run; it starts on the placeholder."""
    options = [lesson04.PREDICTION_PLACEHOLDER, *choices]
    picker = widgets.Dropdown(
        options=options,
        value=lesson04.PREDICTION_PLACEHOLDER,
        description="I predict",
        layout=widgets.Layout(width="max-content"),
    )
    picker.add_class("lk-prediction")
    if css_class != "lk-prediction":
        picker.add_class(css_class)
    return picker


_BOX_STYLE = "white-space: pre-wrap; border: 1px solid #999; padding: 4px; min-height: 6em"


def flicker_demo(tokens: Iterable[str] | None = None, step: int | None = None) -> Explorer:
    """Return the flicker demo: a token slider, the naive and the stable rendering side by side.

    Readouts: lk-flicker-naive and lk-flicker-stable (HTML), lk-flicker-count (rewrites so
    far for each renderer). State from render.flicker_frames.
    """
    frames = render.flicker_frames(
        render.split_tokens(render.FLICKER_ANSWER) if tokens is None else tokens
    )
    slider = widgets.IntSlider(
        len(frames) if step is None else step, 1, len(frames), description="tokens"
    )
    slider.add_class("lk-flicker-step")
    naive, stable = widgets.HTML(), widgets.HTML()
    naive.add_class("lk-flicker-naive")
    stable.add_class("lk-flicker-stable")
    count = _readout("lk-flicker-count")

    def shown(upto: int) -> dict[str, Any]:
        so_far = frames[:upto]
        frame = so_far[-1]
        n_naive = sum(f.naive_rewrote for f in so_far)
        n_stable = sum(f.stable_rewrote for f in so_far)
        return {
            "naive": views.Html(
                f'<b>naive</b><div style="{_BOX_STYLE}">{render.to_html(frame.naive)}</div>'
            ),
            "stable": views.Html(
                f'<b>stable</b><div style="{_BOX_STYLE}">{render.to_html(frame.stable)}</div>'
            ),
            "count": f"after {frame.step} tokens: naive rewrote the screen {n_naive} times,"
            f" stable {n_stable}",
        }

    bind({"upto": slider}, shown, {"naive": naive, "stable": stable, "count": count})
    children = [slider, widgets.HBox([naive, stable]), count]
    return Explorer(children, css_class="lk-flicker-demo", title="flicker demo")
