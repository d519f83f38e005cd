"""lessonkit.edition: the cells only the full edition runs, and what the browser shows instead."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from lessonkit import edition

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("record", ROOT / "tools" / "record_full_edition.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)


@pytest.fixture
def shell() -> InteractiveShell:
    """An IPython shell with the course's magic loaded (what `%load_ext lessonkit.edition` does)."""
    ipython = InteractiveShell.instance()
    edition.load_ipython_extension(ipython)
    ipython.user_ns.pop("ran", None)
    return ipython


def test_the_stored_results_are_the_committed_notebooks_outputs():
    # Re-executing a notebook changes its outputs: tools/record_full_edition.py keeps this in step.
    stored = json.loads((ROOT / "lessonkit" / "data" / edition.STORE).read_text("utf-8"))
    assert stored == record.recorded(sorted((ROOT / "notebooks").glob("*.ipynb")))


def test_every_full_edition_cell_says_what_it_needs_and_has_a_stored_result():
    stored = record.recorded(sorted((ROOT / "notebooks").glob("*.ipynb")))
    assert set(stored) == set(edition.NEEDS)
    assert all(entry["outputs"] for entry in stored.values())


def test_in_the_full_edition_the_magic_runs_the_cell(shell, capsys):
    shell.run_cell("%%full_edition openai-sdk\nran = 41 + 1\nprint('ran here')")
    assert shell.user_ns["ran"] == 42
    assert capsys.readouterr().out == "ran here\n"


SITE = "https://learn.example.org/streaming-course/"
WORKER = SITE + "lite/extensions/@jupyterlite/pyodide-kernel-extension/static/worker.js"


@pytest.fixture
def browser_kernel(monkeypatch):
    """The platform and the worker's location as the browser kernel sees them (Pyodide's js)."""
    monkeypatch.setattr(sys, "platform", "emscripten")
    worker_globals = types.ModuleType("js")
    worker_globals.location = types.SimpleNamespace(href=WORKER)
    monkeypatch.setitem(sys.modules, "js", worker_globals)
    monkeypatch.setenv(edition.GUIDE_VARIABLE, "../docs/learning.html#set-up")


def test_in_the_browser_the_magic_shows_the_one_line_and_the_stored_result(
    shell, capsys, browser_kernel
):
    shell.run_cell("%%full_edition openai-sdk\nran = 41 + 1")
    assert "ran" not in shell.user_ns
    first, *rest = capsys.readouterr().out.splitlines()
    assert first == edition.note("openai-sdk")
    assert "pydantic-core" in first and f"({SITE}docs/learning.html#set-up):" in first
    stored = edition.stored_outputs("openai-sdk")
    assert "\n".join(rest) + "\n" == "".join(stored[0]["text"])


def test_in_a_course_website_the_link_is_its_learning_page_at_the_sites_own_address(
    browser_kernel,
):
    # The site's address is worked out at run time: wherever it is published, the link is absolute.
    assert edition.full_edition_url() == f"{SITE}docs/learning.html#set-up"


def test_a_guide_given_as_an_address_is_linked_as_it_is(browser_kernel, monkeypatch):
    guide = "https://git.example.org/course/blob/HEAD/docs/learning.md#set-up"
    monkeypatch.setenv(edition.GUIDE_VARIABLE, guide)
    assert edition.full_edition_url() == guide


def test_with_no_guide_set_the_line_links_nothing_and_names_no_placeholder(
    browser_kernel, monkeypatch
):
    monkeypatch.delenv(edition.GUIDE_VARIABLE)
    assert edition.full_edition_url() is None
    line = edition.note("websocket-bytes")
    assert line.endswith("Below is what it showed in the full edition:")
    assert "<" not in line and "http" not in line


def test_an_unknown_name_says_which_names_exist(shell, capsys):
    shell.run_cell("%%full_edition curl\nran = 1")
    assert "ran" not in shell.user_ns
    assert "needs one of: openai-sdk" in capsys.readouterr().out
