"""The course's Jupyter route: a real Jupyter server, demo servers on Unix sockets.

A `jupyter server` process (tests/support/jupyterserver.py) runs with this
environment's settings (the course's extension enabled by etc/jupyter/
jupyter_server_config.d, as `pip install .` and `make setup` put it) and a token; its
runtime folder is the test's. Demo servers
run in this process on sockets in that folder, as a kernel of that server would
run them. Requests go through <base URL>lessonkit/demo/<name>/... as the page sends
them.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jupyterserver import JupyterServerProcess, jupyter_server
from labdriver import free_loopback_port, wait_for

from lessonkit.core import client, llm
from lessonkit.serve import demo_socket
from lessonkit.serve.app import create_app
from lessonkit.serve.background import BackgroundServer
from lessonkit.serve.checks import Settings
from lessonkit.serve.jupyter_route import ROUTE

pytestmark = pytest.mark.server

PER_TOKEN_MS = 60
ASK = {
    "model": "lessonkit-sim",
    "stream": True,
    "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}],
}
ANSWER = llm.answer_for(llm.RUNNING_PROMPT)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServerProcess]:
    # A proxy set for the whole machine (a corporate one, say) must not catch the route's
    # requests to the socket (httpx ignores these variables for a client given its own
    # transport, as the route's is): this one points nowhere.
    nowhere = "http://127.0.0.1:9"
    env = {"HTTP_PROXY": nowhere, "http_proxy": nowhere, "ALL_PROXY": nowhere}
    with jupyter_server(tmp_path_factory.mktemp("jupyter-home"), env=env) as server:
        yield server


def route(server: JupyterServerProcess, name: str, path: str = "") -> str:
    """The URL of `path` on demo socket `name`, through the server's course route."""
    return f"{server.url}/{ROUTE}/{name}{path}"


@pytest.fixture
def demo(jupyter: JupyterServerProcess) -> Iterator[tuple[str, BackgroundServer]]:
    """A course server on a fresh socket in the Jupyter server's runtime folder: (name, server)."""
    name = demo_socket.new_socket_name()
    path = demo_socket.socket_path(name, base=jupyter.runtime, create=True)
    app = create_app(Settings.from_options(prefill_ms=100, per_token_ms=PER_TOKEN_MS))
    background = BackgroundServer(app, unix_socket=path, on_stop=app.state.lessonkit.hang_up_all)
    background.start()
    yield name, background
    background.stop()


class Lockstep:
    """An ASGI app that sends its next event only after the reader has the one before.

    If anything between the two buffered a piece, the reader would never see it and the
    app's wait would run out: so "every wait was answered" proves the route forwards each
    piece as it comes, whatever the load on the machine (no clock in the verdict).
    """

    PIECES = 4
    WAIT_S = 60.0  # only ever reached when a piece is held back

    def __init__(self) -> None:
        self.seen = [threading.Event() for _ in range(self.PIECES)]
        self.answered: list[bool] = []  # one per piece after the first: did the reader get it?

    async def __call__(self, scope, receive, send) -> None:
        assert scope["type"] == "http"
        while (await receive()).get("more_body"):
            pass  # the request body, if any
        head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        for index in range(self.PIECES):
            if index:
                got = await asyncio.to_thread(self.seen[index - 1].wait, self.WAIT_S)
                self.answered.append(got)
            body = f"id: {index}\ndata: piece {index}\n\n".encode()
            await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    def read(self, method: str, url: str, **kwargs) -> bytes:
        """Read the whole body, telling the app as each piece arrives; return the body."""
        body = b""
        with httpx.stream(method, url, timeout=self.WAIT_S * 2, **kwargs) as response:
            assert response.status_code == 200, response.read()
            for piece in response.iter_raw():
                body += piece
                for index in range(self.PIECES):
                    if f"data: piece {index}\n\n".encode() in body:
                        self.seen[index].set()
        return body


@pytest.fixture
def lockstep(jupyter: JupyterServerProcess) -> Iterator[tuple[str, Lockstep]]:
    """A lockstep app on a fresh socket in the Jupyter server's runtime folder: (name, app)."""
    name = demo_socket.new_socket_name()
    path = demo_socket.socket_path(name, base=jupyter.runtime, create=True)
    app = Lockstep()
    background = BackgroundServer(app, unix_socket=path)
    background.start()
    yield name, app
    background.stop()


# --- streaming through the route ---------------------------------------------------------------


def test_an_eventsource_get_gets_each_event_before_the_next_is_sent(jupyter, lockstep):
    name, app = lockstep
    body = app.read(
        "GET",
        route(jupyter, name, "/v1/stream"),
        headers={**jupyter.auth, "Accept": "text/event-stream"},
    )
    assert app.answered == [True] * (Lockstep.PIECES - 1), body
    assert body.count(b"\n\n") == Lockstep.PIECES


def test_a_fetch_post_without_an_accept_header_gets_each_event_before_the_next_too(
    jupyter, lockstep
):
    name, app = lockstep
    body = app.read(
        "POST", route(jupyter, name, "/v1/chat/completions"), headers=jupyter.auth, json=ASK
    )
    assert app.answered == [True] * (Lockstep.PIECES - 1), body


