"""One description per static figure (lessonkit.lab.figures), drawn by matplotlib and as SVG.

For each figure the notebooks show: the matplotlib Figure and the SVG come from the same
description (the same series, labels and numbers), its words state the description's
numbers, and the SVG is well-formed, titled and coloured by the theme. show() draws the
matplotlib figure in a helper process, the same PNG as drawn in the kernel (where no process
can start, it draws in the kernel); where matplotlib cannot be imported it draws the SVG and
never tries matplotlib.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from matplotlib.text import Text

from lessonkit.core import llm, practice
from lessonkit.lab import figures, lesson01, lesson03, lesson04, plots, svg, views

NS = "{http://www.w3.org/2000/svg}"
WIRE = practice.practice_wire()


def _idle_reports():
    long = llm.long_answer(2_000)
    quick = llm.answer_for(llm.RUNNING_PROMPT)
    timeout = {"idle_timeout_ms": 60_000}
    return {
        "blocking": lesson01.idle_report([llm.blocking_body(long, "lesson")], **timeout),
        "streaming": lesson01.idle_report(llm.stream_writes(long, "lesson"), **timeout),
        "75 s of thinking": lesson01.idle_report(
            llm.stream_writes(
                quick, "lesson", timing=llm.Timing(prefill_ms=75_000), heartbeat_ms=15_000
            ),
            **timeout,
        ),
    }


def _cut_verdicts():
    sizes = list(range(1, 21))
    cut_rows = {n: lesson03.every_cut_verdicts(r, WIRE) for n, r in lesson03.READERS.items()}
    size_rows = {
        n: lesson03.chunk_size_verdicts(r, WIRE, sizes) for n, r in lesson03.READERS.items()
    }
    return figures.cut_verdicts(cut_rows, size_rows, sizes)


DESCRIPTIONS = {
    "measured_vs_model": lambda: figures.measured_vs_model(
        [342, 381, 421], 430, [340, 380, 420], title="Measured here"
    ),
    "arrival_curves": lambda: figures.arrival_curves(
        {"no buffering": [(120, 40), (160, 38), (200, 41)], "buffering proxy": [(420, 119)]},
        title="Simulated", x_max_ms=700,
    ),
    "drop_staircase": lambda: figures.drop_staircase(lesson04.drop_staircase(WIRE), mark_bytes=70),
    "idle_silences": lambda: figures.idle_silences(_idle_reports()),
    "cut_verdicts": _cut_verdicts,
}  # fmt: skip


@pytest.fixture(params=list(DESCRIPTIONS))
def description(request):
    return DESCRIPTIONS[request.param]()


def _legend_labels(fig) -> list[str]:
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def _svg_texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_every_figures_svg_is_well_formed_with_its_words_as_title_and_aria_label(description):
    markup = svg.figure_svg(description)
    root = ET.fromstring(markup)
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    assert root.find(f"{NS}title").text == description.text
    assert root.get("aria-label") == description.text
    assert ' id="' not in markup and isinstance(markup, views.Html)


def test_every_figures_svg_is_coloured_by_jupyterlab_theme_variables_only(description):
    markup = svg.figure_svg(description)
    assert not re.search(r' (?:fill|stroke)="', markup), "an SVG attribute cannot read the theme"
    colours = set(re.findall(r"(?:fill|stroke):(var\([^)]*\)\)|[^;\"]+)", markup)) - {"none"}
    assert colours and colours <= set(views.THEME.values()), colours - set(views.THEME.values())


def test_both_drawings_of_a_step_chart_have_its_series_labels_and_points():
    for name in ("measured_vs_model", "arrival_curves", "drop_staircase"):
        chart = DESCRIPTIONS[name]()
        labels = [line.label for line in chart.lines] + [r.label for r in chart.rules if r.label]
        fig = plots.draw(chart)
        assert _legend_labels(fig) == labels
        steps = [line for line in fig.axes[0].lines if line.get_drawstyle() == "steps-post"]
        assert [list(zip(s.get_xdata(), s.get_ydata(), strict=True)) for s in steps] == [
            list(line.points) for line in chart.lines
        ]
        root = ET.fromstring(svg.figure_svg(chart))
        paths = [p for p in root.iter(f"{NS}path") if p.get("class") == "lk-series"]
        assert len(paths) == len(chart.lines)
        for path, line in zip(paths, chart.lines, strict=True):
            assert path.get("d").count("V") == len(line.points) - 1  # one step per point
        texts = _svg_texts(root)
        assert all(label in texts for label in labels)
        for label in (chart.title, chart.x_label, chart.y_label):
            assert not label or label in texts
            assert not label or label in " ".join(t.get_text() for t in fig.findobj(Text))


def test_both_drawings_of_the_idle_rows_have_the_same_rows_writes_and_cuts():
    chart = DESCRIPTIONS["idle_silences"]()
    fig = plots.draw(chart)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [r.label for r in reversed(chart.rows)]
    crosses = [line for line in ax.lines if line.get_marker() == "X"]
    assert [list(c.get_xdata()) for c in crosses] == [[r.cut_s] for r in chart.rows if r.cut_s]
    root = ET.fromstring(svg.figure_svg(chart))
    cuts = [p for p in root.iter(f"{NS}path") if p.get("class") == "lk-cut"]
    assert len(cuts) == sum(r.cut_s is not None for r in chart.rows) == 1
    beats = [c for c in root.iter(f"{NS}circle")]
    assert len(beats) == sum(len(r.beats_s) for r in chart.rows) + 1  # + the legend's
    assert all(r.label in _svg_texts(root) for r in chart.rows)


def test_both_drawings_of_the_cut_strips_have_each_readers_verdicts():
    chart = DESCRIPTIONS["cut_verdicts"]()
    fig = plots.draw(chart)
    root = ET.fromstring(svg.figure_svg(chart))
    cells = [r for r in root.iter(f"{NS}rect") if (r.get("class") or "").startswith("lk-verdict")]
    for ax, strip in zip(fig.axes, chart.strips, strict=True):
        assert [t.get_text() for t in ax.get_yticklabels()] == [name for name, _ in strip.rows]
        codes = {"ok": 0, "wrong": 1, "error": 2}
        assert ax.images[0].get_array().tolist() == [[codes[v] for v in vs] for _, vs in strip.rows]
    # The SVG merges runs of one verdict: its widths add up to the columns of each verdict.
    svg_cells = sum(float(r.get("width")) for r in cells)
    assert svg_cells == pytest.approx((704 - 160) * len(chart.strips[0].rows) * 2, rel=1e-3)
    kinds = {r.get("class").removeprefix("lk-verdict-") for r in cells}
    assert kinds == {v for s in chart.strips for _, vs in s.rows for v in vs}


def test_each_figures_words_state_its_numbers():
    measured = DESCRIPTIONS["measured_vs_model"]()
    assert (
        "3 pieces from 342 to 421 ms" in measured.text and "everything at 430 ms" in measured.text
    )
    arrivals = DESCRIPTIONS["arrival_curves"]()
    assert "no buffering: 119 bytes in 3 arrivals from 120 to 200 ms" in arrivals.text
    assert "buffering proxy: 119 bytes in 1 arrivals at 420 ms" in arrivals.text
    for line in arrivals.lines:
        assert f"{line.points[-1][1]:,.0f} bytes" in arrivals.text
    drop = DESCRIPTIONS["drop_staircase"]()
    steps = [int(x) for x, _ in drop.lines[0].points[1:-1]]
    assert f"grows only at bytes {', '.join(map(str, steps))} " in drop.text
    assert f"leaves {drop.rules[-1].y_dot:.0f} characters" in drop.text
    idle = DESCRIPTIONS["idle_silences"]()
    assert "blocking: longest silence" in idle.text and "cut by the proxy at 60 s" in idle.text
    cuts = DESCRIPTIONS["cut_verdicts"]()
    for name, verdicts in cuts.strips[0].rows:
        assert f"{name}: right at {verdicts.count('ok')} of {len(verdicts)}" in cuts.text


def test_the_text_functions_are_the_descriptions_words():
    reports = _idle_reports()
    assert plots.idle_silences_text(reports) == figures.idle_silences(reports).text
    series = {"a": [(10.0, 5)], "b": [(20.0, 7)]}
    assert (
        plots.arrival_curves_text(series, title="t")
        == figures.arrival_curves(series, title="t").text
    )
    assert (
        plots.measured_vs_model_text([1, 2], 3, [1, 2])
        == figures.measured_vs_model([1, 2], 3, [1, 2]).text
    )


def test_show_draws_matplotlib_where_it_can_be_imported_with_the_same_words(description):
    shown = plots.show(description)
    assert isinstance(shown, plots.Picture) and shown.png.startswith(b"\x89PNG")
    bundle = shown._repr_mimebundle_()
    assert bundle["text/plain"] == description.text
    as_svg = plots.show(description, engine="svg")._repr_mimebundle_()
    assert as_svg["text/plain"] == description.text and "<svg" in as_svg["text/html"]
    assert "image/png" not in as_svg


WITHOUT_MATPLOTLIB = """
import json, sys
class Refuse:  # as in the browser kernel offline: there is no matplotlib to import
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("matplotlib", "numpy"):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Refuse())
from lessonkit.lab import figures, plots
shown = plots.show(figures.arrival_curves({"a": [(10, 5)]}, title="t"))
bundle = shown._repr_mimebundle_()
print(json.dumps({"type": type(shown).__name__, "keys": sorted(bundle),
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "numpy"))}))
"""


def test_without_matplotlib_show_draws_the_svg_and_never_imports_matplotlib():
    run = subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert found == {"type": "SvgPicture", "keys": ["text/html", "text/plain"], "loaded": []}


def test_show_names_the_engines_it_knows():
    with pytest.raises(ValueError, match="'matplotlib', 'svg' or None"):
        plots.show(DESCRIPTIONS["measured_vs_model"](), engine="png")
    with pytest.raises(TypeError, match="lessonkit.lab.figures"):
        svg.figure_svg("a figure")


def test_show_draws_the_same_png_in_its_helper_process_as_drawn_here(description):
    assert plots.show(description).png == plots.png(plots.draw(description), dpi=100)


def test_where_no_process_can_start_show_draws_the_same_png_here(monkeypatch):
    description = DESCRIPTIONS["idle_silences"]()

    def no_processes(*args, **kwargs):
        raise OSError("Resource temporarily unavailable")  # as fork fails at a process limit

    monkeypatch.setattr(plots.subprocess, "run", no_processes)
    assert plots.show(description).png == plots.png(plots.draw(description), dpi=100)


def test_a_failing_helper_raises_with_its_exit_code_and_its_stderr_reaches_the_notebook(
    monkeypatch, capfd
):
    description = DESCRIPTIONS["measured_vs_model"]()
    monkeypatch.setattr(
        plots, "_HELPER", "import sys; sys.stderr.write('no fonts here\\n'); sys.exit(3)"
    )
    with pytest.raises(RuntimeError, match="exited 3"):
        plots.show(description)
    assert "no fonts here" in capfd.readouterr().err
