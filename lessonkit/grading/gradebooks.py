"""Gradebook imports an LMS reads as they are: ``write_moodle`` and ``write_canvas``.

Each carries the learners of that LMS's export, with the grades CSV's
``gradebook`` column scaled to the assignment's points: empty for a row whose
grade waits for the instructor (flagged, limited or in error), never above
the maximum.

**Moodle**, the assignment's offline grading worksheet, as
``mod/assign/feedback/offline/importgradeslib.php`` reads it. The import
finds its columns by name in the site's language (these are English) and
gives up without "Identifier", "Grade" and "Last modified (grade)". So:
``Identifier`` is "Participant N", N the number in the export's folder name
(``José Núñez_200101_assignsubmission_file_``), which Moodle maps back to its
participant; ``Full name``; ``Grade``, scaled to the assignment's maximum
grade (``maximum``; Moodle's default is 100), as a row above it is skipped;
``Maximum grade``; and ``Last modified (grade)``, the run's time in RFC 2822
with its UTC offset, which PHP's ``strtotime`` reads (a row whose time does
not parse is skipped, and so is one whose grade in Moodle is newer by more
than 60 s: a grade you entered after the run stays yours). Moodle skips an
empty grade, so a waiting row changes nothing. There is no "Feedback
comments" column: an empty cell would replace your own comment, and the
learners' feedback is the ``--feedback`` files.

**Canvas**, the gradebook import (``GradebookImporter``). Every header it does
not know becomes a new assignment, so the file holds only the columns it
knows (Student, ID, SIS User ID, SIS Login ID, Section) and one assignment
column: "Title (id)" when the assignment's id is given, which matches that
assignment, else the title, matched by its exact text. ``ID`` is Canvas's
user id from the export's file names, the column the importer matches first.
The "Points Possible" line gives the assignment's points (``points``). A late
mark from the file names stays in the grades CSV and the report, never here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from email.utils import format_datetime
from pathlib import Path

from lessonkit.grading.report import MAX_SCORE, Row, csv_text, write_atomically

MOODLE_MAXIMUM = 100.0  # Moodle's default maximum grade of an assignment
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum grade", "Last modified (grade)"]
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def scaled(row: Row, maximum: float) -> str:
    """Return the row's gradebook grade out of ``maximum`` (two decimals), "" while it waits."""
    if not row.gradebook:
        return ""
    return f"{min(round(row.score * maximum / MAX_SCORE, 2), maximum):g}"


def _name(row: Row) -> str:
    """Return the learner's name without the LMS id the learner column ends with."""
    return row.learner.rsplit("_", 1)[0]


def write_moodle(
    rows: Sequence[Row],
    out: Path,
    *,
    when: datetime,
    maximum: float = MOODLE_MAXIMUM,
    bom: bool = False,
) -> None:
    """Write a Moodle grading worksheet for the learners of a Moodle export (see above).

    ``when`` is the time the grades were made (an aware datetime: the run's).
    """
    stamp = format_datetime(when)  # "Sat, 05 Dec 2026 09:04:00 +0100"
    lines = [
        [f"Participant {row.lms_id}", _name(row), scaled(row, maximum), f"{maximum:g}", stamp]
        for row in rows
        if row.lms == "moodle"
    ]
    write_atomically(out, csv_text(MOODLE_COLUMNS, lines), bom=bom)


def write_canvas(
    rows: Sequence[Row],
    out: Path,
    *,
    title: str,
    assignment_id: str = "",
    points: float = MAX_SCORE,
    bom: bool = False,
) -> None:
    """Write a Canvas gradebook import for the learners of a Canvas export (see above)."""
    column = f"{title} ({assignment_id})" if assignment_id else title
    lines = [["Points Possible", "", "", "", "", f"{points:g}"]]
    lines += [
        [_name(row), row.lms_id, "", "", "", scaled(row, points)]
        for row in rows
        if row.lms == "canvas"
    ]
    write_atomically(out, csv_text([*CANVAS_COLUMNS, column], lines), bom=bom)
