"""Survey: run every lesson and exercise notebook in the zero-install site, cell by cell.

    .venv/bin/python tests/lite/survey.py [--site DIR] [--json OUT] [NOTEBOOK ...]

Builds the site from the working tree (or serves --site DIR as it is), opens it in
Chromium with every request outside it refused (as tests/lite does), and for each
notebook runs its code cells one at a time in the Pyodide kernel, going on after a cell
fails, so one failure does not hide the next. Prints one line per failing cell (the
error's last line) and each notebook's time, and writes them all as JSON.

A survey, not a test: it shows what phase 2 of the zero-install edition still has to make
work in the browser kernel. The tests are in test_lite_site.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "support")]

import litesite  # noqa: E402
import nbformat  # noqa: E402
from labdriver import REPO_ROOT, launch_chromium, remove_tree, wait_lab_restored  # noqa: E402

DEFAULT_NOTEBOOKS = sorted(
    [*(REPO_ROOT / "notebooks").glob("*.ipynb"), *(REPO_ROOT / "exercises").glob("*.ipynb")]
)  # solutions/*.ipynb may be named too: each runs in its exercise's kernel

# Runs one cell's source in the current notebook's kernel; resolves with what it produced.
RUN_CELL_JS = r"""
async ([code, timeoutMs]) => {
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session.kernel;
  const started = performance.now();
  const future = kernel.requestExecute({ code, store_history: true });
  const out = { stdout: '', stderr: '', error: null, traceback: '', displays: 0, widgets: 0 };
  future.onIOPub = (msg) => {
    const t = msg.header.msg_type;
    if (t === 'stream') out[msg.content.name] += msg.content.text;
    if (t === 'error') {
      out.error = msg.content.ename + ': ' + msg.content.evalue;
      out.traceback = msg.content.traceback.join('\n').replace(/\x1b\[[0-9;]*m/g, '');
    }
    if (t === 'display_data' || t === 'execute_result') {
      out.displays += 1;
      const data = msg.content.data;
      if ('application/vnd.jupyter.widget-view+json' in data) out.widgets += 1;
      const text = data['text/plain'] || (data['text/html'] || '').replace(/<[^>]*>/g, ' ');
      out.stdout += '[display] ' + text.replace(/\s+/g, ' ').slice(0, 400) + '\n';
    }
  };
  const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), timeoutMs));
  const reply = await Promise.race([future.done, timer]);
  out.status = reply === 'timeout' ? 'timeout' : reply.content.status;
  out.ms = performance.now() - started;
  return out;
}
"""

SHUT_DOWN_KERNELS_JS = """
async () => {
  const app = window.jupyterapp;
  for (const widget of Array.from(app.shell.widgets('main'))) widget.dispose();
  await app.serviceManager.sessions.refreshRunning();
  for (const s of Array.from(app.serviceManager.sessions.running())) {
    await app.serviceManager.sessions.shutdown(s.id);
  }
  return true;
}
"""


# After a cell fails, the survey runs it again one statement at a time (each name of a
# `from x import a, b` on its own), so that what the cell defines before and after the
# failing line exists for the cells below, and each failing statement is named.
STATEMENT_BY_STATEMENT = r"""
def _lk_survey_statements(source):
    import ast, json
    ip = get_ipython()
    code = ip.transform_cell(source)
    failures = []
    for node in ast.parse(code).body:
        parts = [node]
        if isinstance(node, ast.ImportFrom) and len(node.names) > 1:
            parts = [ast.ImportFrom(module=node.module, names=[a], level=node.level) for a in node.names]
        for part in parts:
            module = ast.fix_missing_locations(ast.Module(body=[ast.copy_location(part, node)], type_ignores=[]))
            try:
                exec(compile(module, "<cell>", "exec"), ip.user_ns)
            except BaseException as error:
                line = ast.unparse(part).splitlines()[0][:100]
                failures.append([line, f"{type(error).__name__}: {error}"[:300]])
    print(json.dumps(failures))
