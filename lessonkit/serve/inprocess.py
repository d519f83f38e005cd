"""Call an ASGI app in this process, with no socket: each write arrives as the app sends it.

The course's server (``lessonkit.serve.app``) normally sits behind uvicorn on a loopback
port. A browser kernel (JupyterLite's Pyodide) has no TCP and no threads, so there the
lessons talk to the same Starlette app in-process::

    client = InProcessClient(create_app())
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        for chunk in response.iter_raw():   # one chunk per ASGI send, at the app's pace
            ...
    reply = read_stream(response.iter_raw(), "openai")   # the lessons' readers, unchanged

httpx's own ``ASGITransport`` collects the whole body before it returns, so a stream would
arrive in one piece; here each ``http.response.body`` message the app sends becomes one
chunk, handed over when it is sent, stamped with when (``response.arrivals``).
``InProcessTransport`` gives httpx the same stream (``httpx.Client(transport=...)``).

How a synchronous reader waits for an async app, with no thread (``clock=``):

- ``"real"``: the app's sleeps take real time. In the browser kernel the app runs on the
  kernel's own event loop (Pyodide's WebLoop) and the reader blocks with
  ``pyodide.ffi.run_sync`` (WebAssembly JS Promise Integration, JSPI: Chromium 137+);
  elsewhere on a private event loop that runs only while the reader waits.
- ``"virtual"``: the app runs on ``VirtualClockLoop``, whose clock jumps to the next timer
  instead of waiting: the same bytes and the same timestamps (the app's own plan), at
  once, anywhere (a browser without JSPI, a test).
- ``None`` (the default): real where the kernel can wait, virtual where it cannot.

Between two reads the app does not run (nothing else would run it): writes that fall due
meanwhile are sent at the next read, as a socket's buffer would hand them over.
"""

from __future__ import annotations

import asyncio
import functools
import json as json_module
import ssl
import sys
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx

T = TypeVar("T")

# The host the in-process server answers as (requests carry it; nothing resolves it).
IN_PROCESS_HOST = "lessonkit.local"
# How long (on the client's clock) a disconnected app gets to finish before it is cancelled.
WIND_DOWN_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Arrival:
    """One body message as it reached the client: ms after the request, and its bytes."""

    at_ms: float
    data: bytes


class AppFailed(RuntimeError):
    """The app raised before it sent a response (a bug in the app, not a bad request)."""


# ---------------------------------------------------------------------------------------------
# Clocks: how the synchronous caller waits


class VirtualClockLoop(asyncio.BaseEventLoop):
    """An event loop with no I/O whose clock jumps to the next timer instead of sleeping.

    ``time()`` starts at 0.0 and only moves when every ready callback has run and the
    loop would otherwise wait: then it advances by exactly that wait. An in-process app
    only ever waits on timers (there is no socket), so this is all it needs.
    (asyncio's SelectorEventLoop cannot be used here: it opens a socketpair, which
    Pyodide does not support.)
    """

    def __init__(self) -> None:
        super().__init__()
        self._now_s = 0.0
        self._selector = _JumpToNextTimer(self)  # what BaseEventLoop._run_once waits on

    def time(self) -> float:
        """Return the virtual time in seconds."""
        return self._now_s

    def _process_events(self, event_list: list[Any]) -> None:
        pass  # no file descriptors, so never any I/O events

    def _write_to_self(self) -> None:
        pass  # call_soon_threadsafe's wake-up: there is no other thread to wake us


class _JumpToNextTimer:
    def __init__(self, loop: VirtualClockLoop) -> None:
        self.loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        if timeout is None:
            raise RuntimeError(
                "the in-process app is waiting for something that will never happen "
                "(no timer is due and nothing else can wake it)"
            )
        self.loop._now_s += timeout
        return []


