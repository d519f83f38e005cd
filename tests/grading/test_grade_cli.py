"""lessonkit grade: a folder of real-looking submissions gives the right CSV, whatever they do."""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import textwrap
from pathlib import Path

import nbformat
import pytest
from calling import in_process
from classroom import LESSON_READER

from lessonkit.grading import grade
from lessonkit.grading.engine import CALL_LIMIT_S, Mode, evaluate
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.roster import Notebook, Submission, course_notebook, find_roster

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
TIMEOUT_S = "6"  # what the loop and hang learners cost; 10x a correct notebook on a busy machine
OPTIONS = grade.Options(grade.Setup(timeout_s=10), seed=7)


def find_submissions(paths):
    return list(find_roster(paths).submissions)


def _solution(name: str) -> nbformat.NotebookNode:
    return nbformat.read(SOLUTIONS / name, as_version=4)


def _with_function(nb: nbformat.NotebookNode, name: str, source: str) -> nbformat.NotebookNode:
    """Return a copy of nb whose cell defining `name` is replaced by `source`."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and f"def {name}(" in cell.source:
            cell.source = source
            return nb
    raise AssertionError(f"no cell defines {name}")


def _write(folder: Path, name: str, nb: nbformat.NotebookNode) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


# handles one event per chunk: `if` instead of `while`
PARTIAL = textwrap.dedent(LESSON_READER).replace(
    'while "\\n\\n" in buffer:', 'if "\\n\\n" in buffer:'
)

TAMPER_CELLS = [
    # Redefine check so every check cell "passes" and prints so.
    "import lessonkit.grading\n"
    "from lessonkit.grading import CheckResult\n"
    "def check(*args, **kwargs):\n"
    "    print('read_stream: public checks 11/11 pass -- passed')\n"
    "    return CheckResult(True, 30.0, 30.0, 'passed')\n"
    "lessonkit.grading.check = check",
    # Patch the references and the checker in its own process.
    "import lessonkit.core.client, lessonkit.grading.ex2_read_stream, lessonkit.grading.engine\n"
    "lessonkit.grading.ex2_read_stream.reference = lambda chunks: ('', True)\n"
    "lessonkit.core.client.read_stream = lambda chunks, dialect='lesson': None\n"
    "lessonkit.grading.engine.evaluate = lambda *a, **k: None",
    "def read_stream(chunks):\n    return '', True",
    "check('read_stream', read_stream)",
]


def _tamper_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in TAMPER_CELLS])
    nb.cells[-1].outputs = [
        nbformat.v4.new_output(
            "stream", text="read_stream: public checks 11/11 pass -- 30 of 30 points\n"
        )
    ]
    nb.cells[-1].execution_count = 4
    return nb


def _code_notebook(*sources: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Grade one class folder once; return (rows by file name, csv text, folder, hashes, feedback dir)."""
    tmp = tmp_path_factory.mktemp("grade")
    folder = tmp / "class"
    ex2 = _solution("ex2_read_stream.ipynb")
    _write(folder, "correct.ipynb", ex2)
    _write(folder, "partial.ipynb", _with_function(ex2, "read_stream", PARTIAL))
    _write(
        folder,
        "broken.ipynb",
        _with_function(
            ex2, "read_stream", "def read_stream(chunks):\n    return chunks[0].decode(), True\n"
        ),
    )
    broken = nbformat.read(folder / "broken.ipynb", as_version=4)
    broken.cells.insert(3, nbformat.v4.new_code_cell("def oops(:\n    pass"))
    _write(folder, "broken.ipynb", broken)
    _write(
        folder,
        "loop.ipynb",
        _with_function(
            ex2, "read_stream", "def read_stream(chunks):\n    while True:\n        pass\n"
        ),
    )
    _write(
        folder,
        "hang.ipynb",
        _code_notebook(
            "def read_stream(chunks):\n    return '', False",
            "while True:\n    try:\n        pass\n    except BaseException:\n        pass",
        ),
    )
    _write(
        folder,
        "exit.ipynb",
        _code_notebook("def read_stream(chunks):\n    return '', False", "import os\nos._exit(0)"),
    )
    _write(folder, "tamper.ipynb", _tamper_notebook())
    (folder / "corrupt.ipynb").write_bytes(b"\x00\xffnot a notebook{")
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    out, feedback = tmp / "grades.csv", tmp / "feedback"
    args = _args([folder], out, feedback, timeout=float(TIMEOUT_S), jobs=2)
    assert grade.main(args) == 0
    text = out.read_text(encoding="utf-8")
    rows = {r["learner"]: r for r in csv.DictReader(text.splitlines())}
    return rows, text, folder, hashes, feedback


