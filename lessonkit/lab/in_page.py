"""HTTP between the page and the kernel as widget messages: the browser kernel's network.

In JupyterLite the kernel runs in the learner's browser tab and has no socket; the page
cannot send it an HTTP request. So the browser demo's widget carries them (lesson 03):

    page -> kernel  {"type": "request", "id", "method", "path", "headers"}, body in buffers
    kernel -> page  {"type": "response-start", "id", "status", "headers"}
                    {"type": "response-body", "id", "more"}, the bytes in buffers[0]
                    {"type": "response-end", "id", "error"}     (error: "" when all went well)
    page -> kernel  {"type": "abort", "id"}                     (the page stopped reading)

``PageRequests`` runs the course's ASGI app for each request as a task on the kernel's
own event loop (Pyodide's, whose timers are the browser's: real time), and sends each
message the app sends as it sends it. Two requests stream at once, as the demo's two
panels do. (A synchronous client such as lessonkit.serve.inprocess would serve them one
after the other; nothing here blocks.) The page turns the messages into a Response whose
body is a ReadableStream (browser_demo.js), read by the panels' usual code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

PAGE_MESSAGES = {"request", "abort"}
HOST = "lessonkit.local"  # the host the in-page server answers as (nothing resolves it)


class PageRequests:
    """Serve the page's requests to an ASGI app, each body message sent on as it is sent.

    `send(content, buffers)` sends one widget message to the page (the widget's own send).
    """

    def __init__(self, app: Any, send: Callable[..., None]) -> None:
        self.app = app
        self._send = send
        self._gone: dict[str, asyncio.Event] = {}  # request id -> set when the page hangs up
        self._tasks: set[asyncio.Task[None]] = set()

    def handle(self, content: dict[str, Any], buffers: list[Any] | None = None) -> None:
        """Take one message from the page: start serving a request, or stop one."""
        request_id = str(content.get("id", ""))
        if content.get("type") == "abort":
            gone = self._gone.get(request_id)
            if gone is not None:
                gone.set()
            return
        body = b"".join(bytes(b) for b in buffers or [])
        task = asyncio.ensure_future(self.serve(request_id, content, body))
        self._tasks.add(task)  # keep a reference until it is done
        task.add_done_callback(self._tasks.discard)

    async def serve(self, request_id: str, request: dict[str, Any], body: bytes) -> None:
        """Run the app for one request; send the page each message as the app sends it."""
        gone = self._gone[request_id] = asyncio.Event()
        path, _, query = str(request.get("path", "/")).partition("?")
        headers = {"host": HOST, **{str(k).lower(): str(v) for k, v in
                                    dict(request.get("headers") or {}).items()}}  # fmt: skip
        if body:
            headers["content-length"] = str(len(body))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": str(request.get("method", "GET")).upper(),
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "client": ("127.0.0.1", 0),
            "server": (HOST, 80),
            "state": {"start": asyncio.get_running_loop().time()},
        }
        asked = False

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if gone.is_set():
                raise OSError("the page has stopped reading")  # as a closed socket would
            if message["type"] == "http.response.start":
                pairs = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in message["headers"]]
                self._send({"type": "response-start", "id": request_id,
                            "status": message["status"], "headers": pairs})  # fmt: skip
            elif message["type"] == "http.response.body":
                data = bytes(message.get("body", b""))
                more = bool(message.get("more_body", False))
                self._send({"type": "response-body", "id": request_id, "more": more},
                           buffers=[data] if data else [])  # fmt: skip

        error = ""
        try:
            await self.app(scope, receive, send)
        except Exception as failure:  # the page shows it, as a reset connection would be
            error = "" if gone.is_set() else f"the kernel's server failed: {failure!r}"
        finally:
            self._gone.pop(request_id, None)
            self._send({"type": "response-end", "id": request_id, "error": error})
