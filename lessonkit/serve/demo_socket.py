"""Where the browser demo's servers listen: Unix sockets in one private folder per user.

On a JupyterHub whose users share one machine (SimpleLocalProcessSpawner, The Littlest
JupyterHub), every TCP port a kernel opens on 127.0.0.1 can be reached by every other
user's kernel. A Unix socket is a file: in a folder of mode 0700 only its owner (and
root) can connect to it. So the kernel's demo server listens on

    <Jupyter runtime folder>/lessonkit/<name>.sock

and the Jupyter server reaches it through the course's one route
(lessonkit.serve.jupyter_route), which accepts a bare ``name`` and looks only in this
folder of the user it runs as. Both sides find the folder the same way Jupyter finds
its kernels' connection files (``jupyter --runtime-dir``).

Standard library only: the Jupyter server imports this module too.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import stat
from pathlib import Path

__all__ = [
    "FOLDER_NAME",
    "SocketNameError",
    "new_socket_name",
    "socket_folder",
    "is_listening",
    "remove_stale_sockets",
    "socket_path",
]

FOLDER_NAME = "lessonkit"  # short: a socket path holds at most 103 bytes
# A name is what the page puts in its URL: short, and nothing a path could hide in.
NAME = re.compile(r"[a-z0-9]{12}")
# The kernel's sun_path holds 108 bytes on Linux (104 on macOS), the final NUL included.
MAX_SOCKET_PATH_BYTES = 103


class SocketNameError(ValueError):
    """A socket name that is not one this module makes (so it names no file here)."""


def runtime_folder() -> Path:
    """Return Jupyter's runtime folder for this user (where kernel connection files go)."""
    from jupyter_core.paths import jupyter_runtime_dir  # Jupyter's own rule, not a copy

    return Path(jupyter_runtime_dir())


def socket_folder(*, create: bool = False, base: Path | None = None) -> Path:
    """Return this user's demo-socket folder; PermissionError unless it is private.

    With ``create`` the folder is made (mode 0700) when missing. Either way it must
    belong to this user and let nobody else in: a folder others could write to could
    hold a socket they planted.
    """
    folder = (runtime_folder() if base is None else base) / FOLDER_NAME
    if create:
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
    info = folder.lstat()  # lstat: a symlink planted in its place is not followed
    if not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{folder} is not a folder; remove it and run the cell again")
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(
            f"{folder} must belong to you with mode 0700 (it is "
            f"{stat.filemode(info.st_mode)}, owner uid {info.st_uid}): "
            f"run `chmod 700 {folder}` or remove it"
        )
    return folder


def new_socket_name() -> str:
    """Return a fresh random name for a demo socket (12 lowercase letters and digits)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(12))


def socket_path(name: str, *, base: Path | None = None, create: bool = False) -> Path:
    """Return the path of socket `name` in this user's folder; SocketNameError for a bad name.

    Only names made by new_socket_name() pass: no slash, no dot, no "..", so a name can
    never point outside the folder.
    """
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SocketNameError(
            f"a demo socket name is 12 lowercase letters and digits, got {name!r}"
        )
    path = socket_folder(create=create, base=base) / f"{name}.sock"
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise OSError(
            errno.ENAMETOOLONG,
            f"the socket path {path} is longer than a Unix socket allows "
            f"({MAX_SOCKET_PATH_BYTES} bytes): set JUPYTER_RUNTIME_DIR to a shorter folder",
        )
    return path


def is_listening(path: Path) -> bool:
    """True if a server accepts connections on the Unix socket at `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(os.fspath(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def remove_stale_sockets(folder: Path) -> list[str]:
    """Remove socket files nobody listens on any more (a killed kernel's); return their names."""
    removed = []
    for path in folder.glob("*.sock"):
        try:
            if stat.S_ISSOCK(path.lstat().st_mode) and not is_listening(path):
                path.unlink()
                removed.append(path.stem)
        except FileNotFoundError:  # another kernel removed it first
            pass
    return removed
