"""``lessonkit grade SUBMISSIONS... --out grades.csv``: grade a class headless, one row per learner.

Each learner's notebooks run in that learner's sandbox (``runner``,
``sandbox``): a fresh Python process per notebook, never trusting stored
outputs, with no network, no view of the grader or its files, and limits on
memory, processes, CPU time and file size. The exercise functions are found
by name -- cell order, deleted or extra cells do not matter -- and this
process calls them there on the public and hidden inputs (hidden ones drawn
from ``--seed``) and compares every answer with the reference computed here.
The learner's code never sees the reference, and its own verdicts (a
redefined ``check``, a printed "passed", edited outputs) are never read.

The CSV has one row per learner (``roster``): ``learner, status, score,
max_score``, one column per exercise, ``flags``, then ``error, notes, files``.
``status`` names what happened ("ok", "error", "flagged: network",
"limit: memory"...), ``flags`` lists it ("network;kill;course-answer:read_stream").
A function that calls the course's own answer earns no points for that
exercise (``--allow-lessonkit`` accepts it). Next to it,
``<out>_rules.csv`` holds one line per learner, exercise and rule
(``learner, exercise, rule, passed, points``); ``--report`` writes the class
report (``report``). Every output is written to a temporary file and renamed
into place, out of reach of any learner code. Broken input never stops the
run; nothing submitted is modified.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lessonkit.grading import sandbox
from lessonkit.grading.channel import ChildGone
from lessonkit.grading.engine import (
    CALL_LIMIT_S,
    DEFAULT_SEED,
    Case,
    Exercise,
    Outcome,
    Report,
    evaluate,
    evaluate_value,
)
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.guard import flags_for_exception
from lessonkit.grading.report import (
    rules_path,
    write_csv,
    write_feedback,
    write_report,
    write_rules_csv,
)
from lessonkit.grading.roster import (
    NotANotebook,
    Submission,
    exercise_of,
    find_submissions,
    read_code_cells,
)
from lessonkit.grading.runner import LearnerHost, NotebookRun, Setup

__all__ = [
    "Options",
    "Row",
    "Setup",
    "configure_parser",
    "find_submissions",
    "grade",
    "grade_submission",
    "main",
    "write_csv",
    "write_rules_csv",
]

# flag -> (kind of status, words); the status names the first kind that applies
FLAG_WORDS = {
    "kill": ("flagged", "signalled other processes"),
    "network": ("flagged", "network"),
    "wrote-outside-scratch": ("flagged", "wrote outside its scratch folder"),
    "read-other-environ": ("flagged", "read another process's environment"),
    "spawn": ("flagged", "started processes"),
    "course-answer": ("flagged", "calls the course's answer"),
    "memory-limit": ("limit", "memory"),
    "cpu-limit": ("limit", "cpu time"),
    "file-size-limit": ("limit", "file size"),
    "process-limit": ("limit", "processes"),
    "open-files-limit": ("limit", "open files"),
    "time-limit": ("limit", "time"),
}


@dataclass(frozen=True)
class Options:
    """How a class is graded: the sandbox set-up, the hidden inputs' seed, what is accepted."""

    setup: Setup = field(default_factory=Setup)
    seed: int = DEFAULT_SEED
    allow_lessonkit: bool = False


@dataclass
class Row:
    """One line of the grades CSV, and the feedback written for that learner."""

    learner: str
    status: str = "ok"
    scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    feedback: str = ""
    reports: dict[str, Report] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """Return the points earned over all exercises."""
        return round(sum(self.scores.values()), 2)

    @property
    def submission(self) -> str:
        """Return the learner id (the name this row had before rows were learners)."""
        return self.learner


# ---------------------------------------------------------------------------
# Grading one learner


