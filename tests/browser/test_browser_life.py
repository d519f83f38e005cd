"""Lesson 03's EventSource life cycle in a real browser: readyState, reconnections, the end.

Lesson 03 itself (a scratch copy, outputs cleared) runs with Run All in JupyterLab, then
its life-cycle panel runs a real EventSource in Chromium, through the Jupyter server's
course route to the kernel's socket, once for each choice a test needs (each run is kept
for the module). What the panel shows is read from the page; what the server saw, from
the server's own log of the run's requests, in the kernel. Every time is a lower bound:
a loaded machine may reconnect later than the retry: delay, never sooner. The same check
on a JupyterHub, with the browser on "another machine", is in tests/hub.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    REPO_ROOT,
    LabServer,
    close_notebook,
    code_cell_indices,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    save_artifacts,
    scratch_copy,
    tracebacks,
    wait_for,
    widgets_rendered,
)
from lifecycle import ROWS_JS, LifeRun, run_choice
from playwright.sync_api import expect

from lessonkit.lab import eventsource_life as life

pytestmark = pytest.mark.browser

LESSON_03 = REPO_ROOT / "notebooks" / "03_reading_the_stream.ipynb"
# Chromium's reconnection time when no retry: came (kDefaultReconnectDelay, measured here too).
CHROMIUM_OWN_RETRY_MS = 3000
FIRST_CONNECTION = [("created", 0), ("open", 1), ("message", 1), ("message", 1), ("message", 1),
                    ("error", 0)]  # fmt: skip


@dataclass
class Lesson:
    """Lesson 03 after Run All, its panel, and each run of the panel so far."""

    page: Any
    panel: Any
    socket_name: str
    runs: dict[tuple[str, str], LifeRun] = field(default_factory=dict)

    def run(self, ending: str, retry: str) -> LifeRun:
        """Return the run of these choices, running it first if no test has yet."""
        if (ending, retry) not in self.runs:
            self.runs[ending, retry] = run_choice(self.page, self.panel, ending, retry)
        return self.runs[ending, retry]


@pytest.fixture(scope="module")
def lesson(lab: LabServer, lab_page: Any, scratch_dir: Path) -> Iterator[Lesson]:
    notebook = scratch_copy(LESSON_03, scratch_dir)
    path = relative_to_root(notebook)
    page = lab_page.page
    try:
        open_notebook(page, lab, path)
        cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(cells), "\n".join(tracebacks(cells))
        index = next(i for i, c in enumerate(cells) if "EventSourceLife(" in c.source)
        wait_for(lambda: widgets_rendered(page, [index]), timeout_s=90, what="the life-cycle panel")
        panel = page.locator(".jp-Notebook .jp-Cell").nth(index)
        demo = page.locator(".lk-browser-demo-eventsource").first.get_attribute("data-url")
        socket_name = re.search(r"/lessonkit/demo/([a-z0-9]{12})/", demo).group(1)
    except BaseException:
        save_artifacts(page, "life-setup", lab_page.console_lines)
        close_notebook(page, lab, path)
        raise
    yield Lesson(page, panel, socket_name)
    close_notebook(page, lab, path)


@pytest.fixture
def panel(lesson: Lesson, page: Any) -> Lesson:
    """The lesson for one test (screenshot and console saved if the test fails)."""
    return lesson


def test_the_panel_opens_its_eventsource_through_the_jupyter_route(panel: Lesson, lab: LabServer):
    run = panel.run("204", "1000")
    routed = f"{lab.base_url}/lessonkit/demo/{panel.socket_name}/v1/stream?"
    assert run.url.startswith(routed), run.url
    for asked in ("end_after_tokens=3", "retry=1000", "reconnect_status=204"):
        assert asked in run.url, run.url


def test_readystate_goes_connecting_open_connecting_then_closed_for_good_after_a_204(panel):
    run = panel.run("204", "1000")
    assert run.states == [*FIRST_CONNECTION, ("error", 2), ("quiet", 2)]
    assert (
        "CONNECTING → OPEN" in run.rows[1]["text"] and "CONNECTING → CLOSED" in run.rows[6]["text"]
    )
    assert "204 No Content" in run.rows[6]["text"]


@pytest.mark.parametrize("retry", ["500", "1000", "none"])
def test_the_browser_reconnects_no_sooner_than_the_retry_delay(panel: Lesson, retry: str):
    run = panel.run("204", retry)
    (delay,) = run.delays_ms
    assert delay >= (life.retry_ms(retry) or CHROMIUM_OWN_RETRY_MS), run.rows


def test_after_a_204_no_further_request_reaches_the_server(panel: Lesson):
    run = panel.run("204", "1000")
    assert [(r["last_event_id"], r["status"]) for r in run.requests] == [("", 200), ("2", 204)]
    closed, quiet = run.rows[-2], run.rows[-1]
    assert quiet["at_ms"] - closed["at_ms"] >= life.quiet_ms("1000")
    assert quiet["text"].endswith("still CLOSED, and no request reached the server since")


@pytest.mark.parametrize("ending", ["text/plain", "500"])
def test_another_content_type_or_status_ends_it_the_same_way(panel: Lesson, ending: str):
    run = panel.run(ending, "500")
    assert run.states == [*FIRST_CONNECTION, ("error", 2), ("quiet", 2)]
    answer = {"text/plain": (200, "text/plain"), "500": (500, "application/json")}[ending]
    assert [(r["status"], r["content_type"]) for r in run.requests][1] == answer
    assert len(run.requests) == 2 and "no request reached the server since" in run.rows[-1]["text"]


def test_a_resumed_reconnect_brings_the_rest_and_close_fires_no_event(panel: Lesson):
    run = panel.run("resume", "500")
    reopened = [("open", 1), *[("message", 1)] * 3, ("done", 1), ("close", 2), ("quiet", 2)]
    assert run.states == [*FIRST_CONNECTION, *reopened]  # no error after close()
    assert [r["last_event_id"] for r in run.requests] == ["", "2"]
    assert "The page received 'Your order ships on Monday.'." in run.summary


@pytest.mark.parametrize(
    ("ending", "retry"), [("204", "1000"), ("text/plain", "500"), ("resume", "500")]
)
def test_a_live_run_goes_through_the_same_states_as_the_stored_run_of_its_choices(
    panel: Lesson, ending: str, retry: str
):
    seen, _ = life.stored_run(ending, retry)
    assert panel.run(ending, retry).states == [(s.kind, s.ready_state) for s in seen]


def test_the_close_button_ends_it_at_once_with_no_event_and_no_request_after(panel: Lesson):
    root = panel.panel.locator(".lk-life")
    panel.panel.locator(".lk-life-ending select").select_option("resume")
    panel.panel.locator(".lk-life-retry select").select_option("2000")
    panel.panel.locator(".lk-life-open").click()
    expect(root).to_have_attribute("data-status", "running")  # the rows start afresh
    expect(root.locator("tr.lk-life-row-message").first).to_be_visible()
    panel.panel.locator(".lk-life-close").click()  # as a learner does, mid-stream
    expect(root).to_have_attribute("data-status", "ended", timeout=120_000)
    rows = panel.page.evaluate(ROWS_JS, root.element_handle())
    kinds = [row["kind"] for row in rows]
    closed = kinds.index("close")
    assert rows[closed]["ready_state"] == 2 and kinds[closed + 1 :] == ["quiet"], kinds
    assert rows[-1]["text"].endswith("no request reached the server since")
    expect(panel.panel.locator(".lk-life-close")).to_be_disabled()
