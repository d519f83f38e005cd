"""Fixtures for the course website: built once from this tree, served on loopback, one browser.

One session builds the site with tools/build_site.py (what `make site` runs) into a temporary
folder and serves it with a static file server on 127.0.0.1 under /streaming-course/, as a
GitHub Pages project site is served (tests/lite/litesite.py's server; it also lets the tests
reach JupyterLite's app object in the page). One Chromium sends every other request to a
proxy that refuses it and writes it down. The build's time is printed and kept in
test-artifacts/site-times.json, never asserted.

These tests run in a pytest process of their own (`pytest tests/site`, `make site-test`), as
the other Playwright suites do; a `pytest tests` run leaves them out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lite"))  # litesite: the static host, the refusing proxy

import litesite  # noqa: E402
import sitepages  # noqa: E402
from labdriver import ARTIFACTS_DIR, REPO_ROOT, launch_chromium, remove_tree  # noqa: E402

BUILD_SCRIPT = REPO_ROOT / "tools" / "build_site.py"
PREFIX = "/streaming-course/"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collect tests/site only when the command line names it (or something inside it)."""
    named = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    inside = any(p == HERE or HERE in p.parents for p in named)
    return None if inside else True


@dataclass
class Build:
    """The built site: its folder, what the builder printed and how long it took."""

    root: Path
    output: str
    seconds: float
    pages: dict[str, sitepages.Page] = field(default_factory=dict)

    def printed_seconds(self, part: str) -> float:
        """Return the time the builder printed for a part ("site" or "lite")."""
        found = re.search(rf"^\[{part}\] site: .* built in ([\d.]+) s$", self.output, re.M)
        assert found, f"the {part} build printed no time:\n{self.output}"
        return float(found.group(1))


@pytest.fixture(scope="session")
def build() -> Iterator[Build]:
    """The website, built from the working tree into a temporary folder by tools/build_site.py."""
    folder = Path(tempfile.mkdtemp(prefix="lessonkit-site-"))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--out", str(folder / "site")],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    seconds = time.monotonic() - started
    try:
        assert done.returncode == 0, f"tools/build_site.py failed:\n{done.stdout[-6000:]}"
        root = folder / "site"
        print(f"\n[site] build (tools/build_site.py): {seconds:.1f} s", flush=True)
        ARTIFACTS_DIR.mkdir(exist_ok=True)
        (ARTIFACTS_DIR / "site-times.json").write_text(json.dumps({"build_s": round(seconds, 2)}))
        pages = {path: sitepages.read_page(root, path) for path in sitepages.site_pages(root)}
        yield Build(root, done.stdout, seconds, pages)
    finally:
        remove_tree(folder)


@pytest.fixture(scope="session")
def site(build: Build) -> Iterator[litesite.StaticSite]:
    """The site on a static file server on 127.0.0.1, under a path as a project site is."""
    with litesite.serving(build.root, prefix=PREFIX) as served:
        yield served


@pytest.fixture(scope="session")
def proxy() -> Iterator[litesite.RefusingProxy]:
    """Where the browser sends every request not for 127.0.0.1: refused, and written down."""
    refusing = litesite.RefusingProxy().start()
    yield refusing
    refusing.stop()


@pytest.fixture(scope="session")
def browser(proxy: litesite.RefusingProxy) -> Iterator[Any]:
    """Headless Chromium whose only way out is the refusing proxy."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright, litesite.chromium_args(proxy))
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Watched:
    """What a browser context did: console errors, failed requests, requests off the site."""

    site: litesite.StaticSite
    errors: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)

    def outside_requests(self) -> list[str]:
        local = (self.site.origin + "/", "data:", "blob:")
        return [url for url in self.requested if not url.startswith(local)]


def watch(context: Any, site: litesite.StaticSite) -> Watched:
    """Record a context's console errors, page errors, failed requests and every request."""
    watched = Watched(site)

    def on_page(page: Any) -> None:
        page.on(
            "console",
            lambda m: (
                watched.errors.append(f"console {m.type}: {m.text} ({page.url})")
                if m.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda e: watched.errors.append(f"page error: {e} ({page.url})"))

    def on_finished(request: Any) -> None:
        response = request.response()
        # The site's own requests: a static host's root (/favicon.ico) is not the site's.
        if response and response.status >= 400 and request.url.startswith(site.url):
            watched.errors.append(f"HTTP {response.status}: {request.url}")

    context.on("page", on_page)
    context.on("request", lambda r: watched.requested.append(r.url))
    context.on("requestfinished", on_finished)
    context.on(
        "requestfailed",
        # A request the page itself gave up by moving on (a click that opens another page).
        lambda r: (
            None
            if r.failure == "net::ERR_ABORTED"
            else watched.errors.append(f"failed: {r.url} {r.failure}")
        ),
    )
    return watched


@pytest.fixture(scope="session")
def new_context(browser: Any, site: litesite.StaticSite) -> Iterator[Any]:
    """Return a function that opens a watched browser context (closed at the session's end)."""
    opened = []

    def open_context(**options: Any) -> tuple[Any, Watched]:
        context = browser.new_context(viewport={"width": 1300, "height": 900}, **options)
        context.set_default_timeout(120_000)
        opened.append(context)
        return context, watch(context, site)

    yield open_context
    for context in opened:
        context.close()
