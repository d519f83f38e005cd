"""Drives the course's own JupyterLab in headless Chromium: server, browser, notebooks.

The fixtures in conftest.py build on these pieces. Nothing here touches the learner's
Jupyter configuration: the server gets private config, data, runtime, settings and
workspace folders in a temporary directory, and notebooks are opened from scratch
copies so a browser run never rewrites a committed notebook.

Every wait polls for a condition with a deadline; no sleep stands in for a condition.
What the page shows after a kernel's answer (a widget message's round trip) is waited for
up to PAGE_WAIT_S, and only then is the next key pressed or the next thing checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypeVar

import httpx
import nbformat
import processes
from pacing import assert_paced

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRATCH_ROOT = REPO_ROOT / ".browser-scratch"
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
MISSING_BROWSER_HELP = (
    "The browser tests need Chromium and none was found.\n"
    "  On Debian/Ubuntu install it with:   sudo apt-get install chromium\n"
    "  (the tests look for /usr/bin/chromium first, then a browser Playwright manages).\n"
    "Then run the tests again."
)

# Shown by JupyterLab's widget renderer when a view cannot be built.
WIDGET_FAILURE_TEXTS = ("Error displaying widget", "Loading widget...")
STDERR_MIME = "application/vnd.jupyter.stderr"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# The deadline of a wait for what the page shows once the kernel has answered (a readout
# after a key press, a slider's new end, a widget rendered): under a second on a quiet
# machine, seconds on a CI machine with two cores shared by other test stages and two CPU
# burners. Every such wait ends as soon as its condition holds; this is only how long a
# test keeps trying before it says what it last saw. Also the pages' default timeout and
# that of Playwright's expect() (tests/browser/conftest.py, tests/hub/conftest.py).
PAGE_WAIT_S = 60

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    """A polled condition did not hold before its deadline."""


def wait_for(
    probe: Callable[[], T],
    *,
    timeout_s: float,
    interval_s: float = 0.1,
    what: str,
) -> T:
    """Return probe()'s first truthy value; poll until timeout_s, then raise ConditionTimeout."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise ConditionTimeout(
                f"timed out after {timeout_s:.0f} s waiting for {what}; last: {last!r}"
            )
        time.sleep(interval_s)  # the poll interval, not a guess at how long something takes


# ---------------------------------------------------------------------------------------------
# The browser


def find_browser(playwright_chromium_path: str | None = None) -> Path:
    """Return the Chromium to drive: Debian's, else one Playwright manages; raise if neither."""
    if DEBIAN_CHROMIUM.exists():
        return DEBIAN_CHROMIUM
    if playwright_chromium_path and Path(playwright_chromium_path).exists():
        return Path(playwright_chromium_path)
    raise FileNotFoundError(MISSING_BROWSER_HELP)


def launch_chromium(playwright: Any, args: list[str]) -> Any:
    """Return a launched headless Chromium (find_browser's), or fail the test saying what to run."""
    import pytest

    try:
        managed = playwright.chromium.executable_path
    except Exception:  # Playwright knows no managed browser on this machine
        managed = None
    try:
        executable = find_browser(managed)
    except FileNotFoundError as missing:
        pytest.fail(str(missing), pytrace=False)
    return playwright.chromium.launch(executable_path=str(executable), args=args)


# ---------------------------------------------------------------------------------------------
# The JupyterLab server


def free_loopback_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def jupyter_executable() -> Path:
    """Return the course's own `jupyter` (the sibling of the running Python)."""
    candidate = Path(sys.executable).with_name("jupyter")
    if not candidate.exists():
        raise FileNotFoundError(
            f"{candidate} is missing; the browser tests need the course environment "
            "(run `make test`, which sets it up)."
        )
    return candidate


def write_private_lab_settings(settings_dir: Path) -> None:
    """Write user settings that keep popups away (no news, no update check)."""
    notification = settings_dir / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