def test_the_csv_has_one_row_per_learner_and_a_column_per_exercise(graded_class):
    rows, text, *_ = graded_class
    header = text.splitlines()[0].split(",")
    assert header[:4] == ["learner", "status", "score", "max_score"]
    assert header[4:] == [
        *EXERCISES,
        "flags",
        "gradebook",
        "lms",
        "lms_id",
        "late",
        "error",
        "notes",
        "files",
    ]
    assert sorted(rows) == sorted(
        ["correct", "partial", "broken", "loop", "hang", "exit", "tamper", "corrupt"]
    )


def test_a_correct_submission_gets_full_points(graded_class):
    row = graded_class[0]["correct"]
    assert (row["status"], row["read_stream"], row["score"]) == ("ok", "30", "30")


def test_a_partial_submission_gets_part_of_the_points(graded_class):
    row = graded_class[0]["partial"]
    assert row["status"] == "ok" and 0 < float(row["read_stream"]) < 30


def test_a_broken_submission_scores_zero_but_is_graded(graded_class):
    row = graded_class[0]["broken"]
    assert (row["status"], row["read_stream"]) == ("ok", "0")


def test_a_function_that_loops_forever_is_stopped_and_its_try_it_cell_does_not_hang_grading(
    graded_class,
):
    # try_it runs nothing while grading, so the notebook itself finishes: only the calls time out.
    row = graded_class[0]["loop"]
    assert (row["status"], row["read_stream"], row["error"]) == ("ok", "0", "")


def test_notebook_code_that_never_finishes_is_an_error_row(graded_class):
    row = graded_class[0]["hang"]
    assert row["status"] == "error" and f"did not finish within {TIMEOUT_S} s" in row["error"]


def test_a_notebook_that_exits_the_interpreter_is_an_error_row(graded_class):
    row = graded_class[0]["exit"]
    assert row["status"] == "error" and "ended the Python process" in row["error"]


def test_a_corrupt_file_is_an_error_row(graded_class):
    row = graded_class[0]["corrupt"]
    assert row["status"] == "error" and "not a notebook" in row["error"]


def test_tampering_earns_only_what_the_function_itself_earns(graded_class):
    row = graded_class[0]["tamper"]
    honest = evaluate(
        EXERCISES["read_stream"],
        in_process(lambda chunks: ("", True)),
        Mode(hidden=True),
    )
    assert float(row["read_stream"]) == honest.score < 30
    assert row["status"] == "ok"


def test_nothing_submitted_is_modified(graded_class):
    _, _, folder, hashes, _ = graded_class
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == hashes


def test_each_submission_gets_a_feedback_file_that_never_shows_hidden_inputs(graded_class):
    *_, feedback = graded_class
    files = sorted(p.name for p in feedback.iterdir())
    assert len(files) == 8
    partial = (feedback / "partial.txt").read_text(encoding="utf-8")
    assert partial.count("FAILED") == 1  # one rule in full per exercise, the rest by name
    assert "FAILED  several events in one chunk are all handled" in partial  # the root bug
    assert "hint      After adding a chunk, handle every complete event" in partial
    assert "  - the whole stream in one chunk" in partial
    assert "日本" not in partial
    loop = (feedback / "loop.txt").read_text(encoding="utf-8")
    assert f"no answer within {min(CALL_LIMIT_S, float(TIMEOUT_S)):g} s" in loop


