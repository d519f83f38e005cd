"""Fixtures for the zero-install site: built from this tree, served on loopback, one browser.

One session builds the site (tools/build_lite.py, into a temporary folder), serves it with
a static file server on 127.0.0.1, and opens it in one Chromium page whose every other
request goes to a proxy that refuses it (tests/lite/litesite.py). The page loads the site
once, as a learner's browser does: JupyterLab, then the first notebook's Pyodide kernel.
Each test then opens its notebook as the only document. The times of the build, of the
first load to a ready kernel and of each Run All are printed (pytest -s shows them) and
kept in test-artifacts/lite-times.json; no test asserts them.

These tests run in a pytest process of their own (`pytest tests/lite`), as the JupyterLab
browser tests do: Playwright's sync API keeps an event loop running in the main thread,
which breaks later tests that call asyncio.run. A `pytest tests` run leaves them out.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litesite
import pytest
from labdriver import (
    ARTIFACTS_DIR,
    launch_chromium,
    remove_tree,
    save_artifacts,
    wait_lab_restored,
)

HERE = Path(__file__).resolve().parent
# Generous: Pyodide started in 18-91 s here (two cores, load average 6-16).
FIRST_LOAD_DEADLINE_S = 600.0


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collect tests/lite only when the command line names it (or something inside it)."""
    named = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    inside = any(p == HERE or HERE in p.parents for p in named)
    return None if inside else True


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@dataclass
class Times:
    """What the session measured, in seconds: printed and written to test-artifacts/."""

    values: dict[str, float] = field(default_factory=dict)

    def note(self, name: str, seconds: float) -> None:
        self.values[name] = round(seconds, 2)
        print(f"\n[lite] {name}: {seconds:.1f} s", flush=True)

    def save(self) -> None:
        ARTIFACTS_DIR.mkdir(exist_ok=True)
        (ARTIFACTS_DIR / "lite-times.json").write_text(json.dumps(self.values, indent=2))


@pytest.fixture(scope="session")
def times() -> Iterator[Times]:
    measured = Times()
    yield measured
    measured.save()


@pytest.fixture(scope="session")
def site_dir(times: Times) -> Iterator[Path]:
    """The site, built from the working tree into a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="lessonkit-lite-"))
    try:
        times.note("build (tools/build_lite.py)", litesite.build_site(folder / "site"))
        size_mb = sum(p.stat().st_size for p in (folder / "site").rglob("*") if p.is_file()) / 1e6
        times.values["site_mb"] = round(size_mb, 1)
        print(f"[lite] site size: {size_mb:.1f} MB", flush=True)
        yield folder / "site"
    finally:
        remove_tree(folder)


@pytest.fixture(scope="session")
def site(site_dir: Path) -> Iterator[litesite.StaticSite]:
    """The site on a static file server on 127.0.0.1, standing for GitHub Pages.

    Published under a path, as a project site is (https://<user>.github.io/<repository>/),
    so every URL the site uses must be relative to where it is.
    """
    with litesite.serving(site_dir, prefix="/streaming-course/") as served:
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
class LitePage:
    """The session's page on the site, its console and every request it made, kept."""

    page: Any
    site: litesite.StaticSite
    console_lines: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    opened: dict = field(default_factory=dict)  # the URL and kernel right after the first load

    def outside_requests(self) -> list[str]:
        """Return every URL the page or its workers asked for from anywhere but the site's host."""
        local = (self.site.origin + "/", "data:", "blob:")
        return [url for url in self.requested if not url.startswith(local)]


@pytest.fixture(scope="session")
def lite(browser: Any, site: litesite.StaticSite, times: Times) -> Iterator[LitePage]:
    """One page that opened the site's root URL; its first notebook's kernel is ready."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    page = context.new_page()
    watched = LitePage(page, site)
    context.on("request", lambda request: watched.requested.append(request.url))
    page.on("console", lambda m: watched.console_lines.append(f"[{m.type}] {m.text}"))
    page.on("pageerror", lambda e: watched.console_lines.append(f"[pageerror] {e}"))
    started = time.monotonic()
    try:
        page.goto(site.url, timeout=FIRST_LOAD_DEADLINE_S * 1000)
        wait_lab_restored(page, timeout_s=FIRST_LOAD_DEADLINE_S)
        times.note("first load: JupyterLab restored", time.monotonic() - started)
        litesite.wait_kernel_idle(page, timeout_s=FIRST_LOAD_DEADLINE_S, what="the first notebook")
        times.note("first load: kernel ready", time.monotonic() - started)
        watched.opened = {"url": page.url, "kernel": litesite.kernel_state(page)}
        times.values["first_load_mb"] = round(site.bytes_sent / 1e6, 1)
        print(f"[lite] first load: {site.bytes_sent / 1e6:.1f} MB served", flush=True)
    except Exception:
        save_artifacts(page, "lite-first-load", watched.console_lines)
        raise
    yield watched
    context.close()


@pytest.fixture
def lite_page(lite: LitePage, request: pytest.FixtureRequest) -> Iterator[LitePage]:
    """The site's page, for one test: screenshot and console saved if the test fails."""
    first_line = len(lite.console_lines)
    yield lite
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        save_artifacts(lite.page, f"lite-{request.node.name}", lite.console_lines[first_line:])
