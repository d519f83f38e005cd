"""Fixtures for the browser tests: one JupyterLab, one Chromium and one JupyterLab page per session.

The page loads the JupyterLab application once; each test opens its notebook as the only
document in it and shuts that notebook's kernel down afterwards (loading the application
for every notebook would cost seconds each). A crashed page is replaced before the next
test. On a failing test the page's screenshot and console log go to test-artifacts/.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    CHROMIUM_ARGS,
    SCRATCH_ROOT,
    LabServer,
    launch_chromium,
    open_lab,
    remove_tree,
    save_artifacts,
)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def scratch_dir() -> Iterator[Path]:
    """A private folder inside the repository root (so the server can open it) for copies."""
    SCRATCH_ROOT.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="run-", dir=SCRATCH_ROOT))
    yield path
    remove_tree(path)


@pytest.fixture(scope="session")
def lab() -> Iterator[LabServer]:
    """The course's own JupyterLab, with private settings, on a free loopback port."""
    with tempfile.TemporaryDirectory(prefix="lessonkit-lab-") as home:
        server = LabServer.start(Path(home))
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium, driven by Playwright; a clear failure when no Chromium is installed."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright, CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class WatchedPage:
    """The session's page, with its console log kept for the artifacts of a failing test."""

    browser: Any
    context: Any = None
    page: Any = None
    console_lines: list[str] = field(default_factory=list)
    crashed: bool = False

    def open(self, lab: LabServer) -> None:
        """Open a new page in a fresh browser context, its console recorded, and load JupyterLab."""
        if self.context is not None:
            self.context.close()
        self.context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(60_000)
        self.page = self.context.new_page()
        self.crashed = False
        self.page.on("console", lambda m: self.console_lines.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.console_lines.append(f"[pageerror] {e}"))
        self.page.on("crash", lambda _: setattr(self, "crashed", True))
        open_lab(self.page, lab)


@pytest.fixture(scope="session")
def lab_page(browser: Any, lab: LabServer) -> Iterator[WatchedPage]:
    """One JupyterLab page for the whole session: the application loads once."""
    watched = WatchedPage(browser)
    watched.open(lab)
    yield watched
    watched.context.close()


@pytest.fixture
def page(lab_page: WatchedPage, lab: LabServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The JupyterLab page, for one test: screenshot and console saved if the test fails."""
    if lab_page.crashed or lab_page.page.is_closed():
        lab_page.open(lab)
    first_line = len(lab_page.console_lines)
    yield lab_page.page
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        save_artifacts(lab_page.page, request.node.name, lab_page.console_lines[first_line:])
