"""Fixtures for the classroom test: one JupyterHub and one Chromium per session.

hub      JupyterHub + configurable-http-proxy on free loopback ports; each user's home
         holds the course's notebooks (outputs cleared), as nbgitpuller would put them.
         Teardown stops every process of the run by pid and fails if anything survived.
browser  Chromium (as tests/browser finds it) with hub.test resolving to 127.0.0.1.
remote   a fresh browser context per test (own cookies, so own user) whose page cannot
         reach loopback addresses; screenshot, console, blocked requests and the hub's
         log go to test-artifacts/hub/ when the test fails.
timings  a dict each test adds to: printed at the end, written to test-artifacts/hub/.

Playwright's expect() waits up to labdriver.PAGE_WAIT_S here, not its own 5 s: what it
checks comes from a kernel behind the hub, which a loaded machine answers late.

Run in a pytest process of its own (`make hub`), like tests/browser: Playwright's sync
API keeps an event loop in the main thread.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hubdriver import (
    ARTIFACTS,
    PUBLIC_HOST,
    Hub,
    HubSpec,
    RemotePage,
    chromium_args,
    course_files,
    prepare_home,
)
from labdriver import PAGE_WAIT_S, launch_chromium

TIMINGS = pytest.StashKey[dict[str, Any]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def pytest_configure(config: pytest.Config) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE_WAIT_S * 1000)
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # this run's artifacts only
    config.stash[TIMINGS] = {"session_started_monotonic": time.monotonic()}


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    timings = config.stash.get(TIMINGS, {})
    started = timings.pop("session_started_monotonic", None)
    if started is None or len(timings) == 0:
        return
    timings["session_s"] = round(time.monotonic() - started, 2)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "timings.json").write_text(json.dumps(timings, indent=1))
    terminalreporter.write_sep("-", "classroom test: timings and what the browser used")
    terminalreporter.write_line(json.dumps(timings, indent=1))


@pytest.fixture(scope="session")
def timings(pytestconfig: pytest.Config) -> dict[str, Any]:
    """What the tests measured and saw, for the summary and test-artifacts/hub/timings.json."""
    return pytestconfig.stash[TIMINGS]


@pytest.fixture(scope="session")
def hub(timings: dict[str, Any]) -> Iterator[Hub]:
    """A running JupyterHub whose two users have the course's notebooks in their homes."""
    spec = HubSpec()
    workdir = Path(tempfile.mkdtemp(prefix="lessonkit-hub-"))
    files = course_files()
    for user in spec.users:
        prepare_home(workdir / "homes" / user, files)
    started = time.monotonic()
    hub = Hub.start(spec, workdir)
    timings["hub_start_s"] = round(time.monotonic() - started, 2)
    try:
        yield hub
    finally:
        stopping = time.monotonic()
        survivors = hub.stop()
        timings["hub_stop_s"] = round(time.monotonic() - stopping, 2)
        timings["hub_lifetime_s"] = round(time.monotonic() - started, 2)
        timings["processes_started"] = hub.tracker.summary()
        timings["stopped_by_the_test_after_the_hub_exited"] = hub.forced
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(hub.log_path, ARTIFACTS / "jupyterhub.log")
        shutil.rmtree(workdir, ignore_errors=True)
        assert not survivors, f"processes left running after the hub stopped: {survivors}"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium in which hub.test is 127.0.0.1 (a host name, not a loopback address)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright, chromium_args(PUBLIC_HOST))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def remote(browser: Any, hub: Hub, request: pytest.FixtureRequest) -> Iterator[RemotePage]:
    """A page 'on another machine': own cookies, loopback unreachable; artifacts on failure."""
    page = RemotePage.open(browser)
    try:
        yield page
    finally:
        hub.tracker.adopt_tree(hub.process.pid)  # this user's server and kernels, for teardown
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            page.save_artifacts(ARTIFACTS, request.node.name, {"hub-log": hub.log_tail(30_000)})
        page.close()
