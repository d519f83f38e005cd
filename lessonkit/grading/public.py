"""The public checks of a learner's notebooks, for ``submit()``: ``public_results(notebooks)``.

    public_results({"ex2_read_stream.ipynb": data, ...})
    -> {"ex2_read_stream.ipynb": {"file": "ex2_read_stream.ipynb", "state": "failing",
        "checks_passed": 5, "checks": 13, "points": 10, "max_points": 30,
        "missing": "a character split across chunks survives; ..."}, ...}

Each course notebook (its bytes, as saved) runs top to bottom, then the public rules
of its exercise judge what it defined, exactly as ``check()`` does
(``engine.Report.public_result``); no hidden rule runs. The learner's code never
runs in the caller's process where another can be started:

* the full edition: one ``python -m lessonkit.grading.child`` runs the notebooks one
  after the other, as ``lessonkit grade`` does but without its sandbox (it is the
  learner's own code, run for the learner): a notebook whose code loops forever is
  stopped after ``timeout_s`` and its result says so, and the kernel or `lessonkit
  submit` that asked goes on;
* JupyterLite's kernel (``sys.platform == "emscripten"``: no processes, no threads),
  and Windows (no resource limits for the child): here, each cell under the time
  budget ``check()`` uses there (``timed_calls.time_budget``), which stops a loop
  written in Python.

Either way the notebooks run in grading mode: their ``check()`` cells record no
progress and show nothing, and ``try_it``, ``submit()`` and the live demos do nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from lessonkit.grading import sandbox
from lessonkit.grading.channel import ChildGone
from lessonkit.grading.child import run_cells
from lessonkit.grading.engine import CALL_LIMIT_S, Answers, Exercise, Mode, Report, not_found
from lessonkit.grading.exercises import EXERCISES
from lessonkit.grading.integrity import Recorder
from lessonkit.grading.notebook import GRADING_ENV, public_report
from lessonkit.grading.roster import COURSE_NOTEBOOKS, NotANotebook, read_code_cells
from lessonkit.grading.run import LearnerHost, NotebookProblem, NotebookRun, Setup
from lessonkit.grading.timed_calls import in_this_process, time_budget

TIMEOUT_S = 60.0  # one notebook, its code and its checks: lessonkit grade's default


def public_results(
    notebooks: Mapping[str, bytes], *, timeout_s: float = TIMEOUT_S, here: bool | None = None
) -> dict[str, dict[str, Any]]:
    """Return file name -> the public result of each course exercise notebook given.

    The result has the keys ``file``, ``state`` ("passed" | "failing" | "not started"),
    ``checks_passed``, ``checks``, ``points``, ``max_points`` and ``missing`` (see the
    module's docstring); a file that is not a course exercise notebook gets none.
    ``here`` runs the notebooks in this process (default: only where no child can run).
    """
    if here is None:
        here = sys.platform == "emscripten" or os.name != "posix"
    mode = Mode(limit_s=min(CALL_LIMIT_S, timeout_s))
    limits = sandbox.Limits(cpu_s=int(max(30, 4 * timeout_s)))  # as lessonkit grade's
    host = None if here else LearnerHost(Setup(timeout_s, limits, sandbox.NO_SANDBOX))
    results = {}
    try:
        for file, data in notebooks.items():
            exercise_id = COURSE_NOTEBOOKS.get(Path(file).stem)
            if exercise_id is None:
                continue
            exercise = EXERCISES[exercise_id]
            try:
                cells, _ = read_code_cells(data)
            except NotANotebook as exc:
                report, stopped = Report(exercise, problem=str(exc)), ""
            else:
                if host is None:
                    report, stopped = _run_here(cells, exercise, mode, timeout_s)
                else:
                    report, stopped = _run_in_child(cells, exercise, mode, host)
            results[file] = {"file": file, **report.public_result()}
            if stopped:  # the notebook did not run to its end: it fails, whatever it holds
                stopped = stopped.replace(" (--timeout)", "")  # lessonkit grade's option
                missing = [stopped, results[file]["missing"]]
                results[file].update(state="failing", missing="; ".join(m for m in missing if m))
    finally:
        if host is not None:
            host.close()
    return results


def _run_in_child(
    cells: list[str], exercise: Exercise, mode: Mode, host: LearnerHost
) -> tuple[Report, str]:
    """Return (the exercise's public Report, why the notebook stopped or "") from the child."""
    run = NotebookRun(host, cells, host.setup.timeout_s)
    try:
        run.start()
        if exercise.id not in run.found:
            return not_found(exercise), run.stopped
        return run.judge(exercise, mode), run.stopped
    except (NotebookProblem, ChildGone) as exc:
        return not_found(exercise), str(exc)
    finally:
        run.close()


def _run_here(
    cells: list[str], exercise: Exercise, mode: Mode, timeout_s: float
) -> tuple[Report, str]:
    """Return (the exercise's public Report, why the notebook stopped or "") run here."""
    asked = ([], [exercise.id]) if isinstance(exercise, Answers) else ([exercise.id], [])
    quiet = io.StringIO()
    with (
        mock.patch.dict(os.environ, {GRADING_ENV: "1"}),
        contextlib.redirect_stdout(quiet),
        contextlib.redirect_stderr(quiet),
    ):
        found, _, stopped = run_cells(
            cells, *asked, timeout_s, limit=lambda seconds: time_budget(seconds, Recorder(), {})
        )
        if exercise.id not in found:
            return not_found(exercise), stopped
        return public_report(exercise, found[exercise.id], mode, in_this_process), stopped
