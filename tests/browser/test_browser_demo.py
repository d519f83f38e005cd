"""Lesson 03's browser demo streams tokens into the page as they arrive, not in one burst.

The demo widget (lessonkit.lab.browser_demo) reads the local server twice from the page
itself: with EventSource and with fetch + a stream reader. A MutationObserver in the
page records every change of a panel's text with its time, so the test sees each state
the learner saw. The same demo behind a buffering proxy is the control: there the
whole answer must land at once, which shows the timing check can tell the two apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labdriver import (
    LabServer,
    close_notebook,
    code_cell_indices,
    open_notebook,
    relative_to_root,
    run_all_and_wait,
    save_artifacts,
    tracebacks,
    write_scratch_notebook,
)
from playwright.sync_api import expect

from lessonkit.core import llm

pytestmark = pytest.mark.browser

PER_TOKEN_MS = 100  # slower than the lesson's 40 ms, so a busy test machine cannot merge tokens
PANELS = ("eventsource", "fetch")

RECORD_TEXT_CHANGES_JS = """
([root, kind]) => {
  const text = root.querySelector(`.lk-browser-demo-${kind} .lk-text`);
  const changes = [];
  new MutationObserver(() => changes.push([performance.now(), text.textContent])).observe(
    text, { childList: true, subtree: true, characterData: true });
  window.lkTextChanges = changes;
}
"""


@dataclass
class DemoPage:
    """The notebook's page: a demo reading the server directly, one reading it through a proxy."""

    page: Any
    direct: Any
    buffered: Any


@pytest.fixture(scope="module")
def demo_page(lab: LabServer, lab_page: Any, scratch_dir: Path) -> Iterator[DemoPage]:
    """The demo twice: straight from the server (in the kernel), and behind a buffering proxy."""
    notebook = write_scratch_notebook(
        scratch_dir,
        "browser_demo.ipynb",
        [
            "import contextlib\n"
            "from lessonkit import serve\nfrom lessonkit.lab import browser_demo\nfrom lessonkit.serve import proxy\n"
            "stack = contextlib.ExitStack()\n"
            f"url = stack.enter_context(serve.running(prefill_ms=300, per_token_ms={PER_TOKEN_MS}))\n"
            "buffered_url = stack.enter_context(proxy.running_proxy(url, buffer=True))",
            "browser_demo.BrowserStreamDemo(url)",
            "browser_demo.BrowserStreamDemo(buffered_url)",
        ],
    )
    path = relative_to_root(notebook)
    page = lab_page.page
    try:
        open_notebook(page, lab, path)
        cells = run_all_and_wait(page, lab, path, code_cell_indices(notebook))
        assert not tracebacks(cells), "\n".join(tracebacks(cells))
        outputs = page.locator(".jp-Notebook .jp-Cell")
    except BaseException:
        save_artifacts(page, "browser-demo-setup", lab_page.console_lines)
        close_notebook(page, lab, path)
        raise
    yield DemoPage(page, outputs.nth(1), outputs.nth(2))
    close_notebook(page, lab, path)


@pytest.fixture
def demo(demo_page: DemoPage, page: Any) -> DemoPage:
    """The demo page for one test (screenshot saved if the test fails)."""
    return demo_page


def restart_and_record(page: Any, output: Any, kind: str) -> list[tuple[float, str]]:
    """Click "Stream again" in output; return each distinct non-empty text of panel kind, timed."""
    for other in PANELS:  # a run still going would change the text under the observer
        status = output.locator(f".lk-browser-demo-{other} .lk-status")
        expect(status).not_to_have_text("streaming", timeout=60_000)
    page.evaluate(RECORD_TEXT_CHANGES_JS, [output.element_handle(), kind])
    output.locator(".lk-browser-demo-run").click()
    expect(output.locator(f".lk-browser-demo-{kind} .lk-status")).to_have_text(
        "done", timeout=60_000
    )
    states = [(at_ms, text) for at_ms, text in page.evaluate("() => window.lkTextChanges") if text]
    return [s for i, s in enumerate(states) if i == 0 or s[1] != states[i - 1][1]]


@pytest.mark.parametrize("which", ["direct", "buffered"])
def test_both_panels_finish_with_the_whole_answer_when_the_demo_first_renders(
    demo: DemoPage, which: str
) -> None:
    answer = llm.answer_for(llm.RUNNING_PROMPT).text
    for kind in PANELS:
        panel = getattr(demo, which).locator(f".lk-browser-demo-{kind}")
        expect(panel.locator(".lk-status")).to_have_text("done", timeout=60_000)
        expect(panel.locator(".lk-text")).to_have_text(answer)


@pytest.mark.parametrize("kind", PANELS)
def test_stream_again_shows_the_text_growing_token_by_token(demo: DemoPage, kind: str) -> None:
    answer_tokens = llm.answer_for(llm.RUNNING_PROMPT).tokens
    states = restart_and_record(demo.page, demo.direct, kind)
    texts = [text for _, text in states]

    assert texts[-1] == "".join(answer_tokens)
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False)), texts
    assert len(texts) >= 3, (
        f"the text appeared in {len(texts)} step(s), not token by token: {texts}"
    )
    spread_ms = states[-1][0] - states[0][0]
    assert spread_ms >= 2 * PER_TOKEN_MS, (
        f"all {len(texts)} states came within {spread_ms:.0f} ms: one burst, not a stream"
    )
    tokens = demo.direct.locator(f".lk-browser-demo-{kind} .lk-token")
    assert tokens.count() == len(answer_tokens)


@pytest.mark.parametrize("kind", PANELS)
def test_behind_a_buffering_proxy_the_whole_text_arrives_in_one_burst(
    demo: DemoPage, kind: str
) -> None:
    states = restart_and_record(demo.page, demo.buffered, kind)

    assert states[-1][1] == llm.answer_for(llm.RUNNING_PROMPT).text
    spread_ms = states[-1][0] - states[0][0]
    assert spread_ms < PER_TOKEN_MS, f"a buffered answer spread over {spread_ms:.0f} ms: {states}"
