"""`make lab` prints the URL of notebooks/00_start_here.ipynb once it answers, and opens it.

The test runs the real target on a free port with a stand-in browser (the BROWSER
variable Python's webbrowser module honours) that writes down what it was asked to open.
The printed URL is asked once, the moment it appears: a learner who pastes it at once
must not meet "connection refused".
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import httpx
import processes

ROOT = Path(__file__).resolve().parents[2]
START_HERE = "lab/tree/notebooks/00_start_here.ipynb"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(probe, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)  # the poll interval
    raise AssertionError(f"timed out waiting for {what}")


def test_make_lab_prints_and_opens_the_url_of_the_start_notebook(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MAKEFLAGS"))}
    env.update(
        BROWSER=str(browser),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    log = tmp_path / "make.log"
    with log.open("wb") as out:
        process = processes.start(
            ["make", "--no-print-directory", "lab", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            new_session=True,  # its own process group, stopped as one below
        )
    try:
        printed = _wait_for(
            lambda: re.search(
                rf"http://127\.0\.0\.1:{port}/{re.escape(START_HERE)}\?token=\w+", log.read_text()
            ),
            timeout_s=120,
            what=f"make lab to print the start notebook's URL; it printed:\n{log.read_text()}",
        ).group()

        page = httpx.get(printed, timeout=30, follow_redirects=True)  # asked once, at once
        assert page.status_code == 200
        assert '"treePath": "notebooks/00_start_here.ipynb"' in page.text

        opened_url = _wait_for(
            lambda: opened.exists() and opened.read_text().strip(), 60, "the browser to be opened"
        )
        target = opened_url
        if opened_url.startswith("file:"):  # Jupyter's redirect page (keeps the token off argv)
            target = Path(opened_url.removeprefix("file://")).read_text()
        assert START_HERE in target and "token=" in target
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


def test_make_lab_installs_the_learners_set_and_make_test_adds_the_test_tools(tmp_path):
    # The Makefile's stamps, run for real in a scratch copy with a stand-in installer that
    # writes down what it was asked to install.
    for name in ("Makefile", "pyproject.toml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    shutil.copytree(ROOT / "jupyter", tmp_path / "jupyter")
    (tmp_path / "tools").mkdir()
    installer = tmp_path / "tools" / "install_venv.sh"
    installer.write_text('#!/bin/sh\nmkdir -p "$1/bin"\necho "$2" >> installs.log\n')
    installer.chmod(0o755)

    def make(target: str) -> list[str]:
        subprocess.run(["make", "--no-print-directory", target], cwd=tmp_path, check=True,
                       capture_output=True, env={**os.environ, "MAKEFLAGS": ""})  # fmt: skip
        log = tmp_path / "installs.log"
        return log.read_text().split() if log.exists() else []

    assert make("lab-setup") == ["."]  # make lab: the lessons' packages only
    assert make("setup") == [".", ".[dev]"]  # make test afterwards: the test tools on top
    assert make("lab-setup") == [".", ".[dev]"]  # the test install holds the learner's
    assert make("setup") == [".", ".[dev]"]
    for settings in (
        ".venv/share/jupyter/lab/settings/overrides.d/streaming-course.json",
        ".venv/etc/jupyter/jupyter_server_config.d/streaming-course.json",
    ):
        assert (tmp_path / settings).is_file()