class _PrivateLoop:
    """Runs a loop of the client's own, only while the caller waits on it (no thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def wait(self, awaitable: Awaitable[T]) -> T:
        with _outside_the_running_loop():
            return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.loop.close()


@contextmanager
def _outside_the_running_loop() -> Iterator[None]:
    """Step out of the event loop (and its task) this thread is running, for the block.

    A notebook cell runs as a task of the kernel's event loop. asyncio refuses to start a
    second loop in a thread whose loop is running, and (Python 3.14, the browser's) to
    step a task of a second loop while the first loop's task is current. The kernel's loop
    is paused anyway while this synchronous call runs, so for its length the thread is
    marked as running neither, and both marks are put back after. These are the hooks
    asyncio keeps for event-loop implementations (asyncio.events, asyncio.tasks).
    """
    loop = asyncio._get_running_loop()
    task = asyncio.current_task(loop) if loop is not None else None
    if task is not None:
        asyncio.tasks._leave_task(loop, task)
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)
        if task is not None:
            asyncio.tasks._enter_task(loop, task)


class _KernelLoop:
    """Pyodide with JSPI: the app runs on the kernel's WebLoop; the caller blocks in run_sync."""

    def __init__(self) -> None:
        self.loop = asyncio.get_event_loop()
        self._run_sync = _pyodide_ffi().run_sync

    def wait(self, awaitable: Awaitable[T]) -> T:
        return self._run_sync(awaitable)

    def close(self) -> None:
        pass  # the kernel's loop is not ours to close


def browser_can_wait() -> bool:
    """Return True where a synchronous call can wait for the event loop (never on CPython)."""
    if sys.platform != "emscripten":
        return False
    return _pyodide_ffi().can_run_sync()


def _pyodide_ffi() -> Any:
    """Return pyodide.ffi, a module of the browser kernel's runtime itself (Pyodide).

    Part of the platform there, like the standard library, not a dependency that
    `pip install` could provide (tests/course/test_packaging.py knows it as one).
    """
    import pyodide.ffi

    return pyodide.ffi


def _waiter(clock: str | None) -> _PrivateLoop | _KernelLoop:
    if clock is None:
        clock = "virtual" if sys.platform == "emscripten" and not browser_can_wait() else "real"
    if clock == "virtual":
        return _PrivateLoop(VirtualClockLoop())
    if clock != "real":
        raise ValueError(f"clock must be 'real', 'virtual' or None, got {clock!r}")
    if sys.platform == "emscripten":
        if not browser_can_wait():
            raise RuntimeError(
                "this browser cannot pause Python to wait for the app (no WebAssembly JSPI); "
                "pass clock='virtual' to get the same stream on a virtual clock"
            )
        return _KernelLoop()
    return _PrivateLoop(asyncio.new_event_loop())


# ---------------------------------------------------------------------------------------------
# One exchange: the ASGI side


_END = object()  # the app returned


class _Exchange:
    """One request to the app: its scope, receive and send, and the queue the client reads."""

    def __init__(self, app: Any, scope: dict[str, Any], body: bytes) -> None:
        self.app = app
        self.scope = scope
        self.body = body
        self.sent_request = False
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.disconnected = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.started_at = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.started_at = loop.time()
        self.scope.setdefault("state", {})["start"] = self.started_at
        self.task = loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self.app(self.scope, self._receive, self._send)
        except Exception as error:  # reported to the reader, as a reset connection would be
            await self.outbox.put(error)
        finally:
            await self.outbox.put(_END)

    async def _receive(self) -> dict[str, Any]:
        if not self.sent_request:
            self.sent_request = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self.disconnected.is_set():
            raise OSError("the client has gone away")  # as a write to a closed socket would
        loop = asyncio.get_running_loop()
        await self.outbox.put(((loop.time() - self.started_at) * 1000.0, message))

    async def hang_up(self) -> None:
        """Tell the app the client left, and let it finish (cancelled if it takes too long)."""
        self.disconnected.set()
        if self.task is None or self.task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self.task), WIND_DOWN_TIMEOUT_S)
        except TimeoutError:
            self.task.cancel()
        except Exception:
            pass  # the app's own error after the client left is not the client's concern


# ---------------------------------------------------------------------------------------------
# The client side


