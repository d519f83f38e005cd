"""How far the learner is: ``progress()`` in a notebook, `lessonkit progress` in a terminal.

Both read the progress record (``lessonkit.course.record``) of the course around the
working folder and show every exercise as passed, failing k of m, or not started, and
what comes next. ``progress(clear=True)`` and `lessonkit progress --clear` forget it.

    lessonkit progress            a table
    lessonkit progress --json     one JSON object: {"exercises": [{"exercise": "ex1",
                                  "state": "passed" | "failing" | "not started", ...}, ...],
                                  "next": "ex3" | null, "record": PATH | null, "note": TEXT}
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Mapping
from typing import Any

from lessonkit.course import record
from lessonkit.lab.views import FEEDBACK_COLOURS, THEME

__all__ = ["Progress", "configure_parser", "main", "progress"]

_STATE_COLOURS = {
    "passed": FEEDBACK_COLOURS["pass"],
    "failing": FEEDBACK_COLOURS["fail"],
    "not started": THEME["muted"],
}


class Progress:
    """The course's progress as read: shown as a table in a notebook, as text elsewhere."""

    def __init__(self, summary: Mapping[str, Any]) -> None:
        self.summary = dict(summary)

    @property
    def next(self) -> str | None:
        """Return the first exercise not passed ("ex3"), or None when all pass."""
        return self.summary["next"]

    def __repr__(self) -> str:
        """Return the progress as the text table `lessonkit progress` prints."""
        return record.table(self.summary)

    def _repr_html_(self) -> str:
        """Return the progress as an HTML table: each state in words in the text's colour,
        marked by a coloured edge (a table's striped rows leave coloured text too faint)."""
        rows = []
        for line in self.summary["exercises"]:
            state = line["state"]
            words = state
            if state == "failing":
                words = f"failing: {line['checks_passed']} of {line['checks']} public checks"
            points = (
                "" if line["points"] is None else f"{line['points']:g} / {line['max_points']:g}"
            )
            colour = _STATE_COLOURS[state]  # a mark beside the words, never the text's colour
            rows.append(
                f"<tr><td><code>{html.escape(line['notebook'])}</code></td>"
                f'<td style="border-left: 4px solid {colour}; font-weight: bold">'
                f"{html.escape(words)}</td><td>{points}</td></tr>"
            )
        upcoming = self.summary["next"]
        after = (
            "Every exercise passes its public checks: hand in with <code>submit()</code>."
            if upcoming is None
            else f"Next: <strong>{upcoming}</strong>."
        )
        note = self.summary["note"]
        note_html = f"<p>{html.escape(note)}</p>" if note else ""
        return (
            f'<div style="color: {THEME["text"]}">'
            '<table><caption style="text-align: left">Your progress</caption>'
            '<thead><tr><th scope="col">exercise</th><th scope="col">state</th>'
            '<th scope="col">points so far</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table><p>{after}</p>{note_html}</div>"
        )


def progress(*, clear: bool = False) -> Progress:
    """Return the course's progress (shown when it ends a cell); ``clear=True`` forgets it."""
    if clear:
        record.clear()
    return Progress(record.summary())


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add `lessonkit progress`'s options to `parser`."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--clear", action="store_true", help="forget the progress kept so far")


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit progress`: print the table (or JSON); 0, or 2 outside a course."""
    shown = progress(clear=args.clear)
    if args.json:
        print(json.dumps(shown.summary, indent=1))
    elif shown.summary["record"] is None:  # no course here: only where to go
        print(f"lessonkit progress: {shown.summary['note']}", file=sys.stderr)
    else:
        print(repr(shown))
    return 0 if shown.summary["record"] is not None else 2
