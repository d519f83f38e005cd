"""Who handed in what: ``find_submissions(paths) -> [Submission]``, one per learner.

A class arrives in many shapes; each becomes one ``Submission`` per learner
with a ``learner`` id (never a path) and that learner's notebooks:

* a folder per learner: ``class/alice/ex1_response_times.ipynb`` ... -> ``alice``
  (deeper folders inside it too);
* nbgrader: ``submitted/<student>/<assignment>/*.ipynb`` -> ``<student>``;
* Moodle ("download submissions in folders"):
  ``Alice Smith_123456_assignsubmission_file_/...`` -> ``Alice Smith_123456``,
  and the older flat ``Alice Smith_123456_assignsubmission_file_ex1....ipynb``;
* Gradescope: ``submission_<id>/`` folders, named by the export's
  ``submission_metadata.yml`` (the submitter's sid, else email, else name);
* Canvas, flat in one folder: ``smithalice_12345_67890_ex1_response_times.ipynb``
  (also ``smithalice_late_12345_...``) -> ``smithalice_12345``;
* loose notebooks in one folder: those named like course notebooks
  (``ex2_read_stream.ipynb``), or that are each a different course notebook, are
  one learner, named by the folder; any other (``bob.ipynb``) is a learner of
  its own, named by the file.

Within one learner, a second copy of the same course notebook (Jupyter's
``-Copy1``, ``(1)``, an LMS's ``-1``) is ignored with a note: the original is
graded. A notebook that cannot be read is still listed (the grader makes it an
error on the exercise its name says), never a row of its own.

``read_code_cells(path)`` reads a notebook's code, never its stored outputs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lessonkit.grading.exercises import EXERCISES

__all__ = [
    "COURSE_NOTEBOOKS",
    "NotANotebook",
    "Submission",
    "course_notebook",
    "exercise_of",
    "find_submissions",
    "read_code_cells",
]

# course notebook id -> the exercise it holds: ex1_response_times ... ex6_parse_sse
COURSE_NOTEBOOKS = {f"ex{i}_{eid}": eid for i, eid in enumerate(EXERCISES, 1)}
_SKIPPED_DIRS = {".ipynb_checkpoints", "__pycache__"}
_COPY = re.compile(r"(?:-Copy\d*| \(\d+\)|-\d+| copy(?: \d+)?)$", re.IGNORECASE)
_CANVAS = re.compile(
    r"^(?P<name>[a-z][a-z0-9-]*?)(?:_late)?_(?P<uid>\d+)(?:_(?P<aid>\d+))?_(?P<file>.+)$"
)
_MOODLE = re.compile(
    r"^(?P<name>.+?)_(?P<uid>\d+)_assign(?:submission|feedback)_[a-z]+_?(?P<file>.*)$"
)
_GRADESCOPE = re.compile(r"^submission_\d+$")


@dataclass(frozen=True)
class Submission:
    """One learner's work: an id, the notebooks to grade together, notes about the files."""

    learner: str
    notebooks: tuple[Path, ...]
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """Return the learner id (the name a progress line or a feedback file shows)."""
        return self.learner


def _plain_name(path: Path) -> str:
    """Return a notebook's file stem without an LMS prefix (Canvas, Moodle)."""
    stem = path.stem
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


def _notebooks_under(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f.endswith(".ipynb")]
    return found


def _gradescope_names(root: Path) -> dict[str, str]:
    """Return submission folder -> learner id from a Gradescope submission_metadata.yml."""
    meta = root / "submission_metadata.yml"
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
        field = re.match(r"^\s*-?\s*:(name|sid|email):\s*['\"]?(.*?)['\"]?\s*$", line)
        if field and field.group(2) and field.group(1) not in found:
            found[field.group(1)] = field.group(2)
    return names


def _learner_of(root: Path, path: Path, gradescope: dict[str, str]) -> str | None:
    """Return the learner a notebook belongs to, or None for a loose file in ``root``."""
    parts = path.resolve().parts[:-1]
    if "submitted" in parts:  # nbgrader: submitted/<student>/<assignment>/
        at = len(parts) - 1 - parts[::-1].index("submitted")
        if at + 1 < len(parts):
            return parts[at + 1]
    relative = path.relative_to(root).parts
    if len(relative) >= 2:
        folder = relative[0]
        moodle = _MOODLE.match(folder)
        if moodle:
            return f"{moodle.group('name')}_{moodle.group('uid')}"
        if _GRADESCOPE.match(folder):
            return gradescope.get(folder, folder)
        return folder
    for pattern in (_CANVAS, _MOODLE):
        match = pattern.match(path.stem)
        if match and match.group("file"):
            return f"{match.group('name')}_{match.group('uid')}"
    return None


def _groups(paths: Iterable[str | Path]) -> list[tuple[str, list[Path]]]:
    """Return (learner, notebooks) in the order found; the same learner may appear twice."""
    groups: list[tuple[str, list[Path]]] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            learner = _learner_of(path.parent, path, {}) or path.stem
            groups.append((learner, [path]))
            continue
        gradescope = _gradescope_names(path)
        found: dict[str, list[Path]] = {}
        loose: list[Path] = []
        for notebook in _notebooks_under(path):
            learner = _learner_of(path, notebook, gradescope)
            if learner is None:
                loose.append(notebook)
            else:
                found.setdefault(learner, []).append(notebook)
        course = _one_learners(loose)
        if course:
            found.setdefault(path.resolve().name, []).extend(course)
        for notebook in loose:
            if notebook not in course:
                found.setdefault(notebook.stem, []).append(notebook)
        groups += list(found.items())
    return groups


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


def _without_copies(notebooks: list[Path]) -> tuple[list[Path], list[str]]:
    """Return (notebooks to grade, notes): one file per course notebook, originals first."""
    kept: list[Path] = []
    notes: list[str] = []
    by_kind: dict[str, list[Path]] = {}
    for notebook in notebooks:
        kind = course_notebook(notebook)
        if kind is None:
            kept.append(notebook)
        else:
            by_kind.setdefault(kind, []).append(notebook)
    for same in by_kind.values():
        same.sort(key=lambda p: (_is_copy(p), len(p.name), p.name))
        kept.append(same[0])
        for other in same[1:]:
            notes.append(
                f"ignored {other.name}: a second copy of {same[0].name} (only that one is graded)"
            )
    return sorted(kept), notes


def find_submissions(paths: Iterable[str | Path]) -> list[Submission]:
    """Return one Submission per learner named by the files and folders, sorted by learner."""
    merged: dict[str, list[Path]] = {}
    for learner, notebooks in _groups(paths):
        merged.setdefault(learner, []).extend(notebooks)
    out = []
    for learner, notebooks in merged.items():
        unique = list(dict.fromkeys(notebooks))
        kept, notes = _without_copies(unique)
        out.append(Submission(learner, tuple(kept), tuple(notes)))
    return sorted(out, key=lambda s: s.learner)


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
