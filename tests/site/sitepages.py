"""Reads the built course website as files: its pages, their links, images and text.

The browser tests (test_site_in_browser.py) open the same pages in Chromium; what can be
judged from the files alone (every link resolves, every image has alternative text, no
solution is published) is judged here, on every page at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

LITE = "lite"  # the JupyterLite app's folder in the site


@dataclass
class Page:
    """One HTML page of the site, as its links, images, ids and text."""

    path: str  # relative to the site's root, e.g. notebooks/01_why_streaming.html
    links: list[str] = field(default_factory=list)  # href and src values, as written
    images: list[dict[str, str]] = field(default_factory=list)  # each <img>'s attributes
    ids: set[str] = field(default_factory=set)
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.words: list[str] = []
        self.skip = 0  # inside <script> or <style>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if "id" in values:
            self.page.ids.add(values["id"])
        for name in ("href", "src"):
            if name in values and tag in ("a", "link", "script", "img", "iframe", "source"):
                self.page.links.append(values[name])
        if tag == "img":
            self.page.images.append(values)
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.words.append(data)


def read_page(root: Path, path: str) -> Page:
    """Return the page at path (relative to root) as links, images, ids and text."""
    page = Page(path)
    reader = _Reader(page)
    reader.feed((root / path).read_text(encoding="utf-8"))
    page.text = " ".join(" ".join(reader.words).split())
    return page


def site_pages(root: Path) -> list[str]:
    """Return every HTML page of the site outside the JupyterLite app, sorted."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.html")
        if p.relative_to(root).parts[0] not in (LITE, "_static")
    )


def is_outside(link: str) -> bool:
    """Return True for a link that names another site (a scheme and a host)."""
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I)) and not link.startswith(
        ("data:", "javascript:")
    )


def broken_link(root: Path, page: Page, link: str, pages: dict[str, Page]) -> str | None:
    """Return why an internal link of page does not resolve in the site, or None if it does.

    A link into the JupyterLite app must name a notebook the app serves (lite/files/...).
    """
    if is_outside(link) or link.startswith(("data:", "javascript:", "mailto:")):
        return None
    if link.startswith("/"):
        return "is absolute (the site must work under any path)"
    parts = urlsplit(link)
    here = (root / page.path).parent
    target = (here / unquote(parts.path)).resolve() if parts.path else root / page.path
    if root.resolve() not in [target, *target.parents]:
        return "leaves the site"
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        return f"names no file ({target.relative_to(root.resolve())})"
    relative = target.relative_to(root.resolve()).as_posix()
    if relative == f"{LITE}/lab/index.html":
        notebook = parse_qs(parts.query).get("path", [""])[0]
        if not (root / LITE / "files" / notebook).is_file():
            return f"opens {notebook!r}, which the JupyterLite app does not serve"
    if parts.fragment and relative in pages and parts.fragment not in pages[relative].ids:
        return f"names no element #{parts.fragment} in {relative}"
    return None


def file_name_like(text: str) -> bool:
    """Return True for alternative text that is only a file's name (figure1.png, image)."""
    return bool(re.fullmatch(r"[\w.-]+\.(png|jpe?g|gif|svg|webp)|image|figure|img", text.strip()))
