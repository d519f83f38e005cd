"""What each exercise declares: points per rule, hidden rules of public kinds, hints that fit.

Issue 13's surprises at grading: points that follow the rule count instead of
what the lesson stresses, hidden checks of a kind no public check tries,
hints that blame the wrong thing. Each test states one of the promises the
exercise modules and intros make, and checks it on realistic mistakes.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest
from calling import in_process

from lessonkit.grading import check
from lessonkit.grading import ex3_now_change_it as ex3
from lessonkit.grading.codec import to_jsonable
from lessonkit.grading.engine import Exercise, Mode, evaluate, evaluate_answers
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import report_text

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_POINTS = {
    "response_times": 10,
    "read_stream": 30,
    "now_change_it": 15,
    "read_anthropic": 20,
    "resume": 15,
    "parse_sse": 30,
}


def _solution_cells(exercise_id: str) -> list[str]:
    path = next((ROOT / "solutions").glob(f"ex*_{exercise_id}.ipynb"))
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def points_table(exercise: Exercise) -> str:
    """Return the markdown table of what earns points, as each exercise intro must print it.

    One line per rule, in order; three or more public rules that share a prefix
    before ": " (exercise 6's conformance cases) are one line.
    """
    lines = ["| check | points |", "|---|---|"]
    prefix = {
        rule.name: rule.name.split(": ", 1)[0] for rule in exercise.rules if ": " in rule.name
    }
    sizes: dict[str, int] = {}
    for rule in exercise.rules:
        if rule.name in prefix and not rule.hidden:
            sizes[prefix[rule.name]] = sizes.get(prefix[rule.name], 0) + 1
    families: dict[str, list[float]] = {}
    for rule in exercise.rules:
        family = prefix.get(rule.name, "") if not rule.hidden else ""
        if sizes.get(family, 0) >= 3:
            if family not in families:
                families[family] = []
                lines.append(family)  # a placeholder, filled below
            families[family].append(rule.points)
            continue
        shown = f"*hidden:* {rule.name}" if rule.hidden else rule.name
        lines.append(f"| {shown} | {rule.points:g} |")
    for family, points in families.items():
        each = points[0] if len(set(points)) == 1 else None
        text = f"{each:g} each, {sum(points):g} in all" if each is not None else f"{sum(points):g}"
        row = f"| each {family} case ({len(points)}, named by `check`) | {text} |"
        lines[lines.index(family)] = row
    return "\n".join(lines)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_an_exercises_points_are_the_sum_of_its_rules_points(exercise_id):
    exercise = EXERCISES[exercise_id]
    assert math.isclose(sum(rule.points for rule in exercise.rules), exercise.points)
    assert exercise.points == CONTRACT_POINTS[exercise_id]
    assert all(rule.points > 0 and rule.hint for rule in exercise.rules)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_every_hidden_rule_tests_more_of_a_kind_a_public_rule_already_tries(exercise_id):
    rules = EXERCISES[exercise_id].rules
    public = {rule.name for rule in rules if not rule.hidden}
    assert all(rule.extends in public for rule in rules if rule.hidden)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_the_exercise_intro_prints_the_points_table_and_what_it_may_use(exercise_id):
    cells = _solution_cells(exercise_id)
    [table] = [c for c in cells if c.startswith("**What earns points**")]
    assert points_table(EXERCISES[exercise_id]) in table
    assert "**What you may use from `lessonkit`:**" in table
    for allowed in EXERCISES[exercise_id].allowed:
        if exercise_id != "now_change_it":
            assert f"`{allowed}`" in table


def test_exercise_1s_public_checks_hold_fractional_milliseconds_and_a_long_answer():
    cases = [
        c.args for rule in EXERCISES["response_times"].rules if not rule.hidden for c in rule.draw()
    ]
    assert any(isinstance(a, float) and a != int(a) for args in cases for a in args[:2])
    assert any(args[2] >= 1000 for args in cases)


def test_int_rounding_fails_a_public_check_with_a_hint_about_rounding():
    def response_times(prefill_ms, per_token_ms, n_tokens):
        total = int(prefill_ms + n_tokens * per_token_ms)
        return {
            "streaming_first_ms": int(prefill_ms + per_token_ms),
            "blocking_first_ms": total,
            "total_ms": total,
        }

    result = check("response_times", response_times, show=False)
    assert not result.passed and "do not round or use int()" in result.feedback


@pytest.mark.parametrize(
    ("key", "wrong", "words"),
    [
        ("streaming_first_ms", lambda p, t, n: p, "The prefill pass produces the first token"),
        ("streaming_first_ms", lambda p, t, n: p + n * t, "shows as soon as it exists"),
        ("total_ms", lambda p, t, n: p + (n - 1) * t, "not n_tokens - 1"),
        ("total_ms", lambda p, t, n: p + t + n * t, "not one step more"),
        ("blocking_first_ms", lambda p, t, n: p + t, "blocking_first_ms is the total time"),
    ],
)
def test_one_wrong_key_fails_only_its_own_rules_with_the_hint_for_that_mistake(key, wrong, words):
    def response_times(p, t, n):
        right = {"streaming_first_ms": p + t, "blocking_first_ms": p + n * t, "total_ms": p + n * t}
        return {**right, key: wrong(p, t, n)}

    report = evaluate(EXERCISES["response_times"], in_process(response_times), Mode(hidden=True))
    cause = {"streaming_first_ms": "first", "total_ms": "total", "blocking_first_ms": "blocking"}
    own = {
        rule.name
        for rule in EXERCISES["response_times"].rules
        if rule.cause == cause[key] or rule.name.startswith(key)
    }
    failed = [f for f in report.findings if not f.passed]
    assert failed and {f.rule for f in failed} <= own
    assert words in failed[0].hint
    assert report.score >= 6  # one key is at most 4 of 10 points


# ---------------------------------------------------------------------------
# Exercise 3: lenient where it does not matter, strict where it does


def _graded_answers(**changes) -> str:
    answers = ex3.reference() | changes
    return evaluate_answers(EXERCISES["now_change_it"], to_jsonable(answers), Mode(hidden=True))


@pytest.mark.parametrize(
    "changes",
    [
        {"decode_why": " b) "},
        {"decode_why": "(B)"},
        {"if_why": "a"},
        {"drop40_text": "'Your'"},
        {"drop40_text": '"Your" '},
        {"if_1000_complete": "false"},
        {"decode_1000_text": "Your cafe\u0301 order ships."},  # a decomposed é
    ],
)
def test_answers_are_accepted_whatever_the_quotes_case_of_letters_and_accent_form(changes):
    assert _graded_answers(**changes).passed


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"decode_1000_text": "Your café order ships"}, "stops early"),
        ({"decode_1000_text": "your café order ships."}, "Only upper/lower case differs"),
        ({"decode_1000_text": "('Your café order ships.', True)"}, "not the (text, complete) pair"),
        ({"decode_1000_text": "Your  café order ships."}, "Only the spaces differ"),
        ({"decode_5_outcome": "C"}, "only with errors='replace'"),
        ({"decode_why": "A"}, "parsed only once a whole event is in the buffer"),
        ({"if_why": "B"}, "the first one is the ': ping' comment"),
        ({"drop40_why": "D"}, "byte 40 is inside 'data: {'"),
        ({"drop40_why": "B"}, "'data: {' is plain ASCII"),
    ],
)
def test_a_wrong_answer_gets_the_hint_its_difference_calls_for(changes, words):
    report = _graded_answers(**changes)
    [failed] = [f for f in report.findings if not f.passed]
    assert words in failed.hint
    assert "not shown" in failed.expected  # the right answer is never shown


def test_each_wrong_option_of_each_explanation_has_its_own_hint():
    for question in ex3.QUESTIONS:
        if question.kind == "letter":
            right = ex3.reference()[question.key]
            assert set(question.wrong_options) == set("ABCD") - {right}, question.key


def test_independent_questions_never_say_they_share_a_cause():
    text = report_text(_graded_answers(decode_why="A", if_why="C", drop40_why="D"))
    assert "also failing:" in text and "same reason" not in text