class JupyterRest:
    """REST calls to one Jupyter server at ``self.base_url`` (with ``self.headers``, if any).

    Shared by LabServer (a JupyterLab the tests start) and the hub tests' per-user servers,
    so the notebook helpers below work on either.
    """

    base_url: str
    headers: dict[str, str]

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Return the response of one REST call to the server."""
        response = httpx.request(
            method, f"{self.base_url}{path}", headers=self.headers, timeout=30, **kwargs
        )
        response.raise_for_status()
        return response

    def sessions_for(self, notebook_path: str) -> list[dict[str, Any]]:
        """Return the server's sessions whose notebook is notebook_path (relative to the root)."""
        return [
            s for s in self.api("GET", "/api/sessions").json() if s.get("path") == notebook_path
        ]

    def wait_kernel_idle(
        self, notebook_path: str, *, timeout_s: float = 120, page: Any = None
    ) -> dict[str, Any]:
        """Return the notebook's session once its kernel reports execution_state idle.

        With a page, a JupyterLab dialog (such as "Select Kernel" for a notebook without a
        usable kernelspec) fails at once, naming the dialog, instead of timing out.
        """

        def idle_session() -> dict[str, Any] | None:
            if page is not None:
                dialog = page.locator(".jp-Dialog")
                if dialog.count():
                    raise AssertionError(
                        f"JupyterLab asks instead of starting {notebook_path}'s kernel: "
                        f"{normalized(dialog.first.text_content() or '')!r}"
                    )
            for session in self.sessions_for(notebook_path):
                if (session.get("kernel") or {}).get("execution_state") == "idle":
                    return session
            return None

        return wait_for(
            idle_session,
            timeout_s=timeout_s,
            what=f"an idle kernel for {notebook_path} at {self.base_url}",
        )

    def close_sessions(self, notebook_path: str) -> None:
        """Shut down every session (and so its kernel) opened on notebook_path."""
        for session in self.sessions_for(notebook_path):
            self.api("DELETE", f"/api/sessions/{session['id']}")


@dataclass
class LabServer(JupyterRest):
    """A running JupyterLab: its process, URL and private folders."""

    process: subprocess.Popen[bytes]
    base_url: str
    home: Path
    log_path: Path
    headers: dict[str, str] = field(default_factory=dict)  # none: the tests' lab has no token

    @classmethod
    def start(cls, home: Path, *, startup_timeout_s: float = 300.0) -> LabServer:
        """Return a started JupyterLab on a free loopback port, ready to serve its API.

        It starts in 3-5 s on a quiet machine; the deadline is for a machine busy many
        times over (measured: over 90 s while five test stages and other work shared two
        cores). Only a server that exited (its port taken meanwhile) is started again.
        """
        for key in ("config", "data", "runtime", "settings", "workspaces", "ipython"):
            (home / key).mkdir(parents=True, exist_ok=True)
        write_private_lab_settings(home / "settings")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MPLBACKEND"))}
        env.update(
            JUPYTER_CONFIG_DIR=str(home / "config"),
            JUPYTER_DATA_DIR=str(home / "data"),
            JUPYTER_RUNTIME_DIR=str(home / "runtime"),
            JUPYTER_PLATFORM_DIRS="1",
            IPYTHONDIR=str(home / "ipython"),
            PYTHONUNBUFFERED="1",
        )
        last_error = ""
        for attempt in range(3):
            port = free_loopback_port()
            log_path = home / f"jupyterlab-{attempt}.log"
            command = [
                str(jupyter_executable()),
                "lab",
                "--no-browser",
                "--allow-root",
                f"--port={port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                "--ServerApp.disable_check_xsrf=True",
                f"--ServerApp.root_dir={REPO_ROOT}",
                f"--LabApp.user_settings_dir={home / 'settings'}",
                f"--LabApp.workspaces_dir={home / 'workspaces'}",
                "--LabApp.expose_app_in_browser=True",
                "--ContentsManager.allow_hidden=True",
            ]
            log = log_path.open("wb")
            process = processes.start(
                command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
            log.close()
            server = cls(process, f"http://127.0.0.1:{port}", home, log_path)
            try:
                wait_for(server.is_ready, timeout_s=startup_timeout_s, what="JupyterLab to start")
                return server
            except ConditionTimeout as timeout:
                last_error = f"{timeout}\n{server.log_tail()}"
                exited = server.process.poll() is not None
                server.stop()
                if not exited:
                    break
        raise RuntimeError(f"JupyterLab did not start: {last_error}")

    def is_ready(self) -> bool:
        """Return True once /api/status answers; raise if the process died."""
        if self.process.poll() is not None:
            raise ConditionTimeout(f"JupyterLab exited with {self.process.returncode}")
        try:
            return httpx.get(f"{self.base_url}/api/status", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, n_chars: int = 4000) -> str:
        """Return the end of the server's log."""
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server process (SIGTERM, then SIGKILL after 15 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


# ---------------------------------------------------------------------------------------------
# Scratch copies of notebooks


def scratch_copy(source: Path, scratch_dir: Path, *, clear_outputs: bool = True) -> Path:
    """Return a copy of source in scratch_dir/<its folder>/, outputs cleared, ready to open.

    The copy keeps the folder name (notebooks/, solutions/, exercises/) one level below the
    scratch folder, so `../` from the copy reaches the scratch folder, whose children mirror
    the repository's top-level folders that notebooks read from.
    """
    target = scratch_dir / source.parent.name / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    notebook = nbformat.read(source, as_version=4)
    if clear_outputs:
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, target)
    return target


def write_scratch_notebook(scratch_dir: Path, name: str, sources: list[str]) -> Path:
    """Return a new notebook in scratch_dir/generated/ with one code cell per source."""
    target = scratch_dir / "generated" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, target)
    return target


