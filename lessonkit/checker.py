"""Learner function versus reference, over many inputs: ``evaluate(...) -> Report``.

A map of this file (about 1,500 lines; search for the ``# ---`` banners):

* **How an exercise is defined.** An ``Exercise`` (id, title, points) is a
  tuple of ``Rule`` objects plus a reference function and a few small
  functions that say how a result is compared (``same``), checked for shape
  (``shape``: "must return a tuple") and shown (``show_input``,
  ``show_value``). A ``Rule`` is one behaviour in words ("a character split
  across chunks survives"), a hint, and ``cases()``: the inputs (``Case``)
  that test it. The reference answer of every case is computed here, from the
  course library (``lessonkit.exercises_ref``), never stored.
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
* **Where each exercise's rules are** (banners below, in this order):
  ``_response_times_rules`` (exercise 1), ``_read_stream_rules`` (2),
  ``_read_anthropic_rules`` (4), ``_resume_rules`` (5), ``_parse_sse_rules``
  (6, with the conformance cases and their hints in ``data/sse_cases.json``),
  ``_now_change_it_exercise`` (3, a dict of answers instead of a function),
  and ``_build``, the registry that ties ids, points and rules together.
* **Running and reporting.** ``evaluate`` walks the rules and returns a
  ``Report``; ``Report.text`` and ``_finding_lines`` write the feedback.

This module is pure: it never runs learner code itself with a time limit. The
caller passes ``run(case) -> Outcome`` -- ``lessonkit.grading`` runs the
learner's function in a forked process from the notebook, ``lessonkit.grade``
in a fresh interpreter -- and the reference answers are computed here, in the
caller's own process.

Values cross a process boundary as JSON (``to_jsonable``): bytes as
``{"__bytes__": base64}``, tuples as lists, anything else as its repr.
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from lessonkit import exercises_ref as ref
from lessonkit.core import llm, network, sse
from lessonkit.core.dialects import interpret
from lessonkit.core.practice import PRACTICE_TOKENS, practice_reader, practice_wire

__all__ = [
    "EXERCISES",
    "Case",
    "Exercise",
    "FakeFetch",
    "FetchScript",
    "Finding",
    "Outcome",
    "Report",
    "call_in_process",
    "decode_args",
    "encode_args",
    "evaluate",
    "from_jsonable",
    "to_jsonable",
]

_LIBRARY = os.path.dirname(os.path.abspath(__file__))
_STDLIB = os.path.dirname(os.path.abspath(traceback.__file__))
SHOWN_CHARS = 600  # longest input or value quoted in feedback
MAX_FETCHES = 20  # a resume loop that asks more often than this is stopped


# ---------------------------------------------------------------------------
# Values across a process boundary


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Return ``value`` as plain JSON data: tuples become lists, bytes a base64 object."""
    if _depth > 30:
        return {"__repr__": "...(nested too deep)", "__type__": type(value).__name__}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item, _depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item, _depth + 1) for key, item in value.items()}
    try:
        shown = repr(value)
    except Exception as exc:  # a learner's object whose repr breaks
        shown = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return {"__repr__": shown[:SHOWN_CHARS], "__type__": type(value).__name__}


def materialize(value: Any) -> Any:
    """Return a list for a generator or iterator result (``yield`` is a fine way to write it)."""
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict)):
        return value
    if hasattr(value, "__next__") and hasattr(value, "__iter__"):
        return list(value)
    return value


