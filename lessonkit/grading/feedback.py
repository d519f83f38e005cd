"""What a learner reads: ``report_text(report) -> str`` and the notebook's ``feedback_html``.

The text is focused: a headline with the score, then the first failing rule in
full (the input, what was expected, what came back, a hint), the other failing
rules by name only -- under "probably for the same reason" only those whose
failure was diagnosed as the same mistake -- the rules that were not run, and
the rules that passed, each with its points. A hidden rule's input is never
shown. A function that uses the course's own answer is told so first, and how.

The notebook shows the same text as a small HTML box whose edge is coloured
like the course's other verdicts (``lessonkit.lab.views.FEEDBACK_COLOURS``, the
one place this layer takes anything from ``lessonkit.lab``).
"""

from __future__ import annotations

import html

from lessonkit.grading.engine import Answers, Finding, Report

ALSO_SAME = "also failing, probably for the same reason (fix the one above first):"
ALSO_FAILING = "also failing:"


def tagged(finding: Finding) -> str:
    """Return the rule's name, marked "[hidden] " when only grading runs it."""
    return f"[hidden] {finding.rule}" if finding.hidden else finding.rule


def _points(points: float) -> str:
    return "1 point" if points == 1 else f"{points:g} points"


def integrity_line(report: Report) -> str:
    """Return what to do when the function uses the course's own answer (empty if it does not).

    It says how: the function calls the answer, or it holds a copy of its code
    or its data (what was found is said).
    """
    if not report.integrity:
        return ""
    first = report.integrity[0]
    more = f" (and {', '.join(report.integrity[1:])})" if len(report.integrity) > 1 else ""
    held = dict(report.held).get(first)
    if held and not isinstance(report.exercise, Answers):
        how = f"Your function holds {held}: while it does"
    else:
        how = f"While {report.exercise.uses_words}"
    return (
        f"write your own {report.exercise.own_work}; {first} is the course's answer{more}. "
        f"{how}, this exercise earns 0 of {report.points:g} points "
        "(the checks below ran anyway)."
    )


def headline(report: Report) -> str:
    """Return the first line of the feedback: the exercise, the checks passed, the score."""
    name = report.id
    answers = isinstance(report.exercise, Answers)
    if report.problem:
        return f"{name}: {report.problem}"
    if report.not_attempted and report.graded:
        what = (
            "every answer is still `...`"
            if answers
            else "the stub still raises NotImplementedError"
        )
        return f"{name}: not attempted yet -- {what}; 0 of {report.points:g} points."
    if report.not_attempted and answers:
        return (
            f"{name}: not attempted yet -- replace each `...` with your answer, run those "
            "cells, then run this check again."
        )
    if report.not_attempted:
        return (
            f"{name}: not attempted yet -- replace the `raise NotImplementedError(...)` "
            "line with your code, run that cell, then run this check again."
        )
    if report.integrity:
        return f"{name}: {integrity_line(report)}"
    ok, total = report.passed_rules, report.total_rules
    earned = f"{report.earned:g} of {report.points:g} points"
    if report.graded:
        return f"{name}: checks {ok}/{total} pass (public and hidden) -- {earned}."
    hidden = round(report.points - report.checked_points, 2)
    so_far = "" if ok == total else " so far"
    if not report.exercise.has_hidden or hidden <= 0:
        return f"{name}: public checks {ok}/{total} pass -- {earned}{so_far}. Grading runs the same checks."
    if ok == total:
        more = f"the other {_points(hidden)} come from hidden checks at grading, so this is not your final score"
    else:
        more = f"hidden checks at grading carry {_points(hidden)} more"
    return f"{name}: public checks {ok}/{total} pass -- {earned}{so_far}; {more}."


