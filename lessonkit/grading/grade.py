"""``lessonkit grade SUBMISSIONS... --out grades.csv``: grade a class headless, one row per learner.

Grading is four steps, one module each:

1. **Find the submissions** (``roster``): one submission per learner, from any
   LMS layout, of notebooks or a hand-in zip; every other file is listed with its
   reason.
2. **Run each learner in its sandbox** (``run``, ``sandbox``): a fresh
   Python process per learner, never trusting stored outputs, with no
   network, no view of the grader or its files, and limits on memory,
   processes, CPU time and file size. The exercise functions are found by name.
3. **Judge each rule against the reference** (``engine``): this process calls
   the functions on the public and hidden inputs (hidden ones drawn from
   ``--seed``) and compares every answer with the reference computed here. The
   learner's code never sees the reference, and its own verdicts (a redefined
   ``check``, a printed "passed", edited outputs) are never read.
4. **Write the outputs** (``report``, ``gradebooks``): the grades CSV
   (``score`` is the points the tests gave; ``gradebook`` is empty for a
   flagged, limited or error row), the per-rule CSV, feedback files, the class
   report, Canvas and Moodle imports. Every output is written to a temporary
   file and renamed into place.

A hand-in zip's manifest is the learner's own account of its public checks: the
scores come from the rerun alone, and a row whose manifest says otherwise than the
rerun's public checks (``Report.public_result``) carries a note saying both.

Broken input never stops the run; nothing submitted is modified.
"""

from __future__ import annotations

import argparse
import itertools
import os
import secrets
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

from lessonkit.grading import sandbox
from lessonkit.grading.channel import ChildGone
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    DEFAULT_SEED,
    Mode,
    Plan,
    Report,
    not_found,
)
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.feedback import report_text
from lessonkit.grading.gradebooks import MOODLE_MAXIMUM, write_canvas, write_moodle
from lessonkit.grading.guard import flags_for_exception
from lessonkit.grading.report import (
    MAX_SCORE,
    Row,
    rules_path,
    templates,
    write_csv,
    write_feedback,
    write_report,
    write_rules_csv,
)
from lessonkit.grading.roster import (
    COURSE_NOTEBOOKS,
    NotANotebook,
    Roster,
    Submission,
    exercise_of,
    find_roster,
    read_code_cells,
)
from lessonkit.grading.run import LearnerHost, NotebookEnded, NotebookProblem, NotebookRun, Setup

# flag -> (kind of status, words); the status names the first kind that applies
FLAG_WORDS = {
    "kill": ("flagged", "signalled other processes"),
    "network": ("flagged", "network"),
    "wrote-outside-scratch": ("flagged", "wrote outside its scratch folder"),
    "read-other-environ": ("flagged", "read another process's environment"),
    "spawn": ("flagged", "started processes"),
    "course-answer": ("flagged", "uses the course's answer"),  # calls it or holds it
    "memory-limit": ("limit", "memory"),
    "cpu-limit": ("limit", "cpu time"),
    "file-size-limit": ("limit", "file size"),
    "process-limit": ("limit", "processes"),
    "open-files-limit": ("limit", "open files"),
}


@dataclass(frozen=True)
class Options:
    """How a class is graded: the sandbox set-up, the hidden inputs' seed, what is accepted."""

    setup: Setup = field(default_factory=Setup)
    seed: int = DEFAULT_SEED
    allow_lessonkit: bool = False


class Grading:
    """A class's grading context: the options, and one Plan per exercise shared by every learner."""

    def __init__(self, options: Options) -> None:
        if options.setup.support is None:  # probe the machine once for the whole class
            setup = replace(options.setup, support=sandbox.detect())
            options = replace(options, setup=setup)
        self.options = options
        self.mode = Mode(
            hidden=True,
            seed=options.seed,
            limit_s=min(CALL_LIMIT_S, options.setup.timeout_s),
            allow_lessonkit=options.allow_lessonkit,
        )
        self.plans = MappingProxyType({e.id: Plan(e, self.mode) for e in EXERCISES.values()})


# ---------------------------------------------------------------------------
# Steps 2 and 3 for one learner: run the notebooks in the sandbox, judge each exercise


