"""Learner function versus reference, over many inputs: ``evaluate(exercise, run) -> Report``.

* **How an exercise is defined.** An ``Exercise`` (id, title, points) is a
  tuple of ``Rule`` objects plus a reference function and a few small
  functions that say how a result is compared (``same``), checked for shape
  (``shape``: "must return a tuple") and shown (``show_input``,
  ``show_value``). A ``Rule`` is one behaviour in words ("a character split
  across chunks survives"), the points it is worth, a hint, the mistake it is
  about (``cause``) and its inputs (``Case``). The reference answer of every
  case is computed by the exercise's module (``ex2_read_stream.reference`` ...),
  never stored.
* **Points.** Each rule declares its points (the lesson's core behaviour is
  worth more than an edge case); an exercise's points are their sum, and a
  rule earns its points only when every one of its cases passes. The exercise
  intros print the same table.
* **Public vs hidden.** ``Rule(hidden=True)`` runs only at grading
  (``lessonkit grade``); its inputs are drawn from the instructor's seed
  (``cases(seed)``), so no hidden input is written anywhere in the package, and
  its feedback names the rule and what came back, never the input. Every
  hidden rule extends a public one of the same kind (``Rule.extends``), so
  nothing is a surprise at grading. Everything else runs in ``check``.
* **Shrinking.** There is no search: each rule's cases are sorted by
  ``Case.size`` (bytes, then chunks) and a rule fails at its first failing
  case, so the input shown is the smallest one that breaks the function. A
  case may carry ``control`` arguments (the same input without the feature the
  rule is about, e.g. without the empty chunks): a failure counts for the rule
  only when the control passes, so the rule never blames a bug that another
  rule is about.
* **Which bug.** ``Exercise.diagnose(case, outcome)`` names the mistake behind a
  failure (a ``cause``, read from what came back); the hint shown is the hint
  of the rule about that cause, and the feedback says "probably the same
  cause" only for failures diagnosed alike.
* **The course's own answer.** An outcome lists the course functions the call
  ran into (``Outcome.used``, recorded by ``lessonkit.grading.integrity`` in the
  process that ran it). Those the exercise does not allow make the report's
  score 0 and its headline say so, unless ``allow_lessonkit`` is given.
* **Running.** The caller passes ``run(case) -> Outcome`` or, faster across a
  process boundary, ``run_many(cases) -> [Outcome]`` (one round trip per
  rule). Cases and reference answers are built once per exercise, seed and
  mode (``plan``) and shared by every learner graded in this process.

This module never runs learner code itself with a time limit: the notebook's
``check`` runs the learner's function in a forked process, ``lessonkit grade``
in a sandboxed interpreter; the reference answers are computed here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
    "DEFAULT_SEED",
    "PROCESS_ENDED",
    "Case",
    "Exercise",
    "Finding",
    "Outcome",
    "Plan",
    "Report",
    "Rule",
    "call_in_process",
    "evaluate",
    "evaluate_value",
    "one_at_a_time",
    "plan",
    "stops",
    "unanswered",
]

CALL_LIMIT_S = 3.0  # one call of the learner's function
DEFAULT_SEED = 0  # hidden inputs when no seed is given (tests); `lessonkit grade` draws its own
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
    used: tuple[str, ...] = ()  # course answers the call ran into (lessonkit.grading.integrity)


def stops(outcome: Outcome) -> bool:
    """Return True for an outcome after which no call can run: a time-out or a gone process."""
    return outcome.timed_out or outcome.error_type == "ChildGone"


@dataclass(frozen=True)
class Rule:
    """A behaviour the exercise asks for, its points, and the cases that check it.

    ``cases()`` builds the inputs of a public rule; a hidden rule's
    ``cases(seed)`` draws them from the grading seed. ``cause`` names the
    mistake the rule is about ("decode", "while", ...): a failure elsewhere
    diagnosed as that mistake gets this rule's hint. ``extends`` (hidden rules)
    names the public rule whose kind of input it tests more of.
    """

    name: str
    hint: str
    cases: Callable[..., list[Case]] = field(repr=False)
    hidden: bool = False
    control_hint: str = ""  # shown when every failing case's control failed too
    points: float = 1.0
    cause: str = ""
    extends: str = ""

    def draw(self, seed: int = DEFAULT_SEED) -> list[Case]:
        """Return this rule's cases; a hidden rule draws them from ``seed``."""
        return list(self.cases(seed) if self.hidden else self.cases())


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
    max_points: float = 1.0
    cause: str = ""  # the mistake diagnosed for this failure ("" when passed or unknown)

    @property
    def points(self) -> float:
        """Return the points earned: all of the rule's when it passed, else none."""
        return self.max_points if self.passed else 0.0


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
    integrity: tuple[str, ...] = ()  # course answers used that the exercise does not allow
    allowed_use: tuple[str, ...] = ()  # ... used, but accepted (allow_lessonkit)
    advice: str = ""  # what to do instead ("write your own reader")

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
        """Return True when every rule checked passed (and there were rules) on honest code."""
        return bool(self.findings) and all(f.passed for f in self.findings) and not self.integrity

    @property
    def earned(self) -> float:
        """Return the points of the rules that passed (before the integrity verdict)."""
        return round(sum(f.points for f in self.findings), 2)

    @property
    def checked_points(self) -> float:
        """Return the points the rules that were due carry (all of them when graded)."""
        return round(sum(f.max_points for f in self.findings), 2)

    @property
    def score(self) -> float:
        """Return the points earned; 0 while the function hands its work to the course's answer."""
        return 0.0 if self.integrity else self.earned

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
    # The mistake behind a failure, read from what came back (an error type, a telltale
    # text), or None: its hint is taken from `hints` (by default the rule with that cause).
    diagnose: Callable[[Case, Outcome], str | None] = field(
        default=lambda case, outcome: None, repr=False
    )
    extra_hints: dict[str, str] = field(default_factory=dict, repr=False)
    # What from lessonkit the function may call (module prefixes such as "lessonkit.sse"),
    # and what to write instead of the course's answer ("reader", "timing formula").
    allowed: tuple[str, ...] = ()
    own_work: str = "code"

    @property
    def hints(self) -> dict[str, str]:
        """Return cause -> hint: each rule's hint under its cause, plus the extra ones."""
        found = {rule.cause: rule.hint for rule in self.rules if rule.cause}
        return {**found, **self.extra_hints}


