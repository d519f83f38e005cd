"""Is a stream paced? A shape check that a busy machine does not fail by being slow.

A busy machine can make any read late, never early; one late read then takes every token
that piled up meanwhile. So a test never bounds a time from above. A paced stream is
told from a held-back one by its shape: its tokens come in several separate reads, and
some of the gaps between them are near a token's time. A held-back stream arrives in one
read (or a few), every gap near zero. Only a stall longer than the whole answer
can squeeze a paced stream into a burst; `paced_in_one_of` gives such a short
answer a few tries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def assert_paced(arrivals: Sequence[float], per_token: float, what: str = "the stream") -> None:
    """Fail unless arrivals (times, in per_token's unit) come in >= 3 reads with >= 2 real gaps."""
    reads = len(set(arrivals))
    assert reads >= 3, f"{what}: {len(arrivals)} tokens in {reads} read(s): a burst, not a stream"
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]
    paced = [gap for gap in gaps if gap >= 0.5 * per_token]
    assert len(paced) >= 2, (
        f"{what}: gaps {[round(g, 3) for g in gaps]} are nearly all zero; "
        f"paced tokens come about {per_token} apart"
    )


def paced_in_one_of(measure: Callable[[], T], check: Callable[[T], None], tries: int = 3) -> T:
    """Return the first of up to `tries` measurements that `check` (an assert_paced) passes.

    A stall of the whole machine longer than a short answer (1.4 s was seen with six test
    stages side by side) squeezes that one answer into a burst. Something that holds a
    stream back does it every time, so a burst in every try still fails the test, and a
    paced try proves the stream can arrive paced, which a buffer never allows.
    """
    failures = []
    for _ in range(tries):
        result = measure()
        try:
            check(result)
        except AssertionError as failure:
            failures.append(str(failure))
        else:
            return result
    raise AssertionError(f"not paced in any of {tries} tries:\n" + "\n".join(failures))
