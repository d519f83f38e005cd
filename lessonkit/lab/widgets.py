"""The explorers: thin ipywidgets front-ends over the lesson modules' pure functions.

Each explorer is controls bound to a pure readouts function by one helper,
``lessonkit.lab.binding.bind``, and returned as an ``Explorer`` box whose twin
("Run this cell to open ...") stands in where no widget can run. The state
functions live in the lesson modules (lessonkit.lab.lesson01 ... lesson05); tests
call them headless. Live figures are inline SVG (lessonkit.lab.svg): a slider tick
redraws in well under a millisecond in the kernel, so the page can follow it.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
from collections.abc import Callable, Iterable
from typing import Any

import ipywidgets as widgets

from lessonkit.core import llm, practice, render, timeline
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, svg, views
from lessonkit.lab.binding import (
    Explorer,
    Twinned,
    bind,
    figure,
    played,
    readout,
    readouts_named,
    styled,
)

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
    step = styled(widgets.IntSlider(index, 0, len(steps) - 1, description="pass"), "lk-decode-pass")
    view = readout("lk-decode-view")
    bind(
        {"index": step},
        lambda index: {"view": views.Html(views.decode_step_html(steps[index]))},
        {"view": view},
    )
    return Explorer(
        [played(step, 800), view],
        css_class="lk-decode-explorer",
        title="decode loop",
        what="Press ▶ or drag 'pass': each pass reads the prompt and the tokens so far and"
        " writes one token.",
    )


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


def timeline_readouts(t_ms: int, **speeds: float) -> dict[str, Any]:
    """Return everything the timeline explorer shows for these slider values."""
    t_max = int(lesson01.timeline_t_max_ms(**speeds))
    view = lesson01.timeline_view(min(t_ms, t_max), **speeds)
    return {
        **lesson01.timeline_readouts(view),
        "screens": views.Html(views.timeline_panes_html(view)),
        "plot": svg.timeline_svg(view),
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
    lk-latency-ms, lk-t-ms; panes lk-timeline-screens; plot lk-timeline-plot (SVG);
    readouts lk-timeline-t, -ttft, -blocking, -total, -visible (lesson01.timeline_readouts).
    """
    controls = {
        "prefill_ms": widgets.IntSlider(prefill_ms, 0, 3000, 10, description="prefill ms"),
        "per_token_ms": widgets.IntSlider(per_token_ms, 1, 200, 1, description="per token ms"),
        "n_tokens": widgets.IntSlider(n_tokens, 1, 1000, 1, description="tokens"),
        "latency_ms": widgets.IntSlider(latency_ms, 0, 1000, 10, description="round trip ms"),
    }
    for name, slider in controls.items():
        styled(slider, "lk-" + name.replace("_", "-"))
    t = styled(widgets.IntSlider(t_ms, 0, 10**9, 1, description="t (ms)"), "lk-t-ms")
    readouts = readouts_named("lk-timeline", ("t", "ttft", "blocking", "total", "visible"))
    screens, plot = readout("lk-timeline-screens"), figure("lk-timeline-plot")
    outputs = {**readouts, "screens": screens, "plot": plot, "t_max": (t, "max")}
    outputs["t_step"] = (t, "step")
    bind({**controls, "t_ms": t}, timeline_readouts, outputs)
    rows = [
        widgets.HBox([controls["prefill_ms"], controls["per_token_ms"]]),
        widgets.HBox([controls["n_tokens"], controls["latency_ms"]]),
        played(t, 100),
        screens,
        widgets.HBox([readouts["ttft"], readouts["blocking"], readouts["total"]]),
        widgets.HBox([readouts["t"], readouts["visible"]]),
        plot,
    ]
    speeds = {"prefill_ms": prefill_ms, "per_token_ms": per_token_ms, "n_tokens": n_tokens}
    start = lesson01.timeline_view(t_ms, latency_ms=latency_ms, **speeds)
    return Explorer(
        rows,
        css_class="lk-timeline-explorer",
        title="timeline explorer",
        what="Sliders for prefill, time per token, number of tokens and network round trip;"
        " ▶ runs the clock t. Below, as text, the frame it opens on:",
        text=lesson01.timeline_text(start),
    )