def relative_to_root(path: Path) -> str:
    """Return path as the server names it (POSIX, relative to the repository root)."""
    return path.resolve().relative_to(REPO_ROOT).as_posix()


# ---------------------------------------------------------------------------------------------
# Notebooks in the page

# One snapshot of every cell: what a reader of the page would see.
CELL_SNAPSHOT_JS = r"""
() => Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')).map((cell, index) => {
  const isCode = cell.classList.contains('jp-CodeCell');
  const prompt = cell.querySelector('.jp-InputArea-prompt');
  const editor = cell.querySelector('.cm-content');
  const outputs = Array.from(cell.querySelectorAll('.jp-OutputArea-output')).map(out => {
    // A PNG output, or a course figure: its PNG inside HTML that carries its text alternative.
    const images = Array.from(out.querySelectorAll('.jp-RenderedImage img, img.lk-figure'));
    return {
      nested: !!out.parentElement.closest('.jp-OutputArea-output'),  // inside an Output widget
      mime: out.getAttribute('data-mime-type') || '',
      text: (out.textContent || '').slice(0, 2000),
      images: images.length,
      loadedImages: images.filter(img => img.complete && img.naturalWidth > 0).length,
      // A widget view (ipywidgets or anywidget) is a Lumino widget inside an output area
      // entry without a MIME type; a failed one shows only 'Loading widget...' or an error.
      widgetViews: out.hasAttribute('data-mime-type') ? 0 :
        Array.from(out.children).filter(c => c.classList.contains('lm-Widget') && c.childElementCount > 0).length,
    };
  });
  return {
    index,
    isCode,
    prompt: prompt ? prompt.textContent.trim() : '',
    source: editor ? editor.textContent : '',
    outputs,
  };
})
"""


@dataclass(frozen=True)
class Output:
    """One rendered output of a cell."""

    nested: bool  # inside an ipywidgets Output, itself part of a widget view
    mime: str
    text: str
    images: int
    loaded_images: int
    widget_views: int


@dataclass(frozen=True)
class CellView:
    """One cell as the page shows it."""

    index: int
    is_code: bool
    prompt: str
    source: str
    outputs: tuple[Output, ...]

    @property
    def executed(self) -> bool:
        """True when the prompt shows an execution count, like `[3]:`."""
        return re.fullmatch(r"\[\d+\]:", self.prompt) is not None


def snapshot_cells(page: Any) -> list[CellView]:
    """Return every cell of the visible notebook as the page shows it now."""
    raw = page.evaluate(CELL_SNAPSHOT_JS)
    return [
        CellView(
            index=c["index"],
            is_code=c["isCode"],
            prompt=c["prompt"],
            source=c["source"],
            outputs=tuple(
                Output(
                    o["nested"],
                    o["mime"],
                    o["text"],
                    o["images"],
                    o["loadedImages"],
                    o["widgetViews"],
                )
                for o in c["outputs"]
            ),
        )
        for c in raw
    ]


