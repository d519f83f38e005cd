"""Exercise 3: the three "now change it" experiments, a dict of predictions ``now_change_it``.

The learner fills in answers (texts, True/False, option letters) instead of
writing a function. The right answers are computed by running the changed
practice reader of ``lessonkit.core.practice`` (``decode="per-chunk"``,
``loop="if"``, a drop at 40 bytes), so they are what the changed code really
does. Feedback never reveals an answer: the run cell shows what happened.

How answers are compared: what does not matter is normalised -- spaces around
an answer, one pair of quotes around a text, the case and a ")" or "." of an
option letter, "true"/"false" written as text, composed or decomposed accents
-- and what matters is strict: a text must be the reader's text exactly (case,
spaces and the final period included). Each wrong option has a hint of its
own, saying why that option cannot be right; a wrong text gets the hint its
difference calls for (cut short, only the case, the (text, complete) pair...),
else the question's. The questions are independent, so feedback never says
they share a cause.

Points: 15 in all; each prediction of a text and each explanation 2, the
outcome of the 5-byte run and each complete flag 1. May use from lessonkit:
anything but this module (``reference`` is the answer key). The key says
where it comes from: ``reference()`` returns an ``AnswerKey`` whose texts are
``KeyText``, so a dict filled from it is flagged (``integrity.copies``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from lessonkit.core import network
from lessonkit.core.practice import PRACTICE_TOKENS, practice_reader, practice_wire
from lessonkit.grading.engine import Answers, Case, Outcome, Returned, Rule, unanswered


@dataclass(frozen=True)
class Question:
    """One answer of the dict: its key, the rule's words, its kind, points and hints."""

    key: str
    rule: str
    kind: str  # "text", "letter" or "bool"
    points: float
    hint: str
    wrong_options: dict[str, str] = field(default_factory=dict)  # letter -> why it is wrong


QUESTIONS = (
    Question(
        "decode_1000_text",
        "experiment 1, prediction: the text of the 1000-byte run",
        "text",
        2,
        "With 1000-byte pieces the whole stream arrives as one chunk: what text does the "
        "reader build from it?",
    ),
    Question(
        "decode_5_outcome",
        "experiment 1, prediction: what the 5-byte run does",
        "letter",
        1,
        "Look at the last line of the original output: b' caf\\xc3'.",
        {
            "A": "A piece ends inside 'é' (b' caf\\xc3'): decoding that piece on its own "
            "cannot give the same text.",
            "C": "The replacement character '\\ufffd' appears only with errors='replace'; "
            "chunk.decode('utf-8') is strict.",
            "D": "The first pieces decode fine and add their text; something must stop the run.",
        },
    ),
    Question(
        "decode_why",
        "experiment 1, explanation",
        "letter",
        2,
        "Where does the 5-byte cut land inside 'é'?",
        {
            "A": "The JSON is parsed only once a whole event is in the buffer, whatever the "
            "piece size: look at which line raised.",
            "C": "Nothing was dropped: the run raised UnicodeDecodeError. A strict decode "
            "raises; it never drops bytes silently.",
            "D": "Events, [DONE] included, are handled only after their blank line arrives; "
            "the error came earlier, in decode.",
        },
    ),
    Question(
        "if_1000_text",
        "experiment 2, prediction: the text of the 1000-byte run",
        "text",
        2,
        "One chunk arrives; how many events does `if` handle, and which one is first?",
    ),
    Question(
        "if_1000_complete",
        "experiment 2, prediction: the complete flag of the 1000-byte run",
        "bool",
        1,
        "Was the [DONE] event ever handled?",
    ),
    Question(
        "if_why",
        "experiment 2, explanation",
        "letter",
        2,
        "Count events per chunk.",
        {
            "B": "Look at the order of the events on the wire: the first one is the ': ping' "
            "comment, not [DONE].",
            "C": "No exception was raised: the run printed a text and a flag.",
            "D": "The buffer keeps everything after the first event; what is missing is code "
            "that handles it later.",
        },
    ),
    Question(
        "drop40_text",
        "experiment 3, prediction: the text after a drop at 40 bytes",
        "text",
        2,
        "Count the bytes: ': ping' and its blank line are 8, the 'Your' event 25.",
    ),
    Question(
        "drop40_complete",
        "experiment 3, prediction: the complete flag after a drop at 40 bytes",
        "bool",
        1,
        "Did [DONE] arrive?",
    ),
    Question(
        "drop40_why",
        "experiment 3, explanation",
        "letter",
        2,
        "What happens to bytes of an event that no blank line has closed?",
        {
            "B": "The decoder holds back only the first bytes of a character cut in two; "
            "'data: {' is plain ASCII.",
            "C": "The comment is skipped and takes no token's place: 'Your' is still there.",
            "D": "Count the bytes: byte 40 is inside 'data: {', before any byte of 'é' arrives.",
        },
    ),
)

