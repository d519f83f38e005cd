"""The timed streaming loop: play a plan of ``(at_ms, bytes)`` writes on a real clock.

This is the one place in lessonkit where tokens meet time. ``lessonkit.core.llm``
decides every write and when it is due, without a clock; here a ``TimedResponse``

1. sleeps until each write is due, on the event loop's monotonic clock, measured
   from the moment the request arrived (``start + at_ms``, never a sum of sleeps,
   so timing errors do not pile up over a long answer), and
2. sends the bytes as one ASGI message, which uvicorn hands to the socket at once:
   that is the flush, so every token leaves the machine when it is generated.

While it sleeps a watcher listens for the client going away; ``Pacer.hang_up``
wakes the sleeper, so generation stops within one token of a disconnect.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from starlette.types import Receive, Scope, Send


@dataclass
class Stats:
    """Counters shown by GET /v1/stats: one instance per server, kept on its event loop."""

    requests: int = 0  # every HTTP request and WebSocket that reached the app
    active_streams: int = 0  # responses being written right now
    streams_completed: int = 0  # ended with their end marker
    streams_dropped: int = 0  # cut on purpose by drop_after_bytes
    tokens_generated: int = 0  # tokens the simulated model produced
    tokens_after_disconnect: int = 0  # of those, produced for a client that was already gone
    disconnects: int = 0  # clients that left before the end
    streams_stopped: int = 0  # WebSocket answers the client stopped with {"stop": true}

    def as_dict(self) -> dict[str, int]:
        """Return the counters as a plain dict (the JSON body of /v1/stats)."""
        return asdict(self)


class Pacer:
    """Sleeps until ``start + at_ms`` on the event loop's monotonic clock, unless woken early.

    One Pacer belongs to one response. The disconnect watcher (or the server shutting
    down) calls `hang_up`, which wakes a pending `sleep_until` at once, so a client
    that leaves stops generation before the next token, not after the next sleep.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        start: float,
        lateness_ms: collections.deque[float] | None = None,
    ) -> None:
        self.loop = loop
        self.start = start  # loop.time() when the request arrived
        self.lateness_ms = lateness_ms  # where to note how late each wake-up was
        self.gone = False  # True once the client left (or the server is stopping)
        self.reason = ""  # why: "gone" (client left), "stop" (client asked), "shutdown"
        self._wake: asyncio.Future[None] | None = None

    async def sleep_until(self, at_ms: float) -> bool:
        """Wait until `at_ms` after the start; return True if the client is still there."""
        if self.gone:
            return False
        deadline = self.start + at_ms / 1000.0
        now = self.loop.time()
        if deadline > now:
            # A bare future woken by a timer or by hang_up: cheaper than a task per token.
            self._wake = self.loop.create_future()
            # The delay from one reading of the clock: Pyodide's event loop (the browser
            # kernel's) refuses a timer in the past, and call_at would read it again.
            timer = self.loop.call_later(deadline - now, _resolve, self._wake)
            try:
                await self._wake
            finally:
                timer.cancel()
                self._wake = None
        if self.lateness_ms is not None and not self.gone:
            self.lateness_ms.append((self.loop.time() - deadline) * 1000.0)
        return not self.gone

    def hang_up(self, reason: str = "gone") -> None:
        """Mark the response as over (see `reason`) and wake the sleeper."""
        if not self.gone:
            self.reason = reason
        self.gone = True
        if self._wake is not None:
            _resolve(self._wake)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class TokenClock:
    """Counts the tokens the simulated model has produced by a given at_ms."""

    def __init__(self, times_ms: list[float]) -> None:
        self.times_ms = times_ms
        self.produced = 0

    def advance(self, at_ms: float) -> int:
        """Return how many more tokens exist at `at_ms` than at the previous call."""
        before = self.produced
        while self.produced < len(self.times_ms) and self.times_ms[self.produced] <= at_ms:
            self.produced += 1
        return self.produced - before


class TimedResponse:
    """An ASGI response that plays a plan of ``(at_ms, bytes)`` writes in real time.

    A streaming answer has many writes; a blocking answer is the same thing with a
    single write at the end. Each write is one ``http.response.body`` message, which
    uvicorn hands to the socket right away: that is the flush.
    """

    def __init__(
        self,
        writes: Iterable[tuple[float, bytes]],
        *,
        pacer: Pacer,
        stats: Stats,
        live: set[Pacer],
        token_times_ms: list[float],
        headers: list[tuple[bytes, bytes]],
        drop_after_bytes: int | None = None,
        status: int = 200,
    ) -> None:
        self.writes = writes
        self.pacer = pacer  # this response's clock
        self.stats = stats  # the server's counters
        self.live = live  # the server's responses in progress (hung up at shutdown)
        self.tokens = TokenClock(token_times_ms)
        self.headers = headers
        self.drop_after_bytes = drop_after_bytes
        self.status = status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stats, pacer = self.stats, self.pacer
        watcher = asyncio.ensure_future(_watch_disconnect(receive, pacer))
        self.live.add(pacer)
        stats.active_streams += 1
        try:
            await send(
                {"type": "http.response.start", "status": self.status, "headers": self.headers}
            )
            await self._play(send, pacer)
        finally:
            stats.active_streams -= 1
            self.live.discard(pacer)
            watcher.cancel()

    async def _play(self, send: Send, pacer: Pacer) -> None:
        stats = self.stats
        sent_bytes = 0
        for at_ms, data in self.writes:
            if not await pacer.sleep_until(at_ms):
                if pacer.reason == "gone":
                    stats.disconnects += 1
                return  # (or the server is shutting down: the stream just ends)
            new_tokens = self.tokens.advance(at_ms)
            stats.tokens_generated += new_tokens
            limit = self.drop_after_bytes
            if limit is not None and sent_bytes + len(data) >= limit:
                # Fault injection: the bytes up to the limit, then an abrupt close (no end
                # marker, no final empty chunk). Returning without finishing the response
                # makes uvicorn close the TCP connection.
                await send(
                    {
                        "type": "http.response.body",
                        "body": data[: limit - sent_bytes],
                        "more_body": True,
                    }
                )
                if sent_bytes + len(data) > limit:
                    stats.streams_dropped += 1
                    return
            else:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            sent_bytes += len(data)
            await asyncio.sleep(0)  # let the disconnect watcher run before the next token
            if pacer.reason == "gone":
                # The client was gone by the time these tokens were written (at most one
                # token's worth, because the pacer never sleeps past a hang-up).
                stats.tokens_after_disconnect += new_tokens
                stats.disconnects += 1
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        stats.streams_completed += 1


async def _watch_disconnect(receive: Receive, pacer: Pacer) -> None:
    """Wait for the ASGI ``http.disconnect`` message, then hang up the pacer."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            pacer.hang_up()
            return
