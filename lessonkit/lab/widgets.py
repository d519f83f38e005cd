"""The explorers: thin front-ends over the lesson modules' readouts functions.

Each explorer is controls bound by one helper, ``lessonkit.lab.binding.bind``, to one
pure readouts function in its lesson module (``lesson01.timeline_readouts`` and so
on), and returned as an ``Explorer`` box whose twin ("Run this cell to open ...") is
built from the same readouts at the starting values. Tests call those functions
headless. Sliders and number boxes are the course's own (lessonkit.lab.controls): each
carries its name for a screen reader and works from the keyboard. Live figures are
inline SVG (lessonkit.lab.svg), cheap enough to redraw on every slider tick.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable, Iterable
from typing import Any

import ipywidgets as widgets

from lessonkit.core import llm, practice, render
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, lesson05
from lessonkit.lab.binding import Explorer, Twinned, bind, figure, readout, readouts_named, styled
from lessonkit.lab.controls import NumberBox, Slider

# ---------------------------------------------------------------------------
# Lesson 01: the decode loop, the timeline, stopping early


def decode_loop_player(
    prompt: str = llm.RUNNING_PROMPT, *, max_tokens: int | None = None, index: int = 0
) -> Explorer:
    """Return the decode-loop player: Play steps through the passes of lesson01.decode_steps.

    CSS: lk-decode-explorer; slider lk-decode-pass; readout lk-decode-view (the tokens
    the pass reads and the one it writes). State: lesson01.decode_readouts.
    """
    steps = lesson01.decode_steps(prompt, max_tokens=max_tokens)
    readouts = functools.partial(lesson01.decode_readouts, steps=steps)
    step = styled(
        Slider(index, 0, len(steps) - 1, description="pass", play_interval_ms=800),
        "lk-decode-pass",
    )
    view = readout("lk-decode-view")
    bind({"index": step}, readouts, {"view": view})
    return Explorer(
        [step, view],
        css_class="lk-decode-explorer",
        title="decode loop",
        what="Press ▶ (Play pass) or move 'pass': each pass reads the prompt and the tokens"
        " so far and writes one token. As text, where it opens:",
        text=readouts(index)["text"],
    )


TIMELINE_SPEEDS = ("prefill_ms", "per_token_ms", "n_tokens", "latency_ms")


def timeline_explorer(
    *,
    prefill_ms: int = 300,
    per_token_ms: int = 40,
    n_tokens: int = 6,
    latency_ms: int = 0,
    t_ms: int = 400,
) -> Explorer:
    """Return the timeline explorer: four sliders, time t with Play, two screens, a plot, readouts.

    CSS: lk-timeline-explorer; sliders lk-prefill-ms, lk-per-token-ms, lk-n-tokens,
    lk-latency-ms, lk-t-ms; button lk-timeline-reset (every slider back to where it
    opened); panes lk-timeline-screens; plot lk-timeline-plot (SVG); readouts
    lk-timeline-t, -ttft, -blocking, -total, -visible. State: lesson01.timeline_readouts.
    """
    start = {"prefill_ms": prefill_ms, "per_token_ms": per_token_ms, "n_tokens": n_tokens}
    start |= {"latency_ms": latency_ms, "t_ms": t_ms}
    controls = {
        "prefill_ms": Slider(prefill_ms, 0, 3000, 10, description="prefill ms", unit="ms"),
        "per_token_ms": Slider(per_token_ms, 1, 200, 1, description="per token ms", unit="ms"),
        "n_tokens": Slider(n_tokens, 1, 1000, 1, description="tokens", unit="tokens"),
        "latency_ms": Slider(latency_ms, 0, 1000, 10, description="round trip ms", unit="ms"),
        "t_ms": Slider(t_ms, 0, 10**9, 1, description="t (ms)", unit="ms", play_interval_ms=100),
    }
    for name, slider in controls.items():
        styled(slider, "lk-" + name.replace("_", "-"))
    t = controls["t_ms"]
    reset = widgets.Button(description="reset the sliders", tooltip="back to where it opened")
    reset.add_class("lk-timeline-reset")
    reset.on_click(lambda _: [setattr(controls[name], "value", v) for name, v in start.items()])
    readouts = readouts_named("lk-timeline", ("t", "ttft", "blocking", "total", "visible"))
    screens, plot = readout("lk-timeline-screens"), figure("lk-timeline-plot")
    outputs = {**readouts, "screens": screens, "plot": plot}
    outputs |= {"t_max": (t, "max"), "t_step": (t, "step"), "t_ms": (t, "value")}
    bind(controls, lesson01.timeline_readouts, outputs)
    rows = [
        widgets.HBox([controls["prefill_ms"], controls["per_token_ms"]]),
        widgets.HBox([controls["n_tokens"], controls["latency_ms"]]),
        widgets.HBox([t, reset]),
        screens,
        widgets.HBox([readouts["ttft"], readouts["blocking"], readouts["total"]]),
        widgets.HBox([readouts["t"], readouts["visible"]]),
        plot,
    ]
    return Explorer(
        rows,
        css_class="lk-timeline-explorer",
        title="timeline explorer",
        what="Sliders for prefill, time per token, number of tokens and network round trip;"
        " ▶ runs the clock t, 'reset the sliders' goes back to the start. Below, as text, the"
        " frame it opens on:",
        text=lesson01.timeline_readouts(**start)["text"],
    )


def cancel_explorer(
    *, n_tokens: int = 500, prefill_ms: int = 300, per_token_ms: int = 40, cancel_at_ms: int = 2000
) -> Explorer:
    """Return the stop-early explorer: a stop-time slider, a price, and what stopping saves.

    CSS: lk-cancel-explorer; slider lk-cancel-at-ms; price lk-cancel-price; plot
    lk-cancel-plot (SVG); readouts lk-cancel-generated, -saved, -time, -cost, -seen.
    State: lesson01.cancel_readouts.
    """
    options = {"n_tokens": n_tokens, "prefill_ms": prefill_ms, "per_token_ms": per_token_ms}
    readouts = functools.partial(lesson01.cancel_readouts, **options)
    total_ms = int(lesson01.timeline_view(0, **options).timings.total_ms)
    at = Slider(cancel_at_ms, 0, total_ms, 50, description="stop at ms", unit="ms")
    price = NumberBox(10.0, 0, 1000, 0.5, description="$ per M output tokens", unit="dollars")
    styled(at, "lk-cancel-at-ms")
    styled(price, "lk-cancel-price")
    lines = readouts_named("lk-cancel", ("seen", "generated", "saved", "time", "cost"))
    plot = figure("lk-cancel-plot")
    bind({"cancel_at_ms": at, "usd_per_million_tokens": price}, readouts, {**lines, "plot": plot})
    return Explorer(
        [widgets.HBox([at, price]), *lines.values(), plot],
        css_class="lk-cancel-explorer",
        title="stop-early explorer",
        what="Slide the moment the user presses Stop, or change the price: what stopping there"
        " saves. As text, where it opens:",
        text=readouts(cancel_at_ms)["text"],
    )


# ---------------------------------------------------------------------------
# Lesson 02: the wire inspector, the five-step walkthrough


def wire_inspector(dialect: str = "openai", index: int = 1) -> Explorer:
    """Return the wire inspector: pick a dialect, step through the writes of the same answer.

    CSS: lk-wire-inspector; dialect buttons lk-dialect; slider lk-wire-write; bytes
    lk-wire-view (fields coloured, the current write marked); readouts lk-wire-meaning
    (what this write means: delta, finish reason, usage, end marker), lk-wire-screen
    (the text on screen after it). State: lesson02.wire_readouts.
    """
    readouts = functools.partial(lesson02.wire_readouts, rows=lesson02.dialect_rows())
    choice = widgets.ToggleButtons(options=list(lesson02.DIALECTS), value=dialect)
    choice.add_class("lk-dialect")
    write = styled(Slider(index, 0, 100, description="write", play_interval_ms=700),
                   "lk-wire-write")  # fmt: skip
    view = readout("lk-wire-view")
    meaning, screen = readout("lk-wire-meaning"), readout("lk-wire-screen")
    bind(
        {"dialect": choice, "upto": write},
        readouts,
        {
            "last": (write, "max"),
            "upto": (write, "value"),
            "view": view,
            "meaning": meaning,
            "screen": screen,
        },
    )
    return Explorer(
        [choice, write, meaning, screen, view],
        css_class="lk-wire-inspector",
        title="wire inspector",
        what="Pick a dialect (lesson, openai, anthropic, responses) and step through its writes:"
        " the bytes, what each write means, the screen after it. As text, the"
        f" {dialect} stream up to the write it opens on:",
        text=readouts(dialect, index)["text"],
    )


def walkthrough_stepper(number: int = 1) -> Explorer:
    """Return the five-step walkthrough: Back/Next buttons and the bytes and screen of each step.

    CSS: lk-walkthrough; buttons lk-walk-back, lk-walk-next (disabled at the ends);
    slider lk-walk-step; readouts lk-walk-view (title, bytes, explanation), lk-walk-screen.
    State: lesson02.walkthrough_readouts.
    """
    steps = lesson02.walkthrough_steps()
    readouts = functools.partial(lesson02.walkthrough_readouts, steps=steps)
    step = styled(Slider(number, 1, len(steps), description="step"), "lk-walk-step")
    back, forward = widgets.Button(description="◀ back"), widgets.Button(description="next ▶")
    back.add_class("lk-walk-back")
    forward.add_class("lk-walk-next")
    view, screen = readout("lk-walk-view"), readout("lk-walk-screen")
    back.on_click(lambda _: setattr(step, "value", max(step.min, step.value - 1)))
    forward.on_click(lambda _: setattr(step, "value", min(step.max, step.value + 1)))
    outputs = {"view": view, "screen": screen, "first": (back, "disabled")}
    outputs["last"] = (forward, "disabled")
    bind({"number": step}, readouts, outputs)
    return Explorer(
        [widgets.HBox([back, step, forward]), view, screen],
        css_class="lk-walkthrough",
        title="five-step walkthrough",
        what="◀ back and next ▶ walk from the request to the end marker: the bytes of each step"
        " and the screen after it. As text, all five steps:",
        text="\n\n".join(readouts(n)["text"] for n in range(1, len(steps) + 1)),
    )


# ---------------------------------------------------------------------------
# Lessons 03-05: the arrival stepper, UTF-8 cuts, drops, predictions, flicker


def arrival_stepper(
    wire: bytes | None = None, *, positions_text: str | None = None, chunk_bytes: int = 16
) -> Explorer:
    """Return the arrival stepper: cut the wire (even chunks or typed offsets), step through arrivals.

    One cutting mode at a time (ToggleButtons lk-cut-mode): "even chunks" shows the
    chunk-size slider (lk-chunk-size), "typed offsets" the offsets box (lk-cut-positions);
    the other control is hidden. Offsets that cannot be used are named in the cuts
    readout. Readouts (CSS classes): lk-stepper-cuts, lk-stepper-arrival,
    lk-stepper-events, lk-stepper-buffer, lk-stepper-screen. State:
    lesson03.stepper_readouts.
    """
    if wire is None:
        wire, cuts = lesson03.worked_example()
        positions_text = ", ".join(map(str, cuts)) if positions_text is None else positions_text
    positions_text = positions_text or ""
    readouts = functools.partial(lesson03.stepper_readouts, wire)
    start_mode = lesson03.CUT_MODES[1] if positions_text.strip() else lesson03.CUT_MODES[0]
    mode = widgets.ToggleButtons(options=list(lesson03.CUT_MODES), value=start_mode)
    mode.add_class("lk-cut-mode")
    size = styled(
        Slider(chunk_bytes, 1, len(wire), description="chunk bytes", unit="bytes"),
        "lk-chunk-size",
    )
    positions = styled(
        widgets.Text(positions_text, description="cut after bytes", placeholder="e.g. 19, 54"),
        "lk-cut-positions",
    )
    step = styled(Slider(1, 1, len(wire), description="arrival"), "lk-arrival-step")
    lines = readouts_named("lk-stepper", ("cuts", "arrival", "events", "buffer", "screen"))
    bind(
        {"mode": mode, "chunk_bytes": size, "positions_text": positions, "step": step},
        readouts,
        {
            **lines,
            "arrivals": (step, "max"),
            "step": (step, "value"),
            "size_display": (size.layout, "display"),
            "positions_display": (positions.layout, "display"),
        },
    )
    start = readouts(mode=start_mode, chunk_bytes=chunk_bytes, positions_text=positions_text)
    return Explorer(
        [mode, size, positions, step, *lines.values()],
        css_class="lk-arrival-stepper",
        title="arrival stepper",
        what="Cut the bytes into even chunks or after offsets you type, then step through the"
        " arrivals: the events each completes, the buffer and the screen. As text, arrival 1:",
        text=start["text"],
    )


def utf8_explorer(text: str = "café 🙂", cut_at_byte: int = 4) -> Explorer:
    """Return the UTF-8 explorer: cut a text's bytes anywhere and compare three ways to decode.

    The text box is lk-utf8-text, the cut slider lk-utf8-cut-at. Typing a new text keeps
    the cut where the learner put it: moved back only as far as the new text's end, and
    forward again when the text grows (bind keeps the learner's value). Readouts:
    lk-utf8-bytes, lk-utf8-cut, lk-utf8-per-chunk, lk-utf8-replace, lk-utf8-incremental.
    State: lesson03.utf8_readouts.
    """
    source = styled(widgets.Text(text, description="text"), "lk-utf8-text")
    cut = styled(
        Slider(cut_at_byte, 0, len(text.encode()), description="cut after byte", unit="bytes"),
        "lk-utf8-cut-at",
    )
    lines = readouts_named("lk-utf8", ("bytes", "cut", "per_chunk", "replace", "incremental"))
    bind(
        {"text": source, "cut_at_byte": cut},
        lesson03.utf8_readouts,
        {**lines, "cut_max": (cut, "max"), "cut_at_byte": (cut, "value")},
    )
    return Explorer(
        [source, cut, *lines.values()],
        css_class="lk-utf8-explorer",
        title="UTF-8 explorer",
        what="Type a text and slide the cut across its bytes: the two pieces decoded on their own,"
        " with errors='replace', and by an incremental decoder. As text, where it opens:",
        text=lesson03.utf8_readouts(text, cut_at_byte)["text"],
    )


def drop_explorer(wire: bytes | None = None, n_bytes: int = 70) -> Explorer:
    """Return the drop explorer: a drop-position slider, what is on screen, and the staircase.

    Readouts: lk-drop-position-readout, lk-drop-screen, lk-drop-complete, lk-drop-held;
    the staircase is an SVG in lk-drop-plot. State: lesson04.drop_readouts.
    """
    wire = practice.practice_wire() if wire is None else wire
    readouts = functools.partial(
        lesson04.drop_readouts, wire, lengths=lesson04.drop_staircase(wire)
    )
    position = styled(
        Slider(n_bytes, 0, len(wire), description="drop after", unit="bytes"), "lk-drop-position"
    )
    lines = {
        "position": readout("lk-drop-position-readout"),
        **readouts_named("lk-drop", ("screen", "complete", "held")),
    }
    plot = figure("lk-drop-plot")
    bind({"n_bytes": position}, readouts, {**lines, "plot": plot})
    return Explorer(
        [position, *lines.values(), plot],
        css_class="lk-drop-explorer",
        title="drop explorer",
        what="Slide the byte after which the connection dies: what the user keeps, whether it is"
        " complete, and what arrived but is held back. As text, where it opens:",
        text=readouts(n_bytes)["text"],
    )


SKIP_PREDICTION = lesson04.SKIP_PREDICTION


class Prediction(Twinned):
    """A "predict first" picker: a dropdown that starts on a placeholder; `value` is the pick."""

    def __init__(self, dropdown: widgets.Dropdown, css_class: str, choices: list[str]) -> None:
        super().__init__(
            [dropdown],
            css_class=css_class,
            headline="Run this cell, then pick your prediction before you run the next one.",
            what="The choices: " + " | ".join(choices),
        )
        self.dropdown = dropdown

    @property
    def value(self) -> str:
        """The prediction picked, or the placeholder while none is."""
        return self.dropdown.value

    @value.setter
    def value(self, choice: str) -> None:
        self.dropdown.value = choice

    @property
    def picked(self) -> bool:
        """True once the learner chose something (a prediction, or to skip predicting)."""
        return self.dropdown.value != lesson04.PREDICTION_PLACEHOLDER


def prediction_picker(choices: Iterable[str], *, css_class: str = "lk-prediction") -> Prediction:
    """Return a picker to record a prediction before a run; it starts on the placeholder.

    The last option lets the learner skip predicting. reveal_after(picker, ...) shows a
    run only once something was picked. The dropdown carries the CSS classes
    lk-prediction and `css_class`.
    """
    choices = list(choices)
    options = [lesson04.PREDICTION_PLACEHOLDER, *choices, SKIP_PREDICTION]
    dropdown = widgets.Dropdown(
        options=options,
        value=lesson04.PREDICTION_PLACEHOLDER,
        description="I predict",
        layout=widgets.Layout(width="max-content"),
    )
    dropdown.add_class("lk-prediction")
    if css_class != "lk-prediction":
        dropdown.add_class(css_class)
    return Prediction(dropdown, "lk-prediction-box", choices)


def reveal_after(
    prediction: Prediction, run: Callable[[], Any], *, answer: str | Callable[[Any], str]
) -> Twinned:
    """Return a box that shows what `run()` printed, but only once `prediction` has a pick.

    `run` is called now (an exception shows in the cell as usual) with its printing
    captured. `answer` is what the pick is compared with (lesson04.compare_prediction):
    a string, or a function of what `run()` returned (an Experiment's answer, read off
    the run, so the notebook never writes the answer down). The box shows the run and
    the verdict as soon as a prediction is picked, and follows later changes of the
    pick. CSS: lk-reveal (the box's readout). State: lesson04.reveal_readouts.
    """
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = run()
    expected = answer(result) if callable(answer) else answer
    readouts = functools.partial(
        lesson04.reveal_readouts, printed=printed.getvalue().rstrip("\n"), answer=expected
    )
    box = readout("lk-reveal")
    bind({"choice": prediction.dropdown}, readouts, {"shown": box})
    return Twinned(
        [box],
        css_class="lk-reveal-box",
        headline="Run this cell after you have picked a prediction above: its output shows here.",
        what="(Kept hidden until you predict, so the answer does not give itself away.)",
    )


def flicker_demo(tokens: Iterable[str] | None = None, step: int | None = None) -> Explorer:
    """Return the flicker demo: a token slider, the naive and the stable rendering side by side.

    Readouts: lk-flicker-naive and lk-flicker-stable (HTML), lk-flicker-count (rewrites so
    far for each renderer). State: lesson05.flicker_readouts.
    """
    frames = render.flicker_frames(
        render.split_tokens(render.FLICKER_ANSWER) if tokens is None else tokens
    )
    readouts = functools.partial(lesson05.flicker_readouts, frames=frames)
    start = len(frames) if step is None else step
    slider = styled(Slider(start, 1, len(frames), description="tokens"), "lk-flicker-step")
    naive, stable = widgets.HTML(), widgets.HTML()
    naive.add_class("lk-flicker-naive")
    stable.add_class("lk-flicker-stable")
    count = readout("lk-flicker-count")
    bind({"upto": slider}, readouts, {"naive": naive, "stable": stable, "count": count})
    return Explorer(
        [slider, widgets.HBox([naive, stable]), count],
        css_class="lk-flicker-demo",
        title="flicker demo",
        what="Slide through the tokens: the naive screen jumps where the stable one only grows."
        " As text, where it opens:",
        text=readouts(start)["text"],
    )
