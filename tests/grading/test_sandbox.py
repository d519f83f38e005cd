"""Grading that a hostile submission cannot break (issue 16), end to end on a throwaway course.

The course package is copied into a temporary folder and `lessonkit grade` runs
from that copy in a process of its own, with a fake API key in its
environment: whatever an attack does to "the course" happens to the copy. The
class holds an honest learner before and after learners who each hand in the
full correct answers plus one hostile cell: killing the grader, a daemon that
outlives grading and overwrites the CSV, appending to the course's source, the
network, 100 setsid() processes, reading the grader's environment, a memory
hog. The tests then check what issue 16 asks: the run completes, the CSV is
the grader's and stays intact, honest learners keep full marks, no file of the
course changed, no connection was made, no process is left, every hostile row
is flagged. Beside them, learners hand in hostile archives in place of a hand-in
zip, each built byte for byte (tests/support/handins.py): a ``../`` member, an
absolute one, a link, a bomb, a bomb whose header lies, bzip2, two members of one
name, no manifest. Each is listed as not graded with its reason, none becomes a
row, and nothing in them is ever written anywhere.

These tests need bubblewrap (``apt-get install bubblewrap``; `.ci/run` and
`make test` install it); without it they fail and say so.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from classroom import solution, with_cell_before_check, with_first_cell, write_learner
from handins import BZIP2, DEFLATED, FILES, STORED, manifest_bytes, zip_bytes

from lessonkit.course import archive
from lessonkit.grading import sandbox
from lessonkit.grading.exercises import EXERCISES

PACKAGE = Path(__file__).resolve().parents[2] / "lessonkit"
SECRET = "sk-test-0123456789-the-graders-own-key"
NEEDS_BWRAP = "the sandbox tests need bubblewrap: apt-get install bubblewrap (.ci/run installs it)"


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts (there must be none)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.sock.close()


def _attacks(grades: Path, feedback: Path, port: int) -> dict[str, tuple[str, str]]:
    """Return attack name -> (exercise whose notebook gets the cell, the hostile cell)."""
    return {
        "kill_parent": (
            "response_times",
            "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(1)",
        ),
        "daemon": (
            "response_times",
            f"""
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(2)
                    for path in ({str(grades)!r}, {str(feedback / "dropped.txt")!r}):
                        try:
                            with open(path, "w") as handle:
                                handle.write("junk from a daemon\\n")
                        except OSError:
                            pass
                    time.sleep(60)
                os._exit(0)
            os.wait()
            """,
        ),
        "tamper_course": (
            "response_times",
            """
            import os, site, lessonkit
            package = os.path.dirname(lessonkit.__file__)
            for root, _, files in os.walk(package):
                for name in files:
                    if name.endswith(".py"):
                        try:
                            with open(os.path.join(root, name), "a") as handle:
                                handle.write("\\nraise SystemExit('pwned')\\n")
                        except OSError:
                            pass
            for path in [os.path.join(package, "evil.py")] + [
                os.path.join(p, "evil.pth") for p in site.getsitepackages()
            ]:
                try:
                    with open(path, "w") as handle:
                        handle.write("import os\\n")
                except OSError:
                    pass
            """,
        ),
        "network": (
            "response_times",
            f"""
            import socket, urllib.request
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            except OSError:
                pass
            try:
                urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=2).read()
            except Exception:
                pass
            """,
        ),
        "setsid_100": (
            "response_times",
            """
            import os, time
            for _ in range(100):
                pid = os.fork()
                if pid == 0:
                    os.setsid()
                    time.sleep(120)
                    os._exit(0)
            """,
        ),
        "read_environ": (
            "now_change_it",
            """
            import os
            seen = []
            for pid in ["self", str(os.getppid()), "1"] + os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        seen.append(handle.read().decode(errors="replace"))
                except OSError:
                    pass
            leaked = [part for text in seen for part in text.split("\\0") if "sk-" in part]
            if leaked:
                now_change_it["decode_1000_text"] = leaked[0]
            """,
        ),
        "memory_hog": ("response_times", "hog = bytearray(3 << 30)"),
    }


EXPECTED_FLAGS = {
    "kill_parent": {"kill"},
    "daemon": {"spawn"},
    "tamper_course": {"wrote-outside-scratch"},
    "network": {"network"},
    "setsid_100": {"spawn", "process-limit"},
    "read_environ": {"read-other-environ"},
    "memory_hog": {"memory-limit"},
}


ESCAPED = "escaped-from-a-hand-in-3f9c"  # a name no file may ever be given


def _hostile_archives() -> dict[str, tuple[bytes, str]]:
    """Return name -> (an archive handed in as a hand-in zip, why the grader refuses it)."""
    manifest = ("manifest.json", manifest_bytes())
    notebook = (FILES[0], json.dumps(solution("response_times")).encode())
    zeros = b"0" * (archive.NOTEBOOK_LIMIT_BYTES + 1)  # a few KiB deflated
    link = stat.S_IFLNK | 0o777
    return {
        "zip_slip": (
            zip_bytes(manifest, notebook, (f"../../{ESCAPED}.py", b"print('owned')")),
            f"a member's path leaves the archive ('../../{ESCAPED}.py')",
        ),
        "absolute": (
            zip_bytes(manifest, notebook, (f"/tmp/{ESCAPED}.py", b"print('owned')", STORED)),
            f"a member's path leaves the archive ('/tmp/{ESCAPED}.py')",
        ),
        "link": (
            zip_bytes(manifest, (FILES[0], b"/etc/shadow", DEFLATED, link)),
            f"a member is a link ('{FILES[0]}')",
        ),
        "bomb": (zip_bytes(manifest, (FILES[0], zeros)), f"{FILES[0]} would unpack to"),
        "lying_bomb": (
            zip_bytes(manifest, (FILES[0], zeros, DEFLATED, stat.S_IFREG | 0o644, 1000)),
            f"{FILES[0]} cannot be unpacked",
        ),
        "bzip2": (
            zip_bytes(manifest, (FILES[0], notebook[1], BZIP2)),
            f"a member is compressed in a way a hand-in never is ('{FILES[0]}')",
        ),
        "two_of_one_name": (
            zip_bytes(manifest, notebook, (FILES[0], b"{}")),
            "two members of the archive have the same name",
        ),
        "no_manifest": (zip_bytes(notebook), "an archive without a hand-in's manifest.json"),
    }


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _processes_mentioning(marker: str) -> list[int]:
    """Return the pids whose environment or command line holds ``marker`` (a unique path)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{what}", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(name))
                        break
            except OSError:
                pass
    return found


