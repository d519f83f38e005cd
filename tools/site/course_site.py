"""The course website's own Sphinx extension: what the pages add to the repository's files.

- The landing page is README.md. Before its first section it gets the three ways in (read
  it here, run it in the browser, install it) and, hidden, the navigation: lessons,
  exercises, guides, in the order of their file names.
- Each lesson and exercise page gets a launch link under its title: the site's JupyterLite
  app (lite/, built by tools/build_lite.py --in-site) with that notebook open.
- Links that name README.md (written for the repository's page) name the landing page.
- Search takes a hyphenated word whole: "Last-Event-ID" finds the pages that say
  Last-Event-ID, not every page that says "last", "event" and "id" somewhere.

All links are relative, so the folder works wherever it is published.
"""

from __future__ import annotations

import re
from html import escape
from urllib.parse import quote

from build_lite import START_NOTEBOOK, binder_url  # tools/build_lite.py
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.search.en import SearchEnglish

LITE_APP = "lite/lab/index.html"
GROUPS = (("Lessons", "notebooks/"), ("Exercises", "exercises/"), ("Guides", "docs/"))
FIRST_SECTION = re.compile(r"^## ", re.M)


def launch_url(root: str, notebook: str) -> str:
    """Return the relative address that opens notebook in the site's JupyterLite app."""
    return f"{root}{LITE_APP}?path={quote(notebook, safe='/')}"


def ways_in(repository: str) -> str:
    """Return the landing page's block: read it here, run it in your browser, install it."""
    elsewhere = ""
    if repository:
        elsewhere = (
            f' Or run it on <a href="{escape(binder_url(repository))}">Binder</a>, from'
            f' <a href="{escape(repository)}">its repository</a>.'
        )
    return f"""
<div class="course-ways">
<p><strong>Read it</strong> here: each lesson below is a page with what its cells showed
when they ran, and each exercise a page as you get it.</p>
<p><strong>Run it in your browser</strong>, with nothing to install:
<a class="course-launch-link" href="{escape(launch_url("", START_NOTEBOOK))}">open lesson 00
in JupyterLite</a>. Python runs in this browser tab; the first start takes 20-40 s. Each page
has a link that opens its own notebook there.</p>
<p><strong>Install it</strong> on your machine: <a href="docs/learning.html#set-up">set-up</a>
in the learning guide.{elsewhere}</p>
</div>

"""


def navigation(found_docs: set[str]) -> str:
    """Return the hidden tables of contents of the site: lessons, exercises, guides."""
    blocks = []
    for caption, folder in GROUPS:
        docs = sorted(d for d in found_docs if d.startswith(folder))
        entries = "\n".join(docs)
        blocks.append(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n{entries}\n```\n")
    return "\n" + "\n".join(blocks)


def on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    """Give the landing page its ways in and the navigation; point README links at it."""
    text = source[0]
    if docname.startswith("docs/"):
        text = text.replace("](../README.md", "](../index.md")
    if docname == "index":
        first = FIRST_SECTION.search(text)
        at = first.start() if first else len(text)
        block = ways_in(app.config.course_repository)
        text = text[:at] + block + text[at:] + navigation(app.env.found_docs)
    source[0] = text


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Put the launch link under the title of each lesson and exercise page."""
    if not docname.startswith(("notebooks/", "exercises/")):
        return
    kind = "lesson" if docname.startswith("notebooks/") else "exercise"
    root = "../" * docname.count("/")
    href = launch_url(root, f"{docname}.ipynb")
    html = f"""<div class="course-launch">
<a class="course-launch-link" href="{escape(href)}">▶ Run this {kind} in your browser</a>
<span>JupyterLite opens this notebook alone, with Python in this tab (the first start takes
20-40 s). Course &gt; Back to this notebook's page brings you back here.</span>
</div>"""
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children:
        return
    section.insert(1, nodes.raw("", html, format="html"))


class CourseSearch(SearchEnglish):
    """English search that also indexes each hyphenated word whole (Last-Event-ID,
    text/event-stream's event-stream), beside its parts; a query keeps such a word whole."""

    COMPOUND = re.compile(r"\w+(?:-\w+)+")
    # The query's splitter in the page (language_data.js): Sphinx's, with "-" inside a word
    # kept (a leading "-" still excludes a word).
    js_splitter_code = r"""
var splitQuery = (query) =>
  query
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}-]+/gu)
    .map((term) => term.replace(/-+$/, ""))
    .filter((term) => term && term !== "-");
"""

    def split(self, input: str) -> list[str]:
        """Return the words of input, and each hyphenated word whole."""
        return super().split(input) + self.COMPOUND.findall(input)


def setup(app: Sphinx) -> dict:
    app.add_config_value("course_repository", "", "html")
    app.add_search_language(CourseSearch)
    app.connect("source-read", on_source_read)
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
