"""Lesson 03's EventSource life cycle, headless: story(), the stored runs, StreamLog, the widget.

story() is what the panel shows for a sequence of notes from the page: checked here on
notes written by hand (each one a behaviour of the spec's processing model) and on the
runs recorded in Chromium. The real browser runs it in tests/browser/test_browser_life.py.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from lessonkit.lab import browser_demo
from lessonkit.lab import eventsource_life as life
from lessonkit.lab.eventsource_life import Seen, ServerRequest, story
from lessonkit.serve.app import create_app
from lessonkit.serve.checks import Settings

FIRST = ServerRequest("", 200, "text/event-stream; charset=utf-8")


def opened_then_ended(*, then: list[Seen]) -> list[Seen]:
    """The first connection of every ending: open, three tokens, the body ends."""
    deltas = ["Your", " order", " ships"]
    return [
        Seen(0, "created", 0),
        Seen(5, "open", 1),
        *(Seen(400 + 120 * i, "message", 1, json.dumps({"delta": d}), str(i)) for i, d in enumerate(deltas)),
        Seen(650, "error", 0),
        *then,
    ]  # fmt: skip


def test_each_readystate_change_shows_both_states_and_a_steady_state_shows_one():
    shown = story(opened_then_ended(then=[Seen(1700, "error", 2)]), [FIRST], retry="1000")
    assert [r.state for r in shown.rows] == [
        "CONNECTING",
        "CONNECTING → OPEN",
        "OPEN",
        "OPEN",
        "OPEN",
        "OPEN → CONNECTING",
        "CONNECTING → CLOSED",
    ]
    assert [r.ready_state for r in shown.rows] == [0, 1, 1, 1, 1, 0, 2]


def test_a_reconnection_is_timed_from_the_error_to_the_next_answer():
    notes = opened_then_ended(
        then=[Seen(1663, "open", 1), Seen(2100, "message", 1, '{"delta":" on"}', "3")]
    )
    shown = story(notes, [FIRST, FIRST], retry="1000")  # fmt: skip
    reopened = shown.rows[6]
    assert (reopened.kind, reopened.delay_ms) == ("open", 1013)
    assert reopened.meaning.startswith("1,013 ms after the error, 200 with text/event-stream")
    assert "Reconnections: 1, after 1,013 ms; the browser waits at least 1,000 ms (retry: 1000)." in shown.summary  # fmt: skip
    assert [r.delay_ms for r in shown.rows].count(None) == len(shown.rows) - 1


def test_without_retry_the_panel_says_the_delay_is_the_browsers_own():
    shown = story(opened_then_ended(then=[]), [FIRST], retry="none")
    assert "waits its own delay (no retry: came" in shown.rows[-1].meaning
    assert shown.summary[0] == "Not ended yet: readyState CONNECTING."


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (ServerRequest("2", 204), "the reconnect got 204 No Content: any status but 200 ends"),
        (ServerRequest("2", 500, "application/json"), "the reconnect got 500: any status but 200"),
        (
            ServerRequest("2", 200, "text/plain"),
            "got Content-Type text/plain, not text/event-stream",
        ),
    ],
)
def test_a_reconnect_that_fails_for_good_names_the_answer_that_ended_it(answer, reason):
    shown = story(opened_then_ended(then=[Seen(3660, "error", 2)]), [FIRST, answer], retry="none")
    assert reason in shown.rows[-1].meaning
    assert shown.rows[-1].meaning.startswith("3,010 ms after the error")
    assert "Ended for good by the server's answer: no further reconnects." in shown.summary
    assert shown.summary[-1] == "The page received 'Your order ships' so far."


def test_close_is_noted_by_the_page_since_it_fires_no_event():
    notes = [Seen(0, "created", 0), Seen(5, "open", 1), Seen(400, "done", 1, "[DONE]", "6"),
             Seen(400, "close", 2)]  # fmt: skip
    shown = story(notes, [FIRST], retry="none")
    assert shown.rows[2].event == "done (id 6)" and "calls close()" in shown.rows[2].meaning
    assert (shown.rows[3].event, shown.rows[3].state) == ("(none)", "OPEN → CLOSED")
    assert "no event fires" in shown.rows[3].meaning
    assert "Ended by the page: close(), which fires no event." in shown.summary


def test_quiet_after_closed_says_no_request_came_when_the_server_saw_only_the_browsers():
    notes = opened_then_ended(
        then=[Seen(1700, "error", 2), Seen(4700, "quiet", 2, server_requests=2)]
    )
    shown = story(notes, [FIRST, ServerRequest("2", 204)], retry="1000")  # fmt: skip
    assert shown.rows[-1].meaning == (
        "3,000 ms later: still CLOSED, and no request reached the server since"
    )
    assert shown.summary[-1] == "The page received 'Your order ships'."


def test_quiet_after_closed_counts_a_request_the_browser_should_not_have_made():
    notes = opened_then_ended(
        then=[Seen(1700, "error", 2), Seen(4700, "quiet", 2, server_requests=3)]
    )
    shown = story(notes, [FIRST, ServerRequest("2", 204), ServerRequest("2", 204)], retry="1000")  # fmt: skip
    assert shown.rows[-1].meaning.endswith("still CLOSED, yet the server saw 1 more request(s)")


@pytest.mark.parametrize("requests", [1, 2])
def test_close_while_a_reconnect_waits_allows_that_reconnect_to_have_gone_out_or_not(requests):
    notes = opened_then_ended(then=[Seen(900, "close", 2), Seen(4000, "quiet", 2, server_requests=requests)])  # fmt: skip
    shown = story(notes, [FIRST], retry="1000")
    assert shown.rows[-1].meaning.endswith("no request reached the server since")


def test_the_servers_lines_name_each_requests_last_event_id_and_answer():
    shown = story([], [FIRST, ServerRequest("2", 204), ServerRequest("2", 200, "text/plain")], retry="none")  # fmt: skip
    assert shown.server == (
        "request 1: no Last-Event-ID -> 200 text/event-stream",
        "request 2: Last-Event-ID: 2 -> 204 No Content",
        "request 3: Last-Event-ID: 2 -> 200 text/plain",
    )
    assert shown.rows == () and shown.summary == ()


def test_the_story_text_is_a_table_then_the_server_then_the_summary():
    notes = opened_then_ended(then=[Seen(3660, "error", 2)])
    text = story(notes, [FIRST, ServerRequest("2", 204)], retry="none").text.splitlines()
    assert text[0].split() == ["time", "readyState", "event", "what", "it", "means"]
    assert text[1].split()[:4] == ["0", "ms", "CONNECTING", "(new)"]
    assert (
        text[3].split()[:6] == ["400", "ms", "OPEN", "message", "(id", "0)"] and "'Your'" in text[3]
    )
    assert text[8:11] == [
        "The server saw:",
        "  request 1: no Last-Event-ID -> 200 text/event-stream",
        "  request 2: Last-Event-ID: 2 -> 204 No Content",
    ]
    assert text[-1] == "The page received 'Your order ships' so far."


@pytest.mark.parametrize(
    ("note", "message"),
    [
        ([], "a note must be a JSON object"),
        ({"at_ms": -1, "kind": "open", "ready_state": 1}, "'at_ms' must be a number of ms"),
        ({"at_ms": True, "kind": "open", "ready_state": 1}, "'at_ms' must be a number of ms"),
        ({"at_ms": 1, "kind": "readystatechange", "ready_state": 1}, "'kind' must be one of"),
        ({"at_ms": 1, "kind": "open", "ready_state": 3}, "'ready_state' must be 0, 1 or 2"),
        ({"at_ms": 1, "kind": "open", "ready_state": 1, "data": 5}, "'data' must be a string"),
    ],
)
def test_a_malformed_note_from_the_page_is_refused_naming_the_field(note, message):
    with pytest.raises(ValueError, match=message):
        life.seen_from(note)


def test_a_page_note_becomes_a_seen_with_its_fields():
    note = {"at_ms": 12, "kind": "message", "ready_state": 1, "data": "x", "last_event_id": "0"}
    assert life.seen_from(note) == Seen(12.0, "message", 1, "x", "0")


# --- the choices and the server -----------------------------------------------------------


def test_every_choice_makes_a_path_the_server_answers_as_the_panel_says():
    async def first_and_reconnect(path: str) -> tuple[httpx.Response, httpx.Response]:
        app = create_app(Settings(prefill_ms=0, per_token_ms=0))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            first = await client.get(path)
            again = await client.get(path, headers={"Last-Event-ID": "2"})
        return first, again

    for ending in life.ENDINGS:
        for retry in life.RETRIES:
            path = life.stream_path(ending, retry, run="r1")
            query = parse_qs(urlsplit(path).query)
            assert query["run"] == ["r1"] and query["retry"] == [retry]
            first, again = asyncio.run(first_and_reconnect(path))
            events = first.text.split("\n\n")
            assert first.status_code == 200 and "event: done" not in first.text
            assert sum(e.startswith("id:") for e in events) == life.END_AFTER_TOKENS
            assert first.text.startswith("retry:") == (retry != "none")
            expected = {"resume": 200, "204": 204, "500": 500, "text/plain": 200}[ending]
            assert again.status_code == expected, (ending, retry)
            kind = again.headers.get("content-type", "")
            assert kind.startswith("text/plain") == (ending == "text/plain")


@pytest.mark.parametrize(("ending", "retry"), [("close", "none"), ("204", "3000"), ("204", 1000)])
def test_an_unknown_choice_is_refused_naming_the_choices(ending, retry):
    with pytest.raises(ValueError, match="must be one of"):
        life.stream_path(ending, retry, run="r")


def test_the_page_watches_a_closed_eventsource_twice_the_longest_browser_delay():
    assert life.quiet_ms("none") == 2 * life.LONGEST_DEFAULT_RETRY_MS
    assert life.quiet_ms("2000") == 4000 and life.quiet_ms("500") == 3000


# --- the stored runs: real runs, and what the panel shows for them ----------------------------


@pytest.mark.parametrize("retry", list(life.RETRIES))
@pytest.mark.parametrize("ending", list(life.ENDINGS))
def test_every_choice_has_a_stored_run_that_ends_closed_with_no_request_after(ending, retry):
    seen, requests = life.stored_run(ending, retry)
    shown = story(seen, requests, retry=retry)
    assert [r.kind for r in shown.rows][:6] == ["created", "open", "message", "message", "message", "error"]  # fmt: skip
    assert shown.rows[-1].kind == "quiet" and shown.rows[-1].ready_state == 2
    assert shown.rows[-1].meaning.endswith("no request reached the server since")
    assert [r.last_event_id for r in requests] == ["", "2"]
    (delay,) = [r.delay_ms for r in shown.rows if r.delay_ms is not None]
    # The reconnection came no sooner than retry: asked (Chromium's own 3000 ms without one).
    assert delay >= (life.retry_ms(retry) or 3000)
    if ending == "resume":
        assert "close" in [r.kind for r in shown.rows] and shown.summary[-1].endswith("Monday.'.")
    else:
        assert [r.kind for r in shown.rows][-2:] == ["error", "quiet"]


def test_the_stored_runs_say_where_they_were_recorded():
    assert life.recorded_with().startswith("recorded in headless Chromium ")


# --- StreamLog: the server's side ----------------------------------------------------------------


def test_the_log_notes_each_labelled_stream_request_with_its_last_event_id_and_answer():
    log = life.StreamLog()
    app = log.wrap(create_app(Settings(prefill_ms=0, per_token_ms=0)))

    async def requests() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            path = life.stream_path("204", "none", run="abc")
            await client.get(path)
            await client.get(path, headers={"Last-Event-ID": "2"})
            await client.get("/v1/stream")  # no run label: not this log's business
            await client.get("/v1/models?run=abc")

    asyncio.run(requests())
    assert log.requests("abc") == (FIRST, ServerRequest("2", 204, ""))
    assert log.requests("other") == ()


def test_the_log_keeps_the_latest_runs_only():
    log = life.StreamLog()
    for i in range(log.MAX_RUNS + 5):
        log._note(f"run{i}", None, ServerRequest(""))
    assert log.requests("run0") == () and len(log.requests(f"run{log.MAX_RUNS + 4}")) == 1


# --- the widget, headless ------------------------------------------------------------------------


class Page:
    """What the kernel sends the page."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    def send(self, content: dict, buffers: list | None = None) -> None:
        self.messages.append(content)


