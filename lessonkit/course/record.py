"""The progress record: what each exercise's last ``check()`` said, kept in the course folder.

One small JSON file, ``.lessonkit-progress.json``, in the learner's course folder (git
ignores it). Each ``check()`` the learner runs writes its exercise's line: the public
checks passed (k of m), the points, whether it passed, and when. It never holds the
learner's code. ``summary()`` reads it back as the course's exercises in order, each
passed, failing or not started, and names what comes next.

Where the record lives (``where()``):

* ``$LESSONKIT_RECORD_DIR`` when set: tests, nbval runs and the grader point it at a
  folder of their own, so that no run of the course's notebooks writes a learner's record;
* else the course folder (``lessonkit.course.folder``), found from the working folder;
* a read-only course folder (a shared copy on a hub): the learner's home, and the learner
  is told where;
* no course folder: nothing is kept, and the note says why (in JupyterLite: the browser
  gave the course no storage, e.g. a private window without service workers).

Only the learner's own ``check()`` calls ``record``: ``submit()`` and ``lessonkit grade``
run their own checks and never write here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lessonkit.course.folder import (
    EXERCISES,
    course_folder,
    exercise_number,
    not_in_a_course_folder,
)

__all__ = [
    "RECORD_DIR_ENV",
    "RECORD_FILE",
    "Place",
    "clear",
    "record",
    "summary",
    "table",
    "where",
]

RECORD_DIR_ENV = "LESSONKIT_RECORD_DIR"
RECORD_FILE = ".lessonkit-progress.json"
FORMAT = 1
NO_BROWSER_STORAGE = (
    "Progress cannot be kept, nor work handed in from the kernel, in this browser: "
    "JupyterLite found no storage for the course (this happens in some private windows, "
    "where service workers are off). Your checks still work; open the course in a normal "
    "window to keep your progress and hand in, or save each exercise with File > Download."
)


@dataclass(frozen=True)
class Place:
    """Where the record is kept (``file`` None: nowhere), and what to tell the learner."""

    file: Path | None
    note: str = ""

    @property
    def kept(self) -> bool:
        """Return True when progress can be kept."""
        return self.file is not None


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def where(start: Path | str | None = None) -> Place:
    """Return where the record of the course around `start` (default: here) is kept."""
    override = os.environ.get(RECORD_DIR_ENV)
    if override:
        return Place(Path(override) / RECORD_FILE)
    folder = course_folder(start)
    if folder is None:
        note = NO_BROWSER_STORAGE if sys.platform == "emscripten" else not_in_a_course_folder(start)
        return Place(None, note)
    if _writable(folder):
        return Place(folder / RECORD_FILE)
    home = Path.home() / ".lessonkit" / "progress" / "-".join(folder.parts[1:])
    return Place(
        home / RECORD_FILE,
        f"The course folder {folder} is read-only, so your progress is kept in {home}.",
    )


def _read(file: Path) -> dict[str, dict[str, Any]]:
    """Return the record's lines by exercise number ({} for a missing or unreadable file)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    lines = data.get("exercises") if isinstance(data, dict) else None
    return (
        {k: v for k, v in lines.items() if isinstance(v, dict)} if isinstance(lines, dict) else {}
    )


def _write(file: Path, lines: Mapping[str, dict[str, Any]]) -> None:
    """Write the record whole, through a temporary file renamed into place."""
    file.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": FORMAT, "exercises": dict(lines)}, indent=1, sort_keys=True)
    temporary = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    os.replace(temporary, file)


def record(
    exercise_id: str,
    *,
    passed: bool,
    checks_passed: int,
    checks: int,
    points: float,
    max_points: float,
    now: datetime | None = None,
    start: Path | str | None = None,
) -> Place:
    """Write one check's outcome for `exercise_id` ("read_stream"); return where it went.

    Never raises: a record that cannot be written is a note in the returned Place, and
    the check itself is unaffected.
    """
    number = exercise_number(exercise_id)
    place = where(start)
    if number is None or place.file is None:
        return place
    when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    line = {
        "id": exercise_id,
        "passed": bool(passed),
        "checks_passed": int(checks_passed),
        "checks": int(checks),
        "points": _number(points),
        "max_points": _number(max_points),
        "checked_at": when,
    }
    try:
        lines = _read(place.file)
        lines[number] = line
        _write(place.file, lines)
    except OSError as error:
        return Place(None, f"Your progress could not be saved in {place.file.parent}: {error}")
    return place


def _number(value: float) -> float:
    """Return `value` as an int when it is whole (10.0 -> 10), so the JSON reads alike."""
    return int(value) if float(value).is_integer() else float(value)


def clear(start: Path | str | None = None) -> Place:
    """Forget every exercise's progress (the record file is removed); return where it was."""
    place = where(start)
    if place.file is not None:
        place.file.unlink(missing_ok=True)
    return place


def summary(start: Path | str | None = None) -> dict[str, Any]:
    """Return the course's progress: ``{"exercises": [...], "next": "ex3" | None, ...}``.

    Each exercise is ``{"exercise": "ex1", "id", "notebook", "state": "passed" |
    "failing" | "not started", "checks_passed", "checks", "points", "max_points",
    "checked_at"}`` (the last five None when not started). ``next`` is the first exercise
    not passed, in course order. ``record`` is the record's path (None when nothing can
    be kept) and ``note`` what the learner should know about it ("" when nothing).
    """
    place = where(start)
    lines = _read(place.file) if place.file is not None else {}
    exercises = []
    for stem in EXERCISES:
        number, _, exercise_id = stem.partition("_")
        line = lines.get(number, {})
        if line:
            state = "passed" if line.get("passed") else "failing"
        else:
            state = "not started"
        exercises.append(
            {
                "exercise": number,
                "id": exercise_id,
                "notebook": f"exercises/{stem}.ipynb",
                "state": state,
                **{
                    key: line.get(key)
                    for key in ("checks_passed", "checks", "points", "max_points", "checked_at")
                },
            }
        )
    upcoming = next((e["exercise"] for e in exercises if e["state"] != "passed"), None)
    return {
        "exercises": exercises,
        "next": upcoming,
        "record": str(place.file) if place.file is not None else None,
        "note": place.note,
    }


def _state_words(line: Mapping[str, Any]) -> str:
    if line["state"] == "failing":
        return f"failing {line['checks_passed']} of {line['checks']}"
    return str(line["state"])


def _points(line: Mapping[str, Any]) -> str:
    if line["points"] is None:
        return "-"
    return f"{line['points']:g}/{line['max_points']:g}"


def table(progress: Mapping[str, Any]) -> str:
    """Return `progress` (a ``summary()``) as a text table, what comes next, and the note."""
    rows = [("exercise", "state", "points so far", "last checked")]
    for line in progress["exercises"]:
        when = (line["checked_at"] or "-").replace("T", " ").replace("+00:00", " UTC")
        rows.append((f"{line['exercise']} {line['id']}", _state_words(line), _points(line), when))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    text = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    upcoming = progress["next"]
    text.append("(points so far: from the public checks; grading runs more.)")
    if upcoming is None:
        text.append("\nEvery exercise passes its public checks. Hand in with submit().")
    else:
        stem = next(s for s in EXERCISES if s.startswith(f"{upcoming}_"))
        text.append(f"\nNext: {upcoming} (exercises/{stem}.ipynb).")
    if progress["note"]:
        text.append(progress["note"])
    return "\n".join(text)
