"""`make lab` prints the URL of notebooks/00_start_here.ipynb and opens that notebook.

The test runs the real target on a free port with a stand-in browser (the BROWSER
variable Python's webbrowser module honours) that writes down what it was asked to open.
"""

from __future__ import annotations

import os
import re
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

        def lab_page():
            try:
                response = httpx.get(printed, timeout=5, follow_redirects=True)
            except httpx.HTTPError:
                return None
            return response if response.status_code == 200 else None

        page = _wait_for(lab_page, timeout_s=120, what="JupyterLab to serve the printed URL")
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
