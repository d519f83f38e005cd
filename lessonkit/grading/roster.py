"""Who handed in what: ``find_roster(paths) -> Roster``: one submission per learner, and the rest.

A class arrives in many shapes, often several at once (a folder holding an
nbgrader, a Canvas and a Moodle export). Each folder is recognised on its
own, at any depth:

* nbgrader: a ``submitted/`` folder; each folder in it is a student;
* Moodle ("download submissions in folders"):
  ``José Núñez_200101_assignsubmission_file_/...`` -> ``José Núñez_200101``
  (LMS id 200101), and the older flat ``..._assignsubmission_file_ex1....ipynb``;
* Gradescope: ``submission_<id>/`` folders, named by the export's
  ``submission_metadata.yml`` (the submitter's sid, else email, else name);
* Canvas, flat in one folder: ``núñezjosé_12345_67890_ex1_response_times.ipynb``
  (also ``..._late_...``) -> ``núñezjosé_12345`` (LMS id 12345);
* a folder per learner: a folder below the one given whose notebooks are one
  learner's (no course notebook twice, no LMS export inside) is that learner,
  with everything under it (``class/alice/week1/ex1_response_times.ipynb``);
* loose notebooks in a folder: course notebooks (by name or metadata), each a
  different one, are one learner named by the folder; any other notebook
  (``bob.ipynb``) is a learner of its own, named by the file.

Names may be in any script. Every file handed over ends up either in exactly
one learner's submission or in ``Roster.not_graded`` with its reason: a second
copy of a notebook (Jupyter's ``-Copy1``, ``(1)``), a checkpoint, a file that
is not a notebook. A learner id found in two places is kept apart (each row
says where it came from); a second original of the same notebook for one
learner is listed as not graded and *unexplained*, which makes ``lessonkit
grade`` exit non-zero. A notebook that cannot be read is still a learner's
(the grader makes it an error on the exercise its name says).

``read_code_cells(path)`` reads a notebook's code, never its stored outputs.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lessonkit.grading.exercises import EXERCISES

__all__ = [
    "COURSE_NOTEBOOKS",
    "NotANotebook",
    "NotGraded",
    "Roster",
    "Submission",
    "course_notebook",
    "exercise_of",
    "find_roster",
    "find_submissions",
    "read_code_cells",
]

# course notebook id -> the exercise it holds: ex1_response_times ... ex6_parse_sse
COURSE_NOTEBOOKS = {f"ex{i}_{eid}": eid for i, eid in enumerate(EXERCISES, 1)}
_SKIPPED_DIRS = {".ipynb_checkpoints": "a Jupyter checkpoint, not the submission",
                 "__pycache__": "Python's cache"}  # fmt: skip
_COPY = re.compile(r"(?:-Copy\d*| \(\d+\)|-\d+| copy(?: \d+)?)$", re.IGNORECASE)
_CANVAS = re.compile(
    r"^(?P<name>[^\W\d_][^_]*?)(?:_late)?_(?P<uid>\d+)(?:_(?P<aid>\d+))?_(?P<file>.+)$"
)
_MOODLE = re.compile(
    r"^(?P<name>.+?)_(?P<uid>\d+)_assign(?:submission|feedback)_[a-z]+_?(?P<file>.*)$"
)
_GRADESCOPE = re.compile(r"^submission_\d+$")
_GRADESCOPE_META = "submission_metadata.yml"


@dataclass(frozen=True)
class Submission:
    """One learner's work: an id, the notebooks to grade together, notes about the files."""

    learner: str
    notebooks: tuple[Path, ...]
    notes: tuple[str, ...] = ()
    lms: str = ""  # "canvas", "moodle", "gradescope", "nbgrader" or "" (a folder, a file)
    lms_id: str = ""  # the LMS's own id of the learner (Canvas user id, Moodle participant)


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
    notebooks: list[Path] = field(default_factory=list)


def _plain_name(path: Path) -> str:
    """Return a notebook's file stem without an LMS prefix (Canvas, Moodle)."""
    stem = unicodedata.normalize("NFC", path.stem)
    for pattern in (_CANVAS, _MOODLE):
        match = pattern.match(stem)
        if match and match.group("file"):
            return match.group("file")
    return stem


def course_notebook(path: Path) -> str | None:
    """Return which course notebook a file is: its lessonkit metadata, else its name."""
    try:
        meta = json.loads(path.read_bytes()).get("metadata", {}).get("lessonkit", {})
        value = meta.get("notebook")
        if isinstance(value, str) and value in COURSE_NOTEBOOKS:
            return value
    except (OSError, ValueError, AttributeError):
        pass
    plain = _COPY.sub("", _plain_name(path))
    return plain if plain in COURSE_NOTEBOOKS else None


