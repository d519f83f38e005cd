"""Drives the zero-install site: built from this tree, served on loopback, opened in Chromium.

Stands for a learner who opens the published site (GitHub Pages, any static host):

- the site is what `make lite` builds (tools/build_lite.py), served by a plain static file
  server on 127.0.0.1 (``StaticSite``);
- Chromium sends every other request to ``RefusingProxy``, which answers none of them and
  writes each one down, so nothing outside the site can help a test pass; the tests judge
  the requests of the page and its workers (Playwright sees them all), since the proxy
  also gets Chromium's own traffic (update checks and the like);
- JupyterLab and the kernel live in the page: waits read the page's own state (the
  session's kernel status), since a static host has no REST API to ask.

The JupyterLab helpers (menus, cell snapshots, waits) come from tests/support/labdriver.py.
Every wait polls a condition under a generous deadline; times are measured and printed,
never asserted as upper bounds.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labdriver import (
    CHROMIUM_ARGS,
    OPEN_ONLY_JS,
    REPO_ROOT,
    click_menu,
    snapshot_cells,
    tracebacks,
    wait_for,
)

BUILD_SCRIPT = REPO_ROOT / "tools" / "build_lite.py"
START_NOTEBOOK = "notebooks/00_start_here.ipynb"

# What a static host sends for the files the site holds, spelled out: Pyodide's module
# workers need a JavaScript type for .mjs and WebAssembly.instantiateStreaming exactly
# application/wasm, whatever the local mimetypes table says.
MIME_TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".whl": "application/octet-stream",
    ".zip": "application/zip",
    ".ipynb": "application/json",
    ".webmanifest": "application/manifest+json",
}


def build_site(out: Path) -> float:
    """Build the site from the working tree into out with tools/build_lite.py; return seconds."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--out", str(out)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"tools/build_lite.py failed:\n{result.stdout[-6000:]}")
    return time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# The static host


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}

    def __init__(self, *args: Any, site: StaticSite, **kwargs: Any) -> None:
        self.site = site  # before the base class, which handles the request in __init__
        super().__init__(*args, directory=str(site.root), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass  # kept in StaticSite.requests instead of stderr

    def send_head(self):  # type: ignore[no-untyped-def]
        self.site.requests.append(self.path)
        if self.path.split("?")[0].endswith("/jupyter-lite.json"):
            return self._config_with_app_exposed()
        return super().send_head()

    def translate_path(self, path: str) -> str:
        """Map a URL path under the site's prefix to its file; anything else is a 404."""
        prefix = self.site.prefix
        if not path.startswith(prefix):
            return str(self.site.root / ".not-on-this-site")
        return super().translate_path("/" + path[len(prefix) :])

    def copyfile(self, source: Any, outputfile: Any) -> None:
        data = source.read()
        outputfile.write(data)
        self.site.bytes_sent += len(data)

    def _config_with_app_exposed(self):  # type: ignore[no-untyped-def]
        """Serve a config file of the site plus exposeAppInBrowser, so tests reach the app.

        The one difference from the site as built, and the same switch the JupyterLab
        tests turn on (--LabApp.expose_app_in_browser): window.jupyterapp for the page.
        """
        file = Path(self.translate_path(self.path.split("?")[0]))
        if not file.is_file():
            return super().send_head()  # its 404
        config = json.loads(file.read_text())
        config.setdefault("jupyter-config-data", {})["exposeAppInBrowser"] = True
        body = json.dumps(config).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a browser that hung up: fine
            super().handle_error(request, client_address)


@dataclass
class StaticSite:
    """A static file server for one folder on 127.0.0.1, as GitHub Pages would serve it.

    ``prefix`` is the URL path the folder is published at: "/" for a site of its own,
    "/<repository>/" for a GitHub Pages project site.
    """

    root: Path
    prefix: str = "/"
    server: socketserver.TCPServer | None = None
    requests: list[str] = field(default_factory=list)
    bytes_sent: int = 0  # response bodies, as stored (no compression)

    @property
    def origin(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def url(self) -> str:
        """Return the site's URL (what a learner is given)."""
        return self.origin + self.prefix

    def start(self) -> StaticSite:
        handler = functools.partial(_SiteHandler, site=self)
        self.server = _QuietServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


# ---------------------------------------------------------------------------------------------
# Everything else: refused and written down


class _RefuseHandler(socketserver.StreamRequestHandler):
    def __init__(self, *args: Any, proxy: RefusingProxy, **kwargs: Any) -> None:
        self.proxy = proxy
        super().__init__(*args, **kwargs)

    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").strip()
        if line:
            self.proxy.refused.append(line)  # e.g. "CONNECT cdn.jsdelivr.net:443 HTTP/1.1"
        self.wfile.write(
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


@dataclass
class RefusingProxy:
    """An HTTP proxy on 127.0.0.1 that refuses every request and records its first line."""

    server: socketserver.TCPServer | None = None
    refused: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> RefusingProxy:
        handler = functools.partial(_RefuseHandler, proxy=self)
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def chromium_args(proxy: RefusingProxy) -> list[str]:
    """Return the course's Chromium flags plus: every request but loopback's goes to proxy.

    Chromium never sends loopback through a proxy (its implicit bypass rule), so the site on
    127.0.0.1 loads directly and everything else, from the page, its workers and the
    service worker alike, reaches the refusing proxy. No DNS lookup happens for it either.
    """
    return [*CHROMIUM_ARGS, f"--proxy-server=http://{proxy.address}"]


# ---------------------------------------------------------------------------------------------
# JupyterLite in the page

# The current notebook's kernel: its status and connection, or null while there is none.
KERNEL_STATE_JS = """
() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  if (!k) return null;
  return { status: k.status, connection: k.connectionStatus, name: k.name, path: w.context.path };
}
"""

# Run in the current notebook's kernel; resolves with {status, stdout, error}.
KERNEL_EXECUTE_JS = """
async (code) => {
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code, store_history: false });
  const out = { stdout: '', stderr: '', error: null };
  future.onIOPub = (msg) => {
    const t = msg.header.msg_type;
    if (t === 'stream') out[msg.content.name] += msg.content.text;
    if (t === 'error') out.error = msg.content.ename + ': ' + msg.content.evalue;
  };
  const reply = await future.done;
  out.status = reply.content.status;
  return out;
}
"""


def kernel_state(page: Any) -> dict[str, str] | None:
    """Return the current notebook's kernel state ({status, connection, name, path}) or None."""
    return page.evaluate(KERNEL_STATE_JS)


def wait_kernel_idle(page: Any, *, timeout_s: float, what: str) -> dict[str, str]:
    """Return the kernel state once the current notebook's kernel is idle and connected.

    A JupyterLab dialog (such as "Select Kernel") fails at once, naming the dialog.
    """

    def idle() -> dict[str, str] | None:
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            text = " ".join((dialog.first.text_content() or "").split())
            raise AssertionError(
                f"JupyterLite asks instead of starting a kernel for {what}: {text!r}"
            )
        state = kernel_state(page)
        if state and state["status"] == "idle" and state["connection"] == "connected":
            return state
        return None

    return wait_for(idle, timeout_s=timeout_s, interval_s=0.25, what=f"an idle kernel for {what}")


def open_notebook(page: Any, path: str, *, timeout_s: float) -> dict[str, str]:
    """Open path as the only document; return the kernel state once its kernel is idle."""
    page.evaluate(OPEN_ONLY_JS, path)
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(
        state="attached", timeout=timeout_s * 1000
    )
    return wait_kernel_idle(page, timeout_s=timeout_s, what=path)


def execute(page: Any, code: str) -> dict[str, Any]:
    """Run code in the current notebook's kernel; return {status, stdout, stderr, error}."""
    return page.evaluate(KERNEL_EXECUTE_JS, code)


def clear_and_run_all(
    page: Any, path: str, code_indices: list[int], *, timeout_s: float
) -> tuple[list[Any], float]:
    """Clear every output, Run All Cells, wait until all ran (or one raised); return cells, s.

    The outputs stored in the notebook are cleared first, so everything seen afterwards was
    produced in this kernel.
    """
    click_menu(page, "Edit", "Clear Outputs of All Cells")
    wait_for(
        lambda: not any(c.outputs for c in snapshot_cells(page)),
        timeout_s=60,
        what=f"the stored outputs of {path} to clear",
    )
    started = time.monotonic()
    click_menu(page, "Run", "Run All Cells")

    def finished() -> list[Any] | None:
        cells = snapshot_cells(page)
        if tracebacks(cells):
            return cells  # Run All stops at an error
        by_index = {c.index: c for c in cells}
        if all(i in by_index and by_index[i].executed for i in code_indices):
            return cells
        return None

    wait_for(finished, timeout_s=timeout_s, interval_s=0.25, what=f"all cells of {path} to run")
    wait_kernel_idle(page, timeout_s=timeout_s, what=path)
    return snapshot_cells(page), time.monotonic() - started


@contextmanager
def serving(root: Path, prefix: str = "/") -> Iterator[StaticSite]:
    """Serve root at prefix on a free loopback port for the length of a with-block."""
    site = StaticSite(root, prefix).start()
    try:
        yield site
    finally:
        site.stop()
