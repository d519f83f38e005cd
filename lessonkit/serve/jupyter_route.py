"""The course's Jupyter server extension: one route from the page to the learner's own demo.

Lesson 03's page runs in the learner's browser, which may be on another machine
than the kernel (JupyterHub, Binder): it cannot call the kernel's server itself. It
calls the Jupyter server that served the page, at

    <base URL>lessonkit/demo/<name>/<path>      e.g. /user/alice/lessonkit/demo/k3x9.../v1/stream

and this handler passes the request on to the demo server listening on the Unix
socket ``<name>.sock`` in this user's private folder (lessonkit.serve.demo_socket),
then streams the answer back, flushing every piece as it arrives, so EventSource and
fetch both see tokens one by one.

What the route refuses, and why:

* a name that is not 12 lowercase letters and digits: 404. Nothing else can name a
  file, so no ``..``, no slash, no absolute path reaches the file system;
* a name with no socket in *this* user's folder: 404. Another learner's sockets are
  in their own folder, which this server never looks in;
* requests without this server's login (the hub's cookie or a token): Jupyter's own
  login check, as for every other route of the server; POSTs also need Jupyter's XSRF
  token, which the page sends from its ``_xsrf`` cookie.

The route reaches no TCP port. (jupyter-server-proxy's ``/proxy/<port>`` routes reach
any port of localhost, and no setting turns them off; that is why the course does not
install it.) Enabled by ``etc/jupyter/jupyter_server_config.d/streaming-course.json``,
which ``pip install .`` puts in the environment.

Imports the standard library, tornado, jupyter_server and httpx only: it runs inside
every learner's Jupyter server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.iostream import StreamClosedError

from lessonkit.serve import demo_socket

__all__ = ["ROUTE", "DemoRouteHandler", "demo_route_path"]

ROUTE = "lessonkit/demo"  # the same path is in lessonkit/lab/browser_demo.js
UPSTREAM = "http://lessonkit-demo"  # any host name does: the socket file is the address
# Headers about one connection, not the message (RFC 9110 section 7.6.1), and the
# Jupyter server's own credentials, which the kernel's server has no business seeing.
NOT_FORWARDED_UP = {
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
    "content-length",  # httpx sets it for the body it sends
    "cookie",
    "authorization",
    "x-xsrftoken",
    "accept-encoding",  # the answer must come back as it is written, never compressed
}
NOT_FORWARDED_DOWN = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",  # tornado sends the body in chunks as it arrives
    "date",  # tornado writes its own
    "server",
}


def demo_route_path(base_url: str) -> str:
    """Return the tornado pattern of the route under `base_url` (the name is checked later)."""
    return url_path_join(base_url, ROUTE, r"([^/]+)(?:/.*)?")


class DemoRouteHandler(JupyterHandler):
    """GET and POST <base URL>lessonkit/demo/<name>/<path>, relayed to this user's socket <name>."""

    auth_resource = "kernels"  # whoever may run code in this server's kernels may call them

    def initialize(self) -> None:
        self._client_gone = asyncio.Event()

    @web.authenticated
    @authorized("execute", resource="kernels")
    async def get(self, name: str) -> None:
        await self._relay(name)

    @web.authenticated
    @authorized("execute", resource="kernels")
    async def post(self, name: str) -> None:
        await self._relay(name)

    def on_connection_close(self) -> None:
        self._client_gone.set()  # the page closed its EventSource or aborted its fetch

    def _refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": message}))

    def _upstream_target(self) -> str:
        """Return the path and query after <name>/, as the page sent them (still encoded)."""
        prefix = url_path_join(self.base_url, ROUTE) + "/"
        rest = self.request.path[len(prefix) :]
        _name, _slash, path = rest.partition("/")
        query = f"?{self.request.query}" if self.request.query else ""
        return f"/{path}{query}"

    async def _relay(self, name: str) -> None:
        try:
            path = demo_socket.socket_path(name)
        except demo_socket.SocketNameError as error:
            return self._refuse(404, str(error))
        except OSError as error:  # the folder is missing, not private, or its path too long
            return self._refuse(404, f"no demo server named {name!r} runs for you: {error}")
        if not path.exists():
            return self._refuse(
                404,
                f"no demo server named {name!r} runs for you (its kernel stopped?): "
                "run the notebook's cells again",
            )
        headers = [
            (k, v) for k, v in self.request.headers.get_all() if k.lower() not in NOT_FORWARDED_UP
        ]
        # Plain HTTP over a socket file: no TLS, so no certificates to load (httpx's default
        # loads them for every client, which cost ~100 ms a request on a busy machine).
        transport = httpx.AsyncHTTPTransport(uds=str(path), verify=False)
        # No read timeout: a stalled stream is the demo server's to end.
        timeout = httpx.Timeout(connect=10.0, read=None, write=30.0, pool=None)
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
            request = client.build_request(
                self.request.method,
                UPSTREAM + self._upstream_target(),
                headers=headers,
                content=self.request.body or None,
            )
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as error:
                return self._refuse(
                    502,
                    f"the demo server {name!r} did not answer ({error}): "
                    "run the notebook's cells again",
                )
            try:
                await self._stream_back(response)
            finally:
                await response.aclose()  # the demo server sees the page leave, stops generating

    async def _stream_back(self, response: httpx.Response) -> None:
        self.set_status(response.status_code)
        self.clear_header("Content-Type")
        for key, value in response.headers.multi_items():
            if key.lower() not in NOT_FORWARDED_DOWN:
                self.add_header(key, value)
        pump = asyncio.ensure_future(self._copy_body(response))
        gone = asyncio.ensure_future(self._client_gone.wait())
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            pump.cancel()
            gone.cancel()
        if pump.done() and not pump.cancelled() and pump.exception() is None:
            self.finish()

    async def _copy_body(self, response: httpx.Response) -> None:
        """Write each piece of the body to the page as soon as it arrives."""
        try:
            async for piece in response.aiter_raw():
                self.write(piece)
                await self.flush()  # the point of the route: nothing is held back
        except StreamClosedError:
            self._client_gone.set()
            raise
        except httpx.HTTPError:
            # The demo server broke off mid-body: break off too, so the page sees what a
            # direct reader would (a stream with no end marker), not a tidy ending.
            self.request.connection.close()
            raise


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Return where Jupyter finds the extension (this module)."""
    return [{"module": "lessonkit.serve.jupyter_route"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Add the demo route to the Jupyter server's web app."""
    web_app = serverapp.web_app
    pattern = demo_route_path(web_app.settings["base_url"])
    web_app.add_handlers(".*$", [(pattern, DemoRouteHandler)])
    serverapp.log.info("lessonkit: the browser demo's route is %s", pattern)
