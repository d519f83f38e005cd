"""The network as data: how bytes are cut, delayed and dropped on the way to the client.

A real network promises one thing about a TCP connection: the bytes arrive in
the order they were written. Where the bytes are cut into pieces, and when each
piece shows up, is up to the network. This module models exactly that, with no
sockets and no clock:

    cut(data, 16)                   pieces of 16 bytes (the lesson's `cut`)
    cut_at(data, [3, 10])           pieces split at chosen byte offsets
    random_cuts(data, seed=1)       seeded random pieces, empty ones included
    every_cut(data)                 every way to split the bytes in two
    drop_after(data, 70)            what got through before the connection died
    deliver(sends, latency_ms=20)   (at_ms, bytes) writes -> Arrival(at_ms, data) list
    buffer_until_end(sends)         a buffering proxy: everything in one late arrival
    stall(writes, after_ms=..)      a server that goes silent mid-stream
    with_heartbeats(writes, ..)     `: ping` comments wherever the line would go quiet

Time is a number (`at_ms`), never a clock; randomness comes from
`random.Random(seed)`, so the same seed always gives the same pieces.
Every function keeps the bytes intact: joining the pieces gives the data back.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

__all__ = [
    "Arrival",
    "buffer_until_end",
    "cut",
    "cut_at",
    "deliver",
    "drop_after",
    "every_cut",
    "random_cuts",
    "stall",
    "stall_point_ms",
    "stalled_times",
    "with_heartbeats",
]

Payload = TypeVar("Payload")


def _check_bytes(data: object) -> None:
    """Raise a TypeError that says what to do when `data` is not bytes."""
    if not isinstance(data, (bytes, bytearray)):
        hint = "; encode text first: text.encode('utf-8')" if isinstance(data, str) else ""
        raise TypeError(f"the network carries bytes, got {type(data).__name__}{hint}")


def cut(data: bytes, size: int) -> list[bytes]:
    """Return `data` in pieces of `size` bytes (the last piece may be shorter).

    Empty data gives an empty list: no bytes, no pieces.
    """
    _check_bytes(data)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ValueError(f"size must be a positive number of bytes, got {size!r}; try size=1")
    return [data[i : i + size] for i in range(0, len(data), size)]


def cut_at(data: bytes, positions: Iterable[int]) -> list[bytes]:
    """Return `data` split at the given byte offsets (len(positions) + 1 pieces).

    Offsets run from 0 to len(data) and must not go down; a repeated offset
    gives an empty piece, like a network read that returned nothing new.
    """
    _check_bytes(data)
    points = list(positions)
    previous = 0
    for position in points:
        if not isinstance(position, int) or isinstance(position, bool):
            raise ValueError(f"positions must be whole byte offsets, got {position!r}")
        if not 0 <= position <= len(data):
            raise ValueError(
                f"position {position} is outside the data (0..{len(data)}); "
                f"pass offsets between 0 and len(data)"
            )
        if position < previous:
            raise ValueError(
                f"positions must not go down ({previous} then {position}); pass sorted(positions)"
            )
        previous = position
    bounds = [0, *points, len(data)]
    return [data[start:end] for start, end in pairwise(bounds)]


def random_cuts(data: bytes, seed: int, max_piece_bytes: int = 64) -> list[bytes]:
    """Return `data` cut into seeded random pieces of 0..max_piece_bytes bytes.

    Small pieces (one byte, or none at all) are drawn often on purpose: they
    are the cuts that break naive stream readers. The same seed gives the same
    pieces every time.
    """
    _check_bytes(data)
    if not isinstance(max_piece_bytes, int) or max_piece_bytes <= 0:
        raise ValueError(
            f"max_piece_bytes must be a positive number of bytes, got {max_piece_bytes!r}"
        )
    rng = random.Random(seed)
    pieces: list[bytes] = []
    start = 0
    while start < len(data):
        roll = rng.random()
        if roll < 0.1:
            size = 0  # an empty read: the client must cope with it
        elif roll < 0.35:
            size = 1
        else:
            size = rng.randint(1, max_piece_bytes)
        pieces.append(data[start : start + size])
        start += size
    return pieces


def every_cut(data: bytes) -> Iterator[list[bytes]]:
    """Yield every split of `data` into two pieces: [data[:i], data[i:]] for i = 0..len(data)."""
    _check_bytes(data)
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]


def drop_after(data: bytes, n_bytes: int) -> bytes:
    """Return the bytes that arrive before the connection drops after `n_bytes` bytes."""
    _check_bytes(data)
    if not isinstance(n_bytes, int) or n_bytes < 0:
        raise ValueError(f"n_bytes must be 0 or more, got {n_bytes!r}")
    return data[:n_bytes]


@dataclass(frozen=True)
class Arrival:
    """Bytes that reach the client at `at_ms` milliseconds after the request."""

    at_ms: float
    data: bytes


def _checked_sends(sends: Iterable[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
    return [(at_ms, bytes(data)) for at_ms, data in _in_order(sends)]


def deliver(
    sends: Iterable[tuple[float, bytes]],
    *,
    latency_ms: float = 0.0,
    jitter_ms: float = 0.0,
    seed: int = 0,
    max_segment_bytes: int | None = None,
) -> list[Arrival]:
    """Return when and in which pieces the server's writes reach the client.

    Each write `(at_ms, data)` travels `latency_ms` plus a seeded random extra
    delay of 0..`jitter_ms`. TCP delivers in order, so a piece never overtakes
    the one before it: arrival times never go down. With `max_segment_bytes`
    a large write is split into segments that may arrive at different times.
    Empty writes put nothing on the wire and produce no arrival.
    """
    if latency_ms < 0:
        raise ValueError(f"latency_ms must be 0 or more, got {latency_ms!r}")
    if jitter_ms < 0:
        raise ValueError(f"jitter_ms must be 0 or more, got {jitter_ms!r}")
    if max_segment_bytes is not None and (
        not isinstance(max_segment_bytes, int) or max_segment_bytes <= 0
    ):
        raise ValueError(
            f"max_segment_bytes must be a positive number of bytes or None, "
            f"got {max_segment_bytes!r}"
        )
    rng = random.Random(seed)
    arrivals: list[Arrival] = []
    last_ms = float("-inf")
    for sent_ms, data in _checked_sends(sends):
        segments = [data] if max_segment_bytes is None else cut(data, max_segment_bytes)
        for segment in segments:
            if not segment:
                continue
            extra_ms = rng.uniform(0.0, jitter_ms) if jitter_ms else 0.0
            # In-order delivery: a segment waits for the one in front of it.
            last_ms = max(last_ms, sent_ms + latency_ms + extra_ms)
            arrivals.append(Arrival(last_ms, segment))
    return arrivals


def buffer_until_end(
    sends: Iterable[tuple[float, bytes]], *, latency_ms: float = 0.0
) -> list[Arrival]:
    """Return what a buffering proxy delivers: all bytes in one arrival after the last write.

    This is the "tokens arrive in one burst at the end" mistake: the stream
    is complete and correct, but time to first token equals the total time.
    """
    if latency_ms < 0:
        raise ValueError(f"latency_ms must be 0 or more, got {latency_ms!r}")
    checked = _checked_sends(sends)
    body = b"".join(data for _, data in checked)
    if not checked or not body:
        return []
    return [Arrival(checked[-1][0] + latency_ms, body)]


def stall_point_ms(token_times_ms: Sequence[float]) -> float:
    """Return when a mid-stream stall starts: right after half the tokens (rounded up) exist."""
    if not token_times_ms:
        return 0.0
    return token_times_ms[(len(token_times_ms) + 1) // 2 - 1]


def _paused(at_ms: float, after_ms: float, stall_ms: float) -> float:
    """Return when a write due at `at_ms` goes out if everything after `after_ms` waits `stall_ms`."""
    return at_ms + stall_ms if stall_ms > 0 and at_ms > after_ms else at_ms


def stall(
    writes: Iterable[tuple[float, Payload]], *, after_ms: float, stall_ms: float
) -> list[tuple[float, Payload]]:
    """Return the writes with every write due after `after_ms` pushed `stall_ms` later.

    Models a server (or a network path) that goes silent mid-stream: a write due
    exactly at `after_ms` still goes out, then nothing for `stall_ms`. The payloads
    may be bytes or anything else (the WebSocket's messages); they are not touched.
    """
    if stall_ms < 0:
        raise ValueError(f"stall_ms must be 0 or more, got {stall_ms!r}")
    return [(_paused(at_ms, after_ms, stall_ms), data) for at_ms, data in _in_order(writes)]


def stalled_times(times_ms: Iterable[float], *, after_ms: float, stall_ms: float) -> list[float]:
    """Return the times `stall` gives writes due at `times_ms` (e.g. when each token is made)."""
    return [_paused(at_ms, after_ms, stall_ms) for at_ms in times_ms]


def with_heartbeats(
    writes: Iterable[tuple[float, Payload]],
    *,
    heartbeat_ms: float,
    ping: Payload = b": ping\n\n",
    start_ms: float = 0.0,
) -> Iterator[tuple[float, Payload]]:
    """Yield the writes with a `ping` wherever `heartbeat_ms` passes without a write.

    The silence is counted from `start_ms` (when the response headers went out),
    so a long prefill gets heartbeats too. SSE's ping is a comment line, which
    every client skips; an idle-timeout proxy sees bytes flowing.
    """
    if heartbeat_ms <= 0:
        raise ValueError(f"heartbeat_ms must be a positive number of ms, got {heartbeat_ms!r}")
    last_ms = float(start_ms)
    for at_ms, data in _in_order(writes):
        while last_ms + heartbeat_ms < at_ms:
            last_ms += heartbeat_ms
            yield last_ms, ping
        yield at_ms, data
        last_ms = max(last_ms, at_ms)


def _in_order(writes: Iterable[tuple[float, Payload]]) -> Iterator[tuple[float, Payload]]:
    """Yield the writes, raising ValueError if their times go down."""
    previous = float("-inf")
    for at_ms, data in writes:
        if at_ms < previous:
            raise ValueError(
                f"writes must be in time order ({previous} ms then {at_ms} ms); "
                f"sort them by at_ms: a server writes one thing after another"
            )
        previous = at_ms
        yield at_ms, data