def grade_exercise(
    run: NotebookRun, exercise: Exercise, options: Options, flags: set[str]
) -> Report:
    """Return the graded Report (public and hidden rules) of one exercise in a notebook run."""
    used = [*run.copied.get(exercise.id, []), *run.tampered]
    if exercise.kind == "value":
        value = run.ensure().value(exercise.id, CALL_LIMIT_S)
        used = [*run.cell_used, *run.tampered]
        return evaluate_value(
            exercise, value, hidden=True, allow_lessonkit=options.allow_lessonkit, used=used
        )
    budget_s = options.setup.timeout_s
    started = time.monotonic()
    limit_s = min(CALL_LIMIT_S, budget_s)

    def run_many(cases: Sequence[Case]) -> list[Outcome]:
        if time.monotonic() - started > budget_s:
            return [Outcome(timed_out=True)]
        try:
            outcomes = run.ensure().call_many(exercise.id, cases, limit_s)
        except ChildGone as exc:
            return [Outcome(error=str(exc), error_type="ChildGone")]
        for outcome in outcomes:
            if outcome.error_type:
                flags.update(flags_for_exception(outcome.error_type))
        return outcomes

    return evaluate(
        exercise,
        run_many=run_many,
        hidden=True,
        seed=options.seed,
        call_limit_s=limit_s,
        allow_lessonkit=options.allow_lessonkit,
        used=used,
    )


def _exit_text(host: LearnerHost) -> str:
    code = host.ended_code()
    if code is None:
        return "the notebook's code ended the Python process"
    if code < 0:
        return f"the notebook's code ended the Python process ({sandbox.signal_status(-code)[0]})"
    return f"the notebook's code ended the Python process (exit status {code})"


def grade_submission(submission: Submission, options: Options | None = None) -> Row:
    """Return the Row of one learner; every failure becomes part of the row."""
    grading = _LearnerGrading(submission, options or Options())
    plans = []
    for path in submission.notebooks:
        try:
            cells, declared = read_code_cells(path)
        except NotANotebook as exc:
            meant = exercise_of(path)
            where = f" (an error on {meant}: 0 points)" if meant else ""
            grading.row.errors.append(f"{path.name}: {exc}{where}")
            continue
        plans.append((path, cells, declared))
    declared_anywhere = {ex for _, _, declared in plans for ex in declared}
    try:
        for path, cells, declared in plans:
            others = declared_anywhere - set(declared)  # another notebook is the one for them
            grading.notebook(path, cells, others)
    finally:
        grading.host.close()
    return grading.finish()


class _LearnerGrading:
    """Grading one learner: their sandbox, the reports so far, the flags and notes seen."""

    def __init__(self, submission: Submission, options: Options) -> None:
        self.submission = submission
        self.options = options
        self.row = Row(submission.learner, notes=list(submission.notes))
        self.row.files = [str(p) for p in submission.notebooks]
        self.reports: dict[str, Report] = {}
        self.flags: set[str] = set()
        self.cell_notes: list[str] = []
        self.host = LearnerHost(options.setup)

    def notebook(self, path: Path, cells: list[str], elsewhere: set[str]) -> None:
        """Run one notebook in the learner's sandbox and grade the exercises it holds."""
        run = NotebookRun(self.host, cells)
        try:
            try:
                run.start()
            except ChildGone as exc:
                text = str(exc) if "did not finish" in str(exc) else _exit_text(self.host)
                self.row.errors.append(f"{path.name}: {text}")
                return
            for error in run.cell_errors:
                where = f" ({error['where']})" if error.get("where") else ""
                self.cell_notes.append(
                    f"{path.name}, cell {error.get('cell')}: {error.get('error')}{where}"
                )
                errno_value = error.get("errno") if isinstance(error.get("errno"), int) else None
                self.flags.update(flags_for_exception(str(error.get("type")), errno_value))
            if run.stopped:
                self.row.errors.append(f"{path.name}: {run.stopped}")
            for exercise in EXERCISES.values():
                if exercise.id in self.reports or exercise.id not in run.found:
                    continue
                if exercise.id in elsewhere:
                    continue
                try:
                    self.reports[exercise.id] = grade_exercise(
                        run, exercise, self.options, self.flags
                    )
                except ChildGone as exc:
                    self.row.errors.append(f"{path.name}: {exc}")
        finally:
            run.close()

    def finish(self) -> Row:
        """Return the row: scores, what the sandboxes reported, status, flags and feedback."""
        row, reports, flags = self.row, self.reports, self.flags
        _read_sandboxes(self.host, flags, row)
        for report in reports.values():
            if report.integrity:
                flags.add(f"course-answer:{report.exercise}")
            if report.allowed_use:
                row.notes.append(
                    f"{report.exercise} uses {', '.join(report.allowed_use)} (allowed)"
                )
        row.scores = {
            ex.id: (reports[ex.id].score if ex.id in reports else 0.0) for ex in EXERCISES.values()
        }
        row.reports = reports
        row.flags = sorted(flags)
        row.status = _status(row)
        row.feedback = _feedback(self.submission, row, reports, self.cell_notes)
        return row


