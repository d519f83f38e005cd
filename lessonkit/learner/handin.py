"""Handing in: ``submit()`` in a notebook, `lessonkit submit` in a terminal.

``hand_in()`` does the work, and both call it:

1. read the six exercise notebooks of the course folder as saved (a missing one is
   named, and the rest is handed in; nothing in the learner's folder changes);
2. run each exercise's public checks, as ``check()`` does (``lessonkit.grading``:
   ``public_results``), for a table of exercise, checks, points and what is missing;
3. pack the notebooks and a manifest into one zip (``lessonkit.course.archive``) and
   write it to the course folder (``--out`` elsewhere; ``$LESSONKIT_RECORD_DIR`` when
   set), and, on a hub whose admin set ``$LESSONKIT_DROPBOX``, into that drop box as
   ``<user>.zip`` (the Unix user, or the hub's user name on a shared account; never
   ``--name``; ``lessonkit.learner.dropbox`` writes only where hand-ins stay apart);
4. print the zip's sha256: the learner's receipt.

The notebook's ``submit()`` shows a button. Pressed, the page first saves every open
notebook with unsaved edits (JupyterLab autosaves only every 120 s), then asks the
kernel to hand in, and shows the table, the receipt and a download button (in
JupyterLite, the only way the zip leaves the browser). Run by nbval or by ``lessonkit
grade``, nobody presses it: nothing happens. `lessonkit submit` cannot save what a
JupyterLab page holds, so it prints each notebook's last-saved time beside a warning.
Handing in never records progress: its checks are its own.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lessonkit
from lessonkit.course import archive
from lessonkit.course.folder import EXERCISES, course_folder, not_in_a_course_folder
from lessonkit.course.record import NO_BROWSER_STORAGE, RECORD_DIR_ENV
from lessonkit.learner import dropbox
from lessonkit.learner.dropbox import DROPBOX_ENV, dropbox_user

__all__ = [
    "DROPBOX_ENV",
    "ExerciseResult",
    "HandedIn",
    "HandInProblem",
    "configure_parser",
    "hand_in",
    "main",
    "submit",
    "table",
]

ZIP_STEM = "streaming-course-handin"


class HandInProblem(Exception):
    """Handing in cannot start (no course folder, a bad --out); the message says what to do."""


@dataclass(frozen=True)
class ExerciseResult:
    """What the public checks said of one exercise in the hand-in."""

    file: str  # "ex2_read_stream.ipynb"
    state: str  # "passed" | "failing" | "not started" | "missing"
    checks_passed: int | None = None
    checks: int | None = None
    points: float | None = None
    max_points: float | None = None
    missing: str = ""  # what the public checks still miss, in words ("" when passed)

    @property
    def exercise(self) -> str:
        """Return the exercise's number, "ex2"."""
        return self.file.partition("_")[0]

    def line(self) -> dict[str, Any]:
        """Return the result as the manifest's line for it (without the file's hash)."""
        number, _, rest = self.file.partition("_")
        return {
            "exercise": number,
            "id": rest.removesuffix(".ipynb"),
            "file": None if self.state == "missing" else self.file,
            "state": self.state,
            "checks_passed": self.checks_passed,
            "checks": self.checks,
            "points": self.points,
            "max_points": self.max_points,
            "missing": self.missing,
        }


Checker = Callable[[Mapping[str, bytes]], Mapping[str, ExerciseResult]]


@dataclass
class HandedIn:
    """One hand-in: where the zip went, its receipt, and each exercise's public result."""

    zip_path: Path
    data: bytes = field(repr=False)
    receipt: str
    results: list[ExerciseResult]
    saved_at: dict[str, datetime]
    dropbox_path: Path | None = None
    notes: list[str] = field(default_factory=list)


def _public_results(notebooks: Mapping[str, bytes]) -> Mapping[str, ExerciseResult]:
    from lessonkit.grading import public_results  # the grader's own runners, loaded when used

    return {file: ExerciseResult(**line) for file, line in public_results(notebooks).items()}


def _why(error: OSError) -> str:
    """Return an OSError's reason in words ("Permission denied")."""
    return error.strerror or str(error)


def _safe_name(name: str) -> str:
    """Return `name` as letters, digits, '-' and '_' only (for a file name)."""
    return re.sub(r"[^\w-]+", "-", name, flags=re.UNICODE).strip("-_")[:64]


