#!/usr/bin/env python3
"""Build the zero-install edition: a static JupyterLite site of the course, from this tree.

    python3 tools/build_lite.py                 # the site in build/lite/ (what `make lite` runs)
    python3 tools/build_lite.py --out DIR       # somewhere else
    python3 tools/build_lite.py --out DIR --in-site   # as part of the course website (tools/build_site.py)
    python3 tools/build_lite.py --pin           # re-pin the kernel's wheels (tools/lite/kernel-wheels.txt)

Serve the folder with any static web server and open it: JupyterLab runs in the page,
Python (Pyodide) runs in a web worker, and lessonkit is already installed in the
kernel when a notebook starts. Nothing is fetched from anywhere but the site itself.

What goes in, and where each piece comes from (every one pinned):

    the builder      jupyterlite-core and jupyterlite-pyodide-kernel 0.8.6 and the page's
                     widget front ends, in a venv of their own (.venv-lite, from
                     tools/lite/build-requirements.txt, hash-checked). Not the course's .venv:
                     the Pyodide kernel's lab extension must not load in the real JupyterLab.
    Python itself    the npm package `pyodide` at PYODIDE_VERSION (the core only: its lock
                     file names ~350 packages but ships none), integrity-checked.
    kernel wheels    from PyPI, hash-checked (tools/lite/kernel-wheels.txt): every package the
                     kernel loads at start that Pyodide's lock names, at the lock's version,
                     plus the few it does not name (tools/lite/kernel-wheels.in). Their sha256
                     is rewritten in the site's copy of the lock.
    kernel shims     piplite, pyodide-kernel and the ipykernel/widgetsnbextension stand-ins, from
                     the jupyterlite-pyodide-kernel package itself.
    lessonkit        a wheel built from the working tree, added to the lock with what it needs
                     in the browser, and preloaded with the kernel (loadPyodideOptions.packages),
                     so the first cell can import it with no step for the learner.
    contents         notebooks/ and exercises/ at the repository's paths; the site opens on
                     notebooks/00_start_here.ipynb.
    settings         jupyter/overrides.d/streaming-course.json, the course's JupyterLab settings,
                     plus LITE_SETTINGS (closing a notebook's tab shuts its kernel down).
    course plugin    tools/lite/course-extension: the Course menu (back to the notebook's page
                     when the app is part of the course website) and a notification when other
                     notebooks still hold a kernel, with a button that shuts them down.

Packages that Pyodide's lock names and the site does not ship (numpy, matplotlib, pydantic-core,
...) keep a lock entry whose file name is the absolute URL of Pyodide's own CDN: a learner online
can still load them, and offline they are simply missing (lessonkit then takes its browser path).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LITE_TOOLS = REPO / "tools" / "lite"
BUILD_REQUIREMENTS = LITE_TOOLS / "build-requirements.txt"
KERNEL_WHEELS_IN = LITE_TOOLS / "kernel-wheels.in"
KERNEL_WHEELS = LITE_TOOLS / "kernel-wheels.txt"
LITE_VENV = REPO / ".venv-lite"
DEFAULT_OUT = REPO / "build" / "lite"
CACHE = REPO / "build" / "lite-cache"  # downloads kept between builds (npm tarball, wheels)
SETTINGS = REPO / "jupyter" / "overrides.d" / "streaming-course.json"
COURSE_EXTENSION = LITE_TOOLS / "course-extension"
LOCKS = REPO / "build" / ".locks"  # several builds may run at once (make test's stages)
STARTED_AT = "LESSONKIT_BUILD_STARTED_AT"  # the build's start, kept across the exec into the venv
CONTENT_FOLDERS = ("notebooks", "exercises")
START_NOTEBOOK = "notebooks/00_start_here.ipynb"

# The Pyodide the site runs. Newer ones appear on npm (314.0.8 is `latest` now); moving means
# changing these two lines and running --pin, because the lock's versions move with it.
PYODIDE_VERSION = "314.0.7"
PYODIDE_INTEGRITY = "sha512-0YvXxEhfEdpLfb/XkM2BFAeMROq0iMUX2bzzH9pOttyMcWkwq+HbE5uyuGD82LN7y2q+SNvi/6V5JEsOlD2R1A=="
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
# The Python in the browser, as markers in wheel metadata see it.
BROWSER_MARKERS = {
    "python_version": "3.14",
    "python_full_version": "3.14.2",
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}

# What the Pyodide kernel itself loads at start (its worker installs whatever of these is
# not preloaded with piplite, which would go to PyPI): preloading them all means no request
# leaves the site and the downloads overlap Pyodide's own start-up.
KERNEL_PACKAGES = ("micropip", "piplite", "pyodide-kernel", "ipykernel", "comm", "ipython", "jedi")
# What lessonkit needs in the browser kernel (its pyproject lists the full edition's set:
# JupyterLab, matplotlib, the SDKs, ... which a browser kernel does not load at start).
LESSONKIT_NAME = "streaming-course"  # the distribution that holds the lessonkit package
# uvicorn: lessonkit.lab's measure and browser_demo import it at the top; serve.running()
# itself never does in the browser (it calls the app in-process: tests/lite checks that).
LESSONKIT_BROWSER_NEEDS = ("starlette", "httpx", "uvicorn", "ipywidgets", "anywidget")
# Requirements of kernel wheels that are not Python the kernel runs.
NOT_IN_KERNEL = {
    "jupyterlab-widgets": "the ipywidgets front end: the page loads it as a lab extension",
}
# The small wheels jupyterlite-pyodide-kernel ships for the kernel (in its lab extension).
KERNEL_SHIMS = ("piplite", "pyodide-kernel", "ipykernel", "widgetsnbextension")
SHIM_VERSIONS = {"widgetsnbextension": "4.0.999"}  # ipywidgets 8's; 3.6.999 is for ipywidgets 7


# JupyterLab settings for the app only (the full edition keeps its kernels until culled):
# a notebook's kernel stops when its tab closes.
LITE_SETTINGS = {"@jupyterlab/notebook-extension:tracker": {"kernelShutdown": True}}
# Inside the course website: where its pages are, relative to the app (<site>/lite/), for the
# Course menu, and where the kernel's links to the full edition's set-up point.
SITE_PAGES = "../"
FULL_EDITION_GUIDE = "docs/learning.html#set-up"


class BuildError(RuntimeError):
    """The build cannot go on; the message says what to do."""


def log(message: str) -> None:
    print(f"[lite] {message}", flush=True)


def normalized(name: str) -> str:
    """Return a distribution name in PEP 503 form (what Pyodide's lock keys are)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------------------------
# The build environment (.venv-lite)


@contextlib.contextmanager
def locked(name: str):
    """Hold an exclusive lock called name for the block (other builds of this tree wait)."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    with open(LOCKS / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def builder_python(venv: Path, requirements: Path) -> Path:
    """Return the python of venv, created or refreshed from the pinned, hashed requirements.

    uv when it is on PATH, else venv + pip. A stamp holds the requirements' sha256, so an
    unchanged venv is used as it is.
    """
    python = venv / "bin" / "python"
    stamp = venv / ".requirements-sha256"
    digest = sha256_of(requirements)
    with locked(venv.name):
        if python.exists() and stamp.exists() and stamp.read_text() == digest:
            return python
        log(f"setting up the builder in {venv.name}/ (pinned, hash-checked) ...")
        uv = shutil.which("uv")
        if uv:
            if not python.exists():
                run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
            run([uv, "pip", "sync", "--quiet", "--require-hashes", "--python", str(python),
                 str(requirements)])  # fmt: skip
        else:
            if not python.exists():
                run([sys.executable, "-m", "venv", str(venv)])
            run([str(python), "-m", "pip", "install", "--quiet", "--require-hashes", "-r",
                 str(requirements)])  # fmt: skip
        stamp.write_text(digest)
    return python


def ensure_build_env() -> None:
    """Create or refresh .venv-lite from the pinned requirements, then re-run this script in it."""
    if Path(sys.prefix).resolve() == LITE_VENV.resolve():
        return
    os.environ.setdefault(STARTED_AT, str(time.time()))  # the build's time includes the set-up
    python = builder_python(LITE_VENV, BUILD_REQUIREMENTS)
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


def started_at() -> float:
    """Return when this build started (time.time()), before the exec into its venv if any."""
    return float(os.environ.get(STARTED_AT) or time.time())


def run(command: list[str], *, cwd: Path | None = None) -> str:
    """Run a command; return its output (kept out of the log unless it fails: then BuildError)."""
    result = subprocess.run(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if result.returncode != 0:
        raise BuildError(f"{' '.join(command[:4])} ... failed:\n{result.stdout[-4000:]}")
    return result.stdout


# ---------------------------------------------------------------------------------------------
# Pyodide (npm)


def fetch_pyodide() -> Path:
    """Return a folder with the pinned npm `pyodide` package, fetched once and integrity-checked."""
    target = CACHE / f"pyodide-{PYODIDE_VERSION}"
    if (target / "pyodide-lock.json").exists():
        return target
    npm = shutil.which("npm")
    if not npm:
        raise BuildError(
            "npm is missing; the site's Python comes from the npm package pyodide.\n"
            "  Debian/Ubuntu: sudo apt-get install npm   (or install Node.js from nodejs.org)"
        )
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        log(f"fetching pyodide {PYODIDE_VERSION} from npm ...")
        run([npm, "pack", "--silent", f"pyodide@{PYODIDE_VERSION}"], cwd=Path(scratch))
        tarball = Path(scratch) / f"pyodide-{PYODIDE_VERSION}.tgz"
        algorithm, _, expected = PYODIDE_INTEGRITY.partition("-")
        digest = hashlib.new(algorithm, tarball.read_bytes()).digest()
        if base64.b64encode(digest).decode() != expected:
            raise BuildError(f"{tarball.name} does not match its pinned integrity; not using it")
        unpacked = Path(scratch) / "unpacked"
        # The tarball's integrity is checked above; the "data" filter (refusing links and
        # paths outside the folder) is used where this Python has it (3.11.4 and later).
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        with tarfile.open(tarball) as archive:
            archive.extractall(unpacked, **safe)
        shutil.move(unpacked / "package", target)
    return target


# ---------------------------------------------------------------------------------------------
# Wheels: metadata, requirements, downloads


def wheel_metadata(wheel: Path) -> tuple[str, str, list[str]]:
    """Return (normalized name, version, Requires-Dist lines) of a wheel."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(name).decode("utf-8"))
    return normalized(message["Name"]), message["Version"], message.get_all("Requires-Dist") or []


def wheel_imports(wheel: Path) -> list[str]:
    """Return the top-level import names a wheel installs (packages and modules)."""
    names = set()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            top = member.split("/")[0]
            if top.endswith((".dist-info", ".data")):
                continue
            if "/" in member and member.endswith("/__init__.py") and member.count("/") == 1:
                names.add(top)
            elif "/" not in member and member.endswith(".py"):
                names.add(member[:-3])
    return sorted(names)


def browser_requirements(requires_dist: list[str]) -> list[str]:
    """Return the normalized names a wheel requires in the browser kernel (markers evaluated)."""
    from packaging.requirements import Requirement

    needed = []
    for line in requires_dist:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(BROWSER_MARKERS):
            needed.append(normalized(requirement.name))
    return needed


def read_pins(path: Path) -> dict[str, tuple[str, list[str]]]:
    """Return {normalized name: (version, hashes)} from a requirements file (name==version)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    text = path.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(r"([A-Za-z0-9_.-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})*)\s*$", line)
        if not match:
            raise BuildError(f"{path.name}: cannot read {line!r}; write name==version")
        hashes = re.findall(r"sha256:([0-9a-f]{64})", match.group(3))
        pins[normalized(match.group(1))] = (match.group(2), hashes)
    return pins


def pip_download(specs: list[str], dest: Path, *, hashes: bool) -> None:
    """Download pure-Python wheels for the browser's Python with pip (no dependencies)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as requirements:
        requirements.write("\n".join(specs) + "\n")
    try:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--implementation",
            "py",
            "--abi",
            "none",
            "--platform",
            "any",
            "--python-version",
            BROWSER_MARKERS["python_version"],
            "--dest",
            str(dest),
            "-r",
            requirements.name,
        ]
        if hashes:
            command.append("--require-hashes")
        run(command)
    finally:
        os.unlink(requirements.name)