# Hints a wrong text earns from how it differs from the right one (never showing it).
TEXT_HINTS = {
    "pair": "Give only the text, a string -- not the (text, complete) pair the reader returns.",
    "case": "Only upper/lower case differs: write the text exactly as the reader returns it.",
    "spaces": "Only the spaces differ: each token brings its own leading space.",
    "short": "Your text is the start of the right one but stops early: compare its last "
    "characters with what the run printed.",
    "long": "Your text goes on past the right one: which events were really handled?",
    "yes-no": "This answer is a yes/no flag: answer True or False (a bool, no quotes), "
    "not a text such as 'no'.",
}


class KeyText(str):
    """A text of the answer key: equal to the plain text, and marked as the checker's."""


class AnswerKey(dict):
    """The answer key: a dict marked as the checker's (its texts are KeyText)."""


def reference() -> AnswerKey:
    """Return the right answers, computed by running the changed practice reader."""
    return AnswerKey(
        {k: KeyText(v) if isinstance(v, str) else v for k, v in _run_experiments().items()}
    )


def _run_experiments() -> dict[str, Any]:
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


def normal_answer(kind: str, value: Any) -> Any:
    """Return an answer with what does not matter normalised (quotes, a letter's case...)."""
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    if kind == "letter":
        letter = stripped.strip("()[]. ").upper()
        return letter[0] if len(letter) > 1 and not letter[1].isalpha() else letter
    if kind == "bool":
        return {"true": True, "false": False}.get(stripped.lower(), value)
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        stripped = stripped[1:-1]
    return unicodedata.normalize("NFC", stripped)


def _text_mistake(got: str, right: str) -> str | None:
    """Return the TEXT_HINTS key for how a wrong text differs from the right one, or None."""
    if not right:
        return None  # every difference from "" is "too long": the question's hint says more
    if got.startswith("(") and ("True" in got or "False" in got):
        return "pair"
    if got.lower() == right.lower():
        return "case"
    if got.split() == right.split():
        return "spaces"
    if right.startswith(got) and got:
        return "short"
    if got.startswith(right):
        return "long"
    return None


BY_KEY = {q.key: q for q in QUESTIONS}


class NowChangeIt(Answers):
    """Exercise 3: one rule per answer, each compared with ``reference()``."""

    id = "now_change_it"
    title = "Exercise 3: the three 'now change it' experiments"
    extra_hints = {
        **{f"{q.key}:{letter}": why for q in QUESTIONS for letter, why in q.wrong_options.items()},
        **TEXT_HINTS,
    }
    allowed = ("lessonkit.core", "lessonkit.sse", "lessonkit.client")
    own_work = "predictions"

    def make_rules(self) -> tuple[Rule, ...]:
        """Return one rule per question, in the notebook's order."""
        return tuple(
            Rule(q.rule, q.hint, lambda k=q.key: [Case(k, (k,), ())], points=q.points, cause=q.key)
            for q in QUESTIONS
        )

    def reference(self, case: Case) -> Any:
        """Return what the feedback shows as expected: never the answer itself."""
        # The run cell shows what happened, and a prediction copied from feedback teaches nothing.
        if BY_KEY[case.args[0]].kind == "letter":
            shown = "(not shown: rerun the experiment, then compare the options)"
        else:
            shown = "(not shown: compare with what the run cell printed)"
        return {"__repr__": shown, "__type__": "answer"}

    def shape(self, got: Any) -> str | None:
        """Return "no answer" for a missing key or one still left as ``...``."""
        if isinstance(got, dict) and got.get("__missing__"):
            return "no answer: this key is missing from the dict"
        if unanswered(got):
            return "no answer yet (still ...)"
        return None

    def same(self, case: Case, expected: Any, got: Any) -> bool:
        """Return True when the answer, normalised, is the key's."""
        question = BY_KEY[case.args[0]]
        answer = normal_answer(question.kind, got)
        right = reference()[question.key]
        return answer is right if question.kind == "bool" else answer == right

    def show_input(self, case: Case) -> str:
        """Return the answer's place in the dict."""
        return f"now_change_it[{case.args[0]!r}]"

    def diagnose(self, case: Case, outcome: Outcome, more: object = ()) -> str | None:
        """Return why a wrong answer is wrong: a wrong option, a yes/no text, how a text differs."""
        question = BY_KEY[case.args[0]]
        if not isinstance(outcome, Returned):
            return None
        answer = normal_answer(question.kind, outcome.value)
        if question.kind == "bool" and not isinstance(answer, bool):
            return "yes-no"
        if question.kind == "letter" and isinstance(answer, str):
            return f"{question.key}:{answer}" if answer in question.wrong_options else None
        if question.kind == "text" and isinstance(answer, str):
            return _text_mistake(answer, reference()[question.key])
        return None
