"""The zero-install site: figures drawn as SVG, lesson 03's demo streaming in the page.

The browser kernel has no matplotlib offline: every static figure is drawn by the course's
SVG from the same description, with its words as the text alternative. Lesson 03's browser
demo has no Jupyter route and no socket there: both panels must still fill in token by
token, from the kernel's own server app, through widget messages. Under Run All its report
cell cannot wait for the page (the kernel reads the page's messages only between cells):
it must fill itself in afterwards with what the page received, and name the edition's way.
The EventSource life-cycle panel cannot open anything there: it shows a stored run, and
says so.
"""

from __future__ import annotations

import json
import time

import pytest
from labdriver import REPO_ROOT, code_cell_indices, normalized, wait_for
from litesite import clear_and_run_all, execute, open_notebook
from playwright.sync_api import expect
from survey import SHUT_DOWN_KERNELS_JS

from lessonkit.lab import eventsource_life as life

pytestmark = pytest.mark.browser

LESSON_03 = "notebooks/03_reading_the_stream.ipynb"

FIGURES_IN_KERNEL = """
import json, sys
from lessonkit.core import llm, practice
from lessonkit.lab import figures, lesson01, lesson03, lesson04, plots
wire = practice.practice_wire()
sizes = list(range(1, 21))
reports = {"streaming": lesson01.idle_report(llm.stream_writes(llm.long_answer(50), "lesson"),
                                             idle_timeout_ms=60_000)}
made = {
    "measured": figures.measured_vs_model([342, 381], 390, [340, 380], title="t"),
    "idle": figures.idle_silences(reports),
    "cuts": figures.cut_verdicts({n: lesson03.every_cut_verdicts(r, wire) for n, r in lesson03.READERS.items()},
                                 {n: lesson03.chunk_size_verdicts(r, wire, sizes) for n, r in lesson03.READERS.items()}, sizes),
    "drop": figures.drop_staircase(lesson04.drop_staircase(wire), mark_bytes=70),
    "arrivals": figures.arrival_curves({"a": [(10, 5), (20, 7)]}, title="Simulated"),
}
found = {}
for name, description in made.items():
    bundle = plots.show(description)._repr_mimebundle_()
    found[name] = {"keys": sorted(bundle), "html": bundle["text/html"], "text": description.text}
found["matplotlib_loaded"] = "matplotlib" in sys.modules
print(json.dumps(found))
"""


def test_every_static_figure_is_drawn_as_svg_with_its_words_in_the_browser_kernel(lite_page):
    result = execute(lite_page.page, FIGURES_IN_KERNEL)
    assert result["status"] == "ok", f"{result['error']}\n{result['stderr']}"
    found = json.loads(result["stdout"].strip().splitlines()[-1])
    assert found.pop("matplotlib_loaded") is False
    for name, shown in found.items():
        assert shown["keys"] == ["text/html", "text/plain"], name
        assert "<svg" in shown["html"] and "<title>" in shown["html"], name
    # In the page: the SVG of a figure output, its <title> the figure's words.
    lite_page.page.evaluate(
        "(html) => { const d = document.createElement('div'); d.id = 'lk-probe';"
        " d.innerHTML = html; document.body.appendChild(d); }",
        found["drop"]["html"],
    )
    title = lite_page.page.locator("#lk-probe svg title").text_content()
    assert title == found["drop"]["text"] and "A drop after 70 bytes" in title
    lite_page.page.evaluate("() => document.getElementById('lk-probe').remove()")


RUN_CELL_JS = """
async (index) => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  panel.content.activeCellIndex = index;
  await app.commands.execute('notebook:run-cell');
  return true;
}
"""


RECORD_PANEL_TEXTS_JS = """() => {
  window.lkSeen = {eventsource: [], fetch: []};
  const note = () => {
    for (const kind of ["eventsource", "fetch"]) {
      const box = document.querySelector(`.lk-browser-demo-${kind} .lk-text`);
      const seen = window.lkSeen[kind];
      const text = box ? box.textContent : "";
      if (text && text !== seen[seen.length - 1]) seen.push(text);
    }
  };
  new MutationObserver(note).observe(document.body,
    {subtree: true, childList: true, characterData: true});
}"""


def _check_one_run(page) -> None:
    """Wait until both panels say done; fail unless each grew token by token at the pace."""
    deadline = time.monotonic() + 120
    kinds = ("eventsource", "fetch")
    while time.monotonic() < deadline:
        statuses = [
            page.locator(f".lk-browser-demo-{k} .lk-status").first.text_content() for k in kinds
        ]
        if all(s == "done" for s in statuses):
            break
        time.sleep(0.1)
    seen = page.evaluate("() => window.lkSeen")
    for kind in kinds:
        status = page.locator(f".lk-browser-demo-{kind} .lk-status").first.text_content()
        assert status == "done", (kind, status, _panel_text(page, kind))
        grown = seen[kind]
        print(f"\n[lite] {kind}: {len(grown)} distinct texts while streaming: {grown[:4]} ...")
        assert len(grown) >= 4, (kind, grown)  # grows step by step, not in one piece
        assert all(b.startswith(a) for a, b in zip(grown, grown[1:], strict=False)), grown
        tokens = page.locator(f".lk-browser-demo-{kind} .lk-token").count()
        assert tokens > 5
    times = page.locator(".lk-browser-demo-fetch").first.get_attribute("data-times")
    spread = [int(t) for t in times.split(",")]
    assert spread[-1] - spread[0] >= 120 * (len(spread) - 3) * 0.9  # at the 120 ms pace


