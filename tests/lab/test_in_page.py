"""The browser kernel's network for lesson 03's demo: HTTP as widget messages (lab.in_page).

The app runs on the kernel's event loop; each body message it sends reaches the page as a
widget message when it is sent (at the app's pace, not at the end), two requests stream at
once, and a page that stops reading disconnects the app.
"""

from __future__ import annotations

import asyncio
import json
import time

from lessonkit.core import client
from lessonkit.lab import browser_demo, demo_reports, in_page
from lessonkit.serve.app import create_app
from lessonkit.serve.checks import Settings

PACE = Settings.from_options(prefill_ms=50, per_token_ms=30)
BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


class Page:
    """What the page receives: every widget message with its buffers and when it came."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.messages: list[tuple[float, dict, list[bytes]]] = []

    def send(self, content: dict, buffers: list | None = None) -> None:
        at_ms = (time.monotonic() - self.started) * 1000
        self.messages.append((at_ms, content, [bytes(b) for b in buffers or []]))

    def of(self, request_id: str, kind: str) -> list[tuple[float, dict, list[bytes]]]:
        return [m for m in self.messages if m[1]["id"] == request_id and m[1]["type"] == kind]


async def _serve(requests: list[tuple[str, dict, bytes]], page: Page) -> None:
    served = in_page.PageRequests(create_app(PACE), page.send)
    await asyncio.gather(*(served.serve(rid, request, body) for rid, request, body in requests))


def test_each_write_reaches_the_page_as_its_own_message_at_the_apps_pace():
    page = Page()
    post = {"method": "POST", "path": "/v1/chat/completions",
            "headers": {"content-type": "application/json"}}  # fmt: skip
    asyncio.run(_serve([("r1", post, json.dumps(BODY).encode())], page))
    (start,) = page.of("r1", "response-start")
    assert start[1]["status"] == 200
    bodies = page.of("r1", "response-body")
    assert len(bodies) > 5 and bodies[-1][1]["more"] is False
    reply = client.read_stream([b"".join(m[2]) for m in bodies], "openai")
    assert reply.complete and reply.text
    times = [at for at, _, data in bodies if data]
    assert times[-1] - times[0] >= 30 * (len(times) - 3)  # spread at 30 ms a token, not a burst
    assert page.of("r1", "response-end")[0][1]["error"] == ""


def test_two_requests_stream_at_once_as_the_two_panels_do():
    page = Page()
    get = {"method": "GET", "path": "/v1/stream?prompt=hi", "headers": {}}
    asyncio.run(_serve([("a", get, b""), ("b", get, b"")], page))
    order = [m[1]["id"] for m in page.messages if m[1]["type"] == "response-body"]
    first_b = order.index("b")
    assert "a" in order[first_b:], "b's pieces came between a's: both streamed together"


def test_a_page_that_stops_reading_disconnects_the_app():
    page = Page()

    def reads_three_pieces(content: dict, buffers: list | None = None) -> None:
        # The page hangs up as its third piece arrives, before the app writes another: what
        # a busy machine does to the timing cannot let the stream finish first.
        page.send(content, buffers)
        if content["type"] == "response-body" and len(page.of("r", "response-body")) == 3:
            served.handle({"type": "abort", "id": "r"})

    served = in_page.PageRequests(create_app(PACE), reads_three_pieces)

    async def run() -> dict:
        get = {"method": "GET", "path": "/v1/stream?prompt=hi", "headers": {}}
        await asyncio.wait_for(served.serve("r", get, b""), 60)
        stats = in_page.PageRequests(served.app, page.send)
        await stats.serve("s", {"method": "GET", "path": "/v1/stats", "headers": {}}, b"")
        return json.loads(b"".join(b for _, c, bs in page.messages if c["id"] == "s" for b in bs))

    stats = asyncio.run(run())
    assert stats["disconnects"] == 1 and stats["active_streams"] == 0
    assert len(page.of("r", "response-body")) == 3  # nothing was sent after the hang-up


def test_in_the_page_the_demo_uses_the_widget_and_no_socket():
    server = browser_demo.DemoServer(prefill_ms=50, per_token_ms=30, in_page=True)
    assert server.running and not server.ensure_running()
    assert not server.socket_path.exists()
    assert (
        "widget message" in server.describe() and "Simulated here: the network" in server.describe()
    )
    demo = browser_demo.BrowserStreamDemo(server)
    assert demo.transport == "widget"
    page = Page()
    demo.send = page.send  # what the page would receive

    async def run() -> None:
        get = {"type": "request", "id": "r1", "method": "GET", "path": "/v1/stream?prompt=hi"}
        demo._on_page_message(demo, get, [])
        while not page.of("r1", "response-end"):
            await asyncio.sleep(0.01)

    asyncio.run(run())
    events = b"".join(b for _, c, bs in page.messages if c["type"] == "response-body" for b in bs)
    assert b"event: done" in events
    report = {
        "demo": demo.demo_id,
        "kind": "fetch",
        "run": 1,
        "status": "done",
        "text": "x",
        "times_ms": [1, 2],
        "reads": 2,
        "url": "http://lessonkit.local/v1/chat/completions",
    }
    demo._on_page_message(demo, {"type": "report", "report": report}, [])
    assert server.reports.latest(demo.demo_id)["fetch"].text == "x"


def test_the_full_edition_demo_keeps_the_route_and_socket():
    server = browser_demo.DemoServer(in_page=False)
    try:
        demo = browser_demo.BrowserStreamDemo(server)
        assert demo.transport == "route" and server.socket_path.exists()
    finally:
        server.stop()


def _report(demo: browser_demo.BrowserStreamDemo, kind: str, status: str) -> dict:
    return {
        "type": "report",
        "report": {"demo": demo.demo_id, "kind": kind, "run": 1, "status": status,
                   "text": "Your order", "times_ms": [400, 520], "reads": 2,
                   "url": f"http://lessonkit.local/v1/{kind}"},
    }  # fmt: skip


def test_in_the_page_the_report_returns_at_once_and_fills_itself_in_as_the_page_reports():
    server = browser_demo.DemoServer(prefill_ms=50, per_token_ms=30, in_page=True)
    demo = browser_demo.BrowserStreamDemo(server)

    def no_waiting(*_args, **_kwargs):
        raise AssertionError("the report waited for the page")

    # Nothing can arrive while a cell runs there: it never waits for the grace or timeout.
    server.reports.changed.wait = no_waiting
    live = demo.browser_report(grace_s=60, timeout_s=60)
    assert str(demo_reports.WAITING_IN_PAGE) in live.value.replace("&#x27;", "'")
    demo._on_page_message(demo, _report(demo, "eventsource", "done"), [])
    assert "(not finished yet: this output fills itself in" in live.value
    demo._on_page_message(demo, _report(demo, "fetch", "done"), [])
    text = live.value.replace("&#x27;", "'")
    assert "What your browser received (run 1, through widget messages between your page" in text
    assert "fetch      : done, 2 tokens, in 2 reads" in text and "not finished" not in text
    # Once every panel has reported, the report itself: its text, as a cell shows it.
    report = demo.browser_report()
    assert isinstance(report, browser_demo.BrowserReport) and report.outcome == "finished"


def test_in_the_page_describe_tells_the_widget_message_way_not_the_route():
    text = browser_demo.describe(in_page=True)
    assert "widget message" in text and "no Jupyter server and no socket" in text
    assert "lessonkit/demo" not in text and "lessonkit/demo" in browser_demo.describe(in_page=False)
