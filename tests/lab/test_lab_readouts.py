"""One readouts function per explorer, in its lesson module: what bind shows, called headless.

Each function takes the controls' values by name and returns every output of its
explorer, plus "text", the same state in words (the explorer's twin). The browser
tests compare the page with these same functions.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from lessonkit.core import network, practice, render, timeline
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, lesson05, views

WIRE = practice.practice_wire()
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_the_decode_readouts_show_the_pass_the_slider_selects_and_clamp_past_the_end():
    steps = lesson01.decode_steps()
    assert "writes ' ships'" in lesson01.decode_readouts(2, steps=steps)["text"]
    assert lesson01.decode_readouts(99, steps=steps)["text"] == lesson01.decode_step_text(steps[-1])


def test_the_cancel_readouts_follow_the_price_and_draw_the_bar():
    readouts = lesson01.cancel_readouts(2000, 25.0)
    assert "$25 per million" in readouts["cost"] and readouts["plot"].startswith("<svg")
    assert readouts["text"] == lesson01.cancel_text(
        lesson01.cancel_view(2000, usd_per_million_tokens=25)
    )


def test_the_wire_readouts_keep_the_write_inside_the_chosen_dialect():
    rows = lesson02.dialect_rows()
    readouts = lesson02.wire_readouts("lesson", 99, rows=rows)
    assert readouts["upto"] == readouts["last"] == len(rows["lesson"]) - 1
    assert "(complete)" in readouts["screen"] and isinstance(readouts["view"], views.Html)
    assert readouts == lesson02.wire_readouts("lesson", 99)


def test_the_walkthrough_readouts_turn_the_buttons_off_at_the_ends():
    steps = lesson02.walkthrough_steps()
    first, last = (lesson02.walkthrough_readouts(n, steps=steps) for n in (1, 5))
    assert (first["first"], first["last"], last["first"], last["last"]) == (
        True,
        False,
        False,
        True,
    )
    assert last["text"] == lesson02.walk_step_text(steps[-1])


def test_the_stepper_readouts_show_one_cutting_control_at_a_time():
    wire, _ = lesson03.worked_example()
    typed = lesson03.stepper_readouts(
        wire, chunk_bytes=16, positions_text="19, 54", mode="typed offsets"
    )
    even = lesson03.stepper_readouts(wire, chunk_bytes=16, mode="even chunks")
    assert (typed["size_display"], typed["positions_display"]) == ("none", "")
    assert (even["size_display"], even["positions_display"]) == ("", "none")
    assert typed["arrivals"] == 3 and typed["text"].startswith(
        "typed offsets: cuts after bytes [19, 54]"
    )


def test_the_utf8_readouts_clamp_the_cut_to_a_shorter_text_and_give_its_length():
    readouts = lesson03.utf8_readouts("ab", 7)
    assert readouts["cut_max"] == 2 and readouts["cut_at_byte"] == 2
    assert readouts["text"] == lesson03.format_utf8_frame(lesson03.utf8_frame("ab", 2))


def test_the_drop_readouts_draw_the_staircase_with_the_drop_marked():
    readouts = lesson04.drop_readouts(WIRE, 40, lengths=lesson04.drop_staircase(WIRE))
    assert "drop after 40 bytes" in readouts["plot"] and readouts["screen"] == "on screen: 'Your'"
    assert readouts == lesson04.drop_readouts(WIRE, 40)


def test_the_flicker_readouts_count_each_renderers_rewrites():
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    readouts = lesson05.flicker_readouts(len(frames), frames=frames)
    naive = sum(f.naive_rewrote for f in frames)
    assert f"naive rewrote the screen {naive} times, stable 0" in readouts["count"]
    assert readouts["text"].endswith(readouts["count"])


# --- predict, then run: the answer is read off the run -----------------------------------


def _runs(**modes):
    """The practice's runs for the lesson's reader with `modes`, ended as print_runs ends them."""
    runs = {f"{size} bytes": network.cut(WIRE, size) for size in (1000, 16, 5)}
    runs["dropped after 40 bytes"] = network.cut(WIRE[:40], 16)
    ended = {}
    for name, chunks in runs.items():
        try:
            ended[name] = lesson04.outcome(*practice.practice_reader(chunks, **modes))
        except ValueError as error:
            ended[name] = type(error).__name__
    return ended


@pytest.mark.parametrize(
    ("experiment", "modes"),
    [
        (lesson04.DECODE_EACH_CHUNK, {"decode": "per-chunk"}),
        (lesson04.ONE_EVENT_PER_CHUNK, {"loop": "if"}),
        (lesson04.DROP_AT_40, {}),
    ],
    ids=["decode each chunk", "if instead of while", "drop at 40"],
)
def test_each_experiments_answer_read_off_the_run_is_one_of_its_choices(experiment, modes):
    assert experiment.answer(_runs(**modes)) in experiment.choices


def test_the_unchanged_reader_gives_the_whole_text_in_the_choices_words():
    assert _runs()["1000 bytes"] == "whole text"
    assert lesson04.outcome("Your caf\ufffd", False) == "text with a �"


def test_a_reveal_shows_nothing_of_the_run_until_a_prediction_is_picked():
    waiting = lesson04.reveal_readouts(lesson04.PREDICTION_PLACEHOLDER, printed="RUN", answer="a")
    assert "RUN" not in waiting["shown"] and "Pick a prediction" in waiting["text"]
    picked = lesson04.reveal_readouts("a", printed="RUN", answer="a")
    assert "RUN" in picked["shown"] and "your prediction matches" in picked["text"]


def test_no_lesson_notebook_writes_an_experiments_answer_in_its_code():
    notebook = json.loads((NOTEBOOKS / "04_practice_cuts_and_drops.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    for experiment, modes in (
        (lesson04.DECODE_EACH_CHUNK, {"decode": "per-chunk"}),
        (lesson04.ONE_EVENT_PER_CHUNK, {"loop": "if"}),
        (lesson04.DROP_AT_40, {}),
    ):
        answer = experiment.answer(_runs(**modes))
        outcome = answer.split(": ", 1)[1]
        assert answer not in code and f"answer={outcome!r}" not in code


# --- lesson 03's client loop prints what the library's clock prints --------------------


def test_lesson_03s_read_and_render_prints_the_same_lines_as_timeline_render_log():
    notebook = json.loads((NOTEBOOKS / "03_reading_the_stream.ipynb").read_text())
    source = next(
        "".join(c["source"])
        for c in notebook["cells"]
        if "def read_and_render" in "".join(c["source"])
    )
    namespace: dict = {"json": json}  # the notebook imported it in its first cell
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "notebook 03, the client loop", "exec"), namespace)  # noqa: S102
    lines = printed.getvalue().splitlines()
    rendered = [line for line in lines if line.startswith("[")]
    expected = timeline.render_log(
        namespace["tokens"],
        prefill_ms=namespace["PREFILL_MS"],
        per_token_ms=namespace["PER_TOKEN_MS"],
    )
    assert rendered == expected and len(rendered) == len(namespace["tokens"]) + 1
