"""Thin ipywidgets front-ends for the explorers: read controls, call a pure function, draw.

The state functions live in lessonkit.explore and lessonkit.timeline.
"""

from __future__ import annotations
