"""public_results(), what submit() shows, and the progress record check() keeps.

public_results runs each notebook's public checks as check() judges them: in the
grader's child process (the full edition), or in this process under the time budget
(JupyterLite's kernel has no processes: ``here=True`` takes that path on this Python).
Only a learner's own check() writes the progress record; public_results, `lessonkit
grade` and nbval runs never do. Each test gives the record a course folder of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from handins import FILES, ROOT, solved_course
from nbclient import NotebookClient

from lessonkit.course import record
from lessonkit.grading import check, public_results
from lessonkit.grading.exercises import EXERCISES

PROGRESS = record.RECORD_FILE


def _notebooks(folder: Path) -> dict[str, bytes]:
    return {file: (folder / file).read_bytes() for file in FILES}


def _looping_forever() -> bytes:
    """Return ex1's solution with a top-level cell that never ends, before its function."""
    nb = nbformat.read(ROOT / "solutions" / FILES[0], as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell("while True:\n    pass"))
    return nbformat.writes(nb).encode("utf-8")


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A solved course folder, its notebooks/ the working folder, the record in it."""
    folder = solved_course(tmp_path / "course")
    monkeypatch.delenv(record.RECORD_DIR_ENV, raising=False)
    monkeypatch.chdir(folder / "notebooks")
    return folder


@pytest.mark.parametrize("here", [False, True], ids=["child", "here"])
def test_the_solved_notebooks_pass_every_exercise_as_check_shows_it(here):
    results = public_results(_notebooks(ROOT / "solutions"), here=here)
    assert list(results) == FILES
    for file, result in results.items():
        exercise = EXERCISES[file.removesuffix(".ipynb").split("_", 1)[1]]
        public = [rule for rule in exercise.rules if not rule.hidden]
        assert result == {
            "file": file,
            "state": "passed",
            "checks_passed": len(public),
            "checks": len(public),
            "points": sum(rule.points for rule in public),
            "max_points": exercise.points,
            "missing": "",
        }


@pytest.mark.parametrize("here", [False, True], ids=["child", "here"])
def test_the_blank_exercises_are_not_started(here):
    results = public_results(_notebooks(ROOT / "exercises"), here=here)
    assert {r["state"] for r in results.values()} == {"not started"}
    assert results[FILES[1]]["missing"] == "read_stream is not written yet"


def test_a_failing_exercise_names_the_public_checks_it_misses():
    nb = nbformat.read(ROOT / "solutions" / FILES[0], as_version=4)
    for cell in nb.cells:
        if "def response_times" in cell.source:
            cell.source = (
                "def response_times(prefill_ms, per_token_ms, n_tokens):\n"
                "    total = prefill_ms + per_token_ms * n_tokens\n"
                "    return {'streaming_first_ms': prefill_ms, 'blocking_first_ms': total,"
                " 'total_ms': total}"
            )
    [result] = public_results({FILES[0]: nbformat.writes(nb).encode()}).values()
    assert (result["state"], result["checks_passed"], result["checks"]) == ("failing", 2, 3)
    assert result["points"] == 4 and result["missing"].startswith("streaming shows the first")


@pytest.mark.parametrize("here", [False, True], ids=["child", "here"])
def test_a_notebook_that_loops_forever_at_top_level_is_stopped_and_said_so(here):
    started = time.monotonic()
    [result] = public_results({FILES[0]: _looping_forever()}, timeout_s=2, here=here).values()
    assert time.monotonic() - started < 20  # its 2 s, ten times over
    assert result["state"] == "failing"
    assert result["missing"].startswith("the notebook's code did not finish within 2 s")


@pytest.mark.parametrize("here", [False, True], ids=["child", "here"])
def test_public_results_never_records_progress(course, here):
    public_results(_notebooks(course / "exercises"), here=here)  # their check() cells run
    assert not (course / PROGRESS).exists()


def test_a_learners_own_check_records_its_public_result(course):
    def response_times(prefill_ms, per_token_ms, n_tokens):
        last = prefill_ms + per_token_ms * n_tokens
        return {"streaming_first_ms": prefill_ms, "blocking_first_ms": last, "total_ms": last}

    check("response_times", response_times, show=False)
    [line] = record.summary()["exercises"][:1]
    assert (line["state"], line["checks_passed"], line["checks"]) == ("failing", 2, 3)
    assert (line["points"], line["max_points"]) == (4, 10)


def test_a_check_of_the_untouched_stub_records_nothing(course):
    def read_stream(chunks):
        raise NotImplementedError

    check("read_stream", read_stream, show=False)
    assert not (course / PROGRESS).exists()


def test_a_check_while_grading_records_nothing(course, monkeypatch):
    monkeypatch.setenv("LESSONKIT_GRADING", "1")
    check("now_change_it", {"decode_1000_text": "x"}, show=False)
    assert not (course / PROGRESS).exists()


def test_a_record_that_cannot_be_written_changes_nothing_check_shows_or_returns(course):
    def parse_sse(chunks):
        return []

    before = check("parse_sse", parse_sse, show=False)
    (course / PROGRESS).unlink()
    (course / PROGRESS).mkdir()  # the record's place is taken: writing it fails
    assert check("parse_sse", parse_sse, show=False) == before


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != record.RECORD_DIR_ENV}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_notebook_run_in_a_kernel_records_its_check(course):
    notebook = course / "exercises" / FILES[0]
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3")
    client.execute(cwd=str(notebook.parent))  # the kernel: this environment, no record folder
    assert record.summary()["exercises"][0]["state"] == "passed"


def test_the_instructors_nbval_run_of_the_same_notebook_leaves_no_record(course):
    for name in ("conftest.py", "pyproject.toml", "nbval-sanitize.cfg"):
        shutil.copy(ROOT / name, course / name)  # the course's own pytest set-up
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval"]
    done = _run([*command, f"exercises/{FILES[0]}"], course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout  # its cells ran, the check cell among them
    assert not (course / PROGRESS).exists()


def test_lessonkit_grade_never_records_progress(course, tmp_path):
    out = tmp_path / "grades.csv"
    command = [sys.executable, "-m", "lessonkit", "grade", "../exercises", "--out", str(out)]
    done = _run(command, course / "notebooks")
    assert done.returncode == 0, done.stderr
    assert "120" in out.read_text(encoding="utf-8")
    assert not (course / PROGRESS).exists()
