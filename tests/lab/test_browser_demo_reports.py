"""The browser demo's kernel side: its server, the page's reports, and the widget's checks.

The page itself is tested in tests/browser/test_browser_demo.py (and on a JupyterHub in
tests/hub); here the reports are POSTed the way browser_demo.js sends them.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time

import httpx
import psutil
import pytest

from lessonkit.core import client, llm
from lessonkit.lab import browser_demo
from lessonkit.lab.browser_demo import REPORT_PATH, BrowserStreamDemo, DemoServer

pytestmark = pytest.mark.server

ANSWER = llm.answer_for(llm.RUNNING_PROMPT)


@pytest.fixture
def server():
    demo_server = DemoServer(prefill_ms=0, per_token_ms=1)
    demo_server.ensure_running()
    yield demo_server
    demo_server.stop()


def report_body(demo: BrowserStreamDemo, kind: str, **fields) -> dict:
    body = {
        "demo": demo.demo_id,
        "kind": kind,
        "run": 1,
        "status": "done",
        "text": ANSWER.text,
        "times_ms": [400, 520, 640, 760, 880, 1000],
        "reads": 7 if kind == "fetch" else 0,
        "url": f"http://hub.test/user/alice/lessonkit/demo/{demo.socket_name}/v1/stream",
    }
    body.update(fields)
    return body


def post_report(server: DemoServer, body: object) -> httpx.Response:
    with server.client() as http:
        return http.post(REPORT_PATH, content=json.dumps(body))


def test_the_demo_server_streams_the_answer_like_the_course_server(server):
    with (
        server.client() as http,
        http.stream(
            "POST",
            "/v1/chat/completions",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
            headers={"Accept": "text/event-stream"},
        ) as response,
    ):
        reply = client.read_stream(response.iter_bytes(), "openai")
    assert reply.complete and reply.text == llm.answer_for("hi").text


def test_the_cell_after_the_demo_gets_what_the_page_reported(server):
    demo = BrowserStreamDemo(server)
    for kind in ("eventsource", "fetch"):
        assert post_report(server, report_body(demo, kind)).json() == {"recorded": kind}
    report = demo.browser_report(grace_s=5, timeout_s=5)
    assert report.outcome == "finished"
    assert [p.text for p in report.panels.values()] == [ANSWER.text, ANSWER.text]
    text = str(report)
    assert text.startswith(
        "What your browser received (run 1, through "
        f"/user/alice/lessonkit/demo/{demo.socket_name}/)"
    )
    assert "fetch      : done, 6 tokens, in 7 reads, arriving 400 ms to 1000 ms" in text


def test_browser_report_waits_for_a_panel_still_streaming(server):
    demo = BrowserStreamDemo(server)
    post_report(server, report_body(demo, "eventsource"))
    post_report(server, report_body(demo, "fetch", status="streaming", text="Your"))

    def finish_later():
        time.sleep(0.3)
        post_report(server, report_body(demo, "fetch"))

    threading.Thread(target=finish_later).start()
    report = demo.browser_report(grace_s=5, timeout_s=10)
    assert report.outcome == "finished" and report.panels["fetch"].text == ANSWER.text


def test_a_run_still_streaming_at_the_timeout_is_reported_as_it_stands(server):
    demo = BrowserStreamDemo(server)
    post_report(server, report_body(demo, "eventsource"))
    post_report(server, report_body(demo, "fetch", status="streaming", text="Your"))
    report = demo.browser_report(grace_s=5, timeout_s=0.3)
    assert report.outcome == "still streaming"
    assert re.search(r"\n\(still streaming after \d+ s\)$", str(report)), str(report)


def test_without_a_browser_the_report_says_nothing_was_received(server):
    demo = BrowserStreamDemo(server)
    grace_s, timeout_s = 0.3, 60.0
    started = time.monotonic()
    report = demo.browser_report(grace_s=grace_s, timeout_s=timeout_s)
    # It gives up after the grace, not at the timeout (a deadline of 100x the grace).
    assert time.monotonic() - started < timeout_s / 2
    assert report.outcome == "no browser" and report.panels == {}
    assert "no browser showed the demo" in str(report)


def test_an_older_run_does_not_replace_a_newer_one(server):
    demo = BrowserStreamDemo(server)
    post_report(server, report_body(demo, "fetch", run=2, text="new"))
    post_report(server, report_body(demo, "fetch", run=1, text="old"))
    assert server.reports.latest(demo.demo_id)["fetch"].text == "new"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "websocket"}, "field 'kind' must be one of eventsource, fetch, got 'websocket'"),
        ({"run": 0}, "field 'run' must be 1 or more, got 0"),
        ({"reads": -1}, "field 'reads' must be 0 or more, got -1"),
        ({"run": True}, "field 'run' is missing or has the wrong type"),
        ({"times_ms": [1, "2"]}, "field 'times_ms' must be a list of numbers"),
        ({"text": None}, "field 'text' is missing or has the wrong type"),
    ],
)
def test_a_malformed_report_gets_400_naming_the_field(server, change, message):
    demo = BrowserStreamDemo(server)
    response = post_report(server, report_body(demo, "fetch") | change)
    assert response.status_code == 400
    assert response.json()["error"] == f"bad report: {message}"


def test_a_report_that_is_not_json_gets_400(server):
    with server.client() as http:
        response = http.post(REPORT_PATH, content=b"{not json")
    assert response.status_code == 400 and response.json()["error"].startswith("bad report: ")


def test_a_report_for_a_demo_this_server_did_not_make_gets_404(server):
    other = DemoServer(prefill_ms=0, per_token_ms=1)
    demo = BrowserStreamDemo(other)  # made for a server that never started
    response = post_report(server, report_body(demo, "fetch"))
    assert response.status_code == 404 and "was made for this server" in response.json()["error"]


def test_an_oversized_report_gets_413(server):
    demo = BrowserStreamDemo(server)
    big = report_body(demo, "fetch", text="x" * (browser_demo.MAX_REPORT_BYTES + 1))
    assert post_report(server, big).status_code == 413


def test_the_page_can_ask_whether_the_server_made_its_demo(server):
    demo = BrowserStreamDemo(server)
    with server.client() as http:
        known = http.get(REPORT_PATH, params={"demo": demo.demo_id})
        unknown = http.get(REPORT_PATH, params={"demo": "nope"})
        assert known.status_code == 200 and unknown.status_code == 404
        assert http.delete(REPORT_PATH).status_code == 405


def test_start_server_returns_the_kernels_server_for_the_same_pace():
    first = browser_demo.start_server(prefill_ms=0, per_token_ms=2)
    try:
        assert browser_demo.start_server(prefill_ms=0, per_token_ms=2) is first
        assert first.running
        other = browser_demo.start_server(prefill_ms=0, per_token_ms=3)
        assert other is not first and other.socket_name != first.socket_name
        other.stop()
    finally:
        first.stop()


def test_a_stopped_server_starts_again_on_the_same_socket(server):
    path = server.socket_path
    server.stop()
    assert not server.running and not path.exists()
    with pytest.raises(httpx.ConnectError), server.client() as http:
        http.get("/v1/models")
    assert server.ensure_running() is True
    assert server.socket_path == path and server.ensure_running() is False
    with server.client() as http:
        assert http.get("/v1/models").status_code == 200


def tcp_listeners() -> set:
    """The TCP addresses this process listens on."""
    connections = psutil.Process().net_connections(kind="inet")
    return {c.laddr for c in connections if c.status == psutil.CONN_LISTEN}


def test_the_demo_server_listens_on_a_private_socket_and_no_tcp_port():
    before = tcp_listeners()
    server = DemoServer(prefill_ms=0, per_token_ms=1)
    server.ensure_running()
    try:
        folder = server.socket_path.parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert folder.stat().st_uid == os.getuid()
        assert stat.S_ISSOCK(server.socket_path.stat().st_mode)
        assert tcp_listeners() == before
    finally:
        server.stop()


def test_stream_again_from_the_page_restarts_a_stopped_server(server):
    demo = BrowserStreamDemo(server)
    sent = []
    demo.send = sent.append  # what would go to the page
    server.stop()
    demo._handle_custom_msg(
        {"type": "ensure-server"}, []
    )  # the page's message, as ipywidgets delivers it
    assert server.running and sent == [{"type": "server-restarted"}]
    demo._handle_custom_msg({"type": "ensure-server"}, [])  # running: nothing to do
    assert sent == [{"type": "server-restarted"}]


def test_the_widget_reads_its_server_through_the_socket_name(server):
    demo = BrowserStreamDemo(server)
    assert (demo.socket_name, demo.reports) == (server.socket_name, True)
    named = BrowserStreamDemo(server.socket_name)
    assert (named.socket_name, named.reports) == (server.socket_name, False)
    with pytest.raises(ValueError, match="made from a socket name"):
        named.browser_report()


@pytest.mark.parametrize(
    "address", ["http://127.0.0.1:8000", "http://10.0.0.5:8000", "../other", "ABCDEFGHIJKL"]
)
def test_a_network_address_or_a_made_up_name_is_refused(address):
    with pytest.raises(ValueError, match="never a network address"):
        BrowserStreamDemo(address)


def test_serving_to_the_page_gives_a_socket_the_widget_takes():
    from lessonkit.serve.app import create_app
    from lessonkit.serve.checks import Settings

    app = create_app(Settings.from_options(prefill_ms=0, per_token_ms=1))
    with browser_demo.serving_to_the_page(app) as name:
        demo = BrowserStreamDemo(name)
        path = browser_demo.demo_socket.socket_path(name)
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(path))) as http:
            assert http.get("http://x/v1/models").status_code == 200
    assert demo.socket_name == name and not path.exists()


def test_an_unknown_panel_or_argument_is_refused():
    with pytest.raises(ValueError, match="panels must be among eventsource, fetch"):
        BrowserStreamDemo("abcdefabcdef", panels=["websocket"])
    with pytest.raises(TypeError, match="start_server"):
        BrowserStreamDemo(8000)


def test_bad_pacing_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="per_token_ms must be a number of milliseconds"):
        browser_demo.start_server(per_token_ms=-1)


def test_describe_is_the_same_text_on_every_run_and_names_the_routed_path():
    text = browser_demo.describe()
    assert text == browser_demo.describe()
    assert "new EventSource('<Jupyter base URL>lessonkit/demo/<name>/v1/stream?prompt=...')" in text
    assert "Accept: 'text/event-stream'" in text and "decoder.decode(bytes, {stream: true})" in text
    assert "TextDecoder({stream: true})" not in text  # stream is an option of decode()


def test_a_cell_that_ends_with_the_report_shows_its_text(server):
    from IPython.lib.pretty import pretty

    demo = BrowserStreamDemo(server)
    for kind in ("eventsource", "fetch"):
        post_report(server, report_body(demo, kind))
    report = demo.browser_report(grace_s=5, timeout_s=5)
    assert pretty(report) == str(report) and str(report).startswith("What your browser received")
