"""The start notebook's set-up check: versions in use and a live widget.

An edge module: it imports ipywidgets and reports on the environment.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

PACKAGES = ["jupyterlab", "ipywidgets", "anywidget", "matplotlib", "starlette", "uvicorn", "httpx"]


COURSE_VENV = Path(__file__).resolve().parents[2] / ".venv"


def kernel_python(
    prefix: str | None = None,
    course_venv: Path = COURSE_VENV,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Return, in words, which Python environment runs this kernel.

    Inside the course's own .venv no path is printed, so a stored output says nothing
    about the machine that ran it. Elsewhere the environment is named for what it is
    (Binder's, a JupyterHub's, or any other) with its folder, the useful part when
    something is missing: none of them is wrong, so nothing here reads as a warning.
    """
    prefix = sys.prefix if prefix is None else prefix
    environ = os.environ if environ is None else environ
    if Path(prefix).resolve() == course_venv.resolve():
        return "the course's .venv"
    if environ.get("BINDER_REPO_URL") or environ.get("BINDER_LAUNCH_HOST"):
        return f"Binder's environment, {prefix}"
    if environ.get("JUPYTERHUB_SERVICE_PREFIX"):
        return f"this JupyterHub's environment, {prefix}"
    return f"the environment in {prefix}"


def report() -> str:
    """Return a short text table of the Python and package versions this kernel uses."""
    lines = [f"{'python':<12} {platform.python_version()}  ({kernel_python()})"]
    for name in PACKAGES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = (
                "MISSING - run `make lab` (or pip install -e .) to install the course; "
                "on a JupyterHub or Binder, tell your instructor"
            )
        lines.append(f"{name:<12} {version}")
    return "\n".join(lines)


def slider_text(value: int) -> str:
    """Return what the check widget prints for a slider value."""
    return f"The slider is at {value}: widgets work." if value else "Move the slider."


def widget_check():
    """Return a slider whose label follows it, proving that widgets render and respond.

    Before its cell runs, the page shows the box's twin: a line saying to run the cell.
    """
    import ipywidgets as widgets

    from lessonkit.lab.binding import Twinned
    from lessonkit.lab.controls import Slider

    slider = Slider(0, 0, 10, description="drag me")  # the course's own: it has a name
    label = widgets.Label(slider_text(slider.value))
    label.add_class("lk-envcheck-readout")

    def on_change(change):
        label.value = slider_text(change["new"])

    slider.observe(on_change, names="value")
    return Twinned(
        [slider, label],
        css_class="lk-envcheck",
        headline="Run this cell: a slider appears, and the text under it follows it.",
        what="If you still see only this box after running the cell, see Troubleshooting in"
        " the learning guide (docs/learning.md).",
    )
