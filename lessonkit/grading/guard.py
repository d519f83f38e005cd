"""Inside the sandbox, before any learner code: ``child_setup()``, and the flags it reports.

The sandbox (``lessonkit.grading.sandbox``) makes the kernel refuse what a
submission must not do; this module, run first in the sandboxed process,
*names* those attempts so that the grades CSV can flag them:

* ``child_setup()`` puts SIGXFSZ back to its default (Python ignores it, which
  would turn the file size limit into a silent EFBIG) and installs an audit
  hook that reports, on the events pipe the grader passed, attempts the OS
  denies anyway, each as the flag the grades CSV shows (``GUARD_FLAGS``): a
  connection or datagram (network), opening for writing or changing a path
  outside the scratch folder, reading another process's
  ``/proc/<pid>/environ``, signalling another process, starting processes.
  At most five reports of each kind per process, written without blocking.
* ``flags_for_exception`` turns the errors that limits cause (MemoryError,
  EAGAIN on fork...) into the CSV's flags.

Advisory by nature: learner code in the same process can close or flood the
pipe, or act through ctypes. The OS denial holds regardless; a hidden attempt
simply goes unreported.
"""

from __future__ import annotations

import json
import os
import signal
import sys

SCRATCH = "/tmp"  # the writable directory inside the sandbox (also cwd, HOME, TMPDIR)
EVENTS_ENV = "LESSONKIT_SANDBOX_EVENTS_FD"  # tells child_setup where to report
SCRATCH_ENV = "LESSONKIT_SANDBOX_SCRATCH"
READONLY_ENV = "LESSONKIT_SANDBOX_READONLY"  # read-only folders, for child_setup's judgement

# what the hook reports, as the grades CSV's flags (nothing else read from the pipe counts)
GUARD_FLAGS = {"network", "wrote-outside-scratch", "read-other-environ", "kill", "spawn"}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PATH_EVENTS = {  # audit events that change the file at args[0]
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
    "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree",
}  # fmt: skip
_SPAWN_EVENTS = {"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system",
                 "subprocess.Popen"}  # fmt: skip
_WRITABLE = ("/dev/null",)


def flags_for_exception(type_name: str, errno_value: int | None = None) -> list[str]:
    """Return the flags an exception in the child means (MemoryError -> memory-limit...).

    Rlimits make the kernel refuse rather than kill: RLIMIT_AS gives
    MemoryError, RLIMIT_NPROC gives EAGAIN on fork, RLIMIT_FSIZE gives EFBIG
    when SIGXFSZ is ignored, RLIMIT_NOFILE gives EMFILE.
    """
    if type_name == "MemoryError":
        return ["memory-limit"]
    by_errno = {11: "process-limit", 27: "file-size-limit", 24: "open-files-limit"}
    if errno_value in by_errno and type_name in ("BlockingIOError", "OSError", "PermissionError"):
        return [by_errno[errno_value]]
    return []


def child_setup() -> None:
    """Prepare the sandboxed Python process; call it before any learner code.

    Does nothing but the SIGXFSZ reset when the events fd is not set (not
    started by ``sandbox.Sandbox``).
    """
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    try:
        fd = int(os.environ.pop(EVENTS_ENV))
        os.set_blocking(fd, False)  # never block learner code on a full pipe
    except (KeyError, ValueError, OSError):
        return
    scratch = os.path.realpath(os.environ.get(SCRATCH_ENV, SCRATCH))
    shown = [p for p in os.environ.get(READONLY_ENV, "").split(os.pathsep) if p]
    counts: dict[tuple[int, str], int] = {}

    def send(flag: str, detail: object) -> None:
        key = (os.getpid(), flag)  # five per kind in each process (a fork starts afresh)
        if counts.get(key, 0) >= 5:
            return
        counts[key] = counts.get(key, 0) + 1
        line = json.dumps({"flag": flag, "detail": repr(detail)[:200], "pid": os.getpid()})
        try:
            os.write(fd, line.encode() + b"\n")
        except OSError:
            pass

    def outside(path: object) -> bool:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return False  # a file descriptor, or dir_fd-relative: not judged
        real = os.path.realpath(path)
        if real in _WRITABLE:
            return False
        if any(real == p or real.startswith(p + "/") for p in shown):
            return True  # a read-only bind, even inside the scratch folder
        return real != scratch and not real.startswith(scratch + "/")

    def judge(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            text = os.fsdecode(path) if isinstance(path, (str, bytes)) else ""
            if writing and outside(path):
                send("wrote-outside-scratch", path)
            elif text.startswith("/proc/") and text.endswith("/environ"):
                if text not in ("/proc/self/environ", f"/proc/{os.getpid()}/environ"):
                    send("read-other-environ", path)
        elif event in _PATH_EVENTS and args and outside(args[0]):
            send("wrote-outside-scratch", (event, args[0]))
        elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            send("network", args[1] if len(args) > 1 else args)
        elif event in ("os.kill", "os.killpg"):
            if len(args) > 1 and args[0] != os.getpid() and args[1] != 0:
                send("kill", (event, *args))
        elif event in _SPAWN_EVENTS:
            send("spawn", (event, args[0] if args else ""))
        elif event == "os.exec":
            send("spawn", args[0] if args else "")

    busy = [False]

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            judge(event, args)
        except Exception:
            pass  # the hook must never break the learner's code
        finally:
            busy[0] = False

    sys.addaudithook(hook)
