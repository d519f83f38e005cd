"""Stream tokens into the learner's own browser page: EventSource and fetch, side by side.

    server = start_server(prefill_ms=300, per_token_ms=120)  # once per kernel, lives with it
    demo = BrowserStreamDemo(server)                         # the widget: two panels
    demo                                                     # (display it)
    demo.browser_report()                                    # next cell: what the page got

The kernel runs the course's local streaming server on a Unix socket in this user's
private folder (lessonkit.serve.demo_socket), not on a TCP port: on a shared machine
any TCP port is open to every other user. The page could not call the kernel anyway:
on JupyterHub, Binder or a remote workstation the browser runs on another machine.
The widget's JavaScript (browser_demo.js) asks the Jupyter server that served the
page, at ``<the page's Jupyter base URL>lessonkit/demo/<name>/`` (``/lessonkit/demo/
<name>/`` under a plain ``jupyter lab``, ``/user/<user>/lessonkit/demo/<name>/`` on a
hub), and the course's route there (lessonkit.serve.jupyter_route) passes each request
on to the socket ``<name>`` of that user, streaming the answer back as it comes. Same
origin as the page: no CORS, and the Jupyter login cookie goes along. Two panels fill
in token by token:

    .lk-browser-demo-eventsource   EventSource on GET /v1/stream
    .lk-browser-demo-fetch         fetch(POST /v1/chat/completions, stream: true) with
                                   ``Accept: text/event-stream``, response.body read with
                                   decoder.decode(bytes, {stream: true})

In the zero-install edition (JupyterLite: the kernel is Pyodide in the page itself,
``sys.platform == "emscripten"``) there is no Jupyter server to route through and no
socket. There the widget itself is the network (``transport = "widget"``): the page
sends each request to the kernel as a widget message, the kernel runs the same
Starlette app on its own event loop and sends every ``http.response.body`` message
back as a widget message the moment the app sends it (lessonkit.lab.in_page), and the
page turns those into a ``Response`` whose body is a ReadableStream, read by the same
code as in the full edition; the EventSource panel reads the same GET with the
browser's own EventSource rules (lines, events, ``event: done``), since an EventSource
object cannot be given a stream. The answer arrives in the page token by token either way.

Each panel has ``.lk-text`` (one ``span.lk-token`` per token), ``.lk-status``
("streaming", then "done") and ``.lk-timing``. A cell that runs cannot read widget
messages (the kernel handles them between cells), so the page also POSTs what each
panel received to the kernel's server, which runs in a thread: ``browser_report()``
waits for that. In the browser kernel nothing can wait for them: the report there fills
itself in once they arrive. Headless (nbconvert, nbval) no JavaScript runs;
``describe`` gives the static story.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import httpx
import ipywidgets as widgets
import traitlets
from starlette.requests import Request
from starlette.responses import JSONResponse

from lessonkit.core import llm
from lessonkit.lab import in_page
from lessonkit.lab.demo_reports import (
    PANELS,
    BrowserReport,
    PanelReport,
    ReportBook,
    panel_report,
)
from lessonkit.lab.eventsource_life import StreamLog
from lessonkit.serve import demo_socket
from lessonkit.serve.app import create_app
from lessonkit.serve.checks import Settings

if TYPE_CHECKING:
    from lessonkit.serve.background import BackgroundServer

__all__ = [
    "BrowserReport",
    "BrowserStreamDemo",
    "DemoServer",
    "PanelReport",
    "describe",
    "request_count",
    "serving_to_the_page",
    "start_server",
    "wait_until_idle",
]

REPORT_PATH = "/lessonkit-demo/report"  # the same path is in browser_demo.js
MAX_REPORT_BYTES = 64 * 1024
# Slow enough to watch each token land; the lesson's 40 ms blurs into one motion.
DEMO_PER_TOKEN_MS = 120

# Theme variables only, so the light, dark and high-contrast themes all read at 4.5:1.
_CSS = """
.lk-browser-demo { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start;
  color: var(--jp-content-font-color1); }
.lk-browser-demo-panel { flex: 1 1 280px; border: 1px solid var(--jp-border-color1);
  border-radius: 4px; padding: 8px; }
.lk-browser-demo .lk-title { font-weight: bold; }
.lk-browser-demo .lk-detail, .lk-browser-demo .lk-timing { font-size: 85%; }
.lk-browser-demo .lk-url { font-size: 85%; word-break: break-all; font-family: monospace; }
.lk-browser-demo .lk-text { min-height: 2.5em; margin: 6px 0; white-space: pre-wrap; }
.lk-browser-demo .lk-token { border-bottom: 2px solid var(--jp-brand-color1); }
.lk-browser-demo .lk-status { font-family: monospace; }
.lk-browser-demo-run { flex-basis: 100%; width: max-content; color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color2); border: 1px solid var(--jp-border-color1);
  border-radius: 3px; padding: 2px 8px; font: inherit; cursor: pointer; }
