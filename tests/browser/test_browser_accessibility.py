"""Every lesson's outputs pass axe-core and read at 4.5:1, in the light, dark and high-contrast themes.

Each lesson notebook (found when the tests are collected) is opened as a scratch copy and
run with Run All. Once every widget and figure has rendered, axe-core checks the outputs
against WCAG 2.2 A and AA in each theme: any serious or critical finding fails, and so does
any contrast finding. axe cannot judge text inside an SVG, nor text it finds overlapped (it
reports them "incomplete"), so the test measures each of those texts' colour against what
is painted under it (tests/support/a11y.py) and asks for 4.5:1. The theme changes while the outputs stay: what is measured is
the same page a learner switches to the dark theme.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from a11y import (
    DARK,
    DARK_HIGH_CONTRAST,
    LIGHT,
    MIN_TEXT_CONTRAST,
    Finding,
    axe_findings,
    failing,
    set_theme,
    text_contrasts,
)
from labdriver import (
    PAGE_WAIT_S,
    REPO_ROOT,
    WIDGET_FAILURE_TEXTS,
    LabServer,
    committed_widget_cells,
    notebook_run,
    scratch_copy,
    snapshot_cells,
    tracebacks,
    wait_for,
    widgets_rendered,
)

pytestmark = pytest.mark.browser

LESSONS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
THEMES = (LIGHT, DARK, DARK_HIGH_CONTRAST)
# Tall enough that most outputs fit on screen at once: axe judges only what is on screen.
VIEWPORT = {"width": 1400, "height": 2400}
REPORT = REPO_ROOT / "test-artifacts" / "accessibility"


def all_widgets_rendered(page: Any, cells_with_widgets: list[int]) -> bool:
    """True once each widget cell shows a live view and no widget is loading or failed."""
    cells = snapshot_cells(page)
    if any(text in o.text for c in cells for o in c.outputs for text in WIDGET_FAILURE_TEXTS):
        return False
    return widgets_rendered(page, cells_with_widgets)


# A hang guard, not a verdict: three axe scans of every output took 8-49 s per lesson at a
# load average of 15 here, up to 199 s beside two CPU burners; pytest's default is 300 s.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("notebook", LESSONS, ids=lambda p: p.name)
def test_the_lessons_outputs_pass_axe_and_read_at_4_5_to_1_in_every_theme(
    notebook: Path, lab: LabServer, page: Any, scratch_dir: Path
) -> None:
    copy = scratch_copy(notebook, scratch_dir / "a11y")
    problems: list[str] = []
    report: list[str] = []
    incomplete: list[Finding] = []
    viewport = page.viewport_size
    page.set_viewport_size(VIEWPORT)
    try:
        with notebook_run(page, lab, copy) as cells:
            assert not tracebacks(cells), "\n".join(tracebacks(cells))
            wanted = committed_widget_cells(notebook)
            wait_for(
                lambda: all_widgets_rendered(page, wanted),
                timeout_s=2 * PAGE_WAIT_S,
                what="every widget to render",
            )
            for theme in THEMES:
                set_theme(page, theme)
                violations, incomplete = axe_findings(page)
                undecided = [t for v in incomplete if v.rule == "color-contrast" for t in v.targets]
                contrasts = text_contrasts(page, also=tuple(undecided))
                low = [c for c in contrasts if c.ratio < MIN_TEXT_CONTRAST]
                problems += [f"{theme}: axe {v.line()}" for v in failing(violations)]
                problems += [
                    f"{theme}: text {c.text[:60]!r} is {c.colour} on {c.background}: {c.ratio}:1"
                    for c in low
                ]
                lowest = min((c.ratio for c in contrasts), default=None)
                report.append(
                    f"{theme}: {sum(len(v.targets) for v in failing(violations))} failing nodes"
                    f" ({', '.join(sorted({v.rule for v in failing(violations)})) or 'none'}),"
                    f" {sum(len(v.targets) for v in violations)} nodes with any finding,"
                    f" {sum(len(v.targets) for v in incomplete)} incomplete"
                    f" ({', '.join(sorted({v.rule for v in incomplete})) or 'none'});"
                    f" {len(contrasts)} texts measured here (SVG, and what axe left incomplete),"
                    f" {len(low)} under {MIN_TEXT_CONTRAST}:1,"
                    f" lowest {lowest}:1"
                )
    finally:
        set_theme(page, LIGHT)
        page.set_viewport_size(viewport)
        REPORT.mkdir(parents=True, exist_ok=True)
        (REPORT / f"{notebook.stem}.txt").write_text("\n".join(report + problems) + "\n")
        incomplete_lines = [f"  incomplete: {v.line()} -- {v.summary[:300]}" for v in incomplete]
        with (REPORT / f"{notebook.stem}.txt").open("a") as out:
            out.write("\n".join(incomplete_lines) + "\n")
    assert not problems, f"{len(problems)} accessibility problems:\n" + "\n".join(problems)
