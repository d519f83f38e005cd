"""The course on a real JupyterHub, used from a browser on "another machine".

JupyterHub (DummyAuthenticator, LocalProcessSpawner, configurable-http-proxy) runs on
loopback with two users, alice and bob, each a Unix user of their own (conftest.py). Chromium reaches it as http://hub.test:PORT/ and its pages
cannot reach 127.0.0.1 at all, as a learner's laptop could not reach the hub's loopback.
For each user, from the hub's login form:

* the user's JupyterLab has the course's settings (no news pop-up) from the install;
* lesson 03, Run All: both browser-demo panels grow token by token and end with the
  answer, through the course's route /user/<name>/lessonkit/demo/<socket>/; the cell
  after the demo reports what the browser received; "Stream again" streams again; a
  fetch streams with or without `Accept: text/event-stream`; the EventSource life-cycle
  panel, through the same route, goes OPEN, reconnects no sooner than its retry: and
  ends CLOSED after a 204, with no request to the server after it; the page never tried
  loopback;
* lesson 05, Run All: every cell runs without an error.

Then the refusal (both users share one loopback, as on The Littlest JupyterHub): with a
demo running in alice's kernel, bob's page gets 404 for /user/bob/proxy/<port>/... (the
course installs no such route, so not the hub's API either), cannot name alice's socket
through his own route nor through hers, cannot climb out of his folder with "..", and
his own demo still streams; alice's demo opened no TCP port.

Timings and the URLs the demo used go to test-artifacts/hub/timings.json.
"""

from __future__ import annotations

import contextlib
import json
import re
import stat
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
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
from lifecycle import run_choice
from pacing import assert_paced
from playwright.sync_api import expect

from lessonkit.core import llm, sse
from lessonkit.lab.browser_demo import DEMO_PER_TOKEN_MS
from lessonkit.serve.jupyter_route import ROUTE

# A hang guard, not a verdict: a learner's test took 33-41 s here at a load average of 15,
# and its own waits (the login and spawn alone may take 300 s) come first on a busier one.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

USERS = ("alice", "bob")
PANELS = ("eventsource", "fetch")
ANSWER = llm.answer_for(llm.RUNNING_PROMPT).text
LESSON_03 = REPO_ROOT / "notebooks" / "03_reading_the_stream.ipynb"
LESSON_05 = REPO_ROOT / "notebooks" / "05_streaming_in_the_real_world.ipynb"

