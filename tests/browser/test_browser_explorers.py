"""The explorer widgets respond in JupyterLab the way their pure state functions say.

One scratch notebook holds one cell per test, each building its own explorer, so the
tests share one kernel and one page but never each other's widgets. A test moves a
slider, presses Play or a button like a learner, and compares what the page shows with
the same pure function (lessonkit.lab, lessonkit.core.render) called here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from coursecontrols import play_button, press_key, shown_value, type_value
from explorer_reactions import REACTIONS, moves, reaction_ms
from labdriver import EXPLORERS, PAGE_WAIT_S, expect_slider_end, html_text, normalized, wait_for
from playwright.sync_api import expect

from lessonkit.core import practice, render
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, views

pytestmark = pytest.mark.browser

# One cell per test: the explorer each test drives, built the way the lessons build it.
CELLS = {
    **EXPLORERS,
    "timeline_play": "lw.timeline_explorer(t_ms=0)",
    "controls_timeline": "lw.timeline_explorer()",
    "controls_cancel": "lw.cancel_explorer()",
    "controls_wire": "lw.wire_inspector()",
    "controls_stepper": "lw.arrival_stepper()",
    "controls_utf8": "lw.utf8_explorer()",
    **{f"reaction {name}": reaction.source for name, reaction in REACTIONS.items()},
    "field_table": "from IPython.display import HTML\n"
    "from lessonkit.lab import lesson02, views\n"
    "HTML(views.field_rows_html(lesson02.sse_field_rows()))",
    "walk_step": "HTML(views.walk_step_html(lesson02.walkthrough_steps()[2]))",
}
# Cells that show HTML, not an explorer.
HTML_CELLS = ("field_table", "walk_step")


def test_every_explorer_in_lessonkit_widgets_has_an_interaction_test() -> None:
    from lessonkit.lab import widgets

    explorers = {
        name
        for name, value in vars(widgets).items()
        if inspect.isfunction(value) and value.__module__ == widgets.__name__
        and value.__annotations__.get("return") in ("Explorer", widgets.Explorer)
    }  # fmt: skip
    driven = {
        match.group(1) for source in CELLS.values() if (match := re.match(r"lw\.(\w+)\(", source))
    }
    assert len(explorers) == 9 and explorers - driven == set(), "explorers no browser test drives"


@dataclass
class ExplorerNotebook:
    """The opened notebook: the page and the output area of each named cell."""

    page: Any
    outputs: dict[str, Any]

    def output(self, name: str) -> Any:
        """Return the output area of the cell that built explorer `name`."""
        return self.outputs[name]


@pytest.fixture(scope="module")
def explorer_notebook(lab_page: Any, explorer_cells: Any) -> Iterator[ExplorerNotebook]:
    """The explorers' notebook, run once in the module's page, every widget rendered."""
    with explorer_cells("explorers.ipynb", CELLS, without_widgets=HTML_CELLS) as outputs:
        yield ExplorerNotebook(lab_page.page, outputs)


@pytest.fixture
def explorers(explorer_notebook: ExplorerNotebook, page: Any) -> ExplorerNotebook:
    """The explorers' notebook for one test (screenshot saved if the test fails)."""
    return explorer_notebook


def expect_readouts(output: Any, prefix: str, expected: dict[str, str]) -> None:
    """Wait until each readout `.{prefix}{name}` shows exactly expected[name]."""
    for name, text in expected.items():
        readout = output.locator(f".{prefix}{name} .widget-html-content")
        expect(readout).to_have_text(normalized(text))


def expect_html(locator: Any, markup: str) -> None:
    """Wait until locator shows the text of markup (the HTML a pure function returned)."""
    expect(locator).to_have_text(html_text(markup))


def watch_texts(locator: Any, *, until: Any, timeout_s: float = PAGE_WAIT_S) -> list[str]:
    """Return the distinct texts locator showed, in order, while polling until until() holds."""
    seen: list[str] = []

    def record() -> bool:
        text = normalized(locator.text_content() or "")
        if not seen or seen[-1] != text:
            seen.append(text)
        return until(seen)

    wait_for(record, timeout_s=timeout_s, interval_s=0.03, what=f"texts to change; saw {seen}")
    return seen


