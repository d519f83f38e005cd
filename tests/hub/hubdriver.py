"""A real JupyterHub on loopback, and a browser that behaves as if it were on another machine.

The pieces conftest.py wires into fixtures:

* ``Hub.start(spec, workdir)`` runs ``jupyterhub`` with a generated config: DummyAuthenticator
  with a shared password, configurable-http-proxy from npm, free loopback ports for the
  proxy, the hub and the proxy's API, an API token for the test, default URL ``/lab``.
  With ``HubSpec(unix_users=True)`` (the classroom test, as root) JupyterHub's
  LocalProcessSpawner runs each user's server as the Unix account of that name, in its
  home; otherwise SimpleLocalProcessSpawner runs every user as this process's user, one
  home each under the run's folder (the class bench). The hub, the users' servers and
  their kernels run from ``spec.python``'s environment, as in a hub image with the course
  installed; ``spec.environment`` adds to ``c.Spawner.environment`` (the class drop box)
  and ``spec.ipc_users`` run their kernels over Unix sockets instead of loopback TCP.
* ``ProcessTracker`` remembers, by pid and start time, every process of the hub's tree
  (proxy, single-user servers, kernels) so ``Hub.stop()`` can stop each one by its pid
  even if the hub died first. Each process of a run also carries ``RUN_MARKER`` in its
  environment, the second check that nothing is left.
* ``JupyterServer``: one user's server's REST API through the hub, with the test's token;
  it has the methods tests/support/labdriver.py calls on a server (wait_kernel_idle,
  close_sessions), so labdriver's notebook helpers work on it unchanged.
* ``KernelClient``: runs code in one of a user's kernels over the kernel's WebSocket, as a
  notebook tab would, without a browser (the classroom refusal test and bench/bench_class.py).
* ``RemotePage.open(browser)``: a Playwright context (own cookies, so own user) whose page
  cannot reach 127.0.0.1, localhost or [::1]: those requests and WebSockets are aborted
  and recorded, as for a browser on another machine. Chromium is started with
  ``--host-resolver-rules`` so the page reaches the hub as http://hub.test:PORT/.

Every wait polls a condition with a deadline (labdriver.wait_for).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import processes
import psutil
from labdriver import (
    CHROMIUM_ARGS,
    PAGE_WAIT_S,
    REPO_ROOT,
    ConditionTimeout,
    JupyterRest,
    normalized,
    wait_for,
)

PUBLIC_HOST = "hub.test"  # the name the browser uses for the hub; mapped to 127.0.0.1
COURSE_FOLDER = "streaming-course"  # where nbgitpuller would put the course in each home
ARTIFACTS = REPO_ROOT / "test-artifacts" / "hub"  # timings, logs, screenshots
RUN_MARKER = "LESSONKIT_HUB_TEST_RUN"  # carried by every process of a run
# Installed by `make hub` (tools/ensure_hub_proxy.sh) next to the course's environment.
CHP = Path(sys.prefix) / "share" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
MISSING_CHP_HELP = (
    f"JupyterHub's proxy is not installed at {CHP}.\n"
    "  `make hub` (or `make test`) installs it: tools/ensure_hub_proxy.sh .venv/share/chp\n"
    "  (it needs Node.js and npm: sudo apt-get install nodejs npm)."
)

# Any URL whose host is this machine's loopback, as a page could write it.
LOOPBACK_URL = re.compile(
    r"^[a-z][a-z0-9+.-]*://(?:[^/@]*@)?"
    r"(?:localhost|localhost\.localdomain|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1?\]|\[::ffff:[^\]]*\])"
    r"(?::\d+)?(?:[/?#]|$)",
    re.IGNORECASE,
)


def free_loopback_ports(n: int) -> list[int]:
    """Return n distinct TCP ports on 127.0.0.1 that were free a moment ago."""
    sockets = []
    try:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def chromium_args(*host_aliases: str) -> list[str]:
    """Chromium flags: headless and quiet, each host alias resolving to 127.0.0.1."""
    rules = ", ".join(f"MAP {host} 127.0.0.1" for host in host_aliases)
    return [*CHROMIUM_ARGS, f"--host-resolver-rules={rules}"]


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class ProcessTracker:
    """Every process of a run, remembered by pid (with its start time: a reused pid is not hit)."""

    seen: dict[int, psutil.Process] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)

    def adopt_tree(self, root_pid: int) -> None:
        """Remember root_pid and all its descendants as they are now."""
        try:
            root = psutil.Process(root_pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for process in processes:
            if process.pid not in self.seen:
                self.seen[process.pid] = process
                self.labels[process.pid] = _describe(process)

    def alive(self) -> list[psutil.Process]:
        """Return the remembered processes that still run (zombies count as gone)."""
        living = []
        for process in self.seen.values():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    living.append(process)
            except psutil.NoSuchProcess:
                pass
        return living

    def stop_all(self, *, grace_s: float = 5.0) -> list[str]:
        """SIGTERM each remembered live process by pid, SIGKILL after grace_s; return whom."""
        targets = self.alive()
        for process in targets:
            try:
                process.terminate()
            except psutil.NoSuchProcess:
                pass
        _, still = psutil.wait_procs(targets, timeout=grace_s)
        for process in still:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(still, timeout=grace_s)
        return [f"{p.pid} {self.labels.get(p.pid, '?')}" for p in targets]

    def summary(self) -> list[str]:
        """Return one line per remembered process: pid and what it was."""
        return [f"{pid} {label}" for pid, label in self.labels.items()]


def _describe(process: psutil.Process) -> str:
    try:
        text = " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "?"
    for needle, name in (
        ("configurable-http-proxy", "proxy"),
        ("jupyterhub.singleuser", "single-user server"),
        ("ipykernel_launcher", "kernel"),
        ("jupyterhub", "hub"),
    ):
        if needle in text:
            return f"{name}: {text[:160]}"
    return text[:160]


def leftover_processes(run_id: str) -> list[str]:
    """Return 'pid cmdline' of every live process whose environment carries this run's marker."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if process.environ().get(RUN_MARKER) == run_id:
                found.append(f"{process.pid} {' '.join(process.info['cmdline'] or [])[:160]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


# ---------------------------------------------------------------------------------------------
# The hub


@dataclass
class HubSpec:
    """What to run: users, their password, the Python of the users' servers and kernels."""

    users: tuple[str, ...] = ("alice", "bob")
    password: str = field(default_factory=lambda: "pw-" + secrets.token_hex(6))
    python: Path = Path(sys.executable)  # the course's environment: hub, servers, kernels
    default_url: str = "/lab"
    start_timeout_s: float = 300  # 5-20 s here; generous for a machine busy many times over
    # More options for each user's Jupyter server (the bench shortens the culling times).
    server_args: tuple[str, ...] = ()
    # LocalProcessSpawner: each user is the Unix account of that name (the hub runs as root).
    unix_users: bool = False
    environment: dict[str, str] = field(default_factory=dict)  # more c.Spawner.environment
    ipc_users: tuple[str, ...] = ()  # their servers' kernels: KernelManager.transport = "ipc"
    roles: dict[str, str] = field(default_factory=dict)  # what tests call a user -> its name
    run_id: str = ""  # RUN_MARKER's value in every process of the run (default: a new one)


HUB_CONFIG = """\
# Generated by tests/hub/hubdriver.py for one test run. Everything on loopback.
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {public_port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.ConfigurableHTTPProxy.pid_file = {proxy_pid_file!r}
c.JupyterHub.pid_file = {hub_pid_file!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie_secret_file!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})

{spawner}
c.Spawner.cmd = {singleuser_cmd!r}
c.Spawner.args = [*{root_args!r}, "--LabApp.expose_app_in_browser=True", *{server_args!r}]
c.Spawner.default_url = {default_url!r}
c.Spawner.environment = {spawner_env!r}


def kernels_over_unix_sockets(spawner):  # in their 0700 runtime folder, not on TCP
    if spawner.user.name in {ipc_users!r}:
        spawner.args = [*spawner.args, "--KernelManager.transport=ipc"]


c.Spawner.pre_spawn_hook = kernels_over_unix_sockets
c.Spawner.start_timeout = {start_timeout}
c.Spawner.http_timeout = {start_timeout}
c.LocalProcessSpawner.interrupt_timeout = 10
c.LocalProcessSpawner.term_timeout = 5

# A token for the test: REST calls to the hub and to the users' servers.
c.JupyterHub.services = [{{"name": "course-test", "api_token": {api_token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "course-test",
    "scopes": ["list:users", "read:users", "read:servers", "admin:servers", "access:servers"],
    "services": ["course-test"],
}}]
"""


# Every user one Unix account (the class bench), or each user their own (the classroom test).
SHARED_ACCOUNT = """\
c.JupyterHub.spawner_class = "simple"  # SimpleLocalProcessSpawner: no system users needed
c.SimpleLocalProcessSpawner.home_dir_template = {home_template!r}"""
UNIX_USERS = """\
c.JupyterHub.spawner_class = "localprocess"  # LocalProcessSpawner: user alice runs as alice"""


@dataclass
class Hub:
    """A running JupyterHub: its process, ports, folders, token and tracked process tree."""

    spec: HubSpec
    workdir: Path
    process: subprocess.Popen[bytes]
    public_port: int
    api_token: str
    run_id: str
    tracker: ProcessTracker
    log_path: Path
    forced: list[str] = field(default_factory=list)  # what stop() had to signal itself
    hub_port: int = 0  # the hub's own API port (the proxy forwards /hub/ to it)

    @classmethod
    def start(cls, spec: HubSpec, workdir: Path) -> Hub:
        """Start the hub (and through it the proxy) on free loopback ports; return once it answers."""
        if not CHP.exists():
            raise FileNotFoundError(MISSING_CHP_HELP)
        run_id = spec.run_id or uuid.uuid4().hex
        api_token = secrets.token_hex(24)
        public_port, hub_port, proxy_api_port = free_loopback_ports(3)
        config = HUB_CONFIG.format(
            public_port=public_port,
            hub_port=hub_port,
            proxy_api_port=proxy_api_port,
            chp=str(CHP),
            proxy_token=secrets.token_hex(24),
            proxy_pid_file=str(workdir / "proxy.pid"),
            hub_pid_file=str(workdir / "jupyterhub.pid"),
            db_url=f"sqlite:///{workdir / 'jupyterhub.sqlite'}",
            cookie_secret_file=str(workdir / "cookie_secret"),
            password=spec.password,
            users=sorted(spec.users),
            spawner=(UNIX_USERS if spec.unix_users else SHARED_ACCOUNT).format(
                home_template=str(workdir / "homes" / "{username}")
            ),
            root_args=[] if spec.unix_users else ["--allow-root"],
            ipc_users=sorted(spec.ipc_users),
            singleuser_cmd=[str(spec.python), "-m", "jupyterhub.singleuser"],
            default_url=spec.default_url,
            spawner_env={RUN_MARKER: run_id, "PYTHONUNBUFFERED": "1", **spec.environment},
            start_timeout=int(spec.start_timeout_s),
            api_token=api_token,
            server_args=list(spec.server_args),
        )
        config_path = workdir / "jupyterhub_config.py"
        config_path.write_text(config)
        log_path = workdir / "jupyterhub.log"
        with log_path.open("wb") as log:
            process = processes.start(
                [str(spec.python), "-m", "jupyterhub", "-f", str(config_path)],
                cwd=workdir,
                env=_hub_environment(spec, workdir, run_id),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                new_session=True,
            )
        tracker = ProcessTracker()
        tracker.adopt_tree(process.pid)
        hub = cls(spec, workdir, process, public_port, api_token, run_id, tracker, log_path)
        hub.hub_port = hub_port
        try:
            wait_for(hub.is_ready, timeout_s=spec.start_timeout_s, what="JupyterHub to answer")
        except BaseException:
            hub.stop()
            raise
        tracker.adopt_tree(process.pid)  # now with the proxy
        return hub

    def is_ready(self) -> bool:
        """True once /hub/api/ answers through the proxy; raise if the hub exited."""
        if self.process.poll() is not None:
            raise ConditionTimeout(
                f"JupyterHub exited with {self.process.returncode}:\n{self.log_tail()}"
            )
        try:
            return httpx.get(f"{self.internal_url}/hub/api/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, *, timeout_s: float = 30) -> list[str]:
        """Stop the hub, its proxy, the users' servers and their kernels; return survivors.

        The hub gets SIGTERM and stops the servers and the proxy itself (cleanup_servers,
        cleanup_proxy); the servers shut their kernels down. Then every process ever seen
        in its tree that still runs gets SIGTERM, then SIGKILL, by pid. Survivors (there
        should be none) come back as 'pid cmdline' lines, from the tracker and from a scan
        for the run's marker.
        """
        self.tracker.adopt_tree(self.process.pid)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.forced = self.tracker.stop_all()
        survivors = [f"{p.pid} {self.tracker.labels.get(p.pid)}" for p in self.tracker.alive()]
        return sorted(set(survivors) | set(leftover_processes(self.run_id)))

    @property
    def internal_url(self) -> str:
        """The hub as this machine reaches it (the test's own REST calls)."""
        return f"http://127.0.0.1:{self.public_port}"

    def public_url(self, host: str = PUBLIC_HOST) -> str:
        """The hub as the browser 'on another machine' reaches it."""
        return f"http://{host}:{self.public_port}"

    def name(self, role: str) -> str:
        """The hub's (and the Unix) name of the user tests call `role` ("alice")."""
        return self.spec.roles.get(role, role)

    def home(self, user: str) -> Path:
        """The user's home (their server's root folder)."""
        if self.spec.unix_users:
            import pwd

            return Path(pwd.getpwnam(user).pw_dir)
        return self.workdir / "homes" / user

    def ensure_server(self, user: str) -> JupyterServer:
        """Start the user's server through the hub's API unless it runs; return its API."""
        if not self.server_ready(user):
            with contextlib.suppress(httpx.HTTPStatusError):  # 400: a spawn already pending
                self.api("POST", f"/hub/api/users/{user}/server")
            wait_for(
                lambda: self.server_ready(user),
                timeout_s=self.spec.start_timeout_s,
                what=f"{user}'s server",
            )
        self.tracker.adopt_tree(self.process.pid)
        return self.user_server(user)

    def server_process(self, user: str) -> psutil.Process:
        """Return the process of the user's single-user server."""
        for process in psutil.Process(self.process.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if "jupyterhub.singleuser" in " ".join(process.cmdline()):
                    if process.environ().get("JUPYTERHUB_USER") == user:
                        return process
        raise AssertionError(f"no single-user server runs for {user}")

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One REST call with the test's token; path like /hub/api/users."""
        response = httpx.request(
            method,
            f"{self.internal_url}{path}",
            headers={"Authorization": f"token {self.api_token}"},
            timeout=30,
            **kwargs,
        )
        response.raise_for_status()
        return response

    def server_ready(self, user: str) -> bool:
        """True when the hub says the user's default server is ready."""
        servers = self.api("GET", f"/hub/api/users/{user}").json().get("servers") or {}
        return bool(servers.get("", {}).get("ready"))

    def user_server(self, user: str) -> JupyterServer:
        """The user's single-user server's REST API, through the hub's proxy, with our token."""
        return JupyterServer(
            f"{self.internal_url}/user/{user}", {"Authorization": f"token {self.api_token}"}
        )

    def log_tail(self, n_chars: int = 6000) -> str:
        """Return the end of the hub's log (its own lines and those of the users' servers)."""
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""


def _hub_environment(spec: HubSpec, workdir: Path, run_id: str) -> dict[str, str]:
    """The hub's environment: ours without Jupyter variables; the course's bin first on PATH."""
    drop = ("JUPYTER", "JUPYTERHUB_", "CONFIGPROXY_", "PYTHONPATH", "IPYTHONDIR", "MPLBACKEND")
    drop += ("LESSONKIT_", "VIRTUAL_ENV")  # a learner's progress goes to their own course folder
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PATH"] = os.pathsep.join([str(spec.python.parent), env.get("PATH", "/usr/bin:/bin")])
    env["HOME"] = str(workdir)
    env[RUN_MARKER] = run_id
    env.setdefault("LANG", "C.UTF-8")
    return env


def course_files(exercises: Path | None = None) -> dict[str, str]:
    """The course's notebooks as a learner's home gets them, outputs cleared; with
    `exercises` (a folder of ex*.ipynb), also the learner's exercises/ folder from it."""
    import nbformat

    def cleared(path: Path) -> str:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        notebook.metadata.pop("widgets", None)
        return nbformat.writes(notebook)

    files = {
        f"{COURSE_FOLDER}/notebooks/{path.name}": cleared(path)
        for path in sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
    }
    if exercises is not None:
        for path in sorted(exercises.glob("ex*.ipynb")):
            files[f"{COURSE_FOLDER}/exercises/{path.name}"] = cleared(path)
    return files


def prepare_home(home: Path, files: dict[str, str]) -> None:
    """Create a user's home holding files (path relative to the home -> text)."""
    for name, text in files.items():
        target = home / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


# ---------------------------------------------------------------------------------------------
# One user's Jupyter server, as labdriver's notebook helpers need it


@dataclass
class JupyterServer(JupyterRest):
    """REST calls to one Jupyter server: base like http://127.0.0.1:P/user/alice, auth headers."""

    base_url: str
    headers: dict[str, str]

    def open_session(self, notebook_path: str) -> dict[str, Any]:
        """Start a kernel for notebook_path as JupyterLab does when it opens it; return the session."""
        body = {"path": notebook_path, "name": notebook_path.rsplit("/", 1)[-1]}
        body |= {"type": "notebook", "kernel": {"name": "python3"}}
        return self.api("POST", "/api/sessions", json=body).json()

    @contextlib.contextmanager
    def kernel_client(self, kernel_id: str) -> Iterator[KernelClient]:
        """Yield a client connected to the kernel's WebSocket for the with-block."""
        from websockets.sync.client import connect

        url = self.base_url.replace("http://", "ws://", 1) + f"/api/kernels/{kernel_id}/channels"
        # No keep-alive pings: a kernel the server culls closes its socket, which is no error.
        options = {"max_size": None, "open_timeout": 60, "ping_interval": None}
        with connect(url, additional_headers=self.headers, **options) as ws:
            yield KernelClient(ws)


class KernelError(AssertionError):
    """Code run by KernelClient.execute raised: the traceback's last line is the message."""


@dataclass
class KernelClient:
    """One kernel's WebSocket, as a notebook tab holds it: run code, collect its text output.

    JupyterServer.kernel_client(kernel_id) opens one for a with-block; leaving the block
    closes the socket, and the kernel keeps running, as when a tab is closed.
    """

    websocket: Any
    session: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _messages(self, deadline: float) -> Iterator[dict[str, Any]]:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ConditionTimeout("the kernel did not finish running the code in time")
            yield json.loads(self.websocket.recv(timeout=remaining))

    def execute(self, code: str, *, timeout_s: float = 120) -> str:
        """Run code; return its stdout and plain-text results; KernelError if it raised."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session}
        header |= {
            "username": "course-test",
            "version": "5.3",
            "date": datetime.now(UTC).isoformat(),
        }
        content = {"code": code, "silent": False, "store_history": True, "allow_stdin": False}
        content |= {"user_expressions": {}, "stop_on_error": True}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        self.websocket.send(json.dumps({**message, "channel": "shell", "buffers": []}))
        texts, error = [], None
        for reply in self._messages(time.monotonic() + timeout_s):
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "stream" and body.get("name") == "stdout":
                texts.append(body["text"])
            elif kind in ("execute_result", "display_data"):
                texts.append(body.get("data", {}).get("text/plain", "") + "\n")
            elif kind == "error":
                error = f"{body['ename']}: {body['evalue']}"
            elif kind == "status" and body["execution_state"] == "idle":
                break
        if error is not None:
            raise KernelError(error)
        return "".join(texts)


# ---------------------------------------------------------------------------------------------
# The browser "on another machine"


@dataclass
class RemotePage:
    """One browser context (one user's cookies) whose page cannot reach loopback addresses."""

    context: Any
    page: Any = None
    console: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # loopback URLs the page tried
    hosts: dict[str, int] = field(default_factory=dict)  # requests per host:port

    @classmethod
    def open(cls, browser: Any) -> RemotePage:
        """Return a new context and page; loopback requests and WebSockets are aborted."""
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(PAGE_WAIT_S * 1000)
        remote = cls(context)

        def abort_loopback(route: Any) -> None:
            remote.blocked.append(f"{route.request.method} {route.request.url}")
            route.abort("addressunreachable")

        def close_loopback_websocket(websocket: Any) -> None:
            remote.blocked.append(f"WS {websocket.url}")
            websocket.close()

        def count(request: Any) -> None:
            host = re.sub(r"^[a-z]+://([^/]+).*$", r"\1", request.url)
            remote.hosts[host] = remote.hosts.get(host, 0) + 1

        context.route(LOOPBACK_URL, abort_loopback)
        context.route_web_socket(LOOPBACK_URL, close_loopback_websocket)
        context.on("request", count)
        remote.page = context.new_page()
        remote.page.on("console", lambda m: remote.console.append(f"[{m.type}] {m.text}"))
        remote.page.on("pageerror", lambda e: remote.console.append(f"[pageerror] {e}"))
        return remote

    def close(self) -> None:
        """Close the context (and its page)."""
        try:
            self.context.close()
        except Exception:  # already gone with the browser
            pass

    def save_artifacts(self, directory: Path, name: str, extra: dict[str, str]) -> None:
        """Save a screenshot, the console log, blocked requests, hosts and extra texts."""
        directory.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]
        try:
            self.page.screenshot(
                path=str(directory / f"{safe}.png"), full_page=True, timeout=20_000
            )
        except Exception as error:  # a broken page must not hide the test's own failure
            (directory / f"{safe}.screenshot-error.txt").write_text(repr(error))
        texts = {
            "console": "\n".join(self.console),
            "blocked": "\n".join(self.blocked),
            "hosts": json.dumps(self.hosts, indent=1),
            **extra,
        }
        for key, text in texts.items():
            (directory / f"{safe}.{key}.txt").write_text(text)


def login(
    page: Any, hub_public_url: str, user: str, password: str, *, timeout_s: float = 300
) -> str:
    """Log in through the hub's form; return the JupyterLab URL once JupyterLab is restored."""
    from labdriver import wait_lab_restored

    page.goto(f"{hub_public_url}/hub/login", timeout=timeout_s * 1000)
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{re.escape(user)}/lab"), timeout=timeout_s * 1000)
    wait_lab_restored(page, timeout_s=timeout_s)
    return page.url


def page_config(page: Any) -> dict[str, Any]:
    """Return JupyterLab's PageConfig as the page has it (the #jupyter-config-data script)."""
    return page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
    )


def output_text(cell: Any) -> str:
    """Return the text of a cell's outputs, whitespace collapsed."""
    return normalized(" ".join(o.text for o in cell.outputs))


def time_since(started: float) -> float:
    """Seconds since `started` (time.monotonic()), rounded for the timings record."""
    return round(time.monotonic() - started, 2)
