"""The hand-in zip: packed by submit(), read by the grader, recognised by its manifest only.

The hostile archives are built here byte for byte the way an attacker would build them
(a member named ../x, a symlink, a member whose header lies about its size, a bomb).
"""

from __future__ import annotations

import io
import json
import stat
import zipfile

import pytest

from lessonkit.course import archive
from lessonkit.course.archive import NOTEBOOK_FILES, NotAHandIn, pack, read_handin

NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def _manifest(**extra) -> dict:
    return {"course_version": "0.1.0", "name": "alice", "exercises": [], **extra}


def _zip(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            out.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _handin_members() -> dict[str, bytes]:
    manifest = {"kind": archive.HANDIN_KIND, "format": 1, **_manifest()}
    return {archive.MANIFEST: json.dumps(manifest).encode(), NOTEBOOK_FILES[0]: NOTEBOOK}


def test_a_packed_hand_in_reads_back_with_its_manifest_and_notebooks():
    data = pack({NOTEBOOK_FILES[0]: NOTEBOOK, NOTEBOOK_FILES[1]: b"{}"}, _manifest())
    handin = read_handin(data)
    assert handin.manifest["kind"] == archive.HANDIN_KIND and handin.name == "alice"
    assert handin.notebooks == {NOTEBOOK_FILES[0]: NOTEBOOK, NOTEBOOK_FILES[1]: b"{}"}


def test_the_same_notebooks_and_manifest_pack_to_the_same_bytes():
    first = pack({NOTEBOOK_FILES[0]: NOTEBOOK}, _manifest())
    assert pack({NOTEBOOK_FILES[0]: NOTEBOOK}, _manifest()) == first


def test_only_the_courses_exercise_notebooks_can_be_packed():
    with pytest.raises(ValueError, match="not an exercise notebook"):
        pack({"../notes.ipynb": NOTEBOOK}, _manifest())


def test_a_renamed_hand_in_is_still_a_hand_in_since_only_its_content_counts():
    data = pack({NOTEBOOK_FILES[0]: NOTEBOOK}, _manifest())
    assert archive.is_handin(data)  # the name Canvas or Moodle gives it never matters


def test_a_zip_without_a_manifest_is_not_a_hand_in():
    with pytest.raises(NotAHandIn, match="without a hand-in's manifest.json"):
        read_handin(_zip({NOTEBOOK_FILES[0]: NOTEBOOK}))


def test_a_zip_whose_manifest_is_someone_elses_is_not_a_hand_in():
    with pytest.raises(NotAHandIn, match="not a streaming-course hand-in"):
        read_handin(_zip({archive.MANIFEST: b'{"kind": "another course"}'}))


def test_bytes_that_are_not_a_zip_are_not_a_hand_in():
    with pytest.raises(NotAHandIn, match="not a zip archive"):
        read_handin(b"notes, not a zip")


def test_a_member_that_climbs_out_of_the_archive_makes_it_unreadable():
    members = {**_handin_members(), "../../.bashrc": b"echo owned"}
    with pytest.raises(NotAHandIn, match="leaves the archive"):
        read_handin(_zip(members))


def test_an_absolute_member_path_makes_it_unreadable():
    members = {**_handin_members(), "/etc/cron.d/x": b"* * * * * root true"}
    with pytest.raises(NotAHandIn, match="leaves the archive"):
        read_handin(_zip(members))


def test_a_link_in_the_archive_makes_it_unreadable():
    with pytest.raises(NotAHandIn, match="is a link"):
        read_handin(_zip(_handin_members(), link=NOTEBOOK_FILES[1]))


def test_a_zip_bomb_is_refused_after_reading_no_more_than_the_cap():
    bomb = {**_handin_members(), NOTEBOOK_FILES[1]: b"0" * (archive.NOTEBOOK_LIMIT_BYTES + 1)}
    data = _zip(bomb)
    assert len(data) < 100_000  # 16 MiB of zeros deflates to a few KiB
    with pytest.raises(NotAHandIn, match="would unpack to"):
        read_handin(data)


def test_a_member_whose_header_understates_its_size_is_caught_while_reading(monkeypatch):
    monkeypatch.setattr(archive, "NOTEBOOK_LIMIT_BYTES", 1000)
    data = bytearray(_zip({**_handin_members(), NOTEBOOK_FILES[1]: b"x" * 5000}))
    # Rewrite the member's declared size (central directory and local header) to 10 bytes.
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo(NOTEBOOK_FILES[1])
    for offset in range(len(data) - 4):
        if data[offset : offset + 4] == (5000).to_bytes(4, "little"):
            data[offset : offset + 4] = (10).to_bytes(4, "little")
    assert info.file_size == 5000
    with pytest.raises(NotAHandIn):
        read_handin(bytes(data))


def test_an_archive_with_more_members_than_a_hand_in_is_refused():
    members = {**_handin_members(), **{f"extra/{i}.txt": b"" for i in range(archive.MEMBERS_LIMIT)}}
    with pytest.raises(NotAHandIn, match="members"):
        read_handin(_zip(members))


def test_members_other_than_the_manifest_and_the_six_notebooks_are_never_read():
    members = {**_handin_members(), "notes.txt": b"x", "ex1_response_times-Copy1.ipynb": NOTEBOOK}
    handin = read_handin(_zip(members))
    assert set(handin.notebooks) == {NOTEBOOK_FILES[0]}


def test_a_notebook_that_is_not_the_one_the_manifest_hashed_gets_a_note():
    line = {"file": NOTEBOOK_FILES[0], "sha256": archive.sha256(b"the original")}
    data = pack({NOTEBOOK_FILES[0]: NOTEBOOK}, _manifest(exercises=[line]))
    assert read_handin(data).hash_notes() == [
        f"{NOTEBOOK_FILES[0]} is not the file the manifest lists (sha256 differs)"
    ]


def test_two_members_of_one_name_make_it_unreadable():
    # One reader takes the first, another the last: the instructor could see one notebook
    # while the grader runs the other.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name, data in _handin_members().items():
            out.writestr(name, data)
        with pytest.warns(UserWarning, match="Duplicate name"):
            out.writestr(NOTEBOOK_FILES[0], b"{}")
    with pytest.raises(NotAHandIn, match="same name"):
        read_handin(buffer.getvalue())


def test_a_member_compressed_with_bzip2_makes_it_unreadable():
    # bzip2 and LZMA unpack a whole read at once, however large it grows: a bomb no read
    # cap stops. submit() deflates, so nothing else is needed.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as out:
        for name, data in _handin_members().items():
            out.writestr(name, data)
    with pytest.raises(NotAHandIn, match="compressed in a way a hand-in never is"):
        read_handin(buffer.getvalue())


def test_a_notebook_the_manifest_lists_but_the_zip_lacks_gets_a_note():
    line = {"file": NOTEBOOK_FILES[5], "sha256": archive.sha256(NOTEBOOK)}
    data = pack({NOTEBOOK_FILES[0]: NOTEBOOK}, _manifest(exercises=[line]))
    assert read_handin(data).hash_notes() == [
        f"{NOTEBOOK_FILES[5]} is listed in the manifest but not in the zip"
    ]