def shown_ms(text: str) -> int:
    """Return the number in a readout like 't = 1,240 ms'."""
    return int(re.search(r"([\d,]+) ms", text).group(1).replace(",", ""))


# ---------------------------------------------------------------------------------------------
# Lesson 01: timeline, stop early, decode loop


def timeline_shows_time_it_reads(out: Any, **params: int) -> bool:
    """True when every timeline readout matches the pure view at the time the t readout shows.

    The time slider snaps its value to its step in the browser, so the time is read back
    from the page rather than assumed.
    """
    t_text = out.locator(".lk-timeline-t .widget-html-content").text_content() or ""
    if not re.search(r"[\d,]+ ms", t_text):
        return False
    readouts = lesson01.timeline_readouts(shown_ms(t_text), **params)
    readouts = {name: readouts[name] for name in ("t", "ttft", "blocking", "total", "visible")}
    shown = {
        name: normalized(out.locator(f".lk-timeline-{name} .widget-html-content").text_content())
        for name in readouts
    }
    return shown == {name: normalized(text) for name, text in readouts.items()}


def test_timeline_readouts_show_the_new_ttft_and_total_when_prefill_moves(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("timeline")
    wait_for(
        lambda: timeline_shows_time_it_reads(out), timeout_s=PAGE_WAIT_S, what="the first frame"
    )
    plot = out.locator(".lk-timeline-plot .widget-html-content")
    before = plot.inner_html()

    type_value(out.locator(".lk-prefill-ms"), 500)

    expected = lesson01.timeline_readouts(0, prefill_ms=500)
    ttft = out.locator(".lk-timeline-ttft .widget-html-content")
    expect(ttft).to_have_text(expected["ttft"])
    expect(out.locator(".lk-timeline-total .widget-html-content")).to_have_text(expected["total"])
    wait_for(
        lambda: timeline_shows_time_it_reads(out, prefill_ms=500),
        timeout_s=PAGE_WAIT_S,
        what="the readouts for prefill 500 ms",
    )
    view = lesson01.timeline_view(
        shown_ms(out.locator(".lk-timeline-t").text_content()), prefill_ms=500
    )
    blocking, streaming = lesson01.timeline_panes(view)
    expect(out.locator(".lk-pane-streaming")).to_contain_text(normalized(streaming))
    expect(out.locator(".lk-pane-blocking")).to_contain_text(normalized(blocking))
    wait_for(
        lambda: plot.inner_html() != before, timeout_s=PAGE_WAIT_S, what="the plot to be redrawn"
    )


def test_timeline_play_moves_time_forward_and_the_screens_follow(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("timeline_play")
    t_readout = out.locator(".lk-timeline-t .widget-html-content")
    expect(t_readout).to_have_text("t = 0 ms")

    play = play_button(out.locator(".lk-t-ms"))
    play.click()  # Play
    seen = watch_texts(t_readout, until=lambda texts: len(texts) >= 4)
    play.click()  # Pause

    times = [shown_ms(text) for text in seen]
    assert times == sorted(times) and len(set(times)) >= 4, f"t did not advance: {seen}"
    wait_for(
        lambda: timeline_shows_time_it_reads(out),
        timeout_s=PAGE_WAIT_S,
        what="the readouts to match the time Play reached",
    )


def test_cancel_readouts_show_what_stopping_at_the_new_time_saves(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("cancel")
    expect_readouts(out, "lk-cancel-", _cancel_lines(2000))

    type_value(out.locator(".lk-cancel-at-ms"), 5000)
    expect_readouts(out, "lk-cancel-", _cancel_lines(5000))

    type_value(out.locator(".lk-cancel-price"), 25)
    expect_readouts(out, "lk-cancel-", _cancel_lines(5000, 25.0))


def _cancel_lines(cancel_at_ms: int, usd: float = 10.0) -> dict[str, str]:
    readouts = lesson01.cancel_readouts(cancel_at_ms, usd)
    return {name: readouts[name] for name in ("seen", "generated", "saved", "time", "cost")}


def test_decode_loop_play_steps_through_the_passes(explorers: ExplorerNotebook) -> None:
    out = explorers.output("decode")
    steps = lesson01.decode_steps()
    view = out.locator(".lk-decode-view .widget-html-content")
    expected_texts = [
        html_text(lesson01.decode_readouts(i, steps=steps)["view"]) for i in range(len(steps))
    ]
    expect(view).to_have_text(expected_texts[0])

    play = play_button(out.locator(".lk-decode-pass"))
    play.click()
    seen = watch_texts(view, until=lambda texts: len(texts) >= 3)
    play.click()

    assert all(text in expected_texts for text in seen), f"unexpected pass views: {seen}"
    passes = [expected_texts.index(text) for text in seen]
    assert passes == sorted(passes), f"passes went backwards: {passes}"

    def matches_slider() -> bool:
        shown = int(shown_value(out.locator(".lk-decode-pass")))
        return normalized(view.text_content()) == expected_texts[shown]

    wait_for(matches_slider, timeout_s=PAGE_WAIT_S, what="the view to show the pass on the slider")


# ---------------------------------------------------------------------------------------------
# Lesson 02: wire inspector, five-step walkthrough


def test_wire_inspector_shows_the_chosen_dialects_write_and_screen(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("wire")
    rows = lesson02.wire_rows("anthropic")
    out.locator(".lk-dialect button", has_text="anthropic").click()
    # The box takes a typed write up to the slider's end, which the kernel sets per dialect.
    expect_slider_end(out.locator(".lk-wire-write"), len(rows) - 1)
    type_value(out.locator(".lk-wire-write"), 4)

    row = rows[4]
    meaning = out.locator(".lk-wire-meaning .widget-html-content")
    expect(meaning).to_contain_text(normalized(lesson02.row_summary(row)))
    expect(meaning).to_contain_text(f"write 4 at {row.at_ms:.0f} ms")
    screen = out.locator(".lk-wire-screen .widget-html-content")
    expect(screen).to_contain_text(normalized(repr(row.screen)))
    expect_html(out.locator(".lk-wire-view .widget-html-content"), views.inspector_html(rows, 4))


def test_walkthrough_next_and_back_buttons_change_the_step_shown(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("walkthrough")
    steps = lesson02.walkthrough_steps()
    view = out.locator(".lk-walk-view .widget-html-content")
    expect_html(view, views.walk_step_html(steps[0]))

    for number in (2, 3, 4):
        out.locator(".lk-walk-next").click()
        expect_html(view, views.walk_step_html(steps[number - 1]))
    screen = out.locator(".lk-walk-screen .widget-html-content")
    expect(screen).to_contain_text(normalized(repr(steps[3].screen)))

    out.locator(".lk-walk-back").click()
    expect_html(view, views.walk_step_html(steps[2]))


# ---------------------------------------------------------------------------------------------
# Lessons 03-05: arrival stepper, UTF-8 explorer, drop explorer, flicker demo


def test_arrival_stepper_follows_typed_cut_positions_and_the_step_slider(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("stepper")
    wire, _ = lesson03.worked_example()
    positions = out.locator(".lk-cut-positions input")
    positions.fill("10, 30")
    type_value(out.locator(".lk-arrival-step"), 2)

    expect_readouts(out, "lk-stepper-", _stepper_lines(wire, "10, 30", 2))
    expect_slider_end(out.locator(".lk-arrival-step"), 3)  # the kernel's count of the arrivals

    press_key(out.locator(".lk-arrival-step"), "ArrowRight")
    expect_readouts(out, "lk-stepper-", _stepper_lines(wire, "10, 30", 3))


def _stepper_lines(wire: bytes, positions_text: str, step: int) -> dict[str, str]:
    readouts = lesson03.stepper_readouts(
        wire, chunk_bytes=16, positions_text=positions_text, step=step
    )
    return {name: readouts[name] for name in ("cuts", "arrival", "events", "buffer", "screen")}


@pytest.mark.parametrize("cut_at_byte", [3, 4, 7])
def test_utf8_explorer_readouts_follow_the_cut(
    explorers: ExplorerNotebook, cut_at_byte: int
) -> None:
    out = explorers.output("utf8")
    type_value(out.locator(".lk-utf8-cut-at"), cut_at_byte)
    expect_readouts(out, "lk-utf8-", _utf8_expected("café 🙂", cut_at_byte))


def _utf8_expected(text: str, cut_at_byte: int) -> dict[str, str]:
    names = {"bytes": "bytes", "cut": "cut", "per_chunk": "per-chunk", "replace": "replace"}
    names["incremental"] = "incremental"
    values = lesson03.utf8_readouts(text, cut_at_byte)
    return {suffix: values[key] for key, suffix in names.items()}


def test_drop_explorer_shows_the_text_and_complete_flag_for_the_new_drop_point(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("drop")
    wire = practice.practice_wire()
    plot = out.locator(".lk-drop-plot svg")
    expect(plot).to_have_count(1)
    before = plot.inner_html()

    type_value(out.locator(".lk-drop-position"), 40)
    expect_readouts(out, "lk-drop-", _drop_expected(wire, 40))
    wait_for(
        lambda: plot.inner_html() != before, timeout_s=PAGE_WAIT_S, what="the staircase to move"
    )

    press_key(out.locator(".lk-drop-position"), "End")
    expect_readouts(out, "lk-drop-", _drop_expected(wire, len(wire)))
    expect(out.locator(".lk-drop-complete .widget-html-content")).to_have_text("complete=True")


def _drop_expected(wire: bytes, n_bytes: int) -> dict[str, str]:
    names = {"position": "position-readout", "screen": "screen", "complete": "complete"}
    names["held"] = "held"
    values = lesson04.drop_readouts(wire, n_bytes)
    return {suffix: values[key] for key, suffix in names.items()}


def test_flicker_demo_shows_both_renderings_of_the_tokens_so_far(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("flicker")
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    step = min(8, len(frames))
    type_value(out.locator(".lk-flicker-step"), step)

    frame = frames[step - 1]
    naive = out.locator(".lk-flicker-naive .widget-html-content")
    stable = out.locator(".lk-flicker-stable .widget-html-content")
    expect(naive).to_have_text("naive" + html_text(render.to_html(frame.naive)))
    expect(stable).to_have_text("stable" + html_text(render.to_html(frame.stable)))
    n_naive = sum(f.naive_rewrote for f in frames[:step])
    n_stable = sum(f.stable_rewrote for f in frames[:step])
    expect(out.locator(".lk-flicker-count .widget-html-content")).to_contain_text(
        f"naive rewrote the screen {n_naive} times, stable {n_stable}"
    )


# ---------------------------------------------------------------------------------------------
# Every control changes the view, or says why it cannot


def _inner(out: Any, selector: str) -> str:
    return out.locator(selector).first.inner_html()


def _click_toggle(out: Any, group: str, label: str) -> None:
    out.locator(f"{group} button", has_text=label).click()


def _play(out: Any) -> None:
    play_button(out.locator(".lk-wire-write")).click()  # Play: it stops by itself at the end


def _fill_and_enter(locator: Any, text: str) -> None:
    locator.fill(text)
    locator.press("Enter")


CONTROL_CHANGES = [
    # (cell, control, what the learner does, the element that must change)
    ("controls_timeline", "prefill", lambda o: type_value(o.locator(".lk-prefill-ms"), 500),
     ".lk-timeline-plot"),
    ("controls_timeline", "per token", lambda o: type_value(o.locator(".lk-per-token-ms"), 60),
     ".lk-timeline-total"),
    ("controls_timeline", "tokens", lambda o: type_value(o.locator(".lk-n-tokens"), 12),
     ".lk-timeline-total"),
    ("controls_timeline", "round trip", lambda o: type_value(o.locator(".lk-latency-ms"), 100),
     ".lk-timeline-ttft"),
    ("controls_timeline", "t", lambda o: type_value(o.locator(".lk-t-ms"), 900),
     ".lk-timeline-screens"),
    ("controls_cancel", "stop at", lambda o: type_value(o.locator(".lk-cancel-at-ms"), 5000),
     ".lk-cancel-plot"),
    ("controls_cancel", "price", lambda o: type_value(o.locator(".lk-cancel-price"), 25),
     ".lk-cancel-cost"),
    ("controls_wire", "dialect", lambda o: _click_toggle(o, ".lk-dialect", "anthropic"),
     ".lk-wire-view"),
    ("controls_wire", "write", lambda o: type_value(o.locator(".lk-wire-write"), 4),
     ".lk-wire-meaning"),
    ("controls_wire", "play", _play, ".lk-wire-meaning"),
    ("controls_stepper", "cutting mode", lambda o: _click_toggle(o, ".lk-cut-mode", "even chunks"),
     ".lk-stepper-cuts"),
    ("controls_stepper", "chunk bytes", lambda o: type_value(o.locator(".lk-chunk-size"), 7),
     ".lk-stepper-cuts"),
    ("controls_stepper", "arrival", lambda o: type_value(o.locator(".lk-arrival-step"), 2),
     ".lk-stepper-arrival"),
    ("controls_stepper", "typed offsets", lambda o: (
        _click_toggle(o, ".lk-cut-mode", "typed offsets"),
        _fill_and_enter(o.locator(".lk-cut-positions input"), "5, 50"),
     ), ".lk-stepper-cuts"),
    ("controls_utf8", "text", lambda o: _fill_and_enter(o.locator(".lk-utf8-text input"), "naïve"),
     ".lk-utf8-bytes"),
    ("controls_utf8", "cut", lambda o: type_value(o.locator(".lk-utf8-cut-at"), 3),
     ".lk-utf8-per-chunk"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("cell", "control", "act", "watched"), CONTROL_CHANGES, ids=[f"{c}-{n}" for c, n, _, _ in CONTROL_CHANGES]
)  # fmt: skip
def test_every_control_changes_what_its_explorer_shows(
    explorers: ExplorerNotebook, cell: str, control: str, act: Any, watched: str
) -> None:
    out = explorers.output(cell)
    expect(out.locator(watched).first).to_be_visible()
    before = _inner(out, watched)
    act(out)
    wait_for(
        lambda: _inner(out, watched) != before,
        timeout_s=PAGE_WAIT_S,
        what=f"{control!r} to change {watched}",
    )


def test_the_arrival_stepper_shows_one_cutting_mode_at_a_time(explorers: ExplorerNotebook) -> None:
    out = explorers.output("stepper")
    chunk, typed = out.locator(".lk-chunk-size"), out.locator(".lk-cut-positions")
    active = out.locator(".lk-cut-mode button.mod-active")
    _click_toggle(out, ".lk-cut-mode", "typed offsets")
    expect(active).to_have_text("typed offsets")
    expect(typed).to_be_visible()
    expect(chunk).to_be_hidden()
    _click_toggle(out, ".lk-cut-mode", "even chunks")
    expect(active).to_have_text("even chunks")
    expect(chunk).to_be_visible()
    expect(typed).to_be_hidden()
    expect(out.locator(".lk-stepper-cuts")).to_contain_text("even chunks of")
    _click_toggle(out, ".lk-cut-mode", "typed offsets")


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("abc", "'abc' is not a whole number"),
        ("99999", "99999 is past the last cut"),
        ("0", "0 would cut before the first byte"),
    ],
)
def test_a_bad_typed_cut_gets_a_message(
    explorers: ExplorerNotebook, typed: str, message: str
) -> None:
    out = explorers.output("stepper")
    _click_toggle(out, ".lk-cut-mode", "typed offsets")
    _fill_and_enter(out.locator(".lk-cut-positions input"), typed)
    cuts = out.locator(".lk-stepper-cuts .widget-html-content")
    expect(cuts).to_contain_text(message)
    expect(cuts).to_contain_text("none usable, so the wire arrives whole")


def test_the_utf8_explorer_keeps_the_cut_when_the_text_changes_and_shows_its_label_in_full(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("utf8")
    cut = out.locator(".lk-utf8-cut-at")
    type_value(cut, 4)
    expect(out.locator(".lk-utf8-cut .widget-html-content")).to_contain_text("cut after byte 4")
    _fill_and_enter(out.locator(".lk-utf8-text input"), "Zürich café")
    expect(out.locator(".lk-utf8-bytes .widget-html-content")).to_contain_text("13 bytes")
    expect(out.locator(".lk-utf8-cut .widget-html-content")).to_contain_text("cut after byte 4")
    expect_slider_end(cut, 13)  # the kernel has answered the new text ...
    assert shown_value(cut) == 4  # ... and left the cut where it was
    label = cut.locator("label")
    expect(label).to_have_text("cut after byte")
    assert label.evaluate("el => el.scrollWidth <= el.clientWidth"), "the label is cut off"


def test_the_walkthrough_buttons_are_disabled_at_the_ends(explorers: ExplorerNotebook) -> None:
    out = explorers.output("walkthrough")
    back, forward = out.locator("button.lk-walk-back"), out.locator("button.lk-walk-next")
    view = out.locator(".lk-walk-view .widget-html-content")

    def step_shown() -> int:
        return int(re.search(r"Step (\d) of 5", view.text_content() or "").group(1))

    for button, stop in ((back, 1), (forward, 5)):
        while step_shown() != stop:
            before = step_shown()
            button.click()
            wait_for(
                lambda b=before: step_shown() != b, timeout_s=PAGE_WAIT_S, what="the next step"
            )
        expect(button).to_be_disabled()
        expect(forward if button is back else back).to_be_enabled()


# ---------------------------------------------------------------------------------------------
# Layout: the field table never breaks a token, line ends are readable

VISUAL_LINES_JS = """
(pre) => {
  const range = document.createRange();
  range.selectNodeContents(pre);
  const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
                       .map(r => Math.round(r.top)));
  return tops.size;
}
"""


def test_the_field_tables_wire_text_never_wraps_inside_a_token(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("field_table")
    wires = out.locator(".lk-field-table pre.lk-wire")
    expect(wires.first).to_be_visible()
    assert wires.count() == 6
    for i in range(wires.count()):
        pre = wires.nth(i)
        text_lines = [line for line in (pre.text_content() or "").split("\n") if line]
        assert pre.evaluate(VISUAL_LINES_JS) == len(text_lines), (
            f"field table row {i}: {text_lines} is drawn on more lines than it has"
        )


def test_the_walkthroughs_line_end_badges_are_readable(explorers: ExplorerNotebook) -> None:
    out = explorers.output("walk_step")
    badges = out.locator(".lk-line-end")
    expect(badges.first).to_be_visible()
    for i in range(badges.count()):
        box = badges.nth(i).bounding_box()
        font_px = badges.nth(i).evaluate("el => parseFloat(getComputedStyle(el).fontSize)")
        assert box and box["height"] >= 12 and box["width"] >= 14 and font_px >= 10, box
    assert {badges.nth(i).text_content() for i in range(badges.count())} == {"CR LF", "LF"}


# ---------------------------------------------------------------------------------------------
# Reaction: a key press or click redraws the explorer's picture (timed by `make bench`)


def test_every_explorer_redraws_its_picture_after_a_key_press_or_click(
    explorers: ExplorerNotebook,
) -> None:
    # How fast is measured by bench/bench_explorers.py against the 100 ms goal; here only
    # that it happens, after one uncounted move that may pay for a first render.
    for name in REACTIONS:
        out = explorers.output(f"reaction {name}")
        target = out.locator(REACTIONS[name].watched).first
        expect(target).to_be_visible()
        warm_up, move = moves(out, REACTIONS[name], 2)
        reaction_ms(explorers.page, target, warm_up)
        before = target.inner_html()
        reaction_ms(explorers.page, target, move)
        wait_for(
            lambda t=target, b=before: t.inner_html() != b,
            timeout_s=PAGE_WAIT_S,
            what=f"{name}: the picture to change",
        )
