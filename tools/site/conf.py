"""Sphinx configuration of the course website (tools/build_site.py stages the sources and runs
Sphinx with this folder as its configuration folder).

The pages come from the same files as the repository: the landing page is README.md, the
guides are docs/*.md, a lesson's page is its notebook in notebooks/ with its stored outputs
(never executed here), an exercise's page is its notebook in exercises/. Nothing is fetched
while building, and the pages load nothing from outside the site.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # course_site (the course's extension), build_lite

project = "Token streaming"
html_title = "Token streaming"
extensions = ["myst_nb", "course_site"]
root_doc = "index"

# The course's repository (pyproject.toml, [project.urls]), passed on by tools/build_site.py.
course_repository = os.environ.get("COURSE_REPOSITORY", "")

# Notebooks as pages, with the outputs they were committed with.
nb_execution_mode = "off"
# Widget views need the kernel that made them: on a page they would load require.js and the
# widget manager from public CDNs and then show nothing that moves. Each explorer's text twin,
# stored beside its view, stands in for it.
nb_ipywidgets_js = {}
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.jupyter.widget-state+json", None),
]
# Heading anchors as GitHub makes them, so the links written for the repository's page
# (learning.md#troubleshooting) land on the same headings here.
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
templates_path = ["_templates"]  # the theme's search button, with an accessible name
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_favicon = "_static/favicon.svg"
# Among equal scores: lessons, then exercises, then guides.
html_search_scorer = str(HERE / "search_scorer.js")
html_copy_source = False  # the sources are the repository's; the pages are what is published
html_show_sourcelink = False
html_show_copyright = False
html_context = {"default_mode": "auto"}  # the reader's system scheme, light or dark
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": bool(course_repository),
    "repository_url": course_repository,
    "launch_buttons": {},
    "search_bar_text": "Search the course",
}