def grade_submission(submission: Submission, grading: Grading, *, slot: int = 0) -> Row:
    """Return the Row of one learner; every failure becomes part of the row."""
    learner = _Learner(submission, grading, slot)
    readable = []
    for notebook in submission.notebooks:
        try:
            cells, declared = read_code_cells(notebook.read())
        except (NotANotebook, OSError) as exc:
            meant = exercise_of(notebook.name)
            where = f" (an error on {meant}: 0 points)" if meant else ""
            text = (
                f"cannot read the file ({exc.strerror or exc})" if isinstance(exc, OSError) else exc
            )
            learner.errors.append(f"{notebook.name}: {text}{where}")
            continue
        readable.append((notebook.name, cells, declared))
    declared_anywhere = {ex for _, _, declared in readable for ex in declared}
    try:
        for name, cells, declared in readable:
            elsewhere = declared_anywhere - set(declared)  # another notebook is the one for them
            learner.notebook(name, cells, elsewhere)
    finally:
        learner.host.close()
    return learner.row()


class _Learner:
    """Grading one learner: their sandbox, and what each notebook gave (reports, notes)."""

    def __init__(self, submission: Submission, grading: Grading, slot: int) -> None:
        self.submission = submission
        self.grading = grading
        self.host = LearnerHost(grading.options.setup, slot)
        self.reports: dict[str, Report] = {}
        self.errors: list[str] = []
        self.cell_notes: list[str] = []
        self.cell_flags: list[str] = []

    def notebook(self, name: str, cells: list[str], elsewhere: set[str]) -> None:
        """Run one notebook in the learner's sandbox and grade the exercises it holds."""
        run = NotebookRun(self.host, cells, self.grading.options.setup.timeout_s)
        try:
            run.start()
        except NotebookProblem as exc:
            self.errors.append(f"{name}: {exc}")
            return
        try:
            for error in run.cell_errors:
                where = f" ({error['where']})" if error.get("where") else ""
                self.cell_notes.append(
                    f"{name}, cell {error.get('cell')}: {error.get('error')}{where}"
                )
                errno_value = error.get("errno") if isinstance(error.get("errno"), int) else None
                self.cell_flags += flags_for_exception(str(error.get("type")), errno_value)
            if run.stopped:
                self.errors.append(f"{name}: {run.stopped}")
            for exercise in EXERCISES.values():
                if exercise.id in self.reports or exercise.id not in run.found:
                    continue
                if exercise.id in elsewhere:
                    continue
                try:
                    plan = self.grading.plans[exercise.id]
                    self.reports[exercise.id] = run.judge(exercise, self.grading.mode, plan)
                except (ChildGone, NotebookEnded) as exc:
                    self.errors.append(f"{name}: {exc}")
        finally:
            run.close()

    def row(self) -> Row:
        """Return the row: scores, what the sandboxes reported, status, flags and feedback."""
        submission, reports = self.submission, self.reports
        flags = set(self.cell_flags)
        notes = list(submission.notes)
        errors = list(self.errors) + list(submission.waits)  # its grade waits for the instructor
        for report in self.host.reports:
            flags.update(report.flags)
            if report.ending is sandbox.Ending.SANDBOX_FAILED:
                errors.append(report.status)
            elif report.ending not in (sandbox.Ending.OK, sandbox.Ending.KILLED_BY_GRADER):
                notes.append(f"the learner's sandbox ended: {report.status}")
            if report.leftover_pids:
                errors.append(f"processes left after the sandbox ended: {report.leftover_pids}")
        notes += _claim_notes(submission, reports)
        for report in reports.values():
            for error_type in report.raised:
                flags.update(flags_for_exception(error_type))
            if report.integrity:
                flags.add(f"course-answer:{report.id}")
            if report.allowed_use:
                notes.append(f"{report.id} uses {', '.join(report.allowed_use)} (allowed)")
        row = Row(
            submission.learner,
            scores={e: (reports[e].score if e in reports else 0.0) for e in EXERCISES},
            flags=sorted(flags),
            errors=errors,
            notes=notes,
            files=[str(p) for p in submission.notebooks],
            reports=dict(reports),
            lms=submission.lms,
            lms_id=submission.lms_id,
            late=submission.late,
        )
        row.status = _status(row)
        row.feedback = _feedback(submission, row, self.cell_notes)
        return row


