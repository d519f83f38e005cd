"""Graded exercises: the learner's function against a reference, in the notebook and in batch.

    from lessonkit.grading import check
    check("read_stream", read_stream)     # exercise id = the function's name

May import: the standard library, ``lessonkit.core`` and the modules of this
package. IPython only inside the notebook display, httpx only inside
``http_fetch``. Never ``lessonkit.lab``, except the colours of the notebook's
feedback box (``lessonkit.lab.views.FEEDBACK_COLOURS``, imported inside
``feedback_html``); never ``lessonkit.serve``, except inside ``live_resume``
(exercise 5's live demo against the real server).

    engine       Case, Rule, Exercise, Outcome, Finding, Report; evaluate(exercise, run) -> Report
    feedback     the feedback text (first failing rule in full, others by name) and the HTML box
    codec        values across a process boundary as JSON; the learner's line that raised
    streams      what the stream-reader exercises share: chunk cases, cuts, shape, diagnosis
    ex1_response_times, ex2_read_stream, ex3_now_change_it, ex4_read_anthropic,
    ex5_resume, ex6_parse_sse
                 one module per exercise: its rules, reference, shape checks and hints
    exercises    EXERCISES: exercise id -> Exercise, built on first use
    notebook     check(), try_it, practice_fetch, live_resume: what the exercise notebooks call
    channel      the grader's end of the JSON-lines protocol with the process running learner code
    child        that process: python -m lessonkit.grading.child
    grade        `lessonkit grade`: grade exercise notebooks headless, writing a CSV
    assign       `lessonkit assign`: the exercise notebooks, generated from the solutions
"""

from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.notebook import (
    CheckResult,
    check,
    grading_mode,
    http_fetch,
    live_resume,
    practice_fetch,
    try_it,
)

__all__ = [
    "EXERCISES",
    "CheckResult",
    "check",
    "grading_mode",
    "http_fetch",
    "live_resume",
    "practice_fetch",
    "try_it",
]
