"""The graded exercises by id: ``EXERCISES["read_stream"] -> Exercise``.

The order is the course's (exercise 1 to 6), and it is the order of the
grades CSV's columns. Building them draws no case: a rule's cases are built
when a ``Plan`` is made, so this costs a few milliseconds at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from lessonkit.grading import ex1_response_times as ex1
from lessonkit.grading import ex2_read_stream as ex2
from lessonkit.grading import ex3_now_change_it as ex3
from lessonkit.grading import ex4_read_anthropic as ex4
from lessonkit.grading import ex5_resume as ex5
from lessonkit.grading import ex6_parse_sse as ex6
from lessonkit.grading.engine import Exercise

__all__ = ["EXERCISES"]

EXERCISES: Mapping[str, Exercise] = MappingProxyType(
    {e.id: e for e in (m.exercise() for m in (ex1, ex2, ex3, ex4, ex5, ex6))}
)
