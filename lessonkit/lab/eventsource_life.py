"""Lesson 03's EventSource life cycle: one real EventSource, from open to closed.

    server = browser_demo.start_server()        # the browser demo's server, on its socket
    life = EventSourceLife(server)              # the panel: two choices, Open, the rows
    life                                        # (display it)

The learner picks how the server ends the stream (ENDINGS: the body ends after three
tokens, then the reconnect resumes, or gets 204, 500 or another Content-Type) and the
retry: it sends (RETRIES), then opens a real EventSource in their own page
(eventsource_life.js). The page only notes what the browser does: each event, the
readyState right after it, ms after ``new EventSource(url)``. It sends each note to the
kernel, and ``story()`` -- pure: no widget, no clock -- turns the notes and the requests
the server saw (``StreamLog``) into the rows the panel shows. The page reaches the
server through the course's Jupyter route, like the browser demo, so it works where the
page runs on another machine (a hub).

Headless, and in the zero-install edition, where the kernel lives in the page and answers
widget messages, not URLs (an EventSource has nothing to open), the panel shows a stored
run of the same choices and says so: recorded in headless Chromium against the course's
server by tools/record_eventsource_runs.py, kept in lessonkit/data/eventsource_runs.json.

    ENDINGS, RETRIES, stream_path()   the choices, and the URL path they make
    Seen, ServerRequest               what the page noted; what the server saw
    story(seen, requests, retry=...)  -> Story: the rows, the server's lines, a summary
    stored_run(ending, retry)         a recorded run of those choices
    StreamLog                         the server side: each run's requests, as they came
    EventSourceLife                   the widget
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import anywidget
import traitlets

from lessonkit.core import llm

__all__ = [
    "ENDINGS",
    "RETRIES",
    "EventSourceLife",
    "Seen",
    "ServerRequest",
    "Story",
    "StreamLog",
    "story",
    "stored_run",
    "stream_path",
]

READY_STATES = ("CONNECTING", "OPEN", "CLOSED")  # EventSource.readyState 0, 1, 2
END_AFTER_TOKENS = 3  # the first connection's body ends after three tokens, with no done event
# How the server ends the stream: the panel's words, and the query parameters that ask for
# it (lessonkit.serve.checks.read_stream_ending). Every ending first ends the body cleanly.
ENDINGS: dict[str, tuple[str, dict[str, str]]] = {
    "resume": ("the body ends; the reconnect resumes (200)", {}),
    "204": ("the body ends; the reconnect gets 204 No Content", {"reconnect_status": "204"}),
    "500": ("the body ends; the reconnect gets 500", {"reconnect_status": "500"}),
    "text/plain": (
        "the body ends; the reconnect comes as text/plain",
        {"reconnect_content_type": "text/plain"},
    ),
}
RETRIES = {
    "none": "none (the browser's own delay)",
    "500": "500 ms",
    "1000": "1000 ms",
    "2000": "2000 ms",
}
DEFAULT_ENDING, DEFAULT_RETRY = "204", "none"
# With no retry: field the delay is the browser's: 3000 ms in Chromium, 5000 in Firefox
# (kDefaultReconnectDelay in Blink's event_source.cc; DEFAULT_RECONNECTION_TIME_VALUE in
# Gecko's dom/base/EventSource.cpp). The page waits twice the longest before it counts.
LONGEST_DEFAULT_RETRY_MS = 5000
KINDS = ("created", "open", "message", "done", "error", "close", "quiet")
MAX_NOTES = 200  # a run notes about 15 things; more is a page gone wrong
RUNS_FILE = Path(__file__).resolve().parents[1] / "data" / "eventsource_runs.json"


def _choice(ending: str, retry: str) -> None:
    """Raise ValueError naming the choices if `ending` or `retry` is not one of them."""
    if ending not in ENDINGS:
        raise ValueError(f"ending must be one of {', '.join(map(repr, ENDINGS))}, got {ending!r}")
    if retry not in RETRIES:
        raise ValueError(f"retry must be one of {', '.join(map(repr, RETRIES))}, got {retry!r}")


def retry_ms(retry: str) -> int | None:
    """Return the retry: value a choice sends, in ms (None: no retry: field)."""
    return None if retry == "none" else int(retry)


def stream_path(ending: str, retry: str, *, run: str, prompt: str = llm.RUNNING_PROMPT) -> str:
    """Return the path and query of GET /v1/stream for these choices, labelled with `run`.

    ``run`` only labels the requests for StreamLog; the server itself ignores it.
    """
    _choice(ending, retry)
    query = {"prompt": prompt, "end_after_tokens": str(END_AFTER_TOKENS), "retry": retry}
    return "/v1/stream?" + urlencode({**query, **ENDINGS[ending][1], "run": run})


def quiet_ms(retry: str) -> int:
    """Return how long the page watches a CLOSED EventSource for a reconnect that must not come."""
    return max(3000, 2 * (retry_ms(retry) or LONGEST_DEFAULT_RETRY_MS))


# --- what the page saw, what the server saw ------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One thing the page's EventSource did, ms after ``new EventSource(url)``.

    kind is one of KINDS: "close" is the page's own close() (the browser fires no event
    for it), "quiet" a look at a CLOSED EventSource some time later. ready_state is the
    readyState right after. server_requests: how many requests of the run the server had
    seen when the note reached the kernel.
    """

    at_ms: float
    kind: str
    ready_state: int
    data: str = ""
    last_event_id: str = ""
    server_requests: int | None = None


