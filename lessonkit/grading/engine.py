"""Learner function versus reference, over many inputs: ``evaluate(exercise, run) -> Report``.

* **How an exercise is defined.** An ``Exercise`` (id, title, points) is a
  tuple of ``Rule`` objects plus a reference function and a few small
  functions that say how a result is compared (``same``), checked for shape
  (``shape``: "must return a tuple") and shown (``show_input``,
  ``show_value``). A ``Rule`` is one behaviour in words ("a character split
  across chunks survives"), a hint, and ``cases()``: the inputs (``Case``)
  that test it. The reference answer of every case is computed by the
  exercise's module (``ex2_read_stream.reference`` ...), never stored.
* **Public vs hidden.** ``Rule(hidden=True)`` runs only at grading
  (``lessonkit grade``); its feedback names the rule and what came back, never
  the input. Everything else runs in the notebook's ``check``.
* **Shrinking.** There is no search: each rule's cases are sorted by
  ``Case.size`` (bytes, then chunks) and a rule stops at its first failing
  case, so the input shown is the smallest one that breaks the function. A case
  may carry ``control`` arguments (the same input without the feature the rule
  is about, e.g. without the empty chunks): a failure counts for the rule only
  when the control passes, so the rule never blames a bug that another rule is
  about.
* **Running and reporting.** ``evaluate`` walks the rules and returns a
  ``Report``; ``Report.text()`` is the feedback (``lessonkit.grading.feedback``).

This module never runs learner code itself with a time limit. The caller
passes ``run(case) -> Outcome``: the notebook's ``check`` runs the learner's
function in a forked process, ``lessonkit grade`` in a fresh interpreter; the
reference answers are computed here, in the caller's own process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lessonkit.grading import feedback
from lessonkit.grading.codec import (
    SHOWN_CHARS,
    Served,
    error_detail,
    learner_line,
    materialize,
    to_jsonable,
)

__all__ = [
    "CALL_LIMIT_S",
    "PROCESS_ENDED",
    "Case",
    "Exercise",
    "Finding",
    "Outcome",
    "Report",
    "Rule",
    "call_in_process",
    "evaluate",
    "evaluate_value",
    "unanswered",
]

CALL_LIMIT_S = 3.0  # one call of the learner's function
PROCESS_ENDED = "your function ended the process running it (sys.exit / os._exit?)"


@dataclass(frozen=True)
class Case:
    """One input for the learner's function, under one rule."""

    rule: str
    args: tuple
    size: tuple = ()  # sort key: smaller cases run first
    control: tuple | None = None  # the same input without the rule's feature (see evaluate)
    note: str = ""  # what the input is, in words, shown under it ("... without message_stop")


@dataclass(frozen=True)
class Outcome:
    """What one call did: a JSON value, an error, or no answer in time."""

    value: Any = None
    error: str | None = None  # "TypeError: message"
    error_type: str | None = None
    where: str | None = None  # the learner's line that raised, when known
    timed_out: bool = False
    requests: tuple | None = None  # resume: the Last-Event-ID of each fetch call
    detail: str | None = None  # JSONDecodeError: the start of the text it could not parse


@dataclass(frozen=True)
class Rule:
    """A behaviour the exercise asks for, checked on a list of cases."""

    name: str
    hint: str
    cases: Callable[[], list[Case]]
    hidden: bool = False
    control_hint: str = ""  # shown when every failing case's control failed too


@dataclass(frozen=True)
class Finding:
    """The verdict on one rule: passed, or the smallest failing case shown."""

    rule: str
    passed: bool
    hidden: bool = False
    checked: int = 0
    shown_input: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    not_run: bool = False


