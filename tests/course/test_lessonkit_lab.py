"""`lessonkit lab` opens the course from a learner's own install, with no make and no copying.

The last test is the learner's path end to end: a copy of the repository, a new venv,
`pip install .` (uv's, when it is on the PATH: the same wheel, in seconds), then
`lessonkit lab --no-browser --port N` from the copy. Its venv must stay lean (no test
tool, no hub, no browser driver) and the URL it prints must answer the first time.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import processes
import pytest

from lessonkit.course.folder import course_folder
from lessonkit.learner import launch

ROOT = Path(__file__).resolve().parents[2]
LEARNER_VENV_LIMIT_BYTES = 550 * 1000 * 1000  # issue: "a .venv of at most 550 MB"
NOT_FOR_LEARNERS = ("pytest", "playwright", "jupyterhub", "hypothesis", "nbval")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _lessonkit(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    console = Path(sys.executable).with_name("lessonkit")
    return processes.run(
        [console, *args], cwd=cwd, env=env, timeout_s=60, capture_output=True, text=True
    )


# --- the course folder ---------------------------------------------------------------------------


def test_the_course_folder_is_found_from_any_folder_inside_it():
    assert course_folder(ROOT / "notebooks") == ROOT
    assert course_folder(ROOT / "lessonkit" / "course") == ROOT


def test_a_folder_outside_any_course_has_no_course_folder(tmp_path):
    assert course_folder(tmp_path) is None


def test_two_copies_of_the_course_are_two_course_folders(tmp_path):
    for copy in ("a", "b"):
        for marker in ("notebooks", "exercises"):
            (tmp_path / copy / marker).mkdir(parents=True)
    assert course_folder(tmp_path / "a" / "notebooks") == tmp_path / "a"
    assert course_folder(tmp_path / "b" / "exercises") == tmp_path / "b"


# --- clear messages before anything starts --------------------------------------------------------


def test_lessonkit_lab_outside_the_course_says_where_the_course_is(tmp_path):
    ran = _lessonkit("lab", "--no-browser", "--port", str(_free_port()), cwd=tmp_path)
    assert ran.returncode == 2
    assert "is not inside a copy of the course" in ran.stderr
    assert str(ROOT) in ran.stderr  # this install is editable: its own copy is named
    assert "Traceback" not in ran.stderr


def test_lessonkit_lab_on_a_taken_port_names_another_port_and_starts_nothing():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "MAKELEVEL"}  # not run by make
        ran = _lessonkit(
            "lab", "--no-browser", "--port", str(port), cwd=ROOT / "notebooks", env=env
        )
    assert ran.returncode == 2
    assert f"port {port} is in use" in ran.stderr
    assert f"lessonkit lab --port {port + 11}" in ran.stderr
    assert "Starting JupyterLab" not in ran.stdout


def test_jupyterlab_starts_from_this_python_on_loopback_on_lesson_00(tmp_path):
    command = launch.jupyter_command(tmp_path, 8123)
    assert command[:3] == [sys.executable, "-m", "jupyterlab"]
    assert "--no-browser" in command  # lessonkit lab opens the browser once the server answers
    assert "--ServerApp.ip=127.0.0.1" in command and "--ServerApp.port=8123" in command
    assert f"--ServerApp.root_dir={tmp_path}" in command
    assert f"--LabApp.default_url=/{launch.START_HERE}" in command
    assert not any("token" in part for part in command)  # the token travels in the environment


def test_the_servers_environment_has_a_fresh_token_and_no_inherited_plot_backend():
    first = launch.server_environment({"MPLBACKEND": "Agg", "HOME": "/home/x"})
    second = launch.server_environment({"HOME": "/home/x"})
    assert "MPLBACKEND" not in first and first["HOME"] == "/home/x"
    assert len(first["JUPYTER_TOKEN"]) >= 32
    assert first["JUPYTER_TOKEN"] != second["JUPYTER_TOKEN"]


# --- a learner's own install, end to end -------------------------------------------------------


def _tracked_copy(target: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def _bytes_on_disk(folder: Path) -> int:
    """Return the size of every file under `folder`, each inode counted once."""
    seen, total = set(), 0
    for path in folder.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink() and info.st_ino not in seen:
            seen.add(info.st_ino)
            total += info.st_size
    return total


@pytest.fixture(scope="module")
def learner_install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Return (a copy of the course, a new venv with `pip install .` of that copy)."""
    scratch = tmp_path_factory.mktemp("learner")
    copy, venv = _tracked_copy(scratch / "course"), scratch / "venv"
    uv = shutil.which("uv")
    if uv:
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, venv], check=True)
        install = [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python",
                   venv / "bin" / "python", "."]  # fmt: skip
    else:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        install = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "."]
    done = subprocess.run(install, cwd=copy, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    yield copy, venv


def test_a_learners_venv_is_at_most_550_mb(learner_install):
    _copy, venv = learner_install
    size = _bytes_on_disk(venv)
    assert size <= LEARNER_VENV_LIMIT_BYTES, f"{size / 1e6:.0f} MB"


@pytest.mark.parametrize("module", NOT_FOR_LEARNERS)
def test_a_learners_venv_cannot_import_the_test_tools(learner_install, module):
    _copy, venv = learner_install
    probe = subprocess.run(
        [venv / "bin" / "python", "-c", f"import {module}"], capture_output=True, text=True
    )
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr


def test_lessonkit_lab_from_a_learners_install_answers_at_the_first_request(learner_install):
    copy, venv = learner_install
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    env.update(
        MPLBACKEND="Agg",
        JUPYTER_CONFIG_DIR=str(copy.parent / "config"),
        JUPYTER_RUNTIME_DIR=str(copy.parent / "runtime"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    log = copy.parent / "lab.log"
    with log.open("wb") as out:
        server = processes.start(
            [venv / "bin" / "lessonkit", "lab", "--no-browser", "--port", str(port)],
            cwd=copy / "exercises",  # any folder of the course
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            new_session=True,
        )
    try:
        url_pattern = rf"http://127\.0\.0\.1:{port}/{re.escape(launch.START_HERE)}\?token=(\w+)"
        deadline = time.monotonic() + 180
        while not (found := re.search(url_pattern, log.read_text())):
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)  # the poll interval
        with httpx.Client(timeout=30, follow_redirects=True) as client:
            page = client.get(found.group())  # asked once, at once
            assert page.status_code == 200
            assert '"treePath": "notebooks/00_start_here.ipynb"' in page.text
            assert f'"serverRoot": "{copy}"' in page.text or str(copy) in page.text
            # lessonkit.serve.jupyter_page: the hand-in button can save through the page's app
            assert '"exposeAppInBrowser": true' in page.text
            auth = {"Authorization": f"token {found.group(1)}"}
            # The course's JupyterLab settings, with no file copied by hand
            notification = client.get(
                f"http://127.0.0.1:{port}/lab/api/settings/"
                "@jupyterlab/apputils-extension:notification",
                headers=auth,
            ).json()
            assert notification["schema"]["properties"]["fetchNews"]["default"] == "false"
            # The course's Jupyter server extension (the browser demo's route) is on
            route = client.get(
                f"http://127.0.0.1:{port}/lessonkit/demo/abcdefabcdef/v1/stream", headers=auth
            )
            assert route.status_code == 404 and "no demo server named" in route.text
        assert "Paste that URL into your browser." in log.read_text()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