# Playwright's wait_for_function does not await a Promise: an async predicate is truthy at
# once. So this one is synchronous: it notes on the app when `started` and `restored` have
# settled. window.jupyterapp exists before the plugins are active, so the command that
# open_notebook uses is checked too.
LAB_RESTORED_JS = """
() => {
  const app = window.jupyterapp;
  if (!app) return false;
  if (!app.lkWatched) {
    app.lkWatched = true;
    Promise.all([app.started, app.restored]).then(() => { app.lkRestored = true; });
  }
  return !!app.lkRestored && app.commands.hasCommand('docmanager:open');
}
"""


def wait_lab_restored(page: Any, *, timeout_s: float = 120) -> None:
    """Return once the page's JupyterLab has started and restored its layout."""
    page.wait_for_function(LAB_RESTORED_JS, timeout=timeout_s * 1000)


def open_lab(page: Any, server: LabServer, *, timeout_s: float = 120) -> None:
    """Load JupyterLab in the page, in a fresh private workspace, and wait until it is restored."""
    workspace = f"t-{uuid.uuid4().hex[:10]}"
    page.goto(f"{server.base_url}/lab/workspaces/{workspace}?reset", timeout=timeout_s * 1000)
    wait_lab_restored(page, timeout_s=timeout_s)


# Close every open document without asking (the scratch copies need no saving), then open one.
OPEN_ONLY_JS = """
async (path) => {
  const app = window.jupyterapp;
  for (const dialog of document.querySelectorAll('.jp-Dialog')) dialog.remove();
  for (const widget of Array.from(app.shell.widgets('main'))) widget.dispose();
  const panel = await app.commands.execute('docmanager:open', { path, factory: 'Notebook' });
  await panel.context.ready;  // the kernel is waited for from Python, with a deadline
  return true;
}
"""


def open_notebook(
    page: Any, server: LabServer, notebook_path: str, *, timeout_s: float = 120
) -> None:
    """Open notebook_path as the only document; return once its kernel is idle, cells shown.

    The page keeps one JupyterLab for many notebooks, as a learner's does: loading the
    application once saves several seconds per notebook.
    """
    if not page.evaluate("() => !!window.jupyterapp"):
        open_lab(page, server, timeout_s=timeout_s)
    page.evaluate(OPEN_ONLY_JS, notebook_path)
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(
        state="attached", timeout=timeout_s * 1000
    )
    server.wait_kernel_idle(notebook_path, timeout_s=timeout_s, page=page)
    # The toolbar's kernel status follows the server; wait for the page to know the kernel too.
    page.wait_for_function(
        "() => { const app = window.jupyterapp; const w = app && app.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session &&"
        " w.sessionContext.session.kernel; return !!k && k.status === 'idle'"
        " && k.connectionStatus === 'connected'; }",
        timeout=timeout_s * 1000,
    )


def close_notebook(page: Any, server: LabServer, notebook_path: str) -> None:
    """Close the notebook's tab without saving and shut its kernel down."""
    if not page.is_closed():
        try:
            page.evaluate(
                "() => { const app = window.jupyterapp; if (!app) return;"
                " for (const w of Array.from(app.shell.widgets('main'))) w.dispose(); }"
            )
        except Exception:  # a crashed page has nothing left to close
            pass
    server.close_sessions(notebook_path)


def click_menu(page: Any, menu: str, item: str) -> None:
    """Click item in the main menu bar's menu (e.g. Run > Run All Cells)."""
    page.locator(f".lm-MenuBar-itemLabel:text-is('{menu}')").click()
    page.locator(f".lm-Menu-itemLabel:text-is('{item}')").click()


def committed_widget_cells(notebook_path: Path) -> list[int]:
    """Return the indices of the code cells whose committed outputs include a widget."""
    cells = nbformat.read(notebook_path, as_version=4).cells
    return [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code" and any(WIDGET_MIME in o.get("data", {}) for o in c.outputs)
    ]


def code_cell_indices(notebook_path: Path) -> list[int]:
    """Return the indices of the code cells a Run All executes (JupyterLab skips empty ones)."""
    cells = nbformat.read(notebook_path, as_version=4).cells
    return [i for i, c in enumerate(cells) if c.cell_type == "code" and c.source.strip()]


