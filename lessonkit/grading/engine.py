"""Learner function versus reference, over many inputs: ``evaluate(exercise, calls, mode) -> Report``.

* **An exercise is a small class of data.** A subclass of ``Exercise`` gives
  its id, title, ``reference(case)`` and ``make_rules()``: ``Rule`` objects,
  each one behaviour in words ("a character split across chunks survives"),
  its points, a hint, the mistake it is about (``cause``) and its inputs
  (``Case``). It may override how a result is compared (``same``), checked
  for shape (``shape``: "must return a tuple") and shown (``show_input``,
  ``show_value``), and name the mistake behind a failure (``diagnose``). The
  checking is written once, here. ``Answers`` is the kind of exercise whose
  learner fills in a dict instead of writing a function. Reference answers
  are computed, never stored.
* **An outcome is a type.** How one call ended: ``Returned`` (a value),
  ``Raised`` (an exception; ``NotWritten`` for the stub's
  NotImplementedError), ``TimedOut`` or ``Ended`` (the process running it
  ended). The last two stop checking. ``outcome_of(reply)`` reads one from
  the reply a call gives (``codec.call_reply``).
* **Points.** A rule earns its points only when every one of its cases passes;
  an exercise's points are the sum of its rules' points.
* **Public vs hidden.** ``Rule(hidden=True)`` runs only at grading
  (``Mode(hidden=True)``); its inputs are drawn from the grading seed, and its
  feedback names the rule and what came back, never the input. What the public
  rules say, as ``check()`` shows it, is ``Report.public_result()``: the line of
  the progress record and of a hand-in's manifest.
* **Shrinking.** No search: each rule's cases are sorted by ``Case.size``
  (bytes, then chunks) and a rule fails at its first failing case. A case may
  carry ``control`` arguments (the same input without the rule's feature): a
  failure counts for the rule only when the control passes.
* **Which bug.** ``Exercise.diagnose(case, outcome)`` names the mistake behind
  a failure (a ``cause``); its hint is the one shown. The failure shown in full
  (``Report.shown``) is the learner's root bug: the cause of the first failing
  rule, shown on the smallest input of any rule that failed for that cause. A
  call that never returned gets the hint about loops, a wrong type the hint
  about the type.
* **The course's own answer.** Each outcome lists the course answers the call
  ran into (``Outcome.used``, recorded by ``lessonkit.grading.integrity``);
  those the exercise does not allow make the score 0 (``Mode.allow_lessonkit``
  accepts them).

The caller hands ``evaluate`` a ``Calls`` function, ``calls(cases) ->
[Outcome]`` (one round trip per rule; it may stop early after an outcome that
stops). This module never runs learner code under a time limit itself:
``lessonkit.grading.timed_calls`` does for ``check``, the sandboxed child for
``lessonkit grade``. Pure: no clocks, sockets or processes.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, NamedTuple

from lessonkit.grading.codec import SHOWN_CHARS, encode_args, show_plain, to_jsonable

CALL_LIMIT_S = 3.0  # one call of the learner's function
DEFAULT_SEED = 0  # hidden inputs when no seed is given (tests); `lessonkit grade` draws its own
PROCESS_ENDED = "your function ended the process running it (sys.exit / os._exit?)"
LOOP_HINT = (
    "Your function did not return: look for a loop that never ends -- a `while` whose "
    "condition never changes, or a buffer that never gets shorter (the cut of an event "
    "must remove it from the buffer)."
)


# ---------------------------------------------------------------------------
# How one call ended


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one call of the learner's function did; the subclasses say how it ended."""

    requests: tuple | None = None  # resume: the Last-Event-ID of each fetch call
    used: tuple[str, ...] = ()  # course answers the call ran into (lessonkit.grading.integrity)
    stops: ClassVar[bool] = False  # True: no further call can run (checking stops)


@dataclass(frozen=True, kw_only=True)
class Returned(Outcome):
    """The call returned ``value`` (in its JSON form)."""

    value: Any = None


@dataclass(frozen=True, kw_only=True)
class Raised(Outcome):
    """The call raised an exception of type ``error_type``."""

    error_type: str
    message: str = ""
    where: str | None = None  # the learner's line that raised, when known
    detail: str | None = None  # JSONDecodeError: the start of the text it could not parse

    @property
    def error(self) -> str:
        """Return "TypeError: message" (the type alone when the message is empty)."""
        return f"{self.error_type}: {self.message}" if self.message else self.error_type