class InProcessResponse:
    """A response being read: status and headers now, the body chunk by chunk as it is sent.

    ``complete`` is None while the body is still coming, then True when the app ended the
    response properly and False when it stopped without doing so (a dropped connection);
    ``error`` holds what the app raised, if it raised after the response began.
    """

    def __init__(self, waiter: _PrivateLoop | _KernelLoop, exchange: _Exchange) -> None:
        self._waiter = waiter
        self._exchange = exchange
        self.status_code = 0
        self.headers: list[tuple[str, str]] = []
        self.arrivals: list[Arrival] = []
        self.complete: bool | None = None
        self.error: Exception | None = None
        self.closed = False
        self._pending: list[Arrival] = []
        self._started = False

    def _next_message(self) -> tuple[float, dict[str, Any]] | None:
        """Return the app's next (at_ms, message), or None once the app has returned."""
        item = self._waiter.wait(self._exchange.outbox.get())
        if item is _END:
            return None
        if isinstance(item, Exception):
            if not self._started:
                raise AppFailed(f"the app failed before responding: {item!r}") from item
            self.error = item  # the response stops there, as a reset connection would
            return self._next_message()
        return item

    def _read_start(self) -> None:
        message = self._next_message()
        if message is None:
            raise AppFailed("the app returned without sending a response")
        _, start = message
        while start["type"] != "http.response.start":  # e.g. an ASGI extension message
            message = self._next_message()
            if message is None:
                raise AppFailed("the app returned without sending a response")
            _, start = message
        self._started = True
        self.status_code = start["status"]
        self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start["headers"]]

    def header(self, name: str) -> str | None:
        """Return the first value of header `name` (any case), or None."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def iter_arrivals(self) -> Iterator[Arrival]:
        """Yield each body message as the app sends it: ``Arrival(at_ms, data)``."""
        while self.complete is None and not self.closed:
            message = self._next_message()
            if message is None:
                self.complete = False  # the app returned with more_body still True
                return
            at_ms, body = message
            if body["type"] != "http.response.body":
                continue
            data = bytes(body.get("body", b""))
            if data:
                arrival = Arrival(at_ms, data)
                self.arrivals.append(arrival)
                yield arrival
            if not body.get("more_body", False):
                self.complete = True
                self._finish()

    def iter_raw(self) -> Iterator[bytes]:
        """Yield the body's bytes, one chunk per message the app sends, as it sends them."""
        for arrival in self.iter_arrivals():
            yield arrival.data

    def read(self) -> bytes:
        """Return the whole body, once the app has sent all of it."""
        for _ in self.iter_raw():
            pass
        return b"".join(arrival.data for arrival in self.arrivals)

    def json(self) -> Any:
        """Return the body parsed as JSON."""
        return json_module.loads(self.read())

    def _finish(self) -> None:
        exchange = self._exchange
        if exchange.task is not None and not exchange.task.done():
            self._waiter.wait(exchange.task)

    def close(self) -> None:
        """Stop reading; if the body is not over, the app sees the client disconnect."""
        if self.closed:
            return
        self.closed = True
        if self.complete is None:
            self._waiter.wait(self._exchange.hang_up())

    def __enter__(self) -> InProcessResponse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class InProcessClient:
    """A client for an ASGI app in this process: requests go to the app, with no socket.

    ``clock`` chooses how the app's waits pass (see the module docstring): "real",
    "virtual", or None for real where this kernel can wait and virtual where it cannot.
    """

    def __init__(self, app: Any, *, clock: str | None = None) -> None:
        self.app = app
        self._waiter = _waiter(clock)
        self.clock = "virtual" if isinstance(self._waiter.loop, VirtualClockLoop) else "real"

    def stream(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> InProcessResponse:
        """Send a request; return the response once its head arrived (use it in a with-block)."""
        body = content or b""
        all_headers = {
            "host": IN_PROCESS_HOST,
            **{k.lower(): v for k, v in (headers or {}).items()},
        }
        if json is not None:
            body = json_module.dumps(json).encode("utf-8")
            all_headers.setdefault("content-type", "application/json")
        if body:
            all_headers["content-length"] = str(len(body))
        path, _, query = path.partition("?")
        if params:
            query = "&".join(q for q in (query, urlencode(params)) if q)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": method.upper(),
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": [
                (k.encode("latin-1"), str(v).encode("latin-1")) for k, v in all_headers.items()
            ],
            "client": ("127.0.0.1", 0),
            "server": (IN_PROCESS_HOST, 80),
        }
        exchange = _Exchange(self.app, scope, body)
        exchange.start(self._waiter.loop)
        response = InProcessResponse(self._waiter, exchange)
        response._read_start()
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> InProcessResponse:
        """Send a request and read the whole response; return it (``.read()``, ``.json()``)."""
        with self.stream(method, path, **kwargs) as response:
            response.read()
        return response

    def close(self) -> None:
        """Release the client's private event loop, if it has one."""
        self._waiter.close()

    def __enter__(self) -> InProcessClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# The same stream for httpx


