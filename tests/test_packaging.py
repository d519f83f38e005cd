"""The course installs the same way everywhere: pyproject.toml, environment.yml and the CLI agree."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _split_requirement(text: str) -> tuple[str, str]:
    """Return (normalised name, version spec without spaces) of 'name >=1,<2'."""
    match = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", text)
    assert match, f"cannot read requirement {text!r}"
    name, spec = match.groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + project["optional-dependencies"]["dev"]
    return dict(_split_requirement(r) for r in listed)


def _environment_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    found = dict(_split_requirement(d) for d in conda)
    found.pop("python", None)
    found.pop("pip", None)
    return found


def test_environment_yml_lists_the_same_packages_and_ranges_as_pyproject():
    assert _environment_requirements() == _pyproject_requirements()


def test_environment_yml_installs_the_course_package_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [["-e ."]]
    assert "conda-forge" in env["channels"]


def test_every_dependency_has_an_upper_bound():
    for name, spec in _pyproject_requirements().items():
        assert "<" in spec, f"{name} needs a range with an upper bound, got {spec!r}"


def test_lessonkit_and_python_dash_m_lessonkit_run_the_same_command_line():
    console = Path(sys.executable).with_name("lessonkit")
    by_script = subprocess.run([console, "--version"], capture_output=True, text=True, check=True)
    by_module = subprocess.run(
        [sys.executable, "-m", "lessonkit", "--version"], capture_output=True, text=True, check=True
    )
    assert by_script.stdout == by_module.stdout
    assert (
        by_script.stdout.strip()
        == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    )


def test_ci_script_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in ci
    assert "make test" in readme and "make lab" in readme
