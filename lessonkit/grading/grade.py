"""``lessonkit grade SUBMISSIONS... --out grades.csv``: grade exercise notebooks headless.

Each notebook's code cells run in a fresh Python process
(``lessonkit.grading.child``), never trusting stored outputs. The exercise
functions are then found by name -- cell order, deleted or extra cells do not
matter -- and this process calls them there on the public and hidden inputs
and compares every answer with the reference computed here. The learner's
code never sees the reference, and its own verdicts (a redefined ``check``, a
printed "passed", edited outputs) are never read.

A submission is one notebook, or one learner's folder: notebooks that sit in
the same folder are one learner's work when each is a different course
notebook (their ``lessonkit`` metadata says which); otherwise each notebook is
its own submission. Broken input never stops the run: a corrupt file, a
notebook that loops forever or ends the interpreter becomes an error row.
Nothing submitted is modified.

This keeps honest mistakes and simple tampering from changing grades; it is not
a security sandbox (learner code can still read and write files the grader
can). Grade untrusted submissions inside a container or a throwaway account.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import lessonkit
from lessonkit.grading.channel import Channel, ChildGone
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    Case,
    Exercise,
    Outcome,
    Report,
    evaluate,
    evaluate_value,
)
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.notebook import GRADING_ENV

__all__ = ["Row", "Submission", "configure_parser", "find_submissions", "grade", "main"]

_SKIPPED_DIRS = {".ipynb_checkpoints", "__pycache__"}


@dataclass(frozen=True)
class Submission:
    """One learner's work: a name and the notebooks to grade together."""

    name: str
    notebooks: tuple[Path, ...]


@dataclass
class Row:
    """One line of the grades CSV, and the feedback written for that learner."""

    submission: str
    status: str = "ok"
    scores: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    feedback: str = ""

    @property
    def score(self) -> float:
        """Return the points earned over all exercises."""
        return round(sum(self.scores.values()), 2)


# ---------------------------------------------------------------------------
# Finding submissions


def _notebook_id(path: Path) -> str | None:
    """Return the course notebook a file says it is (lessonkit metadata), or None."""
    try:
        meta = json.loads(path.read_bytes()).get("metadata", {}).get("lessonkit", {})
        value = meta.get("notebook")
        return value if isinstance(value, str) else None
    except (OSError, ValueError, AttributeError):
        return None


def _notebooks_under(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f.endswith(".ipynb")]
    return found


def find_submissions(paths: Iterable[str | Path]) -> list[Submission]:
    """Return the submissions named by files and folders, sorted by name."""
    submissions: list[Submission] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            submissions.append(Submission(str(path), (path,)))
            continue
        groups: dict[Path, list[Path]] = {}
        for notebook in _notebooks_under(path):
            groups.setdefault(notebook.parent, []).append(notebook)
        for folder, notebooks in groups.items():
            ids = [_notebook_id(nb) for nb in notebooks]
            one_learner = len(notebooks) > 1 and None not in ids and len(set(ids)) == len(ids)
            if one_learner:
                submissions.append(Submission(str(folder), tuple(notebooks)))
            else:
                submissions += [Submission(str(nb), (nb,)) for nb in notebooks]
    return sorted(submissions, key=lambda s: s.name)


# ---------------------------------------------------------------------------
# Running one notebook


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
    meta = notebook.get("metadata", {})
    declared = meta.get("lessonkit", {}).get("exercises", []) if isinstance(meta, dict) else []
    if not isinstance(declared, list):
        declared = []
    return cells, [d for d in declared if isinstance(d, str) and d in EXERCISES]


_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "VIRTUAL_ENV")


def _child_env() -> dict[str, str]:
    """Return a small environment for learner code: no tokens or keys of the instructor's."""
    env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV or k.startswith("COVERAGE_")}
    root = str(Path(lessonkit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[GRADING_ENV] = "1"
    env["MPLBACKEND"] = "Agg"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class NotebookRun:
    """A fresh interpreter that ran one notebook's code and answers the grader's calls."""

    def __init__(self, cells: list[str], exec_limit_s: float) -> None:
        self.cells = cells
        self.exec_limit_s = exec_limit_s
        self.channel: Channel | None = None
        self.found: list[str] = []
        self.cell_errors: list[dict] = []
        self.stopped = ""
        self.workdir = tempfile.TemporaryDirectory(prefix="lessonkit-grade-")

    def start(self) -> None:
        """Start the child and run the cells; raise ChildGone if it never gets ready."""
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "lessonkit.grading.child"],
                stdin=down_read,
                stdout=up_write,
                stderr=subprocess.DEVNULL,
                cwd=self.workdir.name,
                env=_child_env(),
                start_new_session=True,
            )
        finally:
            os.close(down_read)
            os.close(up_write)

        def stop() -> None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            process.wait()

        self.process = process
        self.channel = Channel(up_read, down_write, stop, grace_s=1.0)
        functions = [e.id for e in EXERCISES.values() if e.kind == "function"]
        values = [e.id for e in EXERCISES.values() if e.kind == "value"]
        self.channel.send(
            {
                "op": "run",
                "cells": self.cells,
                "names": functions,
                "values": values,
                "exec_limit_s": self.exec_limit_s,
            }
        )
        ready = self.channel.receive(self.exec_limit_s + 2.0)
        if ready is None:
            raise ChildGone(f"the notebook's code did not finish within {self.exec_limit_s:g} s")
        if ready.get("op") != "ready":
            raise ChildGone("the notebook's code broke the grading process")
        self.found = [str(n) for n in ready.get("found", [])]
        self.cell_errors = [e for e in ready.get("cell_errors", []) if isinstance(e, dict)]
        self.stopped = str(ready.get("stopped") or "")

    def ensure(self) -> Channel:
        """Return a live channel, running the notebook again if a timeout killed the last one."""
        if self.channel is None or not self.channel.alive:
            self.start()
        assert self.channel is not None
        return self.channel

    def close(self) -> None:
        """Stop the child and remove its working folder."""
        if self.channel is not None:
            self.channel.quit()
        self.workdir.cleanup()