@dataclass(frozen=True)
class Report:
    """The verdict on one exercise: findings per rule, score and feedback text."""

    exercise: str
    title: str
    points: float
    findings: tuple[Finding, ...] = ()
    not_attempted: bool = False
    problem: str = ""  # why the function could not be checked at all ("not found", ...)
    stopped: str = ""  # why checking stopped early (a call that never returned)
    graded: bool = False  # True when hidden rules ran too
    has_hidden: bool = True  # the exercise has rules that only grading runs
    kind: str = "function"  # "value": the learner fills in answers instead of a function

    @property
    def passed_rules(self) -> int:
        """Return how many rules passed."""
        return sum(f.passed for f in self.findings)

    @property
    def total_rules(self) -> int:
        """Return how many rules were due (run or not)."""
        return len(self.findings)

    @property
    def passed(self) -> bool:
        """Return True when every rule checked passed (and there were rules)."""
        return bool(self.findings) and all(f.passed for f in self.findings)

    @property
    def score(self) -> float:
        """Return the points earned: points times the share of rules passed, 2 decimals."""
        if not self.findings:
            return 0.0
        return round(self.points * self.passed_rules / self.total_rules, 2)

    def text(self) -> str:
        """Return the feedback as plain text (stable: no times, no addresses)."""
        return feedback.report_text(self)


@dataclass(frozen=True)
class Exercise:
    """A graded exercise: its rules, its reference and how results are compared and shown."""

    id: str
    title: str
    points: float
    rules: tuple[Rule, ...]
    reference: Callable[[Case], Any] = field(repr=False)
    kind: str = "function"  # "function": call it; "value": grade the data it holds
    shape: Callable[[Any], str | None] = field(default=lambda value: None, repr=False)
    same: Callable[[Case, Any, Any], bool] = field(
        default=lambda case, expected, got: expected == got, repr=False
    )
    show_input: Callable[[Case], str] = field(default=lambda case: repr(case.args), repr=False)
    show_value: Callable[[Any], str] = field(default=lambda value: repr(value), repr=False)
    got_of: Callable[[Outcome], Any] = field(default=lambda outcome: outcome.value, repr=False)
    # A hint picked from what came back (an error type, a telltale text), or None for the
    # rule's own hint: so a learner with one bug reads the hint for that bug.
    diagnose: Callable[[Case, Outcome], str | None] = field(
        default=lambda case, outcome: None, repr=False
    )


# ---------------------------------------------------------------------------
# Evaluation


def call_in_process(fn: Callable[..., Any], case: Case) -> Outcome:
    """Return the Outcome of ``fn(*case.args)`` here, with no time limit (tests, threads)."""
    fetch = None
    args = list(case.args)
    for i, arg in enumerate(args):
        if isinstance(arg, Served):
            fetch = arg.serving()
            args[i] = fetch
    requests = None
    try:
        value = materialize(fn(*args))
    except Exception as exc:
        requests = tuple(fetch.requests) if fetch else None
        return Outcome(
            error=f"{type(exc).__name__}: {exc}",
            error_type=type(exc).__name__,
            where=learner_line(exc.__traceback__),
            requests=requests,
            detail=error_detail(exc),
        )
    if fetch is not None:
        requests = tuple(fetch.requests)
    return Outcome(value=to_jsonable(value), requests=requests)


