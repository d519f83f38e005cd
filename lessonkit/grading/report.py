"""What grading writes for the instructor: ``Row``, the grades CSVs, gradebook imports, the report.

``write_csv`` (one row per learner), ``write_rules_csv`` (one line per learner,
exercise and rule), ``write_canvas`` and ``write_moodle`` (gradebook imports),
``write_feedback`` (one text file per learner) and ``write_report`` (one
self-contained HTML page with figures). Each is written whole to a temporary
file in the destination folder and renamed into place (``write_atomically``):
a reader never sees half a file, and no learner code runs in this process or
can reach these folders from its sandbox. ``bom=True`` starts each CSV with
the UTF-8 byte order mark Excel needs to read "José Núñez" right.

**The gradebook rule.** ``score`` is always the points the tests gave. The
``gradebook`` column holds the same number, except for a flagged or limited
row (status ``flagged: ...`` or ``limit: ...``), where it stays empty: that
grade waits for the instructor. The Canvas and Moodle files carry the
gradebook column.

What an instructor needs after grading, in order: how the scores spread
(a histogram), how each exercise went (mean score as a share of its points),
what to reteach (the mistakes the grader diagnosed, counted over honest rows,
each with the smallest input that shows it), how often each rule failed, the
rows to look at (any status but "ok") and the files that were not graded.
Class statistics count honest rows only; flagged and limited rows are counted
apart. Failure rates count the learners who attempted the exercise.

The figures are inline SVG drawn here (no plotting library, no script, no
network), so the page opens anywhere, prints, and shows the same thing every
time. Everything a learner wrote (ids, error text) is escaped.
"""

from __future__ import annotations

import csv
import html
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

from lessonkit.grading.engine import Report
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.roster import NotGraded

__all__ = [
    "CSV_COLUMNS",
    "Row",
    "class_summary",
    "render_report",
    "rules_path",
    "safe_name",
    "write_atomically",
    "write_canvas",
    "write_csv",
    "write_feedback",
    "write_moodle",
    "write_report",
    "write_rules_csv",
]


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

    @property
    def score(self) -> float:
        """Return the points the tests gave over all exercises."""
        return round(sum(self.scores.values()), 2)

    @property
    def honest(self) -> bool:
        """Return False for a flagged or limited row (its grade waits for the instructor)."""
        return not self.status.startswith(("flagged", "limit")) and "; limit:" not in self.status

    @property
    def gradebook(self) -> str:
        """Return the grade a gradebook may import: the score, empty for a flagged or limited row."""
        return f"{self.score:g}" if self.honest else ""


