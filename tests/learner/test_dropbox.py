"""The class drop box: a hand-in goes only where other learners can neither list, read nor
replace it, and never onto a name someone else took.

Two real Unix users meet in tests/hub (test_dropbox.py there: bob can neither read nor
replace alice's hand-in). Here one user stands for both: "someone else" is a file or a
folder that belongs to another user (as root: chowned to another user id; otherwise its
owner, as lessonkit.learner.dropbox reads it, is made that user id).
"""

from __future__ import annotations

import os
import pwd
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lessonkit.learner import dropbox, handin
from lessonkit.learner.dropbox import NotDropped, dropbox_user, put
from lessonkit.learner.handin import ExerciseResult, hand_in

DATA = b"PK\x05\x06" + bytes(18)  # an empty zip: put() stores bytes, whatever they are
OTHER = 65534 if os.geteuid() != 65534 else 65533  # a user id that is not ours, nor root's


@pytest.fixture
def box(tmp_path: Path) -> Path:
    """A drop box as the admin makes it: mode 1733 (here owned by this user)."""
    folder = tmp_path / "dropbox"
    folder.mkdir()
    folder.chmod(0o1733)
    return folder


@pytest.fixture
def someone_else(monkeypatch: pytest.MonkeyPatch):
    """Return a function that makes a path belong to another user than this process."""

    def give_away(path: Path) -> None:
        if os.geteuid() == 0:
            os.chown(path, OTHER, OTHER, follow_symlinks=False)
            return

        # We cannot chown: the path's owner, as the checks read it, becomes OTHER.
        def owned_by_other(read):
            def stat_of(self, *args, **kwargs):
                info = read(self, *args, **kwargs)
                if self != path:
                    return info
                fields = list(info[:10])
                fields[4:6] = [OTHER, OTHER]  # st_uid, st_gid
                return os.stat_result(fields)

            return stat_of

        monkeypatch.setattr(Path, "stat", owned_by_other(Path.stat))
        monkeypatch.setattr(Path, "lstat", owned_by_other(Path.lstat))

    return give_away


def test_a_hand_in_lands_as_the_users_zip_readable_by_them_alone(box):
    target = put(box, "alice", DATA)
    assert target == box / "alice.zip" and target.read_bytes() == DATA
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(box) == ["alice.zip"]  # no temporary file left behind


def test_a_second_hand_in_replaces_the_learners_own_first(box):
    put(box, "alice", b"first")
    put(box, "alice", DATA)
    assert (box / "alice.zip").read_bytes() == DATA and os.listdir(box) == ["alice.zip"]


def test_the_temporary_name_cannot_be_guessed_so_it_cannot_be_taken_first(box, monkeypatch):
    names = []
    real_open = os.open
    monkeypatch.setattr(
        dropbox.os, "open", lambda p, *a: names.append(Path(p).name) or real_open(p, *a)
    )
    put(box, "alice", DATA)
    put(box, "alice", DATA)
    assert len(set(names)) == 2 and all(n.startswith(".alice.zip.") for n in names), names
    assert all(len(n) >= len(".alice.zip..part") + 16 for n in names), names


def test_the_hand_in_is_named_by_the_process_user_not_by_the_user_variables(monkeypatch):
    for variable in ("USER", "LOGNAME", "USERNAME"):
        monkeypatch.setenv(variable, "someone-else")
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    assert dropbox_user() == pwd.getpwuid(os.geteuid()).pw_name


def test_on_a_shared_account_the_hub_user_names_the_hand_in(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "no-such-unix-user-3f9a")
    assert dropbox_user() == "no-such-unix-user-3f9a"


def test_a_hub_user_variable_naming_another_unix_user_is_never_used(monkeypatch):
    other = next(e.pw_name for e in pwd.getpwall() if e.pw_uid != os.geteuid())
    monkeypatch.setenv("JUPYTERHUB_USER", other)
    assert dropbox_user() == pwd.getpwuid(os.geteuid()).pw_name != other


