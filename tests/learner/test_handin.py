"""Handing in: one zip of the six notebooks as saved and a manifest, a table, a receipt.

These tests build a course folder of their own and give hand_in() a checker that
answers from a table (the real one runs the grader's public checks: tests/learner/
test_handin_checks.py), so each behaviour of the hand-in itself is seen on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lessonkit.course import archive
from lessonkit.course.folder import EXERCISES
from lessonkit.learner import dropbox, handin
from lessonkit.learner.handin import ExerciseResult, HandInProblem, hand_in

WHEN = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
FILES = [f"{stem}.ipynb" for stem in EXERCISES]


def _notebook(marker: str) -> bytes:
    cell = {
        "cell_type": "code",
        "metadata": {},
        "source": marker,
        "outputs": [],
        "execution_count": None,
    }
    return json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    ).encode()


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course folder with the six exercise notebooks, the working folder its notebooks/."""
    folder = tmp_path / "course"
    (folder / "notebooks").mkdir(parents=True)
    (folder / "exercises").mkdir()
    for file in FILES:
        (folder / "exercises" / file).write_bytes(_notebook(file))
    monkeypatch.delenv("LESSONKIT_RECORD_DIR", raising=False)
    monkeypatch.delenv(handin.DROPBOX_ENV, raising=False)
    monkeypatch.chdir(folder / "notebooks")
    return folder


def passing(notebooks):
    return {f: ExerciseResult(f, "passed", 4, 4, 10, 10) for f in notebooks}


def test_the_zip_holds_the_six_notebooks_as_saved_and_a_manifest(course):
    handed = hand_in(checker=passing, now=WHEN)
    assert handed.zip_path == course / "streaming-course-handin.zip"
    with zipfile.ZipFile(handed.zip_path) as zipped:
        assert sorted(zipped.namelist()) == sorted([archive.MANIFEST, *FILES])
        for file in FILES:
            assert zipped.read(file) == (course / "exercises" / file).read_bytes()
        manifest = json.loads(zipped.read(archive.MANIFEST))
    assert manifest["kind"] == archive.HANDIN_KIND and manifest["handed_in"] == WHEN.isoformat()
    line = manifest["exercises"][1]
    assert line["exercise"] == "ex2" and line["state"] == "passed"
    assert (
        line["sha256"] == hashlib.sha256((course / "exercises" / FILES[1]).read_bytes()).hexdigest()
    )


def test_the_receipt_is_the_sha256_of_the_zip_as_written(course):
    handed = hand_in(checker=passing, now=WHEN)
    assert handed.receipt == hashlib.sha256(handed.zip_path.read_bytes()).hexdigest()
    assert f"Your receipt (the zip's sha256): {handed.receipt}" in handin.table(handed)


def test_a_missing_exercise_is_named_and_the_rest_is_handed_in(course):
    (course / "exercises" / FILES[5]).unlink()
    handed = hand_in(checker=passing, now=WHEN)
    assert [r.state for r in handed.results] == ["passed"] * 5 + ["missing"]
    assert "Not handed in (no notebook): ex6. The rest is in the zip." in handin.table(handed)
    with zipfile.ZipFile(handed.zip_path) as zipped:
        assert FILES[5] not in zipped.namelist() and len(zipped.namelist()) == 6
        assert json.loads(zipped.read(archive.MANIFEST))["exercises"][5]["file"] is None


def test_nothing_in_the_learners_folder_changes_but_the_zip(course):
    before = {p: p.read_bytes() for p in course.rglob("*") if p.is_file()}
    handed = hand_in(checker=passing, now=WHEN)
    after = {p: p.read_bytes() for p in course.rglob("*") if p.is_file() and p != handed.zip_path}
    assert after == before


def test_the_table_has_each_exercises_checks_points_and_what_is_missing(course):
    def mixed(notebooks):
        results = passing(notebooks)
        results[FILES[1]] = ExerciseResult(
            FILES[1], "failing", 5, 8, 18, 30, "a character split across chunks survives"
        )
        return results

    text = handin.table(hand_in(checker=mixed, now=WHEN))
    assert text.splitlines()[0].split() == ["exercise", "checks", "points", "missing"]
    assert "ex2 read_stream     5/8     18/30   a character split across chunks survives" in text


