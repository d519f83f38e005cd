"""A plain `jupyter server` process of this environment, with a token, for the serve tests.

It reads this environment's settings (etc/jupyter/jupyter_server_config.d: the course's
extensions, as `pip install .` and `make setup` put them) and keeps its runtime folder
in the test's home, so a test can put demo sockets where that server looks.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from labdriver import free_loopback_port, wait_for


@dataclass
class JupyterServerProcess:
    """A running `jupyter server`: its URL, token, runtime folder and log."""

    url: str
    token: str
    runtime: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def auth(self) -> dict[str, str]:
        """The header that logs a request in with the server's token."""
        return {"Authorization": f"token {self.token}"}

    def log(self) -> str:
        """Return the server's log so far."""
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def jupyter_server(
    home: Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[JupyterServerProcess]:
    """Yield a `jupyter server` started in `home` with `options` (and `env` added to its
    environment), stopped after the block."""
    runtime, token = home / "runtime", "course-test-token"
    extra_env = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(extra_env)
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(runtime),
    )
    port = free_loopback_port()
    log_path = home / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("jupyter")),
                "server",
                "--no-browser",
                "--allow-root",
                f"--port={port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={home}",
                *options,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = JupyterServerProcess(f"http://127.0.0.1:{port}", token, runtime, log_path, process)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"jupyter server exited:\n{server.log()}")
        try:
            return httpx.get(f"{server.url}/api/status", headers=server.auth).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(ready, timeout_s=300, what="jupyter server to start")  # a hung start, not a speed
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
