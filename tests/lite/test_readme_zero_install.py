"""The "Zero install" section of the guide to running a class, followed as printed: try it
locally, publish it.

Each shell block of the section runs as written, from the repository root, with two
substitutions a test machine needs: the port (8000 may be taken on a shared machine: a free
one instead) and GitHub (the push goes to a bare repository in a temporary folder; a static
server on loopback then serves what that branch holds under /streaming-course/, as GitHub
Pages serves a project site). The site each block gives is opened in Chromium with every
other request refused, and must land on lesson 00 with a ready kernel.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from labdriver import REPO_ROOT, remove_tree, wait_for
from litesite import START_NOTEBOOK, serving

pytestmark = pytest.mark.browser

GITHUB_PUSH_URL = "https://github.com/<org>/streaming-course.git"
PAGES_PREFIX = "/streaming-course/"
COMMAND_DEADLINE_S = 900  # the first `make lite` downloads Pyodide and the kernel's wheels


GUIDE = REPO_ROOT / "docs" / "running-a-class.md"


def zero_install_blocks() -> list[list[str]]:
    """Return the shell blocks of the guide's Zero install section, each as its lines."""
    guide = GUIDE.read_text()
    section = re.search(r"^## Zero install.*?(?=^## )", guide, re.MULTILINE | re.DOTALL)
    assert section, f"{GUIDE.name} has a 'Zero install' section"
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(0), re.MULTILINE | re.DOTALL)
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(line: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        line, shell=True, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=COMMAND_DEADLINE_S,
    )  # fmt: skip
    assert done.returncode == 0, f"$ {line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


# What the page shows once lesson 00's kernel is ready: its tab is the current one, and the
# status bar names Pyodide's kernel as idle. (The guide's sites are served as built, so
# tests cannot reach window.jupyterapp here: they read the page as a learner does.)
CURRENT_TAB = ".jp-mod-current.lm-TabBar-tab .lm-TabBar-tabLabel"
KERNEL_IDLE_JS = """
() => Array.from(document.querySelectorAll('.jp-StatusBar-Item'))
  .some((item) => item.textContent.trim() === 'Python (Pyodide) | Idle')
"""


def open_site(browser, url: str) -> str:
    """Open url in a fresh browser context; return the open tab's name once its kernel is idle."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(url, timeout=600_000)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=600_000)
        return page.locator(CURRENT_TAB).first.text_content()
    finally:
        context.close()


def test_the_guide_says_how_to_try_it_locally_and_how_to_publish_it():
    try_it, publish = zero_install_blocks()
    assert try_it[0] == "make lite" and "http.server" in try_it[1] and "8000" in try_it[1]
    assert publish[0] == "make lite" and GITHUB_PUSH_URL in publish[1]
    guide = GUIDE.read_text()
    assert "[![Zero install]" in guide and "https://<org>.github.io/streaming-course/" in guide


def test_try_it_locally_as_printed_opens_lesson_00_with_a_ready_kernel(browser):
    build, serve_line = zero_install_blocks()[0]
    run(build)
    port = free_port()
    command = shlex.split(serve_line.replace("8000", str(port)))
    server = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/"

        def up() -> bool:
            try:
                return httpx.get(url, timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, timeout_s=30, what="python3 -m http.server to answer")
        tab = open_site(browser, url)
    finally:
        server.terminate()
        server.wait(10)
    assert tab == Path(START_NOTEBOOK).name


def test_publishing_as_printed_gives_a_pages_branch_that_opens_lesson_00(browser):
    build, publish = zero_install_blocks()[1]
    scratch = Path(tempfile.mkdtemp(prefix="lessonkit-pages-"))
    try:
        remote = scratch / "streaming-course.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        run(build)
        # A publisher has a git identity; a test machine may not.
        identity = {"GIT_AUTHOR_NAME": "Course", "GIT_AUTHOR_EMAIL": "course@example.invalid"}
        identity |= {
            "GIT_COMMITTER_NAME": "Course",
            "GIT_COMMITTER_EMAIL": "course@example.invalid",
        }
        run(publish.replace(GITHUB_PUSH_URL, str(remote)), env={**os.environ, **identity})
        pages = scratch / "pages"
        subprocess.run(
            ["git", "clone", "-q", "-b", "gh-pages", str(remote), str(pages)], check=True
        )
        assert (pages / ".nojekyll").exists()  # GitHub Pages serves _-prefixed files as they are
        remove_tree(pages / ".git")
        with serving(pages, prefix=PAGES_PREFIX) as site:
            started = time.monotonic()
            tab = open_site(browser, site.url)
            print(
                f"\n[lite] the published branch: lesson 00 ready in {time.monotonic() - started:.1f} s"
            )
    finally:
        remove_tree(scratch)
        remove_tree(REPO_ROOT / "build" / "lite" / ".git")  # the publish block's own repository
    assert tab == Path(START_NOTEBOOK).name
