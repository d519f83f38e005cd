"""Who handed in what: ``find_roster(paths) -> Roster``: one submission per learner, and the rest.

A class arrives in many shapes, often several at once (a folder holding an
nbgrader, a Canvas and a Moodle export). Each folder is recognised on its
own, at any depth:

* nbgrader: a ``submitted/`` folder; each folder in it is a student, with
  everything under it;
* Moodle ("download submissions in folders"):
  ``José Núñez_200101_assignsubmission_file_/...`` -> ``José Núñez_200101``
  (LMS id 200101, the participant number), and the older flat
  ``..._assignsubmission_file_ex1....ipynb``;
* Gradescope: ``submission_<id>/`` folders, named by the export's
  ``submission_metadata.yml`` (the submitter's sid, else email, else name);
* Canvas, flat in one folder: ``núñezjosé_12345_67890_ex1_response_times.ipynb``
  -> ``núñezjosé_12345`` (LMS id 12345); ``..._late_...`` (any case) marks
  the file as handed in late;
* a folder per learner: in a folder you give (or one holding an export), each
  other folder is one learner, with everything under it: a resubmission
  (``class/alice/week1/...`` and ``class/alice/week2/...``) stays alice's;
* loose notebooks in a folder: course notebooks (by name or metadata), each a
  different one, are one learner named by the folder; any other notebook
  (``bob.ipynb``) is a learner of its own, named by the file;
* hand-in zips (``submit()``'s), wherever a notebook may be, recognised by their
  manifest, never by their name (``lessonkit.course.archive`` reads them in
  memory): a loose one is named by the file (a drop box's ``alice.zip``,
  ``streaming-course-handin-alice.zip``) or, under ``submit()``'s own name, by
  its folder. A learner who handed in a zip is graded from it alone: their loose
  notebooks are listed as not graded, and a second zip is listed *unexplained*.

Names may be in any script. Every file handed over ends up either in exactly
one learner's submission or in ``Roster.not_graded`` with its reason: a second
copy of a notebook (Jupyter's ``-Copy1``, ``(1)``), a checkpoint, a file that
is neither a notebook nor a hand-in (any other archive, one with a ``../`` member,
a link or a bomb inside). Only notebooks and hand-ins make a learner: a file or a
folder without one is listed, never a row. A second original of the same
notebook for one learner is listed as not graded and *unexplained*, which makes
``lessonkit grade`` exit 1 and the learner's grade wait (``Submission.waits``). A learner id found in two places is one learner
when one LMS gives both the same id (nbgrader's student, a Canvas user):
merged, with a note naming both places; otherwise the two are kept apart
(``sam (a)``, ``sam (b)``: ``_apart``), each with a note naming the other place. A notebook
that cannot be read is still a learner's (the grader makes it an error on the
exercise its name says).

Nothing is followed or waited on: an entry that is a link, a FIFO, a device or a
socket is listed, and every file is opened without following a link
(``read_file``). A folder anyone may write to is a drop box (a hub's, mode 1733):
its files are each the learner their name says, and a folder in it is listed.
There, a file named for one learner but owned by another learner's Unix account
is listed with that owner (``_planted``): it was put there under another's name.

A submission's notebooks are ``Notebook`` objects: a file, or bytes that came
from elsewhere (an archive); ``read_code_cells(data)`` reads a notebook's
code from its bytes, never its stored outputs.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import stat
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lessonkit.course import archive
from lessonkit.grading.exercises import EXERCISES

# course notebook id -> the exercise it holds: ex1_response_times ... ex6_parse_sse
COURSE_NOTEBOOKS = {f"ex{i}_{eid}": eid for i, eid in enumerate(EXERCISES, 1)}
_SKIPPED_DIRS = {".ipynb_checkpoints": "a Jupyter checkpoint, not the submission",
                 "__pycache__": "Python's cache"}  # fmt: skip
_COPY = re.compile(r"(?:-Copy\d*| \(\d+\)|-\d+| copy(?: \d+)?)$", re.IGNORECASE)
_CANVAS = re.compile(
    r"^(?P<name>[^\W\d_][^_]*?)(?P<late>_late)?_(?P<uid>\d+)(?:_(?P<aid>\d+))?_(?P<file>.+)$",
    re.IGNORECASE,
)
_MOODLE = re.compile(
    r"^(?P<name>.+?)_(?P<uid>\d+)_assign(?:submission|feedback)_[a-z]+_?(?P<file>.*)$"
)
_GRADESCOPE = re.compile(r"^submission_\d+$")
_GRADESCOPE_META = "submission_metadata.yml"
FILE_LIMIT_BYTES = archive.ARCHIVE_LIMIT_BYTES  # the largest file read: a notebook, a hand-in


@dataclass(frozen=True)
class Notebook:
    """One notebook handed in: the path it was found at, and its bytes when not from that file.

    A notebook taken out of a hand-in zip carries its ``data``, and its
    manifest's line in ``claimed`` (``{}`` when it has none); its ``path`` then
    names it (``alice.zip/ex1_response_times.ipynb``).
    """

    path: Path
    data: bytes | None = None
    claimed: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """Return the notebook's file name."""
        return self.path.name

    def read(self) -> bytes:
        """Return the notebook's bytes (OSError when its file cannot be read)."""
        return self.data if self.data is not None else read_file(self.path)

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class Submission:
    """One learner's work: an id, the notebooks to grade together, notes about the files."""

    learner: str
    notebooks: tuple[Notebook, ...]
    notes: tuple[str, ...] = ()
    lms: str = ""  # "canvas", "moodle", "gradescope", "nbgrader" or "" (a folder, a file)
    lms_id: str = ""  # the LMS's own id of the learner (Canvas user id, Moodle participant)
    late: tuple[str, ...] = ()  # the files the LMS marked as handed in late
    waits: tuple[str, ...] = ()  # what the instructor must settle first (a second original)


