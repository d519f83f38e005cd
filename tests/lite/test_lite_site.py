"""The zero-install site in a real browser, with nothing but the site reachable.

The site is built from the working tree and opened at its root URL, as a learner opens the
published link: it must land on lesson 00 with a ready Pyodide kernel, run the lesson's
cells with no error output, and give the kernel lessonkit with no step for the learner;
the course's own server app must stream in the kernel, chunk by chunk, with no socket.
No request may leave the site (no CDN, no PyPI).
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
import pytest
from coursecontrols import press_key
from labdriver import (
    REPO_ROOT,
    STDERR_MIME,
    code_cell_indices,
    normalized,
    tracebacks,
    wait_for,
)
from litesite import START_NOTEBOOK, clear_and_run_all, execute, open_notebook
from survey import SHUT_DOWN_KERNELS_JS

from lessonkit.lab.envcheck import slider_text
from lessonkit.serve import rawhttp
from lessonkit.serve.inprocess import running_in_process

pytestmark = pytest.mark.browser

RUN_ALL_DEADLINE_S = 600.0  # lesson 00 runs in seconds; this only stops a hung page


def run_in_kernel(lite_page, code: str) -> dict:
    """Run code in the current notebook's kernel; return the JSON its last line prints."""
    result = execute(lite_page.page, code)
    assert result["status"] == "ok", f"{result['error']}\n{result['stderr']}"
    return json.loads(result["stdout"].strip().splitlines()[-1])


def test_the_site_opens_on_lesson_00_in_the_pyodide_kernel(lite_page):
    # What the first load showed (the session's page goes on to other notebooks after it).
    assert lite_page.opened["url"].startswith(f"{lite_page.site.url}lab/")  # into the app
    state = lite_page.opened["kernel"]
    assert state["path"] == START_NOTEBOOK
    assert state["name"] == "python"  # Pyodide's kernel, the only one the site has
    assert state["status"] == "idle"


def test_the_site_keeps_the_repository_paths_of_every_notebook(lite_page):
    for folder in ("notebooks", "exercises"):
        listing = httpx.get(f"{lite_page.site.url}api/contents/{folder}/all.json").json()
        served = sorted(entry["path"] for entry in listing["content"])
        in_repo = sorted(f"{folder}/{p.name}" for p in (REPO_ROOT / folder).glob("*.ipynb"))
        assert served == in_repo


def test_lessonkit_is_installed_in_the_kernel_with_no_step_for_the_learner(lite_page):
    found = run_in_kernel(
        lite_page,
        "import json, sys, importlib.metadata as m\n"
        "import lessonkit\n"
        "print(json.dumps({'platform': sys.platform, 'file': lessonkit.__file__,"
        " 'version': m.version('streaming-course')}))",
    )
    assert found["platform"] == "emscripten"
    assert "/site-packages/lessonkit/" in found["file"]
    assert found["version"]


def test_lessonkits_pure_core_works_in_the_browser_kernel(lite_page):
    found = run_in_kernel(
        lite_page,
        "import json\n"
        "from lessonkit.core import client, llm, network, practice, sse\n"
        "wire = practice.practice_wire()\n"
        "replies = {(r.text, r.complete) for r in map(client.read_stream, network.every_cut(wire))}\n"
        "openai = b''.join(d for _, d in llm.stream_writes(llm.answer_for(llm.RUNNING_PROMPT), 'openai'))\n"
        "print(json.dumps({'replies': sorted(replies), 'cuts': len(wire) + 1,"
        " 'openai': client.read_stream(network.cut(openai, 7), 'openai').text,"
        " 'events': len(sse.decode_all([openai]))}))",
    )
    assert found["replies"] == [["Your café order ships.", True]]
    assert found["cuts"] > 100
    assert found["openai"] == "Your order ships on Monday."
    assert found["events"] > 5


def test_lesson_00_runs_all_cells_with_no_error_output(lite_page, times):
    page = lite_page.page
    open_notebook(page, START_NOTEBOOK, timeout_s=RUN_ALL_DEADLINE_S)  # other tests moved on
    code = code_cell_indices(REPO_ROOT / START_NOTEBOOK)
    cells, seconds = clear_and_run_all(page, START_NOTEBOOK, code, timeout_s=RUN_ALL_DEADLINE_S)
    times.note(f"run all: {START_NOTEBOOK}", seconds)
    assert tracebacks(cells) == []
    errors = [o.text for c in cells for o in c.outputs if o.mime == STDERR_MIME]
    assert errors == []
    by_index = {c.index: c for c in cells}
    assert all(by_index[i].executed for i in code), "every code cell ran"
    assert all(by_index[i].outputs for i in code), "every code cell showed something"


def test_lesson_00s_widget_check_responds_through_the_browser_kernel(lite_page):
    page = lite_page.page
    open_notebook(page, START_NOTEBOOK, timeout_s=RUN_ALL_DEADLINE_S)  # other tests moved on
    code = code_cell_indices(REPO_ROOT / START_NOTEBOOK)
    clear_and_run_all(page, START_NOTEBOOK, code, timeout_s=RUN_ALL_DEADLINE_S)
    check = page.locator(".lk-envcheck")
    slider = check.locator("input[type=range]")  # the course's own slider (lab.controls)
    slider.wait_for(timeout=60_000)
    readout = check.locator(".lk-envcheck-readout")
    assert normalized(readout.text_content() or "") == slider_text(0)
    press_key(check, "ArrowRight", times=3)
    wait_for(
        lambda: normalized(readout.text_content() or "") == slider_text(3),
        timeout_s=60,
        what="the label to follow the slider (a round trip through the Pyodide kernel)",
    )


