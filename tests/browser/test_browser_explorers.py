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
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    LabServer,
    close_notebook,
    code_cell_indices,
    html_text,
    normalized,
    open_notebook,
    press_slider_key,
    relative_to_root,
    run_all_and_wait,
    save_artifacts,
    set_slider,
    slider_value,
    snapshot_cells,
    tracebacks,
    wait_for,
    write_scratch_notebook,
)
from playwright.sync_api import expect

from lessonkit.core import practice, render
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, views

pytestmark = pytest.mark.browser

TIMEOUT_MS = 30_000

# One cell per test: the explorer each test drives, built the way the lessons build it.
CELLS = {
    "timeline_prefill": "lw.timeline_explorer()",
    "timeline_play": "lw.timeline_explorer(t_ms=0)",
    "cancel": "lw.cancel_explorer()",
    "decode_play": "lw.decode_loop_player()",
    "wire": "lw.wire_inspector()",
    "walkthrough": "lw.walkthrough_stepper()",
    "stepper": "lw.arrival_stepper()",
    "utf8": "lw.utf8_explorer()",
    "drop": "lw.drop_explorer()",
    "flicker": "lw.flicker_demo(step=1)",
}


def test_every_explorer_in_lessonkit_widgets_has_an_interaction_test() -> None:
    from lessonkit.lab import widgets

    explorers = {
        name
        for name, value in vars(widgets).items()
        if inspect.isfunction(value) and value.__module__ == widgets.__name__
        and value.__annotations__.get("return") in ("Explorer", widgets.Explorer)
    }  # fmt: skip
    driven = {re.match(r"lw\.(\w+)\(", source).group(1) for source in CELLS.values()}
    assert len(explorers) == 9 and explorers - driven == set(), "explorers no browser test drives"


@dataclass
class ExplorerNotebook:
    """The opened notebook: the page and the output area of each named cell."""

    page: Any
    cell_index: dict[str, int]

    def output(self, name: str) -> Any:
        """Return the output area of the cell that built explorer `name`."""
        cell = self.page.locator(".jp-Notebook .jp-Cell").nth(self.cell_index[name])
        return cell.locator(".jp-OutputArea")


@pytest.fixture(scope="module")
def explorer_notebook(
    lab: LabServer, lab_page: Any, scratch_dir: Path
) -> Iterator[ExplorerNotebook]:
    """The explorers' notebook, run once in the module's page, every widget rendered."""
    sources = ["from lessonkit.lab import widgets as lw", *CELLS.values()]
    notebook = write_scratch_notebook(scratch_dir, "explorers.ipynb", sources)
    path = relative_to_root(notebook)
    page = lab_page.page
    try:
        open_notebook(page, lab, path)
        cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(cells), "\n".join(tracebacks(cells))
        wait_for(
            lambda: all(any(o.widget_views for o in c.outputs) for c in snapshot_cells(page)[1:]),
            timeout_s=60,
            what="every explorer to render",
        )
    except BaseException:
        save_artifacts(page, "explorers-notebook-setup", lab_page.console_lines)
        close_notebook(page, lab, path)
        raise
    yield ExplorerNotebook(page, {name: i + 1 for i, name in enumerate(CELLS)})
    close_notebook(page, lab, path)


@pytest.fixture
def explorers(explorer_notebook: ExplorerNotebook, page: Any) -> ExplorerNotebook:
    """The explorers' notebook for one test (screenshot saved if the test fails)."""
    return explorer_notebook


def expect_readouts(output: Any, prefix: str, expected: dict[str, str]) -> None:
    """Wait until each readout `.{prefix}{name}` shows exactly expected[name]."""
    for name, text in expected.items():
        readout = output.locator(f".{prefix}{name} .widget-html-content")
        expect(readout).to_have_text(normalized(text), timeout=TIMEOUT_MS)


def expect_html(locator: Any, markup: str) -> None:
    """Wait until locator shows the text of markup (the HTML a pure function returned)."""
    expect(locator).to_have_text(html_text(markup), timeout=TIMEOUT_MS)


def watch_texts(locator: Any, *, until: Any, timeout_s: float = 60) -> list[str]:
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
    readouts = lesson01.timeline_readouts(lesson01.timeline_view(shown_ms(t_text), **params))
    shown = {
        name: normalized(out.locator(f".lk-timeline-{name} .widget-html-content").text_content())
        for name in readouts
    }
    return shown == {name: normalized(text) for name, text in readouts.items()}


