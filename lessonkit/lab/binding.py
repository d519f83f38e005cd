"""The one binding helper behind every explorer, and the boxes that give widgets a twin.

    controls = {"n_bytes": slider}                      the learner's knobs, by name
    def readouts(n_bytes): return {"screen": ...}       pure: lesson04.drop_readouts etc.
    bind(controls, readouts, {"screen": readout})       redraw what changed, on every move

``bind`` calls the readouts function with the controls' values, by name, and
writes each value it returns into the output of the same name: a text readout,
an HTML view (a ``views.Html`` value), or a trait of another widget such as a
slider's ``max``. An output whose value did not change is not written, so a slider
tick redraws only what moved (in the spirit of mpl-interactions).

``Twinned`` / ``Explorer``: where no widget can run (a notebook opened before its
cells ran, nbconvert, a PDF) the page shows the box's twin, a "Run this cell to open
..." note with the starting state as text, instead of a raw widget repr.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets

from lessonkit.lab import views

# An output is a widget (its value is set) or a (widget, trait name) pair.
Output = widgets.Widget | tuple[widgets.Widget, str]


class Twinned(widgets.VBox):
    """A box of widgets with a twin: what a page without a running kernel shows instead.

    The twin is a headline ("Run this cell to open the timeline explorer."), a line
    saying what the widget lets you do, and optionally the widget's starting state as
    text. It is the box's text/plain and text/html: JupyterLab shows it for a notebook
    that has not run (its stored widget views are not trusted), nbval compares it, and
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
        super().__init__(list(children))
        self.add_class(css_class)
        self.headline, self.what, self.twin_state = headline, what, text

    @property
    def text_twin(self) -> str:
        """Return what a page without a running kernel shows in place of the widget (text)."""
        lines = [f"▶ {self.headline}"]
        if self.what:
            lines.append(f"  {self.what}")
        if self.twin_state:
            lines += ["", self.twin_state]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text_twin

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text_twin  # ipywidgets would cut the repr at 110 characters
        bundle["text/html"] = views.twin_html(self.headline, self.what, self.twin_state)
        return bundle


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
    """Show readouts(**control values) in `outputs` now and after every control change.

    Returns the update function. Keys of the readouts that name no output are
    ignored. If writing an output moves a control (a smaller ``max`` clamps a
    slider), the readouts are computed once more with the new values.
    """
    shown: dict[str, Any] = {}
    state = {"busy": False, "again": False}

    def update(_change: Any = None) -> None:
        if state["busy"]:  # a control moved because we wrote an output: go round once more
            state["again"] = True
            return
        state["busy"] = True
        try:
            for _ in range(3):
                state["again"] = False
                values = readouts(**{name: c.value for name, c in controls.items()})
                for name, value in values.items():
                    if name in outputs and shown.get(name, _UNSET) != value:
                        shown[name] = value
                        write(outputs[name], value)
                if not state["again"]:
                    break
        finally:
            state["busy"] = False

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return update


_UNSET = object()


def write(output: Output, value: Any) -> None:
    """Put `value` into one output: a trait, escaped text or raw HTML in a readout, a value."""
    if isinstance(output, tuple):
        widget, trait = output
        setattr(widget, trait, value)
    elif isinstance(output, widgets.HTML):
        output.value = value if isinstance(value, views.Html) else monospace(str(value))
    else:
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
    """Return `control` with a CSS class and its whole description shown."""
    control.add_class(css_class)
    if hasattr(control, "style") and hasattr(control.style, "description_width"):
        control.style.description_width = "initial"  # show "per token ms" in full
    return control


def played(slider: widgets.IntSlider, interval_ms: int) -> widgets.HBox:
    """Return [Play | slider], the Play widget linked to the slider in the kernel.

    A Play widget only ticks in a browser; the animation itself is the slider's callback.
    """
    play = widgets.Play(
        value=slider.value, min=slider.min, max=slider.max, step=slider.step, interval=interval_ms
    )
    play.add_class("lk-play")
    widgets.link((play, "value"), (slider, "value"))
    widgets.link((play, "max"), (slider, "max"))
    widgets.link((play, "step"), (slider, "step"))
    return widgets.HBox([play, slider])
