"""The progress record: each check's outcome kept in the learner's course folder, read back.

Each test builds a course folder of its own (notebooks/ and exercises/) and unsets
LESSONKIT_RECORD_DIR where it tests the course folder itself (the test run sets it, so
that no run of the course writes into the checkout).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lessonkit.course import record
from lessonkit.course.folder import EXERCISES

WHEN = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course folder (notebooks/, exercises/) as the working folder; no record override."""
    folder = tmp_path / "course"
    for marker in ("notebooks", "exercises"):
        (folder / marker).mkdir(parents=True)
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(folder / "exercises")
    return folder


def _pass(exercise_id: str, **changes) -> record.Place:
    outcome = dict(passed=True, checks_passed=4, checks=4, points=10, max_points=10, now=WHEN)
    return record.record(exercise_id, **{**outcome, **changes})


def test_a_check_is_recorded_in_the_course_folder_found_from_the_notebooks_folder(course):
    place = _pass("response_times")
    assert place.file == course / record.RECORD_FILE
    saved = json.loads(place.file.read_text())
    assert saved["exercises"]["ex1"] == {
        "id": "response_times",
        "passed": True,
        "checks_passed": 4,
        "checks": 4,
        "points": 10,
        "max_points": 10,
        "checked_at": "2026-12-05T09:30:00+00:00",
    }


def test_whole_points_are_written_as_whole_numbers_whatever_type_the_check_gave(course):
    place = _pass("read_stream", points=26.0, max_points=30.0)
    _pass("now_change_it", points=12.5, max_points=15)
    saved = json.loads(place.file.read_text())["exercises"]
    ex2, ex3 = saved["ex2"], saved["ex3"]
    assert [(v, type(v)) for v in (ex2["points"], ex2["max_points"])] == [(26, int), (30, int)]
    assert [(v, type(v)) for v in (ex3["points"], ex3["max_points"])] == [(12.5, float), (15, int)]


def test_the_record_holds_no_code_only_the_outcome(course):
    _pass("read_stream", passed=False, checks_passed=3, checks=8, points=12, max_points=30)
    text = (course / record.RECORD_FILE).read_text()
    assert set(json.loads(text)["exercises"]["ex2"]) == {
        "id", "passed", "checks_passed", "checks", "points", "max_points", "checked_at",
    }  # fmt: skip


def test_two_passed_exercises_show_as_passed_the_rest_not_started_and_the_third_next(course):
    _pass("response_times")
    _pass("read_stream")
    progress = record.summary()
    states = [(e["exercise"], e["state"]) for e in progress["exercises"]]
    assert states == [
        ("ex1", "passed"),
        ("ex2", "passed"),
        ("ex3", "not started"),
        ("ex4", "not started"),
        ("ex5", "not started"),
        ("ex6", "not started"),
    ]
    assert progress["next"] == "ex3"


def test_a_failing_check_shows_k_of_m_and_the_last_check_wins(course):
    _pass("read_stream")
    _pass("read_stream", passed=False, checks_passed=5, checks=8, points=18, max_points=30)
    (line,) = [e for e in record.summary()["exercises"] if e["exercise"] == "ex2"]
    assert line["state"] == "failing" and (line["checks_passed"], line["checks"]) == (5, 8)
    assert re.search(r"ex2 read_stream +failing 5 of 8 +18/30 ", record.table(record.summary()))
    assert record.summary()["next"] == "ex1"


def test_with_every_exercise_passed_nothing_is_next_and_the_table_says_hand_in(course):
    for stem in EXERCISES:
        _pass(stem.partition("_")[2])
    progress = record.summary()
    assert progress["next"] is None
    assert "submit()" in record.table(progress)


def test_an_unknown_exercise_id_records_nothing(course):
    _pass("not_an_exercise")
    assert not (course / record.RECORD_FILE).exists()


def test_progress_survives_a_new_process_since_it_is_a_file(course):
    _pass("response_times")
    assert record.summary(course / "notebooks")["exercises"][0]["state"] == "passed"


def test_one_call_clears_the_progress(course):
    _pass("response_times")
    record.clear()
    assert not (course / record.RECORD_FILE).exists()
    assert {e["state"] for e in record.summary()["exercises"]} == {"not started"}


def test_two_copies_of_the_course_keep_two_records(course, tmp_path, monkeypatch):
    other = tmp_path / "other"
    for marker in ("notebooks", "exercises"):
        (other / marker).mkdir(parents=True)
    _pass("response_times")
    monkeypatch.chdir(other / "exercises")
    assert record.summary()["exercises"][0]["state"] == "not started"
    assert record.where().file == other / record.RECORD_FILE


def test_the_record_dir_variable_takes_the_record_out_of_the_course_folder(
    course, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(record.RECORD_DIR_ENV, str(elsewhere))
    _pass("response_times")
    assert (elsewhere / record.RECORD_FILE).exists()
    assert not (course / record.RECORD_FILE).exists()


def test_outside_a_course_folder_nothing_is_kept_and_the_note_says_why(tmp_path, monkeypatch):
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    place = _pass("response_times")
    assert not place.kept and "not inside a copy of the course" in place.note
    progress = record.summary()
    assert progress["record"] is None and "not inside a copy of the course" in record.table(
        progress
    )


def test_in_the_browser_without_storage_the_note_says_progress_cannot_be_kept(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(record.sys, "platform", "emscripten")
    assert record.where().note == record.NO_BROWSER_STORAGE


def test_a_read_only_course_folder_is_told_apart_from_a_writable_one(course, tmp_path, monkeypatch):
    # Root writes anywhere, so whether a folder is writable is asked of os.access.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(record, "_writable", lambda folder: folder != course)
    place = _pass("response_times")
    assert place.file.is_relative_to(tmp_path / "home")
    assert "read-only" in place.note


def test_a_record_that_cannot_be_written_is_a_note_not_an_error(course, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(record, "_write", refuse)
    place = _pass("response_times")
    assert not place.kept and "could not be saved" in place.note


def test_a_damaged_record_reads_as_no_progress_and_is_replaced_by_the_next_check(course):
    (course / record.RECORD_FILE).write_text("{not json")
    assert record.summary()["next"] == "ex1"
    _pass("response_times")
    assert record.summary()["exercises"][0]["state"] == "passed"