def test_a_learner_folder_of_different_notebooks_is_one_submission(tmp_path):
    alice = tmp_path / "class" / "alice"
    _write(alice, "ex1_response_times.ipynb", _solution("ex1_response_times.ipynb"))
    _write(alice, "ex2_read_stream.ipynb", _solution("ex2_read_stream.ipynb"))
    [submission] = find_submissions([tmp_path / "class"])
    assert submission.learner == "alice" and len(submission.notebooks) == 2
    [row] = grade.grade([submission], OPTIONS)
    assert (row.status, row.scores["response_times"], row.scores["read_stream"]) == ("ok", 10, 30)


def test_copies_of_the_same_notebook_in_one_folder_are_separate_submissions(tmp_path):
    for name in ("bob.ipynb", "carol.ipynb"):
        _write(tmp_path, name, _solution("ex2_read_stream.ipynb"))
    assert [s.learner for s in find_submissions([tmp_path])] == ["bob", "carol"]


def test_moved_extra_and_deleted_cells_and_a_reused_name_do_not_matter(tmp_path):
    nb = _solution("ex2_read_stream.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code" and "check(" not in c.source]
    code.reverse()  # the function now comes before its imports
    code.append(nbformat.v4.new_code_cell("read_stream = read_stream([wire])  # the name reused"))
    code.append(nbformat.v4.new_code_cell("print('an extra cell')"))
    nb.cells = code
    path = _write(tmp_path, "shuffled.ipynb", nb)
    [row] = grade.grade(find_submissions([path]), OPTIONS)
    assert (row.status, row.scores["read_stream"]) == ("ok", 30)


def test_grade_and_assign_are_subcommands_of_lessonkit():
    from lessonkit import cli

    argv = ["grade", "x.ipynb", "--out", "g.csv", "-j", "2", "--timeout", "5"]
    args = cli.build_parser("grade").parse_args(argv)
    assert (args.out, args.jobs, args.timeout, args.feedback) == ("g.csv", 2, 5.0, None)
    assert (
        cli.build_parser("assign").parse_args(["assign", "solutions", "exercises", "--check"]).check
    )


def test_a_function_that_ends_its_process_stops_only_its_own_exercise(tmp_path):
    nb = _code_notebook(
        "import os\ndef read_stream(chunks):\n    os._exit(1)",
        "def response_times(p, t, n):\n    return {'streaming_first_ms': p + t, 'blocking_first_ms': p + n * t, 'total_ms': p + n * t}",
    )
    [row] = grade.grade(find_submissions([_write(tmp_path, "quits.ipynb", nb)]), OPTIONS)
    assert (row.status, row.scores["read_stream"], row.scores["response_times"]) == ("ok", 0, 10)
    assert "read_stream ended the process running it" in row.feedback


def _args(submissions, out, feedback=None, **options) -> argparse.Namespace:
    """Return the parsed command line of `lessonkit grade` (as the CLI would build it)."""
    from lessonkit import cli

    argv = ["grade", *[str(s) for s in submissions], "--out", str(out), "--seed", "7"]
    if feedback is not None:
        argv += ["--feedback", str(feedback)]
    argv += ["--timeout", str(options.pop("timeout", 10.0)), "-j", str(options.pop("jobs", 1))]
    for flag, value in options.items():
        if value is True:
            argv.append("--" + flag.replace("_", "-"))
        else:
            argv += ["--" + flag.replace("_", "-"), str(value)]
    return cli.build_parser("grade").parse_args(argv)


def test_a_submission_path_that_does_not_exist_exits_2_and_grades_nothing(tmp_path, capsys):
    good = _write(tmp_path, "ok.ipynb", _solution("ex1_response_times.ipynb"))
    out = tmp_path / "grades.csv"
    assert grade.main(_args([good, tmp_path / "nonexistent"], out)) == 2
    assert "nonexistent: no such file or folder" in capsys.readouterr().err
    assert not out.exists()


def test_a_junk_file_becomes_an_error_row_and_the_command_still_exits_0(tmp_path):
    junk = tmp_path / "junk.ipynb"
    junk.write_bytes(b"this is not json")
    out = tmp_path / "grades.csv"
    assert grade.main(_args([junk], out)) == 0
    [row] = csv.DictReader(out.read_text(encoding="utf-8").splitlines())
    assert row["status"] == "error" and "not a notebook" in row["error"]