@pytest.fixture
def server():
    demo_server = browser_demo.DemoServer(prefill_ms=0, per_token_ms=1)
    yield demo_server
    demo_server.stop()


def test_opening_starts_the_server_and_tells_the_page_the_runs_path(server):
    panel = life.EventSourceLife(server)
    page = Page()
    panel.send = page.send
    # The page's choices come with "open": its trait updates may arrive later.
    panel._on_page_message(panel, {"type": "open", "ending": "500", "retry": "1000"}, [])
    (go,) = page.messages
    assert go["type"] == "go" and go["quiet_ms"] == 3000 and server.running
    assert (
        go["path"] == life.stream_path("500", "1000", run=go["run"]) and panel.run_id == go["run"]
    )
    assert (panel.ending, panel.retry) == ("500", "1000")
    assert panel.status == "running" and panel.note.startswith("A live run in your browser")


def test_opening_with_a_choice_the_panel_does_not_offer_is_refused(server):
    panel = life.EventSourceLife(server)
    page = Page()
    panel.send = page.send
    panel._on_page_message(panel, {"type": "open", "ending": "drop", "retry": "none"}, [])
    assert page.messages == [{"type": "refused", "error": "unknown choice 'drop', 'none'"}]
    assert panel.status == "ready" and panel.run_id == ""