# Reads one streamed chat completion from the page, through the hub, with or without
# `Accept: text/event-stream`; returns the status and when each body read came (ms).
TIMED_FETCH_JS = """
async ([url, accept]) => {
  const xsrf = document.cookie.split('; ').find((c) => c.startsWith('_xsrf='));
  const headers = { 'Content-Type': 'application/json' };
  if (xsrf) headers['X-XSRFToken'] = decodeURIComponent(xsrf.slice(6));
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
    name = hub.name(user)  # the Unix user's name, which is the hub's
    started = time.monotonic()

    # The hub's login form, the spawn, then JupyterLab under /user/<name>/.
    lab_url = login(page, hub.public_url(), name, hub.spec.password)
    record["login_spawn_lab_s"] = time_since(started)
    assert lab_url.startswith(f"{hub.public_url()}/user/{name}/lab"), lab_url
    assert hub.server_ready(name)
    base_url = f"/user/{name}/"
    assert page_config(page)["baseUrl"] == base_url
    server = hub.user_server(name)
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
        expect(panel.locator(".lk-status")).to_have_text("done")
        expect(panel.locator(".lk-text")).to_have_text(ANSWER)
    changes = page.evaluate("() => window.lkAllTextChanges")
    for kind in PANELS:
        states = demo_panel_states(changes, 0, kind)
        assert_streamed_token_by_token(states, ANSWER, DEMO_PER_TOKEN_MS, f"{kind} (Run All)")
        record[f"{kind}_states_run_all"] = [[round(t), text] for t, text in states]

    # Through the Jupyter server's course route, under this user's base URL, never loopback.
    urls = {k: demo.locator(f".lk-browser-demo-{k}").get_attribute("data-url") for k in PANELS}
    record["demo_urls"] = urls
    match = re.fullmatch(
        rf"{re.escape(hub.public_url() + base_url)}{ROUTE}/([a-z0-9]{{12}})/v1/stream\?prompt=.+",
        urls["eventsource"],
    )
    assert match, urls
    routed = f"{hub.public_url()}{base_url}{ROUTE}/{match.group(1)}"
    assert urls["fetch"] == f"{routed}/v1/chat/completions"

    # The cell after the demo printed what the browser received, under Run All.
    report = output_text(cells[cell_index(LESSON_03, "demo.browser_report()")])
    record["report_cell"] = report
    assert f"through {base_url}{ROUTE}/{match.group(1)}/" in report, report
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

    # Through the course's route a fetch streams whatever its Accept header says.
    with_accept, without = page.evaluate(
        "([url, js]) => Promise.all([eval(js)([url, 'text/event-stream']), eval(js)([url, ''])])",
        [urls["fetch"], TIMED_FETCH_JS],
    )
    record["fetch_reads_ms"] = {"with Accept": with_accept["reads"], "without": without["reads"]}
    for reads, accept in ((with_accept, "text/event-stream"), (without, "no Accept")):
        assert reads["status"] == 200, reads
        assert_paced(reads["reads"], DEMO_PER_TOKEN_MS, f"fetch through the route ({accept})")

    check_life_cycle(page, f"{routed}/v1/stream?", record)

    # The page never tried loopback, and could not have: a probe is aborted.
    assert remote.blocked == [], remote.blocked
    probe = page.evaluate(
        "async (u) => { try { await fetch(u); return 'reached'; }"
        " catch (e) { return 'blocked: ' + e.message; } }",
        f"http://127.0.0.1:{hub.hub_port}/hub/api/",
    )
    assert probe.startswith("blocked"), probe
    assert all(LOOPBACK_URL.match(u.split(" ", 1)[1]) for u in remote.blocked)
    remote.blocked.clear()
    hosts = {h for h in remote.hosts if not LOOPBACK_URL.match(f"http://{h}/")}
    assert hosts == {f"{hub.public_url().split('://', 1)[1]}"}, remote.hosts


def check_life_cycle(page: Any, stream_url: str, record: dict[str, Any]) -> None:
    """Run lesson 03's EventSource life-cycle panel (a 204 on reconnect, retry: 1000 ms)."""
    panel = page.locator(".jp-Notebook .jp-Cell").nth(cell_index(LESSON_03, "EventSourceLife("))
    mark = time.monotonic()
    run = run_choice(page, panel, "204", "1000")
    record["life_cycle_s"] = time_since(mark)
    record["life_cycle"] = {"url": run.url, "states": run.states, "requests": run.requests}
    assert run.url.startswith(stream_url), run.url  # the demo's own route, under /user/<name>/
    first = [("created", 0), ("open", 1), *[("message", 1)] * 3, ("error", 0)]
    assert run.states == [*first, ("error", 2), ("quiet", 2)], run.rows
    (delay,) = run.delays_ms
    assert delay >= 1000, run.rows  # no sooner than retry: 1000
    # The server's own log: the first request, the reconnect answered 204, nothing after.
    assert [(r["last_event_id"], r["status"]) for r in run.requests] == [("", 200), ("2", 204)]
    assert run.rows[-1]["text"].endswith("no request reached the server since"), run.rows


# --- one learner, another learner's demo -------------------------------------------------------

# Starts the course's demo server in a kernel; prints its socket name and path.
START_DEMO = (
    "from lessonkit.lab import browser_demo\n"
    f"server = browser_demo.start_server(prefill_ms=100, per_token_ms={DEMO_PER_TOKEN_MS})\n"
    "print(server.socket_name, server.socket_path)"
)

# GETs a URL from the page as browser_demo.js would: final status and URL, body, read times.
PAGE_GET_JS = """
async (url) => {
  const started = performance.now();
  const response = await fetch(url, { headers: { Accept: 'text/event-stream' } });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const reads = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    reads.push(Math.round(performance.now() - started));
  }
  return { status: response.status, url: response.url, text, reads };
}
"""


