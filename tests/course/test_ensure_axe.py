"""tools/ensure_axe.sh, which make test's set-up runs and the browser and site stages need.

npm is played by a stand-in on PATH that installs slowly and fails if another install into
the same folder is under way (what two real `npm install --prefix` runs at once do to each
other), so the tests need no network.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import processes

ROOT = Path(__file__).resolve().parents[2]
ENSURE_AXE = ROOT / "tools" / "ensure_axe.sh"

FAKE_NPM = """#!/usr/bin/env bash
# npm install --prefix PREFIX ... axe-core@VERSION: one install at a time, or fail
prefix=$3
mkdir "$prefix/.installing" 2>/dev/null || { echo "npm: another install is running" >&2; exit 1; }
echo run >> "$prefix/../npm-runs.txt"
sleep 1
mkdir -p "$prefix/node_modules/axe-core"
echo "/* axe */" > "$prefix/node_modules/axe-core/axe.min.js"
rmdir "$prefix/.installing"
"""


def fake_npm_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM)
    npm.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_two_stages_asking_at_once_get_one_install_and_both_succeed(tmp_path):
    env = fake_npm_env(tmp_path)
    prefix = tmp_path / "share" / "axe"
    prefix.mkdir(parents=True)  # as npm --prefix finds it once the first install began
    started = [
        processes.start([str(ENSURE_AXE), str(prefix)], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]  # fmt: skip
    outputs = [p.communicate(timeout=60)[0] for p in started]
    assert [p.returncode for p in started] == [0, 0], outputs
    assert (tmp_path / "share" / "npm-runs.txt").read_text().splitlines() == ["run"]
    assert (prefix / "node_modules" / "axe-core" / "axe.min.js").exists()


def test_an_installed_axe_is_not_installed_again(tmp_path):
    env = fake_npm_env(tmp_path)
    prefix = tmp_path / "share" / "axe"
    prefix.mkdir(parents=True)
    for _ in range(2):
        done = processes.run([str(ENSURE_AXE), str(prefix)], env=env, capture_output=True,
                             text=True, timeout_s=60)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "share" / "npm-runs.txt").read_text().splitlines() == ["run"]