def tracebacks(cells: list[CellView]) -> list[str]:
    """Return the text of every error output (a traceback) the page shows."""
    return [
        o.text for c in cells for o in c.outputs if o.mime == STDERR_MIME and "Traceback" in o.text
    ]


def run_all_and_wait(
    page: Any,
    server: LabServer,
    notebook_path: str,
    code_indices: list[int],
    *,
    allowed_to_raise: frozenset[int] | set[int] = frozenset(),
    timeout_s: float = 180,
) -> list[CellView]:
    """Run all cells via the Run menu; return the cells once all ran, or one raised an error."""
    click_menu(page, "Run", "Run All Cells")

    def finished() -> list[CellView] | None:
        cells = snapshot_cells(page)
        if tracebacks([c for c in cells if c.index not in allowed_to_raise]):
            return cells  # Run All stops at an error: no point waiting for the rest.
        by_index = {c.index: c for c in cells}
        if all(i in by_index and by_index[i].executed for i in code_indices):
            return cells
        return None

    wait_for(
        finished, timeout_s=timeout_s, interval_s=0.25, what=f"all cells of {notebook_path} to run"
    )
    server.wait_kernel_idle(notebook_path, timeout_s=timeout_s)
    return snapshot_cells(page)


@contextlib.contextmanager
def notebook_run(
    page: Any,
    server: LabServer,
    notebook: Path,
    *,
    allowed_to_raise: frozenset[int] | set[int] = frozenset(),
) -> Iterator[list[CellView]]:
    """Open notebook (a file under the root) alone, Run All; yield the cells once all ran.

    As run_all_and_wait: the cells come back as soon as one raises (outside
    allowed_to_raise). Afterwards, also when the block fails, the notebook is closed and
    its kernel shut down.
    """
    path = relative_to_root(notebook)
    try:
        open_notebook(page, server, path)
        yield run_all_and_wait(
            page, server, path, code_cell_indices(notebook), allowed_to_raise=allowed_to_raise
        )
    finally:
        close_notebook(page, server, path)


def widgets_rendered(page: Any, cell_indices: Collection[int]) -> bool:
    """True once each of the cells shows a live widget view among its outputs."""
    cells = snapshot_cells(page)
    return all(
        i < len(cells) and any(o.widget_views for o in cells[i].outputs) for i in cell_indices
    )