def seen_from(note: Any) -> Seen:
    """Return the Seen a page sent as JSON; ValueError naming what is wrong."""
    if not isinstance(note, Mapping):
        raise ValueError("a note must be a JSON object")
    at_ms, kind, state = note.get("at_ms"), note.get("kind"), note.get("ready_state")
    if isinstance(at_ms, bool) or not isinstance(at_ms, (int, float)) or not 0 <= at_ms < 1e9:
        raise ValueError(f"'at_ms' must be a number of ms, 0 or more, got {at_ms!r}")
    if kind not in KINDS:
        raise ValueError(f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    if state not in (0, 1, 2) or isinstance(state, bool):
        raise ValueError(f"'ready_state' must be 0, 1 or 2, got {state!r}")
    texts = {name: note.get(name, "") for name in ("data", "last_event_id")}
    for name, text in texts.items():
        if not isinstance(text, str) or len(text) > 10_000:
            raise ValueError(f"{name!r} must be a string of at most 10,000 characters")
    return Seen(float(at_ms), kind, state, texts["data"], texts["last_event_id"])


@dataclass(frozen=True)
class ServerRequest:
    """One request of a run, as the server saw it: the Last-Event-ID it carried ("" for
    none) and the answer's status and Content-Type (0 and "" until the answer starts)."""

    last_event_id: str
    status: int = 0
    content_type: str = ""

    def answer(self) -> str:
        """Return the answer in a few words: "204 No Content", "200 text/plain", ..."""
        if self.status == 204:
            return "204 No Content"
        if self.status == 200:
            return f"200 {self.content_type.split(';')[0]}"
        return str(self.status) if self.status else "no answer yet"


# --- the story: what the panel shows --------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the panel: when, the readyState (and its change), the event, its meaning."""

    at_ms: float
    state: str
    event: str
    meaning: str
    kind: str
    ready_state: int
    delay_ms: float | None = None  # for the row that ends a reconnection: its measured delay

    def as_dict(self) -> dict[str, Any]:
        """Return the row for the page: its fields, and "at" as the panel writes it."""
        return {**asdict(self), "at": _ms(self.at_ms)}


@dataclass(frozen=True)
class Story:
    """What one run shows: its rows, the server's requests in words, and a summary."""

    rows: tuple[Row, ...]
    server: tuple[str, ...]
    summary: tuple[str, ...]

    @property
    def text(self) -> str:
        """Return the whole story as plain text: a table of rows, then the lines under it."""
        lines = [f"{'time':>9}  {'readyState':<19}  {'event':<15}  what it means"]
        lines += [
            f"{_ms(r.at_ms):>9}  {r.state:<19}  {r.event:<15}  {r.meaning}" for r in self.rows
        ]
        if self.server:
            lines += ["The server saw:", *(f"  {line}" for line in self.server)]
        return "\n".join([*lines, *self.summary])


def _ms(value: float) -> str:
    return f"{value:,.0f} ms"


def _waits(retry: str) -> str:
    """Return how long a browser waits before it reconnects, in words."""
    if retry_ms(retry) is None:
        return "its own delay (no retry: came; Chromium waits 3 s, Firefox 5 s)"
    return f"at least {retry_ms(retry):,} ms (retry: {retry})"


def _failure(request: ServerRequest | None) -> str:
    """Return why EventSource failed the connection, from the answer the server gave."""
    if request is None or not request.status:
        return "an answer EventSource refuses"
    if request.status != 200:
        return f"{request.answer()}: any status but 200 ends an EventSource for good"
    kind = request.content_type.split(";")[0]
    return f"Content-Type {kind}, not text/event-stream: that ends an EventSource for good"


def _describe(
    note: Seen,
    *,
    delay: float | None,
    attempt: ServerRequest | None,
    retry: str,
    made: tuple[int, int],
    closed_at: float | None,
) -> tuple[str, str]:
    """Return (event, meaning) of one note; `made` is how many requests the browser made
    (at least, at most: a reconnect cut short by close() may or may not have gone out),
    `closed_at` when it became CLOSED."""
    after = f"{_ms(delay)} after the error, " if delay is not None else ""
    if note.kind == "created":
        return "(new)", "new EventSource(url): the browser sends GET, Accept: text/event-stream"
    if note.kind == "open":
        return "open", f"{after}200 with text/event-stream: the stream is open"
    if note.kind in ("message", "done"):
        event = f"{note.kind} (id {note.last_event_id})" if note.last_event_id else note.kind
        if note.kind == "done":
            return event, "the server's last event: the page calls close()"
        try:
            return event, repr(json.loads(note.data)["delta"])
        except (ValueError, KeyError, TypeError):
            return event, repr(note.data)
    if note.kind == "close":
        return "(none)", "close(): CLOSED at once, and no event fires; no reconnect follows"
    if note.kind == "error" and note.ready_state == 0:
        return "error", f"the body ended: the browser waits {_waits(retry)}, then reconnects"
    if note.kind == "error":
        return "error", f"{after}the reconnect got {_failure(attempt)}"
    # quiet: a look at the CLOSED EventSource, and at the server's count of requests
    state, requests = READY_STATES[note.ready_state], note.server_requests
    later = f"{_ms(note.at_ms - closed_at)} later: " if closed_at is not None else ""
    if requests is None or made[0] <= requests <= made[1]:
        return "(none)", f"{later}still {state}, and no request reached the server since"
    return (
        "(none)",
        f"{later}still {state}, yet the server saw {requests - made[0]} more request(s)",
    )


def story(seen: Iterable[Seen], requests: Iterable[ServerRequest], *, retry: str) -> Story:
    """Return what the panel shows for a run: `seen` in order, `requests` as the server saw them.

    A reconnection's delay is measured from the ``error`` that left the EventSource
    CONNECTING to the next ``open`` or ``error``: the browser's wait, then the round
    trip to the answer's headers.
    """
    requests = list(requests)
    rows: list[Row] = []
    before: int | None = None
    pending_since: float | None = None  # an error left it CONNECTING: a reconnect is due
    delays: list[float] = []
    attempt, text, quiet, closed_at = 0, "", None, None
    for note in seen:
        delay = None
        if pending_since is not None and note.kind in ("open", "error"):
            delay = note.at_ms - pending_since
            delays.append(delay)
            pending_since, attempt = None, attempt + 1
        state = READY_STATES[note.ready_state]
        if before is not None and before != note.ready_state:
            state = f"{READY_STATES[before]} → {state}"
        made = (1 + len(delays), 1 + len(delays) + (pending_since is not None))
        event, meaning = _describe(
            note,
            delay=delay,
            attempt=requests[attempt] if attempt < len(requests) else None,
            retry=retry,
            made=made,
            closed_at=closed_at,
        )
        rows.append(Row(note.at_ms, state, event, meaning, note.kind, note.ready_state, delay))
        if note.kind == "error" and note.ready_state == 0:
            pending_since = note.at_ms
        if note.kind == "message":
            text += _delta(note.data)
        if note.kind == "quiet":
            quiet = note
        if note.ready_state == 2 and closed_at is None:
            closed_at = note.at_ms
        before = note.ready_state
    server = tuple(
        f"request {i}: {'Last-Event-ID: ' + r.last_event_id if r.last_event_id else 'no Last-Event-ID'}"
        f" -> {r.answer()}"
        for i, r in enumerate(requests, start=1)
    )
    return Story(tuple(rows), server, _summary(rows, delays, text, retry, quiet))


def _delta(data: str) -> str:
    try:
        delta = json.loads(data)["delta"]
    except (ValueError, KeyError, TypeError):
        return ""
    return delta if isinstance(delta, str) else ""


def _summary(
    rows: list[Row], delays: list[float], text: str, retry: str, quiet: Seen | None
) -> tuple[str, ...]:
    """Return the lines under the rows: reconnections, how it ended, what the page has."""
    if not rows:
        return ()
    lines = []
    if delays:
        each = ", ".join(_ms(d) for d in delays)
        lines.append(
            f"Reconnections: {len(delays)}, after {each}; the browser waits {_waits(retry)}."
        )
    if any(row.kind == "close" for row in rows):
        lines.append("Ended by the page: close(), which fires no event.")
    elif rows[-1].ready_state == 2:
        lines.append("Ended for good by the server's answer: no further reconnects.")
    else:
        lines.append(f"Not ended yet: readyState {READY_STATES[rows[-1].ready_state]}.")
    lines.append(f"The page received {text!r}" + ("." if quiet else " so far."))
    return tuple(lines)


# --- stored runs ----------------------------------------------------------------------------


@cache
def _stored() -> dict[str, Any]:
    return json.loads(RUNS_FILE.read_text(encoding="utf-8"))


def recorded_with() -> str:
    """Return where and when the stored runs were recorded."""
    return str(_stored()["recorded_with"])


def stored_run(ending: str, retry: str) -> tuple[tuple[Seen, ...], tuple[ServerRequest, ...]]:
    """Return the recorded run of these choices: what the page saw, what the server saw."""
    _choice(ending, retry)
    for run in _stored()["runs"]:
        if (run["ending"], run["retry"]) == (ending, retry):
            seen = tuple(Seen(**note) for note in run["seen"])
            return seen, tuple(ServerRequest(**request) for request in run["requests"])
    raise LookupError(f"no stored run for ending={ending!r}, retry={retry!r} in {RUNS_FILE.name}")


# --- the server side: each run's requests -------------------------------------------------------


class StreamLog:
    """The GET /v1/stream requests of each life-cycle run, as the server saw them.

    ``wrap(app)`` returns the app with the log in front: a request whose query holds
    ``run=<id>`` (stream_path puts it there) is noted when it arrives, with its
    Last-Event-ID, and completed with the status and Content-Type of its answer.
    Written on the server's thread, read by the kernel's: a lock keeps them apart.
    """

    MAX_RUNS = 100  # the oldest run goes first

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[ServerRequest]] = {}

    def requests(self, run: str) -> tuple[ServerRequest, ...]:
        """Return the requests of `run` so far, in the order they arrived."""
        with self._lock:
            return tuple(self._runs.get(run, ()))

    def _note(self, run: str, index: int | None, request: ServerRequest) -> int:
        with self._lock:
            requests = self._runs.setdefault(run, [])
            if index is None:
                requests.append(request)
                while len(self._runs) > self.MAX_RUNS:
                    del self._runs[next(iter(self._runs))]
                return len(requests) - 1
            requests[index] = request
            return index

    def wrap(self, app: Any) -> Any:
        """Return an ASGI app: `app`, with each run's /v1/stream requests noted."""

        async def logged(scope: dict, receive: Any, send: Any) -> None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            run = query.get("run", [""])[0]
            if scope["type"] != "http" or scope["path"] != "/v1/stream" or not run:
                await app(scope, receive, send)
                return
            headers = {k.lower(): v for k, v in scope.get("headers", [])}
            last_id = headers.get(b"last-event-id", b"").decode("latin-1")
            index = self._note(run, None, ServerRequest(last_id))

            async def noting(message: dict) -> None:
                if message["type"] == "http.response.start":
                    answer = dict((k.lower(), v) for k, v in message.get("headers", []))
                    kind = answer.get(b"content-type", b"").decode("latin-1")
                    self._note(run, index, ServerRequest(last_id, message["status"], kind))
                await send(message)

            await app(scope, receive, noting)

        return logged