"""


def survey_notebook(page, path: str, *, cell_timeout_s: float) -> dict:
    """Open path in the site, run each code cell in order; return what each did.

    A solution notebook (solutions/, not on the site) runs in its exercise's kernel.
    """
    page.evaluate(SHUT_DOWN_KERNELS_JS)
    started = time.monotonic()
    opened = path.replace("solutions/", "exercises/", 1)
    litesite.open_notebook(page, opened, timeout_s=300)
    kernel_s = time.monotonic() - started
    page.evaluate(RUN_CELL_JS, [STATEMENT_BY_STATEMENT, 60_000])
    notebook = nbformat.read(REPO_ROOT / path, as_version=4)
    cells = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        out = page.evaluate(RUN_CELL_JS, [cell.source, cell_timeout_s * 1000])
        out["index"] = index
        out["first_line"] = cell.source.strip().splitlines()[0][:80]
        cells.append(out)
        if out["status"] == "timeout":
            break  # the kernel is still busy with it: the rest would only queue behind
        if out["status"] != "ok":
            again = page.evaluate(
                RUN_CELL_JS,
                [f"_lk_survey_statements({cell.source!r})", cell_timeout_s * 1000],
            )
            try:
                out["statements"] = json.loads(again["stdout"].strip().splitlines()[-1])
            except (IndexError, ValueError):
                out["statements"] = [["(the statement-by-statement run failed)", again["error"]]]
    return {
        "path": path,
        "kernel_start_s": round(kernel_s, 1),
        "cells_s": round(sum(c["ms"] for c in cells) / 1000.0, 1),
        "cells": cells,
    }


def run_all_notebook(page, path: str, *, timeout_s: float) -> dict:
    """Open path, clear it, Run All Cells in the page; return the time and where it stopped."""
    page.evaluate(SHUT_DOWN_KERNELS_JS)
    started = time.monotonic()
    litesite.open_notebook(page, path, timeout_s=300)
    kernel_s = time.monotonic() - started
    code = [
        i
        for i, c in enumerate(nbformat.read(REPO_ROOT / path, as_version=4).cells)
        if c.cell_type == "code" and c.source.strip()
    ]
    cells, run_s = litesite.clear_and_run_all(page, path, code, timeout_s=timeout_s)
    stopped = [c.index for c in cells if litesite.tracebacks([c])]
    return {
        "path": path,
        "kernel_start_s": round(kernel_s, 1),
        "run_all_s": round(run_s, 1),
        "code_cells": len(code),
        "stopped_at_cell": stopped[0] if stopped else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, default=DEFAULT_NOTEBOOKS)
    parser.add_argument("--site", type=Path, help="serve this built site instead of building")
    parser.add_argument("--json", type=Path, default=REPO_ROOT / "test-artifacts/lite-survey.json")
    parser.add_argument("--cell-timeout-s", type=float, default=120.0)
    parser.add_argument(
        "--run-all", action="store_true", help="time Run All Cells in the page instead"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    scratch = None
    if args.site is None:
        scratch = Path(tempfile.mkdtemp(prefix="lessonkit-lite-survey-"))
        args.site = scratch / "site"
        print(f"building the site: {litesite.build_site(args.site):.1f} s", flush=True)
    proxy = litesite.RefusingProxy().start()
    results = []
    try:
        with litesite.serving(args.site) as site, sync_playwright() as playwright:
            browser = launch_chromium(playwright, litesite.chromium_args(proxy))
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            outside: list[str] = []
            page.context.on(
                "request",
                lambda r: (
                    outside.append(r.url) if not r.url.startswith(site.origin + "/") else None
                ),
            )
            page.goto(site.url)
            wait_lab_restored(page, timeout_s=300)
            litesite.wait_kernel_idle(page, timeout_s=300, what="the first notebook")
            for notebook in args.notebooks:
                path = notebook.resolve().relative_to(REPO_ROOT).as_posix()
                before = len(outside)
                if args.run_all:
                    result = run_all_notebook(page, path, timeout_s=600)
                    results.append(result)
                    print(json.dumps(result), flush=True)
                    continue
                result = survey_notebook(page, path, cell_timeout_s=args.cell_timeout_s)
                result["outside_requests"] = sorted(set(outside[before:]))
                results.append(result)
                failed = [c for c in result["cells"] if c["status"] != "ok" or c["stderr"]]
                print(
                    f"\n{path}: kernel {result['kernel_start_s']} s, cells {result['cells_s']} s,"
                    f" {len(failed)} of {len(result['cells'])} code cells failed or wrote stderr",
                    flush=True,
                )
                for c in failed:
                    what = c["error"] or c["status"]
                    stderr = c["stderr"].strip().splitlines()[-1:] if c["stderr"] else []
                    print(f"  [{c['index']}] {c['first_line']!r}: {what} {stderr}", flush=True)
                    for line, error in c.get("statements", []):
                        print(f"       {line!r}: {error}", flush=True)
                for url in result["outside_requests"]:
                    print(f"  asked outside the site: {url}", flush=True)
            browser.close()
    finally:
        proxy.stop()
        if scratch is not None:
            remove_tree(scratch)
    args.json.parent.mkdir(exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    print(f"\nwritten: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
