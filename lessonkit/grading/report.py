"""Step 4 of ``lessonkit grade``: ``Row``, the grades CSVs, feedback files and the class report.

``write_csv`` (one row per learner), ``write_rules_csv`` (one line per learner,
exercise and rule), ``write_feedback`` (one text file per learner) and
``write_report`` (one self-contained HTML page with figures, rendered from
the jinja2 template ``templates/report.html.j2``). The gradebook imports are
``lessonkit.grading.gradebooks``. Each output is written whole to a temporary
file in the destination folder and renamed into place (``write_atomically``):
a reader never sees half a file, and no learner code runs in this process or
can reach these folders from its sandbox. ``bom=True`` starts each CSV with
the UTF-8 byte order mark Excel needs to read "José Núñez" right.

**The gradebook rule.** ``score`` is always the points the tests gave. The
``gradebook`` column holds the same number, except for a row whose grade
waits for the instructor, where it stays empty: a flagged or limited row
(status ``flagged: ...`` or ``limit: ...``) or an error row (a notebook that
could not be read or run, or a second original the instructor must settle). The Canvas and Moodle files carry the gradebook
column.

What an instructor needs after grading, in order: how the scores spread
(a histogram), how each exercise went (mean score as a share of its points),
what to reteach (the mistakes the grader diagnosed, counted over honest rows,
each with the smallest input that shows it), how often each rule failed, the
rows to look at (any status but "ok") and the files that were not graded.
Class statistics count honest rows only; flagged and limited rows are counted
apart. Failure rates count the learners who attempted the exercise.
"""

from __future__ import annotations

import csv
import io
import os
import re
import statistics
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from lessonkit.grading.engine import Report
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.roster import NotGraded

MAX_SCORE = sum(ex.points for ex in EXERCISES.values())


@dataclass
class Row:
    """One line of the grades CSV, and the feedback written for that learner."""

    learner: str
    status: str = "ok"
    scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    feedback: str = ""
    reports: dict[str, Report] = field(default_factory=dict)
    lms: str = ""
    lms_id: str = ""
    late: tuple[str, ...] = ()  # the files the LMS marked as handed in late

    @property
    def score(self) -> float:
        """Return the points the tests gave over all exercises."""
        return round(sum(self.scores.values()), 2)

    @property
    def honest(self) -> bool:
        """Return False for a flagged or limited row (left out of the class statistics).

        Every flag, what the code tried or a limit it hit, makes the status "flagged: ..."
        or "limit: ..." (grade.FLAG_WORDS); an error alone does not.
        """
        return not self.flags

    @property
    def gradebook(self) -> str:
        """Return the grade a gradebook may import: the score, empty while it waits for the
        instructor (a flagged, limited or error row)."""
        return f"{self.score:g}" if self.honest and not self.errors else ""


def _mistakes(rows: Sequence[Row], eid: str) -> dict[str, dict]:
    """Return cause -> {learners, hint, input, size} of the mistakes diagnosed in ``eid``."""
    found: dict[str, dict] = {}
    for row in rows:
        report = row.reports.get(eid)
        if report is None:
            continue
        for cause in dict.fromkeys(f.cause for f in report.failed if f.diagnosed):
            shown = [f for f in report.failed if f.diagnosed and f.cause == cause]
            public = [f for f in shown if not f.hidden]
            entry = found.setdefault(
                cause, {"learners": 0, "hint": shown[0].hint, "input": "", "size": None}
            )
            entry["learners"] += 1
            smallest = min(public, key=lambda f: f.size) if public else None
            if smallest is not None and (entry["size"] is None or smallest.size < entry["size"]):
                entry["input"], entry["size"] = smallest.shown_input, smallest.size
    return found


def class_summary(rows: Sequence[Row]) -> dict:
    """Return the numbers the report draws, over honest rows (flagged and limited ones apart)."""
    honest = [row for row in rows if row.honest]
    apart = [row for row in rows if not row.honest]
    exercises = {}
    for eid, exercise in EXERCISES.items():
        reports = [row.reports[eid] for row in honest if eid in row.reports]
        tried = [r for r in reports if not r.not_attempted and r.findings]  # attempted it
        failing: Counter[str] = Counter()
        for report in tried:
            failing.update(f.rule for f in report.failed)
        scores = [row.scores.get(eid, 0.0) for row in honest]
        exercises[eid] = {
            "title": exercise.title,
            "points": exercise.points,
            "attempted": len(tried),
            "mean": statistics.fmean(scores) if scores else 0.0,
            "rules": [
                (rule.name, rule.hidden, failing[rule.name] / len(tried) if tried else 0.0)
                for rule in exercise.rules
            ],
            "mistakes": _mistakes(honest, eid),
            "mistakes_apart": _mistakes(apart, eid),
        }
    scores = [row.score for row in honest]
    return {
        "learners": len(rows),
        "honest": len(honest),
        "apart": len(apart),
        "max_score": MAX_SCORE,
        "scores": scores,
        "histogram": _histogram(scores),
        "mean": statistics.fmean(scores) if scores else 0.0,
        "median": statistics.median(scores) if scores else 0.0,
        "exercises": exercises,
        "not_ok": [
            [row.learner, row.status, "; ".join(row.flags), "; ".join(row.errors)]
            for row in rows
            if row.status != "ok"
        ],
        "late": sum(bool(row.late) for row in rows),
    }


