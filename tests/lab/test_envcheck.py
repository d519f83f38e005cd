"""The start notebook's set-up check reports versions and shows a widget that responds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonkit.lab.envcheck import PACKAGES, kernel_python, report, slider_text, widget_check


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


def test_the_courses_own_venv_is_named_without_a_path(tmp_path):
    assert kernel_python(str(tmp_path), course_venv=tmp_path, environ={}) == "the course's .venv"


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        (
            {"JUPYTERHUB_SERVICE_PREFIX": "/user/alice/"},
            "this JupyterHub's environment, /opt/conda",
        ),
        (
            {"BINDER_REPO_URL": "https://example.org/r", "JUPYTERHUB_SERVICE_PREFIX": "/u/"},
            "Binder's environment, /opt/conda",
        ),
        ({}, "the environment in /opt/conda"),
    ],
)
def test_another_environment_is_named_for_what_it_is_not_as_a_warning(environ, named):
    text = kernel_python("/opt/conda", course_venv=Path("/nowhere/.venv"), environ=environ)
    assert text == named
    assert "not" not in text.split()
