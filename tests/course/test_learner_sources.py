"""The code a learner reads carries no marks of the course's own test tools.

nbval reads its instructions from cell tags (``nbval-ignore-output``, ``nbval-skip``), so
no ``# NBVAL_...`` comment, and no word about nbval, sits in a code cell of notebooks/ or
exercises/ (exercises/ is generated from solutions/, so that covers those too). Markdown
may name nbval where it speaks to an instructor (lesson 00's "for instructors" block).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LEARNER_NOTEBOOKS = sorted(
    path for folder in ("notebooks", "exercises") for path in (ROOT / folder).glob("*.ipynb")
)


def test_every_learner_notebook_is_scanned():
    assert len(LEARNER_NOTEBOOKS) >= 12


@pytest.mark.parametrize("path", LEARNER_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_code_cell_a_learner_reads_names_the_test_tool(path):
    cells = nbformat.read(path, as_version=4).cells
    found = [
        f"cell {index}: {line.strip()}"
        for index, cell in enumerate(cells)
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if "nbval" in line.lower()
    ]
    assert found == [], "use a cell tag (nbval-ignore-output) instead:\n" + "\n".join(found)


PRACTICE_OPENING = 'BLANK = "\\n\\n"'  # the first line of lesson 04's practice code


@pytest.mark.parametrize("folder", ["exercises", "solutions"])
def test_exercise_3_starts_from_lesson_04s_practice_code_word_for_word(folder):
    lesson = nbformat.read(ROOT / "notebooks" / "04_practice_cuts_and_drops.ipynb", as_version=4)
    [practice] = [c.source for c in lesson.cells if c.source.startswith(PRACTICE_OPENING)]
    exercise = nbformat.read(ROOT / folder / "ex3_now_change_it.ipynb", as_version=4)
    [given] = [c.source for c in exercise.cells if PRACTICE_OPENING in c.source]
    imports, _, code = given.partition(PRACTICE_OPENING)
    assert PRACTICE_OPENING + code == practice  # the lesson's names, lines and printout
    assert all(line.startswith(("import ", "from ")) for line in imports.split("\n") if line)