@dataclass(frozen=True)
class NotGraded:
    """A file handed over that no learner's grade uses, and why."""

    path: Path
    reason: str
    explained: bool = True  # False: the grader could not tell what it is for


@dataclass(frozen=True)
class Roster:
    """The learners found, and every other file with its reason."""

    submissions: tuple[Submission, ...]
    not_graded: tuple[NotGraded, ...] = ()

    @property
    def unexplained(self) -> list[NotGraded]:
        """Return the files left out for a reason the grader could not settle."""
        return [item for item in self.not_graded if not item.explained]


@dataclass
class _Found:
    """A learner being gathered: where from, and the notebooks found so far."""

    learner: str
    source: Path
    lms: str = ""
    lms_id: str = ""
    notebooks: list[Notebook] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    handins: list[tuple[Path, archive.HandIn]] = field(default_factory=list)


def _plain_name(name: str) -> str:
    """Return a notebook's file stem without an LMS prefix (Canvas, Moodle)."""
    stem = unicodedata.normalize("NFC", name.removesuffix(".ipynb"))
    for pattern in (_CANVAS, _MOODLE):
        match = pattern.match(stem)
        if match and match.group("file"):
            return match.group("file")
    return stem


def course_notebook(notebook: Notebook) -> str | None:
    """Return which course notebook it is: its lessonkit metadata, else its name."""
    try:
        meta = json.loads(notebook.read()).get("metadata", {}).get("lessonkit", {})
        value = meta.get("notebook")
        if isinstance(value, str) and value in COURSE_NOTEBOOKS:
            return value
    except (OSError, ValueError, AttributeError):
        pass
    plain = _COPY.sub("", _plain_name(notebook.name))
    return plain if plain in COURSE_NOTEBOOKS else None


def exercise_of(name: str) -> str | None:
    """Return the exercise id a notebook's file name says it holds (for an unreadable file)."""
    plain = _COPY.sub("", _plain_name(name))
    found = re.search(r"ex(\d)_", plain)
    if plain in COURSE_NOTEBOOKS:
        return COURSE_NOTEBOOKS[plain]
    if found and 1 <= int(found.group(1)) <= len(COURSE_NOTEBOOKS):
        return list(COURSE_NOTEBOOKS.values())[int(found.group(1)) - 1]
    return None


def _is_copy(notebook: Notebook) -> bool:
    return bool(_COPY.search(_plain_name(notebook.name)))


def _flat_lms(path: Path) -> _Found | None:
    """Return the learner of a Canvas or flat Moodle file name, else None."""
    stem = unicodedata.normalize("NFC", path.stem)
    for lms, pattern in (("canvas", _CANVAS), ("moodle", _MOODLE)):
        match = pattern.match(stem)
        if match and match.group("file"):
            uid = match.group("uid")
            found = _Found(f"{match.group('name')}_{uid}", path.parent, lms, uid)
            found.late += [path.name] if lms == "canvas" and match.group("late") else []
            return found
    return None


