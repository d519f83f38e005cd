"""A class of several exports at once: one row per learner, no file dropped, imports that import.

The README's own form, ``lessonkit grade class/``, on a folder that holds an
nbgrader, a Canvas and a Moodle export side by side, with names in several
scripts (``OBrienPat``, ``núñezjosé``, ``José Núñez``, ``Zoë``), plus what
real exports also hold: a Jupyter copy, a checkpoint, a PDF. Each test reads
one promise of issue 23 from the outputs of one run.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from classroom import COURSE_ANSWER, MISTAKES, solution, with_function, write

from lessonkit import cli
from lessonkit.grading import grade
from lessonkit.grading.report import safe_name
from lessonkit.grading.roster import find_roster

SEED = 5


def _run(paths, out: Path, *extra: str) -> int:
    argv = ["grade", *map(str, paths), "--out", str(out), "--seed", str(SEED), "-j", "2"]
    argv += ["--timeout", "20", *extra]
    return grade.main(cli.build_parser("grade").parse_args(argv))


def _two(folder: Path, prefix: str = "", *, ex2=None) -> list[Path]:
    """Write a learner's exercises 1 and 2 (ex2 may be replaced); return the paths."""
    return [
        write(folder, f"{prefix}ex1_response_times.ipynb", solution("response_times")),
        write(folder, f"{prefix}ex2_read_stream.ipynb", ex2 or solution("read_stream")),
    ]


