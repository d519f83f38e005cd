"""Every explorer works with the keyboard alone: Tab, the arrow keys, Home, End, Enter, Space.

One scratch notebook holds every explorer. Each test puts the focus on the explorer's
first control (as Tab from the cell before would), then uses only the keyboard: Tab and
Shift+Tab to move, the arrow keys, Home and End on a slider, Enter or Space on a button,
typing into a box. What the page shows is compared with the explorer's readouts function.
Every control the focus lands on must have an accessible name. Where a key's effect comes
from the kernel (a readout, a control shown or hidden, a slider's new end), the test waits
until the page shows it before it presses the next key, as a learner sees it first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labdriver import EXPLORERS, PAGE_WAIT_S, expect_slider_end, html_text, normalized, wait_for
from playwright.sync_api import expect

from lessonkit.core import practice, render
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, lesson05

pytestmark = pytest.mark.browser

# The focused element, described: its tag, its role and the accessible name a screen reader
# reads (aria-label, the <label> of an input, or a button's text).
FOCUSED_JS = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const labels = el.labels ? Array.from(el.labels).map((l) => l.textContent.trim()) : [];
  const name = el.getAttribute('aria-label') || labels.join(' ') || (el.textContent || '').trim()
    || el.getAttribute('title') || '';
  return { tag: el.tagName.toLowerCase(), type: el.type || '', name,
           cls: String(el.className || ''), box: (el.closest('.lk-twinned') || {}).className || '' };
}
"""


class Keyboard:
    """The page's keyboard, inside one explorer's output."""

    def __init__(self, page: Any, out: Any) -> None:
        self.page, self.out = page, out

    def start_at(self, selector: str) -> None:
        """Put the focus on the first focusable element inside `selector` (Tab stands for it)."""
        self.out.locator(selector).locator("input, button, select").first.focus()

    def focused(self) -> dict:
        return self.page.evaluate(FOCUSED_JS)

    def press(self, key: str, times: int = 1) -> None:
        for _ in range(times):
            self.page.keyboard.press(key)
            focused = self.focused()
            assert focused and focused["name"], f"after {key} the focus is on an unnamed {focused}"

    def tab_to(self, selector: str, *, backwards: bool = False, limit: int = 30) -> None:
        """Press Tab (or Shift+Tab) until the focus is inside `selector`."""
        target = self.out.locator(selector).first  # found again at each look: no stale handle
        for _ in range(limit):
            if target.evaluate("(el) => el.contains(document.activeElement)"):
                return
            self.press("Shift+Tab" if backwards else "Tab")
        raise AssertionError(f"Tab never reached {selector}; the focus is on {self.focused()}")

    def type(self, text: str) -> None:
        self.page.keyboard.press("Control+a")
        self.page.keyboard.type(text)
        self.page.keyboard.press("Enter")


@pytest.fixture(scope="module")
def keyboard_notebook(explorer_cells: Any) -> Iterator[dict[str, Any]]:
    """Every explorer in one notebook, run, rendered: name -> that cell's output area."""
    with explorer_cells("keyboard.ipynb", EXPLORERS) as outputs:
        yield outputs


@pytest.fixture
def outputs(keyboard_notebook: dict[str, Any], page: Any) -> dict[str, Any]:
    return keyboard_notebook


def readout(out: Any, css_class: str) -> Any:
    return out.locator(f".{css_class} .widget-html-content")


def expect_text(out: Any, css_class: str, text: str) -> None:
    expect(readout(out, css_class)).to_have_text(normalized(text))


def test_the_decode_loop_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["decode"], Keyboard(page, outputs["decode"])
    steps = lesson01.decode_steps()
    view = readout(out, "lk-decode-view")

    def shows(index: int) -> None:
        expect(view).to_have_text(html_text(lesson01.decode_readouts(index, steps=steps)["view"]))

    keys.start_at(".lk-decode-pass")  # the Play button comes first
    keys.tab_to(".lk-decode-pass input[type=range]")
    keys.press("ArrowRight", 2)
    shows(2)
    keys.press("End")
    shows(len(steps) - 1)
    keys.tab_to(".lk-decode-pass button", backwards=True)
    keys.press("Space")  # Play at the end starts again from the first pass
    wait_for(
        lambda: (
            normalized(view.text_content())
            != html_text(lesson01.decode_readouts(len(steps) - 1, steps=steps)["view"])
        ),
        timeout_s=PAGE_WAIT_S,
        what="Play to start from the beginning",
    )
    keys.press("Enter")  # Pause


def test_the_timeline_explorer_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["timeline"], Keyboard(page, outputs["timeline"])
    keys.start_at(".lk-prefill-ms")
    keys.press("ArrowRight")  # prefill 300 -> 310 ms
    expect_text(out, "lk-timeline-ttft", lesson01.timeline_readouts(400, prefill_ms=310)["ttft"])
    keys.tab_to(".lk-prefill-ms input[type=number]")
    keys.type("500")
    at_500 = lesson01.timeline_readouts(400, prefill_ms=500)
    expect_text(out, "lk-timeline-ttft", at_500["ttft"])
    expect_slider_end(out.locator(".lk-t-ms"), at_500["t_max"])  # the answer ends later now
    keys.tab_to(".lk-t-ms input[type=range]")
    keys.press("End")
    end = lesson01.timeline_readouts(10**9, prefill_ms=500)
    expect_text(out, "lk-timeline-visible", end["visible"])
    keys.tab_to(".lk-timeline-reset")
    keys.press("Enter")
    expect_text(out, "lk-timeline-t", lesson01.timeline_readouts(400)["t"])
    expect_text(out, "lk-timeline-ttft", lesson01.timeline_readouts(400)["ttft"])


