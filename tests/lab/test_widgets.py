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


def _limited(limit, value):
    shown = min(value, limit)
    return {"max": limit, "value": shown, "seen": f"value {shown}"}


def test_a_control_moved_by_binds_own_write_is_not_taken_as_the_learners_move():
    limit = ipywidgets.IntSlider(10, 1, 10)
    value = ipywidgets.IntSlider(8, 0, 10)
    seen = ipywidgets.HTML()
    calls = []

    def readouts(limit, value):
        calls.append((limit, value))
        return _limited(limit, value)

    outputs = {"max": (value, "max"), "value": (value, "value"), "seen": seen}
    widgets.bind({"limit": limit, "value": value}, readouts, outputs)
    limit.value = 5  # value.max drops to 5, which clamps value from 8 to 5
    assert value.value == 5 and "value 5" in seen.value
    assert calls == [(10, 8), (5, 8)], "one pass per change, with the value the learner set"


def test_a_control_that_had_to_move_comes_back_when_there_is_room_again():
    limit = ipywidgets.IntSlider(10, 1, 10)
    value = ipywidgets.IntSlider(8, 0, 10)
    outputs = {"max": (value, "max"), "value": (value, "value")}
    widgets.bind({"limit": limit, "value": value}, _limited, outputs)
    limit.value = 3
    assert value.value == 3
    limit.value = 9
    assert value.value == 8
    value.value = 2  # now the learner moves it: that is the new value to keep
    limit.value = 10
    assert value.value == 2


def test_bind_calls_the_readouts_once_per_change_however_many_outputs_move():
    sliders = [ipywidgets.IntSlider(5, 0, 10) for _ in range(3)]
    calls = []

    def readouts(a, b, c):
        calls.append((a, b, c))
        return {"a_max": 10 - b, "b_max": 10 - c}

    outputs = {"a_max": (sliders[0], "max"), "b_max": (sliders[1], "max")}
    widgets.bind(dict(zip("abc", sliders, strict=True)), readouts, outputs)
    sliders[2].value = 9  # b.max drops to 1 and clamps b: still one call
    assert len(calls) == 2 and calls[-1] == (5, 5, 9)


