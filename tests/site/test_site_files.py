"""The course website as files: what `make site` puts in the folder a static host serves.

Every lesson and exercise is a page and no solution is; every internal link resolves and is
relative; every image says in words what it shows; explorers stand as their text twins and
predict-first answers stay folded; no placeholder address reaches a learner; the learner's
.venv never gets the site's build tools.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
import sitepages
from labdriver import REPO_ROOT, remove_tree

sys.path.insert(0, str(REPO_ROOT / "tools"))
import build_lite  # noqa: E402

LESSONS = sorted(p.stem for p in (REPO_ROOT / "notebooks").glob("*.ipynb"))
EXERCISES = sorted(p.stem for p in (REPO_ROOT / "exercises").glob("*.ipynb"))
GUIDES = sorted(p.stem for p in (REPO_ROOT / "docs").glob("*.md"))
TWIN_MIME = "text/plain"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_the_site_has_a_page_for_every_lesson_exercise_and_guide_and_a_landing_page(build):
    expected = {
        "index.html",
        "search.html",
        *(f"notebooks/{name}.html" for name in LESSONS),
        *(f"exercises/{name}.html" for name in EXERCISES),
        *(f"docs/{name}.html" for name in GUIDES),
    }
    assert expected <= set(build.pages), sorted(expected - set(build.pages))
    assert (build.root / ".nojekyll").is_file()  # GitHub Pages serves _static/ as it is
    assert (build.root / "lite" / "lab" / "index.html").is_file()  # the app, inside


def test_no_solution_is_published_as_a_page_or_a_file(build):
    published = [p.relative_to(build.root).as_posix() for p in build.root.rglob("*")]
    assert not [p for p in published if "solution" in p.lower()]
    # The code a learner writes, as the solutions hold it, appears nowhere in the site.
    answers = []
    for path in sorted((REPO_ROOT / "solutions").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            inside = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
            answers += [line.strip() for part in inside for line in part.splitlines()]
    # Lines the learner's notebooks hold themselves (a lesson's code, quoted) are no answer.
    given = "\n".join(
        cell.source
        for path in sorted([*(REPO_ROOT / "exercises").glob("*.ipynb"),
                            *(REPO_ROOT / "notebooks").glob("*.ipynb")])
        for cell in nbformat.read(path, as_version=4).cells
    )  # fmt: skip
    answers = [a for a in answers if len(a) > 24 and not a.startswith("#") and a not in given]
    assert len(answers) > 20  # the solutions were read
    texts = {path: page.text for path, page in build.pages.items()}
    for notebook in (build.root / "lite" / "files").rglob("*.ipynb"):
        texts[notebook.relative_to(build.root).as_posix()] = notebook.read_text(encoding="utf-8")
    found = [(line, path) for line in answers for path, text in texts.items() if line in text]
    assert not found, found[:5]


def test_every_internal_link_resolves_and_is_relative(build):
    broken = []
    for page in build.pages.values():
        for link in page.links:
            why = sitepages.broken_link(build.root, page, link, build.pages)
            if why:
                broken.append(f"{page.path}: {link} {why}")
    assert not broken, "\n".join(broken[:30])


def test_the_link_check_finds_a_missing_page_a_missing_anchor_and_an_absolute_link(build):
    page = build.pages["index.html"]
    assert sitepages.broken_link(build.root, page, "docs/nowhere.html", build.pages)
    assert sitepages.broken_link(build.root, page, "docs/learning.html#nowhere", build.pages)
    assert sitepages.broken_link(build.root, page, "/streaming-course/index.html", build.pages)
    assert sitepages.broken_link(build.root, page, "lite/lab/index.html?path=x.ipynb", build.pages)
    assert sitepages.broken_link(build.root, page, "docs/learning.html#set-up", build.pages) is None


def test_every_image_has_alternative_text_that_is_not_a_file_name(build):
    images = [(path, image) for path, page in build.pages.items() for image in page.images]
    assert len(images) >= 5  # the lessons' figures
    bad = [
        f"{path}: {image.get('src', '')[:60]} alt={image.get('alt')!r}"
        for path, image in images
        if not image.get("alt", "").strip() or sitepages.file_name_like(image["alt"])
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", LESSONS)
def test_every_figure_of_a_lesson_is_on_its_page_with_its_words(build, name):
    notebook = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    stored = [
        re.search(r'alt="([^"]*)"', output.data["text/html"]).group(1)
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    shown = [image.get("alt", "") for image in build.pages[f"notebooks/{name}.html"].images]
    unescaped = [html.unescape(alt) for alt in stored]
    assert all(alt in shown for alt in unescaped), (unescaped, shown)


@pytest.mark.parametrize("name", [*LESSONS, *EXERCISES])
def test_each_lesson_and_exercise_page_opens_its_own_notebook_in_the_sites_jupyterlite(build, name):
    folder = "notebooks" if name in LESSONS else "exercises"
    page = build.pages[f"{folder}/{name}.html"]
    assert f"../lite/lab/index.html?path={folder}/{name}.ipynb" in page.links


@pytest.mark.parametrize("name", LESSONS)
def test_widget_views_are_left_out_and_each_explorer_shows_its_text_twin(build, name):
    markup = (build.root / "notebooks" / f"{name}.html").read_text(encoding="utf-8")
    for trace in (WIDGET_VIEW, "require.js", "@jupyter-widgets/html-manager", "embed-amd"):
        assert trace not in markup, trace
    notebook = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    twins = [
        output.data[TWIN_MIME].splitlines()[0]
        for cell in notebook.cells
        if any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", []))
        for output in cell.outputs
        if output.get("data", {}).get(TWIN_MIME, "").startswith("▶")
    ]
    text = build.pages[f"notebooks/{name}.html"].text
    missing = [twin for twin in twins if " ".join(twin.split()) not in text]
    assert not missing, missing


def test_the_predict_first_answers_stay_folded_on_the_page(build):
    markup = (build.root / "notebooks" / "04_practice_cuts_and_drops.html").read_text("utf-8")
    folded = re.findall(r"<details>\s*<summary>What to notice \(open it after the run\)", markup)
    assert len(folded) == 3  # one after each of the three predictions
    assert "<details open" not in markup


def test_no_placeholder_address_reaches_a_learner(build):
    texts = [p for p in build.root.rglob("*") if p.suffix in {".html", ".json", ".ipynb", ".js"}]
    assert len(texts) > 50
    with_placeholder = [
        p.relative_to(build.root).as_posix()
        for p in texts
        if "<org>" in (body := p.read_text(encoding="utf-8", errors="replace"))
        or "&lt;org&gt;" in body
    ]
    (wheel,) = (build.root / "lite").rglob("streaming_course-*.whl")  # the kernel's lessonkit
    with zipfile.ZipFile(wheel) as archive:
        with_placeholder += [
            name
            for name in archive.namelist()
            if name.endswith((".py", ".json")) and b"<org>" in archive.read(name)
        ]
    assert not with_placeholder, with_placeholder


def test_with_the_address_unset_every_link_to_run_or_get_the_course_stays_inside_the_site(build):
    assert build_lite.course_address().get("Repository") is None  # as the repository ships it
    landing = build.pages["index.html"]
    outside = [link for link in landing.links if sitepages.is_outside(link)]
    assert not [link for link in outside if "mybinder" in link or "github.com" in link], outside
    # The kernel's link to the full edition: the learning guide's set-up, inside the site.
    config = json.loads((build.root / "lite" / "jupyter-lite.json").read_text())
    plugin = config["jupyter-config-data"]["litePluginSettings"]
    kernel = plugin["@jupyterlite/pyodide-kernel-extension:kernel"]
    guide = kernel["loadPyodideOptions"]["env"]["LESSONKIT_FULL_EDITION_GUIDE"]
    page, _, anchor = guide.partition("#")
    assert (build.root / "lite" / page).resolve() == (build.root / "docs" / "learning.html")
    assert anchor in build.pages["docs/learning.html"].ids


def test_a_set_repository_gives_the_binder_link_and_the_app_alone_its_guide():
    repository = "https://github.com/example-school/streaming-course"
    assert build_lite.binder_url(repository) == (
        "https://mybinder.org/v2/gh/example-school/streaming-course/HEAD"
        "?urlpath=lab/tree/notebooks/00_start_here.ipynb"
    )
    assert build_lite.binder_url("https://git.example.org/course.git").startswith(
        "https://mybinder.org/v2/git/https%3A%2F%2Fgit.example.org%2Fcourse.git/HEAD?"
    )
    alone = build_lite.jupyter_lite_json(["lessonkit"], in_site=False, repository=repository)
    kernel = alone["jupyter-config-data"]["litePluginSettings"]
    env = kernel["@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]["env"]
    assert env["LESSONKIT_FULL_EDITION_GUIDE"] == f"{repository}/blob/HEAD/docs/learning.md#set-up"
    nowhere = build_lite.jupyter_lite_json(["lessonkit"], in_site=False, repository=None)
    kernel = nowhere["jupyter-config-data"]["litePluginSettings"]
    assert "env" not in kernel["@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]


def test_the_landing_page_is_the_readme_with_each_lesson_and_its_minutes(build):
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[`(\w+)`\]\([^)]*\) \| ([\d +]+) \|", readme, re.M)
    assert len(rows) == len(LESSONS)
    text = build.pages["index.html"].text
    missing = [f"{name} {minutes}" for name, minutes in rows if f"{name} {minutes}" not in text]
    assert not missing, missing


def test_the_build_prints_its_real_time(build):
    # Printed at the end of tools/build_site.py, measured from its start: a printed time that
    # leaves out a part of the build (its builder's set-up) would fall short of the wall time.
    printed = build.printed_seconds("site")
    assert build.seconds * 0.8 - 1 <= printed <= build.seconds


def test_the_app_builds_time_counts_its_builders_set_up_before_the_exec(build):
    # tools/build_lite.py sets up .venv-lite, then runs itself again in it: the time it
    # prints starts before that. Here the build is told it started 60 s ago.
    folder = Path(tempfile.mkdtemp(prefix="lessonkit-lite-time-"))
    try:
        started = {build_lite.STARTED_AT: str(time.time() - 60)}
        done = subprocess.run(
            [sys.executable, str(REPO_ROOT / "tools" / "build_lite.py"), "--out",
             str(folder / "lite")],
            cwd=REPO_ROOT, env={**os.environ, **started}, capture_output=True, text=True,
        )  # fmt: skip
    finally:
        remove_tree(folder)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed = float(re.search(r"built in ([\d.]+) s", done.stdout).group(1))
    assert printed >= 60


def test_the_learners_venv_has_no_site_builder_and_the_builder_venv_has_it():
    assert importlib.util.find_spec("sphinx") is None, "Sphinx reached the learner's .venv"
    assert importlib.util.find_spec("myst_nb") is None
    assert list((REPO_ROOT / ".venv-site").glob("lib/python3*/site-packages/sphinx/__init__.py"))
