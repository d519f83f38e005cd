"""Where the learner's course folder is: ``course_folder() -> Path | None``.

A course folder is the folder holding ``notebooks/`` and ``exercises/``. It is found
from the working folder (a notebook's kernel starts in the notebook's folder), going
up, never from where lessonkit is installed: an editable install may point at another
copy of the course, and two copies of the course each keep their own work.

``EXERCISES`` names the exercise notebooks in course order; ``ex1`` is the first's
number, ``response_times`` its exercise id (the name ``check()`` takes).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "COURSE_MARKERS",
    "EXERCISES",
    "course_folder",
    "exercise_number",
    "not_in_a_course_folder",
]

COURSE_MARKERS = ("notebooks", "exercises")
EXERCISES = (
    "ex1_response_times",
    "ex2_read_stream",
    "ex3_now_change_it",
    "ex4_read_anthropic",
    "ex5_resume",
    "ex6_parse_sse",
)


def exercise_number(exercise_id: str) -> str | None:
    """Return "ex2" for the exercise id "read_stream" (None for an id the course lacks)."""
    for stem in EXERCISES:
        number, _, name = stem.partition("_")
        if name == exercise_id:
            return number
    return None


def course_folder(start: Path | str | None = None) -> Path | None:
    """Return the nearest folder at or above `start` (default: the working folder) that
    holds every one of ``COURSE_MARKERS``, or None if there is none."""
    here = Path.cwd() if start is None else Path(start)
    here = here.resolve()
    for folder in (here, *here.parents):
        if all((folder / marker).is_dir() for marker in COURSE_MARKERS):
            return folder
    return None


def not_in_a_course_folder(start: Path | str | None = None) -> str:
    """Return the message for a command run outside any course folder, saying where to go."""
    here = Path.cwd() if start is None else Path(start)
    hint = "the folder you cloned or unpacked the course into (it holds notebooks/ and exercises/)"
    installed_in = Path(__file__).resolve().parents[2]  # an editable install's own copy
    if course_folder(installed_in) == installed_in:
        hint = f"{installed_in}"
    return f"{here} is not inside a copy of the course. Go to {hint} and run it there."
