"""Build notebooks/00_start_here.ipynb: its cells are written here, its course map comes
from the lesson tables of README.md (their one source, between two marker comments).

Run: .venv/bin/python tools/build_start_here.py, then execute the notebook
(.venv/bin/python tools/execute_notebooks.py notebooks/00_start_here.ipynb).
"""

import re
from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
TABLES = re.compile(r"<!-- The lesson tables.*?-->\n(.*?)<!-- End of the lesson tables\. -->", re.S)

md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell


def lesson_tables(readme: str) -> str:
    """Return the README's lesson tables (markdown), with links made relative to notebooks/."""
    found = TABLES.search(readme)
    if not found:
        raise SystemExit("README.md has no lesson tables between their two marker comments")
    tables = found.group(1).strip()
    tables = tables.replace("](notebooks/", "](").replace("](exercises/", "](../exercises/")
    return tables


COURSE_MAP_INTRO = """## The course map

The written lesson this course is built on is a 23-minute read; here you run, poke and break
what it describes, so it takes longer. Minutes are honest estimates (reading at 200 words a
minute, plus time at each explorer and for writing each exercise). Each lesson has a **core**
of about 15 minutes and optional **Going deeper** parts, clearly marked, that you may skip."""


def course_map(readme: str) -> str:
    """Return the markdown of lesson 00's course map cell, built from the README's text."""
    return f"{COURSE_MAP_INTRO}\n\n{lesson_tables(readme)}"


INTRO = md(
    """# Token streaming: start here

How does a chatbot's answer reach your screen word by word while the model is still writing it?
This course answers that with code you can run, poke and break, all on your own machine:
no API key, no internet once it is installed.

You will follow one running example the whole way through. A support chatbot is asked
**"When will my order arrive?"** and answers **"Your order ships on Monday."**
We trace those tokens from the model, through HTTP and Server-Sent Events (SSE),
across a network that cuts bytes wherever it likes, into the text on screen.

*This notebook: about 7 minutes.*"""
)

# The cells after the course map.
AFTER_THE_MAP = [
    md(
        """### Your progress, and handing in

Each check you run in an exercise is remembered in your course folder (how many public checks
passed and when, never your code). Run the cell below whenever you come back: it shows every
exercise as passed, failing or not started, and what comes next. `progress(clear=True)`
forgets it all."""
    ),
    code(
        "from lessonkit.learner import progress, submit\n\nprogress()",
        metadata={"tags": ["nbval-ignore-output"]},  # your progress, not the course's
    ),
    md(
        """When you are done (or must stop), hand in: the button below saves your open notebooks,
runs each exercise's public checks, and writes one zip of your six exercise notebooks, with a
receipt. The end of each exercise has the same button; in a terminal, `lessonkit submit`."""
    ),
    code("submit()", metadata={"tags": ["nbval-ignore-output"]}),
    md(
        """## How the exercises work

Each exercise notebook has a cell for your code, hints you can open when you are stuck,
and a **check cell** that runs `lessonkit.grading.check(...)` on your function.

* Until you replace the stub, the check says *not attempted yet*.
* When something fails, the feedback names the rule that broke and shows the smallest input
  that breaks it (for a stream reader: the exact list of chunks), with what was expected and
  what your function returned.
* It reports *public checks k/m*: your instructor's grading runs more checks than these,
  so a function that only fits the examples will not get full marks.
* A function that never returns is stopped after a few seconds; your kernel stays usable.

The solutions live in `solutions/`. Try first: the course is built so that the checks teach."""
    ),
    md(
        """## For instructors

Validating the lessons, grading a class and running the course for a class are in the
[teaching guide](../docs/teaching.md) and [running it for a class](../docs/running-a-class.md)."""
    ),
    md(
        """## What you will see

Before a notebook has run, each explorer shows a dashed box instead of its controls:
**▶ Run this cell to open the timeline explorer**, say, with what it lets you do and its
starting state as text. That is normal: a notebook that has not run cannot show live widgets.
Run the cell (or the whole notebook: *Run > Run All Cells*) and the box turns into sliders,
buttons and a live picture that follows every move. The same box comes back whenever the
widgets cannot answer: when you reopen a saved notebook later, or after the kernel restarted
or was stopped (on a shared server, an idle kernel is stopped after a while). Run the cell
again and the explorer is back.

Every control has a name a screen reader reads, and works from the keyboard: Tab to it, then
the arrow keys (or Home and End) move a slider, Enter or Space press a button. Each figure
comes with its numbers in words.

## Check your set-up

The next cell reports the versions this kernel uses and names its Python environment: the
course's `.venv` on your own machine, or the environment of the JupyterHub or Binder you
use (both are fine). The one after shows a live widget:
drag the slider and the text under it should change at once. If, after running it, you still
see only its dashed box, *"Error displaying widget"*, or a line of text like `VBox(children=...)`,
see [Troubleshooting](../docs/learning.md#troubleshooting) in the learning guide (usually: open the course with `make lab`, so that
JupyterLab and the kernel come from the same environment; on a hub, tell your instructor)."""
    ),
    code(
        """from lessonkit.lab.envcheck import report

print(report())""",
        metadata={"tags": ["nbval-ignore-output"]},  # versions differ from machine to machine
    ),
    code(
        """from lessonkit.lab.envcheck import widget_check

widget_check()"""
    ),
    md(
        """If the text follows the slider, you are ready.

**Next:** open [01 · Why streaming](01_why_streaming.ipynb)."""
    ),
]


def start_here(readme: str) -> nbf.NotebookNode:
    """Return lesson 00 (without outputs), its course map built from readme, the README's text."""
    cells = [INTRO, md(course_map(readme)), *AFTER_THE_MAP]
    # Stable ids: rebuilding changes nothing that did not change.
    for number, cell in enumerate(cells):
        cell.id = f"start-here-{number}"
    nb = nbf.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


if __name__ == "__main__":
    nbf.write(start_here(README.read_text(encoding="utf-8")), NOTEBOOK)
    print("wrote", NOTEBOOK)
