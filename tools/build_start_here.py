"""Build notebooks/00_start_here.ipynb (source of truth for the course map cells).

Run: .venv/bin/python tools/build_start_here.py && make-execute the notebook.
"""

from pathlib import Path

import nbformat as nbf

md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell

cells = [
    md(
        """# Token streaming: start here

How does a chatbot's answer reach your screen word by word while the model is still writing it?
This course answers that with code you can run, poke and break, all on your own machine:
no API key, no internet once it is installed.

You will follow one running example the whole way through. A support chatbot is asked
**"When will my order arrive?"** and answers **"Your order ships on Monday."**
We trace those tokens from the model, through HTTP and Server-Sent Events (SSE),
across a network that cuts bytes wherever it likes, into the text on screen.

*This notebook: about 5 minutes.*"""
    ),
    md(
        """## The course map

The written lesson this course is built on is a 23-minute read; here you run, poke and break
what it describes, so it takes longer. Minutes are honest estimates (reading at 200 words a
minute, plus time at each explorer and for writing each exercise). Each lesson has a **core**
of about 15 minutes and optional **Going deeper** parts, clearly marked, that you may skip.

| # | Notebook | What you learn | Minutes (core + deeper) |
|---|---|---|---|
| 00 | `00_start_here` (this one) | how the course works; check that widgets render | 5 |
| 01 | `01_why_streaming` | prefill and decode, time to first token (TTFT) vs total time, the 300 + 500 x 40 = 20,300 ms example, stopping early, timeouts, rendering sooner; the **timeline explorer**. Deeper: a real stream cancelled and measured | 16 + 5 |
| 02 | `02_sse_on_the_wire` | one long HTTP response, chunked transfer encoding, the SSE event format, deltas, `[DONE]` vs named events; the **wire inspector**, the **walkthrough**. Deeper: HTTP/2 and HTTP/3 frames, the standard's corner rules, `curl -N` | 14 + 3 |
| 03 | `03_reading_the_stream` | the client loop, arrivals vs events, UTF-8 split inside a character, testing by cutting, `EventSource` vs `fetch` in your browser; the **arrival stepper** and **UTF-8 explorer**. Deeper: three classic bugs cut everywhere, an `EventSource` from open to closed (the **life-cycle panel**), what `EventSource` cannot do | 16 + 9 |
| 04 | `04_practice_cuts_and_drops` | the lesson's practice: any cut gives the same text, a dropped connection gives a partial answer; the **drop explorer**; three predict-then-run experiments. Deeper: resume with `Last-Event-ID` | 16 + 3 |
| 05 | `05_streaming_in_the_real_world` | where streaming is used, the five common mistakes shown live, SSE vs WebSockets, when not to stream. Deeper: a buffering proxy measured, the WebSocket handshake counted | 16 + 3 |

| Exercise | In `exercises/` | What you write | Minutes | Points |
|---|---|---|---|---|
| 1 | `ex1_response_times` | `response_times`: the timing model | 5 | 10 |
| 2 | `ex2_read_stream` | `read_stream`: a reader that survives any cut, heartbeats, split characters and drops | 12 | 30 |
| 3 | `ex3_now_change_it` | predictions for the lesson's three "now change it" experiments | 8 | 15 |
| 4 | `ex4_read_anthropic` | `read_anthropic`: named events, complete only after `message_stop` | 9 | 20 |
| 5 | `ex5_resume` | resume a dropped stream from the local server with `Last-Event-ID` | 9 | 15 |
| 6 | `ex6_parse_sse` | *stretch:* `parse_sse`, a full WHATWG event-stream parser | 23 | 30 |

Two ways through:

* **Core path**: 00, the core of 01 to 05, and exercises 1-3: about 108 minutes. Read the
  lessons in order and do each exercise when its lesson's *What's next* points to it.
* **Full path**: everything, every *Going deeper* part and exercises 4-6 too: about 167
  minutes."""
    ),
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

```bash
make test                                   # every test: unit, notebooks, browser
pytest --nbval notebooks solutions           # the lessons and solutions, outputs compared
lessonkit grade submissions/ --out grades.csv --feedback feedback/
```

`lessonkit grade` runs each submitted notebook in a fresh process with a time limit, grades the
exercise functions by name (moved, deleted or extra cells do not matter), adds hidden checks and
writes one CSV row and one feedback file per learner. Stored outputs are never trusted."""
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
see *Troubleshooting* in the README (usually: open the course with `make lab`, so that
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

for number, cell in enumerate(cells):
    cell.id = f"start-here-{number}"  # stable ids: rebuilding changes nothing that did not change
nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3 (ipykernel)",
    "language": "python",
}
nb.metadata["language_info"] = {"name": "python"}
path = Path(__file__).resolve().parents[1] / "notebooks" / "00_start_here.ipynb"
nbf.write(nb, path)
print("wrote", path)
