"""Graded exercises: the learner's function against a reference, in the notebook and in batch.

    from lessonkit.grading import check
    check("read_stream", read_stream)     # exercise id = the function's name

May import: the standard library, ``lessonkit.core`` and the modules of this
package (``guard`` and ``sandbox`` need nothing but the standard library and
each other). IPython only inside the notebook display, httpx only inside
``http_fetch``. Never ``lessonkit.lab``, except the colours of the notebook's
feedback box (``lessonkit.lab.views.FEEDBACK_COLOURS``, imported inside
``feedback_html``); never ``lessonkit.serve``, except inside ``live_resume``
(exercise 5's live demo against the real server).

    engine       Case, Rule (points, cause), Exercise, Outcome, Finding, Report; evaluate()
    feedback     the feedback text (first failing rule in full, others by name) and the HTML box
    codec        values across a process boundary as JSON; the learner's line that raised
    streams      what the stream-reader exercises share: chunk cases, cuts, shape, diagnosis
    mistakes     the classic reader mistakes as code, to name the one a learner made
    ex1_response_times, ex2_read_stream, ex3_now_change_it, ex4_read_anthropic,
    ex5_resume, ex6_parse_sse
                 one module per exercise: its rules and points, reference, hints, what
                 from lessonkit it may use
    exercises    EXERCISES: exercise id -> Exercise, built on first use
    integrity    which of the course's own answers learner code calls while it runs
    notebook     check(), try_it, practice_fetch, live_resume: what the exercise notebooks call
    channel      the grader's end of the JSON-lines protocol with the process running learner code
    child        that process: python -m lessonkit.grading.child (one per learner)
    guard        inside the sandbox, first: names the attempts the OS refuses
    sandbox      one learner's child under bubblewrap and rlimits; its Report
    runner       a learner's sandboxed child and the notebooks run in it
    roster       who handed in what: one submission per learner, from any LMS layout
    grade        `lessonkit grade`: grade a class headless, one CSV row per learner
    report       the instructor's outputs: grades CSVs, feedback files, the class report
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
