"""Run an ASGI app on a real socket: in a background thread (notebooks) or in the foreground.

A Jupyter kernel already runs an event loop in its main thread, so
``running()`` starts uvicorn in a daemon thread with its own loop, on a free
loopback port, for the length of a with-block::

    with lessonkit.server.running(prefill_ms=300, per_token_ms=40) as url:
        ...  # url == "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn

from lessonkit.serve.app import create_app
from lessonkit.serve.checks import Settings

MAX_PORT = 65535


class _QuietDeliberateDrops(logging.Filter):
    """Hide uvicorn's complaint about a response we cut short on purpose (drop_after_bytes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


def uvicorn_config(
    app: Any, *, log_level: str, access_log: bool, log_config: Any
) -> uvicorn.Config:
    """Return uvicorn's settings for the course's servers (and quiet its log of deliberate drops)."""
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDeliberateDrops) for f in errors.filters):
        errors.addFilter(_QuietDeliberateDrops())
    return uvicorn.Config(
        app,
        http=_http_protocol(),
        # Not uvloop, even when installed: its loop.time() and timers have a resolution
        # of 1 ms, too coarse for pacing tokens and for measuring how late they are.
        loop="asyncio",
        log_level=log_level,
        access_log=access_log,
        log_config=log_config,
        lifespan="off",
        ws="websockets-sansio",  # the maintained websockets API (no deprecation warnings)
        timeout_graceful_shutdown=2,
        # Our routes are the only ones; uvicorn's Server header adds nothing here.
        server_header=False,
    )


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """Return a listening TCP socket; port 0 lets the OS pick a free port."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise ValueError(f"port must be an integer from 0 to {MAX_PORT}, got {port!r}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Naming IPPROTO_TCP matters: asyncio only switches Nagle's algorithm off on
    # sockets whose proto says TCP. With Nagle on, a small write (one token) waits
    # for the ACK of the previous one, and the client delays that ACK up to 40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bind_unix_socket(path: Path) -> socket.socket:
    """Return a listening Unix socket at `path` (mode 0600), replacing a stale socket file.

    Only the owner can connect to it, and only if they can enter its folder: put it in
    a folder of mode 0700 (lessonkit.serve.demo_socket makes one).
    """
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise FileExistsError(f"{path} exists and is not a socket; remove it first")
        path.unlink()  # a server that stopped or died left it behind
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.fspath(path))
        os.chmod(path, 0o600)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """Return the http:// base URL of a bound TCP socket, or unix:PATH for a Unix socket."""
    if sock.family == socket.AF_UNIX:
        return f"unix:{sock.getsockname()}"
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _http_protocol() -> type[asyncio.Protocol]:
    """Return uvicorn's HTTP protocol class (httptools if installed, else h11), stamped."""
    try:  # the C parser: several times cheaper per request than pure-Python h11
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    return _arrival_stamped(base)


def _arrival_stamped(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """Return a subclass of a uvicorn HTTP protocol that notes when each request arrived.

    When a hundred requests come in together, the last one reaches the app only after
    the event loop has parsed and routed the other ninety-nine. Starting its clock
    then would make its first token late by that wait; a real model's time to first
    token counts from the request's arrival, so the clock starts at the first
    ``data_received`` of each request (``scope["state"]["start"]``, loop time).
    """

    class ArrivalStamped(base):  # type: ignore[misc, valid-type]
        def data_received(self, data: bytes) -> None:
            arrived = self.loop.time()
            before = getattr(self, "scope", None)
            super().data_received(data)
            scope = getattr(self, "scope", None)
            if scope is not None and scope is not before and isinstance(scope.get("state"), dict):
                scope["state"].setdefault("start", arrived)  # a request began in this data

    ArrivalStamped.__name__ = ArrivalStamped.__qualname__ = f"ArrivalStamped{base.__name__}"
    return ArrivalStamped


class BackgroundServer:
    """A uvicorn server running an ASGI app on its own event loop in a daemon thread.

    It listens on a loopback TCP port, or on a Unix socket file when `unix_socket`
    names one (the browser demo's servers: see lessonkit.serve.demo_socket).

    A Jupyter kernel already runs an event loop in the main thread, so the server
    gets a new thread with its own loop (``asyncio.run`` there); uvicorn only installs
    signal handlers in the main thread, so none are touched.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_socket: Path | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.unix_socket = unix_socket
        self.sock = (
            bind_socket(host, port) if unix_socket is None else bind_unix_socket(unix_socket)
        )
        self.url = url_of(self.sock)
        config = uvicorn_config(app, log_level="warning", access_log=False, log_config=None)
        self.server = uvicorn.Server(config)
        self.on_stop = on_stop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name=f"lessonkit {self.url}", daemon=True)

    def _run(self) -> None:
        async def serve() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve(sockets=[self.sock])

        asyncio.run(serve())

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the thread and return the URL once the server accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.005)
        return self.url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving: end open streams, let uvicorn shut down, join the thread."""
        if self.loop is not None and self.on_stop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may close meanwhile
                self.loop.call_soon_threadsafe(self.on_stop)
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout_s)
            if self.thread.is_alive():
                self.server.force_exit = True
                self.thread.join(timeout_s)
        self.sock.close()
        if self.unix_socket is not None:
            with contextlib.suppress(FileNotFoundError):
                self.unix_socket.unlink()


@contextlib.contextmanager
def serving(app: Any, *, on_stop: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield the base URL of `app` served on a free loopback port for the with-block.

    Shared by running() and lessonkit.serve.proxy.running_proxy(); `on_stop` runs on the
    server's loop when the block ends, before uvicorn shuts down.
    """
    background = BackgroundServer(app, on_stop=on_stop)
    url = background.start()
    try:
        yield url
    finally:
        background.stop()


@contextlib.contextmanager
def running(prefill_ms: float = 300, per_token_ms: float = 40, **options: Any) -> Iterator[str]:
    """Yield the base URL ("http://127.0.0.1:PORT") of a server running in the background.

    The server lives as long as the with-block, on a free port of the loopback
    interface, in a thread with its own event loop (so it works inside Jupyter).
    It stops when the block ends, also when a cell is interrupted. Other options
    are Settings fields (jitter_ms, seed, max_body_bytes, retry_ms, model). A value
    the server could not use (a negative or non-numeric time, an unknown option)
    raises here, before anything starts::

        with running(prefill_ms=300, per_token_ms=40) as url:
            httpx.get(url + "/v1/stream?prompt=hi")
    """
    settings = Settings.from_options(prefill_ms=prefill_ms, per_token_ms=per_token_ms, **options)
    app = create_app(settings)
    with serving(app, on_stop=app.state.lessonkit.hang_up_all) as url:
        yield url