def test_timeline_readouts_show_the_new_ttft_and_total_when_prefill_moves(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("timeline_prefill")
    wait_for(lambda: timeline_shows_time_it_reads(out), timeout_s=30, what="the first frame")
    plot = out.locator(".lk-timeline-plot")
    before = plot.get_attribute("src")

    set_slider(out.locator(".lk-prefill-ms"), 500)

    expected = lesson01.timeline_readouts(lesson01.timeline_view(0, prefill_ms=500))
    ttft = out.locator(".lk-timeline-ttft .widget-html-content")
    expect(ttft).to_have_text(expected["ttft"], timeout=TIMEOUT_MS)
    expect(out.locator(".lk-timeline-total .widget-html-content")).to_have_text(expected["total"])
    wait_for(
        lambda: timeline_shows_time_it_reads(out, prefill_ms=500),
        timeout_s=30,
        what="the readouts for prefill 500 ms",
    )
    view = lesson01.timeline_view(
        shown_ms(out.locator(".lk-timeline-t").text_content()), prefill_ms=500
    )
    blocking, streaming = lesson01.timeline_panes(view)
    expect(out.locator(".lk-pane-streaming")).to_contain_text(normalized(streaming))
    expect(out.locator(".lk-pane-blocking")).to_contain_text(normalized(blocking))
    expect(plot).not_to_have_attribute("src", before or "", timeout=TIMEOUT_MS)


def test_timeline_play_moves_time_forward_and_the_screens_follow(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("timeline_play")
    t_readout = out.locator(".lk-timeline-t .widget-html-content")
    expect(t_readout).to_have_text("t = 0 ms", timeout=TIMEOUT_MS)

    out.locator(".lk-play button").first.click()  # the Play button
    seen = watch_texts(t_readout, until=lambda texts: len(texts) >= 4)
    out.locator(".lk-play button").nth(1).click()  # Pause

    times = [shown_ms(text) for text in seen]
    assert times == sorted(times) and len(set(times)) >= 4, f"t did not advance: {seen}"
    wait_for(
        lambda: timeline_shows_time_it_reads(out),
        timeout_s=30,
        what="the readouts to match the time Play reached",
    )


def test_cancel_readouts_show_what_stopping_at_the_new_time_saves(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("cancel")
    expect_readouts(out, "lk-cancel-", lesson01.cancel_readouts(lesson01.cancel_view(2000)))

    set_slider(out.locator(".lk-cancel-at-ms"), 5000)
    expect_readouts(out, "lk-cancel-", lesson01.cancel_readouts(lesson01.cancel_view(5000)))

    price = out.locator(".lk-cancel-price input")
    price.fill("25")
    price.press("Enter")
    view = lesson01.cancel_view(5000, usd_per_million_tokens=25.0)
    expect_readouts(out, "lk-cancel-", lesson01.cancel_readouts(view))


def test_decode_loop_play_steps_through_the_passes(explorers: ExplorerNotebook) -> None:
    out = explorers.output("decode_play")
    steps = lesson01.decode_steps()
    view = out.locator(".lk-decode-view .widget-html-content")
    expect_html(view, views.decode_step_html(steps[0]))

    out.locator(".lk-play button").first.click()
    seen = watch_texts(view, until=lambda texts: len(texts) >= 3)
    out.locator(".lk-play button").nth(1).click()

    expected_texts = [html_text(views.decode_step_html(step)) for step in steps]
    assert all(text in expected_texts for text in seen), f"unexpected pass views: {seen}"
    passes = [expected_texts.index(text) for text in seen]
    assert passes == sorted(passes), f"passes went backwards: {passes}"

    def matches_slider() -> bool:
        shown = int(slider_value(out.locator(".lk-decode-pass")))
        return normalized(view.text_content()) == expected_texts[shown]

    wait_for(matches_slider, timeout_s=30, what="the view to show the pass on the slider")


# ---------------------------------------------------------------------------------------------
# Lesson 02: wire inspector, five-step walkthrough


def test_wire_inspector_shows_the_chosen_dialects_write_and_screen(
    explorers: ExplorerNotebook,
) -> None:
    out = explorers.output("wire")
    out.locator(".lk-dialect button", has_text="anthropic").click()
    set_slider(out.locator(".lk-wire-write"), 4)

    rows = lesson02.wire_rows("anthropic")
    row = rows[4]
    meaning = out.locator(".lk-wire-meaning .widget-html-content")
    expect(meaning).to_contain_text(normalized(lesson02.row_summary(row)), timeout=TIMEOUT_MS)
    expect(meaning).to_contain_text(f"write 4 at {row.at_ms:.0f} ms")
    screen = out.locator(".lk-wire-screen .widget-html-content")
    expect(screen).to_contain_text(normalized(repr(row.screen)), timeout=TIMEOUT_MS)
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
    expect(screen).to_contain_text(normalized(repr(steps[3].screen)), timeout=TIMEOUT_MS)

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
    set_slider(out.locator(".lk-arrival-step"), 2)

    expected = lesson03.stepper_readouts(wire, chunk_bytes=16, positions_text="10, 30", step=2)
    expected.pop("arrivals")
    expect_readouts(out, "lk-stepper-", expected)

    press_slider_key(out.locator(".lk-arrival-step"), "ArrowRight")
    expected = lesson03.stepper_readouts(wire, chunk_bytes=16, positions_text="10, 30", step=3)
    expected.pop("arrivals")
    expect_readouts(out, "lk-stepper-", expected)


@pytest.mark.parametrize("cut_at_byte", [3, 4, 7])
def test_utf8_explorer_readouts_follow_the_cut(
    explorers: ExplorerNotebook, cut_at_byte: int
) -> None:
    out = explorers.output("utf8")
    set_slider(out.locator(".lk-utf8-cut.widget-slider"), cut_at_byte)
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
    plot = out.locator("img.lk-drop-plot")
    expect(plot).to_have_count(1, timeout=TIMEOUT_MS)
    before = plot.get_attribute("src")

    set_slider(out.locator(".lk-drop-position"), 40)
    expect_readouts(out, "lk-drop-", _drop_expected(wire, 40))
    expect(plot).not_to_have_attribute("src", before or "", timeout=TIMEOUT_MS)

    press_slider_key(out.locator(".lk-drop-position"), "End")
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
    set_slider(out.locator(".lk-flicker-step"), step)

    frame = frames[step - 1]
    naive = out.locator(".lk-flicker-naive .widget-html-content")
    stable = out.locator(".lk-flicker-stable .widget-html-content")
    expect(naive).to_have_text("naive" + html_text(render.to_html(frame.naive)), timeout=TIMEOUT_MS)
    expect(stable).to_have_text("stable" + html_text(render.to_html(frame.stable)))
    n_naive = sum(f.naive_rewrote for f in frames[:step])
    n_stable = sum(f.stable_rewrote for f in frames[:step])
    expect(out.locator(".lk-flicker-count .widget-html-content")).to_contain_text(
        f"naive rewrote the screen {n_naive} times, stable {n_stable}"
    )