def _mistake(name: str):
    return with_function(solution("read_stream"), "read_stream", MISTAKES["read_stream"][name])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade one parent folder of three exports; return what the tests read."""
    tmp = tmp_path_factory.mktemp("layouts")
    root = tmp / "class"
    handed: list[Path] = []
    nbgrader = root / "nbgrader" / "submitted"
    handed += _two(nbgrader / "kim" / "ps1")
    handed += _two(nbgrader / "zoë" / "ps1", ex2=_mistake("chunk_is_event"))
    canvas = root / "canvas"
    handed += _two(canvas, "OBrienPat_1201_9001_")
    handed += _two(canvas, "núñezjosé_1202_9002_", ex2=_mistake("chunk_is_event"))
    copied = with_function(solution("read_stream"), "read_stream", COURSE_ANSWER["read_stream"])
    handed += _two(canvas, "leelee_late_1203_9003_", ex2=copied)
    moodle = root / "moodle"
    handed += _two(moodle / "José Núñez_200101_assignsubmission_file_")
    handed += _two(moodle / "Ана Иванова_200102_assignsubmission_file_")
    extra = root / "canvas" / "OBrienPat_1201_9001_ex2_read_stream-Copy1.ipynb"
    handed.append(write(extra.parent, extra.name, solution("read_stream")))
    checkpoint = moodle / "José Núñez_200101_assignsubmission_file_" / ".ipynb_checkpoints"
    handed.append(
        write(checkpoint, "ex1_response_times-checkpoint.ipynb", solution("response_times"))
    )
    pdf = root / "moodle" / "grading_instructions.pdf"
    pdf.write_bytes(b"%PDF-1.4 not a notebook")
    handed.append(pdf)
    out = tmp / "out" / "grades.csv"
    report = tmp / "out" / "report.html"
    canvas_csv, moodle_csv = tmp / "out" / "canvas.csv", tmp / "out" / "moodle.csv"
    code = _run(
        [root],
        out,
        "--report",
        str(report),
        "--feedback",
        str(tmp / "out" / "feedback"),
        "--canvas",
        str(canvas_csv),
        "--moodle",
        str(moodle_csv),
        "--excel",
    )
    raw = out.read_bytes()
    rows = {r["learner"]: r for r in csv.DictReader(raw.decode("utf-8-sig").splitlines())}
    return {
        "code": code,
        "raw": raw,
        "rows": rows,
        "handed": handed,
        "report": report.read_text(encoding="utf-8"),
        "feedback": tmp / "out" / "feedback",
        "canvas": list(csv.reader(canvas_csv.read_text(encoding="utf-8-sig").splitlines())),
        "moodle": list(csv.DictReader(moodle_csv.read_text(encoding="utf-8-sig").splitlines())),
        "root": root,
    }


def test_a_parent_folder_of_three_exports_gives_one_row_per_learner(graded):
    assert graded["code"] == 0
    assert sorted(graded["rows"]) == sorted(
        [
            "kim",
            "zoë",
            "OBrienPat_1201",
            "núñezjosé_1202",
            "leelee_1203",
            "José Núñez_200101",
            "Ана Иванова_200102",
        ]
    )


def test_every_file_handed_over_is_graded_under_one_learner_or_listed_with_its_reason(graded):
    graded_files = [f for row in graded["rows"].values() for f in row["files"].split("; ") if f]
    assert len(graded_files) == len(set(graded_files)) == 14  # seven learners, two each
    roster = find_roster([graded["root"]])
    left = {str(item.path): item.reason for item in roster.not_graded}
    for path in graded["handed"]:
        assert (str(path) in graded_files) != (str(path) in left), path
    assert "a second copy of" in left[str(graded["handed"][-3])]
    assert "checkpoint" in left[str(graded["handed"][-2])]
    assert left[str(graded["handed"][-1])] == "not a notebook"
    for path in left:
        assert Path(path).name in graded["report"]  # the report's "not graded" section


def test_the_lms_ids_have_their_own_column(graded):
    rows = graded["rows"]
    assert (rows["OBrienPat_1201"]["lms"], rows["OBrienPat_1201"]["lms_id"]) == ("canvas", "1201")
    assert (rows["José Núñez_200101"]["lms"], rows["José Núñez_200101"]["lms_id"]) == (
        "moodle",
        "200101",
    )
    assert (rows["zoë"]["lms"], rows["zoë"]["lms_id"]) == ("nbgrader", "zoë")


def test_a_flagged_row_keeps_its_score_but_no_gradebook_grade(graded):
    flagged, honest = graded["rows"]["leelee_1203"], graded["rows"]["kim"]
    assert flagged["status"].startswith("flagged") and flagged["score"] == "10"
    assert flagged["gradebook"] == ""
    assert honest["gradebook"] == honest["score"] == "40"


def test_the_canvas_import_has_its_columns_a_points_row_and_no_grade_for_a_flagged_row(graded):
    header, points, *lines = graded["canvas"]
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Streaming course"]
    assert points[0] == "Points Possible" and points[-1] == "120"
    by_id = {line[1]: line for line in lines}
    assert sorted(by_id) == ["1201", "1202", "1203"]
    assert by_id["1201"][0] == "OBrienPat" and by_id["1201"][-1] == "40"
    assert by_id["1203"][-1] == ""


def test_the_moodle_worksheet_names_each_participant_and_keeps_unicode(graded):
    lines = {line["Identifier"]: line for line in graded["moodle"]}
    assert sorted(lines) == ["Participant 200101", "Participant 200102"]
    assert lines["Participant 200102"]["Full name"] == "Ана Иванова"
    assert lines["Participant 200101"]["Grade"] == "33.33"  # 40 of 120 points, out of 100


def test_excel_gets_a_byte_order_mark_and_accents_survive(graded):
    assert graded["raw"].startswith(b"\xef\xbb\xbf")
    assert "José Núñez_200101".encode() in graded["raw"]


def test_feedback_file_names_keep_letters_of_any_script(graded):
    names = sorted(p.name for p in graded["feedback"].iterdir())
    assert "José_Núñez_200101.txt" in names and "Ана_Иванова_200102.txt" in names
    assert safe_name("../../etc/passwd") == "etc_passwd"


def test_what_to_reteach_counts_the_diagnosed_mistake_over_honest_rows_with_its_smallest_input(
    graded,
):
    report = graded["report"]
    start = report.index('id="reteach"')
    table = report[start : report.index("</table>", start)]
    assert "A chunk is not an event" in table
    assert "2 of 6" in table  # zoë and núñezjosé, of six honest rows: leelee's is apart
    assert "chunks = [" in table


def test_a_second_original_of_one_notebook_is_not_graded_and_the_run_exits_1(tmp_path):
    alice = tmp_path / "class" / "alice"
    write(alice, "ex1_response_times.ipynb", solution("response_times"))
    write(alice / "old", "ex1_response_times.ipynb", solution("response_times"))
    write(tmp_path / "class" / "bob", "ex1_response_times.ipynb", solution("response_times"))
    out = tmp_path / "grades.csv"
    assert _run([tmp_path / "class"], out) == 1
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert [r["learner"] for r in rows] == ["alice", "bob"]
    assert "a second original" in rows[0]["notes"]


def test_the_same_learner_id_in_two_places_is_kept_apart_not_merged(tmp_path):
    for export in ("a", "b"):
        write(tmp_path / export / "sam", "ex1_response_times.ipynb", solution("response_times"))
    roster = find_roster([tmp_path / "a", tmp_path / "b"])
    assert [s.learner for s in roster.submissions] == ["sam (a)", "sam (b)"]
    assert all(len(s.notebooks) == 1 for s in roster.submissions)
    assert roster.submissions[0].notes[0] == (
        f"the learner id sam is also found in {tmp_path / 'b' / 'sam'}: kept apart"
    )


def test_one_learner_id_in_two_folders_of_one_name_is_kept_apart_under_two_labels(tmp_path):
    for export in ("x", "y"):
        write(
            tmp_path / export / "class" / "sam",
            "ex1_response_times.ipynb",
            solution("response_times"),
        )
    roster = find_roster([tmp_path / "x" / "class", tmp_path / "y" / "class"])
    assert [s.learner for s in roster.submissions] == ["sam (x/class)", "sam (y/class)"]


# ---------------------------------------------------------------------------
# Identity (issue 36, defect 3): no learner invented, split or silently merged


def test_a_file_that_is_not_a_notebook_is_never_a_learner_and_nothing_graded_exits_2(
    tmp_path, capsys
):
    notes = tmp_path / "notes.txt"
    notes.write_text("my answers are in the notebooks", encoding="utf-8")
    out = tmp_path / "grades.csv"
    assert _run([notes], out) == 2
    assert not out.exists()  # no row, no CSV
    err = capsys.readouterr().err
    assert "not graded: " in err and "notes.txt: not a notebook" in err


def test_a_learner_folder_without_a_notebook_is_listed_not_a_row(tmp_path):
    moodle = tmp_path / "moodle"
    (moodle / "Eve Empty_200109_assignsubmission_file_").mkdir(parents=True)
    (moodle / "Eve Empty_200109_assignsubmission_file_" / "answers.pdf").write_bytes(b"%PDF")
    write(
        moodle / "Ida Real_200110_assignsubmission_file_",
        "ex1_response_times.ipynb",
        solution("response_times"),
    )
    roster = find_roster([moodle])
    assert [s.learner for s in roster.submissions] == ["Ida Real_200110"]
    assert [item.path.name for item in roster.not_graded] == ["answers.pdf"]


def test_a_resubmission_in_a_folder_per_learner_names_the_learner_lists_both_and_exits_1(
    tmp_path,
):
    week1 = write(
        tmp_path / "class" / "alice" / "week1",
        "ex1_response_times.ipynb",
        solution("response_times"),
    )
    week2 = write(
        tmp_path / "class" / "alice" / "week2",
        "ex1_response_times.ipynb",
        solution("response_times"),
    )
    write(tmp_path / "class" / "bob", "ex2_read_stream.ipynb", solution("read_stream"))
    out = tmp_path / "grades.csv"
    assert _run([tmp_path / "class"], out) == 1  # as for nbgrader: a second original
    rows = {r["learner"]: r for r in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    assert sorted(rows) == ["alice", "bob"]
    graded, left = rows["alice"]["files"], rows["alice"]["notes"]
    assert str(week1) in graded and str(week2) in left and "a second original" in left
    [unexplained] = find_roster([tmp_path / "class"]).unexplained
    assert unexplained.path == week2 and "alice has two originals" in unexplained.reason
    # Until the instructor says which counts, alice's grade waits: none goes to a gradebook.
    assert rows["alice"]["status"] == "error" and rows["alice"]["gradebook"] == ""
    assert "alice has two originals" in rows["alice"]["error"]
    assert rows["bob"]["gradebook"] == rows["bob"]["score"]


def test_a_class_folder_given_one_level_too_high_is_one_learner_with_a_note_saying_so(tmp_path):
    write(
        tmp_path / "term" / "class" / "alice",
        "ex1_response_times.ipynb",
        solution("response_times"),
    )
    write(tmp_path / "term" / "class" / "bob", "ex2_read_stream.ipynb", solution("read_stream"))
    [one] = find_roster([tmp_path / "term"]).submissions
    assert one.learner == "class" and len(one.notebooks) == 2
    assert one.notes[-1] == (
        "graded as one learner from the folders alice, bob of class; if each is a learner, "
        f"grade {tmp_path / 'term' / 'class'} itself"
    )
    [alice, bob] = find_roster([tmp_path / "term" / "class"]).submissions
    assert (alice.learner, bob.learner) == ("alice", "bob") and not alice.notes


def test_one_nbgrader_student_in_two_submitted_trees_is_one_learner_with_a_note(tmp_path):
    first = write(
        tmp_path / "a" / "submitted" / "sam" / "ps1",
        "ex1_response_times.ipynb",
        solution("response_times"),
    )
    second = write(
        tmp_path / "b" / "submitted" / "sam" / "ps2",
        "ex2_read_stream.ipynb",
        solution("read_stream"),
    )
    out = tmp_path / "grades.csv"
    assert _run([tmp_path / "a", tmp_path / "b"], out) == 0
    [row] = csv.DictReader(out.read_text(encoding="utf-8").splitlines())
    assert (row["learner"], row["lms"], row["score"]) == ("sam", "nbgrader", "40")
    assert row["files"] == f"{first}; {second}"
    note = f"sam is found in {first.parents[1]} and {second.parents[1]}: graded as one learner"
    assert note in row["notes"]
