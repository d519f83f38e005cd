#!/usr/bin/env python3
"""Build the course website: one folder that any static host serves as it is.

    python3 tools/build_site.py               # build/site/ (what `make site` runs)
    python3 tools/build_site.py --out DIR     # somewhere else

What the folder holds (every link in it is relative, so it works under any path):

    index.html           the landing page: README.md
    notebooks/*.html     a page per lesson, with the outputs its notebook was committed with
    exercises/*.html     a page per exercise, as a learner gets it (solutions/ is never a page)
    docs/*.html          the guides
    search.html          search across the site (Sphinx's search index: works offline)
    lite/                the JupyterLite app (tools/build_lite.py --in-site): each page's
                         launch link opens its notebook there
    .nojekyll            GitHub Pages: publish the folders starting with _ as they are

The pages are built by Sphinx with myst-nb and sphinx-book-theme (tools/site/: the
configuration, the course's extension, its styles), installed in a builder venv of their own,
.venv-site, from tools/site/build-requirements.txt (pinned, hash-checked): the learner's .venv
never gets them. Nothing is downloaded while building but that venv's packages (once) and what
tools/build_lite.py fetches into build/lite-cache (once). The two halves build side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_lite import (  # tools/, beside this file
    BuildError,
    builder_python,
    course_address,
    folder_bytes,
)

REPO = Path(__file__).resolve().parents[1]
SITE_TOOLS = REPO / "tools" / "site"
SITE_VENV = REPO / ".venv-site"
BUILD_REQUIREMENTS = SITE_TOOLS / "build-requirements.txt"
DEFAULT_OUT = REPO / "build" / "site"
PAGE_FOLDERS = ("notebooks", "exercises")  # never solutions/
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def log(message: str) -> None:
    print(f"[site] {message}", flush=True)


def page_notebook(source: Path, target: Path) -> None:
    """Copy a notebook as its page shows it: without widget views and their saved state.

    A widget view needs the kernel that made it; each explorer's text twin, the output
    beside it, stands in for it on the page.
    """
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook["cells"]:
        if cell.get("outputs"):
            cell["outputs"] = [o for o in cell["outputs"] if WIDGET_VIEW not in o.get("data", {})]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")


def stage_sources(folder: Path) -> int:
    """Write the pages' sources into folder, at their repository paths; return how many."""
    shutil.copy2(REPO / "README.md", folder / "index.md")
    (folder / "docs").mkdir(parents=True)
    count = 1
    for guide in sorted((REPO / "docs").glob("*.md")):
        shutil.copy2(guide, folder / "docs" / guide.name)
        count += 1
    for name in PAGE_FOLDERS:
        for notebook in sorted((REPO / name).glob("*.ipynb")):
            page_notebook(notebook, folder / name / notebook.name)
            count += 1
    return count


def build(out: Path) -> None:
    """Build the website into out (replacing what is there)."""
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="site-src-") as scratch:
        scratch_dir = Path(scratch)
        lite_out = scratch_dir / "lite"
        # The JupyterLite half runs beside the pages (it waits mostly on its own builder).
        lite = subprocess.Popen(
            [sys.executable, str(REPO / "tools" / "build_lite.py"), "--out", str(lite_out),
             "--in-site"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            sources = scratch_dir / "sources"
            sources.mkdir()
            n_pages = stage_sources(sources)
            python = builder_python(SITE_VENV, BUILD_REQUIREMENTS)
            log(f"building {n_pages} pages with Sphinx ...")
            html = scratch_dir / "html"
            env = {**os.environ, "COURSE_REPOSITORY": course_address().get("Repository", "")}
            # -W: a warning (a broken link, a missing page) fails the build.
            command = [str(python), "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                       "-c", str(SITE_TOOLS), "-d", str(scratch_dir / "doctrees"),
                       str(sources), str(html)]  # fmt: skip
            pages = subprocess.run(command, env=env, capture_output=True, text=True)
            if pages.returncode != 0:
                raise BuildError(f"Sphinx failed:\n{(pages.stdout + pages.stderr)[-6000:]}")
        finally:
            lite_log, _ = lite.communicate()
        sys.stdout.write(lite_log)
        if lite.returncode != 0:
            raise BuildError("the JupyterLite app (tools/build_lite.py --in-site) failed")
        (html / ".buildinfo").unlink(missing_ok=True)  # Sphinx's own bookkeeping
        shutil.rmtree(html / "_sources", ignore_errors=True)  # empty: no source is published
        shutil.move(lite_out, html / "lite")
        (html / ".nojekyll").write_text("")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(html, out)
    size_mb = folder_bytes(out) / 1e6
    log(f"site: {out} ({n_pages} pages and the JupyterLite app, {size_mb:.1f} MB),"
        f" built in {time.time() - started:.1f} s")  # fmt: skip
    log(f"try it: python3 -m http.server --bind 127.0.0.1 --directory {out} 8000,"
        " then open http://127.0.0.1:8000/")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder")
    args = parser.parse_args(argv)
    try:
        build(args.out.resolve())
    except BuildError as error:
        print(f"[site] build failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
