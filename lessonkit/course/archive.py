"""The hand-in: one zip of the exercise notebooks and a manifest, written and read here.

    pack(notebooks, manifest) -> bytes        what ``submit()`` writes
    read_handin(data) -> HandIn               what ``lessonkit grade`` reads (or NotAHandIn)

The zip holds ``manifest.json`` and the exercise notebooks as saved, by their course
names (``ex1_response_times.ipynb`` ...), at its top level. The manifest is plain JSON:

    {"kind": "streaming-course hand-in", "format": 1, "course_version": "0.1.0",
     "name": "alice" | null, "handed_in": "2026-12-05T09:00:00+00:00",
     "exercises": [{"exercise": "ex1", "id": "response_times",
                    "file": "ex1_response_times.ipynb" | null,   # null: missing
                    "state": "passed" | "failing" | "not started" | "missing",
                    "checks_passed": 5, "checks": 5, "points": 10, "max_points": 10,
                    "missing": "what the public checks still miss",
                    "saved_at": "...", "sha256": "..."}, ...]}

A hand-in is recognised by that manifest (its ``kind``), never by the archive's name: an
LMS renames uploads (Canvas: ``login_id_fileid_original.zip``; Moodle keeps the name
inside each learner's folder). The manifest is the learner's own account: the grader
scores only its own rerun of the notebooks, and uses the manifest's results and hashes
for a note when they disagree.

Reading is for untrusted archives: only the manifest and the six named notebooks are
read, each size-capped, in memory, and no path from the archive is ever used on disk.
An archive with a member that climbs out (``../``, an absolute path), a link, two
members of one name, more members than a hand-in has, a member whose size (declared or
real) passes its cap, or a notebook compressed otherwise than ``submit()`` does (bzip2
and LZMA unpack without a bound on what one read makes) is not a hand-in
(``NotAHandIn`` says which).
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lessonkit.course.folder import EXERCISES

__all__ = [
    "HANDIN_KIND",
    "HANDIN_NAME",
    "MANIFEST",
    "NOTEBOOK_FILES",
    "HandIn",
    "NotAHandIn",
    "is_handin",
    "pack",
    "read_handin",
    "sha256",
]

HANDIN_KIND = "streaming-course hand-in"
HANDIN_NAME = "streaming-course-handin"  # the zip's stem as submit() names it (-NAME with --name)
FORMAT = 1
MANIFEST = "manifest.json"
NOTEBOOK_FILES = tuple(f"{stem}.ipynb" for stem in EXERCISES)
ARCHIVE_LIMIT_BYTES = 64 * 1024 * 1024  # the zip as handed in
NOTEBOOK_LIMIT_BYTES = 16 * 1024 * 1024  # one notebook, uncompressed (outputs included)
MANIFEST_LIMIT_BYTES = 256 * 1024
MEMBERS_LIMIT = 64  # a hand-in has 7; folders and an OS's extras (__MACOSX/) are tolerated
FIXED_ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # same notebooks and manifest -> same bytes
# What unpacking a damaged or hostile member raises: a bad header or CRC, an encrypted
# member, a truncated or corrupt deflate stream, a compression method Python lacks.
_UNPACK_ERRORS = (
    zipfile.BadZipFile,
    RuntimeError,
    OSError,
    EOFError,
    zlib.error,
    NotImplementedError,
)


class NotAHandIn(ValueError):
    """The bytes are not a hand-in the grader can read; the message says why."""


@dataclass(frozen=True)
class HandIn:
    """A hand-in as read: its manifest and its notebooks (file name -> bytes)."""

    manifest: dict[str, Any]
    notebooks: dict[str, bytes] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        """Return the name the learner gave (``submit --name``), or None."""
        name = self.manifest.get("name")
        return name if isinstance(name, str) and name else None

    def claimed(self, file: str) -> dict[str, Any]:
        """Return the manifest's line for notebook `file` ({} when it has none)."""
        for line in self.manifest.get("exercises") or []:
            if isinstance(line, dict) and line.get("file") == file:
                return line
        return {}

    def hash_notes(self) -> list[str]:
        """Return a note for each notebook whose sha256 is not the one its manifest lists,
        and for each the manifest lists (with a sha256) that the zip does not hold."""
        notes = []
        for file, data in self.notebooks.items():
            listed = self.claimed(file).get("sha256")
            if listed and listed != sha256(data):
                notes.append(f"{file} is not the file the manifest lists (sha256 differs)")
        for file in NOTEBOOK_FILES:
            if file not in self.notebooks and self.claimed(file).get("sha256"):
                notes.append(f"{file} is listed in the manifest but not in the zip")
        return notes