def _exit_text(run: NotebookRun) -> str:
    code = getattr(getattr(run, "process", None), "returncode", None)
    if code is None:
        return "the notebook's code ended the Python process"
    return f"the notebook's code ended the Python process (exit status {code})"


def grade_exercise(run: NotebookRun, exercise: Exercise, budget_s: float) -> Report:
    """Return the graded Report (public and hidden rules) of one exercise in a notebook run."""
    if exercise.kind == "value":
        value = run.ensure().value(exercise.id, CALL_LIMIT_S)
        return evaluate_value(exercise, value, hidden=True)
    started = time.monotonic()
    limit_s = min(CALL_LIMIT_S, budget_s)

    def call(case: Case) -> Outcome:
        if time.monotonic() - started > budget_s:
            return Outcome(timed_out=True)
        try:
            return run.ensure().call(exercise.id, case, limit_s)
        except ChildGone as exc:
            return Outcome(error=str(exc), error_type="ChildGone")

    return evaluate(exercise, call, hidden=True, call_limit_s=limit_s)


def grade_submission(submission: Submission, timeout_s: float) -> Row:
    """Return the Row of one submission; every failure becomes part of the row."""
    row = Row(submission.name)
    reports: dict[str, Report] = {}
    notes: list[str] = []
    plans = []
    for path in submission.notebooks:
        try:
            cells, declared = read_code_cells(path)
        except NotANotebook as exc:
            row.errors.append(f"{path.name}: {exc}")
            continue
        plans.append((path, cells, declared))
    declared_anywhere = {ex for _, _, declared in plans for ex in declared}
    for path, cells, declared in plans:
        run = NotebookRun(cells, timeout_s)
        try:
            try:
                run.start()
            except ChildGone as exc:
                text = str(exc) if "did not finish" in str(exc) else _exit_text(run)
                row.errors.append(f"{path.name}: {text}")
                continue
            for error in run.cell_errors:
                where = f" ({error['where']})" if error.get("where") else ""
                notes.append(f"{path.name}, cell {error.get('cell')}: {error.get('error')}{where}")
            if run.stopped:
                row.errors.append(f"{path.name}: {run.stopped}")
            for exercise in EXERCISES.values():
                if exercise.id in reports:
                    continue
                mine = exercise.id in declared
                if not mine and (exercise.id in declared_anywhere or exercise.id not in run.found):
                    continue
                if exercise.id not in run.found:
                    continue
                try:
                    reports[exercise.id] = grade_exercise(run, exercise, timeout_s)
                except ChildGone as exc:
                    row.errors.append(f"{path.name}: {exc}")
        finally:
            run.close()
    row.scores = {
        ex.id: (reports[ex.id].score if ex.id in reports else 0.0) for ex in EXERCISES.values()
    }
    if row.errors:
        row.status = "error"
    row.feedback = _feedback(submission, row, reports, notes)
    return row


def _feedback(
    submission: Submission, row: Row, reports: dict[str, Report], notes: list[str]
) -> str:
    total = sum(ex.points for ex in EXERCISES.values())
    lines = [
        f"Submission: {submission.name}",
        f"Notebooks: {', '.join(p.name for p in submission.notebooks)}",
        f"Score: {row.score:g} of {total:g} points",
        "",
    ]
    if row.errors:
        lines += ["Problems:", *[f"  - {e}" for e in row.errors], ""]
    if notes:
        lines += ["Cells that raised an error while running:", *[f"  - {n}" for n in notes], ""]
    for exercise in EXERCISES.values():
        lines.append("=" * 72)
        if exercise.id in reports:
            lines.append(reports[exercise.id].text())
        else:
            lines.append(
                f"{exercise.id}: not found -- no {'function' if exercise.kind == 'function' else 'dict'} "
                f"named {exercise.id} in the notebook(s); 0 of {exercise.points:g} points."
            )
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The command