def _write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` as folder/name through a private temporary file renamed into place."""
    target = folder / name
    temporary = folder / f".{name}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def hand_in(
    *,
    name: str | None = None,
    out: Path | str | None = None,
    start: Path | str | None = None,
    checker: Checker | None = None,
    now: datetime | None = None,
) -> HandedIn:
    """Hand in the course around `start` (default: here); return what was handed in.

    `checker` runs the public checks (default: the grader's ``public_results``). Raises
    HandInProblem when it cannot start; a missing exercise is a line of the table, never
    an error.
    """
    folder = course_folder(start)
    if folder is None:
        raise HandInProblem(
            NO_BROWSER_STORAGE if sys.platform == "emscripten" else not_in_a_course_folder(start)
        )
    notebooks: dict[str, bytes] = {}
    saved_at: dict[str, datetime] = {}
    for stem in EXERCISES:
        path = folder / "exercises" / f"{stem}.ipynb"
        if path.is_file():
            try:
                notebooks[path.name] = path.read_bytes()
            except OSError as error:
                problem = f"{path} cannot be read ({_why(error)}); nothing was written."
                raise HandInProblem(problem) from error
            saved_at[path.name] = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    checked = (checker or _public_results)(notebooks)
    results = [
        checked.get(file) or ExerciseResult(file, "missing", missing=f"exercises/{file} not found")
        for file in archive.NOTEBOOK_FILES
    ]
    lines = []
    for result in results:
        line = result.line()
        if result.file in notebooks:
            line["sha256"] = archive.sha256(notebooks[result.file])
            line["saved_at"] = saved_at[result.file].isoformat(timespec="seconds")
        lines.append(line)
    manifest = {
        "course_version": lessonkit.__version__,
        "name": name or None,
        "handed_in": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "exercises": lines,
    }
    data = archive.pack(notebooks, manifest)
    target = Path(out or os.environ.get(RECORD_DIR_ENV) or folder)
    told = "--out" if out else f"${RECORD_DIR_ENV}" if os.environ.get(RECORD_DIR_ENV) else ""
    if not target.is_dir():
        raise HandInProblem(f"{told} {target}: no such folder; make it first or pick another.")
    zip_name = (
        f"{ZIP_STEM}-{_safe_name(name)}.zip" if name and _safe_name(name) else f"{ZIP_STEM}.zip"
    )
    try:
        written = _write_new(target, zip_name, data)
    except OSError as error:
        raise HandInProblem(
            f"The zip cannot be written to {target} ({_why(error)}). Your notebooks are "
            "unchanged: pick a folder you can write to with --out (submit(out=...))."
        ) from error
    handed = HandedIn(written, data, archive.sha256(data), results, saved_at)
    box = os.environ.get(DROPBOX_ENV)
    if box:
        user = dropbox_user()
        try:
            handed.dropbox_path = dropbox.put(Path(box), user, data)
        except (dropbox.NotDropped, OSError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            handed.notes.append(
                f"Your hand-in could not be put in the class drop box {box} as {user}.zip "
                f"({reason}). It is saved at {handed.zip_path}: tell your instructor."
            )
    return handed


def _checks(result: ExerciseResult) -> str:
    return "-" if result.checks is None else f"{result.checks_passed}/{result.checks}"


def _points(result: ExerciseResult) -> str:
    return "-" if result.points is None else f"{result.points:g}/{result.max_points:g}"


def table(handed: HandedIn) -> str:
    """Return the hand-in's table (exercise, checks, points, what is missing) and receipt."""
    rows = [("exercise", "checks", "points", "missing")]
    for result in handed.results:
        name = result.file.removesuffix(".ipynb").replace("_", " ", 1)
        rows.append((name, _checks(result), _points(result), result.missing or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    text = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    missing = [r.exercise for r in handed.results if r.state == "missing"]
    if missing:
        text.append(f"\nNot handed in (no notebook): {', '.join(missing)}. The rest is in the zip.")
    text.append(f"\nWrote {handed.zip_path} ({len(handed.data):,} bytes).")
    if handed.dropbox_path is not None:
        text.append(f"Handed in to the class drop box as {handed.dropbox_path.name}.")
    text.extend(handed.notes)
    text.append(f"Your receipt (the zip's sha256): {handed.receipt}")
    return "\n".join(text)


def saved_warning(handed: HandedIn, now: datetime | None = None) -> str:
    """Return each notebook's last-saved time, with the warning to save open notebooks first."""
    now = now or datetime.now(UTC)
    lines = [
        "Handed in as last saved. If a notebook is open in JupyterLab with unsaved edits, save "
        "it (File > Save All) and hand in again: JupyterLab autosaves only every 120 s."
    ]
    for file, when in handed.saved_at.items():
        minutes = max(0, round((now - when).total_seconds() / 60))
        lines.append(f"  {file}: saved {when:%Y-%m-%d %H:%M:%S} UTC ({minutes} min ago)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The notebook's button


def submit(*, name: str | None = None, out: Path | str | None = None) -> Any:
    """Show the hand-in button, in a box whose twin says how to hand in while it is not live
    (nothing at all while ``lessonkit grade`` runs the notebook)."""
    from lessonkit.grading import grading_mode

    if grading_mode():
        return None
    from lessonkit.lab.binding import Twinned
    from lessonkit.learner.handin_button import HandInButton

    button = HandInButton(lambda: hand_in(name=name, out=out), table, saved_warning)
    return Twinned(
        [button],
        css_class="lk-handin-box",
        headline="Run this cell to hand in your work.",
        what=(
            "Its button saves your open notebooks, runs each exercise's public checks and "
            "writes one zip of your exercise notebooks, with a receipt. In a terminal: "
            "lessonkit submit."
        ),
    )


# ---------------------------------------------------------------------------
# `lessonkit submit`


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add `lessonkit submit`'s options to `parser`."""
    parser.add_argument("--name", help="your name, in the zip's name and manifest")
    parser.add_argument(
        "--out", type=Path, help="the folder to write the zip to (default: the course folder)"
    )


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit submit`: 0 when handed in, 2 when it could not start."""
    try:
        handed = hand_in(name=args.name, out=args.out)
    except HandInProblem as problem:
        print(f"lessonkit submit: {problem}", file=sys.stderr)
        return 2
    print(table(handed))
    print()
    print(saved_warning(handed))
    return 0