# --- the widget -------------------------------------------------------------------------------

# Theme variables only, so the light, dark and high-contrast themes all read at 4.5:1.
_CSS = """
.lk-life { color: var(--jp-content-font-color1); border: 1px solid var(--jp-border-color1);
  border-radius: 4px; padding: 8px; }
.lk-life .lk-life-title { font-weight: bold; }
.lk-life .lk-life-controls { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center;
  margin: 6px 0; }
.lk-life .lk-life-choice { display: flex; gap: 6px; align-items: center; }
.lk-life select, .lk-life button { color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color2); border: 1px solid var(--jp-border-color1);
  border-radius: 3px; padding: 2px 8px; font: inherit; }
.lk-life button { cursor: pointer; }
.lk-life button:disabled { cursor: default; color: var(--jp-ui-font-color2); }
.lk-life select:focus-visible, .lk-life button:focus-visible {
  outline: 2px solid var(--jp-brand-color1); }
.lk-life .lk-life-note, .lk-life .lk-life-url { font-size: 85%; }
.lk-life .lk-life-url { font-family: monospace; word-break: break-all; }
.lk-life table { border-collapse: collapse; margin: 6px 0; font-size: 90%; }
.lk-life caption { text-align: left; font-size: 85%; }
.lk-life th, .lk-life td { text-align: left; padding: 1px 10px 1px 0; vertical-align: top; }
.lk-life td.lk-life-at { text-align: right; font-family: monospace; white-space: nowrap; }
.lk-life td.lk-life-state { font-family: monospace; white-space: nowrap; }
.lk-life ul.lk-life-server { margin: 4px 0; padding-left: 1.5em; font-size: 90%; }
"""