def _copy_course(tmp: Path) -> Path:
    root = tmp / "course"
    shutil.copytree(PACKAGE, root / "lessonkit", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run_grader(course: Path, cwd: Path, *args: str, path_env: str | None = None):
    env = {
        "PATH": path_env if path_env is not None else os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(course),
        "HOME": str(cwd),
        "LANG": "C.UTF-8",
        "GRADER_API_KEY": SECRET,  # in the grader's initial environment, as a real key would be
    }
    command = [sys.executable, "-m", "lessonkit", "grade", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    """Grade a class of attacks from a throwaway copy of the course; return what the tests read."""
    if not sandbox.detect().available:
        pytest.fail(f"{NEEDS_BWRAP} ({sandbox.detect().reason})", pytrace=False)
    tmp = tmp_path_factory.mktemp("hostile")
    course = _copy_course(tmp)
    before = _hashes(course)
    site = Path(sandbox.python_paths()[0])
    site_before = sorted(p.name for p in site.rglob("*.pth"))
    outputs = tmp / "outputs"
    grades, feedback, report = outputs / "grades.csv", outputs / "feedback", outputs / "report.html"
    listener = Listener()
    folder = tmp / "class"
    write_learner(folder / "aaa_honest")
    for name, (exercise_id, cell) in _attacks(grades, feedback, listener.port).items():
        if exercise_id == "now_change_it":
            notebook = with_cell_before_check(solution(exercise_id), cell)
        else:
            notebook = with_first_cell(solution(exercise_id), cell)
        write_learner(folder / name, {exercise_id: notebook})
    write_learner(folder / "zzz_honest")
    hostile_zips = {}
    for name, (data, why) in _hostile_archives().items():
        hostile_zips[folder / f"zip_{name}" / "streaming-course-handin.zip"] = why
        (folder / f"zip_{name}").mkdir()
        (folder / f"zip_{name}" / "streaming-course-handin.zip").write_bytes(data)
    try:
        done = _run_grader(
            course, tmp, str(folder), "--out", str(grades), "--feedback", str(feedback),
            "--report", str(report), "-j", "2", "--timeout", "10", "--seed", "5",
            "--require-sandbox",
        )  # fmt: skip
        csv_text = grades.read_text(encoding="utf-8") if grades.exists() else ""
        time.sleep(3)  # the daemon's window: it would write 2 s after its notebook ran
        leftovers = _processes_mentioning(str(course))
    finally:
        listener.close()
    return {
        "done": done,
        "csv": csv_text,
        "csv_later": grades.read_text(encoding="utf-8") if grades.exists() else "",
        "rows": {r["learner"]: r for r in csv.DictReader(csv_text.splitlines())},
        "course_changed": before != _hashes(course),
        "site_changed": site_before != sorted(p.name for p in site.rglob("*.pth")),
        "connections": listener.accepted,
        "leftovers": leftovers,
        "outputs": outputs,
        "hostile_zips": hostile_zips,
        "tmp": tmp,
    }


def test_the_run_completes_and_says_it_is_sandboxed(hostile_class):
    done = hostile_class["done"]
    assert done.returncode == 0, done.stderr
    assert "lessonkit grade: sandbox: bubblewrap" in done.stderr


def test_the_csv_is_the_graders_and_stays_intact_after_grading(hostile_class):
    rows = hostile_class["rows"]
    assert sorted(rows) == sorted(["aaa_honest", "zzz_honest", *EXPECTED_FLAGS])
    assert hostile_class["csv"].splitlines()[0].startswith("learner,status,score,max_score,")
    assert hostile_class["csv_later"] == hostile_class["csv"]
    assert sorted(p.name for p in (hostile_class["outputs"] / "feedback").iterdir()) == sorted(
        f"{learner}.txt" for learner in rows
    )


def test_honest_learners_before_and_after_the_attacks_keep_full_marks(hostile_class):
    for learner in ("aaa_honest", "zzz_honest"):
        row = hostile_class["rows"][learner]
        assert (row["status"], row["score"], row["flags"]) == ("ok", "120", ""), row


def test_no_file_of_the_course_or_the_python_installation_changed(hostile_class):
    assert not hostile_class["course_changed"]
    assert not hostile_class["site_changed"]


def test_no_connection_reached_the_host(hostile_class):
    assert hostile_class["connections"] == 0


def test_no_process_of_the_grading_is_left(hostile_class):
    assert hostile_class["leftovers"] == []


def test_every_hostile_row_is_flagged_and_its_status_names_what_happened(hostile_class):
    for attack, expected in EXPECTED_FLAGS.items():
        row = hostile_class["rows"][attack]
        assert expected <= set(row["flags"].split(";")), (attack, row["flags"])
        assert row["status"] != "ok" and row["status"].startswith(("flagged:", "limit:")), row


def test_each_hostile_archive_is_listed_as_not_graded_with_its_reason(hostile_class):
    lines = hostile_class["done"].stderr.splitlines()
    for path, why in hostile_class["hostile_zips"].items():
        [line] = [
            line for line in lines if line.startswith(f"lessonkit grade: not graded: {path}:")
        ]
        assert line.startswith(f"lessonkit grade: not graded: {path}: not a hand-in: {why}"), line
        assert path.parent.name not in hostile_class["rows"]  # never a learner


def test_nothing_from_a_hostile_archive_is_written_anywhere(hostile_class):
    # where unpacking them would have put their members: around the class, and /tmp
    assert not list(hostile_class["tmp"].parent.rglob(f"{ESCAPED}*"))
    assert not Path(f"/tmp/{ESCAPED}.py").exists()


def test_a_memory_hog_is_reported_as_a_limit_in_the_row(hostile_class):
    assert hostile_class["rows"]["memory_hog"]["status"] == "limit: memory"


def test_the_graders_environment_never_reaches_any_output(hostile_class):
    for path in hostile_class["outputs"].rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path


# ---------------------------------------------------------------------------
# Without a sandbox


def _honest_class(tmp: Path) -> Path:
    folder = tmp / "class"
    write_learner(folder / "alice")
    return folder


def test_without_bubblewrap_grading_says_so_in_one_line_and_runs_with_limits(tmp_path):
    course = _copy_course(tmp_path)
    out = tmp_path / "grades.csv"
    done = _run_grader(course, tmp_path, str(_honest_class(tmp_path)), "--out", str(out),
                       "--seed", "3", path_env="/nonexistent")  # fmt: skip
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "no sandbox" in line]
    assert notices == [
        "lessonkit grade: no sandbox: bubblewrap is not installed (apt-get install bubblewrap); "
        "learner code runs with resource limits only"
    ]
    [row] = csv.DictReader(out.read_text(encoding="utf-8").splitlines())
    assert (row["status"], row["score"]) == ("ok", "120")


def test_require_sandbox_refuses_to_grade_without_one(tmp_path):
    course = _copy_course(tmp_path)
    out = tmp_path / "grades.csv"
    done = _run_grader(course, tmp_path, str(_honest_class(tmp_path)), "--out", str(out),
                       "--require-sandbox", path_env="/nonexistent")  # fmt: skip
    assert done.returncode == 2
    assert "--require-sandbox: no sandbox: bubblewrap is not installed" in done.stderr
    assert not out.exists()


def test_the_seed_is_printed_so_grades_can_be_reproduced(tmp_path):
    course = _copy_course(tmp_path)
    out = tmp_path / "grades.csv"
    done = _run_grader(course, tmp_path, str(_honest_class(tmp_path)), "--out", str(out),
                       "--no-sandbox")  # fmt: skip
    line = next(line for line in done.stderr.splitlines() if "--seed" in line)
    assert line.startswith("lessonkit grade: hidden checks drawn with --seed ")
    assert int(line.rsplit(" ", 1)[1]) >= 0


def test_each_sandbox_limit_maps_to_one_prlimit_option():
    limits = sandbox.Limits(memory_bytes=1 << 20, cpu_s=5, file_bytes=99, processes=7)
    assert limits.prlimit_args() == [
        "--as=1048576:1048576",
        "--cpu=5:6",
        "--fsize=99:99",
        "--nproc=7:7",
        f"--nofile={limits.open_files}:{limits.open_files}",
        "--core=0:0",
    ]


def test_every_exercise_is_graded_in_the_sandbox(hostile_class):
    row = hostile_class["rows"]["zzz_honest"]
    assert [row[e] for e in EXERCISES] == [f"{EXERCISES[e].points:g}" for e in EXERCISES]