class InProcessTransport(httpx.BaseTransport):
    """An httpx transport that sends requests to an ASGI app in this process, streaming.

    ``httpx.Client(transport=InProcessTransport(app), base_url="http://lessonkit.local")``
    behaves like a client of the real server: ``iter_raw()`` yields each write as the app
    sends it, and a response the app cuts short (``drop_after_bytes``) raises
    ``httpx.RemoteProtocolError`` at its end, as a dropped connection does.
    """

    def __init__(self, app: Any, *, clock: str | None = None) -> None:
        self.client = InProcessClient(app, clock=clock)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode("ascii")
        response = self.client.stream(
            request.method,
            target,
            content=request.read(),
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw},
        )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_BodyStream(response),
            extensions={"http_version": b"HTTP/1.1"},
        )

    def close(self) -> None:
        self.client.close()


class _BodyStream(httpx.SyncByteStream):
    def __init__(self, response: InProcessResponse) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self.response.iter_raw()
        if self.response.complete is False:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            )

    def close(self) -> None:
        self.response.close()


# ---------------------------------------------------------------------------------------------
# The in-process network: servers by address, for the browser kernel's running()

# The addresses in-process servers get: http://lessonkit.local:8001, :8002, ... (a with-block
# each). The host resolves nowhere; lessonkit's readers (rawhttp, http_client) look it up here.
FIRST_PORT = 8001


class InProcessNetwork:
    """The servers started in this process, by "host:port": what the OS's port table is to sockets.

    One per kernel (``NETWORK``): a URL is only a string, so the readers that get one must
    find its app somewhere. A server is on it for the length of its with-block.
    """

    def __init__(self) -> None:
        self._servers: dict[str, InProcessClient] = {}

    def add(self, app: Any, *, clock: str | None = None) -> str:
        """Put ``app`` on the lowest free port; return its base URL ("http://lessonkit.local:8001")."""
        port = FIRST_PORT
        while f"{IN_PROCESS_HOST}:{port}" in self._servers:
            port += 1
        address = f"{IN_PROCESS_HOST}:{port}"
        self._servers[address] = InProcessClient(app, clock=clock)
        return f"http://{address}"

    def remove(self, base_url: str) -> None:
        """Take the server at ``base_url`` off the network and release its loop."""
        client = self._servers.pop(_address(base_url), None)
        if client is not None:
            client.close()

    def client_for(self, url: str | httpx.URL) -> InProcessClient | None:
        """Return the client of the server that ``url`` points at, or None if none is here."""
        return self._servers.get(_address(url))


def _address(url: str | httpx.URL) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.host}:{parsed.port or 80}"


NETWORK = InProcessNetwork()


def is_in_process(url: str | httpx.URL) -> bool:
    """Return True when ``url`` is on a server of this process's in-process network."""
    return NETWORK.client_for(url) is not None


