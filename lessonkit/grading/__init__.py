"""Graded exercises: the learner's function against a reference, in the notebook and in batch.

    from lessonkit.grading import check
    check("read_stream", read_stream)     # exercise id = the function's name

May import: the standard library, ``lessonkit.core``, ``cloudpickle`` (inside
``timed_calls``), ``jinja2`` (inside ``report``) and the modules of this
package (``guard`` and ``sandbox`` need nothing but the standard library and
each other). IPython only inside the notebook display, httpx only inside
``http_fetch``. Never ``lessonkit.lab``, except the colours of the notebook's
feedback box (``lessonkit.lab.views.FEEDBACK_COLOURS``, imported inside
``feedback_html``); never ``lessonkit.serve``, except inside ``live_resume``
(exercise 5's live demo against the real server).

The exercises, and how one is judged:

    engine       Case, Rule, the Exercise base class, the outcome types, Finding, Report; evaluate()
    feedback     the feedback text (the root bug in full, others by name) and the HTML box
    codec        values across a process boundary as JSON; one call's reply; the line that raised
    streams      what the stream-reader exercises share: chunk cases, cuts, ReaderExercise
    mistakes     the classic reader mistakes as code, to name the one a learner made
    ex1_response_times, ex2_read_stream, ex3_now_change_it, ex4_read_anthropic,
    ex5_resume, ex6_parse_sse
                 one module per exercise, a small class: its rules and points, reference,
                 hints, what from lessonkit it may use
    exercises    EXERCISES: exercise id -> Exercise (the one import circle: it is the registry)
    integrity    the course's own answers in learner code: calls, pasted code, held data

Running learner code:

    channel      the caller's end of the JSON-lines protocol with the process running it
    child        that process: python -m lessonkit.grading.child (grading; --worker for check)
    timed_calls  check's calls under a time limit: a worker process, or this process
    notebook     check(), try_it, practice_fetch, live_resume: what the exercise notebooks call
    public       public_results: the public checks of handed-in notebooks, for submit()

`lessonkit grade`, as its four steps:

    roster       1. find the submissions: one per learner from any LMS layout, notebooks or a
                 hand-in zip, the rest listed
    run          2. run each learner's notebooks in their sandbox: LearnerHost, NotebookRun
    sandbox      ... bubblewrap and rlimits around the child; its Report
    guard        ... inside the sandbox, first: names the attempts the OS refuses
    grade        3. judge each exercise (engine) for every learner; the command itself
    report       4. write the outputs: Row, grades CSVs, feedback, the class report (templates/)
    gradebooks   ... the Moodle worksheet and the Canvas import, as their importers read them
    assign       `lessonkit assign`: the exercise notebooks, generated from the solutions
"""

from __future__ import annotations

import importlib
from typing import Any

# The public names, each loaded from its module on first use, so that the process that
# runs learner code (python -m lessonkit.grading.child) starts without the notebook side.
_PUBLIC = {
    "EXERCISES": "lessonkit.grading.exercises",
    "CheckResult": "lessonkit.grading.notebook",
    "check": "lessonkit.grading.notebook",
    "grading_mode": "lessonkit.grading.notebook",
    "http_fetch": "lessonkit.grading.notebook",
    "live_resume": "lessonkit.grading.notebook",
    "practice_fetch": "lessonkit.grading.notebook",
    "public_results": "lessonkit.grading.public",
    "try_it": "lessonkit.grading.notebook",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Return a public name of the package, importing its module (PEP 562)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'lessonkit.grading' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