def test_the_stop_early_explorer_by_keyboard_and_a_typed_price_out_of_range(
    outputs: dict[str, Any], page: Any
) -> None:
    out, keys = outputs["cancel"], Keyboard(page, outputs["cancel"])
    keys.start_at(".lk-cancel-at-ms")
    keys.press("ArrowRight")  # 2,000 -> 2,050 ms
    expect_text(out, "lk-cancel-generated", lesson01.cancel_readouts(2050)["generated"])
    keys.tab_to(".lk-cancel-price input")
    keys.type("5000")  # past the box's largest price: moved into range, and said so
    expect_text(out, "lk-cancel-cost", lesson01.cancel_readouts(2050, 1000.0)["cost"])
    message = out.locator(".lk-cancel-price .lk-control-message")
    expect(message).to_have_text("5000 is above the largest value, 1000: set to 1000.")
    expect(message).to_have_attribute("role", "status")


def test_the_wire_inspector_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["wire"], Keyboard(page, outputs["wire"])
    keys.start_at(".lk-dialect")
    keys.tab_to(".lk-dialect button:has-text('anthropic')")
    keys.press("Enter")
    last = lesson02.wire_readouts("anthropic", 10**6)
    expect_slider_end(out.locator(".lk-wire-write"), last["last"])  # anthropic has more writes
    keys.tab_to(".lk-wire-write input[type=range]")
    keys.press("End")
    expect_text(out, "lk-wire-screen", last["screen"])
    keys.press("Home")
    expect_text(out, "lk-wire-meaning", lesson02.wire_readouts("anthropic", 0)["meaning"])


def test_the_walkthrough_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["walkthrough"], Keyboard(page, outputs["walkthrough"])
    steps = lesson02.walkthrough_steps()
    view = readout(out, "lk-walk-view")
    keys.start_at(".lk-walkthrough")
    keys.tab_to("button.lk-walk-next")
    keys.press("Enter")
    expect(view).to_have_text(html_text(lesson02.walkthrough_readouts(2, steps=steps)["view"]))
    keys.press("Space")
    expect(view).to_have_text(html_text(lesson02.walkthrough_readouts(3, steps=steps)["view"]))


def test_the_arrival_stepper_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["stepper"], Keyboard(page, outputs["stepper"])
    wire, _ = lesson03.worked_example()
    keys.start_at(".lk-cut-mode")
    keys.tab_to(".lk-cut-mode button:has-text('even chunks')")
    keys.press("Space")
    # The kernel answers the mode change by showing the slider and hiding the offsets box.
    # A learner sees that before pressing Tab; a Tab sent sooner would land on the box that
    # is about to be hidden, and the focus would fall to the page.
    expect(out.locator(".lk-chunk-size")).to_be_visible()
    expect(out.locator(".lk-cut-positions")).to_be_hidden()
    keys.tab_to(".lk-chunk-size input[type=range]")
    keys.press("ArrowLeft", 9)  # 16 -> 7 bytes
    seven = lesson03.stepper_readouts(wire, chunk_bytes=7, mode="even chunks")
    expect_text(out, "lk-stepper-cuts", seven["cuts"])
    expect_slider_end(out.locator(".lk-arrival-step"), seven["arrivals"])  # 3 when typed
    keys.tab_to(".lk-arrival-step input[type=range]")
    keys.press("ArrowRight", 2)
    third = lesson03.stepper_readouts(wire, chunk_bytes=7, mode="even chunks", step=3)
    expect_text(out, "lk-stepper-arrival", third["arrival"])


def test_the_utf8_explorer_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["utf8"], Keyboard(page, outputs["utf8"])
    keys.start_at(".lk-utf8-text")
    keys.type("naïve")
    naive = lesson03.utf8_readouts("naïve", 4)
    expect_text(out, "lk-utf8-bytes", naive["bytes"])
    # The cut slider's end follows each letter typed: once it shows the last one, no move
    # the kernel made while the word was half typed can land after the keys below.
    expect_slider_end(out.locator(".lk-utf8-cut-at"), naive["cut_max"])
    keys.tab_to(".lk-utf8-cut-at input[type=range]")
    keys.press("Home")
    keys.press("ArrowRight", 3)  # inside "ï"
    expect_text(out, "lk-utf8-cut", lesson03.utf8_readouts("naïve", 3)["cut"])


def test_the_drop_explorer_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["drop"], Keyboard(page, outputs["drop"])
    wire = practice.practice_wire()
    keys.start_at(".lk-drop-position")
    keys.press("End")
    expect_text(out, "lk-drop-complete", lesson04.drop_readouts(wire, len(wire))["complete"])
    keys.press("Home")
    expect_text(out, "lk-drop-screen", lesson04.drop_readouts(wire, 0)["screen"])
    keys.tab_to(".lk-drop-position input[type=number]")
    keys.type("999")  # past the end: moved to the last byte, and said so
    expect_text(out, "lk-drop-complete", "complete=True")
    expect(out.locator(".lk-drop-position .lk-control-message")).to_contain_text(
        f"999 is above the largest value, {len(wire)}"
    )


def test_the_flicker_demo_by_keyboard(outputs: dict[str, Any], page: Any) -> None:
    out, keys = outputs["flicker"], Keyboard(page, outputs["flicker"])
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    keys.start_at(".lk-flicker-step")
    keys.press("End")
    expect_text(
        out, "lk-flicker-count", lesson05.flicker_readouts(len(frames), frames=frames)["count"]
    )
    keys.press("ArrowLeft")
    expect_text(
        out, "lk-flicker-count", lesson05.flicker_readouts(len(frames) - 1, frames=frames)["count"]
    )