def exercise_of(path: Path) -> str | None:
    """Return the exercise id a notebook's name says it holds (for an unreadable file)."""
    plain = _COPY.sub("", _plain_name(path))
    found = re.search(r"ex(\d)_", plain)
    if plain in COURSE_NOTEBOOKS:
        return COURSE_NOTEBOOKS[plain]
    if found and 1 <= int(found.group(1)) <= len(COURSE_NOTEBOOKS):
        return list(COURSE_NOTEBOOKS.values())[int(found.group(1)) - 1]
    return None


def _is_copy(path: Path) -> bool:
    return bool(_COPY.search(_plain_name(path)))


def _flat_lms(path: Path) -> tuple[str, str, str] | None:
    """Return (learner, lms, lms id) of a Canvas or flat Moodle file name, else None."""
    stem = unicodedata.normalize("NFC", path.stem)
    for lms, pattern in (("canvas", _CANVAS), ("moodle", _MOODLE)):
        match = pattern.match(stem)
        if match and match.group("file"):
            return f"{match.group('name')}_{match.group('uid')}", lms, match.group("uid")
    return None


def _folder_lms(folder: Path, gradescope: dict[str, str]) -> tuple[str, str, str] | None:
    """Return (learner, lms, lms id) of an LMS submission folder, else None."""
    name = unicodedata.normalize("NFC", folder.name)
    moodle = _MOODLE.match(name)
    if moodle and not moodle.group("file"):
        return f"{moodle.group('name')}_{moodle.group('uid')}", "moodle", moodle.group("uid")
    if _GRADESCOPE.match(name):
        who = gradescope.get(name, name)
        return who, "gradescope", who
    return None


def _files_under(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        yield from (Path(root) / f for f in sorted(files))


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

    def learner(self, found: _Found, files: Iterable[Path]) -> None:
        """Give ``found`` the notebooks among ``files``; list the other files as not graded."""
        for path in files:
            skipped = next((r for d, r in _SKIPPED_DIRS.items() if d in path.parts), None)
            if skipped:
                self.left.append(NotGraded(path, skipped))
            elif path.suffix != ".ipynb":
                self.left.append(NotGraded(path, f"not a notebook ({found.learner}'s folder)"))
            else:
                found.notebooks.append(path)
        self.found.append(found)

    def folder(self, folder: Path, *, given: bool) -> None:
        """Find the learners in a folder: one learner, an LMS export, or a folder of them."""
        if not given and _one_learner(folder):
            self.learner(_Found(folder.name, folder), _files_under(folder))
            return
        gradescope = _gradescope_names(folder)
        loose: list[Path] = []
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                self.subfolder(entry, gradescope)
            elif entry.name == _GRADESCOPE_META and gradescope:
                self.left.append(NotGraded(entry, "Gradescope's list of submitters (read)"))
            elif entry.suffix != ".ipynb" or entry.name.startswith("."):
                self.left.append(NotGraded(entry, "not a notebook"))
            elif (flat := _flat_lms(entry)) is not None:
                self.learner(_Found(flat[0], folder, flat[1], flat[2]), [entry])
            else:
                loose.append(entry)
        course = _one_learners(loose)
        if course:
            self.learner(_Found(folder.name, folder), course)
        for notebook in loose:
            if notebook not in course:
                self.learner(_Found(notebook.stem, folder), [notebook])

    def subfolder(self, entry: Path, gradescope: dict[str, str]) -> None:
        if entry.name in _SKIPPED_DIRS or entry.name.startswith("."):
            reason = _SKIPPED_DIRS.get(entry.name, "a hidden folder")
            self.left += [NotGraded(p, reason) for p in _files_under(entry)]
        elif entry.name == "submitted":  # nbgrader: submitted/<student>/<assignment>/
            for student in sorted(p for p in entry.iterdir() if p.is_dir()):
                found = _Found(student.name, student, "nbgrader", student.name)
                self.learner(found, _files_under(student))
            self.left += [NotGraded(p, "not in a student's folder") for p in entry.iterdir()
                          if p.is_file()]  # fmt: skip
        elif (lms := _folder_lms(entry, gradescope)) is not None:
            self.learner(_Found(lms[0], entry, lms[1], lms[2]), _files_under(entry))
        else:
            self.folder(entry, given=False)

    def file(self, path: Path) -> None:
        """A notebook given by its path: its LMS name, nbgrader's student, else its stem."""
        parts = path.resolve().parts[:-1]
        if "submitted" in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index("submitted")
            student = parts[at + 1]
            self.learner(_Found(student, path.parent, "nbgrader", student), [path])
        elif (flat := _flat_lms(path)) is not None:
            self.learner(_Found(flat[0], path.parent, flat[1], flat[2]), [path])
        else:
            self.learner(_Found(path.stem, path.parent), [path])


def _one_learner(folder: Path) -> bool:
    """Return True when a folder holds one learner's notebooks: no LMS export inside, and
    either course notebooks of its own or each course notebook at most once (copies aside)."""
    kinds: set[str] = set()
    twice = False
    notebooks = 0
    own = any(p.suffix == ".ipynb" and course_notebook(p) for p in folder.iterdir() if p.is_file())
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith(".")]
        if "submitted" in dirs or any(_folder_lms(Path(root) / d, {}) for d in dirs):
            return False
        for name in files:
            path = Path(root) / name
            if path.suffix != ".ipynb":
                continue
            if _flat_lms(path) is not None:
                return False
            notebooks += 1
            kind = course_notebook(path)
            if kind is not None and not _is_copy(path):
                twice = twice or kind in kinds
                kinds.add(kind)
    return notebooks > 0 and (own or not twice)