def test_an_explorer_shows_its_twin_where_no_widget_can_run():
    box = widgets.timeline_explorer()
    bundle = box._repr_mimebundle_()
    assert bundle["text/plain"].startswith("▶ Run this cell to open the timeline explorer.")
    assert "<b>▶ Run this cell to open the timeline explorer.</b>" in bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert repr(box) == bundle["text/plain"]


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_a_twinned_box_shows_two_outputs_the_twin_then_the_live_widget_alone(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    published = []
    publish = shell.display_pub.publish
    shell.display_pub.publish = lambda data, **kwargs: published.append(data)
    try:
        widgets.drop_explorer()._ipython_display_()
    finally:
        shell.display_pub.publish = publish
    twin, live = published
    assert twin["text/plain"].startswith("▶ Run this cell to open the drop explorer.")
    assert "lk-twin" in twin["text/html"] and WIDGET_VIEW not in twin
    assert set(live) == {WIDGET_VIEW}, "the widget's own output carries no text of its own"


def test_the_twins_style_hides_whichever_of_the_two_outputs_is_not_live():
    html = views.twin_html("Run this cell to open the x.", "what")
    assert f"<style>{views.TWIN_CSS}</style>" in html
    hide_twin, hide_widget = views.TWIN_CSS.split("}")[:2]
    live = ".lk-twinned:not(.jupyter-widgets-disconnected):not(.lk-stale)"
    assert ":has(+ .jp-OutputArea-child " + live in hide_twin and "display: none" in hide_twin
    assert ":not(:has(" + live in hide_widget and "display: none" in hide_widget
    assert views.STALE_NOTE in html


def test_every_twinned_box_carries_a_lifeline_that_watches_its_kernel():
    from lessonkit.lab.binding import Lifeline

    for make in EXPLORERS:
        box = make()
        assert isinstance(box.children[-1], Lifeline) and "lk-twinned" in box._dom_classes


def test_an_explorers_twin_shows_the_state_it_opens_on_as_the_lesson_function_prints_it():
    from lessonkit.lab import lesson01

    text = widgets.timeline_explorer(t_ms=400)._repr_mimebundle_()["text/plain"]
    assert text.endswith(lesson01.timeline_text(lesson01.timeline_view(400)))


EXPLORERS = [
    widgets.decode_loop_player,
    widgets.timeline_explorer,
    widgets.cancel_explorer,
    widgets.wire_inspector,
    widgets.walkthrough_stepper,
    widgets.arrival_stepper,
    widgets.utf8_explorer,
    widgets.drop_explorer,
    widgets.flicker_demo,
]
RAW_REPRS = ("children=", "Box(", "Slider(", "Dropdown(", "Label(", "Layout(")


def test_every_widget_the_lessons_show_has_a_twin_not_a_raw_widget_repr():
    from lessonkit.lab import envcheck

    picker = widgets.prediction_picker(["a", "b"])
    shown = [make() for make in EXPLORERS]
    shown += [picker, widgets.reveal_after(picker, lambda: print("ran"), answer="a")]
    shown.append(envcheck.widget_check())
    for box in shown:
        bundle = box._repr_mimebundle_()
        for mime in ("text/plain", "text/html"):
            assert "Run this cell" in bundle[mime], (box, mime)
            assert not any(raw in bundle[mime] for raw in RAW_REPRS), bundle[mime]


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


def test_the_arrival_stepper_shows_one_cutting_mode_at_a_time():
    box = widgets.arrival_stepper()
    mode, size = _find(box, "lk-cut-mode"), _find(box, "lk-chunk-size")
    positions = _find(box, "lk-cut-positions")
    assert mode.value == "typed offsets"
    assert size.layout.display == "none" and positions.layout.display in ("", None)
    mode.value = "even chunks"
    assert positions.layout.display == "none" and size.layout.display in ("", None)
    assert "even chunks of 16 bytes" in _find(box, "lk-stepper-cuts").value


def test_the_chunk_slider_changes_the_cuts_in_even_chunk_mode():
    box = widgets.arrival_stepper()
    _find(box, "lk-cut-mode").value = "even chunks"
    _find(box, "lk-chunk-size").value = 7
    assert "even chunks of 7 bytes" in _find(box, "lk-stepper-cuts").value


def test_a_bad_typed_cut_gets_a_message_instead_of_a_silent_fallback():
    box = widgets.arrival_stepper()
    positions, cuts = _find(box, "lk-cut-positions"), _find(box, "lk-stepper-cuts")
    for typed, message in (
        ("abc", "&#x27;abc&#x27; is not a whole number"),
        ("99999", "99999 is past the last cut"),
        ("0", "0 would cut before the first byte"),
    ):
        positions.value = typed
        assert message in cuts.value and "chunks" not in cuts.value


def test_the_utf8_explorer_keeps_the_cut_when_the_text_changes():
    box = widgets.utf8_explorer("café 🙂", cut_at_byte=4)
    text, cut = _find(box, "lk-utf8-text"), _find(box, "lk-utf8-cut-at")
    text.value = "naïve"
    assert cut.value == 4 and cut.max == len("naïve".encode())
    text.value = ""  # the learner clears the box before typing anew
    assert cut.value == 0
    text.value = "über café"
    assert cut.value == 4, "the cut comes back to where the learner left it"
    cut.value = 7
    text.value = "ab"
    assert cut.value == 2
    text.value = "abcdefghij"
    assert cut.value == 7


def test_the_utf8_cut_slider_is_the_courses_own_named_slider():
    cut = _find(widgets.utf8_explorer(), "lk-utf8-cut-at")
    assert cut.description == "cut after byte" and cut.unit == "bytes"


def test_every_slider_of_every_explorer_is_the_courses_own_with_a_name():
    import ipywidgets

    from lessonkit.lab.controls import Slider

    for make in EXPLORERS:
        parts = list(_descendants(make()))
        assert not [p for p in parts if isinstance(p, (ipywidgets.IntSlider, ipywidgets.Play))]
        sliders = [p for p in parts if isinstance(p, Slider)]
        assert sliders and all(s.description for s in sliders), make.__name__


def _descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)


def test_a_reveal_shows_the_run_only_after_a_prediction_is_picked():
    picker = widgets.prediction_picker(["right", "wrong"])
    box = widgets.reveal_after(picker, lambda: print("the run printed this"), answer="right")
    readout = _find(box, "lk-reveal")
    assert "the run printed this" not in readout.value and "Pick a prediction" in readout.value
    picker.value = "wrong"
    assert "the run printed this" in readout.value and "you predicted" in readout.value
    picker.value = widgets.SKIP_PREDICTION
    assert "the run printed this" in readout.value and "no prediction recorded" in readout.value


def test_a_reveal_runs_at_once_so_an_error_shows_in_its_cell():
    import pytest

    picker = widgets.prediction_picker(["x"])
    with pytest.raises(ZeroDivisionError):
        widgets.reveal_after(picker, lambda: 1 / 0, answer="x")
