"""Is a stream paced? A shape check that no busy machine can fail by being slow.

A busy machine can make any read late, never early; one late read then takes every token
that piled up meanwhile. So a test never bounds a time from above. A paced stream is
told from a held-back one by its shape: its tokens come in several separate reads, and
some of the gaps between them are near a token's time. A held-back stream arrives in one
read (or a few), every gap near zero.
"""

from __future__ import annotations

from collections.abc import Sequence


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