@dataclass(frozen=True, kw_only=True)
class NotWritten(Raised):
    """The call raised NotImplementedError: the stub is still there."""

    error_type: str = "NotImplementedError"


@dataclass(frozen=True, kw_only=True)
class TimedOut(Outcome):
    """The call gave no answer within its time limit (and was stopped), or never started:
    ``budget`` says why when the notebook's whole time ran out first."""

    budget: str = ""
    stops: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class Ended(Outcome):
    """The process running the call ended (sys.exit, os._exit, a crash)."""

    reason: str = PROCESS_ENDED
    stops: ClassVar[bool] = True


def raised(error_type: str, message: str = "", **more: Any) -> Raised:
    """Return the Raised outcome of an exception named ``error_type`` (NotWritten for the stub)."""
    kind = NotWritten if error_type == "NotImplementedError" else Raised
    return kind(error_type=error_type, message=message, **more)


def outcome_of(reply: dict | None, requests: tuple | None = None) -> Outcome:
    """Return the Outcome a reply of ``codec.call_reply`` stands for (None: no reply in time).

    ``requests``: the Last-Event-IDs a served fetch recorded during the call.
    """
    if reply is None:
        return TimedOut(requests=requests)
    listed = reply.get("used")
    used = tuple(str(u)[:200] for u in listed[:20]) if isinstance(listed, list) else ()
    op = reply.get("op")
    if op == "result":
        return Returned(value=reply.get("value"), requests=requests, used=used)
    if op == "timeout":
        return TimedOut(requests=requests, used=used)
    if op == "exited":
        return Ended(requests=requests, used=used)
    if op == "raised":
        where, detail = reply.get("where"), reply.get("detail")
        return raised(
            str(reply.get("type", "Exception")),
            str(reply.get("message", "")),
            where=str(where) if where else None,
            detail=str(detail) if detail is not None else None,
            requests=requests,
            used=used,
        )
    return Ended(reason="the process running the code sent an unexpected reply", requests=requests)


# ---------------------------------------------------------------------------
# An exercise as data


@dataclass(frozen=True)
class Case:
    """One input for the learner's function, under one rule."""

    rule: str
    args: tuple
    size: tuple = ()  # sort key: smaller cases run first
    control: tuple | None = None  # the same input without the rule's feature (see evaluate)
    note: str = ""  # what the input is, in words, shown under it ("... without message_stop")


@dataclass(frozen=True)
class Rule:
    """A behaviour the exercise asks for, its points, and the cases that check it.

    ``cases()`` builds the inputs of a public rule; a hidden rule's
    ``cases(seed)`` draws them from the grading seed. ``cause`` names the
    mistake the rule is about ("decode", "while", ...). ``extends`` (hidden
    rules) names the public rule whose kind of input it tests more of.
    """

    name: str
    hint: str
    cases: Callable[..., Iterable[Case]] = field(repr=False)
    hidden: bool = False
    control_hint: str = ""  # shown when every failing case's control failed too
    points: float = 1.0
    cause: str = ""
    extends: str = ""

    def draw(self, seed: int = DEFAULT_SEED) -> list[Case]:
        """Return this rule's cases; a hidden rule draws them from ``seed``."""
        return list(self.cases(seed) if self.hidden else self.cases())