def finding_lines(finding: Finding) -> list[str]:
    """Return the lines of one failing rule in full: input, expected, got, hint."""
    lines = [f"FAILED  {tagged(finding)} (0 of {_points(finding.max_points)})"]
    if finding.hidden:
        lines.append("  (a hidden check: its input is not shown)")
        crash = finding.got.startswith(("raised", "no answer within", "your function"))
        lines.append(f"  got       {finding.got}" if crash else "")
        lines = [line for line in lines if line]
    else:
        lines.append(f"  input     {finding.shown_input}")
        if finding.expected:
            lines.append(f"  expected  {finding.expected}")
        lines.append(f"  got       {finding.got}")
    if finding.hint:
        lines.append(f"  hint      {finding.hint}")
    return lines


def others_failing(report: Report) -> list[tuple[str, list[Finding]]]:
    """Return the failing rules besides the one shown in full, grouped: (heading, findings).

    Rules that failed for the same mistake as the one shown come under "probably
    for the same reason"; the others (for answers, always) under "also failing".
    """
    shown = report.shown
    others = [f for f in report.failed if f is not shown]
    if shown is None or not others:
        return []
    answers = isinstance(report.exercise, Answers)
    same = [f for f in others if not answers and shown.cause and f.cause == shown.cause]
    rest = [f for f in others if f not in same]
    return [
        (heading, group) for heading, group in ((ALSO_SAME, same), (ALSO_FAILING, rest)) if group
    ]


def report_text(report: Report) -> str:
    """Return the feedback as plain text (stable: no times, no addresses)."""
    lines = [headline(report)]
    if report.problem:
        return "\n".join(lines)
    if report.allowed_use:
        lines.append(f"(uses {', '.join(report.allowed_use)}: accepted by --allow-lessonkit)")
    if report.shown is not None:
        lines.append("")
        lines += finding_lines(report.shown)
    for heading, group in others_failing(report):
        lines.append("")
        lines.append(heading)
        lines += [f"  - {tagged(f)}" for f in group]
    not_run = [f for f in report.findings if f.not_run]
    if not_run:
        lines.append("")
        lines.append(f"not run ({report.stopped or 'checking stopped'}):")
        lines += [f"  - {f.rule}" for f in not_run]
    passed = [f for f in report.findings if f.passed]
    if passed:
        lines.append("")
        lines += [
            f"ok  {tagged(f)} ({f.checked} input{'' if f.checked == 1 else 's'}, "
            f"{_points(f.max_points)})"
            for f in passed
        ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The notebook's box


def feedback_html(text: str, report: Report | None) -> str:
    """Return the feedback as a small HTML box: failures open, passed rules folded."""
    from lessonkit.lab.views import FEEDBACK_COLOURS  # the course's one palette

    lines = text.splitlines() or [""]
    head = html.escape(lines[0])
    if report is None or report.problem:
        colour = FEEDBACK_COLOURS["fail"]
        body = ""
    elif report.not_attempted:
        colour, body = FEEDBACK_COLOURS["todo"], ""
    else:
        colour = FEEDBACK_COLOURS["pass"] if report.passed else FEEDBACK_COLOURS["fail"]
        parts = []
        if report.shown is not None:  # the root bug in full, the others by name (as in the text)
            block = "\n".join(finding_lines(report.shown))
            parts.append(
                f"<pre style='white-space:pre-wrap;margin:4px 0'>{html.escape(block)}</pre>"
            )
        for heading, group in others_failing(report):
            items = "".join(f"<li>{html.escape(tagged(f))}</li>" for f in group)
            parts.append(f"<div>{html.escape(heading)}<ul>{items}</ul></div>")
        not_run = [f for f in report.findings if f.not_run]
        if not_run:
            items = "".join(f"<li>{html.escape(f.rule)}</li>" for f in not_run)
            parts.append(f"<div>not run ({html.escape(report.stopped)}):<ul>{items}</ul></div>")
        passed = [f for f in report.findings if f.passed]
        if passed:
            items = "".join(f"<li>{html.escape(f.rule)} ({f.checked})</li>" for f in passed)
            parts.append(
                f"<details><summary>{len(passed)} rule(s) pass</summary><ul>{items}</ul></details>"
            )
        body = "".join(parts)
    return (
        f"<div style='border-left:6px solid {colour};padding:6px 10px;margin:4px 0'>"
        f"<b>{head}</b>{body}</div>"
    )
