"""The "course website" section of the guide to running a class, followed as printed: try it
locally, publish it.

Each shell block of the section runs as written, from the repository root, with two
substitutions a test machine needs: the port (8000 may be taken on a shared machine: a free
one instead) and the repository (the push goes to a bare repository in a temporary folder; a
static server on loopback then serves what that branch holds under /streaming-course/, as
GitHub Pages serves a project site). Each site is opened in Chromium with every other
request refused; the published one's front page must open lesson 00 in JupyterLite with an
idle kernel.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import httpx
import litesite
import pytest
from labdriver import REPO_ROOT, free_loopback_port, remove_tree, wait_for

pytestmark = pytest.mark.browser

GUIDE = REPO_ROOT / "docs" / "running-a-class.md"
ORIGIN = '"$(git -C ../.. remote get-url origin)"'  # the publish block's push address
PAGES_PREFIX = "/streaming-course/"
COMMAND_DEADLINE_S = 900  # a first `make site` installs its builders and downloads Pyodide
KERNEL_DEADLINE_S = 600.0


def website_blocks() -> list[list[str]]:
    """Return the shell blocks of the guide's course website section, each as its lines."""
    guide = GUIDE.read_text(encoding="utf-8")
    section = re.search(r"^## The course website.*?(?=^## )", guide, re.MULTILINE | re.DOTALL)
    assert section, f"{GUIDE.name} has a 'The course website' section"
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(0), re.MULTILINE | re.DOTALL)
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


def run(line: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        line, shell=True, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=COMMAND_DEADLINE_S,
    )  # fmt: skip
    assert done.returncode == 0, f"$ {line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_guide_says_how_to_try_the_website_and_how_to_publish_it():
    try_it, publish = website_blocks()
    assert try_it[0] == "make site" and "http.server" in try_it[1] and "build/site" in try_it[1]
    assert publish[0] == "make site" and ORIGIN in publish[1] and "gh-pages" in publish[1]


def test_trying_it_as_printed_serves_the_front_page(new_context):
    build, serve_line = website_blocks()[0]
    run(build)
    port = free_loopback_port()
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
        context, watched = new_context()
        page = context.new_page()
        page.goto(url, wait_until="load")
        heading = page.locator("h1").first.text_content()
    finally:
        server.terminate()
        server.wait(10)
    assert heading.startswith("streaming-course")
    assert not watched.errors, watched.errors


def test_publishing_as_printed_gives_a_pages_branch_that_opens_lesson_00(new_context):
    build, publish = website_blocks()[1]
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
        run(publish.replace(ORIGIN, shlex.quote(str(remote))), env={**os.environ, **identity})
        pages = scratch / "pages"
        subprocess.run(
            ["git", "clone", "-q", "-b", "gh-pages", str(remote), str(pages)], check=True
        )
        assert (pages / ".nojekyll").exists()  # GitHub Pages serves _static/ as it is
        remove_tree(pages / ".git")
        with litesite.serving(pages, prefix=PAGES_PREFIX) as site:
            context, watched = new_context()
            page = context.new_page()
            page.goto(site.url, wait_until="load")
            page.get_by_role("link", name=re.compile("open lesson 00")).click()
            state = litesite.wait_kernel_idle(page, timeout_s=KERNEL_DEADLINE_S, what="lesson 00")
    finally:
        remove_tree(scratch)
        remove_tree(REPO_ROOT / "build" / "site" / ".git")  # the publish block's own repository
    assert state["path"] == "notebooks/00_start_here.ipynb"
    assert not watched.errors, watched.errors
