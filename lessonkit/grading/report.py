"""What grading writes for the instructor: the grades CSVs, feedback files and the class report.

``write_csv`` (one row per learner), ``write_rules_csv`` (one line per learner,
exercise and rule), ``write_feedback`` (one text file per learner) and
``write_report`` (one self-contained HTML page with figures). Each is written
whole to a temporary file in the destination folder and renamed into place
(``write_atomically``): a reader never sees half a file, and no learner code
runs in this process or can reach these folders from its sandbox.

What an instructor needs after grading, in order: how the scores spread
(a histogram), how each exercise went (mean score as a share of its points),
what to reteach (per exercise, the rule learners most often failed first, with
the hint they were given most often under it: the mistake behind it), how often each rule failed, and the rows to look at (any status but
"ok": flags, limits, errors). Failure rates count the learners who attempted
the exercise (their function was found and did not just raise
NotImplementedError).

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
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.grading.engine import Report
from lessonkit.grading.exercises import EXERCISES

if TYPE_CHECKING:
    from lessonkit.grading.grade import Row

__all__ = [
    "CSV_COLUMNS",
    "class_summary",
    "render_report",
    "rules_path",
    "write_atomically",
    "write_csv",
    "write_feedback",
    "write_report",
    "write_rules_csv",
]

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


def _first_failed(report: Report) -> tuple[str, str] | None:
    """Return (rule, the hint the learner was given) of the first failing rule."""
    return next(((f.rule, f.hint) for f in report.findings if not f.passed), None)


def class_summary(rows: Sequence[Row]) -> dict:
    """Return the numbers the report draws: scores, per-exercise means, per-rule failure rates."""
    total = sum(ex.points for ex in EXERCISES.values())
    exercises = {}
    for eid, exercise in EXERCISES.items():
        reports = [row.reports.get(eid) for row in rows]
        tried = [r for r in reports if _attempted(r)]
        failing: Counter[str] = Counter()
        first: Counter[str] = Counter()
        hints: dict[str, Counter[str]] = {}
        for report in tried:
            failing.update(f.rule for f in report.findings if not f.passed)
            found = _first_failed(report)
            if found:
                first[found[0]] += 1
                hints.setdefault(found[0], Counter())[found[1]] += 1
        scores = [row.scores.get(eid, 0.0) for row in rows]
        exercises[eid] = {
            "title": exercise.title,
            "points": exercise.points,
            "attempted": len(tried),
            "mean": statistics.fmean(scores) if scores else 0.0,
            "rules": [
                (rule.name, rule.hidden, failing[rule.name] / len(tried) if tried else 0.0)
                for rule in exercise.rules
            ],
            "first": first.most_common(1)[0] if first else None,
            # the hint learners were given most often under that rule (the diagnosed mistake)
            "hints": {rule: counts.most_common(1)[0][0] for rule, counts in hints.items()},
        }
    scores = [row.score for row in rows]
    return {
        "learners": len(rows),
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


def render_report(rows: Sequence[Row], *, seed: int, how: str, elapsed_s: float) -> str:
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
        f"(give it again to reproduce these grades). {html.escape(how)}.</p>",
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
        if info["first"] is None:
            reteach.append([eid, "(no learner failed a rule)", "", ""])
            continue
        rule, count = info["first"]
        share = f"{count} of {info['attempted']}"
        reteach.append([eid, rule, share, info["hints"].get(rule, "")])
    out.append(
        "<p>Per exercise, the rule learners most often failed <em>first</em> (the one their "
        "feedback opened with) and its hint.</p>"
        + _table(["exercise", "first failing rule", "learners", "hint"], reteach, "reteach")
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


def write_report(rows: Sequence[Row], path: Path, *, seed: int, how: str, elapsed_s: float) -> None:
    """Write the class report to ``path`` (atomically)."""
    write_atomically(path, render_report(rows, seed=seed, how=how, elapsed_s=elapsed_s))


# ---------------------------------------------------------------------------
# The CSVs and feedback files: written whole to a temporary file, then renamed into place


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
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
    "error",
    "notes",
    "files",
]


def write_csv(rows: Sequence[Row], out: Path) -> None:
    """Write the grades: one row per learner (see CSV_COLUMNS)."""
    total = sum(ex.points for ex in EXERCISES.values())
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(
            [
                row.learner,
                row.status,
                f"{row.score:g}",
                f"{total:g}",
                *[f"{row.scores.get(ex, 0.0):g}" for ex in EXERCISES],
                ";".join(row.flags),
                "; ".join(row.errors),
                "; ".join(row.notes),
                "; ".join(row.files),
            ]
        )
    write_atomically(out, text.getvalue())


def rules_path(out: Path) -> Path:
    """Return where the per-rule CSV goes: next to the grades CSV (grades.csv -> grades_rules.csv)."""
    return out.with_name(f"{out.stem}_rules{out.suffix or '.csv'}")


def write_rules_csv(rows: Sequence[Row], out: Path) -> None:
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
    write_atomically(out, text.getvalue())


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "learner"


def write_feedback(rows: Sequence[Row], folder: Path) -> None:
    """Write one feedback file per learner (hidden checks name the rule, never the input)."""
    used: set[str] = set()
    for row in rows:
        name = _safe_name(row.learner)
        while name in used:
            name += "_"
        used.add(name)
        write_atomically(folder / f"{name}.txt", row.feedback)
