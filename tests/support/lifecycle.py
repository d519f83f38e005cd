"""Lesson 03's EventSource life-cycle panel driven in a real page (browser and hub tests).

``run_choice(page, panel, ending, retry)`` picks the panel's two choices as a learner
does, presses "Open an EventSource" and waits until the panel says the run has ended:
CLOSED, then watched for a while (lessonkit.lab.eventsource_life.quiet_ms). It returns
the rows the panel shows (each row's data attributes and text) and what the server saw,
read in the notebook's kernel from the server's own log of the run's requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labdriver import PAGE_WAIT_S
from playwright.sync_api import expect

# Runs code in the current notebook's kernel from the page, as a cell would; returns stdout.
EXECUTE_IN_KERNEL_JS = """
async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code });
  let out = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') out += msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return out;
}
"""

ROWS_JS = """
(root) => Array.from(root.querySelectorAll('tr.lk-life-row')).map((tr) => ({
  kind: tr.dataset.kind,
  ready_state: Number(tr.dataset.readyState),
  at_ms: Number(tr.dataset.atMs),
  delay_ms: tr.dataset.delayMs === undefined ? null : Number(tr.dataset.delayMs),
  text: tr.textContent,
}))
"""

# What the server's log holds for the panel's latest run (the notebook names it `life`).
SERVER_SAW = (
    "import json\nprint(json.dumps([r.__dict__ for r in server.stream_log.requests(life.run_id)]))"
)


@dataclass(frozen=True)
class LifeRun:
    """One run of the panel: its rows, its URL, its summary, what the server saw."""

    rows: list[dict[str, Any]]
    url: str
    summary: str
    requests: list[dict[str, Any]]

    @property
    def states(self) -> list[tuple[str, int]]:
        """(kind, readyState after it) per row."""
        return [(row["kind"], row["ready_state"]) for row in self.rows]

    @property
    def delays_ms(self) -> list[float]:
        """The measured delay of each reconnection."""
        return [row["delay_ms"] for row in self.rows if row["delay_ms"] is not None]


def run_choice(page: Any, panel: Any, ending: str, retry: str, *, wait_s: float = 120) -> LifeRun:
    """Pick `ending` and `retry` in the panel, open an EventSource, return the ended run."""
    panel.locator(".lk-life-ending select").select_option(ending)
    panel.locator(".lk-life-retry select").select_option(retry)
    root = panel.locator(".lk-life")
    panel.locator(".lk-life-open").click()
    expect(root).to_have_attribute("data-status", "running", timeout=PAGE_WAIT_S * 1000)
    expect(root).to_have_attribute("data-status", "ended", timeout=wait_s * 1000)
    rows = page.evaluate(ROWS_JS, root.element_handle())
    saw = page.evaluate(EXECUTE_IN_KERNEL_JS, SERVER_SAW)
    return LifeRun(
        rows=rows,
        url=root.locator(".lk-life-url").text_content() or "",
        summary=root.locator(".lk-life-summary").text_content() or "",
        requests=json.loads(saw),
    )