.lk-browser-demo-run:focus-visible { outline: 2px solid var(--jp-brand-color1); }
"""


# --- the kernel's server -----------------------------------------------------------------


class DemoServer:
    """The course's streaming server for the browser demo, plus the page's report route.

    Runs in a background thread of the kernel, on the Unix socket ``socket_name`` in
    this user's private folder: never on a TCP port, which every user of a shared
    machine could reach. `ensure_running()` starts it again on the same socket after
    `stop()`. The kernel itself talks to it with `client()`.
    """

    def __init__(
        self,
        prefill_ms: float = 300,
        per_token_ms: float = DEMO_PER_TOKEN_MS,
        *,
        in_page: bool | None = None,
    ) -> None:
        self.settings = Settings.from_options(prefill_ms=prefill_ms, per_token_ms=per_token_ms)
        self.reports = ReportBook()
        self.stream_log = StreamLog()  # the life-cycle panel's requests (lab.eventsource_life)
        self.socket_name = demo_socket.new_socket_name()
        self._background: BackgroundServer | None = None
        self._lock = threading.Lock()
        # In the page (the browser kernel): no socket and no thread; the widget carries the
        # requests and the app runs on the kernel's own event loop when one comes.
        self.in_page = sys.platform == "emscripten" if in_page is None else in_page
        self.page_app: Any = (
            self._with_report_route(self.stream_log.wrap(create_app(self.settings)))
            if self.in_page
            else None
        )

    @property
    def running(self) -> bool:
        """True while the server serves (in the page: always, it runs when a request comes)."""
        if self.in_page:
            return True
        background = self._background
        return background is not None and background.thread.is_alive()

    @property
    def socket_path(self) -> Path:
        """The socket file: <Jupyter runtime folder>/lessonkit/<socket_name>.sock."""
        return demo_socket.socket_path(self.socket_name)

    def client(self, timeout_s: float = 10.0) -> httpx.Client:
        """Return an httpx client for this server (through its socket); close it after use."""
        transport = httpx.HTTPTransport(uds=str(self.socket_path), verify=False)  # no TLS here
        return httpx.Client(transport=transport, base_url=SOCKET_BASE_URL, timeout=timeout_s)

    def ensure_running(self) -> bool:
        """Start the server unless it runs; return True if it had to be started."""
        with self._lock:
            if self.in_page or self.running:
                return False
            app = create_app(self.settings)
            self._background = _serve_on_socket(
                self._with_report_route(self.stream_log.wrap(app)),
                self.socket_name,
                app.state.lessonkit.hang_up_all,
            )
            return True

    def _with_report_route(self, app: Any) -> Any:
        """Return an ASGI app: POST REPORT_PATH goes to the report book, the rest to `app`."""

        async def with_reports(scope: dict, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == REPORT_PATH:
                response = await self._receive_report(Request(scope, receive))
                await response(scope, receive, send)
            else:
                await app(scope, receive, send)

        return with_reports

    async def _receive_report(self, request: Request) -> JSONResponse:
        """GET ?demo=ID: 200 if this server made that demo, else 404. POST: one PanelReport."""
        if request.method == "GET":
            demo = request.query_params.get("demo", "")
            if self.reports.knows(demo):
                return JSONResponse({"demo": demo, "known": True})
            return JSONResponse({"error": f"no demo {demo!r} was made for this server"}, 404)
        if request.method != "POST":
            return JSONResponse({"error": f"use GET or POST on {REPORT_PATH}"}, 405)
        body = await request.body()
        if len(body) > MAX_REPORT_BYTES:
            return JSONResponse({"error": f"a report is at most {MAX_REPORT_BYTES} bytes"}, 413)
        try:
            demo, report = panel_report(json.loads(body))
        except ValueError as error:  # json.JSONDecodeError is a ValueError too
            return JSONResponse({"error": f"bad report: {error}"}, 400)
        try:
            self.reports.record(demo, report)
        except LookupError as error:
            return JSONResponse({"error": str(error)}, 404)
        return JSONResponse({"recorded": report.kind})

    def stop(self) -> None:
        """Stop serving (open streams are ended); `ensure_running()` starts it again."""
        with self._lock:
            if self._background is not None:
                self._background.stop()

    def describe(self) -> str:
        """Return one stable line about the server (no socket name: it changes every run)."""
        if self.in_page:
            return (
                f"The demo's server runs in this kernel (prefill {self.settings.prefill_ms:g} ms, "
                f"{self.settings.per_token_ms:g} ms per token), in your browser tab itself.\n"
                "Simulated here: the network. There is no socket in this edition; each request "
                "and each piece of the answer travels as a widget message between page and kernel."
            )
        return (
            f"The demo's server runs in this kernel (prefill {self.settings.prefill_ms:g} ms, "
            f"{self.settings.per_token_ms:g} ms per token) until the kernel stops.\n"
            "It listens on a private socket, not a network port; your page reaches it through "
            f"the Jupyter server: {ROUTED}/"
        )


# What the kernel's httpx clients write as the host of a socket server (any name works).
SOCKET_BASE_URL = "http://lessonkit-demo"


def _serve_on_socket(
    app: Any, socket_name: str, on_stop: Callable[[], None] | None = None
) -> BackgroundServer:
    """Start `app` on this user's demo socket `socket_name`; return the running server."""
    # uvicorn only where a socket is opened: the browser kernel never gets here
    from lessonkit.serve.background import BackgroundServer

    folder = demo_socket.socket_folder(create=True)
    demo_socket.remove_stale_sockets(folder)  # left by kernels that were killed
    background = BackgroundServer(
        app, unix_socket=demo_socket.socket_path(socket_name), on_stop=on_stop
    )
    background.start()
    return background