_BAR = "#4c72b0"
_BAD = "#c44e52"
_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1000px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ccc;
padding: 3px 8px; text-align: left; vertical-align: top; } th { background: #f3f3f3; }
figure { margin: 12px 0; } figcaption { color: #555; font-size: 13px; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
.meta { color: #555; }
"""


def _attempted(report: Report | None) -> bool:
    return report is not None and not report.not_attempted and bool(report.findings)


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
    total = sum(ex.points for ex in EXERCISES.values())
    honest = [row for row in rows if row.honest]
    apart = [row for row in rows if not row.honest]
    exercises = {}
    for eid, exercise in EXERCISES.items():
        tried = [r for r in (row.reports.get(eid) for row in honest) if _attempted(r)]
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
        "max_score": total,
        "scores": scores,
        "mean": statistics.fmean(scores) if scores else 0.0,
        "median": statistics.median(scores) if scores else 0.0,
        "exercises": exercises,
        "not_ok": [row for row in rows if row.status != "ok"],
    }


# ---------------------------------------------------------------------------
# Figures


def _histogram(scores: Sequence[float], max_score: float, bins: int = 12) -> str:
    """Return an SVG histogram of the scores in ``bins`` equal bins from 0 to max_score."""
    width, height, left, bottom = 640, 220, 40, 30
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, int(bins * score / max_score)) if max_score else 0] += 1
    top = max(counts) or 1
    step = (width - left - 10) / bins
    parts = []
    for i, count in enumerate(counts):
        h = (height - bottom - 10) * count / top
        x = left + i * step
        y = height - bottom - h
        low, high = max_score * i / bins, max_score * (i + 1) / bins
        parts.append(
            f'<rect class="bar" x="{x + 2:.1f}" y="{y:.1f}" width="{step - 4:.1f}" '
            f'height="{h:.1f}" fill="{_BAR}" data-count="{count}">'
            f"<title>{low:g}-{high:g} points: {count} learner(s)</title></rect>"
        )
        if count:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>'
            )
        parts.append(
            f'<text x="{x:.1f}" y="{height - bottom + 15}" text-anchor="middle">{low:g}</text>'
        )
    parts.append(
        f'<text x="{left + bins * step:.1f}" y="{height - bottom + 15}" '
        f'text-anchor="middle">{max_score:g}</text>'
    )
    axis = f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#333"/>'
    return (
        f'<svg id="score-distribution" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{axis}{"".join(parts)}</svg>'
    )


def _hbars(
    svg_id: str, items: Sequence[tuple[str, float, str]], *, unit: str = "%", colour: str = _BAR
) -> str:
    """Return an SVG of horizontal bars: (label, share 0..1, tooltip) each."""
    label_w, bar_w, row_h = 430, 280, 20
    height = row_h * len(items) + 10
    parts = []
    for i, (label, share, tip) in enumerate(items):
        y = 5 + i * row_h
        shown = label if len(label) <= 70 else label[:67] + "..."
        parts.append(f'<text x="0" y="{y + 14}">{html.escape(shown)}</text>')
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{max(bar_w * share, 0.5):.1f}" '
            f'height="{row_h - 6}" fill="{colour}" data-share="{share:.3f}">'
            f"<title>{html.escape(tip)}</title></rect>"
        )
        parts.append(
            f'<text x="{label_w + bar_w * share + 6:.1f}" y="{y + 14}">'
            f"{100 * share:.0f}{unit}</text>"
        )
    width = label_w + bar_w + 50
    return (
        f'<svg id="{svg_id}" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{"".join(parts)}</svg>'
    )


# ---------------------------------------------------------------------------
# The page


def _table(header: Sequence[str], body: Sequence[Sequence[str]], table_id: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    lines = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in body
    )
    return f'<table id="{table_id}"><tr>{head}</tr>{lines}</table>'


def render_report(
    rows: Sequence[Row],
    *,
    seed: int,
    how: str,
    elapsed_s: float,
    not_graded: Sequence[NotGraded] = (),
) -> str:
    """Return the class report as one HTML page."""
    summary = class_summary(rows)
    exercises = summary["exercises"]
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Class report: {summary['learners']} learners</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Class report</h1>",
        f"<p class='meta'>{summary['learners']} learner(s) graded in {elapsed_s:.0f} s. "
        f"Mean {summary['mean']:.1f}, median {summary['median']:g} of "
        f"{summary['max_score']:g} points. Hidden checks drawn with <code>--seed {seed}</code> "
        f"(give it again to reproduce these grades). {html.escape(how)}. "
        f"Statistics count the {summary['honest']} honest row(s); {summary['apart']} flagged "
        "or limited row(s) are counted apart.</p>",
        "<h2>Score distribution</h2>",
        f"<figure>{_histogram(summary['scores'], summary['max_score'])}"
        "<figcaption>Learners per score band (total points).</figcaption></figure>",
        "<h2>Per exercise: mean score</h2>",
    ]
    means = [
        (
            f"{info['title']} ({info['attempted']} attempted)",
            info["mean"] / info["points"] if info["points"] else 0.0,
            f"mean {info['mean']:.1f} of {info['points']:g} points",
        )
        for info in exercises.values()
    ]
    out.append(
        f"<figure>{_hbars('exercise-means', means)}<figcaption>Mean score as a share of "
        "each exercise's points, over every learner (0 where not found).</figcaption></figure>"
    )
    out.append("<h2>What to reteach</h2>")
    reteach = []
    for eid, info in exercises.items():
        ranked = sorted(info["mistakes"].items(), key=lambda item: -item[1]["learners"])
        for cause, mistake in ranked:
            apart = info["mistakes_apart"].get(cause, {}).get("learners", 0)
            reteach.append(
                [eid, mistake["hint"], f"{mistake['learners']} of {info['attempted']}",
                 f"{apart}", mistake["input"] or "(hidden checks only)"]
            )  # fmt: skip
    out.append(
        "<p>The mistakes the grader diagnosed (the bug behind a failure, read from what the "
        "function returned), counted over honest rows, each with the smallest input that "
        "shows it. Flagged and limited rows are counted in their own column.</p>"
        + (
            _table(
                [
                    "exercise",
                    "mistake (the hint learners got)",
                    "learners",
                    "flagged rows",
                    "smallest input",
                ],
                reteach,
                "reteach",
            )  # fmt: skip
            if reteach
            else "<p id='reteach'>No mistake was diagnosed.</p>"
        )
    )
    out.append("<h2>Per rule: how often it failed</h2>")
    for eid, info in exercises.items():
        items = [
            (
                ("[hidden] " if hidden else "") + name,
                rate,
                f"{100 * rate:.0f}% of {info['attempted']}",
            )
            for name, hidden, rate in info["rules"]
        ]
        out.append(
            f"<h3>{html.escape(info['title'])}</h3><figure>"
            f"{_hbars(f'rules-{eid}', items, colour=_BAD)}<figcaption>Share of the "
            f"{info['attempted']} learner(s) who attempted it that fail each rule."
            "</figcaption></figure>"
        )
    out.append("<h2>Rows to look at</h2>")
    flagged = [
        [row.learner, row.status, "; ".join(row.flags), "; ".join(row.errors)]
        for row in summary["not_ok"]
    ]
    out.append(
        _table(["learner", "status", "flags", "error"], flagged, "not-ok")
        if flagged
        else "<p id='not-ok'>Every row is ok.</p>"
    )
    out.append("<h2>Not graded</h2>")
    left = [[str(item.path), item.reason, "" if item.explained else "unexplained"]
            for item in not_graded]  # fmt: skip
    out.append(
        _table(["file", "why it was not graded", ""], left, "not-graded")
        if left
        else "<p id='not-graded'>Every file handed over was graded.</p>"
    )
    out.append("<h2>All learners</h2>")
    every = [
        [
            row.learner,
            row.status,
            f"{row.score:g}",
            *[f"{row.scores.get(e, 0):g}" for e in EXERCISES],
        ]
        for row in rows
    ]
    out.append(_table(["learner", "status", "score", *EXERCISES], every, "learners"))
    out.append("</body></html>")
    return "\n".join(out)


def write_report(
    rows: Sequence[Row],
    path: Path,
    *,
    seed: int,
    how: str,
    elapsed_s: float,
    not_graded: Sequence[NotGraded] = (),
) -> None:
    """Write the class report to ``path`` (atomically)."""
    page = render_report(rows, seed=seed, how=how, elapsed_s=elapsed_s, not_graded=not_graded)
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
    "error",
    "notes",
    "files",
]


def _max_score() -> float:
    return sum(ex.points for ex in EXERCISES.values())


def _csv_text(header: Sequence[str], lines: Iterable[Sequence[str]]) -> str:
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
            f"{_max_score():g}",
            *[f"{row.scores.get(ex, 0.0):g}" for ex in EXERCISES],
            ";".join(row.flags),
            row.gradebook,
            row.lms,
            row.lms_id,
            "; ".join(row.errors),
            "; ".join(row.notes),
            "; ".join(row.files),
        ]
        for row in rows
    ]
    write_atomically(out, _csv_text(CSV_COLUMNS, lines), bom=bom)


def write_canvas(rows: Sequence[Row], out: Path, *, assignment: str, bom: bool = False) -> None:
    """Write a Canvas gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, the grade.

    One line per learner from a Canvas export (``ID`` is Canvas's user id from
    the file names), after the "Points Possible" line; the grade is the
    gradebook column, so a flagged or limited row imports no grade.
    """
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment]
    lines = [["Points Possible", "", "", "", "", f"{_max_score():g}"]]
    lines += [
        [row.learner.rsplit("_", 1)[0], row.lms_id, "", "", "", row.gradebook]
        for row in rows
        if row.lms == "canvas"
    ]
    write_atomically(out, _csv_text(header, lines), bom=bom)


def write_moodle(rows: Sequence[Row], out: Path, *, bom: bool = False) -> None:
    """Write a Moodle grading worksheet: Identifier ("Participant N"), Full name, Grade, ...

    The format of an assignment's "Upload grading worksheet" (Moodle matches
    ``Identifier`` to the participant number in the export's folder names).
    One line per learner from a Moodle export; the grade is the gradebook
    column, so a flagged or limited row uploads no grade.
    """
    header = ["Identifier", "Full name", "Grade", "Maximum Grade", "Feedback comments"]
    lines = [
        [
            f"Participant {row.lms_id}",
            row.learner.rsplit("_", 1)[0],
            row.gradebook,
            f"{_max_score():g}",
            "" if row.honest else f"waits for the instructor: {row.status}",
        ]
        for row in rows
        if row.lms == "moodle"
    ]
    write_atomically(out, _csv_text(header, lines), bom=bom)


def rules_path(out: Path) -> Path:
    """Return where the per-rule CSV goes: next to the grades CSV (grades.csv -> grades_rules.csv)."""
    return out.with_name(f"{out.stem}_rules{out.suffix or '.csv'}")


def write_rules_csv(rows: Sequence[Row], out: Path, *, bom: bool = False) -> None:
    """Write one line per learner, attempted exercise and rule: passed (1/0) and points earned."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["learner", "exercise", "rule", "passed", "points", "max_points", "hidden"])
    for row in rows:
        for exercise_id, report in row.reports.items():
            for finding in report.findings:
                earned = 0 if report.integrity else finding.points
                writer.writerow(
                    [
                        row.learner,
                        exercise_id,
                        finding.rule,
                        int(finding.passed),
                        f"{earned:g}",
                        f"{finding.max_points:g}",
                        int(finding.hidden),
                    ]
                )
    write_atomically(out, text.getvalue(), bom=bom)


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