class Exercise:
    """A graded function: subclass it with data; the checking is the same for every exercise.

    A subclass sets ``id`` and ``title`` and defines ``reference(case)`` and
    ``make_rules()``; the rest has defaults. Its points are the sum of its
    rules' points. ``extra_hints`` are hints for causes no rule is about;
    ``allowed`` is what from lessonkit the function may call (module
    prefixes such as "lessonkit.sse"), ``own_work`` what to write instead of
    the course's answer ("reader", "timing formula").
    """

    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    shape_hint: ClassVar[str] = ""  # the hint for a result of the wrong type ("": the rule's)
    extra_hints: ClassVar[Mapping[str, str]] = {}
    allowed: ClassVar[tuple[str, ...]] = ()
    own_work: ClassVar[str] = "code"
    asks_for: ClassVar[str] = "function"  # what the notebook must define under the id
    uses_words: ClassVar[str] = "your function calls it"

    def __init__(self) -> None:
        self.rules: tuple[Rule, ...] = tuple(self.make_rules())
        self.points: float = sum(rule.points for rule in self.rules)

    def make_rules(self) -> Iterable[Rule]:
        """Return the rules, public first (from the lesson's core to its edges), then hidden."""
        raise NotImplementedError

    def reference(self, case: Case) -> Any:
        """Return the right answer for ``case``."""
        raise NotImplementedError

    def shape(self, got: Any) -> str | None:
        """Return what is wrong with the type of a result (in its JSON form), or None."""
        return None

    def same(self, case: Case, expected: Any, got: Any) -> bool:
        """Return True when ``got`` is the right answer (both in their JSON form)."""
        return expected == got

    def show_input(self, case: Case) -> str:
        """Return the input of ``case`` as the feedback shows it."""
        return repr(case.args)

    def show_value(self, value: Any) -> str:
        """Return a result (in its JSON form) as the feedback shows it."""
        return show_plain(value)

    def got_of(self, outcome: Outcome) -> Any:
        """Return what a call gave, as ``same`` compares it."""
        return getattr(outcome, "value", None)

    def diagnose(
        self, case: Case, outcome: Outcome, more: Sequence[tuple[Case, Outcome]] = ()
    ) -> str | None:
        """Return the mistake behind a failure, read from what came back (a key of ``hints``).

        ``more``: the rule's other cases and their outcomes, to tell apart two
        mistakes that give the same answer on the failing case.
        """
        return None

    @property
    def hints(self) -> dict[str, str]:
        """Return cause -> hint: each rule's hint under its cause, plus the extra ones."""
        return {rule.cause: rule.hint for rule in self.rules if rule.cause} | dict(self.extra_hints)

    @property
    def has_hidden(self) -> bool:
        """Return True when some rules run only at grading."""
        return any(rule.hidden for rule in self.rules)


class Answers(Exercise):
    """An exercise whose learner fills in a dict of answers; each case's args are (key,)."""

    asks_for: ClassVar[str] = "dict"
    uses_words: ClassVar[str] = "your answers come from it"


# ---------------------------------------------------------------------------
# Verdicts


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
    cause: str = ""  # the mistake behind the failure: diagnosed, else the rule's own
    diagnosed: bool = False  # True when `cause` was read from what came back
    size: tuple = ()  # the failing case's size (to find the smallest input of a mistake)
    about: str = ""  # the mistake the rule itself is about (Rule.cause)

    @property
    def points(self) -> float:
        """Return the points earned: all of the rule's when it passed, else none."""
        return self.max_points if self.passed else 0.0


