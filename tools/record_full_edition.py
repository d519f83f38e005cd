#!/usr/bin/env python3
"""Record what the full edition shows for each ``%%full_edition NAME`` cell, for the browser.

    .venv/bin/python tools/record_full_edition.py

Reads the committed, executed notebooks in notebooks/ (the full edition's outputs) and
writes the outputs of every cell that starts with ``%%full_edition NAME`` to
lessonkit/data/full_edition.json, where lessonkit.edition shows them in the browser
kernel. Run it after re-executing a notebook that has such a cell;
tests/course/test_edition.py fails while the two differ.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "lessonkit" / "data" / "full_edition.json"
MAGIC = "%%full_edition"


def recorded(notebooks: list[Path]) -> dict[str, dict]:
    """Return {name: {"notebook", "outputs"}} of every full-edition-only cell in ``notebooks``."""
    found: dict[str, dict] = {}
    for path in notebooks:
        for cell in json.loads(path.read_text("utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or not source.startswith(MAGIC):
                continue
            name = source.splitlines()[0].removeprefix(MAGIC).strip()
            if name in found:
                raise SystemExit(f"{path.name}: two cells are called {name!r}")
            outputs = [{k: v for k, v in o.items() if k != "execution_count"} for o in cell["outputs"]]
            found[name] = {"notebook": f"notebooks/{path.name}", "outputs": outputs}
    return found


def main() -> None:
    store = recorded(sorted((REPO / "notebooks").glob("*.ipynb")))
    STORE.write_text(json.dumps(store, indent=1, ensure_ascii=False, sort_keys=True) + "\n", "utf-8")
    print(f"wrote {STORE.relative_to(REPO)}: {', '.join(sorted(store))}")


if __name__ == "__main__":
    main()