class EventSourceLife(anywidget.AnyWidget):
    """The life-cycle panel: give it start_server()'s server (lessonkit.lab.browser_demo)."""

    _esm = Path(__file__).with_name("eventsource_life.js")
    _css = _CSS
    socket_name = traitlets.Unicode("").tag(sync=True)
    # "route": a real EventSource through the Jupyter server; "widget": the browser kernel,
    # where nothing can be opened and a stored run shows.
    transport = traitlets.Unicode("route").tag(sync=True)
    endings = traitlets.List([[k, v[0]] for k, v in ENDINGS.items()]).tag(sync=True)
    retries = traitlets.List([[k, v] for k, v in RETRIES.items()]).tag(sync=True)
    ending = traitlets.Unicode(DEFAULT_ENDING).tag(sync=True)
    retry = traitlets.Unicode(DEFAULT_RETRY).tag(sync=True)
    # What the panel shows, all computed here by story().
    note = traitlets.Unicode("").tag(sync=True)
    url = traitlets.Unicode("").tag(sync=True)  # the run's URL, written by the page
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    server_lines = traitlets.List(traitlets.Unicode()).tag(sync=True)
    summary = traitlets.List(traitlets.Unicode()).tag(sync=True)
    # "ready", "running", "ended" (closed, and quiet for a while), or "stored"
    status = traitlets.Unicode("ready").tag(sync=True)

    def __init__(
        # server: a browser_demo.DemoServer (typed Any: browser_demo imports this module)
        self,
        server: Any,
        *,
        ending: str = DEFAULT_ENDING,
        retry: str = DEFAULT_RETRY,
    ) -> None:
        _choice(ending, retry)
        if not hasattr(server, "socket_name") or not hasattr(server, "stream_log"):
            raise TypeError(
                f"EventSourceLife takes browser_demo.start_server()'s server, got {server!r}"
            )
        super().__init__(
            socket_name=server.socket_name,
            transport="widget" if server.in_page else "route",
            ending=ending,
            retry=retry,
        )
        self._server = server
        self._run, self._run_retry = "", retry
        self._seen: list[Seen] = []
        self.add_class("lk-life-widget")
        self.on_msg(self._on_page_message)
        self.observe(self._choice_changed, names=["ending", "retry"])
        if server.in_page:
            self._show_stored()
        else:
            self.note = "Pick the server's ending and retry:, then open an EventSource."

    @property
    def run_id(self) -> str:
        """The label of the latest run ("" before the first): StreamLog.requests(run_id)."""
        return self._run

    @traitlets.validate("ending", "retry")
    def _known_choice(self, proposal: Any) -> str:
        name, value = proposal["trait"].name, proposal["value"]
        if value not in (ENDINGS if name == "ending" else RETRIES):
            raise traitlets.TraitError(f"unknown {name} {value!r}")
        return value

    def _choice_changed(self, _change: Any) -> None:
        if self.transport == "widget":
            self._show_stored()

    def _show(self, shown: Story) -> None:
        self.rows = [row.as_dict() for row in shown.rows]
        self.server_lines = list(shown.server)
        self.summary = list(shown.summary)

    def _show_stored(self) -> None:
        self._show(story(*stored_run(self.ending, self.retry), retry=self.retry))
        self.note = (
            f"A stored run, not your browser's: {recorded_with()}. In this edition the kernel "
            "runs in your tab and answers widget messages, not URLs, so an EventSource has "
            "nothing to open; in JupyterLab this panel opens a real one."
        )
        self.status = "stored"

    def _on_page_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Take the page's "open" (start a run) and "seen" (one note of the current run)."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "open" and not self._server.in_page:
            # The page's choices come with it: its trait updates may arrive after this.
            ending, retry = content.get("ending", self.ending), content.get("retry", self.retry)
            if ending not in ENDINGS or retry not in RETRIES:
                self.send({"type": "refused", "error": f"unknown choice {ending!r}, {retry!r}"})
                return
            self.ending, self.retry = ending, retry
            self._server.ensure_running()  # on the same socket: the page's URL holds
            self._run, self._run_retry, self._seen = uuid.uuid4().hex[:12], self.retry, []
            self._show(Story((), (), ()))
            self.note = (
                f"A live run in your browser: {ENDINGS[self.ending][0]}; "
                f"retry: {RETRIES[self.retry]}."
            )
            self.status = "running"
            path = stream_path(self.ending, self.retry, run=self._run)
            self.send({"type": "go", "run": self._run, "path": path,
                       "quiet_ms": quiet_ms(self.retry)})  # fmt: skip
        elif kind == "seen" and content.get("run") == self._run and self._run:
            if len(self._seen) >= MAX_NOTES:
                return
            try:
                note = seen_from(content.get("seen"))
            except ValueError as error:
                self.send({"type": "refused", "error": str(error)})
                return
            requests = self._server.stream_log.requests(self._run)
            self._seen.append(Seen(**{**asdict(note), "server_requests": len(requests)}))
            self._show(story(self._seen, requests, retry=self._run_retry))
            if note.kind == "quiet":
                self.status = "ended"

    def __repr__(self) -> str:
        # The plain-text twin of the widget: stable across runs (no address, no run id).
        return "EventSourceLife(one EventSource from open to closed; runs in a live page)"

    def twinned(self) -> Any:
        """Return the panel in a twinned box whose twin shows the stored run of its choices."""
        from lessonkit.lab.binding import Explorer

        shown = story(*stored_run(self.ending, self.retry), retry=self.retry)
        return Explorer(
            [self],
            css_class="lk-life-box",
            title="EventSource life cycle",
            what="Pick how the server ends the stream and the retry: it sends, then open an"
            " EventSource in your browser: each readyState change and event, timed. As text,"
            f" a stored run ({ENDINGS[self.ending][0]}; retry: {RETRIES[self.retry]}),"
            f" {recorded_with()}:",
            text=shown.text,
        )

    def _ipython_display_(self) -> None:
        """Show the panel the way the explorers show: its twin, then the live panel."""
        self.twinned()._ipython_display_()