def _folder_lms(folder: Path, gradescope: dict[str, str]) -> _Found | None:
    """Return the learner of an LMS submission folder, else None."""
    name = unicodedata.normalize("NFC", folder.name)
    moodle = _MOODLE.match(name)
    if moodle and not moodle.group("file"):
        learner = f"{moodle.group('name')}_{moodle.group('uid')}"
        return _Found(learner, folder, "moodle", moodle.group("uid"))
    if _GRADESCOPE.match(name):
        who = gradescope.get(name, name)
        return _Found(who, folder, "gradescope", who)
    return None


def _skipped(name: str) -> str | None:
    """Return why a folder is not looked into (a checkpoint, a hidden folder), else None."""
    return _SKIPPED_DIRS.get(name) or ("a hidden folder" if name.startswith(".") else None)


def read_file(path: Path, limit: int = FILE_LIMIT_BYTES) -> bytes:
    """Return a regular file's bytes, opened without following a link or waiting on a FIFO.

    Raises OSError (ELOOP for a link) for anything else, or a file over ``limit`` bytes.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes")
    return data


def _odd(path: Path) -> str | None:
    """Return why an entry is never read -- a link, a FIFO, a device, a socket -- else None."""
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "a link (links are never followed)"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file (a FIFO, a device or a socket)"
    return None


def _planted(path: Path, name: str) -> str | None:
    """Return why ``path``, named for learner ``name``, is not theirs to hand in, else None.

    On a hub each learner is a Unix user, and a drop box lets every learner write in it: a
    file there named for a learner but owned by another learner's account was put there by
    that account. A learner's account is the Unix user of their name, or that name after a
    hub's prefix (The Littlest JupyterHub runs hub user alice as ``jupyter-alice``). Taken
    as theirs: a file outside a drop box (no learner could put it there), a file of root or
    of the user running the grader, and a name that is no Unix user owned by an account that
    is no learner's own (hub users who all share one Unix account, such as ``jovyan``: no
    owner tells them apart).
    """
    try:
        import pwd

        owner = path.lstat().st_uid
        if not _anyone_writes(path.parent) or owner in (0, os.geteuid()):
            return None
        who = pwd.getpwuid(owner).pw_name
        if _account_of(who, name):
            return None
        try:
            pwd.getpwnam(name)
        except KeyError:  # a hub name: planted only by an account that is another learner's
            if not any(_account_of(who, _own_name(other)) for other in path.parent.iterdir()):
                return None
    except (ImportError, KeyError, OSError):
        return None
    return f"owned by the Unix user {who}, not by {name}: handed in under another's name"


def _account_of(unix_user: str, name: str) -> bool:
    """Return True when ``unix_user`` is learner ``name``'s account: that name, or a hub's
    prefix and a dash before it (``jupyter-alice``)."""
    return unix_user == name or unix_user.endswith("-" + name)


def _anyone_writes(folder: Path) -> bool:
    """Return True for a folder every user may write to: a drop box (what is in it, anyone
    may have put there)."""
    return bool(folder.stat().st_mode & stat.S_IWOTH)


def _files_under(folder: Path) -> Iterator[Path]:
    """Yield every file under ``folder``, and each link to a folder (never followed)."""
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        yield from (Path(root) / f for f in sorted(files + links))


def _holds_export(folder: Path) -> bool:
    """Return True when an LMS export lies somewhere below: nbgrader's submitted/, a Moodle
    or Gradescope folder, a Canvas or flat Moodle file name."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not _skipped(d)]
        if "submitted" in dirs or any(_folder_lms(Path(root) / d, {}) for d in dirs):
            return True
        if any(name.endswith((".ipynb", ".zip")) and _flat_lms(Path(name)) for name in files):
            return True
    return False


def _gradescope_names(root: Path) -> dict[str, str]:
    """Return submission folder -> learner id from a Gradescope submission_metadata.yml."""
    meta = root / _GRADESCOPE_META
    if not meta.is_file():
        return {}
    names: dict[str, str] = {}
    current, found = "", {}
    for line in meta.read_text(encoding="utf-8", errors="replace").splitlines() + ["end:"]:
        top = re.match(r"^(\S[^:]*):\s*$", line)
        if top:
            if current:
                who = found.get("sid") or found.get("email") or found.get("name")
                if who:
                    names[current] = who
            current, found = top.group(1).strip(), {}
            continue
        item = re.match(r"^\s*-?\s*:(name|sid|email):\s*['\"]?(.*?)['\"]?\s*$", line)
        if item and item.group(2) and item.group(1) not in found:
            found[item.group(1)] = item.group(2)
    return names