STREAM_IN_KERNEL = """
import json, sys, time
from lessonkit.core import llm
from lessonkit.core.client import read_stream
from lessonkit.serve.app import create_app
from lessonkit.serve.inprocess import InProcessClient

found = {}
for clock in ("real", "virtual"):
    with InProcessClient(create_app(), clock=clock) as client:
        started = time.monotonic()
        with client.stream("GET", "/v1/stream", params={"prefill_ms": 300, "per_token_ms": 40}) as r:
            seen = [[(time.monotonic() - started) * 1000, a.at_ms] for a in r.iter_arrivals()]
        ended = {"complete": r.complete, "error": repr(r.error)}
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with client.stream("POST", "/v1/chat/completions", json=body) as r:
            reply = read_stream(r.iter_raw(), "openai")
        stats = client.request("GET", "/v1/stats").json()
        found[clock] = {"clock": client.clock, "seen": seen, "ended": ended, "stats": stats,
                        "text": reply.text, "complete": reply.complete}
from lessonkit import serve
from lessonkit.serve import rawhttp
with serve.running(prefill_ms=0, per_token_ms=0) as url:
    found["running"] = {"url": url, "events": rawhttp.raw_http(url + "/v1/stream").body.count(b"data:")}
found["uvicorn_imported"] = "uvicorn" in sys.modules
answer = llm.answer_for(llm.RUNNING_PROMPT)
found["plan_ms"] = [at for at, _ in llm.stream_writes(answer, "eventsource")]
found["hi"] = llm.answer_for("hi").text
print(json.dumps(found))
"""


def test_the_course_server_streams_in_the_browser_kernel_chunk_by_chunk(lite_page):
    # A fresh kernel: whether uvicorn was imported must not depend on the tests before
    lite_page.page.evaluate(SHUT_DOWN_KERNELS_JS)
    open_notebook(lite_page.page, START_NOTEBOOK, timeout_s=RUN_ALL_DEADLINE_S)
    found = run_in_kernel(lite_page, STREAM_IN_KERNEL)
    plan_ms = found["plan_ms"]
    real, virtual = found["real"], found["virtual"]
    assert real["clock"] == "real"  # this Chromium lets the kernel wait (JSPI)
    shown = [[round(wall_ms), round(stamp_ms)] for wall_ms, stamp_ms in real["seen"]]
    print(f"\n[lite] in-process stream (ms read, ms sent): {shown}; plan {plan_ms}")
    assert real["ended"] == {"complete": True, "error": "None"}, real
    # One chunk per write, each handed over no sooner than the app's plan (sleeps never
    # return early), in separate reads apart in time rather than in one burst at the end.
    assert len(real["seen"]) == len(plan_ms)
    for (wall_ms, stamp_ms), due_ms in zip(real["seen"], plan_ms, strict=True):
        assert stamp_ms >= due_ms - 1.0
        assert wall_ms >= due_ms - 1.0
    wall_ms = [wall for wall, _ in real["seen"]]
    gaps_ms = [b - a for a, b in zip(wall_ms[1:], wall_ms[2:-1], strict=False)]  # the tokens
    assert sum(gap >= 20.0 for gap in gaps_ms) >= 2, gaps_ms  # 40 ms apart as planned
    # The virtual clock gives the same chunks stamped exactly at the plan's times.
    assert [stamp for _, stamp in virtual["seen"]] == pytest.approx(plan_ms)
    for run in (real, virtual):
        assert run["text"] == found["hi"]
        assert run["complete"] is True
    # serve.running() in the browser: the same app in-process, and no uvicorn loaded for it.
    with running_in_process(prefill_ms=0, per_token_ms=0) as url:  # the same, here on CPython
        events = rawhttp.raw_http(url + "/v1/stream").body.count(b"data:")
    assert found["running"] == {"url": "http://lessonkit.local:8001", "events": events}
    assert found["uvicorn_imported"] is False


PROBE_URL = "https://cdn.jsdelivr.net/pyodide/v314.0.7/full/pyodide-lock.json"


def test_a_request_outside_the_site_fails_and_is_written_down(lite_page, proxy):
    # The harness's refusal is real: the kernel asks the CDN, and gets nothing.
    result = execute(
        lite_page.page, f"from pyodide.http import pyfetch\nawait pyfetch({PROBE_URL!r})"
    )
    assert result["status"] == "error"
    assert PROBE_URL in lite_page.outside_requests()
    assert any("cdn.jsdelivr.net" in line for line in proxy.refused)
    # The next test judges the page's own requests: this one was the test's.
    lite_page.requested[:] = [url for url in lite_page.requested if url != PROBE_URL]


def test_no_request_left_the_site(lite_page, proxy):
    # Last in this file: it covers every request the page and its workers made so far.
    assert len(lite_page.requested) > 100, "the page's requests were recorded"
    assert lite_page.outside_requests() == []
    # What else reached the refusing proxy is Chromium's own traffic (update checks and
    # the like), shown for the record; the page's requests are the ones judged above.
    targets = [line.split()[1] for line in proxy.refused]  # host:port (CONNECT) or a URL
    hosts = sorted({urlsplit(t if "://" in t else f"//{t}").hostname for t in targets})
    print("\n[lite] refused by the proxy:", hosts)
