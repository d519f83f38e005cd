"""The course's own controls: a slider and a number box that name themselves to a screen reader.

Stock ipywidgets 8 gives a slider's handle no accessible name and its Play buttons no
text, and has no trait to add either. These are anywidgets the course draws itself
(controls.js), the same everywhere an explorer needs them:

    Slider(400, 0, 3000, 10, description="t (ms)", unit="ms", play_interval_ms=100)
        a native <input type="range"> labelled by its description (Tab to it, then the
        arrow keys, Home, End, Page Up and Page Down), a number box beside it for typing
        a value (Enter), and with play_interval_ms a Play/Pause button (Space or Enter)
        that steps the value in the page and starts from the beginning at the end.
    NumberBox(10.0, 0, 1000, description="$ per M output tokens")
        a labelled number box.

A typed number outside the range is moved into it, and the control says so next to
itself (a status line a screen reader announces) instead of clamping in silence; a
word that is not a number is refused the same way. ``value`` is a trait like any
widget's, validated here as ipywidgets validates its own (a smaller ``max`` moves the
value down), so ``binding.bind`` drives these exactly as it drives stock widgets.
Colours are JupyterLab's theme variables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

_ESM = Path(__file__).with_name("controls.js")
_CSS = """
.lk-control { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 8px;
  margin: 2px 1.5em 2px 0; color: var(--jp-ui-font-color1);
  font-family: var(--jp-ui-font-family); font-size: var(--jp-ui-font-size1); }
.lk-control label { white-space: nowrap; }
.lk-control input, .lk-control button { min-height: 24px; box-sizing: border-box; }
.lk-control input[type="range"] { accent-color: var(--jp-brand-color1); width: 16em; height: 24px;
  margin: 0; }
.lk-control input[type="number"] { width: 6.5em; color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color1); border: 1px solid var(--jp-border-color1);
  border-radius: 2px; padding: 1px 3px; font: inherit; }
.lk-control button { color: var(--jp-ui-font-color1); background: var(--jp-layout-color2);
  border: 1px solid var(--jp-border-color1); border-radius: 3px; min-width: 2.4em;
  padding: 1px 6px; font: inherit; cursor: pointer; }
.lk-control :focus-visible { outline: 2px solid var(--jp-brand-color1); outline-offset: 1px; }
.lk-control-message { flex-basis: 100%; font-style: italic; color: var(--jp-ui-font-color1); }
.lk-control-message:empty { display: none; }
"""


class _Control(anywidget.AnyWidget):
    """What both controls share: their script and style, a description and a unit."""

    _esm = _ESM
    _css = _CSS
    kind = traitlets.Unicode("").tag(sync=True)
    description = traitlets.Unicode("").tag(sync=True)  # the label and the accessible name
    unit = traitlets.Unicode("").tag(sync=True)  # read after the value: "400 ms"

    def _clamped(self, value: Any) -> Any:
        return min(max(value, self.min), self.max)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict) -> Any:
        return self._clamped(proposal["value"])

    @traitlets.validate("max")
    def _validate_max(self, proposal: dict) -> Any:
        new = proposal["value"]
        if new < self.min:
            raise traitlets.TraitError(f"max ({new}) must not be below min ({self.min})")
        if self.value > new:
            self.value = new
        return new

    @traitlets.validate("min")
    def _validate_min(self, proposal: dict) -> Any:
        new = proposal["value"]
        if new > self.max:
            raise traitlets.TraitError(f"min ({new}) must not be above max ({self.max})")
        if self.value < new:
            self.value = new
        return new


class Slider(_Control):
    """A labelled integer slider with a number box, and a Play button when play_interval_ms > 0."""

    kind = traitlets.Unicode("slider").tag(sync=True)
    value = traitlets.Int(0).tag(sync=True)
    min = traitlets.Int(0).tag(sync=True)
    max = traitlets.Int(100).tag(sync=True)
    step = traitlets.Int(1).tag(sync=True)
    play_interval_ms = traitlets.Int(0).tag(sync=True)  # 0: no Play button

    def __init__(
        self,
        value: int = 0,
        min: int = 0,  # noqa: A002 - the names ipywidgets' sliders use
        max: int = 100,  # noqa: A002
        step: int = 1,
        *,
        description: str = "",
        unit: str = "",
        play_interval_ms: int = 0,
        **kwargs: Any,
    ) -> None:
        if max < min:
            raise ValueError(f"a slider needs min <= max, got min={min} and max={max}")
        super().__init__(
            min=min,
            max=max,
            step=step,
            description=description,
            unit=unit,
            play_interval_ms=play_interval_ms,
            **kwargs,
        )
        self.value = value


class NumberBox(_Control):
    """A labelled box for a number between min and max (a price, a rate)."""

    kind = traitlets.Unicode("number").tag(sync=True)
    value = traitlets.Float(0.0).tag(sync=True)
    min = traitlets.Float(0.0).tag(sync=True)
    max = traitlets.Float(100.0).tag(sync=True)
    step = traitlets.Float(1.0).tag(sync=True)

    def __init__(
        self,
        value: float = 0.0,
        min: float = 0.0,  # noqa: A002
        max: float = 100.0,  # noqa: A002
        step: float = 1.0,
        *,
        description: str = "",
        unit: str = "",
        **kwargs: Any,
    ) -> None:
        if max < min:
            raise ValueError(f"a number box needs min <= max, got min={min} and max={max}")
        super().__init__(min=min, max=max, step=step, description=description, unit=unit, **kwargs)
        self.value = value