# ---------------------------------------------------------------------------
# Cases and reference answers, built once and shared by every learner


class Plan:
    """The sorted cases of each due rule of one exercise, and their reference answers."""

    def __init__(self, exercise: Exercise, hidden: bool, seed: int) -> None:
        self.exercise = exercise
        self.rules = [
            (rule, sorted(rule.draw(seed), key=lambda case: case.size))
            for rule in exercise.rules
            if hidden or not rule.hidden
        ]
        self._expected: dict[int, tuple[Case, Any]] = {}
        self._controls: dict[int, tuple[Case, Case]] = {}

    def control(self, case: Case) -> Case:
        """Return the control case of ``case`` (built once, so its answer is computed once)."""
        known = self._controls.get(id(case))
        if known is None or known[0] is not case:
            known = self._controls[id(case)] = (case, Case(case.rule, case.control, case.size))
        return known[1]

    def expected(self, case: Case) -> Any:
        """Return the reference answer of ``case`` in its JSON form (computed once)."""
        known = self._expected.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        value = to_jsonable(self.exercise.reference(case))
        self._expected[id(case)] = (case, value)  # the case is kept, so its id stays its own
        return value


_plans: dict[tuple, Plan] = {}
_plans_lock = threading.Lock()


def plan(exercise: Exercise, *, hidden: bool = False, seed: int = DEFAULT_SEED) -> Plan:
    """Return the (cached) Plan of an exercise for public or graded checks and a seed."""
    key = (exercise.id, id(exercise), hidden, seed if hidden else None)
    with _plans_lock:
        found = _plans.get(key)
        if found is None or found.exercise is not exercise:
            if len(_plans) > 64:
                _plans.clear()
            found = _plans[key] = Plan(exercise, hidden, seed)
        return found


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


Runner = Callable[[Sequence[Case]], list[Outcome]]


def one_at_a_time(run: Callable[[Case], Outcome]) -> Runner:
    """Return run_many(cases) that calls ``run`` on each case, stopping after a stopping outcome."""

    def run_many(cases: Sequence[Case]) -> list[Outcome]:
        outcomes = []
        for case in cases:
            outcomes.append(run(case))
            if stops(outcomes[-1]):
                break
        return outcomes

    return run_many