def test_the_course_servers_answer_comes_through_the_route_whole(jupyter, demo):
    name, _ = demo
    with httpx.stream(
        "POST",
        route(jupyter, name, "/v1/chat/completions"),
        headers=jupyter.auth,
        json=ASK,
        timeout=30,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        pieces = list(response.iter_raw())
    reply = client.read_stream(pieces, "openai")
    assert reply.complete and reply.text == ANSWER.text


def test_the_route_passes_status_query_and_error_bodies_on(jupyter, demo):
    name, _ = demo
    bad = httpx.post(
        route(jupyter, name, "/v1/chat/completions"), headers=jupyter.auth, json={"model": "m"}
    )
    assert bad.status_code == 400 and "messages" in bad.text
    models = httpx.get(route(jupyter, name, "/v1/models?x=1"), headers=jupyter.auth)
    assert models.status_code == 200 and models.headers["content-type"] == "application/json"


def test_a_page_that_leaves_stops_generation_in_the_demo_server(jupyter, demo):
    name, _ = demo
    stats_url = route(jupyter, name, "/v1/stats")
    long = {**ASK, "messages": [{"role": "user", "content": "Tell me everything about my parcel."}]}
    with httpx.stream(
        "POST", route(jupyter, name, "/v1/chat/completions"), headers=jupyter.auth, json=long
    ) as response:
        for _ in zip(range(3), response.iter_raw(), strict=False):
            pass  # a few tokens, then the page goes away
    stats = wait_for(
        lambda: (
            (s := httpx.get(stats_url, headers=jupyter.auth).json())["active_streams"] == 0 and s
        ),
        timeout_s=10,
        what="the demo server to see the page leave",
    )
    assert stats["tokens_after_disconnect"] <= 1, stats


# --- what the route refuses --------------------------------------------------------------------


def test_the_route_needs_the_jupyter_servers_login(jupyter, demo):
    name, _ = demo
    response = httpx.get(route(jupyter, name, "/v1/models"), follow_redirects=False)
    assert response.status_code in (302, 403), response
    assert "lessonkit-sim" not in response.text


@pytest.mark.parametrize(
    "bad_name",
    [
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2Ftmp%2Fx.sock",
        "%2e%2e",
        "ABCDEFGHIJKL",
        "abc",
        "abcdefghijklm",
        "abcdefghijk.",
        "abcdefghijk%00",
    ],
)
def test_a_name_that_is_not_a_socket_name_gets_404_from_the_route(jupyter, demo, bad_name):
    response = httpx.get(route(jupyter, bad_name, "/v1/models"), headers=jupyter.auth)
    assert response.status_code == 404
    assert "12 lowercase letters and digits" in response.json()["error"]


def test_dot_segments_never_reach_a_socket(jupyter, demo):
    # Clients resolve ".." before sending (httpx as browsers do); what arrives is some other
    # path of the Jupyter server, which has no demo behind it.
    name, _ = demo
    for path in (f"/{ROUTE}/../{ROUTE}/{name}/v1/models", f"/{ROUTE}/{name}/../../v1/models"):
        response = httpx.get(jupyter.url + path, headers=jupyter.auth)
        arrived = response.request.url.path
        assert (response.status_code, "lessonkit-sim" in response.text) == (404, False), arrived


def test_a_socket_in_another_users_folder_cannot_be_named(jupyter):
    # Another learner's demo: the same kind of socket, in their own runtime folder.
    name = demo_socket.new_socket_name()
    other_runtime = Path(tempfile.mkdtemp(prefix="lk-learner1-"))  # short: a socket path is
    other = demo_socket.socket_path(name, base=other_runtime, create=True)  # <= 103 bytes
    app = create_app(Settings.from_options(prefill_ms=0, per_token_ms=1))
    background = BackgroundServer(app, unix_socket=other)
    background.start()
    try:
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(other))) as direct:
            assert direct.get("http://x/v1/models").status_code == 200  # it does run
        response = httpx.get(route(jupyter, name, "/v1/models"), headers=jupyter.auth)
        assert response.status_code == 404
        assert "no demo server named" in response.json()["error"]
    finally:
        background.stop()
        shutil.rmtree(other_runtime)


def test_a_stopped_demo_server_gets_404_saying_to_run_the_cells_again(jupyter, demo):
    name, background = demo
    background.stop()
    response = httpx.get(route(jupyter, name, "/v1/models"), headers=jupyter.auth)
    assert response.status_code == 404
    assert "run the notebook's cells again" in response.json()["error"]


def test_a_socket_folder_others_may_enter_is_refused(jupyter, demo):
    name, _ = demo
    folder = jupyter.runtime / demo_socket.FOLDER_NAME
    folder.chmod(0o755)
    try:
        response = httpx.get(route(jupyter, name, "/v1/models"), headers=jupyter.auth)
        assert response.status_code == 404
        assert "mode 0700" in response.json()["error"]
    finally:
        folder.chmod(0o700)


def test_the_jupyter_server_has_no_proxy_route_to_loopback_ports(jupyter, demo):
    # (Jupyter first drops a trailing slash with a redirect: follow it.)
    for path in ("/proxy/8081/hub/api/", f"/proxy/{free_loopback_port()}/v1/models"):
        response = httpx.get(f"{jupyter.url}{path}", headers=jupyter.auth, follow_redirects=True)
        assert response.status_code == 404, (path, response.status_code)
