#!/usr/bin/env python3
"""Record the stored runs of lesson 03's EventSource life cycle, one per choice, in Chromium.

    .venv/bin/python tools/record_eventsource_runs.py

For every ending and retry: choice of the panel (lessonkit.lab.eventsource_life.ENDINGS,
RETRIES) a real EventSource in headless Chromium reads the course's server, paced as in
the lesson (prefill 300 ms, 120 ms a token), with the panel's own watchEventSource()
(eventsource_life.js) and the panel's own StreamLog in front of the server. What the page
noted and what the server saw go to lessonkit/data/eventsource_runs.json: the zero-install
edition shows them (no EventSource can be opened there) and so does the notebook's text
twin. The page comes from the server's own origin (a route of the browser's), so no CORS is
involved, as with the course's Jupyter route. Takes about three minutes (16 runs, run one
after the other: more EventSources at once would share the browser's six connections).
"""

from __future__ import annotations

import datetime
import json
import sys
import uuid
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

from labdriver import CHROMIUM_ARGS, find_browser  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from lessonkit.lab import eventsource_life as life  # noqa: E402
from lessonkit.lab.browser_demo import DEMO_PER_TOKEN_MS  # noqa: E402
from lessonkit.serve.app import create_app  # noqa: E402
from lessonkit.serve.background import serving  # noqa: E402
from lessonkit.serve.checks import Settings  # noqa: E402

PREFILL_MS = 300
PAGE = "/eventsource-life"  # answered by the browser itself: the page only needs an origin

IMPORT_JS = """
async (source) => {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  window.lkLife = await import(url);
}
"""

WATCH_JS = """
([path, quietMs]) => new Promise((resolve) => {
  window.lkLife.watchEventSource(path, (note) => {
    window.lkNote(note);
    if (note.kind === 'quiet') resolve();
  }, { quietMs });
})
"""


def record(page, log: life.StreamLog, ending: str, retry: str) -> dict:
    """Run one choice in the page; return its notes (stamped with the server's count) and requests."""
    run = uuid.uuid4().hex[:12]
    notes: list[dict] = []

    def noted(note: dict) -> None:  # called as each note happens, as the kernel is
        seen = life.seen_from(note)
        notes.append({**asdict(seen), "server_requests": len(log.requests(run))})

    page.expose_function("lkNote", noted)
    path = life.stream_path(ending, retry, run=run)
    page.evaluate(WATCH_JS, [path, life.quiet_ms(retry)])
    requests = [asdict(r) for r in log.requests(run)]
    print(f"{ending:>10} retry {retry:>4}: {[n['kind'] for n in notes]} {requests}", flush=True)
    return {"ending": ending, "retry": retry, "seen": notes, "requests": requests}


def main() -> None:
    log = life.StreamLog()
    settings = Settings(prefill_ms=PREFILL_MS, per_token_ms=DEMO_PER_TOKEN_MS)
    runs = []
    with serving(log.wrap(create_app(settings))) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(find_browser()), args=CHROMIUM_ARGS)
        for ending in life.ENDINGS:
            for retry in life.RETRIES:
                page = browser.new_page()  # a fresh page: no EventSource of the last run left
                page.route(url + PAGE, lambda r: r.fulfill(content_type="text/html", body="<p>"))
                page.goto(url + PAGE)
                page.evaluate(IMPORT_JS, Path(life.__file__).with_suffix(".js").read_text())
                runs.append(record(page, log, ending, retry))
                page.close()
        version = browser.version
        browser.close()
    when = datetime.date.today().isoformat()
    store = {
        "recorded_with": (
            f"recorded in headless Chromium {version.split('.')[0]} against the course's server"
            f" (prefill {PREFILL_MS} ms, {DEMO_PER_TOKEN_MS} ms a token) on {when}"
        ),
        "runs": runs,
    }
    life.RUNS_FILE.write_text(json.dumps(store, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {life.RUNS_FILE.relative_to(REPO)}: {len(runs)} runs")


if __name__ == "__main__":
    main()