def _histogram(scores: Sequence[float], bins: int = 12) -> list[int]:
    """Return how many scores fall in each of ``bins`` equal bands from 0 to the maximum."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, int(bins * score / MAX_SCORE)) if MAX_SCORE else 0] += 1
    return counts


def templates() -> jinja2.Environment:
    """Return the templates of grading's outputs (``templates/``): HTML ones autoescaped,
    blocks trimmed, and a filter ``g`` that prints a number as {:g}."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lessonkit.grading", "templates"),
        autoescape=jinja2.select_autoescape(["html.j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["g"] = lambda value: f"{value:g}"
    return env


def write_report(
    rows: Sequence[Row],
    path: Path,
    *,
    seed: int,
    how: str,
    elapsed_s: float,
    not_graded: Sequence[NotGraded] = (),
) -> None:
    """Write the class report to ``path``: one HTML page from ``templates/report.html.j2``."""
    template = templates().get_template("report.html.j2")
    page = template.render(
        s=class_summary(rows),
        seed=seed,
        how=how,
        elapsed_s=elapsed_s,
        not_graded=[
            [str(i.path), i.reason, "" if i.explained else "unexplained"] for i in not_graded
        ],
        exercises=list(EXERCISES),
        learners=[
            [row.learner, row.status, f"{row.score:g}"]
            + [f"{row.scores.get(e, 0):g}" for e in EXERCISES]
            + ["late" if row.late else ""]
            for row in rows
        ],
    )
    write_atomically(path, page)


# ---------------------------------------------------------------------------
# The CSVs and feedback files: written whole to a temporary file, then renamed into place


def write_atomically(path: Path, text: str, *, bom: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


CSV_COLUMNS = [
    "learner",
    "status",
    "score",
    "max_score",
    *EXERCISES,
    "flags",
    "gradebook",
    "lms",
    "lms_id",
    "late",
    "error",
    "notes",
    "files",
]


def csv_text(header: Sequence[str], lines: Iterable[Sequence[object]]) -> str:
    """Return a CSV's text: the header, then the lines (csv's quoting, CRLF line ends)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows(lines)
    return text.getvalue()


def write_csv(rows: Sequence[Row], out: Path, *, bom: bool = False) -> None:
    """Write the grades: one row per learner (see CSV_COLUMNS)."""
    lines = [
        [
            row.learner,
            row.status,
            f"{row.score:g}",
            f"{MAX_SCORE:g}",
            *[f"{row.scores.get(ex, 0.0):g}" for ex in EXERCISES],
            ";".join(row.flags),
            row.gradebook,
            row.lms,
            row.lms_id,
            "yes" if row.late else "",
            "; ".join(row.errors),
            "; ".join(row.notes),
            "; ".join(row.files),
        ]
        for row in rows
    ]
    write_atomically(out, csv_text(CSV_COLUMNS, lines), bom=bom)


def rules_path(out: Path) -> Path:
    """Return where the per-rule CSV goes: next to the grades CSV (grades.csv -> grades_rules.csv)."""
    return out.with_name(f"{out.stem}_rules{out.suffix or '.csv'}")


def write_rules_csv(rows: Sequence[Row], out: Path, *, bom: bool = False) -> None:
    """Write one line per learner, attempted exercise and rule: passed (1/0) and points earned."""
    lines = [
        [
            row.learner,
            exercise_id,
            f.rule,
            int(f.passed),
            f"{0 if report.integrity else f.points:g}",
            f"{f.max_points:g}",
            int(f.hidden),
        ]
        for row in rows
        for exercise_id, report in row.reports.items()
        for f in report.findings
    ]
    header = ["learner", "exercise", "rule", "passed", "points", "max_points", "hidden"]
    write_atomically(out, csv_text(header, lines), bom=bom)


def safe_name(name: str) -> str:
    """Return a file name for a learner id: letters of any script, digits, ``._-``; no path.

    ``José Núñez_200101`` -> ``José_Núñez_200101``. A name that is empty or
    only dots becomes "learner"; at most 120 characters.
    """
    name = unicodedata.normalize("NFC", name)
    safe = re.sub(r"[^\w.-]+", "_", name).strip("_.")[:120]
    return safe or "learner"


def write_feedback(rows: Sequence[Row], folder: Path) -> None:
    """Write one feedback file per learner (hidden checks name the rule, never the input)."""
    used: set[str] = set()
    for row in rows:
        name = safe_name(row.learner)
        while name.casefold() in used:
            name += "_"
        used.add(name.casefold())
        write_atomically(folder / f"{name}.txt", row.feedback)
