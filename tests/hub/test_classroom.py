"""The course on a real JupyterHub, used from a browser on "another machine".

JupyterHub (DummyAuthenticator, SimpleLocalProcessSpawner, configurable-http-proxy) runs
on loopback with two users. Chromium reaches it as http://hub.test:PORT/ and its pages
cannot reach 127.0.0.1 at all, as a learner's laptop could not reach the hub's loopback.
For each user, from the hub's login form:

* the user's JupyterLab has the course's settings (no news pop-up) from the install;
* lesson 03, Run All: both browser-demo panels grow token by token and end with the
  answer, through /user/<name>/proxy/<port>/; the cell after the demo reports what the
  browser received; "Stream again" streams again; through this hub's proxy a fetch
  streams only with `Accept: text/event-stream`; the page never tried loopback;
* lesson 05, Run All: every cell runs without an error.

Timings and the URLs the demo used go to test-artifacts/hub/timings.json.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hubdriver import (
    ARTIFACTS,
    COURSE_FOLDER,
    LOOPBACK_URL,
    Hub,
    RemotePage,
    login,
    output_text,
    page_config,
    time_since,
)
from labdriver import (
    DEMO_NEWER_RUN_DONE_JS,
    DEMO_TEXT_CHANGES_JS,
    REPO_ROOT,
    assert_streamed_token_by_token,
    close_notebook,
    code_cell_indices,
    demo_panel_states,
    open_notebook,
    run_all_and_wait,
    tracebacks,
)
from pacing import assert_paced
from playwright.sync_api import expect

from lessonkit.core import llm
from lessonkit.lab.browser_demo import DEMO_PER_TOKEN_MS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

USERS = ("alice", "bob")
PANELS = ("eventsource", "fetch")
ANSWER = llm.answer_for(llm.RUNNING_PROMPT).text
LESSON_03 = REPO_ROOT / "notebooks" / "03_reading_the_stream.ipynb"
LESSON_05 = REPO_ROOT / "notebooks" / "05_streaming_in_the_real_world.ipynb"

# Reads one streamed chat completion from the page, through the hub, with or without
# `Accept: text/event-stream`; returns the status and when each body read came (ms).
TIMED_FETCH_JS = """
async ([url, accept]) => {
  const headers = { 'Content-Type': 'application/json' };
  if (accept) headers.Accept = accept;
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify({
    model: 'lessonkit-sim', stream: true,
    messages: [{ role: 'user', content: 'When will my order arrive?' }] }) });
  const reader = response.body.getReader();
  const reads = [];
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
    reads.push(Math.round(performance.now() - started));
  }
  return { status: response.status, reads };
}
"""


def cell_index(notebook: Path, needle: str) -> int:
    """Return the index of the one cell whose source contains needle."""
    found = [
        i for i, c in enumerate(nbformat.read(notebook, as_version=4).cells) if needle in c.source
    ]
    assert len(found) == 1, f"{notebook.name}: {len(found)} cells contain {needle!r}"
    return found[0]


def in_home(notebook: Path) -> str:
    """The notebook's path in a user's home, as their Jupyter server names it."""
    return f"{COURSE_FOLDER}/notebooks/{notebook.name}"


@pytest.mark.parametrize("user", USERS)
def test_a_learner_runs_lessons_03_and_05_from_another_machine(
    user: str, hub: Hub, remote: RemotePage, timings: dict[str, Any]
) -> None:
    page, record = remote.page, timings.setdefault(user, {})
    started = time.monotonic()

    # The hub's login form, the spawn, then JupyterLab under /user/<name>/.
    lab_url = login(page, hub.public_url(), user, hub.spec.password)
    record["login_spawn_lab_s"] = time_since(started)
    assert lab_url.startswith(f"{hub.public_url()}/user/{user}/lab"), lab_url
    assert hub.server_ready(user)
    base_url = f"/user/{user}/"
    assert page_config(page)["baseUrl"] == base_url
    server = hub.user_server(user)
    notification = server.api(
        "GET", "/lab/api/settings/@jupyterlab/apputils-extension:notification"
    ).json()
    # The course's settings reached this server: they are the defaults of its schema.
    defaults = {k: v.get("default") for k, v in notification["schema"]["properties"].items()}
    assert defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False, defaults

    check_lesson_03(page, remote, hub, server, base_url, record)
    hub.tracker.adopt_tree(hub.process.pid)
    close_notebook(page, server, in_home(LESSON_03))

    mark = time.monotonic()
    open_notebook(page, server, in_home(LESSON_05))
    cells = run_all_and_wait(page, server, in_home(LESSON_05), code_cell_indices(LESSON_05))
    record["lesson_05_open_and_run_all_s"] = time_since(mark)
    assert not tracebacks(cells), "\n".join(tracebacks(cells))
    ran = [c for c in cells if c.index in code_cell_indices(LESSON_05)]
    assert ran and all(c.executed for c in ran)
    hub.tracker.adopt_tree(hub.process.pid)
    close_notebook(page, server, in_home(LESSON_05))
    record["test_s"] = time_since(started)


def check_lesson_03(
    page: Any, remote: RemotePage, hub: Hub, server: Any, base_url: str, record: dict[str, Any]
) -> None:
    """Run All of lesson 03 and check its browser demo as this learner's page saw it."""
    path = in_home(LESSON_03)
    mark = time.monotonic()
    open_notebook(page, server, path)
    record["lesson_03_open_kernel_idle_s"] = time_since(mark)

    page.evaluate(DEMO_TEXT_CHANGES_JS)  # every panel state from before Run All on
    mark = time.monotonic()
    cells = run_all_and_wait(page, server, path, code_cell_indices(LESSON_03))
    record["lesson_03_run_all_s"] = time_since(mark)
    assert not tracebacks(cells), "\n".join(tracebacks(cells))

    demo = page.locator(".jp-Notebook .jp-Cell").nth(cell_index(LESSON_03, "BrowserStreamDemo("))
    for kind in PANELS:
        panel = demo.locator(f".lk-browser-demo-{kind}")
        expect(panel.locator(".lk-status")).to_have_text("done", timeout=30_000)
        expect(panel.locator(".lk-text")).to_have_text(ANSWER)
    changes = page.evaluate("() => window.lkAllTextChanges")
    for kind in PANELS:
        states = demo_panel_states(changes, 0, kind)
        assert_streamed_token_by_token(states, ANSWER, DEMO_PER_TOKEN_MS, f"{kind} (Run All)")
        record[f"{kind}_states_run_all"] = [[round(t), text] for t, text in states]

    # Through the Jupyter server, under this user's base URL, never loopback.
    urls = {k: demo.locator(f".lk-browser-demo-{k}").get_attribute("data-url") for k in PANELS}
    record["demo_urls"] = urls
    match = re.fullmatch(
        rf"{re.escape(hub.public_url() + base_url)}proxy/(\d+)/v1/stream\?prompt=.+",
        urls["eventsource"],
    )
    assert match, urls
    proxied = f"{hub.public_url()}{base_url}proxy/{match.group(1)}"
    assert urls["fetch"] == f"{proxied}/v1/chat/completions"

    # The cell after the demo printed what the browser received, under Run All.
    report = output_text(cells[cell_index(LESSON_03, "demo.browser_report()")])
    record["report_cell"] = report
    assert f"through {base_url}proxy/{match.group(1)}/" in report, report
    for name in ("EventSource", "fetch"):
        assert re.search(rf"{name} ?: done, 6 tokens", report), report
    assert report.count(repr(ANSWER)) == 2, report

    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # what the learner saw, for people
    demo.screenshot(path=str(ARTIFACTS / f"{base_url.strip('/').replace('/', '-')}-demo.png"))

    # "Stream again" after Run All: the kernel's server is still there.
    page.evaluate(DEMO_TEXT_CHANGES_JS)
    root = demo.element_handle()
    runs = {k: int(demo.locator(f".lk-browser-demo-{k}").get_attribute("data-run")) for k in PANELS}
    mark = time.monotonic()
    demo.locator(".lk-browser-demo-run").click()
    for kind in PANELS:
        page.wait_for_function(DEMO_NEWER_RUN_DONE_JS, arg=[root, kind, runs[kind]])
    record["stream_again_s"] = time_since(mark)
    changes = page.evaluate("() => window.lkAllTextChanges")
    for kind in PANELS:
        states = demo_panel_states(changes, 0, kind)
        assert_streamed_token_by_token(states, ANSWER, DEMO_PER_TOKEN_MS, f"{kind} (again)")

    # Through this hub, a fetch streams only with exactly `Accept: text/event-stream`.
    streamed, held = page.evaluate(
        "([url, js]) => Promise.all([eval(js)([url, 'text/event-stream']), eval(js)([url, ''])])",
        [urls["fetch"], TIMED_FETCH_JS],
    )
    record["fetch_reads_ms"] = {"with Accept": streamed["reads"], "without Accept": held["reads"]}
    assert streamed["status"] == held["status"] == 200
    assert_paced(streamed["reads"], DEMO_PER_TOKEN_MS, "fetch with Accept: text/event-stream")
    # Without it, nothing arrives before the last of the 6 tokens was generated (a lower
    # bound: the prefill is not even counted), and the body comes in a burst.
    assert held["reads"][0] >= 5 * DEMO_PER_TOKEN_MS, held
    with pytest.raises(AssertionError):
        assert_paced(held["reads"], DEMO_PER_TOKEN_MS)

    # The page never tried loopback, and could not have: a probe is aborted.
    assert remote.blocked == [], remote.blocked
    probe = page.evaluate(
        "async (u) => { try { await fetch(u); return 'reached'; }"
        " catch (e) { return 'blocked: ' + e.message; } }",
        f"http://127.0.0.1:{match.group(1)}/v1/models",
    )
    assert probe.startswith("blocked"), probe
    assert all(LOOPBACK_URL.match(u.split(" ", 1)[1]) for u in remote.blocked)
    remote.blocked.clear()
    hosts = {h for h in remote.hosts if not LOOPBACK_URL.match(f"http://{h}/")}
    assert hosts == {f"{hub.public_url().split('://', 1)[1]}"}, remote.hosts