def test_a_name_goes_into_the_zips_name_and_manifest_as_safe_characters(course):
    handed = hand_in(name="José Núñez/../x", checker=passing, now=WHEN)
    assert handed.zip_path.parent == course
    assert handed.zip_path.name == "streaming-course-handin-José-Núñez-x.zip"
    assert archive.read_handin(handed.data).name == "José Núñez/../x"


def test_out_writes_the_zip_to_another_folder_and_refuses_one_that_does_not_exist(course, tmp_path):
    handed = hand_in(out=tmp_path, checker=passing, now=WHEN)
    assert handed.zip_path == tmp_path / "streaming-course-handin.zip"
    with pytest.raises(HandInProblem, match="no such folder"):
        hand_in(out=tmp_path / "nowhere", checker=passing, now=WHEN)


def test_a_folder_the_zip_cannot_be_written_to_is_a_clear_problem_not_a_traceback(course, capsys):
    unwritable = Path("/proc")  # exists, and no file can be made in it, even by root
    with pytest.raises(HandInProblem, match=r"The zip cannot be written to /proc \(No such"):
        hand_in(out=unwritable, checker=passing, now=WHEN)
    from lessonkit.cli import main

    assert main(["submit", "--out", str(unwritable)]) == 2
    assert "lessonkit submit: The zip cannot be written to /proc" in capsys.readouterr().err
    assert sorted(p.name for p in (course / "exercises").iterdir()) == sorted(FILES)


