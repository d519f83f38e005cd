"""The graded exercises by id: ``EXERCISES["read_stream"] -> Exercise``.

The order is the course's (exercise 1 to 6), and it is the order of the
grades CSV's columns. A new exercise is a class in a module of its own (see
``engine.Exercise``), added here. Building them draws no case: a rule's cases
are built when a ``Plan`` is made, so this costs a few milliseconds at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from lessonkit.grading.engine import Exercise
from lessonkit.grading.ex1_response_times import ResponseTimes
from lessonkit.grading.ex2_read_stream import ReadStream
from lessonkit.grading.ex3_now_change_it import NowChangeIt
from lessonkit.grading.ex4_read_anthropic import ReadAnthropic
from lessonkit.grading.ex5_resume import Resume
from lessonkit.grading.ex6_parse_sse import ParseSSE

_IN_ORDER = (ResponseTimes(), ReadStream(), NowChangeIt(), ReadAnthropic(), Resume(), ParseSSE())
EXERCISES: Mapping[str, Exercise] = MappingProxyType({e.id: e for e in _IN_ORDER})
