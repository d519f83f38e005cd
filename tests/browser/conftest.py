"""Fixtures for the browser tests: one JupyterLab, one Chromium and one JupyterLab page per session.

The page loads the JupyterLab application once; each test opens its notebook as the only
document in it and shuts that notebook's kernel down afterwards (loading the application
for every notebook would cost seconds each). A crashed page is replaced before the next
test. On a failing test the page's screenshot and console log go to test-artifacts/.
Playwright's expect() waits up to labdriver.PAGE_WAIT_S here, not its own 5 s: what it
checks mostly comes from the kernel, which a loaded machine answers late.

explorer_cells opens a notebook of one explorer (or other widget) per cell, for the
keyboard and explorer tests.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    CHROMIUM_ARGS,
    EXPLORERS_IMPORT,
    PAGE_WAIT_S,
    SCRATCH_ROOT,
    LabServer,
    close_notebook,
    code_cell_indices,
    launch_chromium,
    open_lab,
    open_notebook,
    relative_to_root,
    remove_tree,
    run_all_and_wait,
    save_artifacts,
    tracebacks,
    wait_for,
    widgets_rendered,
    write_scratch_notebook,
)


def pytest_configure(config: pytest.Config) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE_WAIT_S * 1000)


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
        self.context.set_default_timeout(PAGE_WAIT_S * 1000)
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


@pytest.fixture(scope="session")
def explorer_cells(
    lab: LabServer, lab_page: WatchedPage, scratch_dir: Path
) -> Callable[..., contextlib.AbstractContextManager[dict[str, Any]]]:
    """Return explorer_cells(file name, {name: cell source}, without_widgets=names).

    Used as a context manager, it writes a scratch notebook of EXPLORERS_IMPORT and then
    one cell per source, runs it in the session's page, waits until every cell but those
    without_widgets shows its widget, and gives name -> that cell's output area. Then it
    closes the notebook (its kernel shut down). If the setup fails, the page's screenshot
    and console log go to test-artifacts/ first.
    """

    @contextlib.contextmanager
    def run(
        file_name: str, cells: Mapping[str, str], *, without_widgets: Collection[str] = ()
    ) -> Iterator[dict[str, Any]]:
        notebook = write_scratch_notebook(
            scratch_dir, file_name, [EXPLORERS_IMPORT, *cells.values()]
        )
        path = relative_to_root(notebook)
        page = lab_page.page
        with_widgets = [i + 1 for i, name in enumerate(cells) if name not in without_widgets]
        try:
            open_notebook(page, lab, path)
            ran = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
            assert not tracebacks(ran), "\n".join(tracebacks(ran))
            wait_for(
                lambda: widgets_rendered(page, with_widgets),
                timeout_s=90,
                what=f"every widget of {file_name} to render",
            )
        except BaseException:
            save_artifacts(page, f"{notebook.stem}-setup", lab_page.console_lines)
            close_notebook(page, lab, path)
            raise
        cell = page.locator(".jp-Notebook .jp-Cell")
        try:
            yield {name: cell.nth(i + 1).locator(".jp-OutputArea") for i, name in enumerate(cells)}
        finally:
            close_notebook(page, lab, path)

    return run