def sha256(data: bytes) -> str:
    """Return the hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def pack(notebooks: Mapping[str, bytes], manifest: Mapping[str, Any]) -> bytes:
    """Return the zip of `notebooks` (course file name -> bytes) and `manifest`.

    The members carry a fixed time, so the same files give the same bytes (and receipt).
    """
    unknown = sorted(set(notebooks) - set(NOTEBOOK_FILES))
    if unknown:
        raise ValueError(f"not an exercise notebook of the course: {', '.join(unknown)}")
    manifest = {"kind": HANDIN_KIND, "format": FORMAT, **manifest}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        members = {MANIFEST: json.dumps(manifest, indent=1).encode() + b"\n"}
        members.update((f, notebooks[f]) for f in NOTEBOOK_FILES if f in notebooks)
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def _refuse_member(info: zipfile.ZipInfo) -> str | None:
    """Return why `info` makes the archive unreadable as a hand-in, or None."""
    name = info.filename
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        return f"a member's path leaves the archive ({name!r})"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return f"a member is a link ({name!r})"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"a member is compressed in a way a hand-in never is ({name!r})"
    return None


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """Return the member's bytes, reading no more than `limit` + 1 whatever its header says."""
    if info.file_size > limit:
        raise NotAHandIn(
            f"{info.filename} would unpack to {info.file_size:,} bytes (limit {limit:,})"
        )
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise NotAHandIn(f"{info.filename} unpacks to more than {limit:,} bytes")
    return data


def is_handin(data: bytes) -> bool:
    """Return True if `data` reads as a hand-in."""
    try:
        read_handin(data)
    except NotAHandIn:
        return False
    return True


def read_handin(data: bytes) -> HandIn:
    """Return the hand-in in `data` (a zip's bytes); raise NotAHandIn saying why it is not one."""
    if len(data) > ARCHIVE_LIMIT_BYTES:
        raise NotAHandIn(f"the archive has {len(data):,} bytes (limit {ARCHIVE_LIMIT_BYTES:,})")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as error:
        raise NotAHandIn(f"not a zip archive ({error})") from None
    with archive:
        members = archive.infolist()
        if len(members) > MEMBERS_LIMIT:
            raise NotAHandIn(f"the archive has {len(members)} members; a hand-in has 7")
        for info in members:
            why = _refuse_member(info)
            if why:
                raise NotAHandIn(why)
        by_name = {info.filename: info for info in members}
        if len(by_name) < len(members):  # which one would a reader take? each its own
            raise NotAHandIn("two members of the archive have the same name")
        if MANIFEST not in by_name:
            raise NotAHandIn(f"an archive without a hand-in's {MANIFEST}")
        try:
            manifest = json.loads(_read_capped(archive, by_name[MANIFEST], MANIFEST_LIMIT_BYTES))
        except (ValueError, *_UNPACK_ERRORS) as error:
            raise NotAHandIn(f"its {MANIFEST} cannot be read ({error})") from None
        if not isinstance(manifest, dict) or manifest.get("kind") != HANDIN_KIND:
            raise NotAHandIn(f"its {MANIFEST} is not a streaming-course hand-in's")
        notebooks = {}
        for file in NOTEBOOK_FILES:
            if file in by_name:
                try:
                    notebooks[file] = _read_capped(archive, by_name[file], NOTEBOOK_LIMIT_BYTES)
                except _UNPACK_ERRORS as error:
                    raise NotAHandIn(f"{file} cannot be unpacked ({error})") from None
    return HandIn(manifest, notebooks)