def kernel_listening_ports(hub: Hub, kernel_id: str) -> set[int]:
    """Return the TCP ports the kernel process kernel_id listens on."""
    for process in psutil.Process(hub.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if any(f"kernel-{kernel_id}.json" in part for part in process.cmdline()):
                connections = process.net_connections(kind="inet")
                return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}
    raise AssertionError(f"no process runs kernel {kernel_id}")


def start_demo_in_a_kernel(hub: Hub, user: str) -> tuple[str, Path, str, set[int], set[int]]:
    """Start a kernel of `user` and the demo in it: (name, socket path, kernel id, ports before, after)."""
    server = hub.ensure_server(user)
    kernel_id = server.api("POST", "/api/kernels", json={"name": "python3"}).json()["id"]
    with server.kernel_client(kernel_id) as kernel:
        kernel.execute("import lessonkit.lab.browser_demo")
        before = kernel_listening_ports(hub, kernel_id)
        name, path = kernel.execute(START_DEMO).split()
        after = kernel_listening_ports(hub, kernel_id)
    hub.tracker.adopt_tree(hub.process.pid)
    return name, Path(path), kernel_id, before, after


def test_a_learner_reaches_only_their_own_demo_and_no_loopback_port(
    hub: Hub, remote: RemotePage, timings: dict[str, Any]
) -> None:
    alice, bob = (hub.name(role) for role in USERS)
    record = timings.setdefault("refusal", {})
    started = time.monotonic()
    alices, path, alice_kernel, before, after = start_demo_in_a_kernel(hub, alice)
    bobs, _, bob_kernel, _, _ = start_demo_in_a_kernel(hub, bob)
    record["start_two_demos_s"] = time_since(started)

    # Alice's demo is a socket only she can open, and it opened no TCP port.
    assert after == before, f"the demo server opened TCP ports {after - before}"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_ISSOCK(path.stat().st_mode)
    assert path.is_relative_to(hub.home(alice))

    page, public = remote.page, hub.public_url()
    login(page, public, bob, hub.spec.password)

    def get(path: str) -> dict[str, Any]:
        got = page.evaluate(PAGE_GET_JS, f"{public}{path}")
        record[path] = {"status": got["status"], "final_url": got["url"], "body": got["text"][:200]}
        assert "lessonkit-sim" not in got["text"] or path.startswith(f"/user/{bob}/{ROUTE}/{bobs}")
        return got

    # No proxy route at all: not to the hub's API (8081 by default, here its own port).
    for port in (8081, hub.hub_port):
        assert get(f"/user/{bob}/proxy/{port}/hub/api/")["status"] == 404
    # Bob's route looks only in Bob's folder: Alice's socket name is unknown there.
    refused = get(f"/user/{bob}/{ROUTE}/{alices}/v1/models")
    assert refused["status"] == 404 and "no demo server named" in refused["text"], refused
    # Nor can a name climb out of his folder into hers.
    climb = f"..%2F..%2F..%2F..%2F..%2F..%2F{alice}%2F.local%2Fshare%2Fjupyter%2Fruntime"
    refused = get(f"/user/{bob}/{ROUTE}/{climb}%2Flessonkit%2F{alices}/v1/models")
    assert refused["status"] == 404 and "12 lowercase letters" in refused["text"], refused
    # Alice's own route is hers: the hub does not let Bob's login into her server.
    theirs = get(f"/user/{alice}/{ROUTE}/{alices}/v1/models")
    assert theirs["status"] == 403, theirs

    # And Bob's own demo still streams to Bob's page, token by token.
    own = get(f"/user/{bob}/{ROUTE}/{bobs}/v1/stream?prompt={llm.RUNNING_PROMPT}")
    assert own["status"] == 200, own
    events = sse.SSEDecoder().feed(own["text"].encode())
    deltas = [json.loads(e.data)["delta"] for e in events if e.event == "message"]
    assert "".join(deltas) == ANSWER, events
    assert own["reads"][-1] - own["reads"][0] >= 3 * DEMO_PER_TOKEN_MS, own["reads"]
    record["own_stream_reads_ms"] = own["reads"]

    for user, kernel_id in ((alice, alice_kernel), (bob, bob_kernel)):
        hub.user_server(user).api("DELETE", f"/api/kernels/{kernel_id}")
    record["test_s"] = time_since(started)
