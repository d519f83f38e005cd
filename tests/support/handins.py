"""Hand-in zips for the grading tests: real ones from submit(), hostile ones byte for byte.

``solved_course(folder)`` lays out a course folder whose exercises/ holds the solved
notebooks from solutions/ (as a learner who finished would have them);
``hand_in_here(course, out)`` hands it in as `lessonkit submit` does (the public checks
are the grader's ``public_results``). ``zip_bytes`` writes an archive field by field -- local headers, central
directory, end record -- so a test can give a member any name, mode, compression method
or declared size, the way an attacker would, with nothing in between to tidy it up.

Used by tests/grading/test_handins.py and tests/grading/test_sandbox.py.
"""

from __future__ import annotations

import bz2
import shutil
import stat
import struct
import zlib
from pathlib import Path

from lessonkit.course import archive
from lessonkit.course.folder import EXERCISES
from lessonkit.learner.handin import HandedIn, hand_in

ROOT = Path(__file__).resolve().parents[2]
FILES = [f"{stem}.ipynb" for stem in EXERCISES]
STORED, DEFLATED, BZIP2 = 0, 8, 12


def solved_course(folder: Path) -> Path:
    """Return a course folder (notebooks/, exercises/) whose exercises are the solutions."""
    (folder / "notebooks").mkdir(parents=True)
    shutil.copytree(ROOT / "solutions", folder / "exercises")
    return folder


def hand_in_here(course: Path, out: Path) -> HandedIn:
    """Hand in the course folder ``course`` into ``out`` as `lessonkit submit` would."""
    out.mkdir(parents=True, exist_ok=True)
    return hand_in(start=course / "notebooks", out=out)


def manifest_bytes() -> bytes:
    """Return a hand-in manifest (no exercise lines): enough to be taken for a hand-in."""
    return f'{{"kind": "{archive.HANDIN_KIND}", "format": 1, "exercises": []}}'.encode()


def zip_bytes(*members: tuple) -> bytes:
    """Return a zip archive of ``members``, each (name, data[, method[, mode[, size]]]).

    method: STORED, DEFLATED (default) or BZIP2; mode: the Unix mode kept in the member's
    external attributes (default a 0644 file; ``stat.S_IFLNK | 0o777`` makes a link whose
    target is ``data``); size: the uncompressed size the headers declare (default the
    real one).
    """
    local, central = b"", b""
    defaults = (DEFLATED, stat.S_IFREG | 0o644, None)
    for name, data, *more in members:
        method, mode, size = (*more, *defaults[len(more) :])
        if method == DEFLATED:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate, as zip holds it
            packed = packer.compress(data) + packer.flush()
        else:
            packed = bz2.compress(data) if method == BZIP2 else data
        raw = name.encode("utf-8")
        fields = (20, 0x800, method, 0, 0x5C21, zlib.crc32(data), len(packed))
        fields += (len(data) if size is None else size, len(raw))
        offset = len(local)
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + raw + packed
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0314, *fields, 0, 0, 0, 0, mode << 16, offset
        )
        central += raw
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0
    )
    return local + central + end