def test_each_note_of_the_current_run_redraws_the_rows_and_others_are_ignored(server):
    panel = life.EventSourceLife(server, ending="204", retry="1000")
    page = Page()
    panel.send = page.send
    panel._on_page_message(panel, {"type": "open"}, [])
    run = page.messages[0]["run"]
    for note in [Seen(0, "created", 0), Seen(5, "open", 1)]:
        message = {"type": "seen", "run": run, "seen": {**note.__dict__}}
        panel._on_page_message(panel, message, [])
    panel._on_page_message(panel, {"type": "seen", "run": "old", "seen": {"at_ms": 1, "kind": "open", "ready_state": 1}}, [])  # fmt: skip
    assert [row["kind"] for row in panel.rows] == ["created", "open"]
    assert panel.rows[1]["state"] == "CONNECTING → OPEN" and panel.rows[1]["at"] == "5 ms"
    panel._on_page_message(panel, {"type": "seen", "run": run, "seen": {"kind": "open"}}, [])
    assert page.messages[-1]["type"] == "refused" and "'at_ms'" in page.messages[-1]["error"]
    quiet = {"at_ms": 9000, "kind": "quiet", "ready_state": 2}
    panel._on_page_message(panel, {"type": "seen", "run": run, "seen": quiet}, [])
    assert panel.status == "ended"