def _claim_notes(submission: Submission, reports: dict[str, Report]) -> list[str]:
    """Return a note for each hand-in notebook whose manifest's state or points are not what
    the rerun's public checks give (the manifest never changes a score)."""
    notes = []
    for notebook in submission.notebooks:
        exercise_id = COURSE_NOTEBOOKS.get(notebook.path.stem)
        if notebook.claimed is None or exercise_id is None:
            continue
        rerun = (reports.get(exercise_id) or not_found(EXERCISES[exercise_id])).public_result()
        claimed = _said(notebook.claimed.get("state"), notebook.claimed.get("points"))
        found = _said(rerun["state"], rerun["points"])
        if claimed != found:
            notes.append(
                f"{notebook.name}: its manifest says {claimed}; the grader's rerun of its "
                f"public checks: {found}"
            )
    return notes


def _said(state: object, points: object) -> str:
    """Return a public result as a note says it: "failing, 12 points" (a stub: "not started")."""
    if state == "not started":
        return "not started"
    shown = f"{points:g}" if isinstance(points, (int, float)) else str(points)[:20]
    return f"{str(state)[:20]}, {shown} points"


def _status(row: Row) -> str:
    """Return the row's status: what happened, worst first ("flagged: network; limit: memory")."""
    kinds: dict[str, list[str]] = {}
    for flag in row.flags:
        kind, words = FLAG_WORDS.get(flag.split(":")[0], ("flagged", flag))
        if words not in kinds.setdefault(kind, []):
            kinds[kind].append(words)
    parts = [f"{kind}: {', '.join(words)}" for kind, words in kinds.items()]
    parts.sort(key=lambda part: 0 if part.startswith("flagged") else 1)
    if row.errors:
        parts.append("error")
    return "; ".join(parts) or "ok"


def _feedback(submission: Submission, row: Row, cell_notes: list[str]) -> str:
    """Return the learner's feedback file (``templates/feedback.txt.j2``)."""
    return (
        templates()
        .get_template("feedback.txt.j2")
        .render(
            row=row,
            notebooks=[nb.name for nb in submission.notebooks],
            max_score=MAX_SCORE,
            cell_notes=cell_notes,
            exercises=EXERCISES.values(),
            report_text=report_text,
        )
    )


# ---------------------------------------------------------------------------
# The class


def _progress(done: int, total: int, row: Row) -> None:
    """Show how far grading is on stderr: one line redrawn on a terminal, else a line each."""
    filled = 30 * done // max(total, 1)
    text = f"grading [{'#' * filled}{'-' * (30 - filled)}] {done}/{total}  {row.learner[-40:]}"
    if sys.stderr.isatty():
        text = "\r" + text.ljust(100) + ("\n" if done == total else "")
    else:
        text += "\n"
    sys.stderr.write(text)
    sys.stderr.flush()


def grade(
    submissions: Sequence[Submission], options: Options | None = None, *, jobs: int = 1
) -> list[Row]:
    """Return one Row per submission, in the order given (jobs > 1 grades in parallel)."""
    grading = Grading(options or Options())
    done = itertools.count(1)  # learners graded so far (next() is one step, from any thread)

    def one(slot: int, submission: Submission) -> Row:
        try:
            row = grade_submission(submission, grading, slot=slot)
        except Exception as exc:  # a grader bug must not lose the other rows
            row = Row(submission.learner, "error", {ex: 0.0 for ex in EXERCISES})
            row.errors.append(f"grader error: {exc!r}")
        _progress(next(done), len(submissions), row)
        return row

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, range(len(submissions)), submissions))


# ---------------------------------------------------------------------------
# The command