def test_missing_folders_of_the_out_path_are_created_before_grading(tmp_path):
    nb = _write(tmp_path, "ok.ipynb", _code_notebook("x = 1"))
    out = tmp_path / "new" / "deeper" / "grades.csv"
    assert grade.main(_args([nb], out, feedback=tmp_path / "fb" / "x")) == 0
    assert out.exists() and (tmp_path / "fb" / "x").is_dir()


def test_an_out_path_that_cannot_be_created_fails_at_once_without_grading(
    tmp_path, capsys, monkeypatch
):
    nb = _write(tmp_path, "ok.ipynb", _code_notebook("x = 1"))
    (tmp_path / "a_file").write_text("x")
    monkeypatch.setattr(grade, "grade", lambda *a, **k: pytest.fail("graded anyway"))
    assert grade.main(_args([nb], tmp_path / "a_file" / "grades.csv")) == 2
    assert "a_file is a file, not a folder" in capsys.readouterr().err


def test_an_out_path_that_is_a_folder_fails_at_once_without_grading(tmp_path, capsys, monkeypatch):
    nb = _write(tmp_path, "ok.ipynb", _code_notebook("x = 1"))
    monkeypatch.setattr(grade, "grade", lambda *a, **k: pytest.fail("graded anyway"))
    assert grade.main(_args([nb], tmp_path)) == 2
    assert "is a folder" in capsys.readouterr().err


def test_grade_help_says_what_the_exit_codes_mean(capsys):
    from lessonkit import cli

    with pytest.raises(SystemExit):
        cli.main(["grade", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 = the CSV was written" in text and "2 = nothing was graded" in text


def test_graded_feedback_of_an_untouched_stub_says_it_still_raises_not_implemented_error(
    tmp_path,
):
    path = _write(
        tmp_path,
        "ex1.ipynb",
        nbformat.read(ROOT / "exercises" / "ex1_response_times.ipynb", as_version=4),
    )
    [row] = grade.grade(find_submissions([path]), OPTIONS)
    assert (
        "response_times: not attempted yet -- the stub still raises NotImplementedError"
        in row.feedback
    )
    assert "run this check again" not in row.feedback


def test_a_notebook_that_kills_its_parent_gets_the_same_score_on_every_run(tmp_path):
    cell = "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(1)"
    nb = _solution("ex1_response_times.ipynb")
    nb.cells.insert(0, nbformat.v4.new_code_cell(cell))
    path = _write(tmp_path, "killer.ipynb", nb)
    rows = [grade.grade(find_submissions([path]), OPTIONS)[0] for _ in range(2)]
    assert rows[0].scores == rows[1].scores and rows[0].status == rows[1].status
    assert rows[0].scores["response_times"] == 10  # its function is right: it keeps its points
    assert "ended the process" not in rows[0].feedback


def test_a_notebook_gets_its_timeout_for_cells_and_checks_together(tmp_path):
    slow = textwrap.dedent(LESSON_READER).replace(
        "def read_stream(chunks):", "import time\n\ndef read_stream(chunks):\n    time.sleep(0.4)"
    )
    nb = _with_function(_solution("ex2_read_stream.ipynb"), "read_stream", slow)
    path = _write(tmp_path, "slow.ipynb", nb)
    options = grade.Options(grade.Setup(timeout_s=2), seed=7)
    [row] = grade.grade(find_submissions([path]), options)
    assert row.scores["read_stream"] < 30
    assert "not run (the notebook's time ran out (--timeout 2 s))" in row.feedback


def test_a_notebook_given_as_bytes_is_graded_as_its_file_would_be(tmp_path):
    # A hand-in archive's notebooks arrive as bytes (name -> bytes), never as files on disk.
    data = nbformat.writes(_solution("ex1_response_times.ipynb")).encode("utf-8")
    notebook = Notebook(tmp_path / "alice.zip" / "ex1_response_times.ipynb", data=data)
    assert not notebook.path.exists() and course_notebook(notebook) == "ex1_response_times"
    [row] = grade.grade([Submission("alice", (notebook,))], OPTIONS)
    assert (row.status, row.scores["response_times"]) == ("ok", 10)
    assert row.files == [str(tmp_path / "alice.zip" / "ex1_response_times.ipynb")]
