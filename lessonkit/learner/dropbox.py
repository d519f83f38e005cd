"""The class drop box on a hub: one folder where every learner's ``submit()`` leaves a copy.

The hub's admin names the folder with ``$LESSONKIT_DROPBOX`` (``c.Spawner.environment``)
and makes it once, as root, with mode 1733: every learner may create a file in it, none
may list it, and the sticky bit (the 1) lets only a file's owner rename or remove it.
Each hand-in is ``<user>.zip``, mode 0600, owned by the learner who wrote it, so only that
learner and root can read it, and only that learner can replace it.

``put`` writes there only what such a folder keeps safe. It refuses (``NotDropped``, whose
message says why, in the learner's words):

* a folder that is missing (it is never created here: a learner who made it first would
  own it, and with it every hand-in), that belongs to someone other than root or you, or
  whose mode lets others list it or replace files in it (1777, 0733, ...), or lets a
  group other than root's list it (1773 with a learners' group);
* a ``<user>.zip`` that is already there and is not your own plain file: someone planted
  a file, a link or a folder under your name (the grader flags a file whose owner is not
  the user it is named for);
* a user name that is not one plain file name.

The name is the Unix user's (from the process's user id); ``$JUPYTERHUB_USER`` names the
hand-in only when it is no Unix user's name: on a shared account, or on a hub that runs hub
user alice as Unix user ``jupyter-alice`` (the grader checks that the file's owner is
alice's account, see lessonkit.grading.roster).

The bytes go to a temporary file of a random name first (created, never opened if it
exists, never through a link), then are renamed onto ``<user>.zip``: the drop box holds
either the old hand-in or the new one, whole.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import stat
from pathlib import Path

__all__ = ["DROPBOX_ENV", "NotDropped", "dropbox_user", "put"]

DROPBOX_ENV = "LESSONKIT_DROPBOX"
MAKE_IT = "sudo install -d -m 1733 -o root -g root {box}"  # the admin's one command
USER_NAME = re.compile(r"[\w@+-][\w.@+-]{0,127}")  # Unix and hub names; no '/', no leading '.'


class NotDropped(Exception):
    """The hand-in was not put in the drop box; the message says why, for the learner."""


def _unix_user() -> str:
    """The name of the Unix user this process runs as (from its user id, not from $USER)."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):  # no passwd entry (a container's bare uid), or not Unix
        return getpass.getuser()


def _is_unix_user(name: str) -> bool:
    import pwd  # Unix only, as drop boxes are

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def dropbox_user() -> str:
    """Return whose hand-in this is: the Unix user, or, on a shared Unix account (every
    learner the same user, as in a container), the hub's user name, ``$JUPYTERHUB_USER``.
    Never another Unix user's name: that would be claiming their hand-in."""
    unix_user = _unix_user()
    hub_user = os.environ.get("JUPYTERHUB_USER", "")
    if not hub_user or hub_user == unix_user or _is_unix_user(hub_user):
        return unix_user
    return hub_user


def _owner(uid: int) -> str:
    import pwd  # Unix only, as drop boxes are

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"


def _unsafe(box: Path) -> str | None:
    """Return why hand-ins would not be safe in `box`, or None when they would be."""
    try:
        info = box.stat()
    except OSError as error:
        return f"it cannot be used: {error.strerror or error}"
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    if info.st_uid not in (0, os.geteuid()):
        return f"it belongs to {_owner(info.st_uid)}, not to root, who should have made it"
    if mode & stat.S_IROTH:
        return f"its mode {mode:o} lets every user list it"
    if mode & stat.S_IRGRP and info.st_gid != 0:
        return f"its mode {mode:o} lets its group (group id {info.st_gid}) list it"
    if mode & (stat.S_IWOTH | stat.S_IWGRP) and not mode & stat.S_ISVTX:
        return f"its mode {mode:o} lets other users replace the files in it"
    return None


def _not_mine(target: Path) -> str | None:
    """Return what stands at `target` if it is not the learner's own plain file, else None."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return None
    if info.st_uid != os.geteuid():
        return f"{target.name} is already there and belongs to {_owner(info.st_uid)}"
    if not stat.S_ISREG(info.st_mode):
        return f"{target.name} is already there and is not a plain file"
    return None


def put(box: Path, user: str, data: bytes) -> Path:
    """Write `data` into the drop box `box` as ``<user>.zip`` (mode 0600); return its path.

    Raises NotDropped, with the reason, when the folder or the name is not safe to use;
    OSError when writing fails.
    """
    if not USER_NAME.fullmatch(user):
        raise NotDropped(f"the user name {user!r} cannot name a file")
    problem = _unsafe(box)
    if problem:
        raise NotDropped(f"{problem}; your instructor can make it with: {MAKE_IT.format(box=box)}")
    target = box / f"{user}.zip"
    squatted = _not_mine(target)
    if squatted:
        raise NotDropped(f"{squatted}: someone may have put a file there under your name")
    temporary = box / f".{target.name}.{secrets.token_hex(8)}.part"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)  # in a 1733 folder, only onto a file of your own
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target
