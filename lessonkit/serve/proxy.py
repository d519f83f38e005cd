"""A small reverse proxy that either holds a streamed response back or passes it through.

Between a chat app and the model there is often a reverse proxy (Nginx, a load
balancer, an API gateway). Many of them read the upstream response into buffers
and send it on only when the buffers fill or the response ends; Nginx does so by
default (``proxy_buffering on``, with ``proxy_buffers`` of a few kilobytes). For an
ordinary page that is harmless. A token stream is small, so it never fills them. For a token stream it is the classic
mistake: the server flushes every token on time, the proxy keeps them, and the
user sees the whole answer arrive in one burst at the end.

    lessonkit proxy --upstream http://127.0.0.1:8000 --buffer      # the mistake
    lessonkit proxy --upstream http://127.0.0.1:8000 --no-buffer   # the fix

``--buffer`` models the short-answer case: it reads the whole upstream body before
sending a byte; ``--no-buffer``
writes each piece downstream as soon as it arrives. In a notebook::

    with running_proxy(server_url, buffer=True) as proxy_url:
        ...

Nginx also honours an ``X-Accel-Buffering: no`` response header from the upstream
(lessonkit.server sends it); ``honor_accel_buffering=True`` makes this proxy do
the same, so you can see why servers send that header.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lessonkit.core import framing
from lessonkit.serve.background import serving
from lessonkit.serve.cli import add_bind_options, serve_forever
from lessonkit.serve.inprocess import tls_context

__all__ = ["configure_parser", "create_proxy_app", "main", "running_proxy"]

# What a proxy must not forward (lessonkit.core.framing.HOP_BY_HOP_HEADERS); Host is set
# again for the upstream.
HOP_BY_HOP = framing.HOP_BY_HOP_HEADERS | {
    "host",
    "date",  # not hop-by-hop, but uvicorn writes a fresh Date itself; one is enough
}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]


def _forwardable(raw_headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Return the end-to-end headers (hop-by-hop ones removed), as raw byte pairs."""
    return [(k, v) for k, v in raw_headers if k.decode("latin-1").lower() not in HOP_BY_HOP]


class PoolShards(httpx.AsyncBaseTransport):
    """An httpx transport that spreads requests over many small connection pools.

    httpcore's connection pool scans every connection it holds each time a request
    starts or ends, so one pool serving N open streams does O(N) work per event and
    O(N**2) in all: with 500 streams a single pool spent seconds of CPU on that scan
    alone and the first tokens arrived seconds late. Pools of at most
    `streams_per_pool` open responses keep each scan short. A new request goes to the
    least busy pool; a new pool is made when all are full.
    """

    def __init__(self, streams_per_pool: int = 8, keepalive_expiry_s: float = 4.0) -> None:
        self.streams_per_pool = streams_per_pool
        self.limits = httpx.Limits(
            max_connections=None,
            max_keepalive_connections=streams_per_pool,
            # Shorter than uvicorn's 5 s keep-alive timeout, so the proxy never reuses
            # a connection the upstream is closing at that moment (a spurious 502).
            keepalive_expiry=keepalive_expiry_s,
        )
        self.ssl_context = tls_context()  # one for all pools (and all of the course's clients)
        self.pools: list[httpx.AsyncHTTPTransport] = []
        self.open_streams: list[int] = []  # open responses per pool

    def _pick(self) -> int:
        if self.pools:
            index = min(range(len(self.pools)), key=self.open_streams.__getitem__)
            if self.open_streams[index] < self.streams_per_pool:
                return index
        self.pools.append(httpx.AsyncHTTPTransport(verify=self.ssl_context, limits=self.limits))
        self.open_streams.append(0)
        return len(self.pools) - 1

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self._pick()
        self.open_streams[index] += 1
        try:
            response = await self.pools[index].handle_async_request(request)
        except BaseException:
            self.open_streams[index] -= 1
            raise
        stream = _CountedStream(response.stream, lambda: self._release(index))
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
        )

    def _release(self, index: int) -> None:
        self.open_streams[index] -= 1

    async def aclose(self) -> None:
        for pool in self.pools:
            await pool.aclose()


class _CountedStream(httpx.AsyncByteStream):
    """A response body that calls `on_close` once, when it is closed."""

    def __init__(self, stream: Any, on_close: Callable[[], None]) -> None:
        self.stream = stream
        self.on_close: Callable[[], None] | None = on_close

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self.stream:
            yield piece

    async def aclose(self) -> None:
        try:
            await self.stream.aclose()
        finally:
            if self.on_close is not None:
                self.on_close()
                self.on_close = None


