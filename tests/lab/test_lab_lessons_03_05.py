"""Tests for the explorers of notebooks 03-05: reader steps, UTF-8 cuts, drops, buggy readers,
the stable markdown renderer, their plots, widgets and the browser demo widget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lessonkit.core import network, practice, render
from lessonkit.core.client import read_stream
from lessonkit.lab import browser_demo, lesson03, lesson04, lesson05, plots, widgets

WIRE = practice.practice_wire()


def lesson_style_wire(tokens):
    events = [": ping"] + ["data: " + json.dumps({"delta": t}, ensure_ascii=False) for t in tokens]
    events.append("data: [DONE]")
    return ("\n\n".join(events) + "\n\n").encode("utf-8")


# --- the wires -------------------------------------------------------------------------------


def test_practice_wire_is_the_lessons_bytes_with_raw_utf8():
    assert WIRE == lesson_style_wire(["Your", " café", " order", " ships", "."])
    assert "é".encode() in WIRE


def test_worked_example_cuts_give_half_an_event_then_two_events_and_da_then_the_rest():
    wire, cuts = lesson03.worked_example()
    first, second, third = network.cut_at(wire, cuts)
    assert b"\n\n" not in first
    assert second.count(b"\n\n") == 2 and second.endswith(b"da")
    assert third == b"ta: [DONE]\n\n"


# --- the reader you can watch ----------------------------------------------------------------


def test_first_arrival_completes_no_event_and_stays_in_the_buffer():
    wire, cuts = lesson03.worked_example()
    step = lesson03.arrival_steps(wire, cuts)[0]
    assert step.events == () and step.state.buffer == wire[: cuts[0]].decode()
    assert step.state.text == ""


def test_second_arrival_renders_two_tokens_and_keeps_da():
    wire, cuts = lesson03.worked_example()
    step = lesson03.arrival_steps(wire, cuts)[1]
    assert step.deltas == ("Your", " order")
    assert step.state.buffer == "da"


def test_third_arrival_marks_the_answer_complete():
    wire, cuts = lesson03.worked_example()
    last = lesson03.arrival_steps(wire, cuts)[-1]
    assert last.state.done and last.state.text == "Your order" and last.state.buffer == ""


def test_feed_reader_holds_half_a_character_in_held_bytes():
    fed = practice.feed_reader(practice.ReaderState(), "caf\u00e9".encode()[:4])
    assert fed.state.buffer == "caf" and fed.state.held_bytes == b"\xc3"


def test_lesson_reader_agrees_with_lessonkit_client_at_every_cut():
    for chunks in network.every_cut(WIRE):
        reply = read_stream(chunks, "lesson")
        assert practice.practice_reader(chunks) == (reply.text, reply.complete)


@given(seed=st.integers(0, 10_000))
def test_lesson_reader_gives_the_same_text_for_random_cuts(seed):
    chunks = network.random_cuts(WIRE, seed=seed, max_piece_bytes=9)
    assert practice.practice_reader(chunks) == ("Your café order ships.", True)


def test_unknown_decode_mode_is_a_value_error_naming_the_choices():
    with pytest.raises(ValueError, match="incremental"):
        practice.feed_reader(practice.ReaderState(), b"", decode="latin-1")


def test_unknown_loop_mode_of_the_whole_stream_reader_is_a_value_error():
    with pytest.raises(ValueError, match="'while' or 'if'"):
        practice.practice_reader([WIRE], loop="for")


# --- the classic bugs ------------------------------------------------------------------------


def test_per_chunk_decode_raises_on_the_five_byte_run_only():
    read = lesson03.BUGGY_READERS["per-chunk decode"]
    assert read(network.cut(WIRE, 1000)) == ("Your café order ships.", True)
    with pytest.raises(UnicodeDecodeError):
        read(network.cut(WIRE, 5))


def test_if_instead_of_while_shows_nothing_for_one_big_chunk():
    read = lesson03.BUGGY_READERS["if instead of while"]
    assert read(network.cut(WIRE, 1000)) == ("", False)


def test_chunk_as_event_works_when_every_event_arrives_whole():
    whole_events = [part + b"\n\n" for part in WIRE.split(b"\n\n")[:-1]]
    assert lesson03.read_chunk_as_events(whole_events) == ("Your café order ships.", True)


def test_chunk_as_event_fails_when_a_cut_lands_inside_an_event():
    read = lesson03.BUGGY_READERS["chunk = event"]
    assert lesson03.verdict(read, network.cut_at(WIRE, [20]), ("Your café order ships.", True)) == (
        "error"
    )


def test_correct_reader_is_right_at_every_cut_and_every_bug_breaks_somewhere():
    assert set(lesson03.every_cut_verdicts(lesson03.CORRECT_READER, WIRE)) == {"ok"}
    for name, reader in lesson03.BUGGY_READERS.items():
        cuts = lesson03.every_cut_verdicts(reader, WIRE)
        sizes = lesson03.chunk_size_verdicts(reader, WIRE, range(1, 61))
        assert set(cuts + sizes) != {"ok"}, name


def test_per_chunk_decode_breaks_exactly_at_the_cut_inside_e_acute():
    verdicts = lesson03.every_cut_verdicts(lesson03.BUGGY_READERS["per-chunk decode"], WIRE)
    inside = WIRE.index("é".encode()) + 1
    assert [i for i, v in enumerate(verdicts) if v != "ok"] == [inside]


def test_summarize_verdicts_counts_each_kind():
    assert lesson03.summarize_verdicts(["ok", "ok", "error"]) == "ok 2/3, error 1"


# --- practice output and predictions ---------------------------------------------------------


def test_compare_prediction_says_when_nothing_was_recorded():
    verdict = lesson04.compare_prediction(lesson04.PREDICTION_PLACEHOLDER, "x")
    assert verdict.startswith("no prediction recorded")


def test_compare_prediction_confirms_a_matching_guess():
    assert lesson04.compare_prediction(" 'Your' ", "'Your'").startswith("your prediction matches")


# --- UTF-8 -----------------------------------------------------------------------------------


def test_e_acute_is_two_bytes_and_an_emoji_four():
    table = lesson03.utf8_bytes_table("é🙂a")
    assert [n for _, n, _ in table] == [2, 4, 1]


def test_a_cut_inside_a_character_breaks_per_chunk_decoding_but_not_the_incremental_decoder():
    frame = lesson03.utf8_frame("café", 4)
    assert frame.inside_character
    assert frame.per_chunk_strict[0].startswith("UnicodeDecodeError")
    assert frame.per_chunk_replace == ("caf\ufffd", "\ufffd")
    assert frame.incremental == ("caf", "é")


def test_a_cut_between_characters_decodes_the_same_three_ways():
    frame = lesson03.utf8_frame("café", 3)
    assert not frame.inside_character
    assert frame.per_chunk_strict == frame.per_chunk_replace == frame.incremental == ("caf", "é")


def test_utf8_frame_rejects_a_cut_outside_the_bytes():
    with pytest.raises(ValueError, match="0..5"):
        lesson03.utf8_frame("café", 6)


# --- drops -----------------------------------------------------------------------------------


def test_drop_after_70_bytes_shows_your_cafe_incomplete():
    frame = lesson04.drop_frame(WIRE, 70)
    assert (frame.text, frame.complete) == ("Your café", False)
    assert frame.held == 'data: {"de'


def test_drop_after_40_bytes_shows_your_incomplete():
    frame = lesson04.drop_frame(WIRE, 40)
    assert (frame.text, frame.complete) == ("Your", False)


def test_staircase_only_rises_where_an_event_ends():
    lengths = lesson04.drop_staircase(WIRE)
    event_ends = {i + 2 for i in range(len(WIRE)) if WIRE[i : i + 2] == b"\n\n"}
    rises = {i for i in range(1, len(lengths)) if lengths[i] != lengths[i - 1]}
    assert rises <= event_ends and lengths[-1] == len("Your café order ships.")


# --- stepper controls ------------------------------------------------------------------------


def test_typed_cuts_name_every_word_they_leave_out():
    typed = lesson03.read_cut_positions("54, 19 abc 0 99999 19", 66)
    assert typed.positions == (19, 54)
    assert typed.problems == (
        "'abc' is not a whole number",
        "0 would cut before the first byte",
        "99999 is past the last cut (the wire has 66 bytes)",
    )


def test_typed_offsets_with_nothing_usable_say_so_and_keep_the_wire_whole():
    wire, _ = lesson03.worked_example()
    shown = lesson03.stepper_readouts(
        wire, chunk_bytes=16, positions_text="abc", mode="typed offsets"
    )
    assert shown["arrivals"] == 1 and "none usable" in shown["cuts"]
    assert "'abc' is not a whole number" in shown["cuts"]


def test_even_chunk_mode_ignores_typed_offsets():
    wire, _ = lesson03.worked_example()
    shown = lesson03.stepper_readouts(wire, chunk_bytes=30, positions_text="19", mode="even chunks")
    assert shown["cuts"].startswith("even chunks of 30 bytes: cuts after bytes [30, 60]")


def test_parse_cut_positions_sorts_and_drops_junk_and_out_of_range_offsets():
    assert lesson03.parse_cut_positions("54, 19 x -3 19 999", 66) == (19, 54)


def test_stepper_uses_the_chunk_size_when_no_positions_are_typed():
    assert lesson03.stepper_cuts(40, chunk_bytes=16) == (16, 32)


def test_stepper_readouts_clamp_a_step_past_the_end_to_the_last_arrival():
    wire, _ = lesson03.worked_example()
    values = lesson03.stepper_readouts(wire, chunk_bytes=100, step=5)
    assert values["arrivals"] == 1 and values["step"] == 1
    assert values["screen"] == "screen: 'Your order' (complete)"


def test_drop_readouts_show_the_flag_as_text():
    assert lesson04.drop_readouts(WIRE, 150)["complete"] == "complete=True"


# --- stable markdown rendering ---------------------------------------------------------------


def screens(text: str) -> list[list[render.Span]]:
    frames = [render.stable_render(text[:i]) for i in range(1, len(text) + 1)]
    return frames + [render.stable_render(text, final=True)]


def test_naive_rendering_rewrites_the_screen_and_stable_rendering_never_does():
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    assert sum(f.naive_rewrote for f in frames) >= 3
    assert not any(f.stable_rewrote for f in frames)


def test_both_renderers_end_on_the_same_screen():
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    assert frames[-1].naive == frames[-1].stable


@given(st.text(alphabet="ab *`\n", max_size=18))
def test_stable_rendering_only_ever_extends_the_screen(text):
    shown = [render.flatten(spans) for spans in screens(text)]
    assert all(
        later[: len(earlier)] == earlier for earlier, later in zip(shown, shown[1:], strict=False)
    )


def test_open_emphasis_is_held_back_until_it_closes():
    assert render.to_text(render.stable_render("on **Mon")) == "on "
    assert render.to_text(render.stable_render("on **Mon**")) == "on <b>Mon</b>"


def test_an_open_fence_shows_as_a_code_block_minus_a_possible_closing_line():
    spans = render.stable_render("see:\n```\nx = 1\n``")
    assert spans[-1] == render.Span("codeblock", "x = 1")


def test_a_star_before_a_space_is_a_literal_and_not_held_back():
    assert render.to_text(render.stable_render("2 * 3 = 6")) == "2 * 3 = 6"


def test_final_rendering_shows_an_unclosed_fence_as_code_to_the_end():
    assert render.stable_render("```\nx", final=True) == [render.Span("codeblock", "x")]


def test_to_html_escapes_text():
    assert render.to_html([render.Span("code", "<b>")]) == "<code>&lt;b&gt;</code>"


def test_split_tokens_gives_the_text_back():
    assert "".join(render.split_tokens(render.FLICKER_ANSWER)) == render.FLICKER_ANSWER


# --- plots -----------------------------------------------------------------------------------


def test_cut_verdict_plot_has_one_row_per_reader_in_each_panel():
    rows = {name: lesson03.every_cut_verdicts(r, WIRE) for name, r in lesson03.READERS.items()}
    sizes = list(range(1, 11))
    size_rows = {
        n: lesson03.chunk_size_verdicts(r, WIRE, sizes) for n, r in lesson03.READERS.items()
    }
    fig = plots.plot_cut_verdicts(rows, size_rows, sizes)
    assert isinstance(fig, Figure)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == list(lesson03.READERS)


def test_staircase_plot_labels_its_axes():
    fig = plots.plot_drop_staircase(lesson04.drop_staircase(WIRE), mark_bytes=70)
    ax = fig.axes[0]
    assert "bytes" in ax.get_xlabel() and "characters" in ax.get_ylabel()


def test_arrival_curve_plot_draws_one_line_per_series():
    fig = plots.plot_arrival_curves({"a": [(10, 5)], "b": [(20, 5)]}, title="t")
    assert len(fig.axes[0].get_legend().get_texts()) == 2


# --- widgets: driven headless like a learner would -------------------------------------------


def readout_text(box, css_class: str) -> str:
    for child in box.children:
        if css_class in child._dom_classes:
            return child.value
    raise AssertionError(f"no readout {css_class}")


def control(box, css_class: str):
    return next(c for c in box.children if css_class in c._dom_classes)


def test_arrival_stepper_shows_the_buffer_of_the_chosen_arrival():
    box = widgets.arrival_stepper()
    assert "lk-arrival-stepper" in box._dom_classes
    control(box, "lk-arrival-step").value = 2
    assert "&#x27;da&#x27;" in readout_text(box, "lk-stepper-buffer")


def test_arrival_stepper_cuts_even_chunks_in_that_mode():
    box = widgets.arrival_stepper()
    control(box, "lk-cut-mode").value = "even chunks"
    control(box, "lk-chunk-size").value = 30
    assert "-&gt; 3 arrivals" in readout_text(box, "lk-stepper-cuts")
    assert control(box, "lk-arrival-step").max == 3


def test_utf8_explorer_updates_when_the_cut_moves():
    box = widgets.utf8_explorer("café", 4)
    assert "UnicodeDecodeError" in readout_text(box, "lk-utf8-per-chunk")
    control(box, "lk-utf8-cut-at").value = 3
    assert "UnicodeDecodeError" not in readout_text(box, "lk-utf8-per-chunk")


def test_drop_explorer_shows_the_complete_flag_at_the_end():
    box = widgets.drop_explorer()
    control(box, "lk-drop-position").value = len(WIRE)
    assert "complete=True" in readout_text(box, "lk-drop-complete")


def test_flicker_demo_counts_rewrites_for_both_renderers():
    box = widgets.flicker_demo()
    assert "lk-flicker-demo" in box._dom_classes
    assert "stable 0" in readout_text(box, "lk-flicker-count")


def test_prediction_picker_starts_on_the_placeholder():
    picker = widgets.prediction_picker(["a", "b"], css_class="lk-prediction-1")
    assert picker.value == lesson04.PREDICTION_PLACEHOLDER and not picker.picked
    assert {"lk-prediction", "lk-prediction-1"} <= set(picker.dropdown._dom_classes)
    assert picker.dropdown.options[-1] == widgets.SKIP_PREDICTION


# --- the browser demo ------------------------------------------------------------------------


def test_browser_demo_script_names_the_classes_the_browser_tests_look_for():
    script = Path(browser_demo.__file__).with_name("browser_demo.js").read_text()
    for css_class in ("lk-browser-demo-", "lk-text", "lk-status", "lk-token"):
        assert css_class in script
    assert "{ stream: true }" in script and "EventSource" in script


def test_browser_demo_description_names_both_browser_apis():
    text = browser_demo.describe("http://127.0.0.1:8000")
    assert "new EventSource" in text and "getReader" in text


def test_browser_demo_description_leaves_the_socket_name_out_by_default():
    assert "lessonkit/demo/<name>/v1/stream" in browser_demo.describe()


def test_browser_demo_repr_shows_no_memory_address_and_no_socket_name():
    text = repr(browser_demo.BrowserStreamDemo("abc123abc123"))
    assert text.startswith("BrowserStreamDemo(") and "0x" not in text and "abc123" not in text


# --- checks at the end, strict JSON ----------------------------------------------------------


def test_a_check_at_the_end_fails_after_the_answer_was_already_on_screen():
    tokens = ["Call", " 555", "-", "0142", "."]
    result = lesson05.late_check(tokens, [340, 380, 420, 460, 500], lesson05.find_phone_number)
    assert not result.passed
    assert result.streamed_failure_ms == 460 and result.checked_ms == 500
    assert result.lines[-1].endswith("on screen for 160 ms")


def test_a_clean_answer_passes_the_late_check():
    result = lesson05.late_check(["Your", " order"], [340, 380], lesson05.find_phone_number)
    assert result.passed and result.streamed_failure_ms is None


def test_late_check_needs_one_time_per_token():
    with pytest.raises(ValueError, match="one time per token"):
        lesson05.late_check(["a"], [1, 2], lesson05.find_phone_number)


def test_streamed_json_parses_only_when_complete():
    assert lesson05.json_prefix_parses(['{"a"', ": 1", "}"]) == [False, False, True]


def test_describe_rewrites_ends_with_the_rewrite_counts():
    frames = render.flicker_frames(render.split_tokens(render.FLICKER_ANSWER))
    lines = render.describe_rewrites(frames)
    assert lines[-1] == "screen rewrites over 40 tokens: naive 4, stable 0"
    assert lines[0] == "token 9 '**.': the naive screen changes what it already showed"
    assert lines[1:3] == [
        "  naive  before: …order ships on **Monday",
        "         after : …order ships on <b>Monday</b>.",
    ]


# --- the browser demo's server helpers (a real local server) --------------------------------


@pytest.mark.server
def test_wait_until_idle_returns_at_once_when_no_browser_connects():
    from lessonkit import server

    with server.running(prefill_ms=0, per_token_ms=1) as url:
        before = browser_demo.request_count(url)
        assert browser_demo.wait_until_idle(url, since_requests=before, grace_s=0.2) == (
            "no browser streams seen"
        )


@pytest.mark.server
def test_wait_until_idle_sees_a_finished_stream():
    import httpx

    from lessonkit import server

    with server.running(prefill_ms=0, per_token_ms=1) as url:
        before = browser_demo.request_count(url)
        httpx.get(url + "/v1/stream")
        assert (
            browser_demo.wait_until_idle(url, since_requests=before) == "browser streams finished"
        )


@pytest.mark.parametrize(
    ("payload", "masked", "header"),
    [(0, False, 2), (125, False, 2), (126, False, 4), (65_535, False, 4), (65_536, False, 10),
     (2, True, 6)],
)  # fmt: skip
def test_websocket_frame_headers_follow_rfc_6455(payload, masked, header):
    assert lesson05.ws_frame_header_bytes(payload, masked=masked) == header
