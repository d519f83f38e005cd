"""The start notebook's set-up check reports versions and shows a widget that responds."""

from __future__ import annotations

from lessonkit.lab.envcheck import PACKAGES, report, slider_text, widget_check


def test_report_names_python_and_every_course_package_with_a_version():
    text = report()
    assert text.startswith("python")
    for name in PACKAGES:
        line = next(line for line in text.splitlines() if line.startswith(name + " "))
        assert "MISSING" not in line and any(ch.isdigit() for ch in line)


def test_moving_the_check_slider_changes_the_label_under_it():
    box = widget_check()
    slider, label = box.children[:2]  # then the box's lifeline
    assert label.value == slider_text(0) == "Move the slider."
    slider.value = 7
    assert label.value == "The slider is at 7: widgets work."