def test_a_missing_drop_box_is_refused_and_never_created(tmp_path):
    with pytest.raises(NotDropped, match="cannot be used: No such file or directory"):
        put(tmp_path / "missing", "alice", DATA)
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        (0o1777, "its mode 1777 lets every user list it"),
        (0o0755, "its mode 755 lets every user list it"),
        (0o0733, "its mode 733 lets other users replace the files in it"),
        (0o0773, "its mode 773 lets other users replace the files in it"),
    ],
)
def test_a_drop_box_others_could_list_or_write_over_is_refused_with_the_fix(box, mode, why):
    box.chmod(mode)
    with pytest.raises(NotDropped) as refused:
        put(box, "alice", DATA)
    assert why in str(refused.value)
    assert f"sudo install -d -m 1733 -o root -g root {box}" in str(refused.value)
    assert os.listdir(box) == []


def test_a_drop_box_a_group_other_than_roots_could_list_is_refused(box):
    if os.geteuid() == 0:
        os.chown(box, 0, OTHER)  # as an admin who gave the learners' group the folder
    box.chmod(0o1773)
    with pytest.raises(NotDropped) as refused:
        put(box, "alice", DATA)
    assert f"its mode 1773 lets its group (group id {box.stat().st_gid}) list it" in str(
        refused.value
    )
    assert os.listdir(box) == []


def test_a_drop_box_that_belongs_to_another_user_is_refused(box, someone_else):
    someone_else(box)
    with pytest.raises(NotDropped, match="not to root, who should have made it"):
        put(box, "alice", DATA)


def test_a_name_someone_else_took_first_is_refused_and_left_alone(box, someone_else):
    squatter = box / "alice.zip"
    squatter.write_bytes(b"planted")
    someone_else(squatter)
    with pytest.raises(NotDropped, match="alice.zip is already there and belongs to"):
        put(box, "alice", DATA)
    assert squatter.read_bytes() == b"planted"
    assert sorted(os.listdir(box)) == ["alice.zip"]


def test_a_link_planted_under_the_learners_name_is_never_written_through(box, tmp_path):
    elsewhere = tmp_path / "elsewhere.zip"
    elsewhere.write_bytes(b"not yours to overwrite")
    (box / "alice.zip").symlink_to(elsewhere)
    with pytest.raises(NotDropped, match="alice.zip is already there and is not a plain file"):
        put(box, "alice", DATA)
    assert elsewhere.read_bytes() == b"not yours to overwrite"
    assert (box / "alice.zip").is_symlink()


@pytest.mark.parametrize("name", ["../alice", "a/b", ".alice", "", "x" * 129])
def test_a_user_name_that_is_not_one_plain_file_name_is_refused(box, name):
    with pytest.raises(NotDropped, match="cannot name a file"):
        put(box, name, DATA)
    assert os.listdir(box) == []


def test_hand_in_says_why_the_drop_box_was_refused_and_keeps_the_zip(tmp_path, monkeypatch):
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    (course / "exercises").mkdir()
    box = tmp_path / "open-box"
    box.mkdir()
    box.chmod(0o1777)
    monkeypatch.chdir(course / "notebooks")
    monkeypatch.delenv("LESSONKIT_RECORD_DIR", raising=False)
    monkeypatch.setenv(handin.DROPBOX_ENV, str(box))
    handed = hand_in(
        checker=lambda notebooks: {f: ExerciseResult(f, "passed") for f in notebooks},
        now=datetime(2026, 12, 5, tzinfo=UTC),
    )
    assert handed.dropbox_path is None and handed.zip_path.exists()
    note = handin.table(handed)
    assert f"could not be put in the class drop box {box} as" in note
    assert "its mode 1777 lets every user list it" in note and "tell your instructor" in note
    assert os.listdir(box) == []
