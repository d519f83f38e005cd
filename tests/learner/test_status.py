"""progress() and `lessonkit progress`: every exercise passed, failing k of m or not started.

The record is written as check() writes it (lessonkit.course.record.record), in a course
folder of the test's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lessonkit.cli import main
from lessonkit.course import record
from lessonkit.learner import progress


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "course"
    for marker in ("notebooks", "exercises"):
        (folder / marker).mkdir(parents=True)
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(folder / "exercises")
    return folder


def _checked(exercise_id: str, passed: bool = True) -> None:
    record.record(
        exercise_id, passed=passed, checks_passed=4 if passed else 1, checks=4,
        points=10 if passed else 2, max_points=10,
    )  # fmt: skip


def test_lessonkit_progress_json_is_the_contracts_one_object(course, capsys):
    _checked("response_times")
    _checked("read_stream")
    assert main(["progress", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(e["exercise"], e["state"]) for e in shown["exercises"]][:3] == [
        ("ex1", "passed"),
        ("ex2", "passed"),
        ("ex3", "not started"),
    ]
    assert shown["next"] == "ex3"


def test_lessonkit_progress_prints_a_table_and_what_comes_next(course, capsys):
    _checked("response_times", passed=False)
    assert main(["progress"]) == 0
    printed = capsys.readouterr().out
    assert (
        "failing 1 of 4" in printed and "Next: ex1 (exercises/ex1_response_times.ipynb)." in printed
    )


def test_lessonkit_progress_clear_forgets_everything(course, capsys):
    _checked("response_times")
    assert main(["progress", "--clear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["next"] == "ex1"
    assert not (course / record.RECORD_FILE).exists()


def test_lessonkit_progress_outside_a_course_exits_2_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["progress"]) == 2
    printed = capsys.readouterr()
    assert "not inside a copy of the course" in printed.err
    assert printed.out == ""  # no table of "not started" for a course that is not here


def test_progress_in_a_notebook_shows_a_captioned_table_with_states_in_words(course):
    _checked("response_times")
    _checked("read_stream", passed=False)
    shown = progress()
    page = shown._repr_html_()
    assert "<caption" in page and "Your progress" in page
    assert "failing: 1 of 4 public checks" in page and ">passed<" in page and "not started" in page
    assert "var(--jp-" in page  # colours from JupyterLab's theme
    assert repr(shown) == record.table(record.summary())
    assert shown.next == "ex2"


def test_progress_clear_true_forgets_it(course):
    _checked("response_times")
    assert progress(clear=True).next == "ex1"
