"""The course installs the same way everywhere: pip, make, conda, Binder and a JupyterHub image.

pyproject.toml is the source: its [project] dependencies are what the notebooks and
lessonkit import when a learner runs them; the instructor extra adds what an instructor
runs (nbval, `lessonkit assign`, `lessonkit grade`); the dev extra holds the test and lint
tools on top of it. environment.yml repeats the runtime set under conda-forge names for
repo2docker, plus the instructor's tools (to validate the course in the image learners
use), and postBuild installs the
course, whose wheel carries the JupyterLab settings and the Jupyter server settings
(the browser demo's route, idle kernels culled). A real `pip install .` from a copy of
the repository leaves that copy as it was.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETTINGS_FILE = "streaming-course.json"
# Where the wheel puts the course's two Jupyter settings files, under the environment's prefix.
SHARED_DATA = {
    f"jupyter/overrides.d/{SETTINGS_FILE}": f"share/jupyter/lab/settings/overrides.d/{SETTINGS_FILE}",
    f"jupyter/jupyter_server_config.d/{SETTINGS_FILE}": (
        f"etc/jupyter/jupyter_server_config.d/{SETTINGS_FILE}"
    ),
}
# The course's Jupyter server extensions (lessonkit/serve/): the demo's route, the culling,
# the page's app exposed (the hand-in button saves open notebooks with it).
EXTENSIONS = ("jupyter_route", "jupyter_culling", "jupyter_page")
# The dev extra starts with the instructor's: `.[dev]` is `.[instructor]` plus the test tools.
SELF_INSTRUCTOR = "streaming-course[instructor]"

# PyPI name -> conda-forge name, where they differ. On conda-forge `playwright` is the
# Node.js package; the Python bindings are `playwright-python`.
CONDA_FORGE_NAMES = {"playwright": "playwright-python"}
NOT_THE_PYTHON_PACKAGE_ON_CONDA_FORGE = {"playwright"}
# repo2docker's own pattern for the Python version in environment.yml (anything else,
# such as a range, silently gives its default Python).
REPO2DOCKER_PYTHON = re.compile(r"python\s*=+\s*([\d\.]*)")


def _split_requirement(text: str) -> tuple[str, str]:
    """Return (normalised name, version spec without spaces) of 'name >=1,<2'."""
    match = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", text)
    assert match, f"cannot read requirement {text!r}"
    name, spec = match.groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def _runtime() -> dict[str, str]:
    return dict(_split_requirement(r) for r in PYPROJECT["project"]["dependencies"])


def _extra(name: str) -> list[str]:
    return PYPROJECT["project"]["optional-dependencies"][name]


def _instructor() -> dict[str, str]:
    return dict(_split_requirement(r) for r in _extra("instructor"))


def _dev() -> dict[str, str]:
    """Return the test tools the dev extra adds on top of the instructor's."""
    return dict(_split_requirement(r) for r in _extra("dev") if r != SELF_INSTRUCTOR)


def _environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _conda_requirements() -> dict[str, str]:
    found = dict(
        _split_requirement(d) for d in _environment()["dependencies"] if isinstance(d, str)
    )
    found.pop("pip", None)
    found.pop("python", None)  # the interpreter: checked on its own below
    return found


def conda_forge_name(pypi_name: str) -> str:
    """Return the conda-forge package that holds the PyPI distribution `pypi_name`."""
    return CONDA_FORGE_NAMES.get(pypi_name, pypi_name)


# --- environment.yml -------------------------------------------------------------------------


def test_environment_yml_lists_the_runtime_dependencies_and_instructor_tools_under_conda_forge_names():
    wanted = {**_runtime(), **_instructor()}
    expected = {conda_forge_name(name): spec for name, spec in wanted.items()}
    assert _conda_requirements() == expected
    assert _environment()["channels"] == ["conda-forge"]


def test_an_instructor_can_validate_the_course_in_the_learners_image():
    assert "nbval" in _conda_requirements()
    assert "pytest --nbval notebooks solutions" in (ROOT / "environment.yml").read_text()


def test_environment_yml_names_no_conda_forge_package_that_is_not_the_python_one():
    for name in _conda_requirements():
        assert name not in NOT_THE_PYTHON_PACKAGE_ON_CONDA_FORGE, (
            f"{name!r} on conda-forge is not the Python package; use {CONDA_FORGE_NAMES[name]!r}"
        )


def test_a_test_tool_would_be_listed_under_its_conda_forge_name():
    assert conda_forge_name("playwright") == "playwright-python"
    assert "playwright" in _dev()  # the mapping above is exercised by a real dependency


def test_repo2docker_reads_a_python_version_the_course_supports():
    lines = [d for d in _environment()["dependencies"] if isinstance(d, str)]
    pins = [d for d in lines if re.match(r"python\b", d)]
    assert len(pins) == 1, pins
    match = REPO2DOCKER_PYTHON.match(pins[0])
    assert match and re.fullmatch(r"3\.\d+", match.group(1)), (
        f"repo2docker reads only python=X.Y, got {pins[0]!r}"
    )
    assert match.group(1) in SpecifierSet(PYPROJECT["project"]["requires-python"])


