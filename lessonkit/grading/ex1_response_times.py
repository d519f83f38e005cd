"""Exercise 1: the timing model, ``response_times(prefill_ms, per_token_ms, n_tokens) -> dict``.

The learner returns ``streaming_first_ms``, ``blocking_first_ms`` and
``total_ms`` of one answer, the model of the lesson's simulation: the first
token is visible at prefill + per_token, the last at prefill + n_tokens *
per_token; blocking shows everything at the end. Each rule checks one key on a
spread of inputs, so an off-by-one names the key it is in.
"""

from __future__ import annotations

import math
from typing import Any

from lessonkit.core import timeline
from lessonkit.grading.engine import Case, Exercise, Rule
from lessonkit.grading.feedback import show_plain

__all__ = ["KEYS", "exercise", "reference"]

KEYS = ("streaming_first_ms", "blocking_first_ms", "total_ms")


def reference(prefill_ms: float, per_token_ms: float, n_tokens: int) -> dict[str, float]:
    """Return streaming_first_ms, blocking_first_ms and total_ms of one answer."""
    return timeline.response_times(prefill_ms, per_token_ms, n_tokens).as_dict()


def _case(rule: str, *args: float, keys: tuple[str, ...] = KEYS) -> Case:
    return Case(rule, tuple(args), (args[2], args[0], args[1], keys))


def _shape(got: Any) -> str | None:
    if not isinstance(got, dict) or "__repr__" in got:
        return f"{show_plain(got)} -- response_times must return a dict with keys {KEYS}"
    missing = [k for k in KEYS if k not in got]
    if missing:
        return f"{show_plain(got)} -- the dict has no key {missing[0]!r}"
    for key in KEYS:
        if isinstance(got[key], bool) or not isinstance(got[key], (int, float)):
            return f"{show_plain(got)} -- {key} should be a number of milliseconds"
    return None


def _same(case: Case, expected: Any, got: Any) -> bool:
    keys = case.size[3]
    return all(math.isclose(expected[k], got[k], rel_tol=1e-9, abs_tol=1e-6) for k in keys)


def _show_input(case: Case) -> str:
    prefill, per_token, n = case.args
    keys = case.size[3]
    checked = "" if keys == KEYS else f"  (checks {', '.join(keys)})"
    return (
        f"response_times(prefill_ms={prefill!r}, per_token_ms={per_token!r}, n_tokens={n!r})"
        f"{checked}"
    )


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 1, public first, then hidden."""
    first = ("streaming_first_ms",)
    total = ("total_ms",)
    blocking = ("blocking_first_ms",)
    spread = [(0, 40, 3), (100, 10, 5), (250, 25, 1), (1000, 5, 200)]

    def r(name, hint, cases, hidden=False):
        return Rule(name, hint, lambda: cases, hidden)

    return (
        r(
            "the lesson's example: 300 ms prefill, 40 ms per token, 500 tokens -> 20,300 ms",
            "Total time = prefill + n_tokens * per_token: 300 + 500 * 40.",
            [_case("lesson", 300, 40, 500)],
        ),
        r(
            "the running example: first token at 340 ms, all six tokens by 540 ms",
            "The first token needs the prefill and one decode step; blocking waits for all six.",
            [_case("running", 300, 40, 6)],
        ),
        r(
            "streaming shows the first token after prefill plus one token time",
            "Prefill produces nothing visible by itself: add one per_token_ms for token 0.",
            [_case("first", *args, keys=first) for args in spread],
        ),
        r(
            "total time is prefill plus one step per token",
            "Count every token, the first one included: prefill_ms + n_tokens * per_token_ms.",
            [_case("total", *args, keys=total) for args in spread],
        ),
        r(
            "blocking shows nothing until the last token exists",
            "Without streaming the whole answer appears at once, at the total time.",
            [_case("blocking", *args, keys=blocking) for args in spread],
        ),
        r(
            "fractional milliseconds and long answers",
            "Use plain arithmetic on the arguments; do not round.",
            [
                _case("hidden", 12.5, 7.25, 33),
                _case("hidden", 300, 40, 4000),
                _case("hidden", 20, 3, 10_000),
            ],
            hidden=True,
        ),
        r(
            "no prefill, and a one-token answer",
            "With one token, the first token is also the last one.",
            [_case("hidden", 0, 40, 10), _case("hidden", 450, 60, 1)],
            hidden=True,
        ),
    )


def exercise() -> Exercise:
    """Return exercise 1, graded against ``reference``."""
    return Exercise(
        "response_times",
        "Exercise 1: the timing model",
        10,
        rules(),
        reference=lambda case: reference(*case.args),
        shape=_shape,
        same=_same,
        show_input=_show_input,
        show_value=show_plain,
    )