def wheel_file(folder: Path, name: str, version: str) -> Path:
    """Return the wheel of name==version in folder."""
    for wheel in folder.glob("*.whl"):
        wheel_name, _, rest = wheel.name.partition("-")
        if normalized(wheel_name) == name and rest.split("-")[0] == version:
            return wheel
    raise BuildError(f"no wheel of {name}=={version} in {folder}")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# What the kernel gets


def kernel_shim_wheels() -> dict[str, Path]:
    """Return {name: wheel} of the kernel's own small wheels, from jupyterlite-pyodide-kernel."""
    folder = (
        Path(sys.prefix)
        / "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi"
    )
    shims = {}
    for wheel in folder.glob("*.whl"):
        name, version, _ = wheel_metadata(wheel)
        if name in KERNEL_SHIMS and SHIM_VERSIONS.get(name, version) == version:
            shims[name] = wheel
    missing = set(KERNEL_SHIMS) - set(shims)
    if missing:
        raise BuildError(f"jupyterlite-pyodide-kernel has no wheel for {sorted(missing)}")
    return shims


def resolve_kernel_set(
    lock: dict, extra_pins: dict[str, str], fetch, local: dict[str, Path]
) -> dict[str, tuple[str, Path]]:
    """Return {name: (version, wheel)} of everything the kernel loads at start, deps included.

    A package's version is the lock's when Pyodide's lock names it, else its pin in
    kernel-wheels.in; `fetch(name, version)` returns its wheel; `local` holds wheels that
    come with the build (the kernel's shims, lessonkit). What each needs: see kernel_depends.
    """
    chosen: dict[str, tuple[str, Path]] = {}
    todo = [*KERNEL_PACKAGES, LESSONKIT_NAME]
    while todo:
        name = normalized(todo.pop())
        if name in chosen:
            continue
        if name in local:
            wheel = local[name]
            version = wheel_metadata(wheel)[1]
        elif name in lock["packages"]:
            version = lock["packages"][name]["version"]
            wheel = fetch(name, version)
        elif name in extra_pins:
            version = extra_pins[name]
            wheel = fetch(name, version)
        else:
            raise BuildError(
                f"the kernel needs {name!r}, which Pyodide's lock does not name: pin it in "
                f"{KERNEL_WHEELS_IN.relative_to(REPO)} and run tools/build_lite.py --pin"
            )
        chosen[name] = (version, wheel)
        todo += kernel_depends(lock, extra_pins, name, wheel)
    return chosen


