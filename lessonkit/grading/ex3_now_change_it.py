"""Exercise 3: the three "now change it" experiments, a dict of predictions ``now_change_it``.

The learner fills in answers (texts, True/False, option letters) instead of
writing a function. The right answers are computed by running the changed
practice reader of ``lessonkit.core.practice`` (``decode="per-chunk"``,
``loop="if"``, a drop at 40 bytes), so they are what the changed code really
does. Feedback never reveals an answer: the run cell shows what happened.
"""

from __future__ import annotations

from typing import Any

from lessonkit.core import network
from lessonkit.core.practice import PRACTICE_TOKENS, practice_reader, practice_wire
from lessonkit.grading.engine import Case, Exercise, Rule, unanswered
from lessonkit.grading.feedback import show_plain

__all__ = ["QUESTIONS", "exercise", "reference"]

QUESTIONS = (
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


def reference() -> dict[str, Any]:
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


def exercise() -> Exercise:
    """Return exercise 3: one rule per answer, each compared with ``reference()``."""
    kinds = {key: kind for key, _, kind, _ in QUESTIONS}
    rules = tuple(
        Rule(rule, hint, lambda key=key: [Case(key, (key,), ())])
        for key, rule, _, hint in QUESTIONS
    )

    def shape(got: Any) -> str | None:
        if isinstance(got, dict) and got.get("__missing__"):
            return "no answer: this key is missing from the dict"
        if unanswered(got):
            return "no answer yet (still ...)"
        return None

    def same(case: Case, got: Any) -> bool:
        kind = kinds[case.args[0]]
        answer = _normal_answer(kind, got)
        expected = reference()[case.args[0]]
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
        same=lambda case, expected, got: same(case, got),
        show_input=show_input,
        show_value=show_plain,
    )