def _read_sandboxes(host: LearnerHost, flags: set[str], row: Row) -> None:
    """Add what the learner's sandboxes reported (guard events, how they ended) to the row."""
    for report in host.reports:
        flags.update(report.flags)
        if report.status.startswith("sandbox failed"):
            row.errors.append(report.status)
        elif report.status not in ("ok", "killed by the grader"):
            row.notes.append(f"the learner's sandbox ended: {report.status}")
        if report.leftover_pids:
            row.errors.append(f"processes left after the sandbox ended: {report.leftover_pids}")
    for ended in host.endings:
        signum = ended.get("signal")
        if isinstance(signum, int) and signum:
            status, flag = sandbox.signal_status(signum)
            row.notes.append(f"a notebook's process ended: {status}")
            if flag:
                flags.add(flag)


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


def _feedback(
    submission: Submission, row: Row, reports: dict[str, Report], cell_notes: list[str]
) -> str:
    total = sum(ex.points for ex in EXERCISES.values())
    lines = [
        f"Learner: {submission.learner}",
        f"Notebooks: {', '.join(p.name for p in submission.notebooks) or '(none readable)'}",
        f"Score: {row.score:g} of {total:g} points",
        f"Status: {row.status}",
        "",
    ]
    if row.flags:
        lines += [f"Flags: {'; '.join(row.flags)}", ""]
    if row.errors:
        lines += ["Problems:", *[f"  - {e}" for e in row.errors], ""]
    if row.notes:
        lines += ["Notes:", *[f"  - {n}" for n in row.notes], ""]
    if cell_notes:
        lines += [
            "Cells that raised an error while running:",
            *[f"  - {n}" for n in cell_notes],
            "",
        ]
    for exercise in EXERCISES.values():
        lines.append("=" * 72)
        if exercise.id in reports:
            lines.append(reports[exercise.id].text())
        else:
            what = "function" if exercise.kind == "function" else "dict"
            lines.append(
                f"{exercise.id}: not found -- no {what} named {exercise.id} in the notebook(s); "
                f"0 of {exercise.points:g} points."
            )
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The class


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
        text = f"grading [{bar}] {self.done}/{self.total}  {row.learner[-40:]}"
        if self.tty:
            sys.stderr.write("\r" + text.ljust(100))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


def grade(
    submissions: Sequence[Submission], options: Options | None = None, *, jobs: int = 1
) -> list[Row]:
    """Return one Row per submission, in the order given (jobs > 1 grades in parallel)."""
    options = options or Options()
    progress = _Progress(len(submissions))

    def one(submission: Submission) -> Row:
        try:
            row = grade_submission(submission, options)
        except sandbox.SandboxUnavailable:
            raise
        except Exception as exc:  # a grader bug must not lose the other rows
            row = Row(submission.learner, "error", {ex: 0.0 for ex in EXERCISES})
            row.errors.append(f"grader error: {exc!r}")
        progress.step(row)
        return row

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, submissions))


# ---------------------------------------------------------------------------
# The command


