"""Lesson 04, practice with cuts and drops: the drop explorer and predict-then-run.

drop_frame, drop_readouts, drop_staircase   what survives a dropped connection
practice_lines                              the practice script's printed lines
compare_prediction                          a recorded prediction against the run
"""

from __future__ import annotations

from dataclasses import dataclass

from lessonkit.core import network
from lessonkit.core.practice import ReaderState, feed_reader
from lessonkit.lab.views import show_newlines


@dataclass(frozen=True)
class DropFrame:
    """What the client has when the connection dies after `n_bytes` bytes of `total_bytes`."""

    n_bytes: int
    total_bytes: int
    text: str
    complete: bool
    events: int
    held: str


def drop_frame(wire: bytes, n_bytes: int) -> DropFrame:
    """Return the screen text, complete flag and unfinished buffer after a drop at `n_bytes`."""
    received = network.drop_after(wire, n_bytes)
    state = feed_reader(ReaderState(), received).state
    held = state.buffer + state.held_bytes.decode("utf-8", "backslashreplace")
    return DropFrame(min(n_bytes, len(wire)), len(wire), state.text, state.done, state.events, held)


def format_drop_frame(frame: DropFrame) -> str:
    """Return a one-screen text view of a DropFrame."""
    return "\n".join(
        [
            f"dropped after {frame.n_bytes} of {frame.total_bytes} bytes",
            f"  on screen : {frame.text!r}",
            f"  complete  : {frame.complete}",
            f"  held back : {show_newlines(frame.held)!r} (an unfinished event, never shown)",
        ]
    )


def drop_staircase(wire: bytes) -> list[int]:
    """Return the number of characters on screen for a drop after 0, 1, ..., len(wire) bytes."""
    state = ReaderState()
    lengths = [0]
    for i in range(len(wire)):
        state = feed_reader(state, wire[i : i + 1]).state
        lengths.append(len(state.text))
    return lengths


def drop_readouts(wire: bytes, n_bytes: int) -> dict[str, str]:
    """Return the drop explorer's readouts (screen, complete flag, held bytes) for one drop point."""
    frame = drop_frame(wire, n_bytes)
    return {
        "position": f"dropped after {frame.n_bytes} of {frame.total_bytes} bytes",
        "screen": f"on screen: {frame.text!r}",
        "complete": f"complete={frame.complete}",
        "held": f"held back (never shown): {show_newlines(frame.held)!r}",
    }


PREDICTION_PLACEHOLDER = "(write your prediction here)"


def compare_prediction(prediction: str, actual: str) -> str:
    """Return a short verdict comparing a recorded prediction with what the run printed."""
    guess = prediction.strip()
    if not guess or guess == PREDICTION_PLACEHOLDER:
        return f"no prediction recorded; the run gave: {actual}"
    if guess == actual.strip():
        return f"your prediction matches: {actual}"
    return f"you predicted {guess!r}; the run gave {actual!r}. Which step of the loop explains it?"