def _shorten(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return text[: SHOWN_CHARS - 40] + f" ... ({len(text)} characters in all)"


def evaluate(
    exercise: Exercise,
    run: Callable[[Case], Outcome],
    *,
    hidden: bool = False,
    call_limit_s: float = CALL_LIMIT_S,
) -> Report:
    """Return the Report of an exercise whose function ``run`` calls on each case.

    Rules run in order; each stops at its first failing case. A first call
    that raises NotImplementedError means "not attempted yet". A call that
    times out or ends the process running it (Outcome.error_type "ChildGone")
    stops everything; the remaining rules are reported as not run and count
    as failed.

    A failing case with ``control`` arguments counts only when the control
    (the same input without the rule's feature) passes; otherwise the bug is
    another rule's, and the next case is tried.
    """
    rules = [rule for rule in exercise.rules if hidden or not rule.hidden]
    findings: list[Finding] = []
    stopped = ""
    first_call = True
    for rule in rules:
        if stopped:
            findings.append(Finding(rule.name, False, rule.hidden, not_run=True))
            continue
        cases = sorted(rule.cases(), key=lambda case: case.size)
        failure: Finding | None = None
        deferred: Finding | None = None  # the first failure whose control failed too
        judged = 0  # cases that passed or failed on the rule's own feature
        checked = 0
        for case in cases:
            outcome = run(case)
            checked += 1
            if first_call and outcome.error_type == "NotImplementedError":
                return Report(
                    exercise.id, exercise.title, exercise.points, not_attempted=True, graded=hidden
                )
            first_call = False
            problem = _problem(exercise, case, outcome, call_limit_s)
            if problem is None:
                judged += 1
                continue
            expected_value, got_text = problem
            shown_input = _shorten(exercise.show_input(case))
            if case.note:
                shown_input += f"\n            ({case.note})"
            finding = Finding(
                rule.name,
                False,
                rule.hidden,
                checked,
                shown_input=shown_input,
                expected=_shorten(expected_value),
                got=_shorten(got_text),
                hint=_diagnosed(exercise, case, outcome) or rule.hint,
            )
            if _control_fails(exercise, case, outcome, run, call_limit_s):
                deferred = deferred or finding
                continue
            failure = finding
            if outcome.timed_out:
                stopped = f"{exercise.id} was stopped after {call_limit_s:g} s"
            elif outcome.error_type == "ChildGone":
                stopped = f"{exercise.id} ended the process running it"
            break
        if failure is None and deferred is not None and not judged:
            # No case could be judged: the same input fails even without the feature.
            failure = Finding(
                deferred.rule,
                False,
                deferred.hidden,
                checked,
                shown_input=deferred.shown_input,
                expected=deferred.expected,
                got=deferred.got,
                hint=rule.control_hint or deferred.hint,
            )
        findings.append(failure or Finding(rule.name, True, rule.hidden, checked))
    return Report(
        exercise.id,
        exercise.title,
        exercise.points,
        tuple(findings),
        stopped=stopped,
        graded=hidden,
        has_hidden=any(rule.hidden for rule in exercise.rules),
    )


def _diagnosed(exercise: Exercise, case: Case, outcome: Outcome) -> str | None:
    try:
        return exercise.diagnose(case, outcome)
    except Exception:  # a diagnosis is a bonus: never let it break the report
        return None


def _control_fails(
    exercise: Exercise,
    case: Case,
    outcome: Outcome,
    run: Callable[[Case], Outcome],
    call_limit_s: float,
) -> bool:
    """Return True when a failing case's control fails too (so the failure is not the rule's)."""
    if case.control is None or outcome.timed_out or outcome.error_type == "ChildGone":
        return False
    control = Case(case.rule, case.control, case.size)
    control_outcome = run(control)
    if control_outcome.timed_out or control_outcome.error_type == "ChildGone":
        return False  # report the case itself; checking stops there anyway
    return _problem(exercise, control, control_outcome, call_limit_s) is not None


def _problem(
    exercise: Exercise, case: Case, outcome: Outcome, call_limit_s: float
) -> tuple[str, str] | None:
    """Return (expected, got) shown for a failing case, or None when the case passes."""
    expected = to_jsonable(exercise.reference(case))
    if outcome.timed_out:
        return (
            exercise.show_value(expected),
            f"no answer within {call_limit_s:g} s (an endless loop? a `while` whose "
            "condition never changes?)",
        )
    if outcome.error_type == "ChildGone":
        return exercise.show_value(expected), outcome.error or PROCESS_ENDED
    if outcome.error is not None:
        where = f"\n            at: {outcome.where}" if outcome.where else ""
        return exercise.show_value(expected), f"raised {outcome.error}{where}"
    got = exercise.got_of(outcome)
    shape = exercise.shape(got)
    if shape is not None:
        return exercise.show_value(expected), shape
    if exercise.same(case, expected, got):
        return None
    return exercise.show_value(expected), exercise.show_value(got)


def evaluate_value(exercise: Exercise, value: Any, *, hidden: bool = False) -> Report:
    """Return the Report of a "value" exercise (answers in a dict) from its JSON data."""
    if not isinstance(value, dict):
        return Report(
            exercise.id,
            exercise.title,
            exercise.points,
            problem=f"expected a dict of answers, got {feedback.type_name(value)}",
            graded=hidden,
        )
    if all(unanswered(v) for v in value.values()):
        return Report(
            exercise.id,
            exercise.title,
            exercise.points,
            not_attempted=True,
            kind="value",
            graded=hidden,
        )

    def run(case: Case) -> Outcome:
        return Outcome(value=value.get(case.args[0], {"__missing__": True}))

    return evaluate(exercise, run, hidden=hidden)


def unanswered(value: Any) -> bool:
    """Return True for an answer still left as ``...`` (or None) in its JSON form."""
    return value is None or (isinstance(value, dict) and value.get("__type__") == "ellipsis")
