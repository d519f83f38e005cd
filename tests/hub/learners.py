"""The classroom test's learners as tests meet them, and the folder they all share.

``Share``: the 0755 folder outside /root that every learner reaches (the course's
environment, the class drop box, a read-only shared copy of the course).
``Learner``: one learner's account, Jupyter server and a kernel of their own, in which
``run`` and ``attempt`` execute code as that learner's notebook would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from accounts import Account
from hubdriver import COURSE_FOLDER, JupyterServer


@dataclass(frozen=True)
class Share:
    """The 0755 folder every learner reaches: the course's environment, drop box, shared copy."""

    root: Path

    @property
    def python(self) -> Path:
        """The course environment's Python (hub, servers and kernels)."""
        return self.root / "venv" / "bin" / "python"

    @property
    def dropbox(self) -> Path:
        """The class drop box, mode 1733, root's."""
        return self.root / "dropbox"

    @property
    def shared_course(self) -> Path:
        """A copy of the course every learner may read and nobody but root may write."""
        return self.root / "shared" / COURSE_FOLDER


@dataclass
class Learner:
    """One learner as the tests meet them: account, server and a kernel of their own."""

    role: str
    account: Account
    server: JupyterServer
    kernel_id: str

    @property
    def name(self) -> str:
        """The learner's Unix and hub user name."""
        return self.account.name

    @property
    def course(self) -> Path:
        """The learner's course folder in their home."""
        return self.account.home / COURSE_FOLDER

    def run(self, code: str, *, timeout_s: float = 120) -> str:
        """Run code in the learner's kernel, as their notebook would; return its stdout."""
        with self.server.kernel_client(self.kernel_id) as kernel:
            return kernel.execute(code, timeout_s=timeout_s)

    def attempt(self, expression: str) -> str:
        """Evaluate expression in the learner's kernel: "ok: <value>" or the error it met."""
        code = f"print(attempt(lambda: {expression}))"
        return self.run(code).strip()


# Defined in each learner's kernel: how the learner's own code meets a permission.
ATTEMPT = """
import json, os, pathlib

def attempt(action):
    try:
        return f"ok: {action()}"
    except Exception as error:
        return f"{type(error).__name__}: {error}"
"""
