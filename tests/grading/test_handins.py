"""`lessonkit grade` takes submit()'s zip wherever it takes notebooks, and scores its rerun.

A course folder holding the solved notebooks (solutions/ copied into exercises/) is
handed in with the real `submit` code path (``hand_in`` and the grader's public
checks). One class is then graded once: the six notebooks themselves in a folder per
learner, and the same hand-in inside a Moodle export, a Canvas export, nbgrader's
submitted/ and given on the command line, a hand-in whose ex6 was swapped for the
blank exercise, one handed in without ex6, and a learner who handed in both loose
notebooks and a zip. Each test reads one promise from that run. The drop box, and
what the roster makes of links, FIFOs, files planted under another's name and a
second zip, have runs of their own.
"""

from __future__ import annotations

import csv
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from handins import FILES, ROOT, hand_in_here, manifest_bytes, solved_course, zip_bytes

from lessonkit import cli
from lessonkit.course import archive
from lessonkit.grading import grade
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.roster import find_roster

SEED = 3
ZIP = "streaming-course-handin.zip"


def _grade(paths, out: Path, *extra: str) -> int:
    argv = ["grade", *map(str, paths), "--out", str(out), "--seed", str(SEED), "-j", "2"]
    argv += ["--timeout", "30", *extra]
    return grade.main(cli.build_parser("grade").parse_args(argv))


