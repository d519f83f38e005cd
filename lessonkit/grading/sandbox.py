"""Run one learner's grading child sandboxed: namespaces from bubblewrap, limits from rlimits.

Standard library only. The grader never runs learner code; it starts each
learner's child as::

    bwrap <namespaces, read-only view, tmpfs scratch>  [setpriv --reuid N]  prlimit <limits>  python ...

and talks to it over the pipes it passes as stdin/stdout. What the child gets:

* its own mount, PID, network, IPC, UTS and cgroup namespaces; a user
  namespace too when the grader is not root (``bwrap --unshare-user
  --disable-userns``, learner code is uid 65534 inside);
* a root file system that is an empty read-only tmpfs holding only /usr (and
  the /bin, /lib... links), a few files of /etc, the Python installation (venv
  + the base interpreter it links to) and the course package, all bound
  read-only at their host paths; a fresh /proc showing only its own
  processes; a minimal /dev. Not the submissions, not the grades, not $HOME;
* a private writable scratch: a size-limited tmpfs at ``/tmp`` (cwd, HOME and
  TMPDIR), gone when the sandbox ends;
* no network: a network namespace with only its own loopback, so the host's
  listeners (127.0.0.1 included) are out of reach;
* an environment made only of what the caller passes (``--clearenv``); bwrap
  itself starts with an empty environment, so not even the sandbox's init
  (pid 1, visible inside) holds the grader's variables;
* rlimits set before the interpreter starts (``prlimit``): address space, CPU
  seconds, file size, processes, open files, no core dumps;
* when the grader is root: learner code runs as a spare unprivileged uid
  (``setpriv``), because RLIMIT_NPROC is never enforced for uid 0;
* when the sandbox's main process ends, the kernel kills everything left in
  its PID namespace (``Sandbox.wait`` returns only once it is empty); when the
  grader dies, ``--die-with-parent`` takes the sandbox with it.

What the grader learns comes back in a ``Report``: how the child ended
(``status``) and what it tried (``flags``). Exit codes and signals come from
the kernel; events such as "connected to a socket" come from the audit hook
``lessonkit.grading.guard`` installs before any learner code (advisory: the OS
denies those actions whatever the hook reports).

Where no sandbox can be had (not Linux, no bwrap, user namespaces disabled),
``detect`` says why in one line; a ``Sandbox`` given that support (or
``NO_SANDBOX``) runs the command with the rlimits alone. The caller probes
once (``detect()``) and passes the support to every ``Sandbox``.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lessonkit.grading.guard import (
    EVENTS_ENV,
    GUARD_FLAGS,
    READONLY_ENV,
    SCRATCH,
    SCRATCH_ENV,
)

SANDBOX_UID = 65534  # learner code's uid inside a user namespace ("nobody")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox; every field says its unit.

    memory_bytes, cpu_s, file_bytes and open_files are rlimits of *each*
    process (RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE), so the worst
    case for the whole sandbox is ``processes`` times as much. ``processes``
    (RLIMIT_NPROC) counts processes and threads of the sandbox's uid: per
    sandbox in a user namespace, per spare uid as root. ``scratch_bytes`` is
    the size of the tmpfs at /tmp.
    """

    memory_bytes: int = 1 << 30
    cpu_s: int = 60
    file_bytes: int = 64 << 20
    processes: int = 64
    open_files: int = 256
    scratch_bytes: int = 64 << 20

    def rlimits(self) -> dict[str, tuple[int, int]]:
        """Return (soft, hard) per rlimit: soft = hard, but CPU (SIGXCPU a second before SIGKILL)."""
        return {
            "RLIMIT_AS": (self.memory_bytes, self.memory_bytes),
            "RLIMIT_CPU": (self.cpu_s, self.cpu_s + 1),
            "RLIMIT_FSIZE": (self.file_bytes, self.file_bytes),
            "RLIMIT_NPROC": (self.processes, self.processes),
            "RLIMIT_NOFILE": (self.open_files, self.open_files),
            "RLIMIT_CORE": (0, 0),  # a core_pattern pipe would run on the host
        }

    def prlimit_args(self) -> list[str]:
        """Return the ``prlimit`` options that set these limits (RLIMIT_AS is ``--as``...)."""
        return [
            f"--{name.removeprefix('RLIMIT_').lower()}={soft}:{hard}"
            for name, (soft, hard) in self.rlimits().items()
        ]


