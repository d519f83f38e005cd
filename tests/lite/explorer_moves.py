"""Each explorer a notebook shows, its first control, one learner's move on it, and the view.

Which explorers a notebook shows is read from the notebook itself: every call, in its code
cells, of a function of lessonkit.lab.widgets that returns an Explorer, with the arguments
the cell passes. Each explorer is also built here (headless, with those arguments), so its
CSS class and its first control come from the explorer, not from a list kept by hand:
the first control is the first one in the box's order that a learner can use (shown, not
disabled; the walkthrough's "back" is disabled where it opens, so its step slider).

MOVES says, for each explorer function, what a learner does with that control (a slider
step by keyboard, a toggle choice, typing in a box) and what the explorer shows before and
after: the texts of its readouts, from the lesson module's pure readouts function (as
tests/browser/test_browser_explorers.py compares them), and which controls show or are
enabled where the readouts say so. A new explorer function without an entry fails
test_notebooks_in_lite.py; so does a notebook page showing an explorer its cells do not
build (see ``explorer_boxes``).
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets
import nbformat
from coursecontrols import press_key
from IPython.core.inputtransformer2 import TransformerManager
from labdriver import html_text, normalized

from lessonkit.core import practice, render
from lessonkit.lab import controls, lesson01, lesson02, lesson03, lesson04, lesson05, views
from lessonkit.lab import widgets as lesson_widgets
from lessonkit.lab.binding import Explorer

# Names a lesson passes to an explorer, as the lesson defines them (lesson 04 prints
# `wire == practice.practice_wire()`: True). The opening view, checked in the page, would
# differ if the lesson's value did.
NOTEBOOK_VALUES = {"wire": practice.practice_wire()}


def explorer_functions() -> dict[str, Callable[..., Explorer]]:
    """Return every function of lessonkit.lab.widgets that returns an Explorer, by name."""
    return {
        name: value
        for name, value in vars(lesson_widgets).items()
        if inspect.isfunction(value) and value.__module__ == lesson_widgets.__name__
        and value.__annotations__.get("return") in ("Explorer", Explorer)
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------
# What the page shows, and one move


@dataclass(frozen=True)
class View:
    """What an explorer shows: readout texts and control states, each by its CSS class."""

    texts: Mapping[str, str]  # the text of the readout (its .widget-html-content)
    states: Mapping[str, str] = field(default_factory=dict)  # visible, hidden, enabled, disabled


@dataclass(frozen=True)
class Move:
    """One learner's move on an explorer's first control, and the view before and after it."""

    what: str  # in words, for a failure message
    act: Callable[[Any], None]  # does it, given the explorer's box in the page
    before: View
    after: View


def texts(readouts: Mapping[str, Any], classes: Mapping[str, str]) -> dict[str, str]:
    """Return {CSS class: the text the page shows} for the readouts named in `classes`.

    bind writes a views.Html value as it is and any other value as escaped text, so the
    page shows the text of the one and the other itself (whitespace collapsed either way).
    """
    shown = {}
    for name, css_class in classes.items():
        value = readouts[name]
        shown[css_class] = (
            html_text(value) if isinstance(value, views.Html) else normalized(str(value))
        )
    return shown


def css_class(widget: ipywidgets.DOMWidget) -> str:
    """Return a widget's own CSS class: its first lk- class that other widgets do not share."""
    shared = ("lk-twinned", "lk-readout")
    return next(c for c in widget._dom_classes if c.startswith("lk-") and c not in shared)


def first_control(box: ipywidgets.Widget) -> ipywidgets.DOMWidget | None:
    """Return the first control in box's order that a learner can use: shown and enabled."""
    if getattr(box.layout, "display", None) == "none" or getattr(box, "disabled", False):
        return None
    if isinstance(box, ipywidgets.Box):
        return next(filter(None, map(first_control, box.children)), None)
    usable = (controls.Slider, controls.NumberBox, ipywidgets.Button, ipywidgets.ValueWidget)
    readouts = (ipywidgets.HTML, ipywidgets.HTMLMath, ipywidgets.Label)
    return box if isinstance(box, usable) and not isinstance(box, readouts) else None


def step_key(slider: controls.Slider) -> tuple[str, int]:
    """Return the key a learner presses to step the slider once, and the value it moves to."""
    if slider.value < slider.max:
        return "ArrowRight", min(slider.value + slider.step, slider.max)
    return "ArrowLeft", max(slider.value - slider.step, slider.min)


def next_option(toggle: ipywidgets.ToggleButtons) -> str:
    """Return the option after the one chosen (the first after the last)."""
    options = list(toggle.options)
    return options[(options.index(toggle.value) + 1) % len(options)]


def pressing(control: str, key: str) -> Callable[[Any], None]:
    return lambda box: press_key(box.locator(f".{control}"), key)