def test_environment_yml_installs_nothing_from_the_repository_itself():
    # A `pip: [-e .]` entry makes repo2docker copy the whole repository before it can
    # build the environment, so every commit rebuilds it; postBuild installs the course.
    assert not [d for d in _environment()["dependencies"] if isinstance(d, dict)]


def test_postbuild_installs_the_course_without_its_dependencies():
    post_build = ROOT / "postBuild"
    assert post_build.stat().st_mode & 0o111, "postBuild must be executable"
    text = post_build.read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "python -m pip install --no-deps --no-cache-dir .\n" in text


def test_no_binder_folder_hides_the_root_files_from_repo2docker():
    # repo2docker reads only binder/ (or .binder/) when one exists.
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists()


# --- pyproject.toml --------------------------------------------------------------------------


def test_every_dependency_has_an_upper_bound():
    for name, spec in {**_runtime(), **_instructor(), **_dev()}.items():
        assert "<" in spec, f"{name} needs a range with an upper bound, got {spec!r}"


def test_the_dev_extra_is_the_instructor_extra_plus_the_test_tools():
    assert _extra("dev")[0] == SELF_INSTRUCTOR
    assert not set(_runtime()) & set(_instructor())
    assert not set(_runtime()) & set(_dev())
    assert not set(_instructor()) & set(_dev())


def test_the_learners_install_holds_no_test_tool_hub_or_browser_driver():
    learner = _installed_closure(set(_runtime()))
    for tool in ("pytest", "playwright", "jupyterhub", "hypothesis", "ruff", "nbval"):
        assert tool not in learner, f"`pip install .` would bring {tool}"


def _code_of_notebooks(*folders: str) -> dict[str, str]:
    sources = {}
    for folder in folders:
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            code = [c.source for c in cells if c.cell_type == "code"]
            lines = [
                line
                for line in "\n".join(code).splitlines()
                if not line.lstrip().startswith(("%", "!"))
            ]
            sources[f"{folder}/{path.name}"] = "\n".join(lines)
    return sources


