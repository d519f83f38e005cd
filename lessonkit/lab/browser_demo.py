"""Stream tokens into the learner's own browser page: EventSource and fetch, side by side.

An anywidget whose JavaScript (browser_demo.js) runs in JupyterLab and talks to
the local lessonkit server directly (the server allows cross-origin requests from
localhost pages). Two panels fill in token by token:

    .lk-browser-demo-eventsource   EventSource on GET /v1/stream
    .lk-browser-demo-fetch         fetch(POST /v1/chat/completions, stream: true),
                                   response.body read with TextDecoder({stream: true})

Each panel has ``.lk-text`` (one ``span.lk-token`` per token), ``.lk-status``
("streaming", then "done") and ``.lk-timing``. The text and status are synced back
to Python (``eventsource_text``, ``fetch_status``, ...), so a later cell can read them.
Headless (nbconvert, nbval) no JavaScript runs; ``describe`` gives the static story.
"""

from __future__ import annotations

import time
from pathlib import Path

import anywidget
import httpx
import traitlets

from lessonkit.core import llm

__all__ = ["BrowserStreamDemo", "describe", "request_count", "wait_until_idle"]

_CSS = """
.lk-browser-demo { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.lk-browser-demo-panel { flex: 1 1 280px; border: 1px solid #999; border-radius: 4px; padding: 8px; }
.lk-browser-demo .lk-title { font-weight: bold; }
.lk-browser-demo .lk-detail, .lk-browser-demo .lk-timing { font-size: 85%; color: #555; }
.lk-browser-demo .lk-text { min-height: 2.5em; margin: 6px 0; white-space: pre-wrap; }
.lk-browser-demo .lk-token { border-bottom: 2px solid #56B4E9; }
.lk-browser-demo .lk-status { font-family: monospace; }
.lk-browser-demo-run { flex-basis: 100%; width: max-content; }
"""


class BrowserStreamDemo(anywidget.AnyWidget):
    """The browser demo widget: give it the server's base URL; JavaScript does the rest."""

    _esm = Path(__file__).with_name("browser_demo.js")
    _css = _CSS
    base_url = traitlets.Unicode("").tag(sync=True)
    prompt = traitlets.Unicode(llm.RUNNING_PROMPT).tag(sync=True)
    eventsource_text = traitlets.Unicode("").tag(sync=True)
    eventsource_status = traitlets.Unicode("not started").tag(sync=True)
    fetch_text = traitlets.Unicode("").tag(sync=True)
    fetch_status = traitlets.Unicode("not started").tag(sync=True)

    def __init__(self, base_url: str, **kwargs) -> None:
        super().__init__(base_url=base_url.rstrip("/"), **kwargs)
        self.add_class("lk-browser-demo-widget")

    def __repr__(self) -> str:
        # The plain-text twin of the widget: stable across runs (no address, no port).
        return "BrowserStreamDemo(EventSource and fetch side by side; runs in a live page)"


LOCAL_SERVER = "http://127.0.0.1:<port>"  # how describe() writes the server's URL by default


def describe(base_url: str = LOCAL_SERVER, prompt: str = llm.RUNNING_PROMPT) -> str:
    """Return the static description of what the browser demo does (for headless runs).

    The default base_url leaves the port out, so the text is the same on every run.
    """
    answer = llm.answer_for(prompt).text
    return "\n".join(
        [
            "In a live JupyterLab page the widget above runs two readers in your browser:",
            f"  EventSource : new EventSource('{base_url}/v1/stream?prompt=...')",
            "                GET only, cannot send an API key header; the browser parses SSE",
            "                and reconnects by itself (we close it on the 'done' event).",
            f"  fetch       : fetch('{base_url}/v1/chat/completions', {{method: 'POST',",
            "                headers: {Authorization: ...}, body: ...stream: true...})",
            "                then response.body.getReader() + TextDecoder({stream: true}),",
            "                splitting events on blank lines and checking [DONE] first.",
            f"Both panels fill in token by token with {answer!r} and then show 'done'.",
        ]
    )


def request_count(base_url: str) -> int:
    """Return how many requests the local server has seen (GET /v1/stats)."""
    return int(httpx.get(f"{base_url}/v1/stats", timeout=5).json()["requests"])


def wait_until_idle(
    base_url: str, *, since_requests: int, grace_s: float = 1.5, timeout_s: float = 15.0
) -> str:
    """Return once no browser stream is running, so the server can stop without cutting one.

    A browser that shows the demo sends its requests within a moment; if none has
    arrived `grace_s` after `since_requests` was counted (headless runs), return at
    once. Otherwise wait (at most `timeout_s`) until /v1/stats shows no active stream.
    The kernel cannot see widget updates while a cell runs, so the server's own
    counters are the signal.
    """
    started = time.monotonic()
    polls = 0
    while True:
        stats = httpx.get(f"{base_url}/v1/stats", timeout=5).json()
        polls += 1  # our own /v1/stats calls count as requests too
        waited_s = time.monotonic() - started
        browser_seen = stats["requests"] - polls > since_requests
        if not browser_seen and waited_s > grace_s:
            return "no browser streams seen"
        if browser_seen and stats["active_streams"] == 0:
            return "browser streams finished"
        if waited_s > timeout_s:
            return "gave up waiting for the browser"
        time.sleep(0.1)