def test_in_the_browser_kernel_the_panel_shows_the_stored_run_of_each_choice_and_says_so():
    server = browser_demo.DemoServer(prefill_ms=0, per_token_ms=1, in_page=True)
    panel = life.EventSourceLife(server)
    assert panel.transport == "widget" and panel.status == "stored"
    assert panel.note.startswith("A stored run, not your browser's: recorded in headless Chromium")
    stored = story(*life.stored_run("204", "none"), retry="none")
    assert panel.rows == [row.as_dict() for row in stored.rows]
    panel.ending = "resume"
    assert "close" in [row["kind"] for row in panel.rows]
    page = Page()
    panel.send = page.send
    panel._on_page_message(panel, {"type": "open"}, [])  # nothing can be opened there
    assert page.messages == [] and panel.status == "stored"


def test_the_twin_shows_the_stored_run_of_the_panels_choices(server):
    twin = life.EventSourceLife(server, ending="text/plain", retry="500").twinned().text_twin
    assert twin.startswith("▶ Run this cell to open the EventSource life cycle.\n")
    assert "the body ends; the reconnect comes as text/plain; retry: 500 ms" in twin
    assert twin.endswith(story(*life.stored_run("text/plain", "500"), retry="500").text)


def test_an_unknown_choice_or_something_else_than_a_server_is_refused(server):
    with pytest.raises(ValueError, match="ending must be one of"):
        life.EventSourceLife(server, ending="drop")
    with pytest.raises(TypeError, match="start_server"):
        life.EventSourceLife("abcdefabcdef")  # type: ignore[arg-type]
    panel = life.EventSourceLife(server)
    with pytest.raises(Exception, match="unknown retry"):
        panel.retry = "7"