def cancel_explorer(
    *, n_tokens: int = 500, prefill_ms: int = 300, per_token_ms: int = 40, cancel_at_ms: int = 2000
) -> Explorer:
    """Return the stop-early explorer: a cancel-time slider and what stopping there saves.

    CSS: lk-cancel-explorer; slider lk-cancel-at-ms; price lk-cancel-price; plot
    lk-cancel-plot (SVG); readouts lk-cancel-generated, -saved, -time, -cost, -seen.
    """
    total = int(timeline.response_times(prefill_ms, per_token_ms, n_tokens).total_ms)
    at = styled(
        widgets.IntSlider(cancel_at_ms, 0, total, 50, description="stop at ms"), "lk-cancel-at-ms"
    )
    price = widgets.BoundedFloatText(10.0, min=0, max=1000, description="$ per M output tokens")
    styled(price, "lk-cancel-price")
    readouts = readouts_named("lk-cancel", ("seen", "generated", "saved", "time", "cost"))
    plot = figure("lk-cancel-plot")
    options = {"n_tokens": n_tokens, "prefill_ms": prefill_ms, "per_token_ms": per_token_ms}

    def shown(cancel_at_ms: int, usd_per_million_tokens: float) -> dict[str, Any]:
        view = lesson01.cancel_view(
            cancel_at_ms, usd_per_million_tokens=usd_per_million_tokens, **options
        )
        return {**lesson01.cancel_readouts(view), "plot": svg.cancel_svg(view)}

    bind(
        {"cancel_at_ms": at, "usd_per_million_tokens": price},
        shown,
        {**readouts, "plot": plot},
    )
    children = [widgets.HBox([at, price]), *readouts.values(), plot]
    return Explorer(
        children,
        css_class="lk-cancel-explorer",
        title="stop-early explorer",
        what="Slide the moment the user presses Stop, or change the price: what stopping there"
        " saves. As text, where it opens:",
        text=lesson01.cancel_text(lesson01.cancel_view(cancel_at_ms, **options)),
    )


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
    write = styled(widgets.IntSlider(index, 0, 100, description="write"), "lk-wire-write")
    view = readout("lk-wire-view")
    meaning, screen = readout("lk-wire-meaning"), readout("lk-wire-screen")
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
    children = [choice, played(write, 700), meaning, screen, view]
    return Explorer(
        children,
        css_class="lk-wire-inspector",
        title="wire inspector",
        what="Pick a dialect (lesson, openai, anthropic) and step through its writes: the bytes,"
        f" what each write means, the screen after it. As text, the {dialect} stream:",
        text=lesson02.wire_rows_text(rows_of(dialect), max_bytes=72),
    )


