"""``lessonkit assign solutions exercises``: make the learners' notebooks from the solutions.

The solution notebooks are the one source. In their code cells the learner's
part sits between nbgrader-style markers::

    def read_stream(chunks):
        ### BEGIN SOLUTION
        ...the reference code...
        ### END SOLUTION

and becomes a stub that raises, so the check reports "not attempted yet"::

    def read_stream(chunks):
        raise NotImplementedError("read_stream: not written yet -- replace this line with your code")

Text after ``### BEGIN SOLUTION`` replaces that message. Where raising would
stop the notebook (a dict of answers at the top level), the region may end
with a ``### STUB`` line followed by commented-out lines: those lines,
uncommented, are the stub. In markdown cells, ``<!-- BEGIN SOLUTION -->`` ...
``<!-- END SOLUTION -->`` becomes "*Write your answer here.*".

Outputs and execution counts are removed; everything else is kept, so the same
solutions always give byte-identical exercises (``--check`` compares them).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
STUB = "### STUB"
END = "### END SOLUTION"
MD_BEGIN = "<!-- BEGIN SOLUTION -->"
MD_END = "<!-- END SOLUTION -->"
MD_ANSWER = "*Write your answer here.*"

_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")


class MarkerError(ValueError):
    """The solution markers of a cell do not pair up."""


def _enclosing_name(lines: list[str], indent: int) -> str:
    """Return the name of the function the region sits in (or "exercise")."""
    for line in reversed(lines):
        match = _DEF.match(line)
        if match and len(line) - len(line.lstrip()) < indent:
            return match.group(1)
    return "exercise"


def _uncomment(line: str, indent: str) -> str:
    body = line[len(indent) :] if line.startswith(indent) else line.lstrip()
    if body.startswith("# "):
        body = body[2:]
    elif body.startswith("#"):
        body = body[1:]
    return (indent + body).rstrip() if body.strip() else ""


def stub_code(source: str) -> str:
    """Return a code cell's source with each solution region replaced by its stub."""
    out: list[str] = []
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(END) or stripped == STUB:
            raise MarkerError(f"{stripped!r} without {BEGIN!r} before it (line {i + 1})")
        if not stripped.startswith(BEGIN):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        message = stripped[len(BEGIN) :].strip(" :-")
        stub: list[str] | None = None
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(END):
            inner = lines[i].strip()
            if inner.startswith(BEGIN):
                raise MarkerError(f"{BEGIN!r} inside another solution region (line {i + 1})")
            if inner == STUB:
                stub = []
            elif stub is not None:
                stub.append(_uncomment(lines[i], indent))
            i += 1
        if i == len(lines):
            raise MarkerError(f"{BEGIN!r} without {END!r} after it")
        i += 1  # skip END
        if stub is not None:
            out += stub
        else:
            name = _enclosing_name(out, len(indent))
            text = message or "not written yet -- replace this line with your code"
            literal = '"' + f"{name}: {text}".replace("\\", "\\\\").replace('"', '\\"') + '"'
            out.append(f"{indent}raise NotImplementedError({literal})")
    return "\n".join(out)


def _stub_markdown(source: str) -> str:
    pattern = re.compile(re.escape(MD_BEGIN) + r".*?" + re.escape(MD_END), re.DOTALL)
    return pattern.sub(MD_ANSWER, source)


def exercise_notebook(solution: nbformat.NotebookNode, name: str = "") -> nbformat.NotebookNode:
    """Return the learner's notebook made from one solution notebook (a new object)."""
    notebook = nbformat.from_dict(solution)
    for index, cell in enumerate(notebook.cells):
        try:
            if cell.cell_type == "code":
                cell.source = stub_code(cell.source)
                cell.outputs = []
                cell.execution_count = None
                cell.metadata.pop("execution", None)
            elif cell.cell_type == "markdown":
                cell.source = _stub_markdown(cell.source)
        except MarkerError as exc:
            raise MarkerError(f"{name} cell {index + 1}: {exc}") from None
    notebook.metadata.pop("widgets", None)
    return notebook


def _render(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def assign(source: Path, target: Path, *, check: bool = False) -> list[Path]:
    """Write (or with check=True only compare) target/X.ipynb for each source/X.ipynb.

    Returns the exercise notebooks that were out of date (rewritten unless check).
    """
    stale: list[Path] = []
    solutions = sorted(source.glob("*.ipynb"))
    if not solutions:
        raise FileNotFoundError(f"no notebooks in {source}")
    for solution_path in solutions:
        solution = nbformat.read(solution_path, as_version=4)
        text = _render(exercise_notebook(solution, solution_path.name))
        out = target / solution_path.name
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current == text:
            continue
        stale.append(out)
        if not check:
            target.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
    expected = {p.name for p in solutions}
    stale += [p for p in sorted(target.glob("*.ipynb")) if p.name not in expected]
    return stale


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit assign`."""
    parser.add_argument(
        "source", nargs="?", default="solutions", help="solution notebooks (default solutions)"
    )
    parser.add_argument(
        "target", nargs="?", default="exercises", help="where the exercises go (default exercises)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the exercises are out of date",
    )


def main(args: argparse.Namespace) -> int:
    """Generate (or check) the exercise notebooks; return the exit code."""
    source, target = Path(args.source), Path(args.target)
    try:
        stale = assign(source, target, check=args.check)
    except (MarkerError, FileNotFoundError) as exc:
        print(f"lessonkit assign: {exc}", file=sys.stderr)
        return 2
    orphans = [p for p in stale if not (source / p.name).exists()]
    for path in orphans:
        print(f"{path} has no solution in {source}; delete it or add the solution", file=sys.stderr)
    changed = [p for p in stale if p not in orphans]
    if args.check:
        for path in changed:
            print(
                f"{path} is out of date: run `lessonkit assign {source} {target}`", file=sys.stderr
            )
        return 1 if stale else 0
    for path in changed:
        print(f"wrote {path}")
    if not changed:
        print(f"{target}/ is up to date")
    return 1 if orphans else 0