def choosing(control: str, option: str) -> Callable[[Any], None]:
    return lambda box: box.locator(f".{control} button", has_text=option).click()


def typing(control: str, text: str) -> Callable[[Any], None]:
    def act(box: Any) -> None:
        entry = box.locator(f".{control} input")
        entry.fill(text)
        entry.press("Enter")

    return act


def slider_step(name: str, slider: controls.Slider, view: Callable[[int], View]) -> Move:
    """Return one key press on `slider` (called "the `name` slider"), seen through `view(value)`."""
    key, value = step_key(slider)
    return Move(f"{key} on the {name} slider", pressing(css_class(slider), key),
                view(slider.value), view(value))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Each explorer's first move: (the explorer's arguments, its first control) -> Move


def _decode_loop(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    steps = lesson01.decode_steps(args["prompt"], max_tokens=args["max_tokens"])

    def view(i: int) -> View:
        return View(texts(lesson01.decode_readouts(i, steps=steps), {"view": "lk-decode-view"}))

    return slider_step("pass", slider, view)


TIMELINE = {name: f"lk-timeline-{name}" for name in ("t", "ttft", "blocking", "total", "visible")}
TIMELINE["screens"] = "lk-timeline-screens"


def _timeline(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    def view(prefill_ms: int) -> View:
        return View(
            texts(lesson01.timeline_readouts(**{**args, "prefill_ms": prefill_ms}), TIMELINE)
        )

    return slider_step("prefill", slider, view)


CANCEL = {name: f"lk-cancel-{name}" for name in ("seen", "generated", "saved", "time", "cost")}


def _cancel(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    options = {name: value for name, value in args.items() if name != "cancel_at_ms"}

    def view(cancel_at_ms: int) -> View:
        return View(texts(lesson01.cancel_readouts(cancel_at_ms, **options), CANCEL))

    return slider_step("stop-at", slider, view)


WIRE = {"view": "lk-wire-view", "meaning": "lk-wire-meaning", "screen": "lk-wire-screen"}


def _wire(args: Mapping[str, Any], toggle: ipywidgets.ToggleButtons) -> Move:
    dialect = next_option(toggle)

    def view(chosen: str) -> View:
        return View(texts(lesson02.wire_readouts(chosen, args["index"]), WIRE))

    return Move(
        f"the dialect {dialect!r}",
        choosing(css_class(toggle), dialect),
        view(toggle.value),
        view(dialect),
    )


WALK = {"view": "lk-walk-view", "screen": "lk-walk-screen"}


def _walkthrough(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    steps = lesson02.walkthrough_steps()

    def view(shown: int) -> View:
        readouts = lesson02.walkthrough_readouts(shown, steps=steps)
        enabled = {True: "disabled", False: "enabled"}
        buttons = {"lk-walk-back": enabled[readouts["first"]]}
        buttons["lk-walk-next"] = enabled[readouts["last"]]
        return View(texts(readouts, WALK), buttons)

    return slider_step("step", slider, view)


STEPPER = {name: f"lk-stepper-{name}" for name in ("cuts", "arrival", "events", "buffer", "screen")}


def _arrival(args: Mapping[str, Any], toggle: ipywidgets.ToggleButtons) -> Move:
    wire, positions_text = args["wire"], args["positions_text"]
    if wire is None:  # as the explorer opens without one: the worked example, cut as it is cut
        wire, cuts = lesson03.worked_example()
        positions_text = ", ".join(map(str, cuts)) if positions_text is None else positions_text
    mode = next_option(toggle)

    def view(chosen: str) -> View:
        readouts = lesson03.stepper_readouts(
            wire, chunk_bytes=args["chunk_bytes"], positions_text=positions_text or "", mode=chosen
        )
        shown = {"": "visible", "none": "hidden"}
        states = {"lk-chunk-size": shown[readouts["size_display"]]}
        states["lk-cut-positions"] = shown[readouts["positions_display"]]
        return View(texts(readouts, STEPPER), states)

    return Move(
        f"the cutting mode {mode!r}",
        choosing(css_class(toggle), mode),
        view(toggle.value),
        view(mode),
    )


UTF8 = {name: f"lk-utf8-{name.replace('_', '-')}" for name in
        ("bytes", "cut", "per_chunk", "replace", "incremental")}  # fmt: skip


def _utf8(args: Mapping[str, Any], box: ipywidgets.Text) -> Move:
    typed = "naïve" if box.value != "naïve" else "café"

    def view(text: str) -> View:
        return View(texts(lesson03.utf8_readouts(text, args["cut_at_byte"]), UTF8))

    return Move(
        f"typing {typed!r} into the text box",
        typing(css_class(box), typed),
        view(box.value),
        view(typed),
    )


DROP = {"position": "lk-drop-position-readout", "screen": "lk-drop-screen"}
DROP |= {"complete": "lk-drop-complete", "held": "lk-drop-held"}


def _drop(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    wire = practice.practice_wire() if args["wire"] is None else args["wire"]

    def view(n: int) -> View:
        return View(texts(lesson04.drop_readouts(wire, n), DROP))

    return slider_step("drop", slider, view)


FLICKER = {"naive": "lk-flicker-naive", "stable": "lk-flicker-stable", "count": "lk-flicker-count"}


def _flicker(args: Mapping[str, Any], slider: controls.Slider) -> Move:
    tokens = args["tokens"]
    frames = render.flicker_frames(
        render.split_tokens(render.FLICKER_ANSWER) if tokens is None else tokens
    )

    def view(n: int) -> View:
        return View(texts(lesson05.flicker_readouts(n, frames=frames), FLICKER))

    return slider_step("tokens", slider, view)


MOVES: dict[str, Callable[[Mapping[str, Any], Any], Move]] = {
    "decode_loop_player": _decode_loop,
    "timeline_explorer": _timeline,
    "cancel_explorer": _cancel,
    "wire_inspector": _wire,
    "walkthrough_stepper": _walkthrough,
    "arrival_stepper": _arrival,
    "utf8_explorer": _utf8,
    "drop_explorer": _drop,
    "flicker_demo": _flicker,
}


# ---------------------------------------------------------------------------------------------
# The explorers of one notebook


@dataclass(frozen=True)
class ShownExplorer:
    """One explorer a notebook's cell builds: where, how, and the first move on it."""

    cell: int  # the cell's index in the notebook (markdown cells counted, as the page does)
    call: str  # the call as the cell writes it
    function: str
    css_class: str  # of the explorer's box
    control: str  # CSS class of its first control
    move: Move


def _arguments(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def explorer_calls(source: str) -> list[ast.Call]:
    """Return the calls of explorer functions in a cell's source, in the order they appear."""
    tree = ast.parse(TransformerManager().transform_cell(source))  # magics made Python
    names = explorer_functions()
    calls = [
        node for node in ast.walk(tree) if isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) in names or getattr(node.func, "id", None) in names)
    ]  # fmt: skip
    return sorted(calls, key=lambda node: (node.lineno, node.col_offset))


def shown_explorer(cell: int, call: ast.Call, where: str) -> ShownExplorer:
    """Build the explorer a call makes, headless, with the call's arguments; return its move."""
    name = getattr(call.func, "attr", None) or call.func.id
    collect = ast.Call(ast.Name("_arguments", ast.Load()), call.args, call.keywords)
    expression = ast.fix_missing_locations(ast.Expression(collect))
    try:
        args, kwargs = eval(
            compile(expression, where, "eval"), {"_arguments": _arguments, **NOTEBOOK_VALUES}
        )
    except NameError as missing:
        raise AssertionError(
            f"{where}: {ast.unparse(call)} passes a name this test does not know ({missing}):"
            " add it to NOTEBOOK_VALUES"
        ) from None
    function = explorer_functions()[name]
    explorer = function(*args, **kwargs)
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    control = first_control(explorer)
    assert control is not None, f"{where}: {ast.unparse(call)} has no control a learner can use"
    return ShownExplorer(
        cell=cell,
        call=ast.unparse(call),
        function=name,
        css_class=css_class(explorer),
        control=css_class(control),
        move=MOVES[name](bound.arguments, control),
    )


@functools.cache
def explorers_in(notebook: Path) -> tuple[ShownExplorer, ...]:
    """Return every explorer the notebook's code cells build, in the order the page shows them."""
    found = []
    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        if cell.cell_type == "code":
            for call in explorer_calls(cell.source):
                found.append(shown_explorer(index, call, f"{notebook.name} cell {index}"))
    return tuple(found)


@functools.cache
def every_explorer_class() -> frozenset[str]:
    """Return the CSS class of every explorer's box (each built headless, as it opens)."""
    return frozenset(css_class(function()) for function in explorer_functions().values())


# In the open notebook: [cell index, box class] for every box with one of the given classes.
EXPLORER_BOXES_JS = """
(classes) => {
  const cells = Array.from(
    document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell'));
  const found = [];
  cells.forEach((cell, index) => {
    for (const box of cell.querySelectorAll('.lk-twinned')) {
      const name = classes.find((c) => box.classList.contains(c));
      if (name) found.push([index, name]);
    }
  });
  return found;
}
"""


def explorer_boxes(page: Any) -> list[tuple[int, str]]:
    """Return (cell index, box class) of every live explorer the open notebook shows."""
    found = page.evaluate(EXPLORER_BOXES_JS, sorted(every_explorer_class()))
    return [(cell, name) for cell, name in found]
