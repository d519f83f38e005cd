"""Figures: fixed sizes, labelled axes with units, the right marks (lessonkit.lab.plots)."""

from __future__ import annotations

from matplotlib.text import Text

from lessonkit.lab import lesson01, plots

# ---------------------------------------------------------------------------
# Lessons 01-02: timeline, cancel, measured vs model, idle silences
# ---------------------------------------------------------------------------


def _texts(fig) -> str:
    """Return every piece of text in a figure (labels, ticks, annotations, legends)."""
    return " ".join(t.get_text() for t in fig.findobj(Text))


def test_timeline_plot_marks_ttft_and_total_with_units():
    fig = plots.plot_timeline(lesson01.timeline_view(400))
    text = _texts(fig)
    assert "TTFT 340 ms" in text and "total 540 ms" in text and "(ms)" in text
    assert tuple(fig.get_size_inches()) == (8, 3.0)


def test_the_timeline_plots_dashed_lines_stop_short_of_their_labels():
    fig = plots.plot_timeline(lesson01.timeline_view(400))
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().startswith(("TTFT", "total"))]
    segments = [seg for coll in ax.collections for seg in getattr(coll, "get_segments", list)()]
    dashed_x = {round(seg[0][0]) for seg in segments if len(seg) == 2 and seg[0][0] == seg[1][0]}
    assert dashed_x >= {340, 540}
    for label in labels:
        x, y = label.get_position()
        for seg in segments:
            (x0, y0), (x1, y1) = seg[0], seg[-1]
            if x0 == x1 == x:
                assert not min(y0, y1) <= y <= max(y0, y1), f"a line crosses {label.get_text()!r}"


def test_timeline_plot_shows_latency_only_when_there_is_some():
    assert "network latency" not in _texts(plots.plot_timeline(lesson01.timeline_view(0)))
    with_latency = plots.plot_timeline(lesson01.timeline_view(0, latency_ms=50))
    assert "network latency" in _texts(with_latency)


def test_cancel_plot_splits_the_answer_into_generated_and_saved():
    fig = plots.plot_cancel(lesson01.cancel_view(2000))
    widths = sorted(p.get_width() for p in fig.axes[0].patches)
    assert widths == [42, 458]


def test_measured_plot_labels_both_axes():
    fig = plots.plot_measured_vs_model([342, 381], 390, [340, 380])
    ax = fig.axes[0]
    assert "(ms)" in ax.get_xlabel() and ax.get_ylabel()


def test_idle_plot_marks_the_cut_of_a_long_silence():
    reports = {
        "blocking": lesson01.idle_report([(80_000, b"{}")], idle_timeout_ms=60_000),
        "streaming": lesson01.idle_report([(t, b"data: x\n\n") for t in range(0, 80_001, 500)],
                                         idle_timeout_ms=60_000),
    }  # fmt: skip
    fig = plots.plot_idle_silences(reports)
    crosses = [line for line in fig.axes[0].lines if line.get_marker() == "X"]
    assert len(crosses) == 1 and list(crosses[0].get_xdata()) == [60.0]
