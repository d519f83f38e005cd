"""The simulated model's word bank: short sentences about orders, shipping and streaming.

``sentence(rng)`` draws one readable sentence; ``lessonkit.core.llm`` tokenizes them into
answers of 40-80 tokens (``answer_for``) or of any length (``long_answer``). The same
``random.Random`` state gives the same sentence. Pure: no imports beyond ``random``.
"""

from __future__ import annotations

import random

__all__ = ["sentence"]


_PARCELS = ["Your order", "The parcel", "Your package", "The replacement", "The second box"]
_SHIP_VERBS = [
    "ships",
    "leaves the warehouse",
    "reaches the depot",
    "arrives",
    "is packed",
    "goes to the courier",
]
_WHEN = [
    "on Monday",
    "on Tuesday",
    "on Friday",
    "within two days",
    "before noon",
    "early next week",
    "once the label is printed",
    "by the weekend",
]
_PLACES = [
    "in Zürich",
    "in Malmö",
    "in São Paulo",
    "in Kraków",
    "at the café on the corner",
    "at the local depot",
    "at the post office",
]
_STREAM_SUBJECTS = ["Each token", "The next word", "Every event", "The answer", "The first piece"]
_STREAM_VERBS = [
    "reaches your screen",
    "travels over one open connection",
    "is flushed to the network",
    "arrives as a small data event",
    "shows up in the chat window",
]
_HOW = [
    "as soon as it exists",
    "a few milliseconds later",
    "without waiting for the rest",
    "while the model keeps writing",
    "one piece at a time",
]


def sentence(rng: random.Random) -> str:
    """Return one readable sentence drawn from the word bank."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"{rng.choice(_PARCELS)} {rng.choice(_SHIP_VERBS)} {rng.choice(_WHEN)}."
    if kind == 1:
        return f"You can follow the parcel {rng.choice(_PLACES)} with the tracking link."
    if kind == 2:
        return f"{rng.choice(_STREAM_SUBJECTS)} {rng.choice(_STREAM_VERBS)} {rng.choice(_HOW)}."
    if kind == 3:
        days = rng.randint(2, 14)
        return f"If nobody is home, the courier keeps your parcel {rng.choice(_PLACES)} for {days} days."
    return f"We will write to you when your order {rng.choice(_SHIP_VERBS)}, {rng.choice(_WHEN)} at the latest."