@dataclass(frozen=True)
class Report:
    """The verdict on one exercise: findings per rule, score, and what it used."""

    exercise: Exercise
    findings: tuple[Finding, ...] = ()
    not_attempted: bool = False
    problem: str = ""  # why the function could not be checked at all ("not found", ...)
    stopped: str = ""  # why checking stopped early (a call that never returned)
    graded: bool = False  # True when hidden rules ran too
    integrity: tuple[str, ...] = ()  # course answers used that the exercise does not allow
    held: tuple[tuple[str, str], ...] = ()  # (answer, what the function holds of it), not calls
    allowed_use: tuple[str, ...] = ()  # ... used, but accepted (allow_lessonkit)
    raised: tuple[str, ...] = ()  # the exception types the calls raised (MemoryError...)

    @property
    def id(self) -> str:
        """Return the exercise id."""
        return self.exercise.id

    @property
    def points(self) -> float:
        """Return the exercise's points."""
        return self.exercise.points

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

    @property
    def failed(self) -> list[Finding]:
        """Return the rules that ran and failed, in rule order."""
        return [f for f in self.findings if not f.passed and not f.not_run]

    @property
    def shown(self) -> Finding | None:
        """Return the failure shown in full: the root bug on the smallest input that shows it.

        The root bug is the mistake behind the first failing rule (rules go from
        the lesson's core to its edges). Of the rules that failed for that same
        mistake, the rule about it is shown when it failed, else the one with
        the smallest failing input (a hidden rule only when no public one did).
        For answers each question is its own.
        """
        failed = self.failed
        if not failed:
            return None
        first = failed[0]
        if isinstance(self.exercise, Answers) or not first.cause:
            return first
        same = [f for f in failed if f.cause == first.cause]
        public = [f for f in same if not f.hidden] or same
        about = [f for f in public if f.about == first.cause]
        return about[0] if about else min(public, key=lambda f: f.size)

    def public_result(self) -> dict[str, Any]:
        """Return what the public rules say, as ``check()`` shows it (hidden ones left out).

        ``{"state": "passed" | "failing" | "not started", "checks_passed": 5, "checks": 8,
        "points": 18, "max_points": 30, "missing": "..."}``: the public rules passed of
        those the exercise has, their points of the exercise's (hidden rules' included, as
        ``check()`` says them), and ``missing``, what still fails in words ("" when passed).
        """
        public = [f for f in self.findings if not f.hidden]
        failing = [f.rule for f in public if not f.passed]
        if self.not_attempted:
            state, missing = "not started", f"{self.id} is not written yet"
        elif public and not failing and not self.integrity:
            state, missing = "passed", ""
        elif self.integrity:
            state, missing = "failing", "it hands its work to the course's own answer"
        else:  # why checking stopped (a loop), then the first rules that fail
            more = f"{len(failing) - 3} more" if len(failing) > 3 else ""
            named = [self.stopped, *failing[:3], more]
            state, missing = "failing", self.problem or "; ".join(n for n in named if n)
        return {
            "state": state,
            "checks_passed": len(public) - len(failing),
            "checks": sum(not rule.hidden for rule in self.exercise.rules),
            "points": 0.0 if self.integrity else round(sum(f.points for f in public), 2),
            "max_points": self.points,
            "missing": missing,
        }


def not_found(exercise: Exercise) -> Report:
    """Return the Report of a notebook that defines nothing under the exercise's id."""
    return Report(exercise, problem=f"no {exercise.asks_for} named {exercise.id} in the notebook")


# ---------------------------------------------------------------------------
# Cases, reference answers and encoded arguments, built once per plan


@dataclass(frozen=True)
class Mode:
    """How an exercise is evaluated: public or graded, the seed, the limit, what is accepted."""

    hidden: bool = False  # True at grading: hidden rules run too
    seed: int = DEFAULT_SEED  # draws the hidden rules' inputs
    limit_s: float = CALL_LIMIT_S  # one call of the learner's function
    allow_lessonkit: bool = False  # accept calls into the course's own answers


class Plan:
    """The sorted cases of each due rule of one exercise, their references and encodings.

    Built once and shared: ``lessonkit grade`` uses one plan per exercise for
    the whole class. What it derives from a case is computed on first use and
    kept with the case (so a case's id, the key, stays its own).
    """

    def __init__(self, exercise: Exercise, mode: Mode = Mode()) -> None:
        self.exercise = exercise
        self.rules = [
            (rule, sorted(rule.draw(mode.seed), key=lambda case: case.size))
            for rule in exercise.rules
            if mode.hidden or not rule.hidden
        ]
        self._known: dict[tuple[str, int], tuple[Case, Any]] = {}

    def _once(self, what: str, case: Case, make: Callable[[Case], Any]) -> Any:
        known = self._known.get((what, id(case)))
        if known is None or known[0] is not case:
            known = self._known[what, id(case)] = (case, make(case))
        return known[1]

    def control(self, case: Case) -> Case:
        """Return the control case of ``case`` (built once, so its answer is computed once)."""
        return self._once("control", case, lambda c: Case(c.rule, c.control, c.size))

    def expected(self, case: Case) -> Any:
        """Return the reference answer of ``case`` in its JSON form (computed once)."""
        return self._once("expected", case, lambda c: to_jsonable(self.exercise.reference(c)))

    def encoded(self, case: Case) -> str:
        """Return the JSON text of the case's arguments, as sent to another process (once)."""
        return self._once("encoded", case, lambda c: json.dumps(encode_args(c.args)))


Calls = Callable[[Sequence[Case]], list[Outcome]]


# ---------------------------------------------------------------------------
# Evaluation


