"""lessonkit.edition: the cells only the full edition runs, and what the browser shows instead."""

from __future__ import annotations

import importlib.util
import json
import sys
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


def test_in_the_browser_the_magic_shows_the_one_line_and_the_stored_result(
    shell, capsys, monkeypatch
):
    monkeypatch.setattr(sys, "platform", "emscripten")
    shell.run_cell("%%full_edition openai-sdk\nran = 41 + 1")
    assert "ran" not in shell.user_ns
    first, *rest = capsys.readouterr().out.splitlines()
    assert first == edition.note("openai-sdk")
    assert "pydantic-core" in first and edition.FULL_EDITION_URL in first
    stored = edition.stored_outputs("openai-sdk")
    assert "\n".join(rest) + "\n" == "".join(stored[0]["text"])


def test_an_unknown_name_says_which_names_exist(shell, capsys):
    shell.run_cell("%%full_edition curl\nran = 1")
    assert "ran" not in shell.user_ns
    assert "needs one of: openai-sdk" in capsys.readouterr().out