class _Scan:
    """One pass over the paths given: learners found, and the files left out."""

    def __init__(self) -> None:
        self.found: list[_Found] = []
        self.left: list[NotGraded] = []

    def learner(
        self, found: _Found, files: Iterable[Path], named_by: Path | None = None, junk: str = ""
    ) -> None:
        """Give ``found`` the notebooks and hand-ins among ``files``; list the other files as
        not graded (``junk``: why a file that is neither is listed). ``named_by``: the file
        whose name names the learner (nothing is taken from it when it is ``_planted``)."""
        planted = _planted(named_by, found.learner) if named_by is not None else None
        for path in files:
            in_skipped = next((r for d, r in _SKIPPED_DIRS.items() if d in path.parts), None)
            if skipped := planted or _odd(path) or in_skipped:
                self.left.append(NotGraded(path, skipped))
            elif path.suffix == ".ipynb":
                found.notebooks.append(Notebook(path))
            else:
                self.other(found, path, junk or f"not a notebook ({found.learner}'s folder)")
        self.found.append(found)

    def other(self, found: _Found, path: Path, junk: str) -> None:
        """A file that is not a notebook: a hand-in zip (by its manifest) goes to ``found``;
        any other file is listed (``junk``), any other archive with why it is no hand-in."""
        try:
            data = read_file(path)
            if not zipfile.is_zipfile(io.BytesIO(data)):
                self.left.append(NotGraded(path, junk))
            else:
                found.handins.append((path, archive.read_handin(data)))
        except OSError as exc:
            self.left.append(NotGraded(path, f"{junk} ({exc.strerror or exc})"))
        except archive.NotAHandIn as exc:
            self.left.append(NotGraded(path, f"not a hand-in: {exc}"))

    def folder(self, folder: Path) -> None:
        """Find the learners in a folder given (or one holding an export): each entry on its own."""
        gradescope = _gradescope_names(folder)
        loose: list[Path] = []
        dropbox = _anyone_writes(folder)
        for entry in sorted(folder.iterdir()):
            if odd := _odd(entry):
                self.left.append(NotGraded(entry, odd))
            elif entry.is_dir() and dropbox:
                self.left.append(NotGraded(entry, "a folder in a drop box (its files count)"))
            elif entry.is_dir():
                self.subfolder(entry, gradescope)
            elif entry.name == _GRADESCOPE_META and gradescope:
                self.left.append(NotGraded(entry, "Gradescope's list of submitters (read)"))
            elif entry.name.startswith("."):
                self.left.append(NotGraded(entry, "not a notebook"))
            elif (flat := _flat_lms(entry)) is not None:
                self.learner(flat, [entry], junk="not a notebook")
            elif entry.suffix == ".ipynb":
                loose.append(entry)
            else:  # a hand-in is the learner its name says (a drop box's alice.zip)
                self.learner(_Found(_own_name(entry), folder), [entry], entry, "not a notebook")
        course = _one_learners(loose)
        if course:
            self.learner(_Found(folder.name, folder), course)
        for notebook in loose:
            if notebook not in course:
                self.learner(_Found(notebook.stem, folder), [notebook], notebook)

    def subfolder(self, entry: Path, gradescope: dict[str, str]) -> None:
        """A folder inside one given: skipped, nbgrader's, an LMS learner, an export, or a learner."""
        if reason := _skipped(entry.name):
            self.left += [NotGraded(p, reason) for p in _files_under(entry)]
        elif entry.name == "submitted":  # nbgrader: submitted/<student>/<assignment>/
            for student in sorted(entry.iterdir()):
                odd = _odd(student)
                if odd or not student.is_dir():
                    self.left.append(NotGraded(student, odd or "not in a student's folder"))
                else:
                    found = _Found(student.name, student, "nbgrader", student.name)
                    self.learner(found, _files_under(student))
        elif (lms := _folder_lms(entry, gradescope)) is not None:
            self.learner(lms, _files_under(entry))
        elif _holds_export(entry) or _anyone_writes(entry):
            self.folder(entry)
        else:  # a folder per learner: everything under it is this learner's
            name = unicodedata.normalize("NFC", entry.name)
            self.learner(_Found(name, entry), _files_under(entry))

    def file(self, path: Path) -> None:
        """A file given by its path: a notebook or a hand-in is its LMS name's, nbgrader's
        student's, or the learner its own name says; anything else is listed, never a learner."""
        parts = path.resolve().parts[:-1]
        if "submitted" in parts[:-1]:
            student = parts[len(parts) - parts[::-1].index("submitted")]
            found = _Found(student, path.parent, "nbgrader", student)
            self.learner(found, [path], junk="not a notebook")
        elif (flat := _flat_lms(path)) is not None:
            self.learner(flat, [path], junk="not a notebook")
        else:
            self.learner(_Found(_own_name(path), path.parent), [path], path, "not a notebook")