def kernel_depends(lock: dict, extra_pins: dict[str, str], name: str, wheel: Path) -> list[str]:
    """Return what package `name` needs loaded with it in the browser kernel.

    lessonkit: LESSONKIT_BROWSER_NEEDS (its pyproject lists the full edition's set).
    A package Pyodide's lock names: the lock's `depends`, plus any requirement of its wheel
    that the lock or kernel-wheels.in can satisfy (the lock leaves out some, e.g. starlette's
    anyio); a requirement neither has stays out, as it does in Pyodide's own distribution.
    Any other package: its wheel's requirements, all of which must be available.
    """
    if name == LESSONKIT_NAME:
        return list(LESSONKIT_BROWSER_NEEDS)
    available = set(lock["packages"]) | set(extra_pins) | set(KERNEL_SHIMS)
    required = [r for r in browser_requirements(wheel_metadata(wheel)[2]) if r not in NOT_IN_KERNEL]
    entry = lock["packages"].get(name)
    if entry is None or name in KERNEL_SHIMS:
        unavailable = sorted(set(required) - available)
        if unavailable:
            raise BuildError(
                f"{name} requires {unavailable}, which Pyodide's lock does not name: pin them in "
                f"{KERNEL_WHEELS_IN.relative_to(REPO)} and run tools/build_lite.py --pin"
            )
        return required
    depends = {normalized(d) for d in entry["depends"]}
    return sorted(depends | {r for r in required if r in available})


