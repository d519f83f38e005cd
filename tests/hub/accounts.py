"""Learners as real Unix users for the classroom test: made for one run, removed after it.

``make(roles, run_id)`` creates one account per role ("alice", "bob") with a name of its
own (``lk-alice-3f9a2c``: never an account that exists, nor another run's), a home made by
``useradd -m`` and then set to 0700 (Debian's useradd makes 0755 homes), and a GECOS field
saying which test run made it. ``remove(accounts)`` stops what still runs as those users
(by pid), deletes each account with its home, and returns what it could not undo.

A run that is killed before its teardown leaves its accounts behind, and the hub it
started: ``sweep()`` finds the accounts of earlier runs whose test process is gone, stops
the processes that carry such a run's marker (hubdriver.RUN_MARKER) or run as its users,
each by pid, and removes the accounts, their homes and the run's temporary folders
(``folder(kind)`` names them after the test process).
Everything here needs root; ``not_root()`` says so, and what to do, in a sentence.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

MARK = "lessonkit hub test"  # GECOS: "lessonkit hub test, pid 123, run <hex>"


@dataclass(frozen=True)
class Account:
    """One learner's Unix account: the role the tests know it by, its name, ids and home."""

    role: str
    name: str
    uid: int
    gid: int
    home: Path


def not_root() -> str | None:
    """Return why this process cannot make Unix users (None when it is root)."""
    if os.geteuid() == 0:
        return None
    return (
        "The hub test runs each learner as a Unix user of their own (JupyterHub's "
        "LocalProcessSpawner), which only root can create and switch to; this run is "
        f"user id {os.geteuid()}. Run `make hub` (or `make test`) as root, as CI does, "
        "e.g. in a throwaway container or VM: sudo make hub."
    )


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    """Run useradd or userdel; again while another one holds the account files' lock."""
    for _ in range(100):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if "lock" not in done.stderr:  # "cannot lock /etc/passwd; try again later."
            return done
        time.sleep(0.1)  # the poll interval: the other holds the lock for milliseconds
    return done


def make(roles: tuple[str, ...], run_id: str) -> dict[str, Account]:
    """Create one account per role; return them by role (none are left if one fails)."""
    made: dict[str, Account] = {}
    try:
        for role in roles:
            name = f"lk-{role}-{secrets.token_hex(3)}"
            comment = f"{MARK}, pid {os.getpid()}, run {run_id}"
            done = _run("useradd", "--create-home", "--no-log-init", "--shell", "/bin/bash",
                        "--comment", comment, name)  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"useradd {name} failed: {done.stderr.strip()}")
            entry = pwd.getpwnam(name)
            home = Path(entry.pw_dir)
            made[role] = Account(role, name, entry.pw_uid, entry.pw_gid, home)
            home.chmod(0o700)
        return made
    except BaseException:
        remove(made.values())
        raise


def give(account: Account, path: Path) -> None:
    """Make `path` and everything under it belong to `account`."""
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, account.uid, account.gid, follow_symlinks=False)


def processes_of(uid: int) -> list[psutil.Process]:
    """Return the live processes running as `uid`."""
    found = []
    for process in psutil.process_iter(["uids", "status"]):
        uids = process.info["uids"]
        if uids and uid in (uids.real, uids.effective) and process.info["status"] != "zombie":
            found.append(process)
    return found


def _stop(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=5)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def remove(accounts: Iterable[Account]) -> list[str]:
    """Stop the accounts' processes, delete each account and its home; return what is left."""
    left = []
    for account in list(accounts):
        _stop(processes_of(account.uid))
        done = _run("userdel", "--remove", account.name)
        if done.returncode != 0:
            left.append(f"userdel {account.name}: {done.stderr.strip()}")
        if account.home.exists() and account.home.stat().st_uid == account.uid:
            shutil.rmtree(account.home, ignore_errors=True)
        try:
            pwd.getpwnam(account.name)
            left.append(f"the account {account.name} still exists")
        except KeyError:
            pass
        if account.home.exists():
            left.append(f"the home {account.home} still exists")
    return left


def folder(kind: str) -> Path:
    """Make a temporary folder for this run's `kind` ("hub", "share"), mode 0700; sweep()
    removes it if the run is killed."""
    return Path(tempfile.mkdtemp(prefix=f"lessonkit-{kind}-pid{os.getpid()}-"))


def _gone(pid: str) -> bool:
    return pid.isdigit() and not psutil.pid_exists(int(pid))


def sweep(marker: str) -> list[str]:
    """Undo what killed runs left: their processes (found by `marker` in their environment
    or by user), accounts, homes and folders; return what was removed."""
    stale = {}  # account entry -> its run id
    for entry in pwd.getpwall():
        found = re.fullmatch(rf"{MARK}, pid (\d+), run (\w+)", entry.pw_gecos)
        if found and _gone(found.group(1)):
            stale[entry] = found.group(2)
    runs = set(stale.values())
    marked = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get(marker) in runs:
                marked.append(process)
    _stop(marked)
    remove(Account("stale", e.pw_name, e.pw_uid, e.pw_gid, Path(e.pw_dir)) for e in stale)
    folders = [
        path
        for path in Path(tempfile.gettempdir()).glob("lessonkit-*-pid*-*")
        if _gone(path.name.split("-pid", 1)[1].split("-", 1)[0])
    ]
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)
    return [f"pid {p.pid}" for p in marked] + [e.pw_name for e in stale] + [str(p) for p in folders]


def mode(path: Path) -> int:
    """Return the permission bits of `path` (0o700, 0o1733, ...)."""
    return stat.S_IMODE(path.stat().st_mode)
