"""The start notebook's set-up check: versions in use and a live widget.

An edge module: it imports ipywidgets and reports on the environment.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

PACKAGES = ["jupyterlab", "ipywidgets", "anywidget", "matplotlib", "starlette", "uvicorn", "httpx"]


def report() -> str:
    """Return a short text table of the Python and package versions this kernel uses."""
    lines = [f"{'python':<12} {platform.python_version()}  ({sys.executable})"]
    for name in PACKAGES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "MISSING - run `make lab` (or pip install -e .) to install the course"
        lines.append(f"{name:<12} {version}")
    return "\n".join(lines)


def slider_text(value: int) -> str:
    """Return what the check widget prints for a slider value."""
    return f"The slider is at {value}: widgets work." if value else "Move the slider."


def widget_check():
    """Return a slider whose label follows it, proving that widgets render and respond."""
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=0, min=0, max=10, description="drag me")
    label = widgets.Label(slider_text(slider.value))
    label.add_class("lk-envcheck-readout")

    def on_change(change):
        label.value = slider_text(change["new"])

    slider.observe(on_change, names="value")
    box = widgets.VBox([slider, label])
    box.add_class("lk-envcheck")
    return box
