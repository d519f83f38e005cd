"""``lessonkit.server`` as the course contract names it; the code lives in ``lessonkit.serve``.

with lessonkit.server.running(prefill_ms=300, per_token_ms=40) as url: ...
"""

from lessonkit.serve.app import create_app
from lessonkit.serve.background import BackgroundServer, running, serving
from lessonkit.serve.checks import MAX_BODY_BYTES, MODEL, Settings
from lessonkit.serve.cli import configure_parser, main
from lessonkit.serve.pacing import Stats

__all__ = [
    "MAX_BODY_BYTES",
    "MODEL",
    "BackgroundServer",
    "Settings",
    "Stats",
    "configure_parser",
    "create_app",
    "main",
    "running",
    "serving",
]
