"""Fixtures for the browser tests: one JupyterLab and one Chromium per session, a page per test.

On a failing test the page's screenshot and console log go to test-artifacts/.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    CHROMIUM_ARGS,
    SCRATCH_ROOT,
    LabServer,
    find_browser,
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
        try:
            managed = playwright.chromium.executable_path
        except Exception:  # Playwright knows no managed browser on this machine
            managed = None
        try:
            executable = find_browser(managed)
        except FileNotFoundError as missing:
            pytest.fail(str(missing), pytrace=False)
        chromium = playwright.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser context and page; screenshot and console saved if the test fails."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    new_page = context.new_page()
    console_lines: list[str] = []
    new_page.on("console", lambda msg: console_lines.append(f"[{msg.type}] {msg.text}"))
    new_page.on("pageerror", lambda error: console_lines.append(f"[pageerror] {error}"))
    yield new_page
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        save_artifacts(new_page, request.node.name, console_lines)
    context.close()
