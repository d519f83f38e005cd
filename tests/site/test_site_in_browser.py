"""The course website in Chromium, with nothing but the site reachable.

Every page opens with no console error and no failed request; axe-core finds no serious or
critical issue on any page, the theme's own controls included, in the light and the dark
scheme, and the JupyterLab colours the stored outputs use are defined in both; search finds
lesson 04 first for "Last-Event-ID" and nothing for a word no page holds. Each lesson page's
launch link opens its notebook alone in the site's JupyterLite, with an idle kernel; the
Course menu leads back to the page; a second notebook's kernel is announced, and the others
can be shut down from the announcement.
"""

from __future__ import annotations

import json
import re
from typing import Any

import litesite
import nbformat
import pytest
from a11y import AXE_TAGS, axe_source
from labdriver import REPO_ROOT, save_artifacts, wait_for

pytestmark = pytest.mark.browser

LESSONS = sorted(p.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("notebooks/*.ipynb"))
EXERCISE = "exercises/ex2_read_stream.ipynb"  # an exercise page's launch link, clicked too
LAUNCHED = [*LESSONS, EXERCISE]
SCHEMES = ("light", "dark")
KERNEL_DEADLINE_S = 600.0  # Pyodide starts in 10-90 s here; this only stops a hung page
SERIOUS = ("serious", "critical")

# axe on the whole page (the theme's header, sidebars and buttons too), WCAG 2.2 A and AA.
AXE_PAGE_JS = """
async ([source, tags]) => {
  if (!window.axe) {
    const script = document.createElement('script');
    script.textContent = source;
    document.head.appendChild(script);
  }
  const result = await window.axe.run(document, { runOnly: { type: 'tag', values: tags } });
  return result.violations.map((v) => ({ rule: v.id, impact: v.impact || 'minor',
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
}
"""

# The value each named CSS variable has in the page ("" where it is undefined).
CSS_VARIABLES_JS = """
(names) => {
  const style = getComputedStyle(document.documentElement);
  return names.map((name) => [name, style.getPropertyValue(name).trim()]);
}
"""


def jp_colours_of_outputs(path: str) -> set[str]:
    """Return the --jp-* variables the stored outputs of a notebook use (its page shows them)."""
    notebook = nbformat.read(REPO_ROOT / path, as_version=4)
    outputs = json.dumps([cell.get("outputs", []) for cell in notebook.cells])
    return set(re.findall(r"var\((--jp-[a-z0-9-]+)", outputs))


SESSIONS_JS = """
() => Array.from(window.jupyterapp.serviceManager.sessions.running())
  .map((s) => ({ id: s.id, path: s.path, kernel: Boolean(s.kernel) }))
"""


def open_page(page: Any, url: str) -> None:
    """Open url and return once it has loaded and the theme has set its colour scheme."""
    page.goto(url, wait_until="load")
    page.wait_for_function(
        "() => ['light', 'dark'].includes(document.documentElement.dataset.theme)"
    )


@pytest.fixture(scope="module")
def reader(new_context):
    """A reader's browser (light scheme), watched for console errors and failed requests."""
    context, watched = new_context(color_scheme="light")
    return context.new_page(), watched


def test_every_page_opens_without_a_console_error_or_a_failed_request(reader, site, build):
    page, watched = reader
    for path in build.pages:
        open_page(page, site.url + path)
    assert not watched.errors, "\n".join(watched.errors)
    assert not watched.outside_requests(), watched.outside_requests()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_serious_issue_on_any_page(new_context, site, build, scheme):
    context, watched = new_context(color_scheme=scheme)
    page = context.new_page()
    source = axe_source()
    found = []
    for path in build.pages:
        open_page(page, site.url + path)
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        for violation in page.evaluate(AXE_PAGE_JS, [source, AXE_TAGS]):
            if violation["impact"] in SERIOUS:
                found.append(
                    f"{path}: {violation['rule']} ({violation['impact']}) at {violation['nodes']}"
                )
    assert not found, "\n".join(found)
    assert not watched.errors, "\n".join(watched.errors)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_jupyterlab_colours_the_outputs_use_are_defined_in_both_schemes(
    new_context, site, scheme
):
    context, _ = new_context(color_scheme=scheme)
    page = context.new_page()
    undefined = []
    for path in LESSONS:
        used = sorted(jp_colours_of_outputs(path))
        open_page(page, site.url + path.replace(".ipynb", ".html"))
        values = page.evaluate(CSS_VARIABLES_JS, used)
        undefined += [f"{path}: {name}" for name, value in values if not value]
    assert len(set().union(*map(jp_colours_of_outputs, LESSONS))) >= 5  # text, borders, code
    assert not undefined, f"undefined in the {scheme} scheme: {undefined}"


def search(page: Any, site: litesite.StaticSite, words: str) -> list[str]:
    """Search the site as a reader does (the search button, type, Enter); return the results'
    page paths, best first."""
    open_page(page, site.url + "index.html")
    page.get_by_role("button", name=re.compile("^Search")).first.click()
    field = page.locator("#pst-search-dialog input[name=q]")
    field.fill(words)
    field.press("Enter")
    page.wait_for_url(re.compile(r"search\.html\?q="))
    summary = page.locator("#search-results .search-summary")
    wait_for(
        lambda: (
            (summary.text_content() or "").strip() and "Searching" not in summary.text_content()
        ),
        timeout_s=60,
        what=f"the search for {words!r} to finish",
    )
    links = page.locator("#search-results ul.search > li > a")
    return [link.get_attribute("href").split("#")[0] for link in links.all()]