def _own_name(path: Path) -> str:
    """Return the learner a file names: its stem (``alice.zip``: alice), the NAME of
    ``streaming-course-handin-NAME.zip``, or its folder's name for submit()'s plain name."""
    stem = unicodedata.normalize("NFC", path.stem)
    if stem == archive.HANDIN_NAME:
        return unicodedata.normalize("NFC", path.resolve().parent.name)
    return stem.removeprefix(archive.HANDIN_NAME + "-") or stem


def _one_learners(loose: list[Path]) -> list[Path]:
    """Return the loose notebooks that are one learner's: course-named files (with their
    copies), or files that are each a different course notebook by their metadata."""
    named = [nb for nb in loose if exercise_of(nb.name) is not None]
    others = [nb for nb in loose if nb not in named]
    kinds = [course_notebook(Notebook(nb)) for nb in others]
    taken = {course_notebook(Notebook(nb)) for nb in named}
    if len(others) >= 2 and None not in kinds and len(set(kinds)) == len(kinds):
        if not taken & set(kinds):
            return named + others
    return named


def _from_handin(
    found: _Found, handins: list[tuple[Path, archive.HandIn]]
) -> tuple[list[str], list[NotGraded]]:
    """Make the first hand-in zip ``found``'s notebooks; return notes and the files left out.

    A learner who handed in a zip is graded from that zip alone: their loose notebooks
    are listed, and so is a second zip (which one counts is the instructor's to say).
    """
    (path, handin), *others = sorted(handins, key=lambda h: str(h[0]))
    counts = f"a hand-in zip from this learner counts ({path})"
    left = [NotGraded(nb.path, counts) for nb in found.notebooks]
    two = f"{found.learner} has two hand-in zips: {path} is graded; remove the one not to count"
    left += [NotGraded(other, two, explained=False) for other, _ in others]
    notes = [f"graded from the hand-in {path.name}"]
    if found.notebooks:
        notes.append(f"{len(found.notebooks)} loose notebook(s) not graded: {counts}")
    notes += [f"not graded {other}: a second hand-in zip" for other, _ in others]
    notes += [f"{path.name}: {note}" for note in handin.hash_notes()]
    found.notebooks = [
        Notebook(path / file, data, handin.claimed(file)) for file, data in handin.notebooks.items()
    ]
    return notes, left


def _one_file_each(found: _Found) -> tuple[list[Notebook], list[str], list[NotGraded]]:
    """Return (notebooks to grade, notes, files left out): one file per course notebook."""
    kept: list[Notebook] = []
    notes: list[str] = []
    left: list[NotGraded] = []
    by_kind: dict[str, list[Notebook]] = {}
    for notebook in dict.fromkeys(found.notebooks):
        kind = course_notebook(notebook)
        if kind is None:
            kept.append(notebook)
        else:
            by_kind.setdefault(kind, []).append(notebook)
    for same in by_kind.values():
        same.sort(key=lambda nb: (_is_copy(nb), len(nb.name), str(nb)))
        kept.append(same[0])
        for other in same[1:]:
            if _is_copy(other):
                reason = f"a second copy of {same[0].name} (only that one is graded)"
                notes.append(f"ignored {other.name}: {reason}")
                left.append(NotGraded(other.path, f"{found.learner}: {reason}"))
            else:
                reason = (
                    f"{found.learner} has two originals of {same[0].name}: {same[0]} is "
                    "graded; say which one counts by removing the other"
                )
                notes.append(f"not graded {other}: a second original")
                left.append(NotGraded(other.path, reason, explained=False))
    return sorted(kept, key=str), notes, left


