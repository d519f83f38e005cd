"""Which edition of the course a kernel runs, and the cells only the full edition can run.

The course has two editions from one set of notebooks: the full one (JupyterLab on the
learner's machine, a hub or Binder) and the zero-install one (JupyterLite: the kernel is
Pyodide in the learner's browser, ``sys.platform == "emscripten"``). lessonkit chooses
where they differ; the notebooks do not fork.

A few cells need what a browser kernel cannot have: a TCP socket (a real reverse proxy, a
WebSocket client), or a provider SDK built on compiled packages (the openai SDK's
pydantic-core). Such a cell starts with one line::

    %%full_edition openai-sdk

In the full edition the magic runs the cell as if the line were not there. In the browser
it says in one line what the cell needs, shows what the cell showed in the full edition
(recorded from the committed notebook: ``lessonkit/data/full_edition.json``, written by
``tools/record_full_edition.py``) and links to the full edition.
Load it in a notebook with ``%load_ext lessonkit.edition``.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["FULL_EDITION_URL", "NEEDS", "in_browser", "stored_outputs"]

# Where a learner in the browser gets the full edition: the repository's two commands.
# (The same <org> as the README's Binder badge: publishers write their own in both.)
FULL_EDITION_URL = "https://github.com/<org>/streaming-course#the-two-commands"

# What each full-edition-only cell needs, said in the cell's one line in the browser.
NEEDS = {
    "openai-sdk": "the official openai SDK, built on pydantic-core (compiled code that this "
    "browser kernel cannot load offline)",
    "responses-sdk": "the official openai SDK, built on pydantic-core (compiled code that this "
    "browser kernel cannot load offline)",
    "responses-failure": "the official openai SDK, built on pydantic-core (compiled code that "
    "this browser kernel cannot load offline)",
    "buffering-proxy": "two real reverse proxies in front of the server, on TCP sockets",
    "websocket-bytes": "a WebSocket connection, which needs a TCP socket",
    "websocket-setup": "a WebSocket connection, which needs a TCP socket",
}
STORE = "full_edition.json"


def in_browser() -> bool:
    """Return True in the zero-install edition's kernel (Pyodide, in the browser)."""
    return sys.platform == "emscripten"


@cache
def _store() -> dict[str, Any]:
    return json.loads(resources.files("lessonkit").joinpath("data", STORE).read_text("utf-8"))


def stored_outputs(name: str) -> list[dict[str, Any]]:
    """Return the outputs (nbformat dicts) the cell called ``name`` showed in the full edition."""
    store = _store()
    if name not in store:
        raise KeyError(f"no stored result called {name!r}; these exist: {', '.join(sorted(store))}")
    return store[name]["outputs"]


def note(name: str) -> str:
    """Return the one line the browser shows instead of running the cell called ``name``."""
    return (
        f"[zero-install edition] This cell needs {NEEDS[name]}. Below is what it showed "
        f"in the full edition ({FULL_EDITION_URL}):"
    )


def show_stored(name: str) -> None:
    """Print the cell's one line, then show its stored outputs as the full edition did."""
    from IPython.display import display

    outputs = stored_outputs(name)  # first, so an unknown name says so before anything prints
    print(note(name), flush=True)
    for output in outputs:
        if output["output_type"] == "stream":
            stream = sys.stderr if output["name"] == "stderr" else sys.stdout
            print("".join(output["text"]), end="", file=stream, flush=True)
        elif output["output_type"] in ("display_data", "execute_result"):
            data = {k: "".join(v) if isinstance(v, list) else v for k, v in output["data"].items()}
            display(data, raw=True)


def full_edition(line: str, cell: str) -> None:
    """The ``%%full_edition NAME`` cell magic: run the cell here, or show its stored result."""
    name = line.strip()
    if name not in NEEDS:
        print(f"%%full_edition needs one of: {', '.join(NEEDS)} (got {name!r})")
        return
    if in_browser():
        show_stored(name)
        return
    from IPython import get_ipython

    get_ipython().run_cell(cell, store_history=False)


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%full_edition`` (``%load_ext lessonkit.edition``)."""
    ipython.register_magic_function(full_edition, magic_kind="cell", magic_name="full_edition")