def evaluate(
    exercise: Exercise,
    calls: Calls,
    mode: Mode = Mode(),
    *,
    plan: Plan | None = None,
    used: Sequence[str] | Mapping[str, str] = (),
) -> Report:
    """Return the Report of an exercise whose function ``calls`` runs on cases.

    Rules run in order; each fails at its first failing case. A first call that
    is NotWritten means "not attempted yet". A call that times out or ends its
    process stops everything; the remaining rules are reported as not run.
    ``used`` adds course answers found outside the calls: names, or {name: what
    the function holds of it} (``integrity.copies``: a pasted copy, held data).
    """
    plan = plan or Plan(exercise, mode)
    findings: list[Finding] = []
    seen: list[Outcome] = []
    stop = ""
    for rule, cases in plan.rules:
        if stop:
            findings.append(
                Finding(rule.name, False, rule.hidden, not_run=True, max_points=rule.points)
            )
            continue
        finding, outcomes, stop = _judge_rule(plan, calls, mode, rule, cases)
        if not seen and outcomes and isinstance(outcomes[0], NotWritten):
            return Report(exercise, not_attempted=True, graded=mode.hidden)
        seen += outcomes
        findings.append(finding)
    names = dict.fromkeys([*used, *(name for o in seen for name in o.used)])
    barred = tuple(name for name in names if not _allowed(exercise, name))
    held = used if isinstance(used, Mapping) else {}
    return Report(
        exercise,
        tuple(findings),
        stopped=stop,
        graded=mode.hidden,
        integrity=() if mode.allow_lessonkit else barred,
        held=tuple((name, held[name]) for name in barred if name in held),
        allowed_use=barred if mode.allow_lessonkit else (),
        raised=tuple(sorted({o.error_type for o in seen if isinstance(o, Raised)})),
    )


def _allowed(exercise: Exercise, name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in exercise.allowed)


def _judge_rule(
    plan: Plan, calls: Calls, mode: Mode, rule: Rule, cases: list[Case]
) -> tuple[Finding, list[Outcome], str]:
    """Return the finding on one rule, every outcome seen, and why checking stops ("" if not).

    The rule's cases go in one round trip; a failing case with a control is
    called again without the rule's feature.
    """
    outcomes = list(calls(cases)) if cases else []
    seen = list(outcomes)
    deferred: Finding | None = None  # the first failure whose control failed too
    judged = 0  # cases that passed or failed on the rule's own feature
    for checked, case in enumerate(cases, 1):
        outcome = outcomes[checked - 1] if checked <= len(outcomes) else Ended()
        problem = _problem(plan, mode, case, outcome)
        if problem is None:
            judged += 1
            continue
        more = list(zip(cases, outcomes, strict=False))
        finding = _failure(plan.exercise, rule, case, outcome, problem, checked, more)
        if case.control is not None and not outcome.stops:
            control = plan.control(case)
            [control_outcome] = calls([control])[:1] or [Ended()]
            seen.append(control_outcome)
            if not control_outcome.stops and _problem(plan, mode, control, control_outcome):
                deferred = deferred or finding
                continue
        return finding, seen, _stop_text(plan.exercise, mode, problem)
    if deferred is not None and not judged:
        # No case could be judged: the same input fails even without the feature.
        return replace(deferred, hint=rule.control_hint or deferred.hint), seen, ""
    return Finding(rule.name, True, rule.hidden, len(cases), max_points=rule.points), seen, ""


def _stop_text(exercise: Exercise, mode: Mode, problem: _Problem) -> str:
    """Return why checking stops after a failing case (the notebook's time, a loop, an exit)."""
    if problem.kind is Wrong.BUDGET:
        return problem.got  # the budget's own words
    if problem.kind is Wrong.LOOP:
        return f"{exercise.id} was stopped after {mode.limit_s:g} s"
    return f"{exercise.id} ended the process running it" if problem.kind is Wrong.ENDED else ""


class Wrong(enum.Enum):
    """What was wrong with a failing case's outcome (it picks the hint)."""

    VALUE = "a wrong value or an exception (the diagnosis reads those)"
    SHAPE = "a value of the wrong type or shape"
    LOOP = "no answer in time"
    BUDGET = "over the step budget (the browser kernel's limit)"
    ENDED = "the function ended the process running it"


