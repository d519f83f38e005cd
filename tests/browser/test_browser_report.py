"""The class report opens in a real browser and shows its figures.

A small class (a learner with full marks, one with typical mistakes, one
whose notebook is missing) is graded with `lessonkit grade --report`; the
page is then opened from disk in headless Chromium, as an instructor would
open it, and each figure must be drawn with a visible size and its bars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from classroom import MISTAKES, solution, with_function, write, write_learner

from lessonkit import cli
from lessonkit.grading import grade
from lessonkit.grading.exercises import EXERCISES

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    folder = tmp / "class"
    write_learner(folder / "alice")
    write_learner(
        folder / "bob",
        {
            "read_stream": with_function(
                solution("read_stream"), "read_stream", MISTAKES["read_stream"]["chunk_is_event"]
            ),
            "response_times": with_function(
                solution("response_times"),
                "response_times",
                MISTAKES["response_times"]["first_is_prefill"],
            ),
        },
    )
    write(folder / "carol", "ex2_read_stream.ipynb", solution("read_stream"))
    report = tmp / "report.html"
    argv = ["grade", str(folder), "--out", str(tmp / "grades.csv"), "--report", str(report)]
    # No notebook here runs long: the limit is only there for a machine busy many times over,
    # where ten seconds for a notebook's code and checks could run out and change the scores.
    argv += ["--seed", "3", "-j", "2", "--timeout", "120"]
    assert grade.main(cli.build_parser("grade").parse_args(argv)) == 0
    return report


def _box(page: Any, selector: str) -> dict:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not drawn"
    return box


def test_the_report_opens_and_draws_each_figure_with_its_bars(browser: Any, report_file: Path):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report_file.as_uri())
        assert page.title() == "Class report: 3 learners"
        for figure in ("#score-distribution", "#exercise-means", "#rules-read_stream"):
            box = _box(page, figure)
            assert box["width"] > 300 and box["height"] > 50, (figure, box)
        assert page.locator("#score-distribution rect.bar").count() == 12
        assert page.locator("#exercise-means rect.bar").count() == len(EXERCISES)
        drawn = page.locator("#score-distribution rect.bar[data-count='1']")
        assert drawn.count() == 3  # 40, 90 and 120 points: one learner each
        assert drawn.first.bounding_box()["height"] > 10
        failing = page.locator("#rules-read_stream rect.bar:not([data-share='0.000'])")
        assert failing.count() >= 1
        reteach = page.locator("#reteach").inner_text()
        assert page.locator("#reteach tr").count() >= 3  # a header, then bob's mistakes
        assert "A chunk is not an event" in reteach and "The prefill pass" in reteach
        assert "Every file handed over was graded." in page.locator("#not-graded").inner_text()
        assert "bob" in page.locator("#learners").inner_text()
        assert errors == []
    finally:
        context.close()