def _shorten(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return text[: SHOWN_CHARS - 40] + f" ... ({len(text)} characters in all)"


def _judge_used(
    exercise: Exercise, used: dict[str, None], allow_lessonkit: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return (names that cost the points, names accepted) of the course answers used."""
    barred = tuple(
        name
        for name in used
        if not any(name == a or name.startswith(a + ".") for a in exercise.allowed)
    )
    return ((), barred) if allow_lessonkit else (barred, ())


def evaluate(
    exercise: Exercise,
    run: Callable[[Case], Outcome] | None = None,
    *,
    run_many: Runner | None = None,
    hidden: bool = False,
    seed: int = DEFAULT_SEED,
    call_limit_s: float = CALL_LIMIT_S,
    allow_lessonkit: bool = False,
    used: Sequence[str] = (),
) -> Report:
    """Return the Report of an exercise whose function ``run`` (or ``run_many``) calls on cases.

    Rules run in order; each fails at its first failing case. A first call that
    raises NotImplementedError means "not attempted yet". A call that times out
    or ends the process running it (Outcome.error_type "ChildGone") stops
    everything; the remaining rules are reported as not run and count as failed.

    A failing case with ``control`` arguments counts only when the control
    (the same input without the rule's feature) passes; otherwise the bug is
    another rule's, and the next case is tried. ``used`` adds course answers
    recorded outside the calls (a value exercise's cells).
    """
    if run_many is None:
        if run is None:
            raise TypeError("evaluate needs run(case) or run_many(cases)")
        run_many = one_at_a_time(run)
    checks = plan(exercise, hidden=hidden, seed=seed)
    touched: dict[str, None] = dict.fromkeys(used)
    findings: list[Finding] = []
    stopped = ""
    first_call = True
    for rule, cases in checks.rules:
        if stopped:
            findings.append(
                Finding(rule.name, False, rule.hidden, not_run=True, max_points=rule.points)
            )
            continue
        outcomes = run_many(cases) if cases else []
        for outcome in outcomes:
            touched.update(dict.fromkeys(outcome.used))
        if first_call and outcomes and outcomes[0].error_type == "NotImplementedError":
            return Report(
                exercise.id, exercise.title, exercise.points, not_attempted=True, graded=hidden
            )
        first_call = False
        finding, stopped = _judge_rule(
            exercise, checks, rule, cases, outcomes, run_many, call_limit_s, touched
        )
        findings.append(finding)
    barred, accepted = _judge_used(exercise, touched, allow_lessonkit)
    return Report(
        exercise.id,
        exercise.title,
        exercise.points,
        tuple(findings),
        stopped=stopped,
        graded=hidden,
        has_hidden=any(rule.hidden for rule in exercise.rules),
        kind=exercise.kind,
        integrity=barred,
        allowed_use=accepted,
        advice=exercise.own_work,
    )


def _judge_rule(
    exercise: Exercise,
    checks: Plan,
    rule: Rule,
    cases: list[Case],
    outcomes: list[Outcome],
    run_many: Runner,
    call_limit_s: float,
    touched: dict[str, None],
) -> tuple[Finding, str]:
    """Return the Finding of one rule from its outcomes, and why checking stops ("" if not)."""
    deferred: Finding | None = None  # the first failure whose control failed too
    judged = 0  # cases that passed or failed on the rule's own feature
    for checked, case in enumerate(cases, 1):
        if checked > len(outcomes):  # the runner stopped without saying why
            outcome = Outcome(error=PROCESS_ENDED, error_type="ChildGone")
        else:
            outcome = outcomes[checked - 1]
        problem = _problem(exercise, checks, case, outcome, call_limit_s)
        if problem is None:
            judged += 1
            continue
        expected_value, got_text = problem
        shown_input = _shorten(exercise.show_input(case))
        if case.note:
            shown_input += f"\n            ({case.note})"
        cause = _diagnosed(exercise, case, outcome)
        finding = Finding(
            rule.name,
            False,
            rule.hidden,
            checked,
            shown_input=shown_input,
            expected=_shorten(expected_value),
            got=_shorten(got_text),
            hint=exercise.hints.get(cause, rule.hint) if cause else rule.hint,
            max_points=rule.points,
            cause=cause or rule.cause,
        )
        if _control_fails(exercise, checks, case, outcome, run_many, call_limit_s, touched):
            deferred = deferred or finding
            continue
        if outcome.timed_out:
            return finding, f"{exercise.id} was stopped after {call_limit_s:g} s"
        if outcome.error_type == "ChildGone":
            return finding, f"{exercise.id} ended the process running it"
        return finding, ""
    if deferred is not None and not judged:
        # No case could be judged: the same input fails even without the feature.
        hint = rule.control_hint or deferred.hint
        return replace(deferred, hint=hint), ""
    return Finding(rule.name, True, rule.hidden, len(cases), max_points=rule.points), ""


def _diagnosed(exercise: Exercise, case: Case, outcome: Outcome) -> str | None:
    try:
        return exercise.diagnose(case, outcome)
    except Exception:  # a diagnosis is a bonus: never let it break the report
        return None


def _control_fails(
    exercise: Exercise,
    checks: Plan,
    case: Case,
    outcome: Outcome,
    run_many: Runner,
    call_limit_s: float,
    touched: dict[str, None],
) -> bool:
    """Return True when a failing case's control fails too (so the failure is not the rule's)."""
    if case.control is None or stops(outcome):
        return False
    control = checks.control(case)
    [control_outcome] = run_many([control])[:1] or [Outcome(error_type="ChildGone")]
    touched.update(dict.fromkeys(control_outcome.used))
    if stops(control_outcome):
        return False  # report the case itself; checking stops there anyway
    return _problem(exercise, checks, control, control_outcome, call_limit_s) is not None


def _problem(
    exercise: Exercise, checks: Plan, case: Case, outcome: Outcome, call_limit_s: float
) -> tuple[str, str] | None:
    """Return (expected, got) shown for a failing case, or None when the case passes."""
    expected = checks.expected(case)
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


def evaluate_value(
    exercise: Exercise,
    value: Any,
    *,
    hidden: bool = False,
    allow_lessonkit: bool = False,
    used: Sequence[str] = (),
) -> Report:
    """Return the Report of a "value" exercise (answers in a dict) from its JSON data.

    ``used``: course answers the cells that made the dict called (grading records them).
    """
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

    return evaluate(exercise, run, hidden=hidden, allow_lessonkit=allow_lessonkit, used=used)


def unanswered(value: Any) -> bool:
    """Return True for an answer still left as ``...`` (or None) in its JSON form."""
    return value is None or (isinstance(value, dict) and value.get("__type__") == "ellipsis")
