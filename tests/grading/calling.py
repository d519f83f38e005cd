"""The tests' way to call a learner function: here, with no time limit (``in_process(fn)``).

No step of grading calls learner code in its own process without a limit (check's
runners are ``lessonkit.grading.timed_calls``, ``lessonkit grade``'s the sandboxed
child), so this lives with the tests that evaluate plain functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lessonkit.grading.codec import Served, call_reply
from lessonkit.grading.engine import Calls, Case, Outcome, outcome_of


def in_process(fn: Callable[..., Any]) -> Calls:
    """Return calls(cases) that calls ``fn`` on each case here, with no time limit."""

    def calls(cases: Sequence[Case]) -> list[Outcome]:
        outcomes = []
        for case in cases:
            fetch = next((a.serving() for a in case.args if isinstance(a, Served)), None)
            reply = call_reply(fn, [fetch if isinstance(a, Served) else a for a in case.args])
            outcomes.append(outcome_of(reply, tuple(fetch.requests) if fetch else None))
        return outcomes

    return calls
