"""Time on the user's side: when text becomes visible, and what the screen shows at t.

The lesson's model of one answer (all times in virtual milliseconds):

    latency_ms                      the network round trip: the request's trip there
                                    (and any queue) + the response's trip back; every
                                    token makes the trip back once, so the round trip is
                                    added once to every visible time
    + prefill_ms                    the model reads the prompt
    + (i + 1) * per_token_ms        token i is ready (and, streamed, visible)

    response_times(300, 40, 500)    -> total 20,300 ms, streamed first token at 340 ms
    frame(t, tokens, ...)           what a streaming and a blocking screen show at t
    render_log(tokens, ...)         the lesson's "[ 340 ms] render 'Your'" lines
    measure(arrival_ms)             TTFT, total and the gaps between arrivals
    cancel_savings(...)             tokens not generated when the user presses Stop

Phases of `frame(t)`: "waiting" on the network (t < latency_ms; the model counts the whole
round trip before the prefill, which shifts every visible time by the same amount),
"prefill" while it reads the prompt, "decoding" while tokens come out,
"done" once the last token is visible.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from lessonkit.core import llm

__all__ = [
    "Frame",
    "Measured",
    "Timings",
    "cancel_savings",
    "frame",
    "frames",
    "gaps_ms",
    "measure",
    "render_log",
    "response_times",
    "visible_times_ms",
]


def _check_times(prefill_ms: float, per_token_ms: float, latency_ms: float = 0) -> None:
    for name, value in (
        ("prefill_ms", prefill_ms),
        ("per_token_ms", per_token_ms),
        ("latency_ms", latency_ms),
    ):
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not is_number or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a number of milliseconds, 0 or more, got {value!r}")


def _check_count(n_tokens: int) -> None:
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number, 0 or more, got {n_tokens!r}")


def _as_tokens(tokens: Sequence[str] | object) -> tuple[str, ...]:
    """Accept a list of token strings or anything with `.tokens` (an llm.Answer)."""
    inner = getattr(tokens, "tokens", tokens)
    if isinstance(inner, str):
        raise ValueError("tokens must be a list of strings, not one string; try llm.tokenize(text)")
    return tuple(inner)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Timings:
    """When text first appears with and without streaming, and when the answer is complete."""

    streaming_first_ms: float
    blocking_first_ms: float
    total_ms: float

    def as_dict(self) -> dict[str, float]:
        """Return the three times as a dict (the graded exercise's return shape)."""
        return {
            "streaming_first_ms": self.streaming_first_ms,
            "blocking_first_ms": self.blocking_first_ms,
            "total_ms": self.total_ms,
        }


def response_times(
    prefill_ms: float, per_token_ms: float, n_tokens: int, latency_ms: float = 0
) -> Timings:
    """Return the Timings of one answer: streamed first token, blocking first text, total.

    latency_ms is the network round trip (request there + first bytes back), added once.
    Streaming shows token 0 at latency + prefill + per_token; blocking shows
    nothing until the last token exists, at latency + prefill + n * per_token.
    300, 40, 500 -> total 20,300 ms; 300, 40, 6 -> first 340 ms, total 540 ms.
    With no tokens there is nothing to show early: first = total.
    """
    times = visible_times_ms(
        n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms, latency_ms=latency_ms
    )
    total_ms = times[-1] if times else latency_ms + prefill_ms
    first_ms = times[0] if times else total_ms
    return Timings(streaming_first_ms=first_ms, blocking_first_ms=total_ms, total_ms=total_ms)


def visible_times_ms(
    n_tokens: int, *, prefill_ms: float, per_token_ms: float, latency_ms: float = 0
) -> list[float]:
    """Return when each streamed token becomes visible: its generation time plus the round trip.

    The model's formula (token i at prefill + (i + 1) * per_token) is llm.token_times_ms's.
    """
    _check_times(prefill_ms, per_token_ms, latency_ms)
    _check_count(n_tokens)
    made_ms = llm.token_times_ms(n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    return [latency_ms + at_ms for at_ms in made_ms]


def gaps_ms(times_ms: Iterable[float]) -> tuple[float, ...]:
    """Return the time between each pair of consecutive arrivals."""
    times = list(times_ms)
    return tuple(later - earlier for earlier, later in pairwise(times))


@dataclass(frozen=True)
class Measured:
    """What a stopwatch on the client saw: time to first token, total time, gaps between."""

    ttft_ms: float
    total_ms: float
    gaps_ms: tuple[float, ...]

    @property
    def max_gap_ms(self) -> float:
        """The longest silence between two arrivals (0 with fewer than two)."""
        return max(self.gaps_ms, default=0.0)


def measure(arrival_ms: Iterable[float | object], start_ms: float = 0) -> Measured:
    """Return TTFT, total time and gaps from the times text arrived (ms, in order).

    Accepts plain numbers or objects with an `at_ms` field (network.Arrival).
    """
    times = [float(getattr(item, "at_ms", item)) for item in arrival_ms]  # type: ignore[arg-type]
    if not times:
        raise ValueError("no arrivals to measure; pass at least one arrival time")
    for earlier, later in pairwise(times):
        if later < earlier:
            raise ValueError(
                f"arrival times must not go down ({earlier} then {later}); pass them in order"
            )
    if times[0] < start_ms:
        raise ValueError(f"the first arrival ({times[0]} ms) is before start_ms={start_ms}")
    return Measured(
        ttft_ms=times[0] - start_ms, total_ms=times[-1] - start_ms, gaps_ms=gaps_ms(times)
    )


@dataclass(frozen=True)
class Frame:
    """What the user sees at t_ms, side by side: a streaming chat and a blocking one."""

    t_ms: float
    streaming_text: str
    blocking_text: str
    tokens_visible: int
    streaming_done: bool
    blocking_done: bool
    phase: str


def frame(
    t_ms: float,
    tokens: Sequence[str],
    *,
    prefill_ms: float,
    per_token_ms: float,
    latency_ms: float = 0,
) -> Frame:
    """Return the Frame at t_ms: streamed tokens visible so far, and the blocking screen.

    Streaming shows every token whose visible time is <= t_ms. Blocking shows
    "" (a spinner) until the total time, then the whole text at once.
    """
    _check_times(prefill_ms, per_token_ms, latency_ms)
    words = _as_tokens(tokens)
    timings = response_times(prefill_ms, per_token_ms, len(words), latency_ms)
    decode_from_ms = latency_ms + prefill_ms
    times = visible_times_ms(
        len(words), prefill_ms=prefill_ms, per_token_ms=per_token_ms, latency_ms=latency_ms
    )
    visible = bisect.bisect_right(times, t_ms)  # tokens whose visible time is <= t_ms
    done = t_ms >= timings.total_ms
    if done:
        phase = "done"
    elif t_ms < latency_ms:
        phase = "waiting"
    elif t_ms < decode_from_ms:
        phase = "prefill"
    else:
        phase = "decoding"
    return Frame(
        t_ms=t_ms,
        streaming_text="".join(words[:visible]),
        blocking_text="".join(words) if done else "",
        tokens_visible=visible,
        streaming_done=done,
        blocking_done=done,
        phase=phase,
    )


def frames(
    tokens: Sequence[str],
    *,
    prefill_ms: float,
    per_token_ms: float,
    step_ms: float,
    latency_ms: float = 0,
) -> list[Frame]:
    """Return frames every step_ms from 0 until the answer is complete (the last one done)."""
    if step_ms <= 0:
        raise ValueError(f"step_ms must be positive, got {step_ms!r}")
    words = _as_tokens(tokens)
    total_ms = response_times(prefill_ms, per_token_ms, len(words), latency_ms).total_ms
    result = []
    k = 0
    while True:
        t_ms = min(k * step_ms, total_ms)
        result.append(
            frame(
                t_ms, words, prefill_ms=prefill_ms, per_token_ms=per_token_ms, latency_ms=latency_ms
            )
        )
        if t_ms >= total_ms:
            return result
        k += 1


def _ms_label(at_ms: float) -> str:
    if float(at_ms).is_integer():
        return f"{int(at_ms):>4}"
    return f"{at_ms:>6.1f}"


def render_log(tokens: Sequence[str], *, prefill_ms: float, per_token_ms: float) -> list[str]:
    """Return the lesson's simulation lines: "[ 340 ms] render 'Your'" ... "stream closed"."""
    words = _as_tokens(tokens)
    times = visible_times_ms(len(words), prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    lines = [
        f"[{_ms_label(at_ms)} ms] render {word!r}" for at_ms, word in zip(times, words, strict=True)
    ]
    closed_ms = times[-1] if times else prefill_ms
    lines.append(f"[{_ms_label(closed_ms)} ms] stream closed")
    return lines


def cancel_savings(
    n_tokens: int, cancel_at_ms: float, prefill_ms: float, per_token_ms: float
) -> tuple[int, int]:
    """Return (tokens generated, tokens saved) when the user stops the answer at cancel_at_ms.

    A token generated at exactly cancel_at_ms counts as generated; the server
    stops right away, so nothing after that is produced (or billed).
    """
    times = visible_times_ms(n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    generated = sum(1 for at_ms in times if at_ms <= cancel_at_ms)
    return generated, n_tokens - generated
