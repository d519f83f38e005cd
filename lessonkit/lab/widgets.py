"""Thin ipywidgets front-ends for the explorers: read controls, call a pure function, draw.

The state functions live in lessonkit.explore and lessonkit.timeline.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterable

import ipywidgets as widgets
from IPython.display import Image

from lessonkit.lab import plots
from lessonkit.core import llm, practice, render, timeline
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, views

# ---------------------------------------------------------------------------
# Lessons 03-05: arrival stepper, UTF-8 explorer, drop explorer, predictions, flicker
# ---------------------------------------------------------------------------


def _readout(css_class: str) -> widgets.HTML:
    """Return an empty readout: an HTML widget with a stable CSS class for browser tests."""
    readout = widgets.HTML(layout=widgets.Layout(margin="0 1.5em 0 0"))  # room between readouts
    readout.add_class("lk-readout")
    readout.add_class(css_class)
    return readout


def _show(readout: widgets.HTML, text: str) -> None:
    readout.value = (
        f'<span style="white-space: pre-wrap; font-family: monospace">{html.escape(text)}</span>'
    )


def _png(fig) -> Image:
    """Return a matplotlib Figure as a PNG image object (no pyplot, no inline backend needed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return Image(data=buffer.getvalue(), format="png")


def arrival_stepper(
    wire: bytes | None = None, *, positions_text: str | None = None, chunk_bytes: int = 16
) -> widgets.VBox:
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
    names = ("cuts", "arrival", "events", "buffer", "screen")
    readouts = {name: _readout(f"lk-stepper-{name}") for name in names}

    def update(_change=None) -> None:
        values = lesson03.stepper_readouts(
            wire, chunk_bytes=size.value, positions_text=positions.value, step=step.value
        )
        step.max = int(values["arrivals"])
        for name in names:
            _show(readouts[name], values[name])

    for control in (size, positions, step):
        control.observe(update, names="value")
    update()
    box = widgets.VBox([size, positions, step, *readouts.values()])
    box.add_class("lk-arrival-stepper")
    return box


def utf8_explorer(text: str = "café 🙂", cut_at_byte: int = 4) -> widgets.VBox:
    """Return the UTF-8 explorer: cut a text's bytes anywhere and compare three ways to decode.

    Readouts: lk-utf8-bytes, lk-utf8-cut, lk-utf8-per-chunk, lk-utf8-replace,
    lk-utf8-incremental; state from lesson03.utf8_readouts.
    """
    source = widgets.Text(text, description="text")
    source.add_class("lk-utf8-text")
    cut = widgets.IntSlider(cut_at_byte, 0, len(text.encode()), description="cut after byte")
    cut.add_class("lk-utf8-cut")
    names = {"bytes": "bytes", "cut": "cut", "per_chunk": "per-chunk", "replace": "replace"}
    names["incremental"] = "incremental"
    readouts = {key: _readout(f"lk-utf8-{suffix}") for key, suffix in names.items()}

    def update(_change=None) -> None:
        cut.max = len(source.value.encode())
        values = lesson03.utf8_readouts(source.value, min(cut.value, cut.max))
        for key, readout in readouts.items():
            _show(readout, values[key])

    source.observe(update, names="value")
    cut.observe(update, names="value")
    update()
    box = widgets.VBox([source, cut, *readouts.values()])
    box.add_class("lk-utf8-explorer")
    return box


def drop_explorer(wire: bytes | None = None, n_bytes: int = 70) -> widgets.VBox:
    """Return the drop explorer: a drop-position slider, what is on screen, and the staircase plot.

    Readouts: lk-drop-position-readout, lk-drop-screen, lk-drop-complete, lk-drop-held;
    the plot sits in an Output with class lk-drop-plot. State from lesson04.drop_readouts.
    """
    wire = practice.practice_wire() if wire is None else wire
    lengths = lesson04.drop_staircase(wire)
    position = widgets.IntSlider(n_bytes, 0, len(wire), description="drop after")
    position.add_class("lk-drop-position")
    names = {"position": "position-readout", "screen": "screen", "complete": "complete"}
    names["held"] = "held"
    readouts = {key: _readout(f"lk-drop-{suffix}") for key, suffix in names.items()}
    plot = widgets.Output()
    plot.add_class("lk-drop-plot")

    def update(_change=None) -> None:
        values = lesson04.drop_readouts(wire, position.value)
        for key, readout in readouts.items():
            _show(readout, values[key])
        plot.outputs = ()
        fig = plots.plot_drop_staircase(lengths, mark_bytes=position.value)
        plot.append_display_data(_png(fig))

    position.observe(update, names="value")
    update()
    box = widgets.VBox([position, *readouts.values(), plot])
    box.add_class("lk-drop-explorer")
    return box


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


def flicker_demo(tokens: Iterable[str] | None = None, step: int | None = None) -> widgets.VBox:
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
    box_style = "white-space: pre-wrap; border: 1px solid #999; padding: 4px; min-height: 6em"

    def update(_change=None) -> None:
        shown = frames[: slider.value]
        frame = shown[-1]
        naive.value = f'<b>naive</b><div style="{box_style}">{render.to_html(frame.naive)}</div>'
        stable.value = f'<b>stable</b><div style="{box_style}">{render.to_html(frame.stable)}</div>'
        n_naive = sum(f.naive_rewrote for f in shown)
        n_stable = sum(f.stable_rewrote for f in shown)
        _show(
            count,
            f"after {frame.step} tokens: naive rewrote the screen {n_naive} times, stable {n_stable}",
        )

    slider.observe(update, names="value")
    update()
    box = widgets.VBox([slider, widgets.HBox([naive, stable]), count])
    box.add_class("lk-flicker-demo")
    return box


# ---------------------------------------------------------------------------
# Lessons 01-02: decode loop, timeline, stop early, wire inspector, five-step walkthrough
# ---------------------------------------------------------------------------


def _png_bytes(fig) -> bytes:
    """Return a matplotlib Figure rendered as PNG bytes, for an ipywidgets.Image."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def _image(css_class: str) -> widgets.Image:
    image = widgets.Image(format="png")
    image.add_class(css_class)
    return image


def _fill(readouts: dict[str, widgets.HTML], texts: dict[str, str]) -> None:
    for name, readout in readouts.items():
        _show(readout, texts[name])


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


def decode_loop_player(
    prompt: str = llm.RUNNING_PROMPT, *, max_tokens: int | None = None, index: int = 0
) -> widgets.VBox:
    """Return the decode-loop player: Play steps through the passes of lesson01.decode_steps.

    CSS: lk-decode-explorer; slider lk-decode-pass; readout lk-decode-view (the tokens
    the pass reads and the one it writes).
    """
    steps = lesson01.decode_steps(prompt, max_tokens=max_tokens)
    step = widgets.IntSlider(index, 0, len(steps) - 1, description="pass")
    step.add_class("lk-decode-pass")
    view = _readout("lk-decode-view")

    def update(_=None) -> None:
        view.value = views.decode_step_html(steps[step.value])

    step.observe(update, "value")
    update()
    box = widgets.VBox([_played(step, 800), view])
    box.add_class("lk-decode-explorer")
    return box


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


def timeline_explorer(
    *,
    prefill_ms: int = 300,
    per_token_ms: int = 40,
    n_tokens: int = 6,
    latency_ms: int = 0,
    t_ms: int = 400,
) -> widgets.VBox:
    """Return the timeline explorer: four sliders, Play for time t, two screens, a plot, readouts.

    CSS: lk-timeline-explorer; sliders lk-prefill-ms, lk-per-token-ms, lk-n-tokens,
    lk-latency-ms, lk-t-ms; panes lk-timeline-screens; plot lk-timeline-plot; readouts
    lk-timeline-t, -ttft, -blocking, -total, -visible (lesson01.timeline_readouts).
    """
    sliders = {
        "prefill_ms": widgets.IntSlider(prefill_ms, 0, 3000, 10, description="prefill ms"),
        "per_token_ms": widgets.IntSlider(per_token_ms, 1, 200, 1, description="per token ms"),
        "n_tokens": widgets.IntSlider(n_tokens, 1, 1000, 1, description="tokens"),
        "latency_ms": widgets.IntSlider(latency_ms, 0, 1000, 10, description="round trip ms"),
    }
    for name, slider in sliders.items():
        slider.add_class("lk-" + name.replace("_", "-"))
        slider.style.description_width = "initial"  # show "per token ms" in full
    t = widgets.IntSlider(t_ms, 0, 10**9, 1, description="t (ms)")
    t.add_class("lk-t-ms")
    screens = _readout("lk-timeline-screens")
    plot = _image("lk-timeline-plot")
    readouts = {
        k: _readout(f"lk-timeline-{k}") for k in ("t", "ttft", "blocking", "total", "visible")
    }

    # One full figure per change of speeds; a tick of t only moves the "now" marker
    # (plots.TimelinePlot), so Play's 100 ms ticks do not queue up behind drawing.
    state: dict = {"figure": None, "rescaling": False}

    def params() -> dict:
        return {name: slider.value for name, slider in sliders.items()}

    def show_time(_=None) -> None:
        if state["rescaling"]:  # t.max is moving: new_speeds draws once when it is done
            return
        view = lesson01.timeline_view(t.value, **params())
        _fill(readouts, lesson01.timeline_readouts(view))
        screens.value = views.timeline_panes_html(view)
        plot.value = state["figure"].png_at(view.t_ms)

    def new_speeds(_=None) -> None:
        t_max = int(lesson01.timeline_t_max_ms(**params()))
        state["rescaling"] = True
        try:
            t.max, t.step = t_max, _round_step(t_max // 100)
        finally:
            state["rescaling"] = False
        state["figure"] = plots.TimelinePlot(lesson01.timeline_view(t.value, **params()))
        show_time()

    for slider in sliders.values():
        slider.observe(new_speeds, "value")
    t.observe(show_time, "value")
    new_speeds()
    box = widgets.VBox(
        [
            widgets.HBox([sliders["prefill_ms"], sliders["per_token_ms"]]),
            widgets.HBox([sliders["n_tokens"], sliders["latency_ms"]]),
            _played(t, 100),
            screens,
            widgets.HBox([readouts["ttft"], readouts["blocking"], readouts["total"]]),
            widgets.HBox([readouts["t"], readouts["visible"]]),
            plot,
        ]
    )
    box.add_class("lk-timeline-explorer")
    return box


def cancel_explorer(
    *, n_tokens: int = 500, prefill_ms: int = 300, per_token_ms: int = 40, cancel_at_ms: int = 2000
) -> widgets.VBox:
    """Return the stop-early explorer: a cancel-time slider and what stopping there saves.

    CSS: lk-cancel-explorer; slider lk-cancel-at-ms; price lk-cancel-price; plot
    lk-cancel-plot; readouts lk-cancel-generated, -saved, -time, -cost, -seen.
    """
    total = int(timeline.response_times(prefill_ms, per_token_ms, n_tokens).total_ms)
    at = widgets.IntSlider(cancel_at_ms, 0, total, 50, description="stop at ms")
    at.add_class("lk-cancel-at-ms")
    price = widgets.BoundedFloatText(10.0, min=0, max=1000, description="$ / M tokens")
    price.add_class("lk-cancel-price")
    plot = _image("lk-cancel-plot")
    names = ("seen", "generated", "saved", "time", "cost")
    readouts = {k: _readout(f"lk-cancel-{k}") for k in names}
    options = {"n_tokens": n_tokens, "prefill_ms": prefill_ms, "per_token_ms": per_token_ms}

    def update(_=None) -> None:
        view = lesson01.cancel_view(at.value, usd_per_million_tokens=price.value, **options)
        _fill(readouts, lesson01.cancel_readouts(view))
        plot.value = _png_bytes(plots.plot_cancel(view))

    at.observe(update, "value")
    price.observe(update, "value")
    update()
    box = widgets.VBox([widgets.HBox([at, price]), *readouts.values(), plot])
    box.add_class("lk-cancel-explorer")
    return box


def wire_inspector(dialect: str = "openai", index: int = 1) -> widgets.VBox:
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

    def update(_=None) -> None:
        rows = lesson02.wire_rows(choice.value)
        row = rows[min(write.value, len(rows) - 1)]
        view.value = views.inspector_html(rows, write.value)
        _show(meaning, f"write {row.index} at {row.at_ms:.0f} ms: {lesson02.row_summary(row)}")
        _show(screen, f"screen: {row.screen!r}" + ("  (complete)" if row.done else ""))

    def switch(_=None) -> None:
        write.max = len(lesson02.wire_rows(choice.value)) - 1
        update()

    choice.observe(switch, "value")
    write.observe(update, "value")
    switch()
    box = widgets.VBox([choice, _played(write, 700), meaning, screen, view])
    box.add_class("lk-wire-inspector")
    return box


def walkthrough_stepper(number: int = 1) -> widgets.VBox:
    """Return the five-step walkthrough: Back/Next buttons and the bytes and screen of each step.

    CSS: lk-walkthrough; buttons lk-walk-back, lk-walk-next; slider lk-walk-step;
    readouts lk-walk-view (title, bytes, explanation), lk-walk-screen.
    """
    steps = lesson02.walkthrough_steps()
    step = widgets.IntSlider(number, 1, len(steps), description="step")
    step.add_class("lk-walk-step")
    back, forward = widgets.Button(description="◀ back"), widgets.Button(description="next ▶")
    back.add_class("lk-walk-back")
    forward.add_class("lk-walk-next")
    view, screen = _readout("lk-walk-view"), _readout("lk-walk-screen")

    def update(_=None) -> None:
        view.value = views.walk_step_html(steps[step.value - 1])
        _show(screen, f"on screen after step {step.value}: {steps[step.value - 1].screen!r}")

    back.on_click(lambda _: setattr(step, "value", max(step.min, step.value - 1)))
    forward.on_click(lambda _: setattr(step, "value", min(step.max, step.value + 1)))
    step.observe(update, "value")
    update()
    box = widgets.VBox([widgets.HBox([back, step, forward]), view, screen])
    box.add_class("lk-walkthrough")
    return box
