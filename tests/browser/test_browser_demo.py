"""Lesson 03's browser demo streams tokens into the page as they arrive, not in one burst.

The demo widget (lessonkit.lab.browser_demo) reads the kernel's server twice from the
page itself, with EventSource and with fetch + a stream reader, always through the
Jupyter server's course route (``/lessonkit/demo/<socket name>/...`` here, as in ``make
lab``) to the server's Unix socket; the kernel opens no TCP port for it. A MutationObserver in the page records every change of a panel's text with
its time, so the tests see each state the learner saw, from Run All on. The same demo
behind a buffering proxy is the control: there the whole answer must land at once,
which shows the timing check can tell the two apart. The classroom version of these
checks (a JupyterHub, a browser on "another machine") is tests/hub.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    DEMO_NEWER_RUN_DONE_JS,
    DEMO_TEXT_CHANGES_JS,
    PAGE_WAIT_S,
    LabServer,
    assert_streamed_token_by_token,
    close_notebook,
    code_cell_indices,
    demo_panel_states,
    distinct_texts,
    normalized,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    save_artifacts,
    tracebacks,
    write_scratch_notebook,
)
from pacing import paced_in_one_of
from playwright.sync_api import expect

from lessonkit.core import llm, sse
from lessonkit.lab import browser_demo

pytestmark = pytest.mark.browser

# The demo's own pace: slow enough that a busy machine cannot merge tokens. At 120 ms a
# token the whole answer took 0.7 s, and with every stage of `make test` at 100% CPU the
# page's main thread stalled twice for ~450 ms and drew it in two bursts; at 300 ms a
# stall that long merges two tokens at most.
PER_TOKEN_MS = 300
# How long the report cell waits for the page to report (its default is 5 s for a page to
# start, 30 s for the runs to end): the page may take longer than that to draw the demo on
# a loaded machine, and the report would then say "no browser".
REPORT_WAIT_S = 2 * PAGE_WAIT_S
PANELS = ("eventsource", "fetch")
ANSWER = llm.answer_for(llm.RUNNING_PROMPT)
DEMO_JS = Path(browser_demo.__file__).with_name("browser_demo.js").read_text()

RECORD_TEXT_CHANGES_JS = """
([root, kind]) => {
  const text = root.querySelector(`.lk-browser-demo-${kind} .lk-text`);
  const changes = [];
  new MutationObserver(() => changes.push([performance.now(), text.textContent])).observe(
    text, { childList: true, subtree: true, characterData: true });
  window.lkTextChanges = changes;
  window.lkRecordingSince = performance.now();  // just before "Stream again" is clicked
}
"""

# Runs code in the notebook's kernel from the page, as a cell would; returns its stdout.
EXECUTE_IN_KERNEL_JS = """
async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code });
  let out = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') out += msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return out;
}
"""

# Imports browser_demo.js into the page the way anywidget does (a module from a Blob).
IMPORT_DEMO_JS = """
async (source) => {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  window.lkDemoModule = await import(url);
  return Object.keys(window.lkDemoModule).sort();
}
"""


@dataclass
class DemoPage:
    """The notebook's page: the demo, its report cell, and the demo behind a buffering proxy."""

    page: Any
    direct: Any
    report_cell: Any
    buffered: Any
    socket_name: str
    run_all_changes: list[tuple[float, str, str]]