EXIT_CODES = (
    "exit codes: 0 = the CSV was written (a submission that could not be graded, such as a "
    "corrupt notebook or one that loops forever, is an error row in it, not a failure of the "
    "command); 2 = nothing was graded: a SUBMISSION path does not exist, no notebook was found, "
    "or --out / --feedback cannot be written."
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit grade` (and the exit codes to its --help)."""
    parser.epilog = EXIT_CODES
    parser.add_argument(
        "submissions",
        nargs="+",
        metavar="SUBMISSION",
        help="notebooks or folders (a folder of one learner's notebooks, or of many learners)",
    )
    parser.add_argument(
        "--out",
        default="grades.csv",
        help="the CSV to write; missing parent folders are created (default grades.csv)",
    )
    parser.add_argument(
        "--feedback", metavar="DIR", help="write one feedback file per submission here"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds allowed for a notebook's code, and again for each exercise's checks (default 60)",
    )
    parser.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="grade N submissions at once"
    )


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "submission"


class _Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()

    def step(self, row: Row) -> None:
        self.done += 1
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        text = f"grading [{bar}] {self.done}/{self.total}  {row.submission[-40:]}"
        if self.tty:
            sys.stderr.write("\r" + text.ljust(100))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


def grade(
    submissions: Sequence[Submission], *, timeout_s: float = 60.0, jobs: int = 1
) -> list[Row]:
    """Return one Row per submission, in the order given (jobs > 1 grades in parallel)."""
    progress = _Progress(len(submissions))

    def one(submission: Submission) -> Row:
        try:
            row = grade_submission(submission, timeout_s)
        except Exception as exc:  # a grader bug must not lose the other rows
            row = Row(
                submission.name, "error", {ex: 0.0 for ex in EXERCISES}, [f"grader error: {exc!r}"]
            )
        progress.step(row)
        return row

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, submissions))


def write_csv(rows: Sequence[Row], out: Path) -> None:
    """Write the grades: submission, status, score, max_score, one column per exercise, error."""
    total = sum(ex.points for ex in EXERCISES.values())
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "status", "score", "max_score", *EXERCISES, "error"])
        for row in rows:
            writer.writerow(
                [
                    row.submission,
                    row.status,
                    f"{row.score:g}",
                    f"{total:g}",
                    *[f"{row.scores.get(ex, 0.0):g}" for ex in EXERCISES],
                    "; ".join(row.errors),
                ]
            )


class UsageProblem(Exception):
    """Grading cannot start: a path is missing or an output cannot be written."""


def _prepare_outputs(out: Path, feedback: Path | None) -> None:
    """Create the folders the outputs go to; raise UsageProblem when they cannot be written."""
    if out.is_dir():
        raise UsageProblem(f"--out {out} is a folder; give a file name such as grades.csv")
    blocker = next((d for d in (out.parent, *out.parent.parents) if d.is_file()), None)
    if blocker is not None:
        raise UsageProblem(f"--out {out}: {blocker} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageProblem(
            f"--out {out}: cannot create its folder ({exc.strerror or exc})"
        ) from None
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageProblem(f"--out {out}: not writable")
    if feedback is not None:
        try:
            feedback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageProblem(
                f"--feedback {feedback}: cannot create the folder ({exc.strerror or exc})"
            ) from None
        if not os.access(feedback, os.W_OK):
            raise UsageProblem(f"--feedback {feedback}: not writable")


def main(args: argparse.Namespace) -> int:
    """Grade the submissions; write the CSV (and feedback files); return the exit code.

    0 when the CSV was written (error rows included); 2 when nothing was graded
    because a given path does not exist, no notebook was found, or an output
    cannot be written. Every check that can fail early runs before any grading.
    """
    missing = [raw for raw in args.submissions if not Path(raw).exists()]
    if missing:
        for raw in missing:
            print(f"lessonkit grade: {raw}: no such file or folder", file=sys.stderr)
        return 2
    submissions = find_submissions(args.submissions)
    if not submissions:
        print(
            "lessonkit grade: no notebooks found in " + " ".join(args.submissions), file=sys.stderr
        )
        return 2
    out = Path(args.out)
    folder = Path(args.feedback) if args.feedback else None
    try:
        _prepare_outputs(out, folder)
    except UsageProblem as exc:
        print(f"lessonkit grade: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    rows = grade(submissions, timeout_s=args.timeout, jobs=args.jobs)
    try:
        write_csv(rows, out)
    except OSError as exc:
        print(f"lessonkit grade: cannot write {out} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    if folder is not None:
        used: set[str] = set()
        for row in rows:
            name = _safe_name(row.submission)
            while name in used:
                name += "_"
            used.add(name)
            (folder / f"{name}.txt").write_text(row.feedback, encoding="utf-8")
    errors = sum(row.status != "ok" for row in rows)
    elapsed = time.monotonic() - started
    print(
        f"graded {len(rows)} submission(s) in {elapsed:.1f} s: {errors} error row(s); wrote {out}",
        file=sys.stderr,
    )
    return 0
