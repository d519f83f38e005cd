"""What the page reports back from lesson 03's browser demo: ``PanelReport``, ``BrowserReport``.

The page POSTs what each of its two panels received (lessonkit.lab.browser_demo); the
demo's server reads each body with ``panel_report`` and keeps the latest report per panel
and demo in a ``ReportBook``, which ``browser_report()`` reads. Plain data and a lock: no
widget, no socket.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

PANELS = ("eventsource", "fetch")
PANEL_NAMES = {"eventsource": "EventSource", "fetch": "fetch"}


@dataclass(frozen=True)
class PanelReport:
    """What one panel of the page received in one run, as the page reported it."""

    kind: str  # "eventsource" or "fetch"
    run: int  # 1 for the first run of a view, +1 for each "Stream again"
    status: str  # "streaming", "done" or "error: ..."
    text: str
    token_times_ms: tuple[float, ...]  # when each token arrived, ms after the request
    reads: int  # body reads (fetch only)
    url: str  # the URL the page used

    @property
    def finished(self) -> bool:
        """True once the run ended, well or not."""
        return self.status != "streaming"

    def summary(self) -> str:
        """Return one line: status, tokens, reads and arrival times, then the text."""
        times = self.token_times_ms
        parts = [self.status, f"{len(times)} tokens"]
        if self.kind == "fetch":
            parts.append(f"in {self.reads} reads")
        if times:
            parts.append(f"arriving {times[0]:.0f} ms to {times[-1]:.0f} ms after the request")
        return f"{', '.join(parts)}: {self.text!r}"


# In the browser kernel the page's reports wait behind the running cell (see
# BrowserStreamDemo.browser_report): what the report says until they arrive.
WAITING_IN_PAGE = (
    "Waiting for your page's report. In this edition the kernel runs in your browser tab"
    " and reads the page's messages only between cells, so none reached it while this"
    " cell ran. This output fills itself in when they arrive (under Run All: once the"
    " last cell has run)."
)


@dataclass(frozen=True)
class BrowserReport:
    """What the page reported for each panel (empty when no browser showed the demo)."""

    panels: dict[str, PanelReport]
    outcome: str  # "finished", "no browser", "still streaming" or "waiting for the page"
    waited_s: float
    in_page: bool = False  # the zero-install edition: widget messages carried the requests

    def __str__(self) -> str:
        if not self.panels:
            if self.in_page:
                return WAITING_IN_PAGE
            return (
                "Nothing to report: no browser showed the demo above (nothing reported back"
                f" within {self.waited_s:.0f} s). Run these cells in JupyterLab to see what"
                " your own page receives."
            )
        some = next(iter(self.panels.values()))
        if self.in_page:
            through = "widget messages between your page and this kernel: no network here"
        else:
            through = f"{urlsplit(some.url).path.split('/v1/')[0]}/"
        lines = [f"What your browser received (run {some.run}, through {through}):"]
        for kind, report in self.panels.items():
            lines.append(f"  {PANEL_NAMES[kind]:<11}: {report.summary()}")
        if self.outcome == "still streaming":
            lines.append(f"(still streaming after {self.waited_s:.0f} s)")
        if self.outcome == "waiting for the page":
            lines.append("(not finished yet: this output fills itself in as the page reports)")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, _cycle: bool) -> None:
        printer.text(str(self))  # a cell ending in browser_report() shows the text


def panel_report(body: Any) -> tuple[str, PanelReport]:
    """Return (demo id, PanelReport) from a report's JSON body; ValueError naming the field."""
    if not isinstance(body, dict):
        raise ValueError("the report must be a JSON object")

    def field(name: str, kind: type | tuple[type, ...]) -> Any:
        value = body.get(name)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"field {name!r} is missing or has the wrong type")
        return value

    demo, kind = field("demo", str), field("kind", str)
    if kind not in PANELS:
        raise ValueError(f"field 'kind' must be one of {', '.join(PANELS)}, got {kind!r}")
    times = field("times_ms", list)
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times):
        raise ValueError("field 'times_ms' must be a list of numbers")
    run, reads = field("run", int), field("reads", int)
    if run < 1:
        raise ValueError(f"field 'run' must be 1 or more, got {run}")
    if reads < 0:
        raise ValueError(f"field 'reads' must be 0 or more, got {reads}")
    report = PanelReport(
        kind, run, field("status", str), field("text", str), tuple(times), reads, field("url", str)
    )
    return demo, report


class ReportBook:
    """The latest report of each panel of each demo: written by the server, read by cells."""

    MAX_DEMOS = 1000  # the oldest demo's reports go first

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self._reports: dict[str, dict[str, PanelReport]] = {}

    def register(self, demo: str) -> None:
        """Note a demo made for this server (the page checks before it streams)."""
        with self.changed:
            self._reports.setdefault(demo, {})
            while len(self._reports) > self.MAX_DEMOS:
                del self._reports[next(iter(self._reports))]

    def knows(self, demo: str) -> bool:
        """True if `demo` was made for this server."""
        with self.changed:
            return demo in self._reports

    def record(self, demo: str, report: PanelReport) -> None:
        """Keep `report` unless the panel already reported a later run; unknown demos raise."""
        with self.changed:
            if demo not in self._reports:
                raise LookupError(f"no demo {demo!r} was made for this server")
            panels = self._reports[demo]
            known = panels.get(report.kind)
            if known is None or report.run >= known.run:
                panels[report.kind] = report
            self.changed.notify_all()

    def latest(self, demo: str) -> dict[str, PanelReport]:
        """Return a copy of the latest report per panel of `demo`."""
        with self.changed:
            return dict(self._reports.get(demo, {}))
