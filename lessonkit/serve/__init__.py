"""The edge with sockets and clocks: a real local streaming LLM server, a proxy, a raw client.

May import: lessonkit.core, starlette, uvicorn, httpx, asyncio, socket, threading,
time. Never lessonkit.lab or lessonkit.grading. The Jupyter server's extensions
(jupyter_route, jupyter_culling, and demo_socket, which they use) import only the
standard library, tornado, jupyter_server, jupyter_core and httpx.

    app         the routes: OpenAI- (Chat Completions, Responses) and Anthropic-compatible
                endpoints, GET /v1/stream, stats
    checks      what a request may ask for, and the 4xx JSON errors it gets otherwise
    state       what one server shares between requests: settings, counters, live streams
    pacing      the timed streaming loop: Pacer and TimedResponse play (at_ms, bytes) writes;
                Stats, the counters the loops keep
    websocket   WS /v1/ws: the same answer over a WebSocket
    background  running(): the server on a free loopback port in a background thread
    cli         `lessonkit serve`, and options shared with `lessonkit proxy`
    proxy       `lessonkit proxy --buffer | --no-buffer`: a reverse proxy that holds or passes
    rawhttp     the client side, live: raw socket bytes, timed requests, a cancelled stream
    demo_socket where the browser demo's servers listen: Unix sockets in a private folder
    jupyter_route   a Jupyter server extension: the page's one route to those sockets
    jupyter_culling a Jupyter server extension: idle kernels culled, also with a tab open
                (both run in the Jupyter server, not the kernel: tornado, jupyter_server
                and httpx only)
    inprocess   the app called in this process, no socket (the browser kernel): writes as sent;
                running_in_process() and http_client(), which reaches both kinds of server

In a notebook::

    from lessonkit import serve
    with serve.running(prefill_ms=300, per_token_ms=40) as url:
        ...  # url == "http://127.0.0.1:PORT"

In the browser kernel (JupyterLite: no sockets, no threads) ``running()`` puts the same app
on the in-process network instead (url == "http://lessonkit.local:8001"), and the readers
that take a URL -- ``http_client()``, ``rawhttp`` -- call it there, chunk by chunk as sent.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["http_client", "running"]


def __getattr__(name: str) -> Any:
    # Imported when first used, not with the package: the Jupyter server imports
    # lessonkit.serve.jupyter_route and should not load uvicorn and starlette, and the
    # browser kernel has no uvicorn at all.
    if name == "running":
        if sys.platform == "emscripten":  # no sockets, no threads: the same app, in-process
            from lessonkit.serve.inprocess import running_in_process

            return running_in_process
        from lessonkit.serve.background import running

        return running
    if name == "http_client":
        from lessonkit.serve.inprocess import http_client

        return http_client
    raise AttributeError(f"module 'lessonkit.serve' has no attribute {name!r}")
