"""Which Chromium the browser tests drive, and what a learner without one is told."""

from __future__ import annotations

from pathlib import Path

import labdriver
import pytest

pytestmark = pytest.mark.browser


def test_debians_chromium_is_preferred_when_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    debian, managed = tmp_path / "chromium", tmp_path / "managed-chrome"
    debian.touch()
    managed.touch()
    monkeypatch.setattr(labdriver, "DEBIAN_CHROMIUM", debian)
    assert labdriver.find_browser(str(managed)) == debian


def test_a_playwright_managed_browser_is_used_when_debians_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    managed = tmp_path / "managed-chrome"
    managed.touch()
    monkeypatch.setattr(labdriver, "DEBIAN_CHROMIUM", tmp_path / "absent")
    assert labdriver.find_browser(str(managed)) == managed


def test_no_browser_at_all_fails_with_the_command_that_installs_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(labdriver, "DEBIAN_CHROMIUM", tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="sudo apt-get install chromium"):
        labdriver.find_browser(str(tmp_path / "not-installed-either"))
