"""Exercise 1: the timing model, ``response_times(prefill_ms, per_token_ms, n_tokens) -> dict``.

The learner returns ``streaming_first_ms``, ``blocking_first_ms`` and
``total_ms`` of one answer, the model of the lesson's simulation: the first
token is visible at prefill + per_token, the last at prefill + n_tokens *
per_token; blocking shows everything at the end. Each rule checks one key, so
one wrong key costs only that key's points, and the hint names the mistake
read from the value that came back (the prefill alone, one token too few, a
rounded time...). The public checks include fractional milliseconds and a
long answer, the kinds the hidden checks draw more of from the grading seed.

May use from lessonkit: nothing of the timing model (``lessonkit.core.timeline``
is the course's answer).
"""

from __future__ import annotations

import math
import random
from typing import Any

from lessonkit.core import timeline
from lessonkit.grading.codec import show_plain
from lessonkit.grading.engine import Case, Exercise, Outcome, Returned, Rule

KEYS = ("streaming_first_ms", "blocking_first_ms", "total_ms")
# key -> (public points, hidden points): the first token is the lesson's point
POINTS = {"streaming_first_ms": (3, 1), "total_ms": (2, 1), "blocking_first_ms": (2, 1)}


def reference(prefill_ms: float, per_token_ms: float, n_tokens: int) -> dict[str, float]:
    """Return streaming_first_ms, blocking_first_ms and total_ms of one answer."""
    return timeline.response_times(prefill_ms, per_token_ms, n_tokens).as_dict()


def _case(key: str, prefill_ms: float, per_token_ms: float, n_tokens: int) -> Case:
    return Case(key, (prefill_ms, per_token_ms, n_tokens), (n_tokens, prefill_ms, per_token_ms))


# What a wrong value tells: the formula the learner most likely wrote (cause -> value).
def _guesses(prefill: float, per_token: float, n: int) -> dict[str, float]:
    return {
        "prefill-only": prefill,
        "first-twice": prefill + per_token + n * per_token,
        "one-token-short": prefill + (n - 1) * per_token,
        "first-at-total": prefill + n * per_token,
        "blocking-at-first": prefill + per_token,
    }


HINTS = {
    "first": "The prefill pass produces the first token, but the lesson's timing model charges "
    "every token one per_token_ms, the first one included: 300 + 40 = 340 ms.",
    "total": "Count every token, the first one included: prefill_ms + n_tokens * per_token_ms "
    "(300 + 500 * 40 = 20,300 ms).",
    "blocking": "Without streaming the whole answer appears at once, when the last token "
    "exists: at the total time.",
    "prefill-only": "The prefill pass produces the first token, but the lesson's timing model "
    "charges every token one per_token_ms, the first one included: prefill_ms + per_token_ms.",
    "first-twice": "The first token's per_token_ms is already one of the n_tokens steps: "
    "prefill_ms + n_tokens * per_token_ms, not one step more.",
    "one-token-short": "Count every token, the first one included: n_tokens steps, "
    "not n_tokens - 1.",
    "first-at-total": "With streaming the first token shows as soon as it exists, long "
    "before the last: prefill_ms + per_token_ms.",
    "blocking-at-first": "Without streaming nothing shows until the whole answer exists: "
    "blocking_first_ms is the total time, not the first token's.",
    "rounded": "Keep the fractional milliseconds: do not round or use int() "
    "(12.5 + 7.25 = 19.75 ms).",
}


LESSON = [(300, 40, 500), (300, 40, 6)]  # the lesson's example and the running example
SPREAD = [(0, 40, 3), (100, 10, 5), (250, 25, 1), (1000, 5, 200)]
FRACTIONAL_AND_LONG = [(12.5, 7.25, 33), (300, 40, 4000)]


