"""Gradebook imports that Moodle and Canvas take as they are (issue 36, defects 1, 2 and 4).

One small class is laid out on disk the way the two LMSs deliver it -- a Moodle
"download submissions in folders" export (``Full Name_<participant>_assignsubmission_file_/``)
and a flat Canvas export (``login_<userid>_<fileid>_<original>``, with ``_late_`` and
``_LATE_``) -- and graded once with ``lessonkit grade``. Each test reads one promise
from the files written, and the two importers are played here from what their
sources do (``mod/assign/feedback/offline/importgradeslib.php`` and ``locallib.php``;
Canvas's ``GradebookImporter``): which columns they look up, which rows they skip,
which headers become new assignments.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from classroom import COURSE_ANSWER, solution, with_function, write, write_learner

from lessonkit import cli
from lessonkit.grading import grade

MOODLE = {  # learner -> participant number
    "Ann Full": "300001",  # all six exercises right: 120 points
    "Ben Part": "300002",  # exercises 1 and 2 right: 40 points
    "Cy Copy": "300003",  # exercise 2 hands its work to the course's reader: flagged
    "Di Broken": "300004",  # exercise 1 right, exercise 6 a corrupt file: an error row
}


def _moodle_folder(root: Path, name: str) -> Path:
    return root / "moodle" / f"{name}_{MOODLE[name]}_assignsubmission_file_"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade a Moodle and a Canvas export once; return what was written, and when."""
    tmp = tmp_path_factory.mktemp("gradebooks")
    root = tmp / "class"
    write_learner(_moodle_folder(root, "Ann Full"))
    for exercise, notebook in (("response_times", "ex1"), ("read_stream", "ex2")):
        write(_moodle_folder(root, "Ben Part"), f"{notebook}_{exercise}.ipynb", solution(exercise))
    copied = with_function(solution("read_stream"), "read_stream", COURSE_ANSWER["read_stream"])
    write(_moodle_folder(root, "Cy Copy"), "ex2_read_stream.ipynb", copied)
    write(_moodle_folder(root, "Di Broken"), "ex1_response_times.ipynb", solution("response_times"))
    (_moodle_folder(root, "Di Broken") / "ex6_parse_sse.ipynb").write_bytes(b"\x00 not JSON")
    canvas = root / "canvas"
    write(canvas, "annc_4001_9001_ex1_response_times.ipynb", solution("response_times"))
    write(canvas, "annc_4001_9002_ex2_read_stream.ipynb", solution("read_stream"))
    write(canvas, "leelee_late_4002_9003_ex1_response_times.ipynb", solution("response_times"))
    write(canvas, "kay_LATE_4003_9004_ex1_response_times.ipynb", solution("response_times"))
    out = tmp / "out"
    argv = ["grade", str(root), "--out", str(out / "grades.csv"), "--seed", "3", "-j", "2"]
    argv += ["--timeout", "30", "--report", str(out / "report.html")]
    argv += ["--moodle", str(out / "moodle.csv"), "--canvas", str(out / "canvas.csv")]
    started = datetime.now().astimezone()
    code = grade.main(cli.build_parser("grade").parse_args(argv))
    finished = datetime.now().astimezone()
    text = {name: (out / name).read_text(encoding="utf-8") for name in ("moodle.csv", "canvas.csv")}
    rows = {r["learner"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    report = (out / "report.html").read_text(encoding="utf-8")
    return {
        "code": code,
        "rows": rows,
        "report": report,
        "started": started,
        "finished": finished,
        "root": root,
        **text,
    }


# ---------------------------------------------------------------------------
# Moodle's offline grading import, played from its source


def moodle_import(text: str, maximum: float, newer_in_moodle: dict[str, datetime]) -> dict:
    """Return participant -> grade, as Moodle's offline grading import would take the file.

    The columns are looked up by their (English) names and the import is refused
    without "Identifier", "Grade" and "Last modified (grade)"; the participant is the
    number after "Participant "; the time is read as strtotime reads RFC 2822. A row is
    skipped when its grade is empty, negative or above the maximum, or when Moodle's own
    grade (``newer_in_moodle``) is newer than the row's time by more than 60 s.
    """
    header, *lines = list(csv.reader(text.splitlines()))
    for needed in ("Identifier", "Grade", "Last modified (grade)"):
        if needed not in header:
            raise AssertionError(f"Moodle refuses the worksheet: no {needed!r} column")
    taken = {}
    for line in lines:
        record = dict(zip(header, line, strict=True))
        participant = record["Identifier"].removeprefix("Participant ")
        modified = parsedate_to_datetime(record["Last modified (grade)"])
        grade_text = record["Grade"]
        if grade_text == "" or not 0 <= float(grade_text) <= maximum:
            continue
        own = newer_in_moodle.get(participant)
        if own is not None and own > modified + timedelta(seconds=60):
            continue
        taken[participant] = float(grade_text)
    return taken


def test_the_moodle_worksheet_has_the_five_columns_its_import_looks_up(graded):
    header = next(csv.reader(graded["moodle.csv"].splitlines()))
    assert header == ["Identifier", "Full name", "Grade", "Maximum grade", "Last modified (grade)"]


def test_each_moodle_row_names_its_participant_by_the_number_in_the_export_folder(graded):
    lines = list(csv.DictReader(graded["moodle.csv"].splitlines()))
    assert {line["Identifier"]: line["Full name"] for line in lines} == {
        f"Participant {number}": name for name, number in MOODLE.items()
    }


def test_the_moodle_time_is_the_runs_time_in_a_form_strtotime_reads(graded):
    for line in csv.DictReader(graded["moodle.csv"].splitlines()):
        stamp = line["Last modified (grade)"]
        # RFC 2822 with its offset, e.g. "Sat, 05 Dec 2026 09:04:00 +0100"
        assert re.fullmatch(
            r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [+-]\d{4}", stamp
        )
        when = parsedate_to_datetime(stamp)
        assert graded["started"] - timedelta(seconds=1) <= when <= graded["finished"]


def test_no_moodle_grade_is_above_the_maximum_the_points_are_scaled_to_it(graded):
    lines = {line["Identifier"]: line for line in csv.DictReader(graded["moodle.csv"].splitlines())}
    assert lines["Participant 300001"]["Grade"] == "100"  # 120 of 120 points
    assert lines["Participant 300002"]["Grade"] == "33.33"  # 40 of 120 points
    assert all(line["Maximum grade"] == "100" for line in lines.values())
    assert graded["rows"]["Ann Full_300001"]["score"] == "120"  # grades.csv keeps the points


@pytest.mark.parametrize(("maximum", "full", "third"), [(120, "120", "40"), (7, "7", "2.33")])
def test_moodle_max_sets_the_maximum_grade_the_points_are_scaled_to(tmp_path, maximum, full, third):
    from lessonkit.grading.gradebooks import write_moodle
    from lessonkit.grading.report import MAX_SCORE, Row

    rows = [
        Row("Ann Full_300001", scores={"all": MAX_SCORE}, lms="moodle", lms_id="300001"),
        Row("Ben Part_300002", scores={"all": MAX_SCORE / 3}, lms="moodle", lms_id="300002"),
    ]
    out = tmp_path / "moodle.csv"
    write_moodle(rows, out, when=datetime.now().astimezone(), maximum=maximum)
    lines = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert [(line["Grade"], line["Maximum grade"]) for line in lines] == [
        (full, str(maximum)),
        (third, str(maximum)),
    ]
    assert moodle_import(out.read_text(encoding="utf-8"), maximum, {}) == {
        "300001": float(full),
        "300002": float(third),
    }


def test_moodle_takes_every_honest_row_and_leaves_a_waiting_one_to_you(graded):
    taken = moodle_import(graded["moodle.csv"], 100, {})
    assert taken == {"300001": 100.0, "300002": 33.33}
    later = graded["finished"] + timedelta(minutes=5)  # a grade you entered after the run
    assert "300002" not in moodle_import(graded["moodle.csv"], 100, {"300002": later})


def test_a_flagged_or_error_row_gets_no_moodle_grade_and_no_grader_status(graded):
    lines = {line["Identifier"]: line for line in csv.DictReader(graded["moodle.csv"].splitlines())}
    assert lines["Participant 300003"]["Grade"] == lines["Participant 300004"]["Grade"] == ""
    assert "Feedback comments" not in graded["moodle.csv"]
    assert "flagged" not in graded["moodle.csv"] and "error" not in graded["moodle.csv"]


# ---------------------------------------------------------------------------
# Canvas's gradebook import, played from its source

NON_ASSIGNMENT = (
    "Current Score",
    "Current Points",
    "Current Grade",
    "Final Score",
    "Final Points",
    "Final Grade",
    "Override Score",
    "Override Grade",
)


def canvas_assignments(header: list[str]) -> list[str]:
    """Return the headers Canvas's importer takes as assignments (a new one unless matched).

    The student columns are Student, ID, then optionally SIS User ID + SIS Login ID
    (+ Integration ID, + Root Account) or SIS Login ID, and Section last; the header is
    refused otherwise. Every later header but the computed scores is an assignment.
    """
    assert "Student" in header[0] and "ID" in header[1], "Canvas refuses the header"
    count = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        count += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        count += 2 + bool(re.search(r"Integration\s+ID", header[4]))
        count += bool(re.search(r"Root\s+Account", header[count - 1]))
    assert "Section" in header[count - 1], "Canvas refuses the header: no Section last"
    return [h for h in header[count:] if not any(n in h for n in NON_ASSIGNMENT)]


def test_the_canvas_import_has_only_the_columns_canvas_knows_and_one_assignment(graded):
    header, points, *lines = list(csv.reader(graded["canvas.csv"].splitlines()))
    assert canvas_assignments(header) == ["Streaming course"]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert points[0] == "Points Possible" and points[-1] == "120"
    assert {line[1]: line[-1] for line in lines} == {"4001": "40", "4002": "10", "4003": "10"}


def test_the_assignment_id_names_the_canvas_column_and_its_points_scale_the_grades(
    graded, tmp_path
):
    canvas = tmp_path / "canvas.csv"
    argv = ["grade", str(graded["root"] / "canvas"), "--out", str(tmp_path / "grades.csv")]
    argv += ["--seed", "3", "--canvas", str(canvas), "--assignment", "Streaming course"]
    argv += ["--assignment-id", "4242", "--canvas-points", "60"]
    assert grade.main(cli.build_parser("grade").parse_args(argv)) == 0
    header, points, *lines = list(csv.reader(canvas.read_text(encoding="utf-8").splitlines()))
    assert canvas_assignments(header) == ["Streaming course (4242)"]
    assert points[0] == "Points Possible" and points[-1] == "60"
    assert {line[1]: line[-1] for line in lines} == {"4001": "20", "4002": "5", "4003": "5"}


def test_canvas_late_marks_in_any_case_stay_in_the_grades_csv_and_the_report_not_the_import(
    graded,
):
    rows = graded["rows"]
    assert (rows["leelee_4002"]["late"], rows["kay_4003"]["late"]) == ("yes", "yes")
    assert rows["annc_4001"]["late"] == "" and rows["kay_4003"]["lms"] == "canvas"
    assert "kay_LATE_4003_9004_ex1_response_times.ipynb" in rows["kay_4003"]["notes"]
    assert "2 row(s) were handed in late" in graded["report"]
    assert "late" not in graded["canvas.csv"].lower()


# ---------------------------------------------------------------------------
# Error rows


def test_an_error_row_has_an_empty_gradebook_cell_and_is_a_row_to_look_at(graded):
    row = graded["rows"]["Di Broken_300004"]
    assert row["status"] == "error" and row["score"] == "10" and row["gradebook"] == ""
    table = graded["report"][graded["report"].index('id="not-ok"') :]
    table = table[: table.index("</table>")]
    assert "Di Broken_300004" in table and "ex6_parse_sse.ipynb: not a notebook" in table


def test_the_class_grades_with_no_file_left_unexplained(graded):
    assert graded["code"] == 0