class ProxyState:
    """The upstream, the buffering mode and the shared httpx client of one proxy."""

    def __init__(self, upstream: str, buffer: bool, honor_accel_buffering: bool) -> None:
        self.upstream = upstream.rstrip("/")
        self.buffer = buffer
        self.honor_accel_buffering = honor_accel_buffering
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """The httpx client, made on first use inside the proxy's own event loop."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=PoolShards(),
                # No read timeout: a stalled stream is the upstream's business to end.
                timeout=httpx.Timeout(connect=10.0, read=None, write=30.0, pool=None),
                follow_redirects=False,
            )
        return self._client

    def close_soon(self) -> None:
        """Schedule closing the httpx client (call on the proxy's event loop)."""
        if self._client is not None:
            asyncio.ensure_future(self._client.aclose())
            self._client = None


async def forward(request: Request) -> Response | Relay:
    """Send the request upstream and return a Relay for the response (502 if unreachable)."""
    state: ProxyState = request.app.state.proxy
    url = state.upstream + request.url.path
    if request.url.query:
        url += "?" + request.url.query
    upstream_request = state.client.build_request(
        request.method, url, headers=_forwardable(request.headers.raw), content=await request.body()
    )
    try:
        upstream_response = await state.client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        error = {"message": f"upstream {state.upstream} failed: {exc}", "type": "proxy_error"}
        return JSONResponse({"error": error}, status_code=502)
    hold = state.buffer
    if hold and state.honor_accel_buffering:
        hold = upstream_response.headers.get("x-accel-buffering", "").lower() != "no"
    return Relay(upstream_response, hold=hold)


class Relay:
    """An ASGI response that copies an upstream response, held back or as it arrives."""

    def __init__(self, upstream: httpx.Response, *, hold: bool) -> None:
        self.upstream = upstream
        self.hold = hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pump = asyncio.ensure_future(self._copy(send))
        watch = asyncio.ensure_future(_client_leaves(receive))
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            pump.cancel()
            watch.cancel()
            # Closing the upstream response closes its connection, so the server
            # sees our client's disconnect and stops generating too.
            await self.upstream.aclose()

    def _start(self, body_length: int | None) -> dict:
        headers = [
            (k.lower(), v)
            for k, v in _forwardable(self.upstream.headers.raw)
            if body_length is None or k.lower() != b"content-length"
        ]
        if body_length is not None:
            headers.append((b"content-length", str(body_length).encode()))
        headers.append((b"via", b"1.1 lessonkit-proxy"))
        return {
            "type": "http.response.start",
            "status": self.upstream.status_code,
            "headers": headers,
        }

    async def _copy(self, send: Send) -> None:
        body = bytearray()
        try:
            if self.hold:
                # The buffering mistake: nothing goes out until the upstream is done.
                async for piece in self.upstream.aiter_raw():
                    body += piece
                await send(self._start(len(body)))
                await send({"type": "http.response.body", "body": bytes(body)})
                return
            await send(self._start(None))
            async for piece in self.upstream.aiter_raw():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except httpx.HTTPError:
            # The upstream broke off mid-body: pass on what came, then break off too
            # (returning with the response unfinished makes uvicorn close the socket).
            if self.hold:
                await send(self._start(None))
                await send({"type": "http.response.body", "body": bytes(body), "more_body": True})


async def _client_leaves(receive: Receive) -> None:
    """Return when the downstream client disconnects."""
    while (await receive())["type"] != "http.disconnect":
        pass


def create_proxy_app(
    upstream: str, *, buffer: bool = True, honor_accel_buffering: bool = False
) -> Starlette:
    """Return the proxy's Starlette app: every path and method goes to `upstream`."""
    if not upstream.startswith(("http://", "https://")):
        raise ValueError(f"upstream must be an http:// or https:// URL, got {upstream!r}")
    app = Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)])
    app.state.proxy = ProxyState(upstream, buffer, honor_accel_buffering)
    return app


@contextlib.contextmanager
def running_proxy(
    upstream: str, buffer: bool = True, *, honor_accel_buffering: bool = False
) -> Iterator[str]:
    """Yield the base URL of a proxy to `upstream` running in a background thread."""
    app = create_proxy_app(upstream, buffer=buffer, honor_accel_buffering=honor_accel_buffering)
    with serving(app, on_stop=app.state.proxy.close_soon) as url:
        yield url


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit proxy`."""
    parser.add_argument(
        "--upstream", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--buffer",
        dest="buffer",
        action="store_true",
        default=True,
        help="hold each response until it is complete, as Nginx's buffers do with a short "
        "answer (the default)",
    )
    mode.add_argument(
        "--no-buffer",
        dest="buffer",
        action="store_false",
        help="pass bytes on as they arrive (what a token stream needs)",
    )
    parser.add_argument(
        "--honor-x-accel-buffering",
        action="store_true",
        help="like Nginx, stop buffering a response that says X-Accel-Buffering: no",
    )
    add_bind_options(parser, 8001)


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit proxy`; return the exit code."""
    try:
        app = create_proxy_app(
            args.upstream, buffer=args.buffer, honor_accel_buffering=args.honor_x_accel_buffering
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    mode = "buffering" if args.buffer else "pass-through"
    return serve_forever(
        app, args.host, args.port, f"proxy ({mode}) to {args.upstream}", args.quiet
    )