def save_artifacts(page: Any, name: str, console_lines: list[str]) -> list[Path]:
    """Save a full-page screenshot and the console log of page under test-artifacts/."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:150]
    saved = []
    screenshot = ARTIFACTS_DIR / f"{safe}.png"
    try:
        page.screenshot(path=str(screenshot), full_page=True, timeout=30_000)
        saved.append(screenshot)
    except Exception as error:  # a broken page must not hide the test's own failure
        (ARTIFACTS_DIR / f"{safe}.screenshot-error.txt").write_text(repr(error))
    log = ARTIFACTS_DIR / f"{safe}.console.txt"
    log.write_text("\n".join(console_lines))
    saved.append(log)
    return saved


def remove_tree(path: Path) -> None:
    """Delete a scratch folder, ignoring what is already gone."""
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Widgets in the page


# One cell per explorer of lessonkit.lab.widgets, built the way the lessons build it, after
# EXPLORERS_IMPORT: the keyboard test and the explorer test each run a notebook of these
# (tests/browser/conftest.py, explorer_cells), each module a notebook of its own.
EXPLORERS_IMPORT = "from lessonkit.lab import widgets as lw"
EXPLORERS = {
    "decode": "lw.decode_loop_player()",
    "timeline": "lw.timeline_explorer()",
    "cancel": "lw.cancel_explorer()",
    "wire": "lw.wire_inspector()",
    "walkthrough": "lw.walkthrough_stepper()",
    "stepper": "lw.arrival_stepper()",
    "utf8": "lw.utf8_explorer()",
    "drop": "lw.drop_explorer()",
    "flicker": "lw.flicker_demo(step=1)",
}


def expect_slider_end(control: Any, end: int) -> None:
    """Wait until a course slider (its locator, e.g. out.locator(".lk-t-ms")) ends at `end`.

    An explorer's kernel moves a slider's end after it has written the readouts (bind
    writes in the readouts' order), and End, Home and the arrow keys stop at the end the
    page has: a key pressed before the kernel's new end arrived would stop at the old one.
    """
    from playwright.sync_api import expect

    expect(control.locator("input[type=range]")).to_have_attribute("max", str(end))


def set_slider(slider: Any, value: float) -> None:
    """Set an ipywidgets slider the way a learner can: type the value into its readout, Enter."""
    readout = slider.locator(".widget-readout")
    readout.click()
    readout.press("Control+a")
    readout.press_sequentially(str(value))
    readout.press("Enter")


def press_slider_key(slider: Any, key: str, times: int = 1) -> None:
    """Focus the slider's handle and press key (ArrowRight, ArrowLeft, Home, End) times times."""
    handle = slider.locator(".noUi-handle")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def slider_value(slider: Any) -> float:
    """Return the number a slider's readout shows (thousands separators removed)."""
    return float(slider.locator(".widget-readout").text_content().replace(",", ""))


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def html_text(markup: str) -> str:
    """Return the text a browser shows for markup (its textContent, whitespace collapsed)."""
    parser = _TextOf()
    parser.feed(markup)
    parser.close()
    return normalized("".join(parser.parts))


def normalized(text: str) -> str:
    """Return text with each run of whitespace collapsed to one space, ends stripped."""
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Lesson 03's browser demo in the page (tests/browser/test_browser_demo.py and tests/hub)

# Records every change of the text of every demo panel on the page, timed, from now on, as
# [ms, "<demo index>/<panel kind>", text] in window.lkAllTextChanges (the texts shown now
# are not changes).
DEMO_TEXT_CHANGES_JS = """
() => {
  const changes = [];
  const last = new Map();
  document.querySelectorAll('.lk-browser-demo-panel').forEach(
    (panel) => last.set(panel, panel.querySelector('.lk-text').textContent));
  const record = () => {
    const demos = Array.from(document.querySelectorAll('.lk-browser-demo'));
    document.querySelectorAll('.lk-browser-demo-panel').forEach((panel) => {
      const key = `${demos.indexOf(panel.closest('.lk-browser-demo'))}/${panel.dataset.kind}`;
      const text = panel.querySelector('.lk-text').textContent;
      if (last.get(panel) !== text) {
        last.set(panel, text);
        changes.push([performance.now(), key, text]);
      }
    });
  };
  new MutationObserver(record).observe(document.body,
    { childList: true, subtree: true, characterData: true });
  window.lkAllTextChanges = changes;
}
"""

# True once panel `kind` of the demo under `root` finished a run later than `before`
# (each run sets the panel's data-run).
DEMO_NEWER_RUN_DONE_JS = """
([root, kind, before]) => {
  const panel = root.querySelector(`.lk-browser-demo-${kind}`);
  return Number(panel.dataset.run) > before
    && panel.querySelector('.lk-status').textContent === 'done';
}
"""


def distinct_texts(changes: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Return each distinct non-empty text, with the time it first showed."""
    states = [(at_ms, text) for at_ms, text in changes if text]
    return [s for i, s in enumerate(states) if i == 0 or s[1] != states[i - 1][1]]


def demo_panel_states(
    changes: list[tuple[float, str, str]], demo_index: int, kind: str
) -> list[tuple[float, str]]:
    """Return the distinct texts one demo panel showed, from DEMO_TEXT_CHANGES_JS's record."""
    key = f"{demo_index}/{kind}"
    return distinct_texts([(at_ms, text) for at_ms, k, text in changes if k == key])


def assert_streamed_token_by_token(
    states: list[tuple[float, str]], answer: str, per_token_ms: float, what: str
) -> None:
    """Several growing texts, each extending the one before, paced in time, ending in answer.

    Paced as tests/support/pacing.py says: several separate states, some of them about a
    token's time apart (a held-back answer shows up at once), and no upper bound on a time.
    """
    texts = [text for _, text in states]
    assert texts and texts[-1] == answer, f"{what}: ended with {texts[-1:]}, not {answer!r}"
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False)), texts
    assert len(texts) >= 3, f"{what}: the text appeared in {len(texts)} step(s): {texts}"
    assert_paced([at_ms for at_ms, _ in states], per_token_ms, what)
