"""lessonkit assign: exercises/ is generated from solutions/ and must stay in step."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
import pytest

from lessonkit.grading import assign
from lessonkit.grading.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[2]


def test_committed_exercises_are_exactly_what_assign_generates(tmp_path):
    assign.assign(ROOT / "solutions", tmp_path)
    generated = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert generated == sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))
    for name in generated:
        committed = (ROOT / "exercises" / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / name).read_text(encoding="utf-8"), (
            f"exercises/{name} is out of date: run `lessonkit assign solutions exercises`"
        )


def test_check_mode_reports_a_stale_exercise_and_writes_nothing(tmp_path, capsys):
    assign.assign(ROOT / "solutions", tmp_path)
    stale = tmp_path / "ex1_response_times.ipynb"
    stale.write_text("{}", encoding="utf-8")
    args = argparse.Namespace(source=str(ROOT / "solutions"), target=str(tmp_path), check=True)
    assert assign.main(args) == 1
    assert stale.read_text(encoding="utf-8") == "{}"
    assert "ex1_response_times.ipynb is out of date" in capsys.readouterr().err


def test_a_solution_region_becomes_a_stub_that_raises_with_the_function_name():
    source = 'def read_stream(chunks):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return "", False\n    ### END SOLUTION\n'
    assert assign.stub_code(source) == (
        'def read_stream(chunks):\n    """Doc."""\n'
        '    raise NotImplementedError("read_stream: not written yet -- replace this line with your code")\n'
    )


def test_text_after_the_begin_marker_becomes_the_stub_message():
    source = "def f():\n    ### BEGIN SOLUTION keep a buffer\n    pass\n    ### END SOLUTION"
    assert 'raise NotImplementedError("f: keep a buffer")' in assign.stub_code(source)


def test_a_stub_section_is_uncommented_in_place_of_the_solution():
    source = 'answers = {}\n### BEGIN SOLUTION\nanswers["a"] = "B"\n### STUB\n# answers["a"] = ...  # A or B\n### END SOLUTION\n'
    assert assign.stub_code(source) == 'answers = {}\nanswers["a"] = ...  # A or B\n'


@pytest.mark.parametrize(
    "source",
    [
        "### BEGIN SOLUTION\nx = 1\n",
        "x = 1\n### END SOLUTION\n",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n",
    ],
)
def test_unpaired_markers_are_an_error(source):
    with pytest.raises(assign.MarkerError):
        assign.stub_code(source)


def test_markdown_answers_and_all_outputs_are_removed():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "Q?\n<!-- BEGIN SOLUTION -->\nA secret.\n<!-- END SOLUTION -->"
            ),
            nbformat.v4.new_code_cell(
                "print(1)",
                execution_count=3,
                outputs=[nbformat.v4.new_output("stream", text="1\n")],
            ),
        ]
    )
    out = assign.exercise_notebook(nb)
    assert "secret" not in out.cells[0].source and assign.MD_ANSWER in out.cells[0].source
    assert out.cells[1].outputs == [] and out.cells[1].execution_count is None
    assert nb.cells[1].outputs  # the solution itself is untouched


def test_exercise_notebooks_hold_no_outputs_and_no_solution_code():
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name
                assert "BEGIN SOLUTION" not in cell.source, path.name


def test_every_exercise_has_one_solution_notebook_that_declares_it():
    declared = {}
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        meta = nbformat.read(path, as_version=4).metadata["lessonkit"]
        assert meta["notebook"] == path.stem
        for exercise_id in meta["exercises"]:
            declared[exercise_id] = path.name
    assert sorted(declared) == sorted(EXERCISES)


def _readme_exercise_rows() -> dict[str, tuple[int, int]]:
    """Return {exercise: (minutes, points)} from the README's exercise table.

    A row: | [`ex1_response_times`](exercises/ex1_response_times.ipynb) | what | 5 | 10 |
    """
    rows = re.findall(
        r"^\| \[`(ex\d_\w+)`\]\(exercises/\1\.ipynb\) \|[^|]*\| (\d+) \| (\d+) \|$",
        (ROOT / "README.md").read_text(encoding="utf-8"),
        flags=re.M,
    )
    return {name: (int(minutes), int(points)) for name, minutes, points in rows}


# The minutes and points of each exercise, as the README's table lists them.
TIME_AND_POINTS = _readme_exercise_rows()
# The exercises each notebook declares (its lessonkit metadata).
EXERCISES_BY_NOTEBOOK = {
    path.stem: nbformat.read(path, as_version=4).metadata["lessonkit"]["exercises"]
    for path in sorted((ROOT / "solutions").glob("*.ipynb"))
}


def test_the_readme_lists_every_exercise_with_its_points():
    assert sorted(TIME_AND_POINTS) == sorted(EXERCISES_BY_NOTEBOOK)
    for name, (_, points) in TIME_AND_POINTS.items():
        assert points == sum(EXERCISES[e].points for e in EXERCISES_BY_NOTEBOOK[name])


@pytest.mark.parametrize("name", sorted(TIME_AND_POINTS))
def test_each_exercise_intro_says_its_minutes_and_points_and_links_to_an_existing_lesson(name):
    minutes, points = TIME_AND_POINTS[name]
    intro = nbformat.read(ROOT / "exercises" / f"{name}.ipynb", as_version=4).cells[0]
    assert intro.cell_type == "markdown"
    assert f"**About {minutes} minutes · {points} points.**" in intro.source
    assert f"({points} points)" in intro.source.splitlines()[0]
    links = re.findall(r"\]\((\.\./notebooks/[^)#]+\.ipynb)\)", intro.source)
    assert links, "the intro links back to no lesson notebook"
    for link in links:
        assert (ROOT / "exercises" / link).resolve().is_file(), link


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_check_cells_end_with_a_semicolon_so_the_result_is_shown_once(folder):
    for path in sorted((ROOT / folder).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        checks = [c for c in nb.cells if c.cell_type == "code" and "check(" in c.source]
        assert checks, path.name
        for cell in checks:
            assert cell.source.rstrip().endswith(";"), f"{path.name}: {cell.source!r}"
            assert not [o for o in cell.get("outputs", []) if o.output_type == "execute_result"]
