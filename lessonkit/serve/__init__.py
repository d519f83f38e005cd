"""The edge with sockets and clocks: a real local streaming LLM server, a proxy, a raw client.

May import: lessonkit.core, starlette, uvicorn, httpx, asyncio, socket, threading,
time. Never lessonkit.lab or lessonkit.grading. The Jupyter server's extensions
(jupyter_route, jupyter_culling, and demo_socket, which they use) import only the
standard library, tornado, jupyter_server, jupyter_core and httpx.

    app         the routes: OpenAI- and Anthropic-compatible endpoints, GET /v1/stream, stats
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
    inprocess   the app called in this process, no socket (the browser kernel): writes as sent

In a notebook::

    from lessonkit import serve
    with serve.running(prefill_ms=300, per_token_ms=40) as url:
        ...  # url == "http://127.0.0.1:PORT"
"""

from __future__ import annotations

from typing import Any

__all__ = ["running"]


def __getattr__(name: str) -> Any:
    # `running` is imported when first used, not with the package: the Jupyter server
    # imports lessonkit.serve.jupyter_route and should not load uvicorn and starlette.
    if name == "running":
        from lessonkit.serve.background import running

        return running
    raise AttributeError(f"module 'lessonkit.serve' has no attribute {name!r}")