@dataclass(frozen=True)
class SandboxSupport:
    """What this machine allows, from ``detect``.

    mode: "user" (bwrap in an unprivileged user namespace), "root" (bwrap run
    by root; learner code as a spare uid via setpriv) or "none".
    reason: one line for the grader to print.
    """

    available: bool
    mode: str
    reason: str
    bwrap: str = ""
    prlimit: str = ""
    setpriv: str = ""


NO_SANDBOX = SandboxSupport(False, "none", "sandbox turned off: resource limits only")


def detect() -> SandboxSupport:
    """Return what sandbox this machine allows (a probe: call it once and pass the result on).

    The probe runs ``true`` in the very sandbox ``Sandbox`` builds, so a
    kernel, container or AppArmor policy that forbids user or mount namespaces
    shows up here as ``available=False`` with bwrap's own message.
    """
    if not sys.platform.startswith("linux"):
        return SandboxSupport(False, "none", f"no sandbox on {sys.platform}: resource limits only")
    bwrap = shutil.which("bwrap") or ""
    prlimit = shutil.which("prlimit") or ""
    setpriv = shutil.which("setpriv") or ""
    root = os.geteuid() == 0
    if not bwrap:
        return SandboxSupport(
            False, "none", "no sandbox: bubblewrap is not installed (apt-get install bubblewrap)"
        )
    if not prlimit or (root and not setpriv):
        return SandboxSupport(False, "none", "no sandbox: prlimit/setpriv (util-linux) not found")
    support = SandboxSupport(True, "root" if root else "user", "", bwrap, prlimit, setpriv)
    true = shutil.which("true") or "/bin/true"
    argv = _bwrap_argv(support, [true], readonly_paths=(), limits=Limits(), env={})
    try:
        done = subprocess.run(argv, env={}, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxSupport(False, "none", f"no sandbox: bwrap could not run ({exc})")
    if done.returncode != 0:
        message = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        hint = "" if root else " (unprivileged user namespaces disabled?)"
        return SandboxSupport(False, "none", f"no sandbox: {message}{hint}")
    if root:
        reason = "sandbox: bubblewrap as root, learner code as a spare unprivileged uid"
    else:
        reason = f"sandbox: bubblewrap in a user namespace, learner code as uid {SANDBOX_UID}"
    return SandboxSupport(True, support.mode, reason, bwrap, prlimit, setpriv)


# ---------------------------------------------------------------------------
# Building the command


def python_paths() -> list[str]:
    """Return the folders the running interpreter needs: venv, base install, their real paths."""
    found = set()
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        found.add(os.path.abspath(path))
        found.add(os.path.realpath(path))
    found.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    return sorted(p for p in found if os.path.isdir(p) and p != "/")


# /etc entries a Python process may read; nothing else of /etc is shown
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/fonts")


def spare_uid(slot: int) -> int:
    """Return an unused uid for learner code when the grader is root.

    RLIMIT_NPROC is not enforced for processes whose real uid is 0, and it
    counts every process of a uid in the initial user namespace. So each
    sandbox started by root runs as a uid from a range no account uses (above
    the subuid and systemd-nspawn ranges): distinct per grader process (pid)
    and per ``slot`` (the caller's number for the learner), so sandboxes that
    run at the same time never share a count.
    """
    return 2_000_000_000 + (os.getpid() % 4096) * 4096 + slot % 4096


def _system_binds() -> list[str]:
    """Return bwrap options for /usr, the merged-/usr links and a few /etc files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC_FILES:
        args += ["--ro-bind-try", name, name]
    return args


def _readonly_binds(paths: Iterable[str]) -> list[str]:
    """Return bwrap options binding each path read-only at its own place.

    Their parent folders are made first with mode 0755: bwrap would make them
    0700 (owned by root), which the spare uid could not cross.
    """
    args: list[str] = []
    made: set[str] = set()
    for path in sorted({os.path.abspath(p) for p in paths}):
        if path == "/usr" or path.startswith("/usr/"):
            continue  # already there, read-only
        parents = []
        parent = os.path.dirname(path)
        while parent not in ("/", "") and parent not in made:
            parents.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(parents):
            args += ["--perms", "0755", "--dir", folder]
            made.add(folder)
        args += ["--ro-bind", path, path]
        made.add(path)
    return args


def _bwrap_argv(
    support: SandboxSupport,
    argv: Sequence[str],
    *,
    readonly_paths: Iterable[str],
    limits: Limits,
    env: Mapping[str, str],
    status_fd: int | None = None,
    slot: int = 0,
) -> list[str]:
    """Return the full bwrap command line running ``argv`` (host paths) sandboxed."""
    readonly_paths = list(readonly_paths)
    args = [support.bwrap]
    if support.mode == "user":
        # a user namespace of our own; no further namespaces can be made inside
        args += ["--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID)]
        args += ["--gid", str(SANDBOX_UID)]
    else:
        # root makes the namespaces without a user namespace and keeps only the
        # capabilities setpriv needs to become the spare uid (which drops them)
        args += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
            args += ["--cap-add", cap]
    args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    args += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    args += ["--die-with-parent", "--new-session"]  # new session: no TIOCSTI into a terminal
    args += _system_binds()
    # scratch before the read-only binds, so that a course under /tmp (a test's
    # temp folder) is still shown, read-only, inside the scratch tmpfs
    args += ["--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
    args += _readonly_binds(readonly_paths)
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", SCRATCH, "--clearenv"]
    shown = os.pathsep.join(sorted({os.path.abspath(p) for p in readonly_paths}))
    for key, value in {**_sandbox_env(env, SCRATCH), READONLY_ENV: shown}.items():
        args += ["--setenv", key, value]
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]
    args.append("--")
    if support.mode == "root":
        uid = spare_uid(slot)
        args += [support.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        args += ["--inh-caps=-all", "--bounding-set=-all", "--"]
    args += [support.prlimit, *limits.prlimit_args(), "--", *argv]
    return args


def _sandbox_env(env: Mapping[str, str], scratch: str) -> dict[str, str]:
    """Return the child's whole environment: a small base plus what the caller gave."""
    base = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        # one thread per numeric library: threads count against `processes`
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        SCRATCH_ENV: scratch,
    }
    return {**base, **env}