def test_search_lists_lesson_04_first_for_last_event_id(reader, site):
    page, _ = reader
    results = search(page, site, "Last-Event-ID")
    assert results[0] == "notebooks/04_practice_cuts_and_drops.html", results
    assert "exercises/ex5_resume.html" in results


def test_search_finds_nothing_for_a_word_no_page_holds(reader, site):
    page, _ = reader
    assert search(page, site, "quuxplatypusfrobnicate") == []


# ---------------------------------------------------------------------------------------------
# Run it from the page


@pytest.fixture(scope="module")
def launched(new_context, site):
    """Each lesson's page opened in a browser of its own and its launch link clicked, all at once.

    Returns {lesson: (page, watched)} once every launched notebook's kernel is idle (and
    the same for one exercise's page).
    """
    opened = {}
    for lesson in LAUNCHED:
        context, watched = new_context(color_scheme="light")
        page = context.new_page()
        open_page(page, site.url + lesson.replace(".ipynb", ".html"))
        kind = "exercise" if lesson == EXERCISE else "lesson"
        page.get_by_role("link", name=re.compile(f"Run this {kind} in your browser")).click(
            no_wait_after=True
        )
        opened[lesson] = (page, watched)
    for lesson, (page, _) in opened.items():
        try:
            litesite.wait_kernel_idle(page, timeout_s=KERNEL_DEADLINE_S, what=lesson)
        except Exception:
            save_artifacts(page, f"site-launch-{lesson.split('/')[-1]}", [])
            raise
    return opened


@pytest.mark.parametrize("lesson", LAUNCHED)
def test_a_lesson_pages_launch_link_opens_that_notebook_alone_with_an_idle_kernel(
    launched, site, lesson
):
    page, watched = launched[lesson]
    assert page.url.startswith(site.url + "lite/lab/")
    state = litesite.kernel_state(page)
    assert (state["path"], state["status"], state["name"]) == (lesson, "idle", "python")
    assert [s["path"] for s in page.evaluate(SESSIONS_JS)] == [lesson]
    assert not watched.errors, "\n".join(watched.errors)


def test_the_course_menu_leads_back_to_the_notebooks_page(launched, site):
    page, _ = launched["notebooks/02_sse_on_the_wire.ipynb"]
    page.locator(".lm-MenuBar-itemLabel:text-is('Course')").click()
    page.locator('.lm-Menu-itemLabel:text-is("Back to this notebook\'s page")').click()
    page.wait_for_url(site.url + "notebooks/02_sse_on_the_wire.html")
    assert page.locator("h1").first.text_content().startswith("02 · SSE on the wire")


def test_a_launch_link_does_not_bring_back_the_notebooks_of_an_earlier_visit(launched, site):
    # Lesson 03's browser opened lesson 03 already; now its reader goes to lesson 04's page.
    page, _ = launched["notebooks/03_reading_the_stream.ipynb"]
    lesson = "notebooks/04_practice_cuts_and_drops.ipynb"
    open_page(page, site.url + lesson.replace(".ipynb", ".html"))
    page.get_by_role("link", name=re.compile("Run this lesson in your browser")).click()
    litesite.wait_kernel_idle(page, timeout_s=KERNEL_DEADLINE_S, what=lesson)
    assert [s["path"] for s in page.evaluate(SESSIONS_JS)] == [lesson]


def test_a_second_kernel_is_announced_and_the_others_can_be_shut_down_from_it(launched):
    page, _ = launched["notebooks/01_why_streaming.ipynb"]
    page.evaluate(
        "(path) => window.jupyterapp.commands.execute('docmanager:open', { path })",
        "exercises/ex1_response_times.ipynb",
    )
    notice = page.locator(".Toastify__toast", has_text="01_why_streaming.ipynb")
    notice.wait_for(timeout=KERNEL_DEADLINE_S * 1000)
    assert "runs its own kernel" in notice.text_content()
    wait_for(lambda: len(page.evaluate(SESSIONS_JS)) == 2, timeout_s=KERNEL_DEADLINE_S,
             what="the exercise's kernel")  # fmt: skip
    notice.get_by_role("button", name="Shut them down").click()
    wait_for(
        lambda: (
            [s["path"] for s in page.evaluate(SESSIONS_JS)]
            == ["exercises/ex1_response_times.ipynb"]
        ),
        timeout_s=60,
        what="only the exercise's kernel to run",
    )


def test_the_kernels_link_to_the_full_edition_is_the_sites_learning_page(launched, site, build):
    page, _ = launched["notebooks/05_streaming_in_the_real_world.ipynb"]
    result = litesite.execute(
        page, "from lessonkit import edition\nprint(edition.full_edition_url())"
    )
    assert result["status"] == "ok", result
    assert result["stdout"].strip() == site.url + "docs/learning.html#set-up"
    assert "set-up" in build.pages["docs/learning.html"].ids


def test_no_request_left_the_site_from_any_page_or_kernel(launched, reader):
    outside = [
        url for _, watched in [*launched.values(), reader] for url in watched.outside_requests()
    ]
    assert not outside, outside