def test_a_missing_record_dir_is_named_as_the_variable_not_as_out(course, tmp_path, monkeypatch):
    monkeypatch.setenv("LESSONKIT_RECORD_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(HandInProblem, match=r"^\$LESSONKIT_RECORD_DIR .*nowhere: no such folder"):
        hand_in(checker=passing, now=WHEN)


def test_in_the_browser_without_storage_hand_in_says_why_and_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no course folder: JupyterLite's drive is not mounted
    monkeypatch.setattr(handin.sys, "platform", "emscripten")
    with pytest.raises(HandInProblem) as problem:
        hand_in(checker=passing)
    assert "nor work handed in from the kernel, in this browser" in str(problem.value)
    assert "File > Download" in str(problem.value)


def test_outside_a_course_folder_hand_in_says_where_to_go(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HandInProblem, match="not inside a copy of the course"):
        hand_in(checker=passing)


def test_the_same_notebooks_handed_in_twice_give_the_same_receipt(course):
    first = hand_in(checker=passing, now=WHEN)
    assert hand_in(checker=passing, now=WHEN).receipt == first.receipt


def test_the_hand_in_reads_back_as_a_hand_in_for_the_grader(course):
    handed = hand_in(checker=passing, now=WHEN)
    read = archive.read_handin(handed.zip_path.read_bytes())
    assert set(read.notebooks) == set(FILES) and read.hash_notes() == []


def test_the_warning_names_each_notebooks_last_saved_time(course):
    handed = hand_in(checker=passing, now=WHEN)
    warning = handin.saved_warning(handed, now=WHEN)
    assert "autosaves only every 120 s" in warning
    assert all(file in warning for file in FILES)


# --- the class drop box on a hub ------------------------------------------------------------------


def test_with_a_drop_box_the_hand_in_also_goes_there_under_the_users_name(
    course, tmp_path, monkeypatch
):
    box = tmp_path / "dropbox"
    box.mkdir(mode=0o1733)
    monkeypatch.setenv(handin.DROPBOX_ENV, str(box))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setattr(dropbox, "_unix_user", lambda: "jovyan")  # one shared Unix account
    monkeypatch.setattr(dropbox, "_is_unix_user", lambda name: name == "jovyan")
    handed = hand_in(name="Bob", checker=passing, now=WHEN)  # --name never names the file
    assert handed.dropbox_path == box / "alice.zip"
    assert (box / "alice.zip").read_bytes() == handed.data
    assert (box / "alice.zip").stat().st_mode & 0o777 == 0o600
    assert "Handed in to the class drop box as alice.zip." in handin.table(handed)


def test_a_drop_box_that_cannot_be_written_is_a_note_and_the_zip_is_kept(
    course, tmp_path, monkeypatch
):
    monkeypatch.setenv(handin.DROPBOX_ENV, str(tmp_path / "missing-box"))
    handed = hand_in(checker=passing, now=WHEN)
    assert handed.zip_path.exists() and handed.dropbox_path is None
    assert "could not be put in the class drop box" in handin.table(handed)


# --- `lessonkit submit` ---------------------------------------------------------------------------


def test_lessonkit_submit_outside_a_course_exits_2_with_the_message(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    from lessonkit.cli import main

    assert main(["submit"]) == 2
    assert "not inside a copy of the course" in capsys.readouterr().err


def test_lessonkit_submit_prints_the_table_receipt_and_last_saved_times(
    course, monkeypatch, capsys
):
    monkeypatch.setattr(handin, "_public_results", passing)
    from lessonkit.cli import main

    assert main(["submit", "--name", "alice"]) == 0
    printed = capsys.readouterr().out
    assert (
        "Your receipt (the zip's sha256): " in printed and "autosaves only every 120 s" in printed
    )
    assert (course / "streaming-course-handin-alice.zip").exists()


# --- the notebook's button --------------------------------------------------------------------------


def test_the_button_hands_in_only_when_pressed_and_offers_the_zip(course):
    from lessonkit.learner.handin_button import HandInButton

    calls = []

    def hand_in_now():
        calls.append(1)
        return hand_in(checker=passing, now=WHEN)

    button = HandInButton(hand_in_now, handin.table, handin.saved_warning)
    assert calls == []
    button._on_message(button, {"event": "hand-in", "saved": True}, [])
    assert calls == [1]
    assert button.status.startswith("Handed in. Receipt: ")
    assert button.zip_name == "streaming-course-handin.zip"
    assert (
        __import__("base64").b64decode(button.zip_base64) == (course / button.zip_name).read_bytes()
    )
    assert "autosaves" not in button.report  # the page saved first


def test_the_button_warns_with_last_saved_times_when_the_page_could_not_save(course):
    from lessonkit.learner.handin_button import HandInButton

    button = HandInButton(
        lambda: hand_in(checker=passing, now=WHEN), handin.table, handin.saved_warning
    )
    button._on_message(button, {"event": "hand-in", "saved": False}, [])
    assert "autosaves only every 120 s" in button.report


def test_a_hand_in_that_fails_says_so_in_the_page_and_the_kernel_goes_on(course):
    from lessonkit.learner.handin_button import HandInButton

    def broken():
        raise HandInProblem("--out /x: no such folder; make it first or pick another.")

    button = HandInButton(broken, handin.table, handin.saved_warning)
    button._on_message(button, {"event": "hand-in", "saved": True}, [])
    assert (
        button.status
        == "Could not hand in: --out /x: no such folder; make it first or pick another."
    )


def test_submit_shows_the_button_in_a_box_whose_twin_says_how_to_hand_in(course):
    from lessonkit.learner.handin_button import HandInButton

    box = handin.submit()
    assert isinstance(box.children[0], HandInButton)
    assert box.text_twin.startswith("▶ Run this cell to hand in your work.")
    assert "lessonkit submit" in box.twin_bundle()["text/plain"]


def test_submit_shows_nothing_while_lessonkit_grade_runs_the_notebook(course, monkeypatch):
    monkeypatch.setenv("LESSONKIT_GRADING", "1")
    assert handin.submit() is None


def test_the_record_dir_variable_also_takes_the_zip_out_of_the_course_folder(
    course, tmp_path, monkeypatch
):
    monkeypatch.setenv("LESSONKIT_RECORD_DIR", str(tmp_path))
    handed = hand_in(checker=passing, now=WHEN)
    assert handed.zip_path.parent == tmp_path and not list(course.glob("*.zip"))
    assert os.environ["LESSONKIT_RECORD_DIR"] == str(tmp_path)