def from_jsonable(value: Any) -> Any:
    """Return ``value`` with base64 objects turned back into bytes (lists stay lists)."""
    if isinstance(value, list):
        return [from_jsonable(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {key: from_jsonable(item) for key, item in value.items()}
    return value


def encode_args(args: Sequence[Any]) -> list[Any]:
    """Return call arguments as JSON data; a FetchScript becomes a placeholder the child fills."""
    return [
        {"__fetch__": 1} if isinstance(a, (FetchScript, FakeFetch)) else to_jsonable(a)
        for a in args
    ]


def decode_args(args: Sequence[Any], fetch: Callable[..., Any] | None = None) -> list[Any]:
    """Return the arguments ``encode_args`` sent, with ``fetch`` in place of the placeholder."""
    out = []
    for arg in args:
        if isinstance(arg, dict) and set(arg) == {"__fetch__"}:
            out.append(fetch)
        else:
            out.append(from_jsonable(arg))
    return out


# ---------------------------------------------------------------------------
# Data types


@dataclass(frozen=True)
class FetchScript:
    """A scripted server for the resume exercise: connection i drops after ``drops[i]`` bytes.

    Connections past the end of ``drops`` (or with ``None``) deliver the whole
    rest of the answer. Each connection's bytes are cut at seeded random points.
    """

    tokens: tuple[str, ...]
    drops: tuple[int | None, ...] = ()
    seed: int = 0
    heartbeat_ms: float | None = None

    def wire(self, last_event_id: str | None) -> bytes:
        """Return what the server would send for a request with this Last-Event-ID."""
        answer = llm.Answer(self.tokens, "stop")
        resume_after = last_event_id if last_event_id not in (None, "") else None
        return llm.wire_bytes(
            answer,
            "eventsource",
            resume_after_id=resume_after,
            heartbeat_ms=self.heartbeat_ms,
            prefill_ms=300,
            per_token_ms=40,
        )

    def respond(self, attempt: int, last_event_id: str | None) -> list[bytes]:
        """Return the chunks of connection number ``attempt`` (0 first)."""
        data = self.wire(last_event_id)
        if attempt < len(self.drops) and self.drops[attempt] is not None:
            data = network.drop_after(data, self.drops[attempt])
        return network.random_cuts(data, seed=self.seed * 101 + attempt, max_piece_bytes=24)

    def describe(self) -> str:
        """Return the call that replays this script in a notebook, and the answer in words.

        ``resume(practice_fetch(drops=[72], tokens=(...), seed=2))`` serves exactly
        the same chunks as the check did.
        """
        args = [f"drops={list(self.drops)!r}", f"tokens={self.tokens!r}", f"seed={self.seed}"]
        if self.heartbeat_ms:
            args.append(f"heartbeat_ms={self.heartbeat_ms:g}")
        drops = [
            f"connection {i} {'does not drop' if d is None else f'drops after {d} bytes'}"
            for i, d in enumerate(self.drops, 1)
        ]
        drops.append("later ones bring the rest" if drops else "no connection drops")
        return (
            f"resume(practice_fetch({', '.join(args)}))\n"
            f"            (answer {''.join(self.tokens)!r}; {', '.join(drops)})"
        )


class FakeFetch:
    """``fetch(last_event_id) -> chunks`` served from a FetchScript; records each request."""

    def __init__(self, script: FetchScript) -> None:
        self.script = script
        self.requests: list[str | None] = []

    def __call__(self, last_event_id: str | None = None) -> list[bytes]:
        if last_event_id is not None and not isinstance(last_event_id, str):
            last_event_id = str(last_event_id)
        self.requests.append(last_event_id)
        if len(self.requests) > MAX_FETCHES:
            raise RuntimeError(
                f"fetch was called more than {MAX_FETCHES} times; stop after the done event"
            )
        return self.script.respond(len(self.requests) - 1, last_event_id)


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
        head = _headline(self)
        lines = [head]
        if self.problem:
            return "\n".join(lines)
        failed = [f for f in self.findings if not f.passed and not f.not_run]
        if failed:
            lines.append("")
            lines += _finding_lines(failed[0])
        if len(failed) > 1:
            lines.append("")
            lines.append(ALSO_FAILING)
            lines += [f"  - {_tag(f)}{f.rule}" for f in failed[1:]]
        not_run = [f for f in self.findings if f.not_run]
        if not_run:
            lines.append("")
            lines.append(f"not run ({self.stopped or 'checking stopped'}):")
            lines += [f"  - {f.rule}" for f in not_run]
        passed = [f for f in self.findings if f.passed]
        if passed:
            lines.append("")
            for finding in passed:
                tag = "[hidden] " if finding.hidden else ""
                lines.append(f"ok  {tag}{finding.rule} ({_count(finding.checked, 'input')})")
        return "\n".join(lines)


ALSO_FAILING = "also failing (fix the one above first: these often share its cause):"


def _tag(finding: Finding) -> str:
    return "[hidden] " if finding.hidden else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _headline(report: Report) -> str:
    name = report.exercise
    if report.problem:
        return f"{name}: {report.problem}"
    if report.not_attempted and report.graded:
        what = (
            "every answer is still `...`"
            if report.kind == "value"
            else "the stub still raises NotImplementedError"
        )
        return f"{name}: not attempted yet -- {what}; 0 of {report.points:g} points."
    if report.not_attempted and report.kind == "value":
        return (
            f"{name}: not attempted yet -- replace each `...` with your answer, run those "
            "cells, then run this check again."
        )
    if report.not_attempted:
        return (
            f"{name}: not attempted yet -- replace the `raise NotImplementedError(...)` "
            "line with your code, run that cell, then run this check again."
        )
    score = f"{report.score:g} of {report.points:g} points"
    ok, total = report.passed_rules, report.total_rules
    if report.graded:
        return f"{name}: checks {ok}/{total} pass (public and hidden) -- {score}."
    more = (
        "More checks run at grading, so this is not your final score."
        if report.has_hidden
        else "Grading runs the same checks."
    )
    if ok == total:
        return f"{name}: public checks {ok}/{total} pass -- {score}. {more}"
    return f"{name}: public checks {ok}/{total} pass -- {score} so far. {more}"


def _finding_lines(finding: Finding) -> list[str]:
    tag = "[hidden] " if finding.hidden else ""
    lines = [f"FAILED  {tag}{finding.rule}"]
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

    def public_rules(self) -> tuple[Rule, ...]:
        """Return the rules a learner's check runs."""
        return tuple(rule for rule in self.rules if not rule.hidden)


# ---------------------------------------------------------------------------
# Evaluation


def call_in_process(fn: Callable[..., Any], case: Case) -> Outcome:
    """Return the Outcome of ``fn(*case.args)`` here, with no time limit (tests, fork child)."""
    fetch = None
    args = list(case.args)
    for i, arg in enumerate(args):
        if isinstance(arg, FetchScript):
            fetch = FakeFetch(arg)
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


def error_detail(exc: BaseException) -> str | None:
    """Return the start of the text a JSONDecodeError could not parse (None for other errors)."""
    doc = getattr(exc, "doc", None)
    if isinstance(exc, ValueError) and isinstance(doc, str):
        return doc[:200]
    return None


def learner_line(tb: Any) -> str | None:
    """Return "line N: source" of the innermost traceback frame in the learner's code."""
    where = None
    for frame in traceback.extract_tb(tb):
        name = os.path.abspath(frame.filename) if not frame.filename.startswith("<") else ""
        if name.startswith(_LIBRARY) or name.startswith(_STDLIB):
            continue
        where = (
            f"line {frame.lineno}: {frame.line.strip()}" if frame.line else f"line {frame.lineno}"
        )
    return where


def _shorten(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return text[: SHOWN_CHARS - 40] + f" ... ({len(text)} characters in all)"


def evaluate(
    exercise: Exercise,
    run: Callable[[Case], Outcome],
    *,
    hidden: bool = False,
    call_limit_s: float = 3.0,
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


PROCESS_ENDED = "your function ended the process running it (sys.exit / os._exit?)"


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
            problem=f"expected a dict of answers, got {_type_name(value)}",
            graded=hidden,
        )
    if all(_unanswered(v) for v in value.values()):
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


def _unanswered(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and value.get("__type__") == "ellipsis")


def _type_name(value: Any) -> str:
    if isinstance(value, dict) and "__type__" in value:
        return f"a {value['__type__']}"
    if isinstance(value, list):
        return "a list or tuple"
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------------
# Showing inputs and values


def _show_chunks(chunks: Sequence[bytes]) -> str:
    """Return ``chunks = [...]``; a long list keeps its head and its tail (where streams end)."""
    total = sum(len(c) for c in chunks)
    text = f"chunks = {list(chunks)!r}"
    if len(text) > SHOWN_CHARS:
        middle = f" ... ({len(chunks)} chunks, {total} bytes in all; the middle left out) ... "
        keep = (SHOWN_CHARS - 40 - len(middle)) // 2
        text = text[:keep] + middle + text[-keep:]
    return text


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _show_plain(value: Any) -> str:
    if isinstance(value, dict) and value.get("__type__") == "answer":
        return value["__repr__"]
    if isinstance(value, dict) and "__repr__" in value:
        return f"{value['__repr__']} (a {value.get('__type__', 'object')})"
    return repr(from_jsonable(value))


def _show_tuple(value: Any) -> str:
    return _show_plain(_as_tuple(value)) if isinstance(value, list) else _show_plain(value)


def _show_events(value: Any) -> str:
    if isinstance(value, list):
        return repr([tuple(v) if isinstance(v, list) else from_jsonable(v) for v in value])
    return _show_plain(value)


def _tuple_shape(name: str, parts: Sequence[tuple[str, tuple[type, ...]]]) -> Callable:
    names = ", ".join(p for p, _ in parts)

    def shape(got: Any) -> str | None:
        if not isinstance(got, list) or len(got) != len(parts):
            return f"{_show_plain(got)} -- {name} must return a tuple ({names})"
        for (part, kinds), value in zip(parts, got, strict=True):
            if not isinstance(value, kinds):
                wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
                return f"{_show_tuple(got)} -- {part} should be a {wanted}, got {_type_name(value)}"
        return None

    return shape


def _noted(case: Case, note: str) -> Case:
    return Case(case.rule, case.args, case.size, case.control, note)


def _chunks_case(rule: str, chunks: Iterable[bytes]) -> Case:
    chunks = list(chunks)
    return Case(rule, (chunks,), (sum(len(c) for c in chunks), len(chunks)))


def _empty_chunks_case(chunks: list[bytes]) -> Case:
    """Return a case holding at least one b'', whose control is the same cut without them."""
    assert b"" in chunks, "an empty-chunk case must hold an empty chunk"
    case = _chunks_case("empty", chunks)
    return Case(case.rule, case.args, case.size, control=([c for c in chunks if c],))


def _event_ends(data: bytes) -> list[int]:
    """Return the offset just after each blank line that ends an event."""
    ends, start = [], 0
    while (i := data.find(b"\n\n", start)) != -1:
        ends.append(i + 2)
        start = i + 2
    return ends


def _sizes(length: int) -> list[int]:
    return sorted(set(range(1, min(length, 48) + 1)) | set(range(48, length + 1, 17)) | {length})


def _stream_diagnosis(dialect: str, hints: dict[str, str]) -> Callable[[Case, Outcome], str | None]:
    """Return diagnose(case, outcome) for a stream reader returning (text, complete, ...).

    ``hints`` maps a cause ("decode", "done_json", "comment", "chunk_not_event", "append",
    "while") to the hint
    for it. The cause is read from what came back: the exception type, the text json.loads
    choked on, or a text that is only the last delta (replaced, not appended) or only the
    first few deltas of a chunk holding more events (``if`` instead of ``while``).
    """

    def diagnose(case: Case, outcome: Outcome) -> str | None:
        if outcome.error_type == "UnicodeDecodeError":
            return hints.get("decode")
        if outcome.error_type == "JSONDecodeError" and outcome.detail is not None:
            doc = outcome.detail.strip()
            if "\n\n" in doc:  # several events parsed as one: chunks taken for events
                return hints.get("chunk_not_event")
            if doc.startswith("[DONE]"):
                return hints.get("done_json")
            if doc.startswith(":"):
                return hints.get("comment")
            return None
        got = outcome.value
        if outcome.error is not None or not isinstance(got, list) or not got:
            return None
        text = got[0]
        chunks = [c for c in case.args[0] if c]
        deltas = _stream_deltas(chunks, dialect)
        if not isinstance(text, str) or len(deltas) < 2 or text == "".join(deltas):
            return None
        if text == deltas[-1]:
            return hints.get("append")
        events = b"".join(chunks).count(b"\n\n")
        prefixes = {"".join(deltas[:k]) for k in range(len(deltas))}
        if text in prefixes and len(chunks) < events:
            return hints.get("while")
        return None

    return diagnose


def _stream_deltas(chunks: Sequence[bytes], dialect: str) -> list[str]:
    """Return the text pieces of the complete events in ``chunks`` (non-empty ones)."""
    deltas = []
    for event in sse.decode_all(chunks):
        step = interpret(event, dialect)
        if step.delta:
            deltas.append(step.delta)
    return deltas


# ---------------------------------------------------------------------------
# Exercise 1: response_times

_TIMES_KEYS = ("streaming_first_ms", "blocking_first_ms", "total_ms")


def _times_case(rule: str, *args: float, keys: tuple[str, ...] = _TIMES_KEYS) -> Case:
    return Case(rule, tuple(args), (args[2], args[0], args[1], keys))


def _times_shape(got: Any) -> str | None:
    if not isinstance(got, dict) or "__repr__" in got:
        return f"{_show_plain(got)} -- response_times must return a dict with keys {_TIMES_KEYS}"
    missing = [k for k in _TIMES_KEYS if k not in got]
    if missing:
        return f"{_show_plain(got)} -- the dict has no key {missing[0]!r}"
    for key in _TIMES_KEYS:
        if isinstance(got[key], bool) or not isinstance(got[key], (int, float)):
            return f"{_show_plain(got)} -- {key} should be a number of milliseconds"
    return None


def _times_same(case: Case, expected: Any, got: Any) -> bool:
    keys = case.size[3]
    return all(math.isclose(expected[k], got[k], rel_tol=1e-9, abs_tol=1e-6) for k in keys)


def _times_input(case: Case) -> str:
    prefill, per_token, n = case.args
    keys = case.size[3]
    checked = "" if keys == _TIMES_KEYS else f"  (checks {', '.join(keys)})"
    return (
        f"response_times(prefill_ms={prefill!r}, per_token_ms={per_token!r}, n_tokens={n!r})"
        f"{checked}"
    )


def _response_times_rules() -> tuple[Rule, ...]:
    first = ("streaming_first_ms",)
    total = ("total_ms",)
    blocking = ("blocking_first_ms",)
    spread = [(0, 40, 3), (100, 10, 5), (250, 25, 1), (1000, 5, 200)]

    def r(name, hint, cases, hidden=False):
        return Rule(name, hint, lambda: cases, hidden)

    return (
        r(
            "the lesson's example: 300 ms prefill, 40 ms per token, 500 tokens -> 20,300 ms",
            "Total time = prefill + n_tokens * per_token: 300 + 500 * 40.",
            [_times_case("lesson", 300, 40, 500)],
        ),
        r(
            "the running example: first token at 340 ms, all six tokens by 540 ms",
            "The first token needs the prefill and one decode step; blocking waits for all six.",
            [_times_case("running", 300, 40, 6)],
        ),
        r(
            "streaming shows the first token after prefill plus one token time",
            "Prefill produces nothing visible by itself: add one per_token_ms for token 0.",
            [_times_case("first", *args, keys=first) for args in spread],
        ),
        r(
            "total time is prefill plus one step per token",
            "Count every token, the first one included: prefill_ms + n_tokens * per_token_ms.",
            [_times_case("total", *args, keys=total) for args in spread],
        ),
        r(
            "blocking shows nothing until the last token exists",
            "Without streaming the whole answer appears at once, at the total time.",
            [_times_case("blocking", *args, keys=blocking) for args in spread],
        ),
        r(
            "fractional milliseconds and long answers",
            "Use plain arithmetic on the arguments; do not round.",
            [
                _times_case("hidden", 12.5, 7.25, 33),
                _times_case("hidden", 300, 40, 4000),
                _times_case("hidden", 20, 3, 10_000),
            ],
            hidden=True,
        ),
        r(
            "no prefill, and a one-token answer",
            "With one token, the first token is also the last one.",
            [_times_case("hidden", 0, 40, 10), _times_case("hidden", 450, 60, 1)],
            hidden=True,
        ),
    )


# ---------------------------------------------------------------------------
# Exercise 2: read_stream (the lesson dialect)


def _lesson_wire(tokens: Sequence[str], **options: Any) -> bytes:
    return llm.wire_bytes(llm.Answer(tuple(tokens), "stop"), "lesson", **options)


def _split_inside_characters(data: bytes) -> Iterator[list[bytes]]:
    """Yield two-piece cuts of ``data`` that land inside a multi-byte character."""
    for i in range(1, len(data)):
        if data[i] & 0xC0 == 0x80:  # a continuation byte: the cut splits a character
            yield [data[:i], data[i:]]


def _read_stream_rules() -> tuple[Rule, ...]:
    practice = practice_wire(PRACTICE_TOKENS)
    plain = practice_wire(["Hi", " there"], heartbeat=False)
    tiny = practice_wire(["Hi"], heartbeat=False)
    three = practice_wire(["One", " two", " three"], heartbeat=False)
    no_done = practice_wire(PRACTICE_TOKENS, done=False)
    pinged = (
        b": ping\n\n"
        + b"".join(
            practice_wire([t], heartbeat=False, done=False) + b": ping\n\n"
            for t in ("Your", " order", " ships")
        )
        + b": ping\n\ndata: [DONE]\n\n"
    )
    accents = practice_wire(["é", " ü"], heartbeat=False)
    emoji = practice_wire(["€", " 😀"], heartbeat=False)

    def c(rule, chunk_lists):
        return lambda: [_chunks_case(rule, chunks) for chunks in chunk_lists]

    def by_events(data: bytes, group: int) -> list[bytes]:
        ends = _event_ends(data)
        return network.cut_at(data, ends[group - 1 :: group][:-1] if len(ends) > group else [])

    rules = [
        Rule(
            "the whole stream in one chunk",
            "Split the buffer at blank lines, strip 'data: ', parse the JSON, add its delta.",
            c("whole", [[practice], [plain], [_lesson_wire(llm.tokenize(llm.RUNNING_ANSWER))]]),
        ),
        Rule(
            "deltas are appended, never replaced",
            "Each event carries only the new piece: text += delta, not text = delta.",
            c("append", [[three], network.cut_at(three, _event_ends(three)[:-1])]),
        ),
        Rule(
            "[DONE] ends the stream and is not JSON",
            "Compare the data with '[DONE]' before calling json.loads.",
            c("done", [[b"data: [DONE]\n\n"], [tiny]]),
        ),
        Rule(
            "complete only after [DONE] arrives",
            "Start with complete = False and set it to True only when the [DONE] event comes.",
            c("complete", [[no_done], [plain[:-2]], [tiny.replace(b"[DONE]\n\n", b"[DONE]\n")]]),
        ),
        Rule(
            "heartbeat comments (': ping') are skipped",
            "An event whose text starts with ':' is a comment: skip it, do not parse it.",
            c("ping", [[pinged], by_events(pinged, 1), [b": ping\n\n" + tiny]]),
        ),
        Rule(
            "several events in one chunk are all handled",
            "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
            c("several", [by_events(practice, 2), by_events(practice, 3), [three]]),
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "A chunk is not an event: keep a buffer and act only on events ended by a blank line.",
            c("two-cut", list(network.every_cut(tiny))[1:-1]),  # both pieces non-empty
        ),
        Rule(
            "every chunk size gives the same answer",
            "Try cut(wire, 1): the bytes may arrive one at a time.",
            c("sizes", [network.cut(practice, size) for size in _sizes(len(practice))]),
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with codecs.getincrementaldecoder('utf-8')(); it keeps half a character.",
            c(
                "utf8",
                [*_split_inside_characters(accents), *_split_inside_characters(emoji)]
                + [network.cut(emoji, 1), network.cut(practice, 5)],
            ),
        ),
        Rule(
            "a dropped connection keeps the text so far, with complete=False",
            "Only whole events count; a half event at the end is never shown.",
            c("drop", [network.cut(practice[:n], 16) for n in range(len(practice))]),
        ),
        Rule(
            "empty chunks change nothing",
            "A network read can return b''; it adds nothing to the buffer.",
            lambda: [
                _empty_chunks_case(chunks)
                for chunks in (
                    [b"", tiny],
                    [tiny[:9], b"", tiny[9:]],
                    [b"", *network.cut(plain, 9), b""],
                    [p for piece in network.random_cuts(plain, seed=3) for p in (piece, b"")],
                )
            ],
            control_hint="Your function gets these chunks wrong even with the b'' removed: "
            "fix the rules above first; this one is only about b''.",
        ),
        Rule(
            "long answers cut at seeded random points",
            "Test your reader on cut(wire, 1) and on random cuts of a long answer.",
            c(
                "random",
                [
                    network.random_cuts(
                        _lesson_wire(llm.long_answer(40 + 7 * s, seed=s).tokens), seed=s
                    )
                    for s in range(8)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "heartbeats while the model thinks, cut anywhere",
            "Comments may come before, between and after the data events.",
            c(
                "heartbeat",
                [
                    network.random_cuts(
                        _lesson_wire(llm.answer_for("Where is my parcel?").tokens, heartbeat_ms=15),
                        seed=s,
                        max_piece_bytes=9,
                    )
                    for s in range(4)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "drops anywhere in a longer answer",
            "Only whole events count, and complete stays False without [DONE].",
            c(
                "long-drop",
                [
                    network.random_cuts(
                        network.drop_after(
                            _lesson_wire(llm.answer_for("Can I change the address?").tokens), n
                        ),
                        seed=n,
                    )
                    for n in range(0, 1400, 37)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "characters from other scripts, split anywhere",
            "Multi-byte characters may be split at any byte: decode incrementally.",
            c(
                "scripts",
                [
                    network.cut(_lesson_wire(["日本", " 😀", " naïve", " Zürich", " €5"]), size)
                    for size in (1, 2, 3, 5, 7)
                ],
            ),
            hidden=True,
        ),
    ]
    return tuple(rules)


# ---------------------------------------------------------------------------
# Exercise 4: read_anthropic

_PING_EVENT = b'event: ping\ndata: {"type": "ping"}\n\n'


def _anthropic_wire(answer: llm.Answer, **options: Any) -> bytes:
    return llm.wire_bytes(answer, "anthropic", **options)


def _with_pings(data: bytes) -> bytes:
    ends = _event_ends(data)
    pieces = network.cut_at(data, ends[:-1])
    out = [pieces[0], _PING_EVENT]
    for piece in pieces[1:]:
        out += [piece, _PING_EVENT] if b"content_block_delta" in piece else [piece]
    return b"".join(out)


def _cuts_near_lines(data: bytes, step: int = 6) -> list[list[bytes]]:
    points = set(range(0, len(data) + 1, step))
    for i, byte in enumerate(data):
        if byte == 10:
            points |= {i, i + 1, i + 2}
    return [[data[:i], data[i:]] for i in sorted(p for p in points if 0 < p < len(data))]


def _anthropic_blocks_wire(
    text: Sequence[str],
    *,
    thinking: Sequence[str] = (),
    tool_json: Sequence[str] = (),
    stop_reason: str = "tool_use",
) -> bytes:
    """Return an Anthropic stream with a thinking block, a text block and a tool_use block.

    Only the text block's ``text_delta`` deltas are text for the screen; the
    thinking block streams ``thinking_delta`` (and a ``signature_delta``), the
    tool call ``input_json_delta`` pieces of its JSON input.
    """

    def event(kind: str, obj: dict) -> bytes:
        obj = {"type": kind, **obj}
        return sse.encode(json.dumps(obj, ensure_ascii=False, separators=(",", ":")), event=kind)

    def block(index: int, start: dict, deltas: list[dict]) -> list[bytes]:
        out = [event("content_block_start", {"index": index, "content_block": start})]
        out += [event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
        return [*out, event("content_block_stop", {"index": index})]

    message = {
        "id": "msg_blocks",
        "type": "message",
        "role": "assistant",
        "model": "lessonkit-sim",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 0},
    }
    out = [event("message_start", {"message": message})]
    index = 0
    if thinking:
        deltas = [{"type": "thinking_delta", "thinking": t} for t in thinking]
        deltas.append({"type": "signature_delta", "signature": "EqQBCkYIARgCIkB0c2ln"})
        out += block(index, {"type": "thinking", "thinking": ""}, deltas)
        index += 1
    out += block(
        index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text]
    )
    index += 1
    if tool_json:
        start = {"type": "tool_use", "id": "toolu_sim01", "name": "track_order", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": j} for j in tool_json]
        out += block(index, start, deltas)
    out.append(
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": len(text) + len(thinking) + len(tool_json)},
            },
        )
    )
    out.append(event("message_stop", {}))
    return b"".join(out)


_TOOL_JSON = ('{"order_id', '": "A-1042"', ', "text": "', 'where is it?"}')
_THINKING = ("The user asks", " about a delivery date;", " look up the order.")


def _read_anthropic_rules() -> tuple[Rule, ...]:
    running = _anthropic_wire(llm.answer_for(llm.RUNNING_PROMPT))
    one = _anthropic_wire(llm.Answer(("Hi",), "stop"))
    cafe = _anthropic_wire(llm.Answer(("Your", " café", " 😀", "."), "stop"))
    short = _anthropic_wire(llm.answer_for(llm.RUNNING_PROMPT, max_tokens=3))
    ends = _event_ends(running)
    stop_at = running.rfind(b"event: message_stop")
    delta_at = running.rfind(b"event: message_delta")
    without_stop = "the running answer's whole stream without its last event, message_stop"
    without_delta = "the running answer's stream without message_delta and message_stop"
    half_stop = "the running answer's whole stream, but the blank line after message_stop is cut"
    tool = _anthropic_blocks_wire(("It ships", " on Monday."), tool_json=_TOOL_JSON)
    thinks = _anthropic_blocks_wire(("Monday.",), thinking=_THINKING, stop_reason="end_turn")
    both = _anthropic_blocks_wire(("Let me check.",), thinking=_THINKING, tool_json=_TOOL_JSON)

    def c(rule, chunk_lists):
        return lambda: [_chunks_case(rule, chunks) for chunks in chunk_lists]

    return (
        Rule(
            "the whole stream in one chunk",
            "Text is in content_block_delta events, in data['delta']['text'].",
            c("whole", [[running], [one]]),
        ),
        Rule(
            "ping events and comments are ignored",
            "Use only the event types you need; skip 'ping' and any you do not know.",
            c(
                "ping",
                [
                    [_with_pings(running)],
                    network.cut(_with_pings(one), 40),
                    [_anthropic_wire(llm.Answer(("Hi",), "stop"), heartbeat_ms=100)],
                ],
            ),
        ),
        Rule(
            "complete only after message_stop",
            "message_delta is not the end; only the message_stop event completes the answer.",
            lambda: [
                _noted(_chunks_case("complete", [running[:stop_at]]), without_stop),
                _noted(_chunks_case("complete", [running[:delta_at]]), without_delta),
                _noted(_chunks_case("complete", [running[: ends[-1] - 1]]), half_stop),
            ],
        ),
        Rule(
            "stop_reason comes from message_delta",
            "Read data['delta']['stop_reason'] of the message_delta event; None until it comes.",
            c("stop", [[short], [running], [running[: ends[1]]]]),
        ),
        Rule(
            "only text_delta deltas are text: thinking and tool_use blocks are not",
            "Append delta['text'] only when delta['type'] == 'text_delta'; thinking_delta and "
            "input_json_delta pieces are not text for the screen.",
            c("blocks", [[tool], [thinks], [both], network.cut(both, 50)]),
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "Keep a buffer; handle an event only when its blank line has arrived.",
            c("two-cut", _cuts_near_lines(one)),
        ),
        Rule(
            "every chunk size gives the same answer",
            "Try cut(wire, 1): the bytes may arrive one at a time.",
            c("sizes", [network.cut(running, size) for size in _sizes(len(running))]),
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with an incremental UTF-8 decoder.",
            c("utf8", [*_split_inside_characters(cafe), network.cut(cafe, 1)]),
        ),
        Rule(
            "a dropped connection keeps the text so far",
            "Without message_stop the answer is not complete, whatever came before.",
            c(
                "drop",
                [
                    network.cut(running[:n], 64)
                    for n in sorted({*ends, *range(0, len(running), 29)})
                ],
            ),
        ),
        Rule(
            "long answers cut at seeded random points",
            "Test your reader on random cuts of a long answer.",
            c(
                "random",
                [
                    network.random_cuts(
                        _anthropic_wire(llm.long_answer(30 + 9 * s, seed=s)), seed=s
                    )
                    for s in range(6)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "tool calls and thinking in longer answers, cut at random",
            "Only text_delta pieces are text, whatever other blocks the message holds.",
            c(
                "blocks-hidden",
                [
                    network.random_cuts(
                        _anthropic_blocks_wire(
                            llm.long_answer(12 + 5 * s, seed=s).tokens,
                            thinking=_THINKING[: s % 3 + 1] if s % 2 else (),
                            tool_json=_TOOL_JSON if s != 2 else (),
                            stop_reason="tool_use" if s != 2 else "end_turn",
                        ),
                        seed=s,
                        max_piece_bytes=11,
                    )
                    for s in range(5)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "answers cut by max_tokens, with drops",
            "stop_reason is 'max_tokens' when the limit ended the answer.",
            c(
                "length",
                [
                    network.random_cuts(
                        network.drop_after(
                            _anthropic_wire(llm.answer_for("Where is my parcel?", max_tokens=9)), n
                        ),
                        seed=n,
                    )
                    for n in range(0, 2600, 83)
                ],
            ),
            hidden=True,
        ),
    )


# ---------------------------------------------------------------------------
# Exercise 5: resume after a drop


def _resume_rules() -> tuple[Rule, ...]:
    running = tuple(llm.tokenize(llm.RUNNING_ANSWER))
    cafe = ("Your", " café", " order", " ships", " on", " Monday", " 😀", ".")
    first = FetchScript(running).wire(None)
    ends = _event_ends(first)  # ends[0] closes the retry: block, ends[k] closes token k - 1
    done_at = first.rfind(b"event: done")

    def c(rule, scripts):
        return lambda: [
            Case(rule, (s,), (len(s.drops), sum(d or 0 for d in s.drops), s.seed)) for s in scripts
        ]

    return (
        Rule(
            "no drop: one connection gives the whole answer",
            "Stop reading when the 'done' event arrives; return the text.",
            c("nodrop", [FetchScript(running), FetchScript(cafe, seed=1)]),
        ),
        Rule(
            "one drop: reconnect with the id of the last event received",
            "Remember the id: field of each complete event; pass the last one to fetch().",
            c("one", [FetchScript(running, (ends[k],), seed=k) for k in (1, 2, 3, 5)]),
        ),
        Rule(
            "a drop inside an event: that event is not counted and comes again",
            "Only a blank line completes an event; a half event at a drop is thrown away.",
            c("inside", [FetchScript(running, (ends[k] - 3,), seed=k) for k in (2, 4)]),
        ),
        Rule(
            "a drop before any event: reconnect without Last-Event-ID",
            "With no id received yet, call fetch(None) again.",
            c("early", [FetchScript(running, (5,)), FetchScript(running, (ends[0] + 4,))]),
        ),
        Rule(
            "several drops in a row, no gap and no duplicate",
            "Keep the last id across connections; a connection may bring no new event at all.",
            c(
                "several",
                [
                    FetchScript(running, (ends[2], 20, 60)),
                    FetchScript(cafe, (ends[1] + 7, 10, 55, 70), seed=4),
                ],
            ),
        ),
        Rule(
            "a drop just before the done event",
            "All tokens came but not 'done': reconnect once more; the server sends only 'done'.",
            c("late", [FetchScript(running, (done_at,)), FetchScript(running, (done_at + 5,))]),
        ),
        Rule(
            "long answers with many drops",
            "Reconnect as often as needed, always with the last id received.",
            c(
                "long",
                [
                    FetchScript(
                        llm.long_answer(30, seed=s).tokens,
                        tuple(random.Random(s).randrange(0, 400) for _ in range(5)),
                        seed=s,
                    )
                    for s in range(5)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "heartbeat comments between events",
            "Comments carry no id and no text.",
            c("heartbeat", [FetchScript(cafe, (120, 90), seed=9, heartbeat_ms=25)]),
            hidden=True,
        ),
    )


def _resume_reference(case: Case) -> dict:
    fetch = FakeFetch(case.args[0])
    text = ref.resume(fetch)
    return {"text": text, "requests": list(fetch.requests)}


def _resume_got(outcome: Outcome) -> Any:
    return {"text": outcome.value, "requests": list(outcome.requests or ())}


def _resume_shape(got: Any) -> str | None:
    if not isinstance(got["text"], str):
        return f"{_show_plain(got['text'])} -- resume must return the whole text, a str"
    return None


def _resume_same(case: Case, expected: Any, got: Any) -> bool:
    norm = [r or None for r in got["requests"]]
    return expected["text"] == got["text"] and expected["requests"] == norm


def _resume_show(value: Any) -> str:
    if isinstance(value, dict) and "requests" in value:
        return f"text {value['text']!r}, fetch called with {value['requests']!r}"
    return _show_plain(value)


# ---------------------------------------------------------------------------
# Exercise 6: parse_sse


_CONFORMANCE_HINT = "Follow the WHATWG 'interpret an event stream' steps for this case."


@lru_cache(maxsize=1)
def conformance_cases() -> tuple[dict, ...]:
    """Return the packaged SSE conformance cases: name, input bytes, expected events, hint."""
    raw = resources.files("lessonkit").joinpath("data/sse_cases.json").read_text("utf-8")
    cases = []
    for item in json.loads(raw):
        if "input_hex" in item:
            data = bytes.fromhex(item["input_hex"])
        else:
            data = item["input"].encode("utf-8")
        cases.append(
            {
                "name": item["name"],
                "input": data,
                "events": [tuple(e) for e in item["events"]],
                "hint": item.get("hint") or _CONFORMANCE_HINT,
            }
        )
    return tuple(cases)


_LINE_ENDS = ("\n", "\r", "\r\n")
_FIELDS = [
    "data: {t}",
    "data:{t}",
    "data",
    "data:",
    "event: {w}",
    "event:{w}",
    "id: {n}",
    "id",
    "id: 7\x00",
    "retry: {n}",
    "retry: x{n}",
    ": {t}",
    ":",
    "{w}: {t}",
    "data :{t}",
]
_WORDS = ["add", "remove", "message", "café", "ping", "x y"]
_TEXTS = ["hello", " two spaces", "a:b: c", "é😀€", "[DONE]", '{"delta": "Hi"}', ""]


def generated_stream(seed: int) -> bytes:
    """Return a seeded random SSE stream mixing every field kind and line ending."""
    rng = random.Random(seed)
    lines: list[str] = ["\ufeff"] if rng.random() < 0.2 else []
    for _ in range(rng.randint(3, 18)):
        if rng.random() < 0.3:
            template = ""
        else:
            template = rng.choice(_FIELDS)
        line = template.format(t=rng.choice(_TEXTS), w=rng.choice(_WORDS), n=rng.randint(0, 99))
        lines.append(line + rng.choice(_LINE_ENDS))
    if rng.random() < 0.8:
        lines.append("\n")
    return "".join(lines).encode("utf-8")


def _parse_sse_rules() -> tuple[Rule, ...]:
    rules = []
    for item in conformance_cases():
        data = item["input"]

        def cases(data=data, name=item["name"]) -> list[Case]:
            ways = [[data], network.cut(data, 1), *network.every_cut(data)]
            return [_chunks_case(name, chunks) for chunks in ways]

        rules.append(
            Rule(
                f"conformance: {item['name']}",
                item["hint"],
                cases,
            )
        )
    rules.append(
        Rule(
            "generated streams give the same events as lessonkit.core.sse.SSEDecoder",
            "Mix of fields, comments, BOM and line endings; the cut must not matter.",
            lambda: [
                _chunks_case(
                    "gen", network.random_cuts(generated_stream(s), seed=s, max_piece_bytes=7)
                )
                for s in range(12)
            ],
        )
    )
    rules.append(
        Rule(
            "more generated streams, cut at random",
            "Every cut of the same bytes must give the same events.",
            lambda: [
                _chunks_case(
                    "gen-hidden",
                    network.random_cuts(generated_stream(1000 + s), seed=s, max_piece_bytes=5),
                )
                for s in range(60)
            ],
            hidden=True,
        )
    )
    return tuple(rules)


def _events_shape(got: Any) -> str | None:
    if not isinstance(got, list):
        return f"{_show_plain(got)} -- parse_sse must return a list of (type, data, id) tuples"
    for item in got:
        if not (
            isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
        ):
            return f"{_show_events(got)} -- each event must be a tuple of three str"
    return None


# ---------------------------------------------------------------------------
# Exercise 3: the three "now change it" experiments

NOW_CHANGE_IT_OPTIONS = {
    "decode_5_outcome": {
        "A": "the same text and complete=True",
        "B": "a UnicodeDecodeError",
        "C": "the text with '�' where 'é' was",
        "D": "an empty text",
    },
    "decode_why": {
        "A": "5-byte pieces are too short for JSON",
        "B": "a piece ends between the two bytes of 'é', and a piece decoded on its own "
        "cannot keep half a character",
        "C": "chunk.decode is slower than the incremental decoder",
        "D": "the [DONE] marker is cut in half",
    },
    "if_why": {
        "A": "the one chunk holds every event, but `if` handles only the first (the ping) "
        "and no later chunk comes to handle the rest",
        "B": "`if` skips the events that hold non-ASCII text",
        "C": "json.loads fails on the [DONE] event",
        "D": "the buffer is emptied after each chunk",
    },
    "drop40_why": {
        "A": "only events closed by a blank line count: the ' café' event had started, "
        "but its blank line never came",
        "B": "the decoder drops the last 40 bytes",
        "C": "the heartbeat comment takes the place of a token",
        "D": "JSON cannot hold 'é'",
    },
}

_NOW_QUESTIONS = (
    # key, rule text, kind of answer, hint
    (
        "decode_1000_text",
        "experiment 1, prediction: the text of the 1000-byte run",
        "text",
        "With 1000-byte pieces the whole stream is one chunk: is any character cut?",
    ),
    (
        "decode_5_outcome",
        "experiment 1, prediction: what the 5-byte run does",
        "letter",
        "Look at the last line of the original output: b' caf\\xc3'.",
    ),
    (
        "decode_why",
        "experiment 1, explanation",
        "letter",
        "Where does the 5-byte cut land inside 'é'?",
    ),
    (
        "if_1000_text",
        "experiment 2, prediction: the text of the 1000-byte run",
        "text",
        "One chunk arrives; how many events does `if` handle, and which one is first?",
    ),
    (
        "if_1000_complete",
        "experiment 2, prediction: the complete flag of the 1000-byte run",
        "bool",
        "Was the [DONE] event ever handled?",
    ),
    ("if_why", "experiment 2, explanation", "letter", "Count events per chunk."),
    (
        "drop40_text",
        "experiment 3, prediction: the text after a drop at 40 bytes",
        "text",
        "Count the bytes: ': ping' and its blank line are 8, the 'Your' event 25.",
    ),
    (
        "drop40_complete",
        "experiment 3, prediction: the complete flag after a drop at 40 bytes",
        "bool",
        "Did [DONE] arrive?",
    ),
    (
        "drop40_why",
        "experiment 3, explanation",
        "letter",
        "What happens to bytes of an event that no blank line has closed?",
    ),
)


def now_change_it_answers() -> dict[str, Any]:
    """Return the right answers, computed by running the changed practice reader."""
    wire = practice_wire(PRACTICE_TOKENS)
    text_1000, _ = practice_reader(network.cut(wire, 1000), decode="per-chunk")
    try:
        practice_reader(network.cut(wire, 5), decode="per-chunk")
        outcome_5 = "A"
    except UnicodeDecodeError:
        outcome_5 = "B"
    if_text, if_done = practice_reader(network.cut(wire, 1000), loop="if")
    drop_text, drop_done = practice_reader(network.cut(wire[:40], 16))
    return {
        "decode_1000_text": text_1000,
        "decode_5_outcome": outcome_5,
        "decode_why": "B",
        "if_1000_text": if_text,
        "if_1000_complete": if_done,
        "if_why": "A",
        "drop40_text": drop_text,
        "drop40_complete": drop_done,
        "drop40_why": "A",
    }


def _normal_answer(kind: str, value: Any) -> Any:
    if kind == "letter" and isinstance(value, str):
        return value.strip().strip(")").strip().upper()
    if kind == "bool" and isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower(), value)
    if kind == "text" and isinstance(value, str):
        stripped = value.strip()
        if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
            return stripped[1:-1]
    return value


def _now_change_it_exercise() -> Exercise:
    kinds = {key: kind for key, _, kind, _ in _NOW_QUESTIONS}
    rules = tuple(
        Rule(rule, hint, lambda key=key: [Case(key, (key,), ())])
        for key, rule, _, hint in _NOW_QUESTIONS
    )

    def reference(case: Case) -> Any:
        return now_change_it_answers()[case.args[0]]

    def shape(got: Any) -> str | None:
        if isinstance(got, dict) and got.get("__missing__"):
            return "no answer: this key is missing from the dict"
        if _unanswered(got):
            return "no answer yet (still ...)"
        return None

    def same(case: Case, expected: Any, got: Any) -> bool:
        kind = kinds[case.args[0]]
        answer = _normal_answer(kind, got)
        if kind == "bool":
            return answer is expected
        return answer == expected

    def show_input(case: Case) -> str:
        return f"now_change_it[{case.args[0]!r}]"

    def shown_reference(case: Case) -> Any:
        # Never reveal an answer: the run cell shows what happened, and a prediction
        # copied from feedback teaches nothing.
        if kinds[case.args[0]] == "letter":
            shown = "(not shown: rerun the experiment, then compare the options)"
        else:
            shown = "(not shown: compare with what the run cell printed)"
        return {"__repr__": shown, "__type__": "answer"}

    return Exercise(
        "now_change_it",
        "Exercise 3: the three 'now change it' experiments",
        15,
        rules,
        reference=shown_reference,
        kind="value",
        shape=shape,
        same=lambda case, expected, got: same(case, reference(case), got),
        show_input=show_input,
        show_value=_show_plain,
    )


# ---------------------------------------------------------------------------
# The registry

# Which rule's hint fits a diagnosed cause (see _stream_diagnosis).
_READ_STREAM_CAUSES = {
    "decode": "a character split across chunks survives",
    "done_json": "[DONE] ends the stream and is not JSON",
    "comment": "heartbeat comments (': ping') are skipped",
    "chunk_not_event": "an event cut across two chunks waits for the rest",
    "append": "deltas are appended, never replaced",
    "while": "several events in one chunk are all handled",
}
_READ_ANTHROPIC_CAUSES = {
    "decode": "a character split across chunks survives",
    "comment": "ping events and comments are ignored",
    "chunk_not_event": "an event cut across two chunks waits for the rest",
}
_ANTHROPIC_EXTRA_HINTS = {
    "append": "Each text_delta carries only the new piece: text += delta['text'], "
    "not text = delta['text'].",
    "while": "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
}


def _hints_of(rules: Sequence[Rule], causes: dict[str, str]) -> dict[str, str]:
    by_name = {rule.name: rule.hint for rule in rules}
    return {cause: by_name[name] for cause, name in causes.items()}


def _build() -> dict[str, Exercise]:
    def chunks_input(case: Case) -> str:
        return _show_chunks(case.args[0])

    def resume_input(case: Case) -> str:
        return case.args[0].describe()

    read_stream_rules = _read_stream_rules()
    read_anthropic_rules = _read_anthropic_rules()

    exercises = [
        Exercise(
            "response_times",
            "Exercise 1: the timing model",
            10,
            _response_times_rules(),
            reference=lambda case: ref.response_times(*case.args),
            shape=_times_shape,
            same=_times_same,
            show_input=_times_input,
            show_value=_show_plain,
        ),
        Exercise(
            "read_stream",
            "Exercise 2: a stream reader that survives any cut",
            30,
            read_stream_rules,
            reference=lambda case: ref.read_stream(case.args[0]),
            shape=_tuple_shape("read_stream", [("text", (str,)), ("complete", (bool,))]),
            show_input=chunks_input,
            show_value=_show_tuple,
            diagnose=_stream_diagnosis("lesson", _hints_of(read_stream_rules, _READ_STREAM_CAUSES)),
        ),
        _now_change_it_exercise(),
        Exercise(
            "read_anthropic",
            "Exercise 4: Anthropic's named events",
            20,
            read_anthropic_rules,
            reference=lambda case: ref.read_anthropic(case.args[0]),
            diagnose=_stream_diagnosis(
                "anthropic",
                _hints_of(read_anthropic_rules, _READ_ANTHROPIC_CAUSES) | _ANTHROPIC_EXTRA_HINTS,
            ),
            shape=_tuple_shape(
                "read_anthropic",
                [("text", (str,)), ("complete", (bool,)), ("stop_reason", (str, type(None)))],
            ),
            show_input=chunks_input,
            show_value=_show_tuple,
        ),
        Exercise(
            "resume",
            "Exercise 5: resume after a drop with Last-Event-ID",
            15,
            _resume_rules(),
            reference=_resume_reference,
            shape=_resume_shape,
            same=_resume_same,
            show_input=resume_input,
            show_value=_resume_show,
            got_of=_resume_got,
        ),
        Exercise(
            "parse_sse",
            "Exercise 6 (stretch): a full WHATWG SSE parser",
            30,
            _parse_sse_rules(),
            reference=lambda case: ref.parse_sse(case.args[0]),
            shape=_events_shape,
            show_input=chunks_input,
            show_value=_show_events,
        ),
    ]
    return {exercise.id: exercise for exercise in exercises}


class _Registry(dict):
    """The exercises by id, built on first use (building the cases costs a few ms)."""

    def _fill(self) -> None:
        if not super().__len__():
            self.update(_build())

    def __getitem__(self, key: str) -> Exercise:
        self._fill()
        return super().__getitem__(key)

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def __contains__(self, key: object) -> bool:
        self._fill()
        return super().__contains__(key)

    def keys(self):
        self._fill()
        return super().keys()

    def values(self):
        self._fill()
        return super().values()

    def items(self):
        self._fill()
        return super().items()

    def get(self, key, default=None):
        self._fill()
        return super().get(key, default)


EXERCISES: dict[str, Exercise] = _Registry()
