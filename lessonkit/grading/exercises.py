"""The graded exercises by id: ``EXERCISES["read_stream"] -> Exercise``, built on first use.

The order is the course's (exercise 1 to 6), and it is the order of the
grades CSV's columns. Building the rules and their cases costs a few ms, so
nothing is built at import time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache

from lessonkit.grading import ex1_response_times as ex1
from lessonkit.grading import ex2_read_stream as ex2
from lessonkit.grading import ex3_now_change_it as ex3
from lessonkit.grading import ex4_read_anthropic as ex4
from lessonkit.grading import ex5_resume as ex5
from lessonkit.grading import ex6_parse_sse as ex6
from lessonkit.grading.engine import Exercise

__all__ = ["EXERCISES"]


@cache
def _build() -> dict[str, Exercise]:
    exercises = [module.exercise() for module in (ex1, ex2, ex3, ex4, ex5, ex6)]
    return {exercise.id: exercise for exercise in exercises}


class _Registry(Mapping[str, Exercise]):
    """The exercises by id, built on first use (a read-only mapping)."""

    def __getitem__(self, key: str) -> Exercise:
        return _build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_build())

    def __len__(self) -> int:
        return len(_build())


EXERCISES: Mapping[str, Exercise] = _Registry()