@contextlib.contextmanager
def serving_to_the_page(app: Any, *, on_stop: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield the socket name under which the page reaches `app`, for the with-block.

    ``BrowserStreamDemo(name)`` then shows the demo against it (with no reports: only
    start_server()'s servers keep them). For example a buffering proxy in front of the
    course's server, to see the tokens held back::

        with serving_to_the_page(proxy.create_proxy_app(url, buffer=True)) as name:
            BrowserStreamDemo(name)
    """
    background = _serve_on_socket(app, demo_socket.new_socket_name(), on_stop)
    try:
        yield background.unix_socket.stem
    finally:
        background.stop()


_KERNEL_SERVERS: dict[tuple[float, float], DemoServer] = {}


def start_server(prefill_ms: float = 300, per_token_ms: float = DEMO_PER_TOKEN_MS) -> DemoServer:
    """Return this kernel's running demo server with this pacing, started if needed.

    The server lives as long as the kernel: Run All, later cells and "Stream again"
    all find it. Calling again with the same pacing returns the same server.
    """
    settings = Settings.from_options(prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    key = (settings.prefill_ms, settings.per_token_ms)
    server = _KERNEL_SERVERS.get(key)
    if server is None:
        server = _KERNEL_SERVERS[key] = DemoServer(prefill_ms, per_token_ms)
        if not server.in_page:
            atexit.register(server.stop)
    server.ensure_running()
    return server


# --- the widget --------------------------------------------------------------------------


class BrowserStreamDemo(anywidget.AnyWidget):
    """The browser demo widget: give it start_server()'s server (or a demo socket's name)."""

    _esm = Path(__file__).with_name("browser_demo.js")
    _css = _CSS
    # What the panels read: <Jupyter base URL>lessonkit/demo/<socket_name>/, the course's route.
    socket_name = traitlets.Unicode("").tag(sync=True)
    reports = traitlets.Bool(False).tag(sync=True)  # False: the page sends no reports
    demo_id = traitlets.Unicode("").tag(sync=True)
    prompt = traitlets.Unicode(llm.RUNNING_PROMPT).tag(sync=True)
    panels = traitlets.List(traitlets.Unicode(), list(PANELS)).tag(sync=True)
    # "route": requests go through the Jupyter server's course route to the socket (the full
    # edition); "widget": they go to this kernel as widget messages (the browser kernel).
    transport = traitlets.Unicode("route").tag(sync=True)
    # What an SSE client asks for; "" leaves the header out (the route streams either way).
    fetch_accept = traitlets.Unicode("text/event-stream").tag(sync=True)
    # Written by the page (read them once the kernel is idle again).
    page_base_url = traitlets.Unicode("").tag(sync=True)
    eventsource_url = traitlets.Unicode("").tag(sync=True)
    eventsource_text = traitlets.Unicode("").tag(sync=True)
    eventsource_status = traitlets.Unicode("not started").tag(sync=True)
    fetch_url = traitlets.Unicode("").tag(sync=True)
    fetch_text = traitlets.Unicode("").tag(sync=True)
    fetch_status = traitlets.Unicode("not started").tag(sync=True)

    def __init__(self, server: DemoServer | str, **kwargs: Any) -> None:
        if isinstance(server, DemoServer):
            self._server: DemoServer | None = server
            server.ensure_running()
            name = server.socket_name
        elif isinstance(server, str):
            self._server = None  # a socket name alone: nothing in this kernel takes reports
            name = server
            if not demo_socket.NAME.fullmatch(name):
                raise ValueError(
                    f"expected start_server()'s server or the name serving_to_the_page() gave, "
                    f"got {server!r}: the page reaches only servers on this user's demo "
                    "sockets, never a network address"
                )
        else:
            raise TypeError(
                f"BrowserStreamDemo takes start_server()'s server or a demo socket's name, "
                f"got {server!r}"
            )
        unknown = set(kwargs.get("panels", PANELS)) - set(PANELS)
        if unknown:
            raise ValueError(f"panels must be among {', '.join(PANELS)}, got {sorted(unknown)}")
        in_the_page = self._server is not None and self._server.in_page
        super().__init__(
            socket_name=name,
            reports=self._server is not None,
            demo_id=uuid.uuid4().hex,
            transport="widget" if in_the_page else "route",
            **kwargs,
        )
        self._page_requests = (
            in_page.PageRequests(self._server.page_app, lambda *a, **k: self.send(*a, **k))
            if in_the_page
            else None
        )
        self._created = time.monotonic()
        self._live_reports: list[Any] = []  # browser_report()'s outputs still filling in
        if self._server is not None:
            self._server.reports.register(self.demo_id)
        self.add_class("lk-browser-demo-widget")
        self.on_msg(self._on_page_message)

    def _on_page_message(self, _widget: Any, content: Any, buffers: Any) -> None:
        """Start the server again if it was stopped (the page asks on "Stream again").

        In the page (transport "widget"), also: a request to serve, a request to abort,
        or a panel's report (which the full edition POSTs to the report route instead).
        """
        kind = content.get("type") if isinstance(content, dict) else None
        if self._page_requests is not None and kind in in_page.PAGE_MESSAGES:
            self._page_requests.handle(content, buffers)
            return
        if self._server is not None and kind == "report":
            try:
                demo, report = panel_report(content.get("report"))
                self._server.reports.record(demo, report)
            except (ValueError, LookupError) as error:
                self.send({"type": "report-refused", "error": str(error)})
                return
            self._fill_in_live_reports()
            return
        if self._server is not None and content == {"type": "ensure-server"}:
            if self._server.ensure_running():  # on the same socket: the page's URLs hold
                self.send({"type": "server-restarted"})

    def browser_report(self, *, grace_s: float = 5.0, timeout_s: float = 30.0) -> Any:
        """Return what the page received, once every panel's latest run has finished.

        If no page has reported `grace_s` seconds after the widget was made, no
        browser shows it (a headless run): the report is empty. A run still going
        after `timeout_s` is reported as it stands. In the browser kernel it returns at
        once, with an output that fills itself in if the page has not reported yet
        (_report_in_page says why it cannot wait).
        """
        if self._server is None:
            raise ValueError(
                "this demo was made from a socket name, so no report can reach the kernel; "
                "make it with BrowserStreamDemo(browser_demo.start_server())"
            )
        book, started = self._server.reports, time.monotonic()
        if self._server.in_page:
            return self._report_in_page()
        with book.changed:
            while True:
                panels = book.latest(self.demo_id)
                now = time.monotonic()
                if panels and set(panels) >= set(self.panels):
                    if all(p.finished for p in panels.values()):
                        return BrowserReport(_in_order(panels), "finished", now - started)
                elif now - self._created > grace_s:
                    return BrowserReport({}, "no browser", now - started)
                if now - started > timeout_s:
                    return BrowserReport(_in_order(panels), "still streaming", now - started)
                book.changed.wait(timeout=0.25)

    def _report_in_page(self) -> Any:
        """browser_report() in the browser kernel: what reached the kernel, and the rest later.

        That kernel handles one message at a time, so the page's reports, widget messages,
        wait behind the running cell (under Run All, behind every cell left to run):
        nothing makes them arrive while this cell runs. So this returns at once: the
        report, if every panel's run has reached the kernel; else an output that says so
        and fills itself in as the reports arrive (_fill_in_live_reports).
        """
        report = self._in_page_report()
        if report.outcome == "finished":
            return report
        from lessonkit.lab.binding import monospace

        live = widgets.HTML(monospace(str(report)))
        live.add_class("lk-browser-report")
        self._live_reports.append(live)
        return live

    def _in_page_report(self) -> BrowserReport:
        panels = self._server.reports.latest(self.demo_id)  # type: ignore[union-attr]
        done = bool(panels) and set(panels) >= set(self.panels)
        done = done and all(p.finished for p in panels.values())
        outcome = "finished" if done else "waiting for the page"
        return BrowserReport(_in_order(panels), outcome, 0.0, in_page=True)

    def _fill_in_live_reports(self) -> None:
        """Write the latest report into browser_report()'s outputs that wait for it."""
        if not self._live_reports:
            return
        from lessonkit.lab.binding import monospace

        report = self._in_page_report()
        for live in self._live_reports:
            live.value = monospace(str(report))
        if report.outcome == "finished":
            self._live_reports.clear()

    def __repr__(self) -> str:
        # The plain-text twin of the widget: stable across runs (no address, no port).
        return "BrowserStreamDemo(EventSource and fetch side by side; runs in a live page)"

    def twinned(self) -> Any:
        """Return the demo in a twinned box: "Run this cell ..." wherever it cannot stream."""
        from lessonkit.lab.binding import Twinned

        return Twinned(
            [self],
            css_class="lk-browser-demo-box",
            headline="Run this cell to open the browser demo.",
            what="In a live JupyterLab page, two panels read the same answer in your browser,"
            " one with EventSource and one with fetch, token by token."
            + (" (This kernel's server is not running now: run the cells above again.)"
               if self._server is not None and not self._server.running else ""),
        )  # fmt: skip

    def _ipython_display_(self) -> None:
        """Show the demo the way the explorers show: its twin, then the live panels."""
        self.twinned()._ipython_display_()


def _in_order(panels: dict[str, PanelReport]) -> dict[str, PanelReport]:
    return {kind: panels[kind] for kind in PANELS if kind in panels}


# --- the static twin, and helpers ----------------------------------------------------------

# How describe() writes the page's path by default (the route: lessonkit.serve.jupyter_route).
ROUTED = "<Jupyter base URL>lessonkit/demo/<name>"


def describe(
    base_url: str = ROUTED, prompt: str = llm.RUNNING_PROMPT, *, in_page: bool | None = None
) -> str:
    """Return the static description of what the browser demo does (for headless runs).

    The default base_url is the routed path with placeholders, so the text is the
    same on every run and every machine. In the browser kernel (``in_page``, by
    default when the kernel runs there) it describes that edition's way instead:
    widget messages, no Jupyter server, no socket.
    """
    answer = llm.answer_for(prompt).text
    if sys.platform == "emscripten" if in_page is None else in_page:
        return "\n".join(
            [
                "In this page the widget above runs two readers, and the kernel they read runs",
                "in this tab too: this edition has no Jupyter server and no socket. Each",
                "request goes to the kernel as a widget message; the kernel runs the course's",
                "server app and sends each piece of the answer back as a widget message the",
                "moment the app writes it:",
                "  EventSource : the same GET /v1/stream?prompt=..., read by EventSource's rules",
                "                in JavaScript (an EventSource object can only open a URL, and",
                "                no URL leads to this kernel); closed on the 'done' event.",
                "  fetch       : a Response built from those messages, its body a stream, read",
                "                with getReader() and decoder.decode(bytes, {stream: true}),",
                "                [DONE] checked before JSON.parse, as in JupyterLab.",
                f"Both panels fill in token by token with {answer!r} and then show 'done'.",
            ]
        )
    return "\n".join(
        [
            "In a live JupyterLab page the widget above runs two readers in your browser.",
            "Neither calls the kernel's server itself: it listens on a private socket file, not",
            "a network port, and the page may run on another machine. Both ask the Jupyter",
            "server that served the page, whose course route passes each request on to this",
            "user's socket <name> and each piece of the answer back as it arrives:",
            f"  EventSource : new EventSource('{base_url}/v1/stream?prompt=...')",
            "                GET only, cannot send an API key header; the browser parses SSE",
            "                and reconnects by itself (we close it on the 'done' event).",
            f"  fetch       : fetch('{base_url}/v1/chat/completions', {{method: 'POST',",
            "                headers: {Accept: 'text/event-stream', 'X-Api-Key': ...},",
            "                body: ...stream: true...})",
            "                then response.body.getReader() and decoder.decode(bytes, {stream: true}),",
            "                line ends normalised across reads, events split on blank lines,",
            "                [DONE] checked before JSON.parse.",
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