# The fallback: a tiny launcher that sets the rlimits it can, then execs argv.
_LAUNCHER = """
import json, os, resource, sys
for name, (soft, hard) in json.loads(sys.argv[1]).items():
    try:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    except (AttributeError, ValueError, OSError):
        pass
os.execv(sys.argv[2], sys.argv[2:])
"""


def _limits_only(argv: Sequence[str], limits: Limits) -> list[str]:
    """Return argv wrapped in a Python launcher that sets the rlimits (no namespaces).

    RLIMIT_NPROC is left out: without a user namespace it counts every process
    of the user (and is not enforced for root), so it cannot bound one
    submission. macOS does not enforce RLIMIT_AS.
    """
    wanted = {k: v for k, v in limits.rlimits().items() if k != "RLIMIT_NPROC"}
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(wanted), *argv]


# ---------------------------------------------------------------------------
# Running it and reporting what happened


SIGNAL_STATUS = {
    signal.SIGXCPU: ("killed: cpu limit", "cpu-limit"),
    signal.SIGXFSZ: ("killed: file size limit", "file-size-limit"),
}


def signal_status(signum: int) -> tuple[str, str | None]:
    """Return (status, flag or None) for a process killed by ``signum``."""
    if signum in SIGNAL_STATUS:
        return SIGNAL_STATUS[signum]
    try:
        return f"killed: {signal.Signals(signum).name}", None
    except ValueError:
        return f"killed: signal {signum}", None


class Ending(enum.Enum):
    """How a sandboxed child ended; Report.status says it in words."""

    OK = "exit status 0"
    EXIT = "another exit status"
    KILLED = "killed by a limit or a signal"
    KILLED_BY_GRADER = "the grader ended it (the notebook was done)"
    SANDBOX_FAILED = "the sandbox could not be set up"


