"""Figures: fixed sizes, labelled axes with units, the right marks (lessonkit.lab.plots)."""

from __future__ import annotations

import numpy as np
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


def _pixels(png: bytes):
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_timeline_frame_with_the_moved_marker_equals_a_full_redraw_away_from_the_marker():
    # Only the stacking differs: the frame draws the marker on top of the "total" label.
    frames = plots.TimelinePlot(lesson01.timeline_view(400))
    moved = _pixels(frames.png_at(500))
    ax = frames.figure.axes[0]
    marker = next(line for line in ax.lines if line.get_gid() == "timeline-now")
    marker.set_animated(False)
    marker.set_xdata([500, 500])
    frames.figure.canvas.draw()
    full = np.asarray(frames.figure.canvas.buffer_rgba())
    assert moved.shape == full.shape
    marker_column = ax.transData.transform((500, 0))[0]
    differing_columns = np.nonzero((moved != full).any(axis=(0, 2)))[0]
    assert all(abs(column - marker_column) <= 2 for column in differing_columns)


def test_timeline_frames_differ_when_t_moves_and_repeat_when_it_does_not():
    frames = plots.TimelinePlot(lesson01.timeline_view(400))
    assert frames.png_at(300) != frames.png_at(450)
    assert frames.png_at(300) == frames.png_at(300)


def test_moving_the_timeline_marker_does_not_redraw_the_whole_figure(monkeypatch):
    frames = plots.TimelinePlot(lesson01.timeline_view(400))

    def no_full_draw(*args, **kwargs):
        raise AssertionError("png_at drew the whole figure")

    monkeypatch.setattr(frames.figure.canvas, "draw", no_full_draw)
    assert frames.png_at(480)[:4] == b"\x89PNG"


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
