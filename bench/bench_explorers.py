"""Benchmark how fast the explorers redraw: their SVG figures in Python, their reactions in a page.

Run: .venv/bin/python bench/bench_explorers.py [--figures-only] [--write-readme]   (about 1 minute)

1. Figures (lessonkit.lab.svg): each live figure drawn at the explorers' largest
   setting (the timeline at 1,000 tokens), median and best of 30 draws; the goal
   is under 5 ms, well within a slider tick.
2. Reactions: the course's own JupyterLab (a private one on a free port, as the
   browser tests start it) in headless Chromium, one notebook with every explorer;
   for each, one uncounted move (it may pay for a first render), then SAMPLES key
   presses or clicks, each timed in the page from the event to the next frame after
   the picture changed (tests/support/explorer_reactions.py); the goal is a median
   under 100 ms.

The tests check only what has no clock in it (the figures' cost grows linearly with
the tokens, every explorer reacts); the times are measured and printed here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the page driver the browser tests use
from explorer_reactions import GOAL_MEDIAN_MS, REACTIONS, moves, reaction_ms  # noqa: E402
from labdriver import (  # noqa: E402
    CHROMIUM_ARGS,
    SCRATCH_ROOT,
    LabServer,
    close_notebook,
    code_cell_indices,
    launch_chromium,
    open_lab,
    open_notebook,
    relative_to_root,
    remove_tree,
    run_all_and_wait,
    snapshot_cells,
    tracebacks,
    wait_for,
    write_scratch_notebook,
)

from lessonkit.core import practice  # noqa: E402
from lessonkit.lab import lesson01, lesson04, svg  # noqa: E402

README = Path(__file__).with_name("README.md")
SECTION = "## Explorers: figures and reactions"
FIGURE_GOAL_MS = 5.0
DRAWS = 30
SAMPLES = 9  # timed moves per explorer


def figure_times() -> list[tuple[str, float, float]]:
    """Return (figure, median ms, best ms) for each live figure at its largest setting."""
    wire = practice.practice_wire()
    figures = {
        "timeline, 1,000 tokens": (
            svg.timeline_svg,
            lesson01.timeline_view(5_000, n_tokens=1000, latency_ms=200),
        ),
        "stop early, 500 tokens": (svg.cancel_svg, lesson01.cancel_view(2000)),
    }
    rows = []
    for name, (draw, view) in figures.items():
        rows.append((name, *_median_best_ms(lambda draw=draw, view=view: draw(view))))
    staircase = lesson04.drop_staircase(wire)
    rows.append(("drop", *_median_best_ms(lambda: svg.drop_svg(staircase, len(wire) // 2))))
    return rows


def _median_best_ms(draw) -> tuple[float, float]:
    draw()  # warm up
    costs = []
    for _ in range(DRAWS):
        started = time.perf_counter()
        draw()
        costs.append((time.perf_counter() - started) * 1000)
    return statistics.median(costs), min(costs)


def reaction_times() -> list[tuple[str, list[float]]]:
    """Return (explorer, sorted reaction ms of SAMPLES moves) for every explorer."""
    from playwright.sync_api import sync_playwright

    SCRATCH_ROOT.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-", dir=SCRATCH_ROOT))
    sources = ["from lessonkit.lab import widgets as lw", *(r.source for r in REACTIONS.values())]
    notebook = write_scratch_notebook(scratch, "explorers.ipynb", sources)
    path = relative_to_root(notebook)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lessonkit-lab-") as home:
        lab = LabServer.start(Path(home))
        try:
            with sync_playwright() as playwright:
                chromium = launch_chromium(playwright, CHROMIUM_ARGS)
                page = chromium.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                open_lab(page, lab)
                open_notebook(page, lab, path)
                cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
                assert not tracebacks(cells), "\n".join(tracebacks(cells))
                wait_for(
                    lambda: all(
                        any(o.widget_views for o in snapshot_cells(page)[i + 1].outputs)
                        for i in range(len(REACTIONS))
                    ),
                    timeout_s=90,
                    what="every explorer to render",
                )
                for i, (name, reaction) in enumerate(REACTIONS.items()):
                    out = page.locator(".jp-Notebook .jp-Cell").nth(i + 1).locator(".jp-OutputArea")
                    target = out.locator(reaction.watched).first
                    warm_up, *timed = moves(out, reaction, SAMPLES + 1)
                    reaction_ms(page, target, warm_up)
                    rows.append((name, sorted(reaction_ms(page, target, act) for act in timed)))
                close_notebook(page, lab, path)
                chromium.close()
        finally:
            lab.stop()
            remove_tree(scratch)
    return rows


def figure_table(rows: list[tuple[str, float, float]]) -> str:
    lines = [
        f"| figure (lessonkit.lab.svg) | median of {DRAWS} (ms) | best (ms) | goal |",
        "|---|---:|---:|---|",
    ]
    for name, median_ms, best_ms in rows:
        verdict = "met" if median_ms < FIGURE_GOAL_MS else "MISSED"
        lines.append(
            f"| {name} | {median_ms:.2f} | {best_ms:.2f} | < {FIGURE_GOAL_MS:g} ms: {verdict} |"
        )
    return "\n".join(lines) + "\n"


def reaction_table(rows: list[tuple[str, list[float]]]) -> str:
    lines = [
        f"| explorer | median of {SAMPLES} (ms) | min | max | goal |",
        "|---|---:|---:|---:|---|",
    ]
    for name, times in rows:
        median_ms = statistics.median(times)
        verdict = "met" if median_ms < GOAL_MEDIAN_MS else "MISSED"
        lines.append(
            f"| {name} | {median_ms:.1f} | {times[0]:.1f} | {times[-1]:.1f}"
            f" | < {GOAL_MEDIAN_MS} ms: {verdict} |"
        )
    return "\n".join(lines) + "\n"


def write_readme(text: str) -> None:
    """Replace (or add) only this benchmark's section of bench/README.md."""
    current = README.read_text() if README.exists() else "# Benchmarks\n"
    start = current.find(SECTION)
    if start == -1:
        current = current.rstrip("\n") + "\n\n" + text
    else:
        end = current.find("\n## ", start + len(SECTION))
        current = current[:start] + text + ("" if end == -1 else current[end:])
    README.write_text(current)


README_TEXT = """\
`.venv/bin/python bench/bench_explorers.py --write-readme` (about 1 minute). Figures: each
live SVG figure at the explorers' largest setting, drawn in Python. Reactions: every explorer
in the course's JupyterLab in headless Chromium, from a key press or click to the next frame
after its picture changed, timed by the page. The tests check only what no clock decides
(the figures' work grows linearly with the tokens, every explorer reacts); these are the times.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures-only", action="store_true", help="skip the browser part")
    parser.add_argument("--write-readme", action="store_true", help="update bench/README.md")
    args = parser.parse_args()
    result = figure_table(figure_times())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    result = (
        f"Python {sys.version.split()[0]}, load average {load} on {os.cpu_count()} cores.\n\n"
        + result
    )
    print(result)
    if not args.figures_only:
        reactions = reaction_table(reaction_times())
        print(reactions)
        result += "\n" + reactions
    if args.write_readme:
        write_readme(f"{SECTION}\n\n" + README_TEXT + "\n" + result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
