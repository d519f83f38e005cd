"""Every pytest run of the course keeps its checks out of a learner's progress record.

The tests and the instructors' `pytest --nbval notebooks solutions` run check() cells;
each check() records its outcome (lessonkit.course.record). Pointed here at a folder of
the run's own, that record never lands in the course folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile

RECORD_DIR_ENV = "LESSONKIT_RECORD_DIR"  # lessonkit.course.record.RECORD_DIR_ENV


def pytest_configure(config):
    if os.environ.get(RECORD_DIR_ENV):
        return
    folder = tempfile.mkdtemp(prefix="lessonkit-record-")
    os.environ[RECORD_DIR_ENV] = folder  # the kernels and servers the tests start inherit it
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
