"""What a learner runs to open, follow and finish the course, on top of every layer.

    launch      `lessonkit lab`: JupyterLab on lesson 00, its URL printed once it answers
    status      ``progress()`` and `lessonkit progress`: each exercise passed, failing k
                of m, or not started, and what comes next (from ``lessonkit.course.record``)
    handin      ``submit()`` and `lessonkit submit`: save, run each exercise's public
                checks, pack the notebooks into one zip (``lessonkit.course.archive``),
                print its sha256 as the receipt

    from lessonkit.learner import progress, submit

May import: every layer (``lessonkit.grading`` for the public checks, ``lessonkit.lab``
for the views and the hand-in button) and ``lessonkit.course``. No layer imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use: `lessonkit lab` needs neither the grader nor the widgets.
_PUBLIC = {"progress": "lessonkit.learner.status", "submit": "lessonkit.learner.handin"}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Return a public name of the package, importing its module (PEP 562)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'lessonkit.learner' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