def compose_lock(
    lock: dict,
    extra_pins: dict[str, str],
    chosen: dict[str, tuple[str, Path]],
    wheel_names: dict[str, str],
) -> dict:
    """Return the site's lock: shipped wheels local with their own sha256, the rest on the CDN."""
    site_lock = json.loads(json.dumps(lock))
    packages = site_lock["packages"]
    for name, entry in packages.items():
        if name not in chosen:
            entry["file_name"] = PYODIDE_CDN + entry["file_name"]  # online only
    for name, (version, wheel) in sorted(chosen.items()):
        entry = packages.get(name) or {
            "name": name,
            "version": version,
            "install_dir": "site",
            "package_type": "package",
            "imports": wheel_imports(wheel),
            "unvendored_tests": False,
            "shared_library": False,
        }
        entry.update(
            file_name=wheel_names[name],
            sha256=sha256_of(wheel),
            depends=kernel_depends(lock, extra_pins, name, wheel),
        )
        packages[name] = entry
    return site_lock


# ---------------------------------------------------------------------------------------------
# The lessonkit wheel


def build_lessonkit_wheel(dest: Path) -> Path:
    """Return a wheel of the working tree's lessonkit (built without network: --no-isolation)."""
    with tempfile.TemporaryDirectory() as scratch:
        # Build from a copy: setuptools writes build/ and *.egg-info/ next to the sources.
        source = Path(scratch) / "src"
        shutil.copytree(
            REPO,
            source,
            ignore=shutil.ignore_patterns(
                ".git",
                ".venv*",
                "build",
                "test-artifacts",
                ".browser-scratch",
                "__pycache__",
                "*.egg-info",
                ".pytest_cache",
                ".ruff_cache",
                ".hypothesis",
                "node_modules",
            ),
        )
        out = Path(scratch) / "dist"
        run(
            [
                sys.executable,
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "--outdir",
                str(out),
                str(source),
            ]
        )
        (wheel,) = out.glob("*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / wheel.name
        shutil.copy2(wheel, target)
    return target


# ---------------------------------------------------------------------------------------------
# The site


def jupyter_lite_json(preload: list[str], *, in_site: bool, repository: str | None) -> dict:
    """Return the site's jupyter-lite.json (merged by the builder with what its add-ons add).

    The kernel's environment holds where its links to the full edition's set-up point
    (lessonkit.edition reads it): inside the course website, the learning guide's page,
    relative to the app (the kernel makes it absolute at run time); for the app alone, the
    guide in the course's repository when its address is set (pyproject.toml), else nothing.
    """
    if in_site:
        guide = SITE_PAGES + FULL_EDITION_GUIDE
    elif repository:
        guide = f"{repository.rstrip('/')}/blob/HEAD/docs/learning.md#set-up"
    else:
        guide = ""
    pyodide_options: dict = {"packages": preload}
    if guide:
        pyodide_options["env"] = {"LESSONKIT_FULL_EDITION_GUIDE": guide}
    config: dict = {
        "appName": "Token streaming (zero install)",
        # window.jupyterapp: the hand-in button saves the open notebooks with "Save All"
        # (lessonkit/learner/handin_button.js), as lessonkit.serve.jupyter_page does in JupyterLab
        "exposeAppInBrowser": True,
        "litePluginSettings": {
            "@jupyterlite/pyodide-kernel-extension:kernel": {"loadPyodideOptions": pyodide_options}
        },
    }
    if in_site:
        config["streamingCourse"] = {"pages": SITE_PAGES}  # read by the course plugin
    return {"jupyter-lite-schema-version": 0, "jupyter-config-data": config}


def binder_url(repository: str) -> str:
    """Return the Binder address that opens lesson 00 from the course's repository."""
    from urllib.parse import quote, urlsplit

    parts = urlsplit(repository)
    if parts.netloc == "github.com":
        spec = "gh/" + parts.path.strip("/").removesuffix(".git") + "/HEAD"
    else:
        spec = f"git/{quote(repository, safe='')}/HEAD"
    return f"https://mybinder.org/v2/{spec}?urlpath=lab/tree/{START_NOTEBOOK}"


def course_address() -> dict[str, str]:
    """Return the course's published addresses (pyproject.toml, [project.urls]); {} when unset."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return dict(project.get("urls", {}))


# The root page's own redirect (to the app, with no file named) is replaced by one that opens
# the first notebook. The page itself stays: the app's pages read its #jupyter-config-data.
ROOT_REDIRECT = re.compile(
    r"<script type=\"module\">\s*await import\('\./config-utils\.js'\);\s*</script>"
)
START_REDIRECT = """<meta http-equiv="refresh" content="0; url={url}">
    <link rel="icon" href="lab/favicon.ico">
    <title>Token streaming: the course in your browser</title>"""


def open_on_start_notebook(index_html: Path, url: str) -> None:
    """Make the site's root page open url (the first notebook) instead of the bare app."""
    text = index_html.read_text()
    changed, count = ROOT_REDIRECT.subn(START_REDIRECT.format(url=url), text)
    if count != 1:
        raise BuildError(f"{index_html} no longer has the redirect this build replaces")
    index_html.write_text(changed)


# The app's pages name their icon from the start: without it a browser asks the host's root
# for /favicon.ico, outside the site (a 404 in the console wherever the site sits under a path).
MANIFEST_LINK = re.compile(r'(<link rel="manifest" href="[^"]*">)')


def name_the_icon(page: Path, icon: str) -> None:
    """Add a link to the app's icon (icon: relative to page) beside the page's manifest link."""
    text = page.read_text()
    changed, count = MANIFEST_LINK.subn(rf'\1\n    <link rel="icon" href="{icon}">', text)
    if count != 1:
        raise BuildError(f"{page} no longer has the manifest link this build adds the icon beside")
    page.write_text(changed)


def stage_contents(folder: Path) -> int:
    """Copy the notebooks the site serves into folder, at their repository paths; return how many."""
    count = 0
    for name in CONTENT_FOLDERS:
        for notebook in sorted((REPO / name).glob("*.ipynb")):
            target = folder / name / notebook.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(notebook, target)
            count += 1
    return count


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def kernel_wheels(lock: dict) -> tuple[dict[str, tuple[str, Path]], dict[str, str]]:
    """Return ({name: (version, wheel)} the kernel gets, kernel-wheels.in's pins), all checked.

    The PyPI wheels are downloaded once into the cache, each checked against its pinned
    sha256; lessonkit's wheel is built from the working tree every time.
    """
    if not KERNEL_WHEELS.exists():
        raise BuildError(f"{KERNEL_WHEELS.relative_to(REPO)} is missing: run --pin first")
    pins = read_pins(KERNEL_WHEELS)
    extra = {name: version for name, (version, _) in read_pins(KERNEL_WHEELS_IN).items()}
    wheels_dir = CACHE / f"wheels-{PYODIDE_VERSION}"
    missing = [
        f"{name}=={version} " + " ".join(f"--hash=sha256:{h}" for h in hashes)
        for name, (version, hashes) in pins.items()
        if not _has_wheel(wheels_dir, name, version)
    ]
    if missing:
        log(f"downloading {len(missing)} kernel wheels from PyPI (hash-checked) ...")
        pip_download(missing, wheels_dir, hashes=True)

    def pinned_wheel(name: str, version: str) -> Path:
        if pins.get(name, ("",))[0] != version:
            raise BuildError(
                f"the kernel needs {name}=={version}, which {KERNEL_WHEELS.name} does not pin; "
                "run: python3 tools/build_lite.py --pin"
            )
        wheel = wheel_file(wheels_dir, name, version)
        if sha256_of(wheel) not in pins[name][1]:
            raise BuildError(f"{wheel.name} does not match its pinned sha256")
        return wheel

    local = {**kernel_shim_wheels(), LESSONKIT_NAME: build_lessonkit_wheel(CACHE / "lessonkit")}
    chosen = resolve_kernel_set(lock, extra, pinned_wheel, local)
    unused = sorted(set(pins) - set(chosen))
    if unused:
        raise BuildError(f"{KERNEL_WHEELS.name} pins {unused}, which nothing needs; run --pin")
    return chosen, extra


def write_lite_dir(
    lite_dir: Path,
    pyodide: Path,
    lock: dict,
    extra: dict[str, str],
    chosen: dict[str, tuple[str, Path]],
    *,
    in_site: bool,
) -> list[str]:
    """Write the builder's input folder (Pyodide, the lock, wheels, config); return the preloads."""
    static = lite_dir / "static" / "pyodide"  # where the Pyodide add-on looks for a local Pyodide
    static.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy2(pyodide / name, static / name)
    wheel_names = {}
    for name, (_, wheel) in chosen.items():
        # lessonkit's wheel sits in a folder named by its content: a browser that cached an
        # older build's wheel under the same URL would fail the lock's integrity check.
        if name == LESSONKIT_NAME:
            relative = f"lessonkit-{sha256_of(wheel)[:12]}/{wheel.name}"
        else:
            relative = wheel.name
        (static / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, static / relative)
        wheel_names[name] = relative
    site_lock = compose_lock(lock, extra, chosen, wheel_names)
    (static / "pyodide-lock.json").write_text(json.dumps(site_lock, indent=1, sort_keys=True))
    preload = sorted({*map(normalized, KERNEL_PACKAGES), LESSONKIT_NAME})
    repository = course_address().get("Repository")
    config = jupyter_lite_json(preload, in_site=in_site, repository=repository)
    (lite_dir / "jupyter-lite.json").write_text(json.dumps(config, indent=2))
    settings = {**json.loads(SETTINGS.read_text()), **LITE_SETTINGS}
    (lite_dir / "overrides.json").write_text(json.dumps(settings, indent=2))
    # The course plugin, a prebuilt federated extension, from a folder the builder is told of.
    extensions = lite_dir.parent / "labextensions"
    shutil.copytree(COURSE_EXTENSION, extensions / "streaming-course")
    builder_config = {"FederatedExtensionAddon": {"extra_labextensions_path": [str(extensions)]}}
    (lite_dir / "jupyter_lite_config.json").write_text(json.dumps(builder_config, indent=2))
    return preload


def build_site(out: Path, *, in_site: bool = False) -> None:
    """Build the site into out (replacing what is there); in_site: as part of the course website."""
    with locked("lite-cache"):  # downloads and the lessonkit wheel: one build at a time
        pyodide = fetch_pyodide()
        lock = json.loads((pyodide / "pyodide-lock.json").read_text())
        chosen, extra = kernel_wheels(lock)
        with tempfile.TemporaryDirectory(prefix="lite-src-") as scratch:
            lite_dir = Path(scratch) / "lite"
            preload = write_lite_dir(lite_dir, pyodide, lock, extra, chosen, in_site=in_site)
            contents = Path(scratch) / "contents"
            n_notebooks = stage_contents(contents)
            if out.exists():
                shutil.rmtree(out)
            log(f"building the site with jupyter lite ({n_notebooks} notebooks) ...")
            jupyter = str(Path(sys.prefix) / "bin" / "jupyter")
            # --apps lab: the site is JupyterLab only (no separate Notebook, REPL or file pages);
            # --no-libarchive: Python's own tarfile (libarchive-c only makes it faster).
            run(
                [jupyter, "lite", "build", "--lite-dir", str(lite_dir), "--output-dir", str(out),
                 "--contents", str(contents), "--apps", "lab", "--no-sourcemaps",
                 "--no-unused-shared-packages", "--no-libarchive"],
                cwd=lite_dir,
            )  # fmt: skip
    open_on_start_notebook(out / "index.html", f"lab/index.html?path={START_NOTEBOOK}")
    name_the_icon(out / "lab" / "index.html", "favicon.ico")
    (out / ".nojekyll").write_text("")  # GitHub Pages: publish the folder as it is, no Jekyll
    shipped = {name: version for name, (version, _) in sorted(chosen.items())}
    info = {"pyodide": PYODIDE_VERSION, "kernel_preloads": preload, "kernel_wheels": shipped}
    (out / "build-info.json").write_text(json.dumps(info, indent=2))
    size_mb = folder_bytes(out) / 1e6
    log(f"{len(shipped)} wheels in the kernel, lessonkit built from the working tree")
    log(f"site: {out} ({size_mb:.1f} MB), built in {time.time() - started_at():.1f} s")
    if not in_site:
        log(
            f"try it: python3 -m http.server --bind 127.0.0.1 --directory {out} 8000, then open http://127.0.0.1:8000/"
        )


def _has_wheel(folder: Path, name: str, version: str) -> bool:
    try:
        wheel_file(folder, name, version)
    except BuildError:
        return False
    return True


def pin() -> None:
    """Write tools/lite/kernel-wheels.txt: every wheel the kernel loads from PyPI, with its sha256."""
    pyodide = fetch_pyodide()
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    extra = {name: version for name, (version, _) in read_pins(KERNEL_WHEELS_IN).items()}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)

        def download(name: str, version: str) -> Path:
            if not _has_wheel(folder, name, version):
                pip_download([f"{name}=={version}"], folder, hashes=False)
            return wheel_file(folder, name, version)

        lessonkit = build_lessonkit_wheel(folder / "lessonkit")
        local = {**kernel_shim_wheels(), LESSONKIT_NAME: lessonkit}
        chosen = resolve_kernel_set(lock, extra, download, local)
        lines = [
            "# Generated by `python3 tools/build_lite.py --pin`: do not edit by hand.",
            f"# The wheels the browser kernel gets from PyPI for pyodide {PYODIDE_VERSION}: the lock's",
            f"# versions, plus {KERNEL_WHEELS_IN.name}. The build checks every file against these hashes.",
        ]
        for name, (version, wheel) in sorted(chosen.items()):
            if name in local:
                continue
            lines.append(f"{name}=={version} \\\n    --hash=sha256:{sha256_of(wheel)}")
    KERNEL_WHEELS.write_text("\n".join(lines) + "\n")
    log(f"wrote {KERNEL_WHEELS.relative_to(REPO)} ({len(lines) - 3} wheels)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder")
    parser.add_argument("--pin", action="store_true", help="re-pin tools/lite/kernel-wheels.txt")
    parser.add_argument(
        "--in-site", action="store_true", help="build the app as part of the course website"
    )
    args = parser.parse_args(argv)
    try:
        ensure_build_env()
        if args.pin:
            pin()
        else:
            build_site(args.out.resolve(), in_site=args.in_site)
    except BuildError as error:
        print(f"[lite] build failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