def walkthrough_stepper(number: int = 1) -> Explorer:
    """Return the five-step walkthrough: Back/Next buttons and the bytes and screen of each step.

    CSS: lk-walkthrough; buttons lk-walk-back, lk-walk-next (disabled at the ends);
    slider lk-walk-step; readouts lk-walk-view (title, bytes, explanation), lk-walk-screen.
    """
    steps = lesson02.walkthrough_steps()
    step = styled(widgets.IntSlider(number, 1, len(steps), description="step"), "lk-walk-step")
    back, forward = widgets.Button(description="◀ back"), widgets.Button(description="next ▶")
    back.add_class("lk-walk-back")
    forward.add_class("lk-walk-next")
    view, screen = readout("lk-walk-view"), readout("lk-walk-screen")

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
    return Explorer(
        children,
        css_class="lk-walkthrough",
        title="five-step walkthrough",
        what="◀ back and next ▶ walk from the request to the end marker: the bytes of each step"
        " and the screen after it. As text, all five steps:",
        text="\n\n".join(lesson02.walk_step_text(s) for s in steps),
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
    lk-stepper-events, lk-stepper-buffer, lk-stepper-screen; state from
    lesson03.stepper_readouts.
    """
    if wire is None:
        wire, cuts = lesson03.worked_example()
        positions_text = ", ".join(map(str, cuts)) if positions_text is None else positions_text
    positions_text = positions_text or ""
    start_mode = lesson03.CUT_MODES[1] if positions_text.strip() else lesson03.CUT_MODES[0]
    mode = widgets.ToggleButtons(options=list(lesson03.CUT_MODES), value=start_mode)
    mode.add_class("lk-cut-mode")
    size = styled(
        widgets.IntSlider(chunk_bytes, 1, len(wire), description="chunk bytes"), "lk-chunk-size"
    )
    positions = styled(
        widgets.Text(positions_text, description="cut after bytes", placeholder="e.g. 19, 54"),
        "lk-cut-positions",
    )
    step = styled(widgets.IntSlider(1, 1, len(wire), description="arrival"), "lk-arrival-step")
    readouts = readouts_named("lk-stepper", ("cuts", "arrival", "events", "buffer", "screen"))

    def shown(mode: str, chunk_bytes: int, positions_text: str, step: int) -> dict[str, Any]:
        values = lesson03.stepper_readouts(
            wire, chunk_bytes=chunk_bytes, positions_text=positions_text, step=step, mode=mode
        )
        typed = mode == lesson03.CUT_MODES[1]
        return {
            **values,
            "arrivals": int(values["arrivals"]),
            "size_display": "none" if typed else "",
            "positions_display": "" if typed else "none",
        }

    bind(
        {"mode": mode, "chunk_bytes": size, "positions_text": positions, "step": step},
        shown,
        {
            **readouts,
            "arrivals": (step, "max"),
            "size_display": (size.layout, "display"),
            "positions_display": (positions.layout, "display"),
        },
    )
    start = lesson03.stepper_readouts(
        wire, chunk_bytes=chunk_bytes, positions_text=positions_text, mode=start_mode
    )
    return Explorer(
        [mode, size, positions, step, *readouts.values()],
        css_class="lk-arrival-stepper",
        title="arrival stepper",
        what="Cut the bytes into even chunks or after offsets you type, then step through the"
        " arrivals: the events each completes, the buffer and the screen. As text, arrival 1:",
        text="\n".join(start[k] for k in ("cuts", "arrival", "events", "buffer", "screen")),
    )


def utf8_explorer(text: str = "café 🙂", cut_at_byte: int = 4) -> Explorer:
    """Return the UTF-8 explorer: cut a text's bytes anywhere and compare three ways to decode.

    The cut slider is lk-utf8-cut-at. Typing a new text keeps the cut where it was (moved back only as far as the new
    text's end, and forward again when the text grows). Readouts: lk-utf8-bytes,
    lk-utf8-cut, lk-utf8-per-chunk, lk-utf8-replace, lk-utf8-incremental; state from
    lesson03.utf8_readouts.
    """
    source = styled(widgets.Text(text, description="text"), "lk-utf8-text")
    cut = styled(
        widgets.IntSlider(cut_at_byte, 0, len(text.encode()), description="cut after byte"),
        "lk-utf8-cut-at",
    )
    readouts = readouts_named("lk-utf8", ("bytes", "cut", "per_chunk", "replace", "incremental"))
    wanted = {"cut": cut_at_byte, "fitting": False}

    def remember(change: dict) -> None:  # a move by the learner, not our own clamping
        if not wanted["fitting"]:
            wanted["cut"] = change["new"]

    def fit(change: dict) -> None:  # a new text: the same cut, within its bytes
        n_bytes = len(change["new"].encode())
        wanted["fitting"] = True
        try:
            if n_bytes > cut.max:
                cut.max = n_bytes
            cut.value = min(wanted["cut"], n_bytes)
            cut.max = n_bytes
        finally:
            wanted["fitting"] = False

    cut.observe(remember, names="value")
    source.observe(fit, names="value")
    bind(
        {"text": source, "cut_at_byte": cut},
        lambda text, cut_at_byte: lesson03.utf8_readouts(
            text, min(cut_at_byte, len(text.encode()))
        ),
        readouts,
    )
    return Explorer(
        [source, cut, *readouts.values()],
        css_class="lk-utf8-explorer",
        title="UTF-8 explorer",
        what="Type a text and slide the cut across its bytes: the two pieces decoded on their own,"
        " with errors='replace', and by an incremental decoder. As text, where it opens:",
        text=lesson03.format_utf8_frame(lesson03.utf8_frame(text, cut_at_byte)),
    )


def drop_explorer(wire: bytes | None = None, n_bytes: int = 70) -> Explorer:
    """Return the drop explorer: a drop-position slider, what is on screen, and the staircase.

    Readouts: lk-drop-position-readout, lk-drop-screen, lk-drop-complete, lk-drop-held;
    the staircase is an SVG in lk-drop-plot. State from lesson04.drop_readouts.
    """
    wire = practice.practice_wire() if wire is None else wire
    lengths = lesson04.drop_staircase(wire)
    position = styled(
        widgets.IntSlider(n_bytes, 0, len(wire), description="drop after"), "lk-drop-position"
    )
    readouts = {
        "position": readout("lk-drop-position-readout"),
        **readouts_named("lk-drop", ("screen", "complete", "held")),
    }
    plot = figure("lk-drop-plot")

    def shown(n_bytes: int) -> dict[str, Any]:
        return {**lesson04.drop_readouts(wire, n_bytes), "plot": svg.drop_svg(lengths, n_bytes)}

    bind({"n_bytes": position}, shown, {**readouts, "plot": plot})
    return Explorer(
        [position, *readouts.values(), plot],
        css_class="lk-drop-explorer",
        title="drop explorer",
        what="Slide the byte after which the connection dies: what the user keeps, whether it is"
        " complete, and what arrived but is held back. As text, where it opens:",
        text=lesson04.format_drop_frame(lesson04.drop_frame(wire, n_bytes)),
    )


SKIP_PREDICTION = "(no prediction: just show me the run)"


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


def reveal_after(prediction: Prediction, run: Callable[[], Any], *, answer: str) -> Twinned:
    """Return a box that shows what `run()` printed, but only once `prediction` has a pick.

    `run` is called now (an exception shows in the cell as usual) with its printing
    captured; the box shows it, with the prediction compared to `answer`
    (lesson04.compare_prediction), as soon as a prediction is picked, and follows
    later changes of the pick. CSS: lk-reveal (the box's readout).
    """
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run()
    output = printed.getvalue().rstrip("\n")
    box = readout("lk-reveal")

    def shown(choice: str) -> dict[str, Any]:
        if choice == lesson04.PREDICTION_PLACEHOLDER:
            waiting = "Pick a prediction above (or choose to skip it): the run shows here then."
            return {"shown": views.Html(f'<i style="color:#555">{html.escape(waiting)}</i>')}
        guess = "" if choice == SKIP_PREDICTION else choice
        verdict = lesson04.compare_prediction(guess, answer)
        return {
            "shown": views.Html(
                '<pre style="margin:0;white-space:pre-wrap">'
                f"{html.escape(output)}</pre><div><b>{html.escape(verdict)}</b></div>"
            )
        }

    bind({"choice": prediction.dropdown}, shown, {"shown": box})
    return Twinned(
        [box],
        css_class="lk-reveal-box",
        headline="Run this cell after you have picked a prediction above: its output shows here.",
        what="(Kept hidden until you predict, so the answer does not give itself away.)",
    )


_BOX_STYLE = "white-space: pre-wrap; border: 1px solid #999; padding: 4px; min-height: 6em"


def flicker_demo(tokens: Iterable[str] | None = None, step: int | None = None) -> Explorer:
    """Return the flicker demo: a token slider, the naive and the stable rendering side by side.

    Readouts: lk-flicker-naive and lk-flicker-stable (HTML), lk-flicker-count (rewrites so
    far for each renderer). State from render.flicker_frames.
    """
    frames = render.flicker_frames(
        render.split_tokens(render.FLICKER_ANSWER) if tokens is None else tokens
    )
    slider = styled(
        widgets.IntSlider(
            len(frames) if step is None else step, 1, len(frames), description="tokens"
        ),
        "lk-flicker-step",
    )
    naive, stable = widgets.HTML(), widgets.HTML()
    naive.add_class("lk-flicker-naive")
    stable.add_class("lk-flicker-stable")
    count = readout("lk-flicker-count")

    def count_text(upto: int) -> str:
        so_far = frames[:upto]
        n_naive = sum(f.naive_rewrote for f in so_far)
        n_stable = sum(f.stable_rewrote for f in so_far)
        return (
            f"after {so_far[-1].step} tokens: naive rewrote the screen {n_naive} times,"
            f" stable {n_stable}"
        )

    def shown(upto: int) -> dict[str, Any]:
        frame = frames[upto - 1]
        return {
            "naive": views.Html(
                f'<b>naive</b><div style="{_BOX_STYLE}">{render.to_html(frame.naive)}</div>'
            ),
            "stable": views.Html(
                f'<b>stable</b><div style="{_BOX_STYLE}">{render.to_html(frame.stable)}</div>'
            ),
            "count": count_text(upto),
        }

    bind({"upto": slider}, shown, {"naive": naive, "stable": stable, "count": count})
    start = frames[slider.value - 1]
    return Explorer(
        [slider, widgets.HBox([naive, stable]), count],
        css_class="lk-flicker-demo",
        title="flicker demo",
        what="Slide through the tokens: the naive screen jumps where the stable one only grows."
        " As text, where it opens:",
        text=f"naive : {render.to_text(start.naive)}\nstable: {render.to_text(start.stable)}\n"
        + count_text(slider.value),
    )
