"""``lessonkit.sse`` as the course contract names it; the code lives in ``lessonkit.core.sse``."""

from lessonkit.core.sse import *  # noqa: F403
from lessonkit.core.sse import __all__  # noqa: F401
