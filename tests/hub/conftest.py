"""Fixtures for the classroom test: one JupyterHub whose learners are Unix users, one Chromium.

learner_accounts
          alice and bob as real Unix users (accounts.py): unique names (lk-alice-3f9a2c),
          homes 0700, removed at the end of the session even when a test failed or the
          run got SIGTERM; what a SIGKILLed run left (its accounts, its hub's processes,
          its folders) is removed first. Not root: every test fails, saying why (only
          root can make users and switch to them).
share     a 0755 folder outside /root for what every learner must reach: the course's
          environment (tools/hub_venv.sh: Debian's Python, the course installed as a
          copy), the class drop box (mode 1733, root's) and a read-only shared copy of the
          course.
hub       JupyterHub as root, LocalProcessSpawner (each learner's server runs as their
          Unix user, in their home), configurable-http-proxy on free loopback ports;
          c.Spawner.environment names the drop box. Each home holds the course folder
          (outputs cleared) as nbgitpuller would put it: alice's exercises solved, bob's
          blank but ex1. bob's server runs its kernels over Unix sockets
          (KernelManager.transport = "ipc"), alice's over loopback TCP, JupyterHub's
          default: test_isolation shows what each keeps apart. Teardown stops every process
          of the run by pid and fails if anything survived.
learners  each learner's own kernel (started in their exercises/ folder) to run code as
          that learner: what their notebook could do.
browser   Chromium (as tests/browser finds it) with hub.test resolving to 127.0.0.1.
remote    a fresh browser context per test (own cookies, so own user) whose page cannot
          reach loopback addresses; screenshot, console, blocked requests and the hub's
          log go to test-artifacts/hub/ when the test fails.
timings   a dict each test adds to: printed at the end, written to test-artifacts/hub/;
          under "isolation", each check's result for alice and for bob.

Playwright's expect() waits up to labdriver.PAGE_WAIT_S here, not its own 5 s: what it
checks comes from a kernel behind the hub, which a loaded machine answers late.

Run in a pytest process of its own (`make hub`), like tests/browser: Playwright's sync
API keeps an event loop in the main thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import accounts
import pytest
from accounts import Account
from hubdriver import (
    ARTIFACTS,
    COURSE_FOLDER,
    PUBLIC_HOST,
    RUN_MARKER,
    Hub,
    HubSpec,
    RemotePage,
    chromium_args,
    course_files,
    prepare_home,
)
from labdriver import PAGE_WAIT_S, REPO_ROOT, launch_chromium
from learners import ATTEMPT, Learner, Share

from lessonkit.learner.dropbox import DROPBOX_ENV

TIMINGS = pytest.StashKey[dict[str, Any]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def _stop_as_on_ctrl_c(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    from playwright.sync_api import expect

    # A run stopped with SIGTERM (a CI timeout, `kill`) tears its fixtures down as after
    # Ctrl-C: the hub stopped, the learners' accounts removed. (SIGKILL: sweep, next run.)
    signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)

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
    checks = timings.get("isolation", {})
    if checks:
        lines = ["| check | alice | bob |", "|---|---|---|"]
        for check, met in checks.items():
            cells = (met.get(role, "-").replace("|", "/") for role in ("alice", "bob"))
            lines.append(f"| {check} | {' | '.join(cells)} |")
        (ARTIFACTS / "isolation.md").write_text("\n".join(lines) + "\n")
        terminalreporter.write_sep("-", "classroom test: what each learner met (isolation.md)")
        terminalreporter.write_line("\n".join(lines))


@pytest.fixture(scope="session")
def timings(pytestconfig: pytest.Config) -> dict[str, Any]:
    """What the tests measured and saw, for the summary and test-artifacts/hub/timings.json."""
    return pytestconfig.stash[TIMINGS]


ROLES = ("alice", "bob")
IPC_ROLE = "bob"  # whose server runs its kernels over Unix sockets


@pytest.fixture(scope="session")
def run_id() -> str:
    """This run's id: in its accounts' GECOS field and in every process of its hub."""
    return uuid.uuid4().hex


@pytest.fixture(scope="session")
def learner_accounts(timings: dict[str, Any], run_id: str) -> Iterator[dict[str, Account]]:
    """alice and bob as Unix users of this run, removed at the end whatever happened."""
    problem = accounts.not_root()
    if problem:
        pytest.fail(problem, pytrace=False)
    swept = accounts.sweep(RUN_MARKER)
    if swept:
        timings["left_by_killed_runs_and_removed"] = swept
    made = accounts.make(ROLES, run_id)
    try:
        yield made
    finally:
        left = accounts.remove(made.values())
        assert not left, f"the test's accounts could not all be removed: {left}"


def _digest(files: list[Path], root: Path) -> str:
    sha = hashlib.sha256()
    for path in files:
        sha.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


@pytest.fixture(scope="session")
def share(timings: dict[str, Any]) -> Iterator[Share]:
    """Build the course's environment every user can run, the drop box and the shared copy."""
    share = Share(accounts.folder("share"))
    try:
        share.root.chmod(0o755)
        started = time.monotonic()
        built = subprocess.run(
            [str(REPO_ROOT / "tools" / "hub_venv.sh"), str(share.root / "venv"), version("jupyterhub")],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert built.returncode == 0, f"tools/hub_venv.sh failed:\n{built.stdout}{built.stderr}"
        timings["course_environment_build_s"] = round(time.monotonic() - started, 2)
        # The course under test, not a cached build of an older one.
        installed = subprocess.run(
            [str(share.python), "-c", "import lessonkit, pathlib; print(pathlib.Path(lessonkit.__file__).parent)"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip()  # fmt: skip
        ours = sorted((REPO_ROOT / "lessonkit").rglob("*.py"))
        theirs = sorted(Path(installed).rglob("*.py"))
        assert _digest(theirs, Path(installed)) == _digest(ours, REPO_ROOT / "lessonkit")
        share.dropbox.mkdir()
        share.dropbox.chmod(0o1733)  # learners write, none lists; each replaces only their own
        prepare_home(share.shared_course.parent, course_files(REPO_ROOT / "exercises"))
        for folder, _, files in os.walk(share.shared_course):  # whatever this run's umask
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        yield share
    finally:
        shutil.rmtree(share.root, ignore_errors=True)


@pytest.fixture(scope="session")
def hub(
    timings: dict[str, Any], learner_accounts: dict[str, Account], share: Share, run_id: str
) -> Iterator[Hub]:
    """A running JupyterHub whose users are alice's and bob's Unix accounts, their course
    folders in their homes."""
    names = {role: account.name for role, account in learner_accounts.items()}
    spec = HubSpec(
        users=tuple(names.values()),
        python=share.python,
        unix_users=True,
        environment={DROPBOX_ENV: str(share.dropbox)},
        ipc_users=(names[IPC_ROLE],),
        roles=names,
        run_id=run_id,
    )
    # alice's exercises are solved, bob's blank but ex1: two learners, two scores.
    exercises = {"alice": REPO_ROOT / "solutions", "bob": REPO_ROOT / "exercises"}
    for role, account in learner_accounts.items():
        prepare_home(account.home, course_files(exercises[role]))
    ex1 = f"{COURSE_FOLDER}/exercises/ex1_response_times.ipynb"
    bob = learner_accounts["bob"]
    prepare_home(bob.home, {ex1: course_files(REPO_ROOT / "solutions")[ex1]})
    for account in learner_accounts.values():
        accounts.give(account, account.home / COURSE_FOLDER)
    workdir = accounts.folder("hub")  # 0700: the hub's secrets
    started = time.monotonic()
    hub = None
    try:
        hub = Hub.start(spec, workdir)
        timings["hub_start_s"] = round(time.monotonic() - started, 2)
        yield hub
    finally:
        if hub is not None:
            stopping = time.monotonic()
            survivors = hub.stop()
            timings["hub_stop_s"] = round(time.monotonic() - stopping, 2)
            timings["hub_lifetime_s"] = round(time.monotonic() - started, 2)
            timings["processes_started"] = hub.tracker.summary()
            timings["stopped_by_the_test_after_the_hub_exited"] = hub.forced
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(hub.log_path, ARTIFACTS / "jupyterhub.log")
        shutil.rmtree(workdir, ignore_errors=True)
        assert hub is None or not survivors, f"processes left running after the hub: {survivors}"


@pytest.fixture(scope="session")
def learners(hub: Hub, learner_accounts: dict[str, Account]) -> dict[str, Learner]:
    """alice's and bob's servers (started once for the session) and a kernel of each."""
    found = {}
    for role, account in learner_accounts.items():
        server = hub.ensure_server(account.name)
        kernel = server.api(
            "POST", "/api/kernels", json={"name": "python3", "path": f"{COURSE_FOLDER}/exercises"}
        )
        found[role] = Learner(role, account, server, kernel.json()["id"])
        found[role].run(ATTEMPT)
    hub.tracker.adopt_tree(hub.process.pid)
    return found


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
