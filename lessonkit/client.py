"""``lessonkit.client`` as the course contract names it; the code lives in ``lessonkit.core.client``."""

from lessonkit.core.client import *  # noqa: F403
from lessonkit.core.client import __all__  # noqa: F401
