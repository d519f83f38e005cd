"""Drive the course's own controls (lessonkit.lab.controls) in the page, as a learner does.

A course slider is a <label>, a native <input type="range"> (keyboard: arrows, Home,
End, Page Up/Down), a number box to type a value into (Enter) and, when it plays, a
Play/Pause button. These helpers take the control's locator (its CSS class, e.g.
``out.locator(".lk-t-ms")``).
"""

from __future__ import annotations

from typing import Any


def type_value(control: Any, value: float) -> None:
    """Type `value` into the control's number box and press Enter."""
    box = control.locator("input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def press_key(control: Any, key: str, times: int = 1) -> None:
    """Focus the slider's range input and press `key` (ArrowRight, Home, End...) `times` times."""
    handle = control.locator("input[type=range]")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def shown_value(control: Any) -> float:
    """Return the value the slider shows."""
    return float(control.locator("input[type=range]").input_value())


def play_button(control: Any) -> Any:
    """Return the control's Play/Pause button."""
    return control.locator("button.lk-control-play")


def message(control: Any) -> Any:
    """Return the control's status line (what it says about a typed value)."""
    return control.locator(".lk-control-message")
