"""The tests' own pacing check (tests/support/pacing.py) tells a stream from a burst."""

from __future__ import annotations

import pytest
from pacing import assert_paced, paced_in_one_of

PACED = [0.25, 0.30, 0.35, 0.40, 0.45, 0.50]
BURST = [0.50] * 6


def test_a_paced_stream_passes_and_a_burst_fails():
    assert_paced(PACED, 0.05)
    with pytest.raises(AssertionError, match="a burst, not a stream"):
        assert_paced(BURST, 0.05)


def test_a_stream_squeezed_once_by_a_stall_passes_on_its_next_try():
    tries = iter([BURST, PACED])
    assert paced_in_one_of(lambda: next(tries), lambda times: assert_paced(times, 0.05)) == PACED


def test_a_stream_held_back_every_time_fails_after_every_try():
    calls = []

    def measure() -> list[float]:
        calls.append(1)
        return BURST

    with pytest.raises(AssertionError, match="not paced in any of 3 tries"):
        paced_in_one_of(measure, lambda times: assert_paced(times, 0.05))
    assert len(calls) == 3
