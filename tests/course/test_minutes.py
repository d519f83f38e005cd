"""Honest minutes: the time each notebook says it takes is the time reading it takes.

The estimate, stated once here and used for every lesson and exercise:

    minutes = words / 200 (words per minute; prose and code alike, a learner reads both)
            + 2 min per explorer (a widget whose twin says "Run this cell to open the ...",
              or the browser demo): the time to try its controls
            + 1 min per predict-then-run experiment (a prediction picker and its reveal)
            + 0.25 min per other code cell that shows output: a look at what it printed
            + for an exercise, the time to write its code (WORK_MINUTES below)

Words are counted in markdown and code cells, without link targets, HTML tags, the
`# NBVAL_IGNORE_OUTPUT` markers, or the "Sources" section (a reference list, not read
through). A lesson's "Going deeper" parts (a heading starting with "Going deeper", up
to the next heading of the same or a higher level) are counted apart from its core.

The minutes printed in each notebook ("About N minutes", "plus about M ... Going
deeper"), in the course map of notebooks/00_start_here.ipynb and in the README's
tables must be within 20% of this estimate; the core of each lesson within about
15 minutes. Run this file with `python tests/course/test_minutes.py` to print the table.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9]_*.ipynb"))

WORDS_PER_MINUTE = 200
EXPLORER_MINUTES = 2.0
PREDICTION_MINUTES = 1.0
OUTPUT_MINUTES = 0.25
# Writing the exercise's code, on top of reading its notebook (a judgement, stated once).
WORK_MINUTES = {
    "ex1_response_times": 3,  # three lines of arithmetic
    "ex2_read_stream": 10,  # a buffered, incremental reader, then its edge cases
    "ex3_now_change_it": 4,  # three predictions and three short explanations
    "ex4_read_anthropic": 7,  # the ex2 reader, with named events
    "ex5_resume": 6,  # reconnect with Last-Event-ID, join without gaps
    "ex6_parse_sse": 20,  # the full WHATWG algorithm (stretch)
}
TOLERANCE = 0.20
CORE_LIMIT_MINUTES = 16  # "within about 15 minutes"

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def words(text: str) -> int:
    """Return the number of words a reader reads in `text` (links' targets and tags left out)."""
    text = re.sub(r"\]\([^)]*\)", "]", text)  # [label](target) -> [label]
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tags
    text = text.replace("# NBVAL_IGNORE_OUTPUT", "")
    return len(re.findall(r"[A-Za-z0-9_']+", text))


@dataclass
class Minutes:
    """An estimate, in minutes, of a notebook's core and Going deeper parts."""

    core: float = 0.0
    deeper: float = 0.0

    def add(self, part: str, minutes: float) -> None:
        if part == "core":
            self.core += minutes
        elif part == "deeper":
            self.deeper += minutes


def _allowance(cell) -> float:
    """Return the time a code cell's outputs take beyond reading its code."""
    texts = [
        o.get("data", {}).get("text/plain", "") if "data" in o else o.get("text", "")
        for o in cell.get("outputs", [])
    ]
    if any(t.startswith("▶ Run this cell to open the") for t in texts):
        return EXPLORER_MINUTES
    if any(t.startswith("BrowserStreamDemo(") for t in texts):
        return EXPLORER_MINUTES
    if any(t.startswith("▶ Run this cell, then pick your prediction") for t in texts):
        return PREDICTION_MINUTES
    if any(t.startswith("▶ Run this cell after you have picked") for t in texts):
        return 0.0  # counted with its prediction
    return OUTPUT_MINUTES if texts else 0.0


def estimate(path: Path) -> Minutes:
    """Return the estimated minutes of the notebook at `path` (see the module docstring)."""
    notebook = nbformat.read(path, as_version=4)
    minutes = Minutes()
    part, deeper_level = "core", 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                match = HEADING.match(line)
                if match:
                    level, title = len(match.group(1)), match.group(2).strip()
                    if title.startswith("Going deeper"):
                        part, deeper_level = "deeper", level
                    elif title == "Sources":
                        part = "sources"
                    elif part != "deeper" or level <= deeper_level:
                        part = "core"
                minutes.add(part, words(line) / WORDS_PER_MINUTE)
        elif cell.cell_type == "code":
            minutes.add(part, words(cell.source) / WORDS_PER_MINUTE + _allowance(cell))
    work = WORK_MINUTES.get(path.stem, 0)
    minutes.core += work
    return minutes


def printed_minutes(path: Path) -> tuple[int | None, int | None]:
    """Return the (core, deeper) minutes a notebook prints about itself in its first cells."""
    notebook = nbformat.read(path, as_version=4)
    head = "\n".join(c.source for c in notebook.cells[:2] if c.cell_type == "markdown")
    core = re.search(r"About (\d+) minutes", head, re.I)
    deeper = re.search(r"plus about (\d+) (?:minutes )?in the optional \*Going deeper\*", head)
    return (int(core.group(1)) if core else None, int(deeper.group(1)) if deeper else None)


def course_map() -> dict[str, tuple[int, int]]:
    """Return {notebook stem: (core, deeper)} from the course map tables of lesson 00."""
    text = "\n".join(c.source for c in nbformat.read(LESSONS[0], as_version=4).cells)
    return _table_minutes(text)


def readme_minutes() -> dict[str, tuple[int, int]]:
    """Return {notebook stem: (core, deeper)} from the README's lesson and exercise tables."""
    return _table_minutes((ROOT / "README.md").read_text())


def _table_minutes(text: str) -> dict[str, tuple[int, int]]:
    """Read table rows naming a notebook (`01_why_streaming`) in the column headed "Minutes".

    A cell reads "14 + 6" (core + Going deeper) or "5".
    """
    found: dict[str, tuple[int, int]] = {}
    column = None
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        headed = [i for i, c in enumerate(cells) if c.startswith("Minutes")]
        if column is None:
            column = headed[0] if headed else -1
            continue
        name = re.search(r"`((?:\d\d|ex\d)_[a-z_]+)`", line)
        if column < 0 or not name or column >= len(cells):
            continue
        match = re.fullmatch(r"(\d+)(?: \+ (\d+))?", cells[column])
        if match:
            found.setdefault(name.group(1), (int(match.group(1)), int(match.group(2) or 0)))
    return found


def _off(printed: float, computed: float) -> bool:
    if computed < 0.5:
        return printed > 1
    return abs(printed - computed) > TOLERANCE * computed


def table() -> str:
    """Return the estimate next to every printed number, one row per notebook."""
    rows = [
        f"{'notebook':34} {'computed':>16} {'in notebook':>12} {'course map':>11} {'README':>8}"
    ]
    in_map, in_readme = course_map(), readme_minutes()
    for path in [*LESSONS, *EXERCISES]:
        est = estimate(path)
        core, deeper = printed_minutes(path)
        rows.append(
            f"{path.stem:34} {est.core:7.1f} + {est.deeper:5.1f}"
            f" {core!s:>6} + {deeper!s:<4} {in_map.get(path.stem)!s:>11}"
            f" {in_readme.get(path.stem)!s:>8}"
        )
    return "\n".join(rows)


ALL = [*LESSONS, *EXERCISES]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_the_minutes_a_notebook_prints_are_within_20_percent_of_its_reading_time(path):
    est = estimate(path)
    core, deeper = printed_minutes(path)
    assert core is not None, f"{path.name} prints no 'About N minutes'"
    owner = "exercises/ (generated from solutions/)" if path in EXERCISES else path.name
    assert not _off(core, est.core), (
        f"{path.name} says about {core} minutes; reading it takes about {est.core:.1f}"
        f" ({est.core / 1.2:.1f}-{est.core / 0.8:.1f} passes): set {round(est.core)} in {owner}"
    )
    if est.deeper >= 0.5:
        assert deeper is not None, (
            f"{path.name} has Going deeper parts but prints no minutes for them"
        )
    if deeper is not None:
        assert not _off(deeper, est.deeper), (
            f"{path.name} says about {deeper} minutes going deeper; it takes about {est.deeper:.1f}:"
            f" set {round(est.deeper)}"
        )


@pytest.mark.parametrize("path", LESSONS[1:], ids=lambda p: p.stem)
def test_each_lessons_core_read_stays_within_about_15_minutes(path):
    assert estimate(path).core <= CORE_LIMIT_MINUTES, (
        f"{path.name}: the core takes {estimate(path).core:.1f} minutes; move side material"
        " into a 'Going deeper' section"
    )


@pytest.mark.parametrize("source", ["course map", "README"])
def test_the_course_map_and_the_readme_print_each_notebooks_minutes_within_20_percent(source):
    tables = course_map() if source == "course map" else readme_minutes()
    problems = []
    for path in ALL:
        est = estimate(path)
        if path.stem not in tables:
            problems.append(f"{path.stem} is missing from the {source}")
            continue
        core, deeper = tables[path.stem]
        if _off(core, est.core) or (est.deeper >= 0.5 and _off(deeper, est.deeper)):
            problems.append(
                f"{path.stem}: the {source} says {core} + {deeper}, the estimate is"
                f" {est.core:.1f} + {est.deeper:.1f}"
            )
    assert not problems, "\n".join(problems)


def test_the_course_map_shows_both_paths_with_honest_totals():
    text = "\n".join(c.source for c in nbformat.read(LESSONS[0], as_version=4).cells)
    core_path = re.search(r"\*\*Core path\*\*.*?about (\d+)\s+minutes", text, re.S)
    full_path = re.search(r"\*\*Full path\*\*.*?about (\d+)\s+minutes", text, re.S)
    assert core_path and full_path, "the course map names no core path and no full path"
    core_exercises = [p for p in EXERCISES if p.stem in ("ex1_response_times", "ex2_read_stream",
                                                         "ex3_now_change_it")]  # fmt: skip
    core_total = sum(estimate(p).core for p in [*LESSONS, *core_exercises])
    full_total = sum(estimate(p).core + estimate(p).deeper for p in ALL)
    assert not _off(int(core_path.group(1)), core_total), (core_path.group(1), core_total)
    assert not _off(int(full_path.group(1)), full_total), (full_path.group(1), full_total)


if __name__ == "__main__":
    print(table())
    sys.exit(0)