@contextmanager
def running_in_process(
    prefill_ms: float = 300, per_token_ms: float = 40, *, clock: str | None = None, **options: Any
) -> Iterator[str]:
    """Yield the base URL ("http://lessonkit.local:8001") of the course's server, in this process.

    The browser kernel's ``serve.running()``: the same app and settings as the real server,
    with no socket and no thread. Only lessonkit's readers reach it (``http_client()``,
    ``rawhttp``); each write still arrives as the app sends it.
    """
    from lessonkit.serve.app import create_app
    from lessonkit.serve.checks import Settings

    settings = Settings.from_options(prefill_ms=prefill_ms, per_token_ms=per_token_ms, **options)
    url = NETWORK.add(create_app(settings), clock=clock)
    try:
        yield url
    finally:
        NETWORK.remove(url)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the one TLS context (the CA certificates httpx trusts) the course's clients share.

    httpx loads the certificates into a new context for each client or transport it makes,
    about 1 MiB that the kernel keeps; the course's readers and proxies make many, most of
    them for plain http on loopback, so they share this one, made when first needed.
    """
    return httpx.create_ssl_context()


class CourseTransport(httpx.BaseTransport):
    """An httpx transport: in-process servers get their requests in-process, others the network."""

    def __init__(self, **network_options: Any) -> None:
        self._network_options = network_options
        self._network: httpx.BaseTransport | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        client = NETWORK.client_for(request.url)
        if client is not None:
            return _handle_in_process(client, request)
        if self._network is None:
            self._network = httpx.HTTPTransport(
                **{"verify": tls_context(), **self._network_options}
            )
        return self._network.handle_request(request)

    def close(self) -> None:
        if self._network is not None:
            self._network.close()


def _handle_in_process(client: InProcessClient, request: httpx.Request) -> httpx.Response:
    response = client.stream(
        request.method,
        request.url.raw_path.decode("ascii"),
        content=request.read(),
        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw},
    )
    return httpx.Response(
        response.status_code,
        headers=response.headers,
        stream=_BodyStream(response),
        extensions={"http_version": b"HTTP/1.1"},
    )


def http_client(**options: Any) -> httpx.Client:
    """Return an httpx.Client that reaches the course's servers, in-process ones included.

    ``options`` are httpx.Client's (timeout=..., base_url=...). Where ``serve.running()``
    gave a real URL this is a plain httpx client; for an in-process URL (the browser
    kernel) it calls the app in this process, chunk by chunk as it sends.
    """
    return httpx.Client(transport=CourseTransport(), **options)


def raw_exchange(url: str, request: bytes) -> tuple[bytes, list[tuple[float, bytes]]]:
    """Return the response bytes to a raw HTTP/1.1 ``request`` for the in-process server at ``url``.

    The bytes are the ones a server would put on the socket: h11 (uvicorn's pure-Python
    HTTP/1.1) turns the app's messages into a status line, headers and -- with no
    Content-Length -- chunked framing, one write per message. Also returns the
    arrivals, (ms since the request, bytes): the head first, then one per write.
    """
    import time

    import h11

    client = NETWORK.client_for(url)
    if client is None:
        raise ValueError(f"no in-process server at {url!r}")
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(request)
    head = conn.next_event()
    if not isinstance(head, h11.Request):
        raise ValueError(f"not a complete HTTP/1.1 request head: {request[:80]!r}")
    body = b""
    while not isinstance(event := conn.next_event(), h11.EndOfMessage):
        if event is h11.NEED_DATA:
            raise ValueError("the request's body is shorter than its Content-Length")
        body += event.data
    started = time.perf_counter()

    def at_ms(stamp_ms: float) -> float:  # the app's stamp on a virtual clock, else the reader's
        return stamp_ms if client.clock == "virtual" else (time.perf_counter() - started) * 1000

    arrivals: list[tuple[float, bytes]] = []
    with client.stream(
        head.method.decode("ascii"),
        head.target.decode("ascii"),
        content=body,
        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers},
    ) as response:
        start = h11.Response(
            status_code=response.status_code,
            reason=HTTPStatus(response.status_code).phrase.encode("ascii"),
            headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers],
        )
        arrivals.append((at_ms(0.0), conn.send(start) or b""))
        for arrival in response.iter_arrivals():
            arrivals.append((at_ms(arrival.at_ms), conn.send(h11.Data(data=arrival.data)) or b""))
        if response.complete:  # chunked: the zero-size chunk, a write of its own as uvicorn's
            end = conn.send(h11.EndOfMessage()) or b""
            if end:
                arrivals.append((at_ms(arrivals[-1][0]), end))
    return b"".join(data for _, data in arrivals), arrivals