def _one_learners(loose: list[Path]) -> list[Path]:
    """Return the loose notebooks that are one learner's: course-named files (with their
    copies), or files that are each a different course notebook by their metadata."""
    named = [nb for nb in loose if exercise_of(nb) is not None]
    others = [nb for nb in loose if nb not in named]
    kinds = [course_notebook(nb) for nb in others]
    taken = {course_notebook(nb) for nb in named}
    if len(others) >= 2 and None not in kinds and len(set(kinds)) == len(kinds):
        if not taken & set(kinds):
            return named + others
    return named


def _one_file_each(found: _Found) -> tuple[list[Path], list[str], list[NotGraded]]:
    """Return (notebooks to grade, notes, files left out): one file per course notebook."""
    kept: list[Path] = []
    notes: list[str] = []
    left: list[NotGraded] = []
    by_kind: dict[str, list[Path]] = {}
    for notebook in dict.fromkeys(found.notebooks):
        kind = course_notebook(notebook)
        if kind is None:
            kept.append(notebook)
        else:
            by_kind.setdefault(kind, []).append(notebook)
    for same in by_kind.values():
        same.sort(key=lambda p: (_is_copy(p), len(p.name), str(p)))
        kept.append(same[0])
        for other in same[1:]:
            if _is_copy(other):
                reason = f"a second copy of {same[0].name} (only that one is graded)"
                notes.append(f"ignored {other.name}: {reason}")
                left.append(NotGraded(other, f"{found.learner}: {reason}"))
            else:
                reason = (
                    f"{found.learner} has two originals of {same[0].name}: {same[0]} is "
                    "graded; say which one counts by removing the other"
                )
                notes.append(f"not graded {other}: a second original")
                left.append(NotGraded(other, reason, explained=False))
    return sorted(kept), notes, left


def find_roster(paths: Iterable[str | Path]) -> Roster:
    """Return the learners in the files and folders given, sorted by id, and every file left out."""
    scan = _Scan()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            scan.folder(path, given=True)
        else:
            scan.file(path)
    by_id: dict[str, list[_Found]] = {}
    for found in scan.found:
        by_id.setdefault(found.learner, []).append(found)
    submissions = []
    left = list(scan.left)
    for learner, group in by_id.items():
        sources = {str(f.source) for f in group}
        merged = {f.lms_id for f in group if f.lms_id}
        together = len(group) == 1 or (len(merged) == 1 and len({f.lms for f in group}) == 1)
        parts = [group] if together else [[f] for f in group]
        for part in parts:
            first = part[0]
            name = learner if together else f"{learner} ({first.source.parent.name})"
            whole = _Found(name, first.source, first.lms, first.lms_id)
            whole.notebooks = [nb for f in part for nb in f.notebooks]
            kept, notes, out = _one_file_each(whole)
            if not together:
                notes.insert(0, f"the learner id {learner} is also found in "
                             f"{', '.join(sorted(sources - {str(first.source)}))}")  # fmt: skip
            left += out
            submissions.append(Submission(name, tuple(kept), tuple(notes), first.lms, first.lms_id))
    return Roster(tuple(sorted(submissions, key=lambda s: s.learner)), tuple(left))


def find_submissions(paths: Iterable[str | Path]) -> list[Submission]:
    """Return one Submission per learner named by the files and folders, sorted by learner."""
    return list(find_roster(paths).submissions)


class NotANotebook(ValueError):
    """The file is not a readable Jupyter notebook."""


def read_code_cells(path: Path) -> tuple[list[str], list[str]]:
    """Return (code cell sources, exercises the notebook declares); never trusts outputs."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NotANotebook(f"cannot read the file ({exc.strerror or exc})") from None
    try:
        notebook = json.loads(raw.decode("utf-8"))
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