EXIT_CODES = (
    "exit codes: 0 = the CSV was written (a submission that could not be graded, such as a "
    "corrupt notebook or one that loops forever, is an error row in it, not a failure of the "
    "command); 2 = nothing was graded: a SUBMISSION path does not exist, no notebook was found, "
    "an output cannot be written, or --require-sandbox and no sandbox can be had."
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit grade` (and the exit codes to its --help)."""
    parser.epilog = EXIT_CODES
    parser.add_argument(
        "submissions",
        nargs="+",
        metavar="SUBMISSION",
        help="notebooks or folders: a folder per learner, an nbgrader submitted/ folder, "
        "a Moodle, Gradescope or Canvas export",
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
        help="seconds allowed for a notebook's code, and again for each exercise's checks "
        "(default 60)",
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
        "--no-sandbox",
        action="store_true",
        help="run learner code with resource limits only (trusted submissions, benchmarks)",
    )


class UsageProblem(Exception):
    """Grading cannot start: a path is missing or an output cannot be written."""


def _prepare_output(path: Path, option: str) -> None:
    if path.is_dir():
        raise UsageProblem(f"{option} {path} is a folder; give a file name")
    blocker = next((d for d in (path.parent, *path.parent.parents) if d.is_file()), None)
    if blocker is not None:
        raise UsageProblem(f"{option} {path}: {blocker} is a file, not a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageProblem(
            f"{option} {path}: cannot create its folder ({exc.strerror or exc})"
        ) from None
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageProblem(f"{option} {path}: not writable")


def _prepare_outputs(out: Path, feedback: Path | None, report: Path | None) -> None:
    """Create the folders the outputs go to; raise UsageProblem when they cannot be written."""
    _prepare_output(out, "--out")
    if report is not None:
        _prepare_output(report, "--report")
    if feedback is not None:
        try:
            feedback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageProblem(
                f"--feedback {feedback}: cannot create the folder ({exc.strerror or exc})"
            ) from None
        if not os.access(feedback, os.W_OK):
            raise UsageProblem(f"--feedback {feedback}: not writable")


def _sandbox_line(args: argparse.Namespace) -> str:
    """Return the one line that says how learner code runs; raise UsageProblem if refused."""
    if getattr(args, "no_sandbox", False):
        return "sandbox turned off (--no-sandbox): learner code runs with resource limits only"
    support = sandbox.detect()
    if support.available:
        return support.reason
    if getattr(args, "require_sandbox", False):
        raise UsageProblem(f"--require-sandbox: {support.reason}")
    return f"{support.reason}; learner code runs with resource limits only"


def main(args: argparse.Namespace) -> int:
    """Grade the submissions; write the CSVs (and feedback, report); return the exit code.

    0 when the CSV was written (error rows included); 2 when nothing was graded
    because a given path does not exist, no notebook was found, an output
    cannot be written, or a sandbox was required and none can be had. Every
    check that can fail early runs before any grading.
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
    report_path = Path(args.report) if getattr(args, "report", None) else None
    try:
        _prepare_outputs(out, folder, report_path)
        how = _sandbox_line(args)
    except UsageProblem as exc:
        print(f"lessonkit grade: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if getattr(args, "seed", None) is not None else secrets.randbelow(1 << 31)
    print(f"lessonkit grade: {how}", file=sys.stderr)
    print(f"lessonkit grade: hidden checks drawn with --seed {seed}", file=sys.stderr)
    setup = Setup(
        timeout_s=args.timeout,
        limits=sandbox.Limits(cpu_s=int(max(30, 4 * args.timeout))),
        use_sandbox=not getattr(args, "no_sandbox", False),
        require_sandbox=getattr(args, "require_sandbox", False),
    )
    options = Options(setup, seed, getattr(args, "allow_lessonkit", False))
    started = time.monotonic()
    rows = grade(submissions, options, jobs=args.jobs)
    elapsed_s = time.monotonic() - started
    try:
        write_csv(rows, out)
        write_rules_csv(rows, rules_path(out))
        if folder is not None:
            write_feedback(rows, folder)
        if report_path is not None:
            write_report(rows, report_path, seed=seed, how=how, elapsed_s=elapsed_s)
    except OSError as exc:
        print(f"lessonkit grade: cannot write the outputs ({exc.strerror or exc})", file=sys.stderr)
        return 2
    not_ok = sum(row.status != "ok" for row in rows)
    print(
        f"graded {len(rows)} learner(s) in {elapsed_s:.1f} s: {not_ok} row(s) not ok; "
        f"wrote {out} and {rules_path(out)}",
        file=sys.stderr,
    )
    return 0
