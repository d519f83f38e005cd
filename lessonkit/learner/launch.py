"""`lessonkit lab`: open the course in JupyterLab, on lesson 00, from the course folder.

What `make lab` runs, and what a learner without make runs after ``pip install .``:

1. find the course folder (``lessonkit.course.folder``) and refuse a port already taken,
   each with a message that says what to do instead;
2. start JupyterLab from this Python with a fresh token (kept off the command line),
   without a browser of its own and without an inherited ``MPLBACKEND`` (which would
   hide the lessons' figures);
3. wait until the server answers, and only then print the URL of lesson 00 and open it
   (through a private redirect file, as Jupyter does, so the token stays off the browser's
   command line too).

The course's JupyterLab settings (no news pop-up, no update check) and its Jupyter server
settings (the browser demo's route, idle kernels culled) are part of the install: pip puts
them under this environment's prefix, where Jupyter reads them (pyproject's shared-data).
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import webbrowser
from pathlib import Path

from lessonkit.course.folder import course_folder, not_in_a_course_folder

__all__ = ["START_HERE", "configure_parser", "jupyter_command", "main", "server_environment"]

START_HERE = "lab/tree/notebooks/00_start_here.ipynb"
DEFAULT_PORT = 8888
POLL_S = 0.2  # how often the server is asked whether it answers yet


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add `lessonkit lab`'s options to `parser`."""
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL but open no browser"
    )


def _another_port_command(port: int) -> str:
    """Return how to ask for another port, in the form the learner started it with."""
    if os.environ.get("MAKELEVEL"):
        return f"make lab PORT={port + 11}"
    return f"lessonkit lab --port {port + 11}"


def port_is_free(port: int) -> bool:
    """Return True if nothing listens on 127.0.0.1:`port` (a server there would refuse us)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def jupyter_command(folder: Path, port: int) -> list[str]:
    """Return the command that serves JupyterLab on `folder` at 127.0.0.1:`port`."""
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.default_url=/{START_HERE}",
    ]
    if getattr(os, "geteuid", lambda: 1)() == 0:  # root (a container): Jupyter asks for this
        command.append("--allow-root")
    return command


def server_environment(environ: dict[str, str]) -> dict[str, str]:
    """Return `environ` for the server: a fresh ``JUPYTER_TOKEN``, and no ``MPLBACKEND``
    (an inherited ``MPLBACKEND=Agg`` would hide every figure in the kernels it starts)."""
    env = {key: value for key, value in environ.items() if key != "MPLBACKEND"}
    env["JUPYTER_TOKEN"] = secrets.token_hex(24)
    return env


def answers(port: int, token: str) -> bool:
    """Return True once the Jupyter server on `port` answers an API request with 200."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _redirect_file(url: str) -> Path:
    """Return a private HTML file that sends the browser on to `url` (token off argv)."""
    folder = Path(tempfile.mkdtemp(prefix="lessonkit-lab-"))  # mode 0700
    page = folder / "open-the-course.html"
    page.write_text(
        f'<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
        f'<title>Opening the course</title><p><a href="{url}">Open the course</a></p>',
        encoding="utf-8",
    )
    page.chmod(0o600)
    return page


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit lab`; return JupyterLab's exit status (2 when it cannot start)."""
    folder = course_folder()
    if folder is None:
        print(f"lessonkit lab: {not_in_a_course_folder()}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(
            f"lessonkit lab: --port must be between 1 and 65535, not {args.port}.", file=sys.stderr
        )
        return 2
    if not port_is_free(args.port):
        print(
            f"lessonkit lab: port {args.port} is in use (another JupyterLab?). "
            f"Use another one: {_another_port_command(args.port)}",
            file=sys.stderr,
        )
        return 2

    env = server_environment(dict(os.environ))
    token = env["JUPYTER_TOKEN"]
    print(f"Starting JupyterLab on port {args.port} with the course in {folder} ...", flush=True)
    server = subprocess.Popen(jupyter_command(folder, args.port), cwd=folder, env=env)
    # Ctrl-C reaches JupyterLab too (same terminal): it asks, and a second Ctrl-C stops it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # stop it with us
    redirect: Path | None = None
    try:
        while not answers(args.port, token):
            if server.poll() is not None:
                print("lessonkit lab: JupyterLab stopped before it answered (see above).")
                return server.returncode or 1
            time.sleep(POLL_S)
        url = f"http://127.0.0.1:{args.port}/{START_HERE}?token={token}"
        print(f"\nThe course is open, starting with lesson 00:\n\n    {url}\n", flush=True)
        if args.no_browser:
            print("Paste that URL into your browser.")
        else:
            redirect = _redirect_file(url)
            opened = webbrowser.open(redirect.as_uri())
            print(
                "Your browser opens it"
                + ("" if opened else " -- none did: paste the URL into one")
                + "."
            )
        print(
            f"(Ctrl-C twice to stop; another port: {_another_port_command(args.port)})\n",
            flush=True,
        )
        return server.wait()
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait()
        if redirect is not None:
            redirect.unlink(missing_ok=True)
            redirect.parent.rmdir()
