"""The one binding helper behind every explorer, and the boxes that give widgets a twin.

    controls = {"n_bytes": slider}                      the learner's knobs, by name
    def readouts(n_bytes): return {"screen": ...}       pure: lesson04.drop_readouts etc.
    bind(controls, readouts, {"screen": readout})       redraw what changed, on every move

``bind`` calls the readouts function with the values the learner set, by name, and
writes each value it returns into the output of the same name: a text readout, an
HTML view (a ``views.Html`` value), or a trait of a widget such as a slider's ``max``
or its ``value``. An output whose value did not change is not written, so a slider
tick redraws only what moved (in the spirit of mpl-interactions).

``Twinned`` / ``Explorer``: where no live widget can be shown (a notebook opened before
its cells ran, a saved notebook reopened without its kernel, a kernel that restarted or
stopped, nbconvert, a PDF) the page shows the box's twin, a "Run this cell to open ..."
note with the state as text, instead of a raw widget repr or an error.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets

from lessonkit.lab import views

# An output is a widget (its value is set) or a (widget, trait name) pair.
Output = widgets.Widget | tuple[widgets.Widget, str]


class Lifeline(anywidget.AnyWidget):
    """An invisible part of every twinned box: marks the box stale once its kernel is gone.

    ipywidgets marks a view disconnected when the kernel restarts, not when the kernel is
    shut down (culled on a hub, stopped by hand) or replaced; lifeline.js watches for
    those too. A stale box gives way to its twin (views.TWIN_CSS).
    """

    _esm = Path(__file__).with_name("lifeline.js")
    _css = ".lk-lifeline { display: none; }"


class Twinned(widgets.VBox):
    """A box of widgets with a twin: what a page shows while the widgets are not live.

    The twin is a headline ("Run this cell to open the timeline explorer."), a line
    saying what the widget lets you do, and optionally the widget's state as text. A
    cell that shows the box gets two outputs: the twin (text/html and text/plain), then
    the live widget. The page shows the widget while it is live and the twin otherwise
    (views.TWIN_CSS): before the cell runs, in a saved notebook reopened without its
    kernel, after the kernel restarted or stopped. nbval compares the twin, and
    nbconvert or a PDF print it.
    """

    def __init__(
        self,
        children: Iterable[widgets.Widget],
        *,
        css_class: str,
        headline: str,
        what: str = "",
        text: str = "",
    ) -> None:
        super().__init__([*children, Lifeline()])
        self.add_class("lk-twinned")
        self.add_class(css_class)
        self.headline, self.what, self.twin_state = headline, what, text

    @property
    def text_twin(self) -> str:
        """Return what a page without a live widget shows in its place (text)."""
        lines = [f"▶ {self.headline}"]
        if self.what:
            lines.append(f"  {self.what}")
        if self.twin_state:
            lines += ["", self.twin_state]
        return "\n".join(lines)

    def twin_bundle(self) -> dict[str, str]:
        """Return the twin as a display bundle: its text/html and text/plain."""
        return {
            "text/html": views.twin_html(self.headline, self.what, self.twin_state),
            "text/plain": self.text_twin,
        }

    def __repr__(self) -> str:
        return self.text_twin

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs)
        return {**bundle, **self.twin_bundle()}  # ipywidgets would cut the repr at 110 characters

    def _ipython_display_(self) -> None:
        """Show two outputs: the twin, then the live widget alone (views.TWIN_CSS picks one)."""
        from IPython.display import display

        display(self.twin_bundle(), raw=True)
        live = super()._repr_mimebundle_()
        live.pop("text/plain", None)  # the twin above is the text of this cell
        display(live, raw=True)


class Explorer(Twinned):
    """The box around one explorer: its twin says "Run this cell to open the <title>."."""

    def __init__(
        self,
        children: Iterable[widgets.Widget],
        *,
        css_class: str,
        title: str,
        what: str = "",
        text: str = "",
    ) -> None:
        super().__init__(
            children,
            css_class=css_class,
            headline=f"Run this cell to open the {title}.",
            what=what,
            text=text,
        )
        self.title = title


def bind(
    controls: Mapping[str, widgets.ValueWidget],
    readouts: Callable[..., Mapping[str, Any]],
    outputs: Mapping[str, Output],
) -> Callable[[], None]:
    """Show readouts(**what the learner set) in `outputs`, now and after every control change.

    Returns the function that shows them again. Keys of the readouts that name no
    output are ignored; outputs are written in the readouts' order (a slider's ``max``
    before its ``value``). One pass per change: when writing an output moves a control
    (a smaller ``max`` clamps a slider), that move is bind's own, not the learner's, so
    the readouts keep the value the learner set. They clamp it themselves, and may
    return the value the control should show, as an output naming the control's
    ``value`` trait: a control that had to move comes back when there is room again.
    """
    asked = {name: control.value for name, control in controls.items()}
    writing = False

    def show() -> None:
        nonlocal writing
        values = readouts(**asked)
        writing = True
        try:
            for name, value in values.items():
                if name in outputs:
                    write(outputs[name], value)
        finally:
            writing = False

    def changed(name: str, change: Mapping[str, Any]) -> None:
        if writing:  # bind wrote an output, which moved this control: not the learner's move
            return
        asked[name] = change["new"]
        show()

    for name, control in controls.items():
        control.observe(functools.partial(changed, name), names="value")
    show()
    return show


def write(output: Output, value: Any) -> None:
    """Put `value` into one output unless it is there already: a trait, text, HTML or a value."""
    if isinstance(output, tuple):
        widget, trait = output
        if getattr(widget, trait) != value:
            setattr(widget, trait, value)
        return
    if isinstance(output, widgets.HTML):
        value = value if isinstance(value, views.Html) else monospace(str(value))
    if output.value != value:
        output.value = value


def monospace(text: str) -> str:
    """Return `text` as escaped HTML that keeps its spaces and line breaks, in monospace."""
    return f'<span style="white-space: pre-wrap; font-family: monospace">{html.escape(text)}</span>'


def readout(css_class: str) -> widgets.HTML:
    """Return an empty readout: an HTML widget with a stable CSS class for browser tests."""
    readout = widgets.HTML(layout=widgets.Layout(margin="0 1.5em 0 0"))  # room between readouts
    readout.add_class("lk-readout")
    readout.add_class(css_class)
    return readout


def readouts_named(prefix: str, names: Iterable[str]) -> dict[str, widgets.HTML]:
    """Return one readout per name, with CSS classes prefix-name (underscores as dashes)."""
    return {name: readout(f"{prefix}-{name.replace('_', '-')}") for name in names}


def figure(css_class: str) -> widgets.HTML:
    """Return an empty HTML widget for a live SVG figure (lessonkit.lab.svg)."""
    figure = widgets.HTML()
    figure.add_class(css_class)
    return figure


def styled(control: widgets.Widget, css_class: str) -> widgets.Widget:
    """Return `control` with a CSS class and, for a stock widget, its whole description shown."""
    control.add_class(css_class)
    style = getattr(control, "style", None)
    if style is not None and hasattr(style, "description_width"):
        style.description_width = "initial"  # show "cut after bytes" in full
    return control