@dataclass(frozen=True)
class Report:
    """How a sandboxed child ended and what it tried, for the grades CSV.

    ending: how it ended, as a type (Ending); status: the same in words:
    "ok" (exit 0), "exit N", "killed: cpu limit" (SIGXCPU), "killed:
    file size limit" (SIGXFSZ), "killed by the grader" (its time was up, or
    it was done), "killed: SIGKILL" (the CPU hard limit
    after an ignored SIGXCPU, the OOM killer, or itself), or "sandbox failed:
    <bwrap's message>" when the sandbox could not be set up.
    flags: sorted, e.g. ("kill", "network", "wrote-outside-scratch"), from
    the kernel's verdict and what the child's guard reported (advisory).
    leftover_pids: host pids still in the PID namespace 5 s after its end,
    despite SIGKILL (none expected).
    """

    ending: Ending
    status: str
    flags: tuple[str, ...]
    exit_code: int | None
    leftover_pids: tuple[int, ...] = ()


class Sandbox:
    """A sandboxed child process: Popen plus a Report when it ends.

    ``Sandbox(argv, stdin=fd, stdout=fd, ...)``; talk over the pipes, then
    ``report = box.wait()``. ``kill()`` ends it at once (everything inside dies
    with it): the caller's clock decides when. One
    Sandbox per thread is safe (``grade -j N``). ``support`` is what
    ``detect()`` found (probed here when not given); ``NO_SANDBOX`` runs with
    the limits only. ``slot`` tells sandboxes that run at the same time apart.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        readonly_paths: Iterable[str] = (),
        limits: Limits = Limits(),
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.DEVNULL,
        support: SandboxSupport | None = None,
        slot: int = 0,
    ) -> None:
        support = support if support is not None else detect()
        self.support = support
        self.limits = limits
        self._killed_by_grader = False
        self._report: Report | None = None
        self._stderr = tempfile.TemporaryFile()
        self._events_read, events_write = os.pipe()
        child_env = {**(env or {}), EVENTS_ENV: str(events_write)}
        pass_fds = [events_write]
        self._status_read = -1
        self._workdir = ""  # the fallback's scratch folder (the sandbox's is a tmpfs)
        if support.available:
            self._status_read, status_write = os.pipe()
            pass_fds.append(status_write)
            full = _bwrap_argv(
                support,
                argv,
                readonly_paths=readonly_paths,
                limits=limits,
                env=child_env,
                status_fd=status_write,
                slot=slot,
            )
            popen_env: dict[str, str] = {}  # bwrap's pid 1 is visible inside: give it nothing
        else:
            self._workdir = tempfile.mkdtemp(prefix="lessonkit-scratch-")
            full = _limits_only(argv, limits)
            popen_env = _sandbox_env(child_env, self._workdir)
        try:
            self.process = subprocess.Popen(
                full,
                stdin=stdin,
                stdout=stdout,
                stderr=self._stderr,
                env=popen_env,
                cwd=self._workdir or None,
                pass_fds=pass_fds,
                start_new_session=True,
            )
        except BaseException:
            for fd in (self._events_read, self._status_read):
                if fd >= 0:
                    os.close(fd)
            self._stderr.close()
            raise
        finally:
            for fd in pass_fds:
                os.close(fd)  # the grader keeps only the read ends
        self.pid = self.process.pid

    def kill(self) -> None:
        """Kill the sandbox now: bwrap dies, and with it every process inside."""
        if self.process.poll() is None:
            self._killed_by_grader = True
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def wait(self) -> Report:
        """Wait for the child to end and return its Report (the grader's clock is the
        caller's: it kills the sandbox when its time is up).

        Returns only once no process of the sandbox is left: bwrap exits as
        soon as the main command does, while the kernel is still killing the
        rest of its PID namespace, so this waits (and kills) until it is empty.
        """
        if self.process.returncode is None:
            self.process.wait()
        if self._report is None:
            self._report = self._make_report()
        return self._report

    # -- reading what happened

    @staticmethod
    def _read_all(fd: int) -> bytes:
        """Return what a pipe of the ended sandbox holds (its 64 KiB at most), and close it."""
        if fd < 0:
            return b""
        os.set_blocking(fd, False)
        try:
            return os.read(fd, 1 << 16)  # one read takes all a pipe holds
        except BlockingIOError:
            return b""
        finally:
            os.close(fd)

    def _bwrap_status(self) -> dict:
        """Return bwrap's JSON status lines merged (child-pid, pid-namespace, exit-code)."""
        merged: dict = {}
        for line in self._read_all(self._status_read).splitlines():
            try:
                document = json.loads(line)
            except ValueError:
                continue
            merged.update(document if isinstance(document, dict) else {})
        return merged

    def _guard_flags(self) -> set[str]:
        """Return the flags the child's guard reported (advisory), one JSON line each."""
        flags = set()
        for line in self._read_all(self._events_read).splitlines()[:500]:
            try:
                flag = json.loads(line).get("flag")
            except (ValueError, AttributeError):
                continue
            if isinstance(flag, str) and flag in GUARD_FLAGS:
                flags.add(flag)
        return flags

    def _make_report(self) -> Report:
        code = self.process.returncode
        status_doc = self._bwrap_status() if self.support.available else {}
        namespace = status_doc.get("pid-namespace")
        leftovers = _empty_namespace(namespace, status_doc.get("child-pid"))
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - 2000))
        stderr_tail = self._stderr.read().decode(errors="replace")
        self._stderr.close()
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
        flags = self._guard_flags()
        # how it ended: bwrap reports "killed by signal N" as exit code 128+N
        signum = None
        if code is not None and code < 0:
            signum = -code  # no bwrap (fallback), or bwrap itself was killed
        elif code is not None and code > 128 and self.support.available:
            signum = code - 128
        if self.support.available and "child-pid" not in status_doc and not self._killed_by_grader:
            last = stderr_tail.strip().splitlines()[-1:] or [f"exit {code}"]
            ending, status = Ending.SANDBOX_FAILED, f"sandbox failed: {last[0][:200]}"
        elif self._killed_by_grader:
            ending, status = Ending.KILLED_BY_GRADER, "killed by the grader"
        elif signum is not None:
            ending = Ending.KILLED
            status, flag = signal_status(signum)
            if flag:
                flags.add(flag)
        elif code == 0:
            ending, status = Ending.OK, "ok"
        else:
            ending, status = Ending.EXIT, f"exit {code}"
        return Report(
            ending=ending,
            status=status,
            flags=tuple(sorted(flags)),
            exit_code=code,
            leftover_pids=tuple(leftovers),
        )