def _top_level_imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _installed_closure(roots: set[str]) -> set[str]:
    """Return the distributions `roots` install, following their requirements (no extras)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name.lower().replace("_", "-"))
    return seen


# Modules of the browser kernel's runtime itself (Pyodide), like the standard library there:
# part of the platform, imported only on sys.platform == "emscripten", never pip-installed.
BROWSER_RUNTIME = {"pyodide", "js", "pyodide_js"}


def test_runtime_dependencies_cover_every_import_of_the_notebooks_and_lessonkit():
    sources = _code_of_notebooks("notebooks", "solutions", "exercises")
    for path in sorted((ROOT / "lessonkit").rglob("*.py")):
        sources[str(path.relative_to(ROOT))] = path.read_text()
    installed = _installed_closure(set(_runtime()))
    distributions = metadata.packages_distributions()
    missing = []
    for where, source in sources.items():
        for module in sorted(_top_level_imports(source)):
            if (
                module in sys.stdlib_module_names
                or module in BROWSER_RUNTIME
                or module == "lessonkit"
            ):
                continue
            owners = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
            if not owners & installed:
                missing.append(f"{where} imports {module} ({', '.join(owners) or 'not installed'})")
    assert not missing, "not installed by `pip install .`:\n" + "\n".join(missing)


def test_the_browser_runtimes_modules_are_imported_only_by_the_browser_path():
    # A module of Pyodide's own is the platform's, not a dependency: but only code that runs
    # in the browser kernel imports it (lessonkit.serve.inprocess, and lessonkit.edition's
    # app_url, which reads the worker's address; both check sys.platform first).
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "lessonkit").rglob("*.py")
        if _top_level_imports(path.read_text()) & BROWSER_RUNTIME
    )
    assert importers == ["lessonkit/edition.py", "lessonkit/serve/inprocess.py"]


def test_the_lesson_05_sdk_is_a_runtime_dependency():
    assert "openai" in _runtime() and "openai" not in _dev()


def test_the_course_does_not_install_jupyter_server_proxy():
    # Its /proxy/<port> routes reach every loopback port of a shared hub; no setting
    # turns them off. The course's own route (lessonkit.serve.jupyter_route) replaces it.
    assert "jupyter-server-proxy" not in {**_runtime(), **_instructor(), **_dev()}
    assert "jupyter-server-proxy" not in _conda_requirements()


# --- a real `pip install .`, as postBuild and a hub image run it ----------------------------


def _files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


@pytest.fixture(scope="module")
def pip_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, set]]:
    """A copy of the repository (its tracked files), `pip install .`-ed into a fresh venv.

    Returns (copy, venv, the copy's files before the install).
    """
    scratch = tmp_path_factory.mktemp("pip-install")
    copy, venv = scratch / "course", scratch / "venv"
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    before = _files_under(copy)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    install = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-cache-dir", "."],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    yield copy, venv, before


def test_pip_install_leaves_no_build_folder_or_egg_info_in_the_course_folder(pip_installed):
    copy, _venv, before = pip_installed
    assert _files_under(copy) == before
    assert not list(copy.glob("build")) and not list(copy.glob("*.egg-info"))


def test_pip_install_puts_the_jupyter_settings_where_jupyter_reads_them(pip_installed):
    copy, venv, _before = pip_installed
    for source, target in SHARED_DATA.items():
        assert json.loads((venv / target).read_text()) == json.loads((copy / source).read_text())


def test_pip_install_ships_every_file_of_lessonkit(pip_installed):
    copy, venv, before = pip_installed
    (site,) = venv.glob("lib/python3*/site-packages")
    shipped = {n for n in before if n.startswith("lessonkit/") and "__pycache__" not in n}
    assert "lessonkit/lab/browser_demo.js" in shipped
    missing = sorted(n for n in shipped if not (site / n).is_file())
    assert not missing, f"not in the installed package: {missing}"


def test_the_wheel_maps_each_settings_file_to_its_jupyter_folder():
    shared = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared == SHARED_DATA


# --- JupyterLab settings and the server extension, in this environment ----------------------


def test_jupyterlab_reads_the_course_settings_in_this_environment(tmp_path):
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import get_settings

    settings_dir = Path(get_app_dir()) / "settings"
    shipped = json.loads((ROOT / "jupyter" / "overrides.d" / SETTINGS_FILE).read_text())
    assert json.loads((settings_dir / "overrides.d" / SETTINGS_FILE).read_text()) == shipped
    # The schema defaults JupyterLab serves, with the overrides applied (no user settings).
    notification, _warnings = get_settings(
        str(settings_dir),
        str(Path(get_app_dir()) / "schemas"),
        str(tmp_path),
        schema_name="@jupyterlab/apputils-extension:notification",
    )
    defaults = notification["schema"]["properties"]
    assert defaults["fetchNews"]["default"] == "false"
    assert defaults["checkForUpdates"]["default"] is False


def _server_extensions() -> str:
    # `jupyter server extension list` reads the same switches the server does at start.
    listing = subprocess.run(
        [Path(sys.executable).with_name("jupyter"), "server", "extension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)


def test_the_shipped_server_settings_enable_the_course_extensions_and_nothing_else():
    shipped = json.loads((ROOT / "jupyter" / "jupyter_server_config.d" / SETTINGS_FILE).read_text())
    # Jupyter reads only the list of extensions from these folders (the culling times
    # are set by lessonkit.serve.jupyter_culling itself).
    assert shipped == {
        "ServerApp": {"jpserver_extensions": {f"lessonkit.serve.{n}": True for n in EXTENSIONS}}
    }


def test_the_course_extensions_are_enabled_and_no_proxy_for_this_environments_jupyter_server():
    text = _server_extensions()
    for name in EXTENSIONS:
        assert re.search(rf"lessonkit\.serve\.{name} enabled", text), text
        assert f"lessonkit.serve.{name}  OK" in text, text
    assert "jupyter_server_proxy" not in text, (
        "jupyter-server-proxy is installed in this environment (an older course needed it); "
        "its /proxy/<port> routes reach every loopback port: "
        f"{Path(sys.executable).parent}/python -m pip uninstall jupyter-server-proxy, "
        "or `make clean setup`"
    )


# --- the command line and CI -------------------------------------------------------------------


def test_lessonkit_and_python_dash_m_lessonkit_run_the_same_command_line():
    console = Path(sys.executable).with_name("lessonkit")
    by_script = subprocess.run([console, "--version"], capture_output=True, text=True, check=True)
    by_module = subprocess.run(
        [sys.executable, "-m", "lessonkit", "--version"], capture_output=True, text=True, check=True
    )
    assert by_script.stdout == by_module.stdout
    assert by_script.stdout.strip() == PYPROJECT["project"]["version"]


def test_make_clean_removes_the_website_its_builders_and_their_downloads():
    recipe = re.search(r"^clean:\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    removed = " ".join(re.findall(r"^\trm -rf (.*)$", recipe.group(1), re.MULTILINE)).split()
    for made in (".venv-lite", "$(LITE_DIR)", "build/lite-cache", ".venv-site", "$(SITE_DIR)"):
        assert made in removed, f"make clean leaves {made} behind"


def test_ci_script_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in ci
    assert "make test" in readme and "make lab" in readme


@pytest.mark.parametrize(
    ("target", "folder"),
    [("browser", "browser"), ("hub", "hub"), ("lite-test", "lite"), ("site-test", "site")],
)
def test_make_test_runs_each_playwright_suite_in_its_own_pytest_process(target, folder):
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^TEST_STAGES :=.*\b{target}\b", makefile, re.MULTILINE)
    recipe = re.search(r"^test:\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "tools/run_stages.py" in recipe and "$(TEST_STAGES)" in recipe  # one `make` each
    assert re.search(rf"^{target}:.*\n\t\$\(BIN\)/pytest tests/{folder}\b", makefile, re.MULTILINE)