class _Problem(NamedTuple):
    """What a failing case shows: the expected and the got text, and what was wrong."""

    expected: str
    got: str
    kind: Wrong


HINT_FOR = {
    Wrong.LOOP: LOOP_HINT,
    Wrong.BUDGET: "Your function is slow: does it copy the whole buffer again for every chunk?",
    Wrong.ENDED: "Remove sys.exit(), exit() or os._exit() from your function: return instead.",
}


def _failure(
    exercise: Exercise,
    rule: Rule,
    case: Case,
    outcome: Outcome,
    problem: _Problem,
    checked: int,
    more: Sequence[tuple[Case, Outcome]],
) -> Finding:
    """Return the Finding of a failing case: its input, expected, got and the hint it calls for."""
    shown_input = _shorten(exercise.show_input(case))
    if case.note:
        shown_input += f"\n            ({case.note})"
    diagnosed = None
    if problem.kind is Wrong.VALUE:
        try:
            diagnosed = exercise.diagnose(case, outcome, more)
        except Exception:  # a diagnosis is a bonus: never let it break the report
            pass
    if problem.kind is Wrong.SHAPE:
        hint = exercise.shape_hint or rule.hint
    elif diagnosed:
        hint = exercise.hints.get(diagnosed, rule.hint)
    else:
        hint = HINT_FOR.get(problem.kind, rule.hint)
    return Finding(
        rule.name,
        False,
        rule.hidden,
        checked,
        shown_input=shown_input,
        expected=_shorten(problem.expected),
        got=_shorten(problem.got),
        hint=hint,
        max_points=rule.points,
        cause=diagnosed or ("loop" if problem.kind is Wrong.LOOP else rule.cause),
        diagnosed=diagnosed is not None,
        size=case.size,
        about=rule.cause,
    )


def _problem(plan: Plan, mode: Mode, case: Case, outcome: Outcome) -> _Problem | None:
    """Return what a failing case shows, or None if it passes."""
    exercise = plan.exercise
    expected = exercise.show_value(plan.expected(case))
    if isinstance(outcome, TimedOut) and outcome.budget:
        return _Problem(expected, outcome.budget, Wrong.BUDGET)
    if isinstance(outcome, TimedOut):
        limit = f"{mode.limit_s:g} s"
        return _Problem(expected, f"no answer within {limit} (an endless loop?)", Wrong.LOOP)
    if isinstance(outcome, Ended):
        return _Problem(expected, outcome.reason, Wrong.ENDED)
    if isinstance(outcome, Raised):
        where = f"\n            at: {outcome.where}" if outcome.where else ""
        return _Problem(expected, f"raised {outcome.error}{where}", Wrong.VALUE)
    got = exercise.got_of(outcome)
    shape = exercise.shape(got)
    if shape is not None:
        return _Problem(expected, shape, Wrong.SHAPE)
    if exercise.same(case, plan.expected(case), got):
        return None
    return _Problem(expected, exercise.show_value(got), Wrong.VALUE)


def _shorten(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return text[: SHOWN_CHARS - 40] + f" ... ({len(text)} characters in all)"


def evaluate_answers(
    exercise: Exercise,
    value: Any,
    mode: Mode = Mode(),
    *,
    used: Sequence[str] | Mapping[str, str] = (),
) -> Report:
    """Return the Report of an ``Answers`` exercise from its dict in JSON form.

    ``used``: course answers the dict came from (``integrity.copies`` of it, or
    the calls its cells made).
    """
    if not isinstance(value, dict) or "__repr__" in value:
        kind = value["__type__"] if isinstance(value, dict) else type(value).__name__
        kind = "list or tuple" if kind == "list" else kind
        return Report(
            exercise, problem=f"expected a dict of answers, got a {kind}", graded=mode.hidden
        )
    if all(unanswered(v) for v in value.values()):
        return Report(exercise, not_attempted=True, graded=mode.hidden)

    def calls(cases: Sequence[Case]) -> list[Outcome]:
        return [Returned(value=value.get(case.args[0], {"__missing__": True})) for case in cases]

    return evaluate(exercise, calls, mode, used=used)


def unanswered(value: Any) -> bool:
    """Return True for an answer still left as ``...`` (or None) in its JSON form."""
    return value is None or (isinstance(value, dict) and value.get("__type__") == "ellipsis")
