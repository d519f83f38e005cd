"""A small reverse proxy that either holds a streamed response back or passes it through.

Between a chat app and the model there is often a reverse proxy (Nginx, a load
balancer, an API gateway). Many of them collect the upstream response in a
buffer before sending it on; Nginx does so by default (``proxy_buffering on``).
For an ordinary page that is harmless. For a token stream it is the classic
mistake: the server flushes every token on time, the proxy keeps them, and the
user sees the whole answer arrive in one burst at the end.

    lessonkit proxy --upstream http://127.0.0.1:8000 --buffer      # the mistake
    lessonkit proxy --upstream http://127.0.0.1:8000 --no-buffer   # the fix

``--buffer`` reads the whole upstream body before sending a byte; ``--no-buffer``
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
from collections.abc import Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lessonkit.server import BackgroundServer, add_bind_options, serve_forever

__all__ = ["configure_parser", "create_proxy_app", "main", "running_proxy"]

# Headers about one hop (this connection), not about the message: a proxy must not
# forward them (RFC 9110 section 7.6.1). Host is set again for the upstream.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "date",  # not hop-by-hop, but uvicorn writes a fresh Date itself; one is enough
}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]


def _forwardable(raw_headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Return the end-to-end headers (hop-by-hop ones removed), as raw byte pairs."""
    return [(k, v) for k, v in raw_headers if k.decode("latin-1").lower() not in HOP_BY_HOP]


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
                # No read timeout: a stalled stream is the upstream's business to end.
                timeout=httpx.Timeout(connect=5.0, read=None, write=30.0, pool=None),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
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
    background = BackgroundServer(app, on_stop=app.state.proxy.close_soon)
    url = background.start()
    try:
        yield url
    finally:
        background.stop()


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
        help="hold each response until it is complete (Nginx's default; the default)",
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
        print(f"error: {exc}")
        return 2
    mode = "buffering" if args.buffer else "pass-through"
    return serve_forever(
        app, args.host, args.port, f"proxy ({mode}) to {args.upstream}", args.quiet
    )
