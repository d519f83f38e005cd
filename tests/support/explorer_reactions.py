"""Each explorer's reaction to a learner's key press or click, seen in the page.

From the key press or click to the next frame after the explorer's picture changed,
timed by the page itself (event.timeStamp, performance.now()). Shared by
tests/browser/test_browser_explorers.py, which checks that every explorer reacts at
all (its verdict has no clock in it), and bench/bench_explorers.py, which times the
reactions against the course's goal (`make bench`, recorded in bench/README.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coursecontrols import press_key
from labdriver import PAGE_WAIT_S, wait_for

GOAL_MEDIAN_MS = 100  # a reaction a learner does not notice as a delay

ARM_JS = """
(target) => {
  const state = { t0: null, t1: null };
  window.__lkReaction = state;
  const kinds = ['keydown', 'click'];  // a key press on a slider, a finished click on a button
  const start = (event) => { if (state.t0 === null) state.t0 = event.timeStamp; };
  for (const kind of kinds) document.addEventListener(kind, start, { capture: true });
  const observer = new MutationObserver(() => {
    if (state.t0 === null || state.t1 !== null) return;
    observer.disconnect();
    for (const kind of kinds) document.removeEventListener(kind, start, { capture: true });
    // The new picture is on screen at the next frame after the DOM changed.
    requestAnimationFrame(() => { state.t1 = performance.now(); });
  });
  observer.observe(target, { subtree: true, childList: true, characterData: true,
                             attributes: true });
  return true;
}
"""


@dataclass(frozen=True)
class Reaction:
    """One explorer as a reaction is measured on it."""

    source: str  # the notebook cell that builds it
    watched: str  # the element whose picture must follow
    sliders: tuple[str, ...]  # the sliders moved with arrow keys; none: next/back buttons


REACTIONS = {
    "timeline": Reaction("lw.timeline_explorer()", ".lk-timeline-plot", (".lk-t-ms", ".lk-prefill-ms")),
    "stop early": Reaction("lw.cancel_explorer()", ".lk-cancel-plot", (".lk-cancel-at-ms",)),
    "decode loop": Reaction("lw.decode_loop_player()", ".lk-decode-view", (".lk-decode-pass",)),
    "wire inspector": Reaction("lw.wire_inspector()", ".lk-wire-view", (".lk-wire-write",)),
    # next/back between steps 2 and 3 (its common path; the ends also toggle a button)
    "walkthrough": Reaction("lw.walkthrough_stepper(2)", ".lk-walk-view", ()),
    "arrival stepper": Reaction("lw.arrival_stepper()", ".lk-stepper-arrival", (".lk-arrival-step",)),
    "UTF-8": Reaction("lw.utf8_explorer()", ".lk-utf8-cut", (".lk-utf8-cut-at",)),
    "drop": Reaction("lw.drop_explorer()", ".lk-drop-plot", (".lk-drop-position",)),
    "flicker": Reaction("lw.flicker_demo(step=1)", ".lk-flicker-naive", (".lk-flicker-step",)),
}  # fmt: skip


def moves(out: Any, reaction: Reaction, n: int) -> list[Callable[[], None]]:
    """Return n learner moves on the explorer in output area `out`, each undoable by a later one.

    Sliders: arrow presses on each slider in turn, right then left (so they stay in range);
    no sliders: the next and back buttons in turn.
    """
    if not reaction.sliders:
        buttons = [out.locator("button.lk-walk-next"), out.locator("button.lk-walk-back")]
        return [lambda b=buttons[i % 2]: b.click() for i in range(n)]
    actions = []
    for i in range(n):
        slider = out.locator(reaction.sliders[i % len(reaction.sliders)])
        key = "ArrowRight" if (i // len(reaction.sliders)) % 2 == 0 else "ArrowLeft"
        actions.append(lambda slider=slider, key=key: press_key(slider, key))
    return actions


def settle(locator: Any, *, quiet_s: float = 0.15, timeout_s: float = 10) -> None:
    """Return once locator's HTML has not changed for quiet_s (its last update landed)."""
    last, quiet_since = locator.inner_html(), 0.0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.05)  # the poll interval
        now = locator.inner_html()
        if now != last:
            last, quiet_since = now, 0.0
        else:
            quiet_since += 0.05
            if quiet_since >= quiet_s:
                return


def reaction_ms(
    page: Any, target: Any, act: Callable[[], None], *, timeout_s: float = PAGE_WAIT_S
) -> float:
    """Return the ms from the move `act` to target's new picture on screen; raise after timeout_s."""
    page.evaluate(ARM_JS, target.element_handle())
    act()
    wait_for(
        lambda: page.evaluate("() => window.__lkReaction.t1 !== null"),
        timeout_s=timeout_s,
        interval_s=0.01,
        what="the explorer to react",
    )
    t0, t1 = page.evaluate("() => [window.__lkReaction.t0, window.__lkReaction.t1]")
    settle(target)
    return t1 - t0
