"""The course's own controls (lessonkit.lab.controls): named, validated like ipywidgets' own."""

from __future__ import annotations

import pytest
import traitlets

from lessonkit.lab import binding
from lessonkit.lab.controls import NumberBox, Slider


def test_a_slider_keeps_its_value_inside_its_range():
    slider = Slider(5, 0, 10, description="n")
    slider.value = 50
    assert slider.value == 10
    slider.value = -3
    assert slider.value == 0


def test_a_smaller_max_moves_the_value_down_as_an_ipywidgets_slider_does():
    slider = Slider(8, 0, 10, description="n")
    slider.max = 5
    assert slider.value == 5
    slider.min = 3
    assert slider.value == 5
    slider.value = 3
    slider.min = 4
    assert slider.value == 4


def test_a_slider_refuses_a_max_below_its_min_with_a_clear_message():
    with pytest.raises(ValueError, match="min <= max"):
        Slider(0, 10, 5, description="n")
    slider = Slider(5, 2, 10, description="n")
    with pytest.raises(traitlets.TraitError, match="must not be below min"):
        slider.max = 1


def test_the_value_given_at_creation_is_kept_when_it_fits_and_clamped_when_not():
    assert Slider(400, 0, 10**9, 1, description="t").value == 400
    assert Slider(70, 0, 10, description="n").value == 10
    assert NumberBox(10.0, 0, 1000, description="$").value == 10.0


def test_the_description_and_unit_reach_the_page_for_the_label_and_the_spoken_value():
    slider = Slider(3, 0, 9, description="drop after", unit="bytes", play_interval_ms=100)
    state = slider.get_state()
    assert state["description"] == "drop after" and state["unit"] == "bytes"
    assert state["kind"] == "slider" and state["play_interval_ms"] == 100


def test_bind_drives_the_courses_slider_as_it_drives_a_stock_one():
    slider = Slider(1, 0, 10, description="n")
    box = binding.readout("lk-x")
    binding.bind({"n": slider}, lambda n: {"double": n * 2}, {"double": box})
    slider.value = 4
    assert ">8<" in box.value