def _put(data: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def handed(tmp_path_factory):
    """Hand in a solved course whole, then without ex6; return both and the course."""
    tmp = tmp_path_factory.mktemp("handed")
    course = solved_course(tmp / "course")
    whole = hand_in_here(course, tmp / "whole")
    (course / "exercises" / FILES[5]).unlink()
    without_ex6 = hand_in_here(course, tmp / "without-ex6")
    return {"whole": whole, "without_ex6": without_ex6}


@pytest.fixture(scope="module")
def graded(handed, tmp_path_factory):
    """Grade one class of every way a hand-in arrives; return rows, stderr and paths."""
    tmp = tmp_path_factory.mktemp("class")
    data = handed["whole"].data
    folders = tmp / "folders"
    for file in FILES:  # the reference: the six notebooks themselves
        _put((ROOT / "solutions" / file).read_bytes(), folders / "nina" / file)
    exports = tmp / "exports"
    _put(data, exports / "moodle" / "Nina Handin_200101_assignsubmission_file_" / ZIP)
    _put(data, exports / "canvas" / f"handinnina_1201_9001_{ZIP}")
    _put(data, exports / "canvas" / f"latelou_LATE_1202_9002_{ZIP}")
    _put(data, exports / "nbgrader" / "submitted" / "kim" / "ps1" / ZIP)
    given = _put(data, tmp / "downloads" / "streaming-course-handin-Ola.zip")
    read = archive.read_handin(data)
    blank = (ROOT / "exercises" / FILES[5]).read_bytes()
    swapped = archive.pack({**read.notebooks, FILES[5]: blank}, read.manifest)
    _put(swapped, folders / "sam" / ZIP)
    _put(handed["without_ex6"].data, folders / "noor" / ZIP)
    _put(data, folders / "lee" / ZIP)
    loose = _put((ROOT / "exercises" / FILES[0]).read_bytes(), folders / "lee" / FILES[0])
    out = tmp / "out" / "grades.csv"
    code = _grade([folders, exports, given], out)
    rows = {r["learner"]: r for r in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    roster = find_roster([folders, exports, given])
    return {"code": code, "rows": rows, "roster": roster, "loose": loose, "lee": folders / "lee"}


def _scores(row: dict) -> list[str]:
    return [row[exercise_id] for exercise_id in EXERCISES]


def test_every_way_a_hand_in_arrives_is_one_learner_named_by_where_it_arrived(graded):
    assert graded["code"] == 0
    assert sorted(graded["rows"]) == sorted(
        [
            *["nina", "Nina Handin_200101", "handinnina_1201", "latelou_1202", "kim", "Ola"],
            *["sam", "noor", "lee"],
        ]
    )


def test_a_hand_in_inside_a_moodle_export_is_scored_as_its_six_notebooks_are(graded):
    rows = graded["rows"]
    moodle = rows["Nina Handin_200101"]
    assert (moodle["status"], moodle["lms"], moodle["lms_id"]) == ("ok", "moodle", "200101")
    assert _scores(moodle) == _scores(rows["nina"]) and moodle["score"] == rows["nina"]["score"]
    assert rows["nina"]["score"] == "120"


def test_a_hand_in_renamed_by_canvas_is_scored_as_its_six_notebooks_are(graded):
    rows = graded["rows"]
    canvas = rows["handinnina_1201"]
    assert (canvas["status"], canvas["lms"], canvas["lms_id"]) == ("ok", "canvas", "1201")
    assert _scores(canvas) == _scores(rows["nina"])
    assert f"handinnina_1201_9001_{ZIP}/ex1_response_times.ipynb" in canvas["files"]
    late = rows["latelou_1202"]  # Canvas's _LATE_ mark, on a zip as on a notebook
    assert (late["late"], _scores(late)) == ("yes", _scores(rows["nina"]))


def test_a_hand_in_in_nbgrader_submitted_or_given_directly_is_graded_too(graded):
    for learner in ("kim", "Ola"):
        assert _scores(graded["rows"][learner]) == _scores(graded["rows"]["nina"]), learner
    assert graded["rows"]["kim"]["lms"] == "nbgrader"


def test_a_hand_in_whose_ex6_was_swapped_is_scored_by_what_it_holds_with_a_note(graded):
    sam = graded["rows"]["sam"]
    assert _scores(sam)[:5] == _scores(graded["rows"]["nina"])[:5] and sam["parse_sse"] == "0"
    assert f"{ZIP}: {FILES[5]} is not the file the manifest lists (sha256 differs)" in sam["notes"]
    assert (
        f"{FILES[5]}: its manifest says passed, 24 points; the grader's rerun of its public "
        "checks: not started" in sam["notes"]
    )


def test_a_hand_in_without_ex6_is_graded_with_ex6_at_0_and_no_note_about_it(graded, handed):
    assert handed["without_ex6"].results[5].state == "missing"  # submit named it
    noor = graded["rows"]["noor"]
    assert noor["status"] == "ok" and noor["parse_sse"] == "0"
    assert _scores(noor)[:5] == _scores(graded["rows"]["nina"])[:5]
    assert "manifest" not in noor["notes"]


def test_a_manifest_that_agrees_with_the_rerun_adds_no_note(graded):
    for learner in ("Nina Handin_200101", "handinnina_1201", "kim", "Ola"):
        notes = graded["rows"][learner]["notes"]
        assert notes.startswith("graded from the hand-in ") and ";" not in notes, notes


def test_with_loose_notebooks_and_a_zip_the_zip_counts_and_the_row_says_so(graded):
    lee = graded["rows"]["lee"]
    assert _scores(lee) == _scores(graded["rows"]["nina"])  # the zip's, not the blank ex1's
    counts = f"a hand-in zip from this learner counts ({graded['lee'] / ZIP})"
    assert f"1 loose notebook(s) not graded: {counts}" in lee["notes"]
    left = {str(item.path): item for item in graded["roster"].not_graded}
    assert left[str(graded["loose"])].reason == counts and left[str(graded["loose"])].explained


# ---------------------------------------------------------------------------
# The roster alone: what is never a learner, never followed, never waited on


def test_a_zip_that_is_no_hand_in_is_listed_with_why_and_never_becomes_a_learner(tmp_path):
    plain = zip_bytes(("ex1_response_times.ipynb", (ROOT / "solutions" / FILES[0]).read_bytes()))
    _put(plain, tmp_path / "class" / "amy" / "work.zip")
    _put(plain, tmp_path / "class" / "ben.zip")
    roster = find_roster([tmp_path / "class"])
    assert roster.submissions == ()
    assert (
        sorted(item.reason for item in roster.not_graded)
        == ["not a hand-in: an archive without a hand-in's manifest.json"] * 2
    )


def test_a_hand_in_is_known_by_its_manifest_whatever_its_name(tmp_path):
    data = zip_bytes(("manifest.json", manifest_bytes()), (FILES[0], b"{}"))
    _put(data, tmp_path / "class" / "amy" / "homework.pdf")
    [amy] = find_roster([tmp_path / "class"]).submissions
    assert [nb.name for nb in amy.notebooks] == [FILES[0]] and amy.notebooks[0].data == b"{}"


def test_a_second_hand_in_zip_of_one_learner_is_listed_unexplained(tmp_path):
    data = zip_bytes(("manifest.json", manifest_bytes()), (FILES[0], b"{}"))
    first = _put(data, tmp_path / "class" / "amy" / "week1" / ZIP)
    second = _put(data, tmp_path / "class" / "amy" / "week2" / ZIP)
    roster = find_roster([tmp_path / "class"])
    [amy] = roster.submissions
    assert [str(nb.path) for nb in amy.notebooks] == [str(first / FILES[0])]
    [unexplained] = roster.unexplained
    assert unexplained.path == second and "amy has two hand-in zips" in unexplained.reason


def test_links_and_fifos_are_listed_and_never_followed_or_read(tmp_path):
    elsewhere = _put(b"{}", tmp_path / "elsewhere" / FILES[0])
    folder = tmp_path / "class" / "amy"
    _put((ROOT / "solutions" / FILES[1]).read_bytes(), folder / FILES[1])
    (folder / FILES[0]).symlink_to(elsewhere)
    (folder / "shared").symlink_to(elsewhere.parent, target_is_directory=True)
    os.mkfifo(folder / "answers.zip")  # opened as a file, it would wait for a writer forever
    (tmp_path / "class" / "bob.zip").symlink_to(elsewhere)
    roster = find_roster([tmp_path / "class"])
    [amy] = roster.submissions
    assert [nb.name for nb in amy.notebooks] == [FILES[1]]
    left = {item.path.name: item.reason for item in roster.not_graded}
    assert left == {
        FILES[0]: "a link (links are never followed)",
        "shared": "a link (links are never followed)",
        "bob.zip": "a link (links are never followed)",
        "answers.zip": "not a regular file (a FIFO, a device or a socket)",
    }


def _unix_users() -> tuple[str, str]:
    """Return two Unix users other than root (Debian always has daemon and nobody)."""
    if os.geteuid() != 0:
        pytest.fail("giving a file another owner needs root (make test runs as root)")
    return pwd.getpwnam("daemon").pw_name, pwd.getpwnam("nobody").pw_name


def _drop_box(folder: Path, names: list[str], owner: str) -> list[Path]:
    """Make ``folder`` a drop box (mode 1733, as a hub's) of hand-ins ``owner`` wrote."""
    folder.mkdir(parents=True)
    folder.chmod(0o1733)
    data = zip_bytes(("manifest.json", manifest_bytes()), (FILES[0], b"{}"))
    paths = [_put(data, folder / f"{name}.zip") for name in names]
    for path in paths:
        os.chown(path, pwd.getpwnam(owner).pw_uid, pwd.getpwnam(owner).pw_gid)
    return paths


def test_a_file_named_for_a_unix_user_but_owned_by_another_is_listed_with_its_owner(tmp_path):
    named, owner = _unix_users()
    planted, _ = _drop_box(tmp_path / "dropbox", [named, owner], owner)
    roster = find_roster([tmp_path / "dropbox"])
    assert [s.learner for s in roster.submissions] == [owner]  # their own file is theirs
    [left] = roster.not_graded
    assert left.path == planted
    assert left.reason == (
        f"owned by the Unix user {owner}, not by {named}: handed in under another's name"
    )


def test_outside_a_drop_box_a_files_owner_does_not_matter(tmp_path):
    named, owner = _unix_users()
    _drop_box(tmp_path / "copied", [named], owner)
    (tmp_path / "copied").chmod(0o755)  # a copy only its owner could write to
    assert [s.learner for s in find_roster([tmp_path / "copied"]).submissions] == [named]


def test_on_a_shared_account_names_that_are_no_unix_user_are_taken_whoever_owns_them(tmp_path):
    _, owner = _unix_users()
    _drop_box(tmp_path / "dropbox", ["hub-user-ada", "hub-user-bo"], owner)  # one Unix account
    roster = find_roster([tmp_path / "dropbox"])
    assert [s.learner for s in roster.submissions] == ["hub-user-ada", "hub-user-bo"]


def _prefixed_account() -> tuple[str, str]:
    """Return a Unix user whose name is a prefix, a dash and a name that is no Unix user, as
    The Littlest JupyterHub's ``jupyter-alice``: Debian's www-data, and data."""
    if os.geteuid() != 0:
        pytest.fail("giving a file another owner needs root (make test runs as root)")
    account = pwd.getpwnam("www-data").pw_name
    name = account.split("-", 1)[1]
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    return account, name


def test_a_hub_name_owned_by_that_learners_prefixed_account_is_theirs(tmp_path):
    account, name = _prefixed_account()
    _drop_box(tmp_path / "dropbox", [name], account)
    roster = find_roster([tmp_path / "dropbox"])
    assert [s.learner for s in roster.submissions] == [name]
    assert not roster.not_graded


def test_a_hub_name_owned_by_another_learners_prefixed_account_is_listed_with_its_owner(
    tmp_path,
):
    account, name = _prefixed_account()
    _, planted = _drop_box(tmp_path / "dropbox", [name, "hub-user-ada"], account)
    roster = find_roster([tmp_path / "dropbox"])
    assert [s.learner for s in roster.submissions] == [name]  # their own file is theirs
    [left] = roster.not_graded
    assert left.path == planted
    assert left.reason == (
        f"owned by the Unix user {account}, not by hub-user-ada: handed in under another's name"
    )


# ---------------------------------------------------------------------------
# A hub's drop box: <user>.zip files written by submit(), graded in place


@pytest.fixture(scope="module")
def dropbox(handed, tmp_path_factory):
    """Grade the folder holding a drop box of two learners, and a link, a FIFO and a folder
    planted beside them."""
    tmp = tmp_path_factory.mktemp("hub")
    box = tmp / "dropbox"
    box.mkdir()
    box.chmod(0o1733)  # as a hub makes it: anyone writes, nobody lists or reads another's
    _put(handed["whole"].data, box / "alice.zip")
    _put(handed["without_ex6"].data, box / "bob.zip")
    (box / "carol.zip").symlink_to(box / "alice.zip")
    os.mkfifo(box / "dave.zip")
    _put(handed["whole"].data, box / "erin" / ZIP)  # anyone may make a folder there
    out = tmp / "grades.csv"
    command = [sys.executable, "-m", "lessonkit", "grade", str(tmp), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    rows = {r["learner"]: r for r in csv.DictReader(out.read_text(encoding="utf-8").splitlines())}
    return {"done": done, "rows": rows, "box": box}


def test_a_drop_box_gives_one_row_per_user_zip_with_its_score(dropbox):
    assert dropbox["done"].returncode == 0, dropbox["done"].stderr
    rows = dropbox["rows"]
    assert sorted(rows) == ["alice", "bob"]
    assert (rows["alice"]["score"], rows["bob"]["score"]) == ("120", "90")
    assert rows["bob"]["parse_sse"] == "0"


def test_a_link_a_fifo_and_a_folder_in_the_drop_box_are_listed_and_grading_goes_on(dropbox):
    err, box = dropbox["done"].stderr, dropbox["box"]
    assert f"not graded: {box / 'carol.zip'}: a link (links are never followed)" in err
    assert f"not graded: {box / 'dave.zip'}: not a regular file (a FIFO" in err
    assert f"not graded: {box / 'erin'}: a folder in a drop box (its files count)" in err
    assert stat.S_ISFIFO((box / "dave.zip").lstat().st_mode)  # left as it was
