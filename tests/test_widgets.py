"""The one binding helper behind every explorer, and the explorers' text twins."""

from __future__ import annotations

import ipywidgets

from lessonkit.lab import views, widgets


def test_bind_shows_the_readouts_of_the_controls_values_at_once():
    slider = ipywidgets.IntSlider(3, 0, 10)
    out = ipywidgets.HTML()
    widgets.bind({"n": slider}, lambda n: {"double": n * 2}, {"double": out})
    assert ">6<" in out.value


def test_bind_escapes_text_and_keeps_html_as_html():
    text, markup = ipywidgets.HTML(), ipywidgets.HTML()
    widgets.bind(
        {"n": ipywidgets.IntSlider(1)},
        lambda n: {"text": "<b>", "markup": views.Html("<b>x</b>")},
        {"text": text, "markup": markup},
    )
    assert "&lt;b&gt;" in text.value and markup.value == "<b>x</b>"


def test_bind_writes_only_the_outputs_whose_value_changed():
    slider = ipywidgets.IntSlider(1, 0, 10)
    fixed, moving = ipywidgets.HTML(), ipywidgets.HTML()
    writes = {"fixed": 0, "moving": 0}
    fixed.observe(lambda _: writes.__setitem__("fixed", writes["fixed"] + 1), "value")
    moving.observe(lambda _: writes.__setitem__("moving", writes["moving"] + 1), "value")
    widgets.bind(
        {"n": slider}, lambda n: {"fixed": "same", "moving": n}, {"fixed": fixed, "moving": moving}
    )
    for n in (2, 3, 4):
        slider.value = n
    assert writes == {"fixed": 1, "moving": 4}


def test_bind_sets_a_trait_and_goes_round_again_when_that_moves_a_control():
    limit = ipywidgets.IntSlider(10, 1, 10)
    value = ipywidgets.IntSlider(8, 0, 10)
    seen = ipywidgets.HTML()
    calls = []

    def readouts(limit, value):
        calls.append((limit, value))
        return {"max": limit, "seen": f"value {value}"}

    widgets.bind({"limit": limit, "value": value}, readouts, {"max": (value, "max"), "seen": seen})
    limit.value = 5  # value.max drops to 5, which clamps value from 8 to 5
    assert value.value == 5 and "value 5" in seen.value
    assert calls[-1] == (5, 5)


def test_an_explorer_shows_its_text_twin_where_no_widget_can_run():
    box = widgets.timeline_explorer()
    bundle = box._repr_mimebundle_()
    assert bundle["text/plain"] == "[timeline explorer: run this cell to open it]"
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert repr(box) == bundle["text/plain"]


def test_every_explorer_has_a_text_twin_not_a_raw_widget_repr():
    explorers = [
        widgets.decode_loop_player(),
        widgets.timeline_explorer(),
        widgets.cancel_explorer(),
        widgets.wire_inspector(),
        widgets.walkthrough_stepper(),
        widgets.arrival_stepper(),
        widgets.utf8_explorer(),
        widgets.drop_explorer(),
        widgets.flicker_demo(),
    ]
    for box in explorers:
        text = box._repr_mimebundle_()["text/plain"]
        assert "run this cell" in text and "children=" not in text


def _find(box, css_class):
    stack = [box]
    while stack:
        widget = stack.pop()
        if css_class in getattr(widget, "_dom_classes", ()):
            return widget
        stack.extend(getattr(widget, "children", ()))
    raise AssertionError(css_class)


def test_walkthrough_buttons_are_disabled_at_the_ends():
    box = widgets.walkthrough_stepper()
    back, forward = _find(box, "lk-walk-back"), _find(box, "lk-walk-next")
    assert back.disabled and not forward.disabled
    _find(box, "lk-walk-step").value = 5
    assert forward.disabled and not back.disabled