@pytest.fixture(scope="module")
def demo_page(lab: LabServer, lab_page: Any, scratch_dir: Path) -> Iterator[DemoPage]:
    """Run All of a notebook like lesson 03's demo section, watched from before Run All."""
    notebook = write_scratch_notebook(
        scratch_dir,
        "browser_demo.ipynb",
        [
            "import contextlib\n"
            "from lessonkit import serve\n"
            "from lessonkit.lab import browser_demo\nfrom lessonkit.serve import proxy\n"
            f"server = browser_demo.start_server(prefill_ms=300, per_token_ms={PER_TOKEN_MS})\n"
            "stack = contextlib.ExitStack()\n"
            # The control: a course server behind a buffering proxy, served to the page.
            f"upstream = stack.enter_context(serve.running(prefill_ms=300, per_token_ms={PER_TOKEN_MS}))\n"
            "buffering = proxy.create_proxy_app(upstream, buffer=True)\n"
            "buffered = stack.enter_context(browser_demo.serving_to_the_page(\n"
            "    buffering, on_stop=buffering.state.proxy.close_soon))\n"
            "print('socket', server.socket_name)",
            "demo = browser_demo.BrowserStreamDemo(server)\ndemo",
            # Generous for a loaded machine: the report comes as soon as both panels finish.
            f"print(demo.browser_report(grace_s={REPORT_WAIT_S}, timeout_s={REPORT_WAIT_S}))",
            "browser_demo.BrowserStreamDemo(buffered)",
        ],
    )
    path = relative_to_root(notebook)
    page = lab_page.page
    try:
        open_notebook(page, lab, path)
        page.evaluate(DEMO_TEXT_CHANGES_JS)
        cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(cells), "\n".join(tracebacks(cells))
        socket_name = re.search(r"socket ([a-z0-9]{12})", cells[0].outputs[0].text).group(1)
        outputs = page.locator(".jp-Notebook .jp-Cell")
        direct, buffered = outputs.nth(1), outputs.nth(3)
        for output in (direct, buffered):
            for kind in PANELS:
                status = output.locator(f".lk-browser-demo-{kind} .lk-status")
                expect(status).to_have_text("done", timeout=PAGE_WAIT_S * 1000)
        changes = page.evaluate("() => window.lkAllTextChanges")
    except BaseException:
        save_artifacts(page, "browser-demo-setup", lab_page.console_lines)
        close_notebook(page, lab, path)
        raise
    yield DemoPage(page, direct, outputs.nth(2), buffered, socket_name, changes)
    close_notebook(page, lab, path)


@pytest.fixture
def demo(demo_page: DemoPage, page: Any) -> DemoPage:
    """The demo page for one test (screenshot saved if the test fails)."""
    return demo_page


def restart_and_record(page: Any, output: Any, kind: str) -> list[tuple[float, str]]:
    """Click "Stream again" in output; return each distinct non-empty text of panel kind, timed.

    Times are in ms since just before the click.
    """
    for other in PANELS:  # a run still going would change the text under the observer
        status = output.locator(f".lk-browser-demo-{other} .lk-status")
        expect(status).not_to_have_text("streaming", timeout=PAGE_WAIT_S * 1000)
    root = output.element_handle()
    before = int(output.locator(f".lk-browser-demo-{kind}").get_attribute("data-run"))
    page.evaluate(RECORD_TEXT_CHANGES_JS, [root, kind])
    output.locator(".lk-browser-demo-run").click()
    page.wait_for_function(
        DEMO_NEWER_RUN_DONE_JS, arg=[root, kind, before], timeout=PAGE_WAIT_S * 1000
    )
    since_ms = page.evaluate("() => window.lkRecordingSince")
    changes = page.evaluate("() => window.lkTextChanges")
    return distinct_texts([(at_ms - since_ms, text) for at_ms, text in changes])


@pytest.mark.parametrize("which", ["direct", "buffered"])
def test_both_panels_finish_with_the_whole_answer_when_the_demo_first_renders(
    demo: DemoPage, which: str
) -> None:
    for kind in PANELS:
        panel = getattr(demo, which).locator(f".lk-browser-demo-{kind}")
        expect(panel.locator(".lk-status")).to_have_text("done", timeout=PAGE_WAIT_S * 1000)
        expect(panel.locator(".lk-text")).to_have_text(ANSWER.text)


@pytest.mark.parametrize("kind", PANELS)
def test_under_run_all_the_text_grows_token_by_token(demo: DemoPage, kind: str) -> None:
    states = demo_panel_states(demo.run_all_changes, 0, kind)
    assert_streamed_token_by_token(states, ANSWER.text, PER_TOKEN_MS, f"{kind} under Run All")


