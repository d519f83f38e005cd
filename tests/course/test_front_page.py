"""The README is the course's front door, the guides hold the rest, and the lesson tables
have one source.

The README (at most 8,000 bytes) gives the course in three sentences, the two commands, the
lesson tables and a link to each guide in docs/. Its links, and the guides' links, must work
where a visitor reads them first: on the repository's page, where a relative link names a
file of the repository and an anchor a heading of that file (GitHub's heading ids).
Lesson 00's course map is copied from the README's lesson tables by
tools/build_start_here.py: the notebook must hold exactly what the script makes of them.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *GUIDES]
MAX_README_BYTES = 8_000

spec = importlib.util.spec_from_file_location("start_here", ROOT / "tools" / "build_start_here.py")
start_here = importlib.util.module_from_spec(spec)
spec.loader.exec_module(start_here)

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def heading_ids(markdown: str) -> set[str]:
    """Return the ids GitHub gives the headings of a markdown file (its anchors)."""
    ids: set[str] = set()
    for title in re.findall(r"^#{1,6}\s+(.+?)\s*$", FENCE.sub("", markdown), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).replace("`", "").replace("*", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in ids:
            n += 1
            unique = f"{slug}-{n}"
        ids.add(unique)
    return ids


def relative_links(page: Path) -> list[str]:
    """Return the targets of the markdown links in page that are not absolute URLs."""
    links = LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in links if not re.match(r"[a-z]+:", t)]


def test_the_readme_is_at_most_8000_bytes():
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes: move a section into a guide"


def test_the_readme_links_each_guide():
    assert [p.name for p in GUIDES] == [
        "contributing.md",
        "learning.md",
        "running-a-class.md",
        "teaching.md",
    ]
    linked = {target.split("#")[0] for target in relative_links(README)}
    missing = [f"docs/{p.name}" for p in GUIDES if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md links no {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_on_the_repository_page(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.is_file():
            broken.append(f"{target}: no file {file.relative_to(ROOT)}")
        elif anchor and file.suffix == ".md":
            if anchor not in heading_ids(file.read_text(encoding="utf-8")):
                broken.append(f"{target}: no heading with the id {anchor!r}")
    assert not broken, f"{page.name}:\n" + "\n".join(broken)


def test_a_heading_id_is_what_github_makes_of_the_heading():
    assert heading_ids("## `check()` in the notebook\n## Without make (Windows, or by hand)") == {
        "check-in-the-notebook",
        "without-make-windows-or-by-hand",
    }
    assert heading_ids("## Binder\n```\n# not a heading\n```\n## Binder") == {"binder", "binder-1"}


def test_lesson_00s_course_map_is_the_readmes_lesson_tables():
    notebook = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    course_map = next(c for c in notebook.cells if c.source.startswith("## The course map"))
    assert course_map.source == start_here.course_map(README.read_text(encoding="utf-8")), (
        "lesson 00's course map differs from the README's lesson tables: run"
        " .venv/bin/python tools/build_start_here.py, then execute the notebook"
    )


def test_the_course_map_links_each_lesson_and_exercise_from_where_lesson_00_is():
    tables = start_here.lesson_tables(README.read_text(encoding="utf-8"))
    targets = re.findall(r"\]\(([^)]+\.ipynb)\)", tables)
    lessons = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    exercises = sorted(f"../exercises/{p.name}" for p in (ROOT / "exercises").glob("ex*.ipynb"))
    assert targets == [*lessons, *exercises]
    assert all((ROOT / "notebooks" / target).is_file() for target in targets)
