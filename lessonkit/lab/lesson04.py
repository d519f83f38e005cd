"""Lesson 04, practice with cuts and drops: the drop explorer and predict-then-run.

    drop_frame, drop_staircase, drop_readouts   what survives a dropped connection
    Experiment, DECODE_EACH_CHUNK,              the three "now change it" experiments: their
      ONE_EVENT_PER_CHUNK, DROP_AT_40             choices, and the answer a run gives
    outcome                                     how one run ended, in the choices' words
    compare_prediction, reveal_readouts         a recorded prediction against the run

No answer is written down here or in the notebook: each experiment's answer is read off
the run itself (Experiment.answer), so it shows only once the learner has predicted.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lessonkit.core import network
from lessonkit.core.practice import PRACTICE_TOKENS, ReaderState, feed_reader
from lessonkit.lab import svg, views
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


def drop_readouts(
    wire: bytes, n_bytes: int, *, lengths: Sequence[int] | None = None
) -> dict[str, Any]:
    """Return what the drop explorer shows for a drop after `n_bytes`, by name.

    The four lines (position, screen, complete, held), the staircase with the drop
    marked (plot) and the frame as text (text). `lengths` is drop_staircase(wire),
    computed once by the explorer (and here when it is None).
    """
    frame = drop_frame(wire, n_bytes)
    lengths = drop_staircase(wire) if lengths is None else lengths
    return {
        "position": f"dropped after {frame.n_bytes} of {frame.total_bytes} bytes",
        "screen": f"on screen: {frame.text!r}",
        "complete": f"complete={frame.complete}",
        "held": f"held back (never shown): {show_newlines(frame.held)!r}",
        "plot": svg.drop_svg(lengths, n_bytes),
        "text": format_drop_frame(frame),
    }


WHOLE_TEXT = "".join(PRACTICE_TOKENS)


def outcome(text: str, complete: bool, *, whole: str = WHOLE_TEXT) -> str:
    """Return how a run of the practice ended, in the words the prediction choices use.

    "whole text" for the complete answer, "text with a �" when a replacement character
    shows, else the text and the flag as the practice prints them: "'Your' complete=False".
    (A run that raised is named by its exception: the caller writes type(error).__name__.)
    """
    if text == whole and complete:
        return "whole text"
    if "\ufffd" in text:
        return "text with a �"
    return f"{text!r} complete={complete}"


@dataclass(frozen=True)
class Experiment:
    """A "now change it" experiment: the runs its question is about, and the choices offered.

    A choice reads like the runs' outcomes joined: "1000 bytes: whole text; 5 bytes:
    UnicodeDecodeError". The answer is not stored: `answer(results)` reads it off what the
    changed reader did (results: run name -> outcome, as the notebook's print_runs returns).
    """

    runs: tuple[str, ...]
    choices: tuple[str, ...]

    def answer(self, results: Mapping[str, str]) -> str:
        """Return the choice the results make true: each asked run with its outcome."""
        return "; ".join(f"{run}: {results[run]}" for run in self.runs)


def _choices(runs: tuple[str, ...], *outcomes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(
        "; ".join(f"{r}: {o}" for r, o in zip(runs, each, strict=True)) for each in outcomes
    )


_BIG_AND_SMALL = ("1000 bytes", "5 bytes")
DECODE_EACH_CHUNK = Experiment(
    _BIG_AND_SMALL,
    _choices(
        _BIG_AND_SMALL,
        ("whole text", "whole text"),
        ("whole text", "UnicodeDecodeError"),
        ("UnicodeDecodeError", "UnicodeDecodeError"),
        ("whole text", "text with a �"),
    ),
)
ONE_EVENT_PER_CHUNK = Experiment(
    ("1000 bytes",),
    _choices(
        ("1000 bytes",),
        ("whole text",),
        ("'Your' complete=False",),
        ("'' complete=False",),
        ("JSONDecodeError",),
    ),
)
DROP_AT_40 = Experiment(
    ("dropped after 40 bytes",),
    _choices(
        ("dropped after 40 bytes",),
        ("'' complete=False",),
        ("'Your' complete=False",),
        ("'Your caf' complete=False",),
        ("'Your café' complete=False",),
    ),
)

PREDICTION_PLACEHOLDER = "(write your prediction here)"
SKIP_PREDICTION = "(no prediction: just show me the run)"


def compare_prediction(prediction: str, actual: str) -> str:
    """Return a short verdict comparing a recorded prediction with what the run printed."""
    guess = prediction.strip()
    if not guess or guess == PREDICTION_PLACEHOLDER:
        return f"no prediction recorded; the run gave: {actual}"
    if guess == actual.strip():
        return f"your prediction matches: {actual}"
    return f"you predicted {guess!r}; the run gave {actual!r}. Which step of the loop explains it?"


def reveal_readouts(choice: str, *, printed: str, answer: str) -> dict[str, Any]:
    """Return what a reveal box shows for the picked choice: nothing until one is picked.

    Once a prediction (or "no prediction") is picked: what the run printed and the
    verdict (compare_prediction). Until then, a line asking for a pick.
    """
    if choice == PREDICTION_PLACEHOLDER:
        waiting = "Pick a prediction above (or choose to skip it): the run shows here then."
        return {"shown": views.Html(f"<i>{html.escape(waiting)}</i>"), "text": waiting}
    guess = "" if choice == SKIP_PREDICTION else choice
    verdict = compare_prediction(guess, answer)
    return {
        "shown": views.Html(
            '<pre style="margin:0;white-space:pre-wrap">'
            f"{html.escape(printed)}</pre><div><b>{html.escape(verdict)}</b></div>"
        ),
        "text": f"{printed}\n{verdict}",
    }