def _panel_text(page, kind: str) -> str:
    return page.locator(f".lk-browser-demo-{kind} .lk-text").first.text_content() or ""


def test_lesson_03s_demo_grows_token_by_token_in_both_panels_in_the_page(lite_page):
    page = lite_page.page
    page.evaluate(SHUT_DOWN_KERNELS_JS)
    open_notebook(page, LESSON_03, timeout_s=600)
    code = code_cell_indices(REPO_ROOT / LESSON_03)
    import nbformat

    cells = nbformat.read(REPO_ROOT / LESSON_03, as_version=4).cells
    wanted = [i for i in code if "import" in cells[i].source and "browser_demo" in cells[i].source]
    wanted += [
        i
        for i in code
        if "start_server(" in cells[i].source or "BrowserStreamDemo(" in cells[i].source
    ]
    page.evaluate(RECORD_PANEL_TEXTS_JS)
    for index in wanted:
        page.evaluate(RUN_CELL_JS, index)
    page.locator(".lk-browser-demo-fetch .lk-text").first.wait_for(timeout=120_000)
    # Every text each panel shows is written down in the page as it changes (no sampling
    # from here, which a busy machine would slow); a stall that squeezes one run into a
    # burst gets "Stream again", up to three runs: a panel that waits for the end never grows.
    failures = []
    for _ in range(3):
        try:
            _check_one_run(page)
            break
        except AssertionError as failure:
            failures.append(str(failure))
            page.evaluate("() => { window.lkSeen = {eventsource: [], fetch: []}; }")
            page.locator(".lk-browser-demo-run").first.click()
            page.wait_for_function("() => window.lkSeen.fetch.length > 0", timeout=60_000)
    else:
        raise AssertionError("no run grew token by token:\n" + "\n".join(failures))
    assert _panel_text(page, "eventsource") == _panel_text(page, "fetch")


def _cell_of(needle: str) -> int:
    import nbformat

    cells = nbformat.read(REPO_ROOT / LESSON_03, as_version=4).cells
    (index,) = [i for i, c in enumerate(cells) if needle in c.source]
    return index


def test_lesson_03_under_run_all_reports_what_the_page_got_and_shows_a_stored_life_cycle(lite_page):
    page = lite_page.page
    page.evaluate(SHUT_DOWN_KERNELS_JS)
    open_notebook(page, LESSON_03, timeout_s=600)
    asked = len(lite_page.requested)
    cells, _ = clear_and_run_all(
        page, LESSON_03, code_cell_indices(REPO_ROOT / LESSON_03), timeout_s=600
    )
    cell = page.locator(".jp-Notebook .jp-Cell")

    # describe() tells this edition's way, not the full edition's route.
    described = normalized(
        " ".join(o.text for o in cells[_cell_of("browser_demo.describe()")].outputs)
    )
    assert "this edition has no Jupyter server and no socket" in described, described
    assert "lessonkit/demo" not in described

    # The report cell ran before the page could report; it fills itself in once Run All is over.
    report = cell.nth(_cell_of("demo.browser_report()")).locator(".lk-browser-report")
    expect(report).to_contain_text("What your browser received (run 1", timeout=120_000)
    wait_for(lambda: "not finished yet" not in report.text_content(), timeout_s=120,
             what="the report to say both panels finished")  # fmt: skip
    text = normalized(report.text_content())
    assert "through widget messages between your page and this kernel" in text, text
    assert "EventSource: done, 6 tokens" in text and "fetch : done, 6 tokens" in text, text

    # The life-cycle panel: a stored run of its choices, labelled as such; nothing to open.
    panel = cell.nth(_cell_of("EventSourceLife(")).locator(".lk-life")
    expect(panel).to_have_attribute("data-status", "stored", timeout=120_000)
    expect(panel.locator(".lk-life-note")).to_contain_text("A stored run, not your browser's")
    assert panel.locator(".lk-life-open").count() == 0
    kinds = panel.locator("tr.lk-life-row").evaluate_all(
        "(rows) => rows.map((r) => r.dataset.kind)"
    )
    seen, _ = life.stored_run(life.DEFAULT_ENDING, life.DEFAULT_RETRY)
    assert kinds == [s.kind for s in seen]
    panel.locator(".lk-life-ending select").select_option("resume")
    expect(panel.locator("tr.lk-life-row-close")).to_have_count(1, timeout=120_000)
    # No EventSource, no route: the page asked for nothing a stream would need.
    streams = [u for u in lite_page.requested[asked:] if "/v1/stream" in u or "lessonkit/demo" in u]
    assert streams == [], streams
