"""lessonkit.serve.pacing on an event loop like the browser kernel's (Pyodide's WebLoop).

WebLoop refuses a timer in the past (`call_later` with a negative delay raises), and its
clock moves between two readings: the pacer must never ask for a timer from a stale one.
"""

from __future__ import annotations

import pytest

from lessonkit.serve.inprocess import VirtualClockLoop
from lessonkit.serve.pacing import Pacer


class StrictLoop(VirtualClockLoop):
    """A virtual clock that moves 1 ms at every reading and refuses timers in the past."""

    def time(self) -> float:
        self._now_s += 0.001
        return self._now_s

    def call_later(self, delay, callback, *args, context=None):  # type: ignore[no-untyped-def]
        if delay < 0:
            raise ValueError("Can't schedule in the past")  # as Pyodide's WebLoop does
        return super().call_at(self._now_s + delay, callback, *args, context=context)

    def call_at(self, when, callback, *args, context=None):  # type: ignore[no-untyped-def]
        return self.call_later(when - self.time(), callback, *args, context=context)  # as WebLoop


# The clock moves 1 ms per reading: 1.5 ms ahead is due after the next reading.
@pytest.mark.parametrize("ahead_ms", [0.5, 1.0, 1.5, 2.5, 5.0])
def test_a_deadline_just_ahead_of_the_clock_never_asks_for_a_timer_in_the_past(ahead_ms):
    loop = StrictLoop()
    try:

        async def wait() -> bool:
            pacer = Pacer(loop, start=0.0)
            return await pacer.sleep_until(loop.time() * 1000.0 + ahead_ms)

        assert loop.run_until_complete(wait()) is True
    finally:
        loop.close()


def test_the_pacer_still_wakes_at_its_deadline_not_before():
    loop = VirtualClockLoop()
    try:

        async def wait() -> float:
            pacer = Pacer(loop, start=loop.time())
            await pacer.sleep_until(250.0)
            return loop.time()

        assert loop.run_until_complete(wait()) >= 0.25
    finally:
        loop.close()


def test_hang_up_wakes_a_sleeping_pacer_at_once():
    loop = VirtualClockLoop()
    try:

        async def wait() -> tuple[bool, float]:
            pacer = Pacer(loop, start=loop.time())
            loop.call_later(0.01, pacer.hang_up)
            still_there = await pacer.sleep_until(60_000.0)
            return still_there, loop.time()

        still_there, woke_s = loop.run_until_complete(wait())
        assert still_there is False
        assert woke_s == pytest.approx(0.01)
    finally:
        loop.close()