def _subfolders(source: Path, notebooks: Iterable[Notebook]) -> list[str]:
    """Return the folders right under ``source`` that the graded notebooks come from."""
    parts = (
        nb.path.relative_to(source).parts for nb in notebooks if nb.path.is_relative_to(source)
    )
    return sorted({inside[0] for inside in parts if len(inside) > 1})


def _apart(sources: list[Path]) -> list[str]:
    """Return a label for each place one learner id was found in, no two alike: the fewest
    folders above it that tell it apart (``class``; ``x/class`` beside ``y/class``)."""
    parents = [source.parent.parts for source in sources]
    for depth in range(1, max(len(parts) for parts in parents) + 1):
        labels = ["/".join(parts[-depth:]) for parts in parents]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{source.parent} #{n}" for n, source in enumerate(sources, 1)]


def find_roster(paths: Iterable[str | Path]) -> Roster:
    """Return the learners in the files and folders given, sorted by id, and every file left out."""
    scan = _Scan()
    for raw in paths:
        path = Path(raw)
        if path.is_dir() and path.name == "submitted":  # nbgrader's folder itself
            scan.subfolder(path, {})
        elif path.is_dir():
            scan.folder(path)
        else:
            scan.file(path)
    by_id: dict[str, list[_Found]] = {}
    for found in scan.found:
        if found.notebooks or found.handins:  # only notebooks and hand-ins make a learner
            by_id.setdefault(found.learner, []).append(found)
    submissions = []
    left = list(scan.left)
    for learner, group in by_id.items():
        places = sorted({str(f.source) for f in group})
        one_lms_id = len({(f.lms, f.lms_id) for f in group}) == 1 and group[0].lms_id
        merged = len(group) == 1 or one_lms_id or len(places) == 1
        parts = [group] if merged else [[f] for f in group]
        labels = _apart([part[0].source for part in parts])
        for part, label in zip(parts, labels, strict=True):
            first = part[0]
            whole = _Found(learner, first.source, first.lms, first.lms_id)
            whole.notebooks = [nb for f in part for nb in f.notebooks]
            if len(parts) > 1:
                whole.learner = f"{learner} ({label})"
            handins = [h for f in part for h in f.handins]
            zip_notes, zip_left = _from_handin(whole, handins) if handins else ([], [])
            kept, notes, out = _one_file_each(whole)
            notes[:0] = zip_notes
            out += zip_left
            if len(places) > 1 and len(parts) == 1:
                one = f"graded as one learner ({first.lms} id {first.lms_id})"
                notes.insert(0, f"{learner} is found in {' and '.join(places)}: {one}")
            elif len(parts) > 1:
                others = ", ".join(p for p in places if p != str(first.source))
                notes.insert(0, f"the learner id {learner} is also found in {others}: kept apart")
            if not first.lms and len(spread := _subfolders(first.source, kept)) > 1:
                notes.append(
                    f"graded as one learner from the folders {', '.join(spread)} of "
                    f"{first.source.name}; if each is a learner, grade {first.source} itself"
                )
            late = tuple(name for f in part for name in f.late)
            notes += [f"handed in late: {', '.join(late)}"] if late else []
            left += out
            waits = tuple(item.reason for item in out if not item.explained)
            submissions.append(
                Submission(
                    whole.learner, tuple(kept), tuple(notes), first.lms, first.lms_id, late, waits
                )
            )
    return Roster(tuple(sorted(submissions, key=lambda s: s.learner)), tuple(left))


class NotANotebook(ValueError):
    """The file is not a readable Jupyter notebook."""


def read_code_cells(data: bytes) -> tuple[list[str], list[str]]:
    """Return (code cell sources, exercises the notebook declares) of a notebook's bytes.

    Never trusts outputs. Raises NotANotebook when the bytes are no notebook.
    """
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotANotebook(f"not a notebook (not valid JSON: {str(exc)[:80]})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotANotebook("not a notebook (no list of cells)")
    cells = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(part) for part in source)
        if not isinstance(source, str):
            raise NotANotebook("not a notebook (a cell's source is not text)")
        cells.append(source)
    meta = notebook.get("metadata")
    ours = meta.get("lessonkit") if isinstance(meta, dict) else None
    declared = ours.get("exercises", []) if isinstance(ours, dict) else []
    if not isinstance(declared, list):
        declared = []
    return cells, [d for d in declared if isinstance(d, str) and d in EXERCISES]
