"""A real class, graded end to end: one row per learner, honest scores, hints that name the bug.

One class made of every kind of submission issue 13 lists -- right answers
written differently, typical mistakes, loose readers, the course's own answer
handed in, Jupyter copies, a corrupt file, and the layouts of Canvas, Moodle,
Gradescope and nbgrader -- is graded once with `lessonkit grade`; each test
reads one thing from its outputs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from classroom import (
    COURSE_ANSWER,
    EX3_FROM_THE_KEY,
    MISTAKES,
    RIGHT,
    solution,
    with_answers,
    with_cell_before_check,
    with_function,
    write,
    write_learner,
)

from lessonkit import cli
from lessonkit.grading import grade
from lessonkit.grading.exercises import EXERCISES

SEED = 11


def _grade(paths, out: Path, *extra: str) -> int:
    argv = ["grade", *map(str, paths), "--out", str(out), "--seed", str(SEED), "-j", "2"]
    argv += ["--timeout", "10", "--feedback", str(out.parent / "feedback"), *extra]
    return grade.main(cli.build_parser("grade").parse_args(argv))


def _mistake(exercise_id: str, name: str):
    return with_function(solution(exercise_id), exercise_id, MISTAKES[exercise_id][name])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the class once; return (rows by learner, rule lines, feedback folder, report html)."""
    tmp = tmp_path_factory.mktemp("class")
    folders = tmp / "folders"
    write_learner(folders / "alice")
    write_learner(folders / "bea", {ex: with_function(solution(ex), ex, RIGHT[ex]) for ex in RIGHT})
    write_learner(
        folders / "carl",
        {"response_times": _mistake("response_times", "first_is_prefill"),
         "read_stream": _mistake("read_stream", "chunk_is_event")},
    )  # fmt: skip
    write_learner(
        folders / "dana",
        {"response_times": _mistake("response_times", "rounded"),
         "read_stream": _mistake("read_stream", "loose_ping"),
         "read_anthropic": _mistake("read_anthropic", "loose_ping")},
    )  # fmt: skip
    write_learner(
        folders / "eve",
        {
            **{ex: with_function(solution(ex), ex, src) for ex, src in COURSE_ANSWER.items()},
            "now_change_it": with_cell_before_check(solution("now_change_it"), EX3_FROM_THE_KEY),
        },
    )
    write_learner(folders / "fay", {"read_stream": _mistake("read_stream", "crash_on_done")})
    write(folders / "fay", "ex2_read_stream-Copy1.ipynb", solution("read_stream"))
    (folders / "fay" / "ex6_parse_sse.ipynb").write_bytes(b"\x00\xff not a notebook")
    write_learner(folders / "hal", {"read_stream": _mistake("read_stream", "loose_done")})
    write_learner(
        folders / "ivy",
        {"now_change_it": with_answers(solution("now_change_it"),
                                       decode_1000_text="Your café order ships",
                                       drop40_why="D", if_why=" a) ", drop40_text="'Your'")},
    )  # fmt: skip
    canvas = tmp / "canvas"
    write(canvas, "smithjo_12345_90001_ex1_response_times.ipynb", solution("response_times"))
    write(canvas, "smithjo_12345_90002_ex2_read_stream.ipynb", solution("read_stream"))
    write(canvas, "leelee_late_23456_90003_ex1_response_times.ipynb", solution("response_times"))
    moodle = tmp / "moodle"
    write(moodle / "Jo Smith_123456_assignsubmission_file_", "ex1_response_times.ipynb",
          solution("response_times"))  # fmt: skip
    scope = tmp / "gradescope"
    write(scope / "submission_987", "ex1_response_times.ipynb", solution("response_times"))
    (scope / "submission_metadata.yml").write_text(
        "submission_987:\n  :submitters:\n  - :name: Kai Park\n    :sid: 'kp42'\n"
        "    :email: kai@example.edu\n  :score: 0\n",
        encoding="utf-8",
    )
    nbgrader = tmp / "course" / "submitted"
    write(nbgrader / "kim" / "ps1", "ex1_response_times.ipynb", solution("response_times"))
    write(nbgrader / "kim" / "ps1", "ex2_read_stream.ipynb", solution("read_stream"))
    out = tmp / "out" / "grades.csv"
    report = tmp / "out" / "report.html"
    roots = [folders, canvas, moodle, scope, nbgrader]
    assert _grade(roots, out, "--report", str(report)) == 0
    rows = {r["learner"]: r for r in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    rules = list(csv.DictReader((tmp / "out" / "grades_rules.csv").read_text().splitlines()))
    return rows, rules, tmp / "out" / "feedback", report.read_text(encoding="utf-8"), tmp


def _feedback(graded, learner: str) -> str:
    return (graded[2] / f"{learner}.txt").read_text(encoding="utf-8")


def _section(text: str, exercise_id: str) -> str:
    start = text.index(f"\n{exercise_id}: ")
    end = text.find("=" * 72, start)
    return text[start : end if end > 0 else None]


# ---------------------------------------------------------------------------
# One row per learner, whatever the layout


def test_every_layout_gives_one_row_per_learner_named_by_an_id_not_a_path(graded):
    rows = graded[0]
    assert sorted(rows) == sorted(
        ["alice", "bea", "carl", "dana", "eve", "fay", "hal", "ivy",
         "smithjo_12345", "leelee_23456", "Jo Smith_123456", "kp42", "kim"]
    )  # fmt: skip
    assert all(r["max_score"] == "120" for r in rows.values())


def test_a_canvas_export_groups_a_learners_files_into_one_row(graded):
    row = graded[0]["smithjo_12345"]
    assert (row["response_times"], row["read_stream"], row["score"]) == ("10", "30", "40")


def test_nbgrader_gradescope_and_moodle_folders_are_learners(graded):
    rows = graded[0]
    assert rows["kim"]["score"] == "40"
    assert rows["kp42"]["response_times"] == "10"
    assert rows["Jo Smith_123456"]["response_times"] == "10"


def test_a_jupyter_copy_is_ignored_with_a_note_and_a_corrupt_file_is_an_error_on_its_exercise(
    graded,
):
    row = graded[0]["fay"]
    assert "ignored ex2_read_stream-Copy1.ipynb" in row["notes"]
    assert "ex6_parse_sse.ipynb: not a notebook" in row["error"] and "parse_sse" in row["error"]
    assert row["parse_sse"] == "0" and row["status"] == "error"
    assert row["response_times"] == "10" and row["resume"] == "15"


# ---------------------------------------------------------------------------
# Honest scores


def test_right_answers_written_differently_get_full_marks_and_no_flag(graded):
    for learner in ("alice", "bea", "kim"):
        row = graded[0][learner]
        assert (row["status"], row["flags"]) == ("ok", ""), learner
    assert graded[0]["alice"]["score"] == graded[0]["bea"]["score"] == "120"


def test_one_wrong_key_costs_only_that_keys_points(graded):
    assert graded[0]["carl"]["response_times"] == "6"  # the first token: 3 public + 1 hidden


def test_a_reader_that_crashes_on_done_keeps_only_what_it_really_gets_right(graded):
    passed = {
        r["rule"] for r in graded[1]
        if (r["learner"], r["exercise"], r["passed"]) == ("fay", "read_stream", "1")
    }  # fmt: skip
    assert passed == {  # streams that end before [DONE]: it reads those right
        "complete only after [DONE] arrives",
        "a dropped connection keeps the text so far, with complete=False",
        "drops anywhere in a longer answer",
    }
    assert graded[0]["fay"]["read_stream"] == "5"


def test_loose_readers_lose_the_look_alike_rules_public_and_hidden(graded):
    rules = {(r["learner"], r["rule"]): r["passed"] for r in graded[1]}
    lookalike = "a token whose text holds 'ping', '[DONE]', 'data:' or ': ping' is still text"
    hidden = "longer answers with protocol-like tokens and heartbeats, cut at random"
    for learner in ("dana", "hal"):
        assert rules[(learner, lookalike)] == "0" and rules[(learner, hidden)] == "0", learner
    assert (
        rules[("dana", "a text that holds 'ping', 'message_stop' or 'event:' is still text")] == "0"
    )
    assert rules[("alice", lookalike)] == "1"


# ---------------------------------------------------------------------------
# The course's own answer


def test_handing_the_work_to_the_course_answer_earns_nothing_and_is_flagged(graded):
    row = graded[0]["eve"]
    assert row["flags"].split(";") == [
        "course-answer:now_change_it",
        "course-answer:parse_sse",
        "course-answer:read_stream",
        "course-answer:response_times",
    ]
    assert (row["read_stream"], row["parse_sse"], row["response_times"]) == ("0", "0", "0")
    assert row["now_change_it"] == "0" and row["status"] == "flagged: uses the course's answer"
    text = _feedback(graded, "eve")
    assert "write your own reader; lessonkit.client.read_stream is the course's answer" in text
    assert "write your own parser; lessonkit.sse.SSEDecoder is the course's answer" in text


def test_exercise_4_may_use_lessonkit_sse_for_the_wire_format(graded):
    assert graded[0]["eve"]["read_anthropic"] == "20"


def test_allow_lessonkit_accepts_the_course_answer_with_a_note(graded, tmp_path):
    out = tmp_path / "grades.csv"
    assert _grade([graded[4] / "folders" / "eve"], out, "--allow-lessonkit") == 0
    [row] = csv.DictReader(out.read_text(encoding="utf-8").splitlines())
    assert (row["learner"], row["flags"], row["status"], row["score"]) == ("eve", "", "ok", "120")
    assert "read_stream uses lessonkit.client.read_stream (allowed)" in row["notes"]


# ---------------------------------------------------------------------------
# Hints that name the real bug


def test_the_first_token_at_the_prefill_is_told_about_the_first_token_not_the_total(graded):
    section = _section(_feedback(graded, "carl"), "response_times")
    assert "FAILED  streaming shows the first token after prefill plus one token time" in section
    assert "The prefill pass produces the first token" in section
    assert "Total time" not in section


def test_rounding_fails_a_public_check_that_names_the_rounding(graded):
    section = _section(_feedback(graded, "dana"), "response_times")
    assert "input     response_times(prefill_ms=12.5, per_token_ms=7.25, n_tokens=33)" in section
    assert "Keep the fractional milliseconds: do not round or use int()" in section


def test_a_chunk_as_event_reader_with_its_done_check_right_is_told_a_chunk_is_not_an_event(graded):
    section = _section(_feedback(graded, "carl"), "read_stream")
    assert "hint      A chunk is not an event" in section
    assert "Compare the data with '[DONE]'" not in section


def test_a_loose_reader_is_told_to_find_comments_and_the_end_by_their_place(graded):
    assert "Tell a comment by its first character" in _section(
        _feedback(graded, "dana"), "read_stream"
    )
    assert "'[DONE]'; a token whose text contains [DONE] is still text" in _section(
        _feedback(graded, "hal"), "read_stream"
    )


def test_predictions_get_the_hint_their_difference_calls_for_and_never_a_shared_cause(graded):
    section = _section(_feedback(graded, "ivy"), "now_change_it")
    assert "stops early: compare its last characters" in section
    assert "is any character cut" not in section
    assert "Count the bytes: byte 40 is inside 'data: {'" not in section.split("FAILED")[0]
    assert "probably for the same reason" not in section and "share" not in section
    assert "also failing:" in section  # the distractor D, named
    row = graded[0]["ivy"]
    assert (
        row["now_change_it"] == "11"
    )  # 15 - 2 (the text) - 2 (drop40_why); " a) " and "'Your'" count


# ---------------------------------------------------------------------------
# Outputs for the instructor


def test_the_per_rule_csv_adds_up_to_the_grades(graded):
    rows, rules = graded[0], graded[1]
    assert list(rules[0]) == [
        "learner",
        "exercise",
        "rule",
        "passed",
        "points",
        "max_points",
        "hidden",
    ]
    for learner, row in rows.items():
        for exercise_id in EXERCISES:
            mine = [r for r in rules if r["learner"] == learner and r["exercise"] == exercise_id]
            if mine:
                assert sum(float(r["points"]) for r in mine) == float(row[exercise_id])


def test_the_report_draws_scores_means_rule_failures_and_what_to_reteach(graded):
    html_text = graded[3]
    for figure in ("score-distribution", "exercise-means", "rules-read_stream", "reteach"):
        assert f'id="{figure}"' in html_text
    assert f"--seed {SEED}" in html_text
    assert "the whole stream in one chunk" in html_text


def test_hidden_inputs_depend_on_the_seed_only():
    exercise = EXERCISES["read_stream"]
    hidden = [rule for rule in exercise.rules if rule.hidden]
    first = [[c.args for c in rule.draw(1)] for rule in hidden]
    assert first == [[c.args for c in rule.draw(1)] for rule in hidden]
    assert first != [[c.args for c in rule.draw(2)] for rule in hidden]
