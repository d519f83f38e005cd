"""What one running server shares between its requests: settings, counters, live streams.

One ``ServerState`` per app (``app.state.lessonkit``); it is touched only on the
server's own event loop, so it needs no locks.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import Iterable
from typing import Any

from lessonkit.core import llm
from lessonkit.serve.checks import Pace, Settings
from lessonkit.serve.pacing import Pacer, Stats


class ServerState:
    """What the endpoints share: settings, counters, live pacers and id counters."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stats = Stats()
        self.pacers: set[Pacer] = set()
        # How late each write was (ms after its at_ms), the last 100,000 of them
        self.lateness_ms: collections.deque[float] = collections.deque(maxlen=100_000)
        # How long each request waited between reaching the socket and reaching the app
        self.arrival_to_app_ms: collections.deque[float] = collections.deque(maxlen=100_000)
        self._ids = itertools.count(1)

    def pacer(self, start: float) -> Pacer:
        """Return a Pacer for one response that started at `start` (loop time)."""
        return Pacer(asyncio.get_running_loop(), start, self.lateness_ms)

    def report(self) -> dict[str, Any]:
        """Return the counters plus percentiles of write lateness and of the wait to the app."""
        return {
            **self.stats.as_dict(),
            "write_lateness_ms": _percentiles(self.lateness_ms),
            "arrival_to_app_ms": _percentiles(self.arrival_to_app_ms),
        }

    def reset(self) -> None:
        """Zero the counters (streams in progress stay counted as active)."""
        for name in self.stats.as_dict():
            if name != "active_streams":
                setattr(self.stats, name, 0)
        self.lateness_ms.clear()
        self.arrival_to_app_ms.clear()

    def next_id(self, prefix: str) -> str:
        """Return a fresh response id such as 'chatcmpl-000001'."""
        return f"{prefix}{next(self._ids):06d}"

    def hang_up_all(self) -> None:
        """End every response in progress (the server is stopping)."""
        for pacer in list(self.pacers):
            pacer.hang_up("shutdown")


def _percentiles(values_ms: Iterable[float]) -> dict[str, Any]:
    """Return {"count", "p50", "p95", "max"} of some milliseconds (None when empty)."""
    ordered = sorted(values_ms)

    def at(q: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else None

    return {"count": len(ordered), "p50": at(0.5), "p95": at(0.95), "max": at(1.0)}


def token_times(n_tokens: int, pace: Pace, settings: Settings, *, jitter: bool = True) -> list:
    """Return when each of the `n_tokens` tokens this response sends is generated."""
    return llm.token_times_ms(
        n_tokens,
        prefill_ms=pace.prefill_ms,
        per_token_ms=pace.per_token_ms,
        jitter_ms=settings.jitter_ms if jitter else 0.0,
        seed=settings.seed,
    )