def _empty_namespace(inode: object, init_pid: object, timeout_s: float = 5.0) -> list[int]:
    """Wait until the sandbox's PID namespace is empty, killing its init if needed.

    ``init_pid`` is the host pid of the namespace's init (bwrap's "child-pid").
    The kernel lets an init finish exiting only after every other process of
    its namespace is gone, so "init is gone or a zombie" means "empty". bwrap
    exits as soon as the main command does, a moment before that (or never, if
    learner code stopped init with ptrace): then init is killed through a
    pidfd (no pid reuse race). Returns the pids still there after ``timeout_s``.
    """
    if not isinstance(inode, int) or not isinstance(init_pid, int):
        return []
    deadline = time.monotonic() + timeout_s
    while _alive_in(init_pid, inode):
        if time.monotonic() > deadline:
            return pids_in_namespace(inode)
        try:
            pidfd = os.pidfd_open(init_pid)
        except OSError:
            pidfd = -1  # gone meanwhile
        if pidfd >= 0:
            try:
                if _alive_in(init_pid, inode):  # still ours once pinned by the pidfd
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(pidfd)
        time.sleep(0.001)  # the kernel is tearing the namespace down: poll again
    return []


def _alive_in(pid: int, inode: int) -> bool:
    """Return True when ``pid`` runs (not a zombie) in the PID namespace ``inode``."""
    try:
        if os.stat(f"/proc/{pid}/ns/pid").st_ino != inode:
            return False
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def pids_in_namespace(inode: object) -> list[int]:
    """Return the host pids of live processes in the PID namespace ``inode`` (a full /proc scan)."""
    if not isinstance(inode, int):
        return []
    return [int(n) for n in os.listdir("/proc") if n.isdigit() and _alive_in(int(n), inode)]