def test_the_cell_after_the_demo_reports_what_the_browser_received(demo: DemoPage) -> None:
    report = normalized(demo.report_cell.locator(".jp-OutputArea-output").first.text_content())
    assert f"through /lessonkit/demo/{demo.socket_name}/" in report, report
    for name in ("EventSource", "fetch"):
        assert re.search(rf"{name} ?: done, {len(ANSWER.tokens)} tokens", report), report
    assert report.count(repr(ANSWER.text)) == 2, report


def test_the_page_reads_the_kernel_server_through_the_jupyter_server(
    demo: DemoPage, lab: LabServer
) -> None:
    routed = f"{lab.base_url}/lessonkit/demo/{demo.socket_name}"
    eventsource = demo.direct.locator(".lk-browser-demo-eventsource")
    fetch = demo.direct.locator(".lk-browser-demo-fetch")
    assert eventsource.get_attribute("data-url").startswith(f"{routed}/v1/stream?prompt=")
    assert fetch.get_attribute("data-url") == f"{routed}/v1/chat/completions"


@pytest.mark.parametrize("kind", PANELS)
def test_stream_again_shows_the_text_growing_token_by_token(demo: DemoPage, kind: str) -> None:
    # Each try is a new click on "Stream again" (tests/support/pacing.py: a stall of the whole
    # machine can squeeze one run; a stream held back is squeezed in every try).
    paced_in_one_of(
        lambda: restart_and_record(demo.page, demo.direct, kind),
        lambda states: assert_streamed_token_by_token(
            states, ANSWER.text, PER_TOKEN_MS, f"{kind} after Stream again"
        ),
    )
    tokens = demo.direct.locator(f".lk-browser-demo-{kind} .lk-token")
    assert tokens.count() == len(ANSWER.tokens)


@pytest.mark.parametrize("kind", PANELS)
def test_behind_a_buffering_proxy_the_whole_text_arrives_in_one_burst(
    demo: DemoPage, kind: str
) -> None:
    states = restart_and_record(demo.page, demo.buffered, kind)

    assert states[-1][1] == ANSWER.text
    # Nothing shows before the server generated the last token (prefill 300 ms, then one
    # token every PER_TOKEN_MS; a lower bound, which no busy machine can fail) ...
    last_token_due_ms = 300 + (len(ANSWER.tokens) - 1) * PER_TOKEN_MS
    assert states[0][0] >= last_token_due_ms, states
    # ... and the check the direct demo passes tells this one apart.
    with pytest.raises(AssertionError):
        assert_streamed_token_by_token(states, ANSWER.text, PER_TOKEN_MS, f"{kind} buffered")


def test_stream_again_starts_a_stopped_server_again(demo: DemoPage) -> None:
    stopped = demo.page.evaluate(EXECUTE_IN_KERNEL_JS, "server.stop(); print(server.running)")
    assert stopped.strip() == "False", stopped
    for kind in PANELS:
        restart_and_record(demo.page, demo.direct, kind)
        panel = demo.direct.locator(f".lk-browser-demo-{kind}")
        expect(panel.locator(".lk-text")).to_have_text(ANSWER.text)
    running = demo.page.evaluate(EXECUTE_IN_KERNEL_JS, "print(server.running, server.socket_name)")
    assert running.split() == ["True", demo.socket_name], running


# --- browser_demo.js's own functions, in the browser -----------------------------------------


@pytest.fixture
def blank_page(browser: Any) -> Iterator[Any]:
    """A page outside JupyterLab with browser_demo.js imported as window.lkDemoModule."""
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<html><body></body></html>")
    exported = page.evaluate(IMPORT_DEMO_JS, DEMO_JS)
    assert {"EventBlocks", "jupyterBaseUrl", "demoUrl", "xsrfHeaders", "default"} <= set(exported)
    yield page
    context.close()


FEED_PIECES_JS = """
(pieces) => {
  const blocks = new window.lkDemoModule.EventBlocks();
  return pieces.flatMap((piece) => blocks.feed(piece));
}
"""