def _hidden_inputs(seed: int) -> list[tuple[float, float, int]]:
    """Return fractional, long and edge inputs drawn from the grading seed."""
    rng = random.Random(f"response_times/{seed}")
    inputs: list[tuple[float, float, int]] = []
    for _ in range(4):
        prefill = round(rng.uniform(0, 900), rng.choice((0, 1, 2)))
        per_token = round(rng.uniform(0.5, 80), rng.choice((1, 2, 3)))
        inputs.append((prefill, per_token, rng.choice((1, rng.randint(2, 60)))))
    inputs.append((0, round(rng.uniform(1, 60), 2), rng.randint(5_000, 20_000)))
    inputs.append((round(rng.uniform(100, 500), 1), round(rng.uniform(1, 9), 3), 1))
    return inputs


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


class ResponseTimes(Exercise):
    """Exercise 1, graded against ``reference``: one rule per key, the hint from the value."""

    id = "response_times"
    title = "Exercise 1: the timing model"
    own_work = "timing formula"
    shape_hint = (
        "Return a dict with the three keys streaming_first_ms, blocking_first_ms and "
        "total_ms, each a number of milliseconds (int or float)."
    )
    extra_hints = {k: v for k, v in HINTS.items() if k not in ("first", "total", "blocking")}

    def make_rules(self) -> tuple[Rule, ...]:
        """Return one rule per key (public), then one per key on hidden inputs."""
        public = LESSON + SPREAD + FRACTIONAL_AND_LONG
        said = {
            "streaming_first_ms": (
                "streaming shows the first token after prefill plus one token time",
                "first",
            ),
            "total_ms": ("total time is prefill plus one step per token", "total"),
            "blocking_first_ms": ("blocking shows nothing until the last token exists", "blocking"),
        }
        out = []
        for key, (name, cause) in said.items():
            out.append(
                Rule(
                    name,
                    HINTS[cause],
                    lambda key=key: [_case(key, *args) for args in public],
                    points=POINTS[key][0],
                    cause=cause,
                )
            )
        for key, (name, cause) in said.items():
            out.append(
                Rule(
                    f"{key} on fractional, long and one-token answers",
                    HINTS[cause],
                    lambda seed, key=key: [_case(key, *args) for args in _hidden_inputs(seed)],
                    hidden=True,
                    points=POINTS[key][1],
                    extends=name,
                )
            )
        return tuple(out)

    def reference(self, case: Case) -> dict[str, float]:
        """Return the three times of the case's answer."""
        return reference(*case.args)

    def shape(self, got: Any) -> str | None:
        """Return what is wrong with the dict that came back, or None."""
        if not isinstance(got, dict) or "__repr__" in got:
            return f"{show_plain(got)} -- response_times must return a dict with keys {KEYS}"
        missing = [k for k in KEYS if k not in got]
        if missing:
            return f"{show_plain(got)} -- the dict has no key {missing[0]!r}"
        for key in KEYS:
            if isinstance(got[key], bool) or not isinstance(got[key], (int, float)):
                return f"{show_plain(got)} -- {key} should be a number of milliseconds"
        return None

    def same(self, case: Case, expected: Any, got: Any) -> bool:
        """Return True when the rule's key is right (to a millionth of a millisecond)."""
        return _close(expected[case.rule], got[case.rule])

    def show_input(self, case: Case) -> str:
        """Return the call, and which key the rule checks."""
        prefill, per_token, n = case.args
        return (
            f"response_times(prefill_ms={prefill!r}, per_token_ms={per_token!r}, n_tokens={n!r})"
            f"  (checks {case.rule})"
        )

    def diagnose(self, case: Case, outcome: Outcome, more: object = ()) -> str | None:
        """Return the mistake a wrong value points to (a key of HINTS), or None."""
        if not isinstance(outcome, Returned) or not isinstance(outcome.value, dict):
            return None
        value = outcome.value.get(case.rule)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        expected = reference(*case.args)[case.rule]
        if value != expected and (
            _close(value, math.floor(expected)) or _close(value, round(expected))
        ):
            return "rounded"
        for cause, guess in _guesses(*case.args).items():
            if _close(value, guess) and not _close(guess, expected):
                if (
                    cause in ("first-at-total", "prefill-only")
                    and case.rule != "streaming_first_ms"
                ):
                    continue
                if cause == "blocking-at-first" and case.rule != "blocking_first_ms":
                    continue
                return cause
        return None