EXIT_CODES = (
    "exit codes: 0 = the CSV was written and every file handed over is graded or listed with "
    "its reason (a submission that could not be graded, such as a corrupt notebook or one that "
    "loops forever, is an error row in it, not a failure of the command); 1 = the CSV was "
    "written, but a file was left out for a reason the grader could not settle (two originals "
    "of one notebook for one learner, a resubmission included: see 'not graded'); 2 = nothing "
    "was graded and no CSV was written: a SUBMISSION path does not exist, no notebook was "
    "found (a file that is neither a notebook nor a hand-in zip is never a learner), an "
    "output cannot be written, or --require-sandbox and no sandbox can be had."
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit grade` (and the exit codes to its --help)."""
    parser.epilog = EXIT_CODES
    parser.add_argument(
        "submissions",
        nargs="+",
        metavar="SUBMISSION",
        help="notebooks, hand-in zips (lessonkit submit's) or folders: a folder per learner, "
        "an nbgrader submitted/ folder, a Moodle, Gradescope or Canvas export, a drop box of "
        "<user>.zip files",
    )
    parser.add_argument(
        "--out",
        default="grades.csv",
        help="the CSV to write, one row per learner; missing parent folders are created "
        "(default grades.csv); the per-rule CSV goes next to it (grades_rules.csv)",
    )
    parser.add_argument(
        "--feedback", metavar="DIR", help="write one feedback file per learner here"
    )
    parser.add_argument(
        "--report", metavar="HTML", help="write the class report (figures: what to reteach)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds allowed for one notebook: its code and its checks together (default 60)",
    )
    parser.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="grade N learners at once"
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="draw the hidden checks' inputs from this seed (default: a new one, printed and "
        "recorded in the report; give it again to reproduce the grades)",
    )
    parser.add_argument(
        "--allow-lessonkit",
        action="store_true",
        help="accept exercises that call the course's own readers and answers (no flag, "
        "full points)",
    )
    parser.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to grade where no sandbox can be had (instead of resource limits only)",
    )
    parser.add_argument(
        "--canvas",
        metavar="CSV",
        help="also write a Canvas gradebook import (the learners of a Canvas export)",
    )
    parser.add_argument(
        "--assignment",
        default="Streaming course",
        help="the Canvas assignment's title, its column in the import (default "
        "'Streaming course'); Canvas matches it by its exact title, or by --assignment-id",
    )
    parser.add_argument(
        "--assignment-id",
        metavar="ID",
        default="",
        help="the Canvas assignment's id: the column is then 'TITLE (ID)', which matches it",
    )
    parser.add_argument(
        "--canvas-points",
        type=float,
        default=MAX_SCORE,
        metavar="N",
        help=f"the Canvas assignment's points possible; grades are scaled to it "
        f"(default {MAX_SCORE:g}, the course's points)",
    )
    parser.add_argument(
        "--moodle",
        metavar="CSV",
        help="also write a Moodle offline grading worksheet (the learners of a Moodle export)",
    )
    parser.add_argument(
        "--moodle-max",
        type=float,
        default=MOODLE_MAXIMUM,
        metavar="N",
        help=f"the Moodle assignment's maximum grade; grades are scaled to it "
        f"(default {MOODLE_MAXIMUM:g}, Moodle's default)",
    )
    parser.add_argument(
        "--excel",
        action="store_true",
        help="start every CSV with a UTF-8 byte order mark, so that Excel reads accents right",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run learner code with resource limits only (trusted submissions, benchmarks)",
    )


class UsageProblem(Exception):
    """Grading cannot start: a path is missing or an output cannot be written."""


def _prepare_output(path: Path, option: str, *, folder: bool = False) -> None:
    """Create the folder an output goes to (``folder``: the output is that folder); raise
    UsageProblem when it cannot be written."""
    target = path if folder else path.parent
    if path.is_dir() and not folder:
        raise UsageProblem(f"{option} {path} is a folder; give a file name")
    blocker = next((d for d in (target, *target.parents) if d.is_file()), None)
    if blocker is not None:
        raise UsageProblem(f"{option} {path}: {blocker} is a file, not a folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        problem = f"{option} {path}: cannot create the folder ({exc.strerror or exc})"
        raise UsageProblem(problem) from None
    if not os.access(target, os.W_OK) or (path.is_file() and not os.access(path, os.W_OK)):
        raise UsageProblem(f"{option} {path}: not writable")


def _support(args: argparse.Namespace) -> tuple[sandbox.SandboxSupport, str]:
    """Return the sandbox to use and the line that says so; raise UsageProblem if refused."""
    if args.no_sandbox:
        line = "sandbox turned off (--no-sandbox): learner code runs with resource limits only"
        return sandbox.NO_SANDBOX, line
    support = sandbox.detect()
    if support.available:
        return support, support.reason
    if args.require_sandbox:
        raise UsageProblem(f"--require-sandbox: {support.reason}")
    return support, f"{support.reason}; learner code runs with resource limits only"


def _write_outputs(
    rows: list[Row], roster: Roster, paths: dict[str, Path | None], args: argparse.Namespace,
    *, seed: int, how: str, elapsed_s: float,
) -> None:  # fmt: skip
    """Step 4: write every output asked for."""
    out = paths["out"]
    assert out is not None
    write_csv(rows, out, bom=args.excel)
    write_rules_csv(rows, rules_path(out), bom=args.excel)
    if paths["feedback"] is not None:
        write_feedback(rows, paths["feedback"])
    if paths["report"] is not None:
        write_report(rows, paths["report"], seed=seed, how=how, elapsed_s=elapsed_s,
                     not_graded=roster.not_graded)  # fmt: skip
    if paths["canvas"] is not None:
        write_canvas(
            rows,
            paths["canvas"],
            title=args.assignment,
            assignment_id=args.assignment_id,
            points=args.canvas_points,
            bom=args.excel,
        )
    if paths["moodle"] is not None:
        # The grades' time: Moodle keeps a grade of its own that is newer.
        when = datetime.now().astimezone()
        write_moodle(rows, paths["moodle"], when=when, maximum=args.moodle_max, bom=args.excel)


def main(args: argparse.Namespace) -> int:
    """Grade the submissions; write the outputs; return the exit code (``EXIT_CODES`` says
    what each means, in ``--help``). Every check that can fail early runs before any grading.
    """
    missing = [raw for raw in args.submissions if not Path(raw).exists()]
    if missing:
        for raw in missing:
            print(f"lessonkit grade: {raw}: no such file or folder", file=sys.stderr)
        return 2
    roster = find_roster(args.submissions)  # step 1: find the submissions
    for item in roster.not_graded:
        print(f"lessonkit grade: not graded: {item.path}: {item.reason}", file=sys.stderr)
    if not roster.submissions:
        print(
            "lessonkit grade: no notebooks found in " + " ".join(args.submissions), file=sys.stderr
        )
        return 2
    outputs = ("out", "feedback", "report", "canvas", "moodle")  # the paths given, or None
    paths = {key: Path(value) if (value := getattr(args, key)) else None for key in outputs}
    try:
        for key, path in paths.items():
            if path is not None:
                _prepare_output(path, f"--{key}", folder=key == "feedback")
        support, how = _support(args)
    except UsageProblem as exc:
        print(f"lessonkit grade: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else secrets.randbelow(1 << 31)
    print(f"lessonkit grade: {how}", file=sys.stderr)
    print(f"lessonkit grade: hidden checks drawn with --seed {seed}", file=sys.stderr)
    setup = Setup(
        timeout_s=args.timeout,
        limits=sandbox.Limits(cpu_s=int(max(30, 4 * args.timeout))),
        support=support,
    )
    started = time.monotonic()
    rows = grade(roster.submissions, Options(setup, seed, args.allow_lessonkit), jobs=args.jobs)
    elapsed_s = time.monotonic() - started  # steps 2 and 3: run and judge every learner
    try:
        _write_outputs(rows, roster, paths, args, seed=seed, how=how, elapsed_s=elapsed_s)
    except OSError as exc:
        print(f"lessonkit grade: cannot write the outputs ({exc.strerror or exc})", file=sys.stderr)
        return 2
    not_ok = sum(row.status != "ok" for row in rows)
    print(
        f"graded {len(rows)} learner(s) in {elapsed_s:.1f} s: {not_ok} row(s) not ok, "
        f"{len(roster.not_graded)} file(s) not graded; wrote {paths['out']} and "
        f"{rules_path(paths['out'])}",
        file=sys.stderr,
    )
    if roster.unexplained:
        print(
            f"lessonkit grade: {len(roster.unexplained)} file(s) left out for a reason to "
            "settle by hand (see 'not graded' above and in the report)",
            file=sys.stderr,
        )
        return 1
    return 0