def reference_data(wire: bytes) -> list[str]:
    """The data of each event, by the course's WHATWG decoder (the reference)."""
    return [event.data for event in sse.SSEDecoder().feed(wire)]


@pytest.mark.parametrize("line_end", ["\r\n", "\n", "\r"])
def test_event_blocks_give_the_same_events_at_every_two_cut_split(
    blank_page: Any, line_end: str
) -> None:
    wire = "".join(data.decode() for _, data in llm.stream_writes(ANSWER, "openai"))
    wire = wire.replace("\n", line_end) + f": ping{line_end}{line_end}"
    expected = reference_data(wire.encode())
    cuts = [(i, j) for i in range(len(wire) + 1) for j in (i, i + 7)]
    # The page cuts the wire itself (by code points, as Python slices) and sends back only
    # the splits that differ: a few kB over the wire instead of every split twice.
    wrong = blank_page.evaluate(
        """([wire, cuts, expected]) => {
          const chars = Array.from(wire), part = (a, b) => chars.slice(a, b).join('');
          const want = JSON.stringify(expected), wrong = [];
          for (const [i, j] of cuts) {
            const pieces = [part(0, i), part(i, j), part(j, chars.length)];
            const blocks = new window.lkDemoModule.EventBlocks();
            const got = pieces.flatMap((p) => blocks.feed(p));
            if (JSON.stringify(got) !== want) wrong.push([pieces, got]);
          }
          return wrong;
        }""",
        [wire, cuts, expected],
    )
    assert not wrong, f"{len(wrong)} of {len(cuts)} splits differ, first: {wrong[0]}"


def test_a_crlf_cut_between_its_cr_and_its_lf_ends_one_line_not_two(blank_page: Any) -> None:
    pieces = ['data: {"a": 1}\r', '\ndata: {"b": 2}\r\n\r', "\n"]
    got = blank_page.evaluate(FEED_PIECES_JS, pieces)
    assert got == ['{"a": 1}\n{"b": 2}'] == reference_data("".join(pieces).encode())


def test_a_lone_cr_at_the_end_of_a_read_still_ends_its_line(blank_page: Any) -> None:
    pieces = ["data: one\r", "\rdata: two\r", "\r"]
    got = blank_page.evaluate(FEED_PIECES_JS, pieces)
    assert got == ["one", "two"] == reference_data("".join(pieces).encode())


def test_the_base_url_comes_from_the_pages_jupyter_config(blank_page: Any) -> None:
    blank_page.set_content(
        '<html><body><script id="jupyter-config-data" type="application/json">'
        '{"baseUrl": "/user/alice"}</script></body></html>'
    )
    got = blank_page.evaluate(
        "() => [window.lkDemoModule.jupyterBaseUrl(),"
        " window.lkDemoModule.demoUrl('k3x9k3x9k3x9', '/v1/stream', document,"
        " 'http://hub.test:8000')]"
    )
    assert got == [
        "/user/alice/",
        "http://hub.test:8000/user/alice/lessonkit/demo/k3x9k3x9k3x9/v1/stream",
    ]


def test_a_post_carries_the_jupyter_xsrf_token_from_its_cookie(blank_page: Any) -> None:
    # A stand-in document: a page's real cookies need an http(s) origin.
    got = blank_page.evaluate(
        "() => [window.lkDemoModule.xsrfHeaders({cookie: 'a=1; _xsrf=2%7Cab%3D%3D; b=2'}),"
        " window.lkDemoModule.xsrfHeaders({cookie: 'a=1'})]"
    )
    assert got == [{"X-XSRFToken": "2|ab=="}, {}]


def test_a_page_without_jupyter_config_uses_the_root(blank_page: Any) -> None:
    assert blank_page.evaluate("() => window.lkDemoModule.jupyterBaseUrl()") == "/"


def test_the_lab_page_base_url_is_the_root(demo: DemoPage) -> None:
    demo.page.evaluate(IMPORT_DEMO_JS, DEMO_JS)
    assert demo.page.evaluate("() => window.lkDemoModule.jupyterBaseUrl()") == "/"
