"""Hand-ins through the class drop box, and progress, on a hub where learners are Unix users.

The admin named the drop box with one environment variable, $LESSONKIT_DROPBOX, set through
c.Spawner.environment, and made it once: mode 1733, root's (conftest.py). alice and bob
each run `lessonkit submit` from their own kernel, in their own course folder (alice's
exercises solved, bob's blank but ex1), as a learner types it in a terminal or a cell:

* each hand-in lands as <user>.zip, owned by that learner, mode 0600, its sha256 the
  receipt the learner was shown;
* bob can neither list the drop box nor read alice's file; he can neither write over it,
  remove it, rename his own file onto it, nor hand in under her name; alice can replace
  her own;
* `lessonkit grade <drop box>` (the instructor, as root) gives one row per learner with
  their scores: alice every point, bob fewer;
* a hand-in bob planted under alice's name before she handed in: her `lessonkit submit`
  says whose file it is, and the grader does not grade it as hers;
* progress: a learner's check() records in their own course folder only, and in a
  read-only course folder `lessonkit progress` says where progress goes instead (home).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from accounts import mode
from learners import Learner, Share

pytestmark = [pytest.mark.timeout(900)]

# Defined in each learner's kernel: a lessonkit command, as the learner would type it.
LESSONKIT = '''
import subprocess, sys

def lessonkit(*args, cwd, **env):
    """Run `lessonkit ARGS` in cwd (environment: the kernel's, plus env); return what it did."""
    done = subprocess.run([sys.executable, "-m", "lessonkit", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=600, env={**os.environ, **env})
    return json.dumps({"status": done.returncode, "out": done.stdout, "err": done.stderr})
'''
RECEIPT = re.compile(r"Your receipt \(the zip's sha256\): ([0-9a-f]{64})")


def lessonkit(learner: Learner, *args: str, cwd: Path, **env: str) -> dict[str, Any]:
    """Run `lessonkit ARGS` as the learner, from their kernel; return status, out and err."""
    code = f"print(lessonkit(*{args!r}, cwd={str(cwd)!r}, **{env!r}))"
    return json.loads(learner.run(code, timeout_s=900))  # the command's own limit is 600 s


def sha256(path: Path) -> str:
    """The sha256 of the file at path (read as root)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def grade(folder: Path, out: Path) -> tuple[list[dict[str, str]], str]:
    """Grade `folder` as the instructor does (`lessonkit grade`, as root); return the CSV's
    rows and what the command printed."""
    done = subprocess.run(
        [sys.executable, "-m", "lessonkit", "grade", str(folder), "--out", str(out)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    printed = f"{done.stdout}\n{done.stderr}"
    assert out.exists(), f"lessonkit grade wrote no grades (exit {done.returncode}):\n{printed}"
    with out.open(newline="") as rows:
        return list(csv.DictReader(rows)), printed


@pytest.fixture(scope="module", autouse=True)
def commands(learners: dict[str, Learner]) -> None:
    """Each learner's kernel can run lessonkit's commands (LESSONKIT above)."""
    for learner in learners.values():
        learner.run(LESSONKIT)


@pytest.fixture(scope="module")
def handed_in(learners: dict[str, Learner], share: Share) -> dict[str, str]:
    """alice and bob each run `lessonkit submit` in their course folder; return the receipts."""
    receipts = {}
    for role, learner in learners.items():
        done = lessonkit(learner, "submit", cwd=learner.course / "exercises")
        assert done["status"] == 0, done
        assert f"Handed in to the class drop box as {learner.name}.zip." in done["out"], done
        receipts[role] = RECEIPT.search(done["out"]).group(1)
    return receipts


def test_each_learner_hands_in_to_the_drop_box_as_their_own_unix_user(
    learners: dict[str, Learner], share: Share, handed_in: dict[str, str]
) -> None:
    box = share.dropbox
    assert mode(box) == 0o1733 and box.stat().st_uid == 0
    for learner in learners.values():  # one variable, set by the admin for every learner
        assert learner.run("print(os.environ['LESSONKIT_DROPBOX'])").strip() == str(box)
    assert sorted(p.name for p in box.iterdir()) == sorted(
        f"{learner.name}.zip" for learner in learners.values()
    )
    for role, learner in learners.items():
        zipped = box / f"{learner.name}.zip"
        info = zipped.lstat()
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        assert info.st_uid == learner.account.uid
        assert sha256(zipped) == handed_in[role]
        # The learner's own copy stays in their course folder, the same bytes.
        assert sha256(learner.course / "streaming-course-handin.zip") == handed_in[role]


def test_bob_can_neither_list_the_drop_box_nor_read_alices_hand_in_and_alice_can(
    learners: dict[str, Learner], share: Share, handed_in: dict[str, str], timings: dict[str, Any]
) -> None:
    alice, bob = learners["alice"], learners["bob"]
    hers = share.dropbox / f"{alice.name}.zip"
    read = f"__import__('hashlib').sha256(open({str(hers)!r}, 'rb').read()).hexdigest()"
    mine, theirs = alice.attempt(read), bob.attempt(read)
    listing = bob.attempt(f"os.listdir({str(share.dropbox)!r})")
    timings.setdefault("isolation", {})["drop box: read alice's hand-in"] = {
        "alice": mine,
        "bob": theirs,
    }
    timings["isolation"]["drop box: list it"] = {"bob": listing}
    assert mine == f"ok: {handed_in['alice']}", mine
    assert theirs.startswith("PermissionError: [Errno 13]"), theirs
    assert listing.startswith("PermissionError: [Errno 13]"), listing


def test_bob_cannot_replace_or_remove_alices_hand_in_and_alice_can_replace_her_own(
    learners: dict[str, Learner], share: Share, handed_in: dict[str, str], timings: dict[str, Any]
) -> None:
    alice, bob = learners["alice"], learners["bob"]
    hers = str(share.dropbox / f"{alice.name}.zip")
    planted = str(share.dropbox / ".bobs-copy.part")
    # Her control: she hands in again, onto her own file (the same bytes as her copy).
    own_copy = str(alice.course / "streaming-course-handin.zip")
    mine = alice.attempt(
        "__import__('lessonkit.learner.dropbox', fromlist=['put']).put("
        f"pathlib.Path({str(share.dropbox)!r}), {alice.name!r}, open({own_copy!r}, 'rb').read())"
    )
    assert mine == f"ok: {hers}", mine
    bob.run(f"open({planted!r}, 'wb').write(b'PK bob was here')")
    attempts = {
        "write over it": f"open({hers!r}, 'wb')",
        "remove it": f"os.unlink({hers!r})",
        "rename his file onto it": f"os.replace({planted!r}, {hers!r})",
    }
    theirs = {what: bob.attempt(code) for what, code in attempts.items()}
    bob.run(f"os.unlink({planted!r})")  # his own file: he may remove it
    # Nor through the course's own hand-in, claiming her hub name: his goes in as his.
    claimed = lessonkit(bob, "submit", cwd=bob.course / "exercises", JUPYTERHUB_USER=alice.name)
    timings.setdefault("isolation", {})["drop box: replace alice's hand-in"] = {
        "alice": f"hand in again, onto her own file: {mine}",
        "bob": "; ".join(f"{what}: {result}" for what, result in theirs.items())
        + "; lessonkit submit with JUPYTERHUB_USER set to her name: handed in as his own",
    }
    for what, result in theirs.items():
        assert result.startswith("PermissionError: "), f"{what}: {result}"
    assert claimed["status"] == 0, claimed
    assert f"Handed in to the class drop box as {bob.name}.zip." in claimed["out"], claimed
    hers_now = share.dropbox / f"{alice.name}.zip"
    assert sha256(hers_now) == handed_in["alice"] and hers_now.stat().st_uid == alice.account.uid
    assert sorted(p.name for p in share.dropbox.iterdir()) == sorted(
        f"{learner.name}.zip" for learner in learners.values()
    )


def test_lessonkit_grade_on_the_drop_box_gives_each_learner_a_row_with_their_score(
    learners: dict[str, Learner], share: Share, handed_in: dict[str, str], tmp_path: Path
) -> None:
    rows, printed = grade(share.dropbox, tmp_path / "grades.csv")
    by_learner = {row["learner"]: row for row in rows}
    alice, bob = (learners[role].name for role in ("alice", "bob"))
    assert len(rows) == 2 and sorted(by_learner) == sorted([alice, bob]), printed
    hers, his = by_learner[alice], by_learner[bob]
    assert float(hers["score"]) == float(hers["max_score"]) > 0, hers
    assert 0 < float(his["score"]) < float(hers["score"]), his
    ex1 = "response_times"  # his one solved exercise: as many points as hers
    assert float(his[ex1]) == float(hers[ex1]) > 0, rows


def test_a_hand_in_planted_under_alices_name_is_refused_to_her_and_never_graded_as_hers(
    learners: dict[str, Learner], share: Share, handed_in: dict[str, str], tmp_path: Path
) -> None:
    alice, bob = learners["alice"], learners["bob"]
    box = share.root / "dropbox-planted"  # a second drop box, made as the first
    box.mkdir()
    box.chmod(0o1733)
    # bob hands in his own work there, and, before alice does, plants a copy under her name.
    bobs = str(bob.course / "streaming-course-handin.zip")
    bob.run(
        "from lessonkit.learner.dropbox import put\n"
        f"put(pathlib.Path({str(box)!r}), {bob.name!r}, open({bobs!r}, 'rb').read())\n"
        f"open({str(box / f'{alice.name}.zip')!r}, 'wb').write(open({bobs!r}, 'rb').read())"
    )
    done = lessonkit(alice, "submit", cwd=alice.course / "exercises", LESSONKIT_DROPBOX=str(box))
    assert done["status"] == 0, done
    assert f"{alice.name}.zip is already there and belongs to {bob.name}" in done["out"], done
    assert "It is saved at" in done["out"] and "tell your instructor" in done["out"], done
    rows, printed = grade(box, tmp_path / "grades.csv")
    graded = {row["learner"]: row for row in rows if row["score"] not in ("", "0")}
    assert bob.name in graded and alice.name not in graded, printed
    # The grader says whose file stands under her name (in a row or a line it printed).
    lines = printed.splitlines() + [" ".join(r.values()) for r in rows if r["learner"] != bob.name]
    assert any(f"{alice.name}.zip" in line and bob.name in line for line in lines), printed


def test_a_learners_check_records_progress_in_their_own_course_folder_only(
    learners: dict[str, Learner],
) -> None:
    alice, bob = learners["alice"], learners["bob"]
    # bob runs his ex1 notebook, cell by cell, as JupyterLab runs it: its last cell is check().
    notebook = bob.course / "exercises" / "ex1_response_times.ipynb"
    cells = [
        c["source"] for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"
    ]
    for source in cells:
        source = "".join(source) if isinstance(source, list) else source
        bob.run(f"assert get_ipython().run_cell({source!r}).success")
    progress = {}
    for learner in (alice, bob):
        done = lessonkit(learner, "progress", "--json", cwd=learner.course / "exercises")
        assert done["status"] == 0, done
        progress[learner.role] = json.loads(done["out"])
    ex1 = {role: p["exercises"][0]["state"] for role, p in progress.items()}
    assert ex1 == {"alice": "not started", "bob": "passed"}, ex1
    record = Path(progress["bob"]["record"])
    assert (
        record == bob.course / ".lessonkit-progress.json"
        and record.stat().st_uid == bob.account.uid
    )
    assert progress["bob"]["note"] == ""


def test_a_read_only_course_folder_tells_the_learner_where_their_progress_goes(
    learners: dict[str, Learner], share: Share
) -> None:
    bob = learners["bob"]
    shared = share.shared_course
    assert shared.stat().st_uid == 0 and mode(shared) == 0o755
    done = lessonkit(bob, "progress", cwd=shared / "exercises")
    assert done["status"] == 0, done
    kept = bob.account.home / ".lessonkit" / "progress"
    assert (
        f"The course folder {shared} is read-only, so your progress is kept in {kept}"
        in (done["out"])
    ), done
    # And it is: a record written from there lands in his home, his own.
    place = bob.run(
        "from lessonkit.course import record\n"
        f"print(record.record('read_stream', passed=True, checks_passed=5, checks=5, points=10,"
        f" max_points=10, start={str(shared / 'exercises')!r}).file)"
    ).strip()
    assert Path(place).is_relative_to(kept) and Path(place).stat().st_uid == bob.account.uid
    assert not any(shared.rglob(".lessonkit-progress.json"))
