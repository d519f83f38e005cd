"""Explorer state for notebooks 01 and 02 (lessonkit.lab), and the widgets over it.

The pure functions are checked against the lesson's numbers; each widget is built
headless and one control is moved, as ipywidgets' own tests do (c.value = 10).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lessonkit.core import framing, llm, network, sse
from lessonkit.core.framing import encode_chunked, parse_chunked
from lessonkit.lab import lesson01, lesson02, views, widgets
from lessonkit.lab.lesson01 import cancel_view, decode_steps, timeline_view
from lessonkit.lab.lesson02 import wire_rows

RUNNING = tuple(llm.tokenize(llm.RUNNING_ANSWER))


def _find(box, css_class):
    """Return the first descendant widget carrying `css_class`."""
    stack = [box]
    while stack:
        w = stack.pop(0)
        if css_class in getattr(w, "_dom_classes", ()):
            return w
        stack.extend(getattr(w, "children", ()))
    raise AssertionError(f"no widget with class {css_class}")


# ## The decode loop


def test_decode_loop_writes_the_running_answer_then_eos():
    steps = decode_steps()
    assert tuple(s.new_token for s in steps) == (*RUNNING, lesson01.EOS)
    assert steps[-1].stop_reason == "eos"


def test_only_the_first_pass_is_prefill():
    assert [s.phase for s in decode_steps()][:2] == ["prefill", "decode"]


def test_each_decode_pass_reads_one_more_token_than_the_last():
    reads = [s.reads for s in decode_steps()]
    assert all(b - a == 1 for a, b in zip(reads, reads[1:], strict=False))


def test_decode_loop_stops_at_max_tokens_without_eos():
    steps = decode_steps(max_tokens=3)
    assert [s.new_token for s in steps] == list(RUNNING[:3])
    assert steps[-1].stop_reason == "length"


def test_decode_tokens_exist_at_the_lessons_times():
    assert [s.at_ms for s in decode_steps()][:6] == [340, 380, 420, 460, 500, 540]


def test_the_end_of_sequence_pass_is_free_so_eos_comes_with_the_last_token_as_stop_and_done_do():
    steps = decode_steps()
    rows = wire_rows("openai")
    finish_ms = next(row.at_ms for row in rows if any(s.finish_reason for s in row.steps))
    done_ms = next(row.at_ms for row in rows if row.done)
    assert steps[-1].new_token == lesson01.EOS
    assert steps[-1].at_ms == steps[-2].at_ms == finish_ms == done_ms == 540
    assert timeline_view(0).timings.total_ms == 540


# ## The timeline explorer


def test_running_example_timeline_gives_340_and_540_ms():
    timings = timeline_view(0).timings
    assert (timings.streaming_first_ms, timings.total_ms) == (340, 540)


def test_five_hundred_tokens_take_20300_ms():
    assert timeline_view(0, n_tokens=500).timings.total_ms == 20_300


def test_explorer_tokens_are_the_running_answer_when_short():
    assert lesson01.explorer_tokens(6) == RUNNING


def test_explorer_tokens_have_the_requested_length_when_long():
    assert len(lesson01.explorer_tokens(500)) == 500


def test_at_400_ms_streaming_shows_two_tokens_and_blocking_a_spinner():
    blocking, streaming = lesson01.timeline_panes(timeline_view(400))
    assert streaming == "Your order▌"
    assert "waiting" in blocking


def test_after_the_total_both_screens_show_the_whole_answer():
    assert lesson01.timeline_panes(timeline_view(540)) == (llm.RUNNING_ANSWER,) * 2


def test_latency_delays_the_first_token_by_that_much():
    assert timeline_view(0, latency_ms=100).timings.streaming_first_ms == 440


def test_timeline_readouts_name_both_numbers():
    readouts = lesson01.timeline_readouts(400)
    assert "340 ms" in readouts["ttft"] and "540 ms" in readouts["blocking"]


def test_timeline_readouts_clamp_t_to_the_axis_and_say_so_in_the_value_they_return():
    readouts = lesson01.timeline_readouts(50_000, n_tokens=6)
    assert readouts["t_ms"] == readouts["t_max"] < 50_000
    assert "6 of 6" in readouts["visible"] and readouts["text"].startswith("t = ")


def test_the_timeline_readouts_text_is_the_frame_the_twin_prints():
    assert lesson01.timeline_readouts(400)["text"] == lesson01.timeline_text(timeline_view(400))


def test_timeline_text_frame_shows_both_panes():
    text = lesson01.timeline_text(timeline_view(400))
    assert "blocking  |" in text and "streaming | Your order" in text


def test_time_axis_leaves_room_after_the_total():
    assert timeline_view(0).t_max_ms > 540


# ## Stop early


def test_cancelling_at_2000_ms_keeps_42_of_500_tokens():
    view = cancel_view(2000)
    assert (view.tokens_generated, view.tokens_saved) == (42, 458)


def test_cancelling_after_the_end_saves_nothing():
    view = cancel_view(30_000)
    assert (view.tokens_saved, view.generation_ms_saved) == (0, 0)


def test_cost_per_thousand_answers_follows_the_price():
    view = cancel_view(2000, usd_per_million_tokens=10)
    assert view.usd_per_thousand_answers(1000) == pytest.approx(10.0)


def test_the_user_saw_exactly_the_generated_tokens():
    view = cancel_view(400, n_tokens=6)
    assert view.seen_text == "Your order"


# ## Idle timeouts and heartbeats


def test_a_silence_longer_than_the_idle_timeout_is_cut_at_the_timeout():
    report = lesson01.idle_report([(75_000, b"data: x\n\n")], idle_timeout_ms=60_000)
    assert report.cut_at_ms == 60_000


def test_heartbeats_keep_a_long_prefill_under_the_timeout():
    writes = llm.stream_writes(
        llm.answer_for(llm.RUNNING_PROMPT),
        "lesson",
        timing=llm.Timing(prefill_ms=75_000),
        heartbeat_ms=15_000,
    )
    report = lesson01.idle_report(writes, idle_timeout_ms=60_000)
    assert report.cut_at_ms is None and report.heartbeats >= 4


def test_a_long_blocking_answer_is_cut_but_its_stream_is_not():
    answer = llm.long_answer(2000)
    blocking = lesson01.idle_report([llm.blocking_body(answer, "lesson")], idle_timeout_ms=60_000)
    streaming = lesson01.idle_report(llm.stream_writes(answer, "lesson"), idle_timeout_ms=60_000)
    assert blocking.cut_at_ms is not None and streaming.cut_at_ms is None


# ## Rendering sooner


def test_first_markdown_line_can_render_long_before_the_end():
    first, *_, last = lesson01.line_ready_times()
    assert first.streaming_ms < first.blocking_ms == last.streaming_ms


# ## HTTP framing


def test_chunked_encoding_round_trips():
    pieces = [b"data: a\n\n", b"x" * 300]
    assert framing.dechunk(encode_chunked(pieces)) == b"".join(pieces)


@given(st.lists(st.binary(min_size=1, max_size=40), max_size=6))
def test_any_pieces_survive_chunked_framing(pieces):
    assert framing.dechunk(encode_chunked(pieces)) == b"".join(pieces)


def test_chunk_sizes_are_hexadecimal():
    steps = parse_chunked(encode_chunked([b"y" * 31]))
    assert (steps[0].size_line, steps[0].size) == (b"1f", 31)


def test_the_zero_size_chunk_ends_the_body():
    steps = parse_chunked(b"3\r\nabc\r\n0\r\n\r\n")
    assert [s.kind for s in steps] == ["chunk", "last"]


def test_chunk_extensions_and_trailers_are_skipped():
    steps = parse_chunked(b"3;name=x\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n")
    assert [(s.kind, s.data) for s in steps] == [("chunk", b"abc"), ("last", b"")]


def test_a_body_cut_mid_chunk_ends_with_an_incomplete_step():
    assert parse_chunked(b"5\r\nab")[-1].kind == "incomplete"


def test_chunked_body_is_complete_only_after_the_final_crlf():
    body = encode_chunked([b"abc"])
    assert [framing.chunked_complete(body[:-2]), framing.chunked_complete(body)] == [False, True]


def test_each_chunk_description_starts_with_its_byte_offset_not_a_time():
    steps = parse_chunked(b"3\r\nabc\r\n0\r\n\r\n")
    assert [s.describe()[:12] for s in steps] == ["at byte    0", "at byte    8"]


def test_a_bad_size_line_names_its_offset():
    with pytest.raises(ValueError, match="at byte 0"):
        parse_chunked(b"zz\r\n")


def test_split_response_finds_the_status_and_headers_any_case():
    head, body = framing.split_response(lesson02.SSE_RESPONSE_HEAD + b"body")
    assert head.status == 200 and head.header("content-type") == "text/event-stream"
    assert body == b"body"


def test_split_response_refuses_an_unfinished_head():
    with pytest.raises(ValueError, match="not complete"):
        framing.split_response(b"HTTP/1.1 200 OK\r\n")


def test_request_bytes_carry_the_json_body_and_its_length():
    raw = framing.request_bytes("/v1/chat/completions", {"stream": True})
    head, _, body = raw.partition(b"\r\n\r\n")
    assert json.loads(body) == {"stream": True}
    assert f"Content-Length: {len(body)}".encode() in head


def test_http2_data_frames_end_with_an_empty_end_stream_frame():
    frames = framing.h2_data_frames([b"abc"])
    assert frames[0][:9] == b"\x00\x00\x03\x00\x00\x00\x00\x00\x01"
    assert frames[-1] == b"\x00\x00\x00\x00\x01\x00\x00\x00\x01"


def test_http3_data_frames_use_a_two_byte_varint_past_63_bytes():
    assert framing.h3_data_frames([b"x" * 100])[0][:3] == b"\x00\x40\x64"


# ## SSE fields


def test_every_standard_field_decodes_back_from_its_encoding():
    rows = {row.field: row for row in lesson02.sse_field_rows()}
    assert rows["event"].events[0].event == "message_stop"
    assert rows["id"].events[0].id == "1"
    assert rows["retry"].events[0].retry == 3000
    assert rows[":"].events == ()


def test_two_data_lines_join_with_a_newline():
    two = [row for row in lesson02.sse_field_rows() if row.field == "data"][1]
    assert two.events[0].data == "first line\nsecond line"


def test_highlight_colours_each_field_and_escapes_html():
    shown = views.highlight_sse_html(sse.encode("<b>", event="x"))
    assert views.FIELD_COLOURS["event"] in shown and "&lt;b&gt;" in shown


# ## Wire inspector and deltas


@pytest.mark.parametrize("dialect", ["lesson", "openai", "anthropic"])
def test_every_dialect_rebuilds_the_same_answer_and_completes(dialect):
    rows = wire_rows(dialect)
    assert rows[-1].screen == llm.RUNNING_ANSWER and rows[-1].done


def test_openai_reports_usage_at_the_end_only_when_the_request_asks_for_it():
    asked = lesson02.final_events(wire_rows("openai", include_usage=True))
    assert asked["finish_reason"] == "stop" and asked["usage"]["completion_tokens"] == 6
    plain = wire_rows("openai")
    assert lesson02.final_events(plain)["usage"] is None
    assert not any(b'"usage"' in row.raw for row in plain)


def test_the_side_by_side_asks_openai_for_usage_and_says_so_in_its_rows():
    openai_rows = lesson02.side_by_side()["openai"]
    assert any(b'"choices":[],"usage":{' in row.raw for row in openai_rows)


def test_hide_port_writes_the_servers_port_as_a_placeholder():
    text = "Host: 127.0.0.1:36481\r\n"
    assert lesson02.hide_port(text, "http://127.0.0.1:36481") == "Host: 127.0.0.1:<port>\r\n"


def test_anthropic_ends_with_message_stop_and_end_turn():
    rows = wire_rows("anthropic")
    assert rows[-1].events[0].event == "message_stop"
    assert lesson02.final_events(rows)["finish_reason"] == "end_turn"


def test_the_inspected_events_are_the_same_whatever_the_cuts():
    rows = wire_rows("openai")
    wire = b"".join(row.raw for row in rows)
    expected = [event for row in rows for event in row.events]
    for chunks in (network.cut(wire, 7), network.random_cuts(wire, seed=3)):
        assert sse.decode_all(chunks) == expected


def test_appending_deltas_builds_the_text_and_replacing_keeps_the_last():
    deltas = ["Your", " order", " ships"]
    assert lesson02.screens_after(deltas)[-1] == "Your order ships"
    assert lesson02.screens_after(deltas, replace=True)[-1] == " ships"


# ## The five-step walkthrough


def test_walkthrough_has_five_steps_from_request_to_end():
    steps = lesson02.walkthrough_steps()
    assert [s.number for s in steps] == [1, 2, 3, 4, 5]
    assert b'"stream": true' in steps[0].wire
    assert b"text/event-stream" in steps[1].wire
    assert steps[-1].wire.endswith(b"data: [DONE]\n\n")


def test_walkthrough_client_parse_ends_with_the_first_delta():
    assert lesson02.walkthrough_steps()[3].screen == "Your"


def test_parse_stages_stop_at_done_before_any_json():
    stages = lesson02.parse_stages(b"data: [DONE]\n\n")
    assert stages[-1][0] == "end marker?" and all(name != "json.loads" for name, _ in stages)


# ## Widgets: built headless, a moved control updates the output


def test_decode_player_shows_the_pass_its_slider_selects():
    box = widgets.decode_loop_player()
    _find(box, "lk-decode-pass").value = 2
    assert "writes ' ships'" in _find(box, "lk-decode-view").value


def test_the_decode_slider_carries_its_own_play_button():
    slider = _find(widgets.decode_loop_player(), "lk-decode-pass")
    assert slider.play_interval_ms == 800 and slider.description == "pass"


def test_timeline_explorer_moves_its_readouts_with_time():
    box = widgets.timeline_explorer(t_ms=300)
    assert "0 of 6" in _find(box, "lk-timeline-visible").value
    _find(box, "lk-t-ms").value = 500
    assert "5 of 6" in _find(box, "lk-timeline-visible").value


def test_timeline_explorer_recomputes_total_when_tokens_change():
    box = widgets.timeline_explorer()
    _find(box, "lk-n-tokens").value = 500
    assert "20,300 ms" in _find(box, "lk-timeline-total").value
    assert _find(box, "lk-t-ms").max > 20_300


def test_timeline_explorer_draws_an_svg():
    box = widgets.timeline_explorer()
    assert _find(box, "lk-timeline-plot").value.startswith("<svg")


def _count_timeline_drawing(monkeypatch):
    """Count how often the explorer draws its timeline figure."""
    from lessonkit.lab import svg

    counts = {"draws": 0}
    draw = svg.timeline_svg

    def counting(view):
        counts["draws"] += 1
        return draw(view)

    monkeypatch.setattr(svg, "timeline_svg", counting)
    return counts


def test_timeline_explorer_draws_once_per_move_of_t(monkeypatch):
    counts = _count_timeline_drawing(monkeypatch)
    box = widgets.timeline_explorer(t_ms=0)
    built = counts["draws"]
    for t_ms in (100, 200, 300):
        _find(box, "lk-t-ms").value = t_ms
    assert counts["draws"] - built == 3


def test_timeline_explorer_draws_the_clamped_time_once_when_a_speed_change_moves_t(monkeypatch):
    counts = _count_timeline_drawing(monkeypatch)
    box = widgets.timeline_explorer(n_tokens=500, t_ms=15_000)
    built = counts["draws"]
    _find(box, "lk-n-tokens").value = 6  # t.max shrinks below t: the slider clamps t
    assert counts["draws"] - built == 1
    t = _find(box, "lk-t-ms")
    assert t.value == t.max and "6 of 6" in _find(box, "lk-timeline-visible").value


def test_the_time_a_speed_change_clamped_comes_back_when_the_axis_grows_again():
    box = widgets.timeline_explorer(n_tokens=500, t_ms=15_000)
    tokens, t = _find(box, "lk-n-tokens"), _find(box, "lk-t-ms")
    tokens.value = 6
    assert t.value < 15_000
    tokens.value = 500
    assert t.value == 15_000 and "t = 15,000 ms" in _find(box, "lk-timeline-t").value


def test_reset_puts_every_timeline_slider_back_where_it_opened():
    box = widgets.timeline_explorer(t_ms=400)
    _find(box, "lk-n-tokens").value = 500
    _find(box, "lk-t-ms").value = 2_000
    _find(box, "lk-timeline-reset").click()
    assert _find(box, "lk-n-tokens").value == 6 and _find(box, "lk-t-ms").value == 400
    assert "2 of 6 tokens" in _find(box, "lk-timeline-visible").value


def test_cancel_explorer_updates_savings_when_the_stop_moves():
    box = widgets.cancel_explorer()
    _find(box, "lk-cancel-at-ms").value = 10_000
    assert "generation time avoided: 10.3 s" in _find(box, "lk-cancel-time").value


def test_wire_inspector_switches_dialect_and_keeps_the_write_in_range():
    box = widgets.wire_inspector("openai", index=9)
    _find(box, "lk-dialect").value = "lesson"
    assert _find(box, "lk-wire-write").max == len(wire_rows("lesson")) - 1
    assert "complete" in _find(box, "lk-wire-screen").value


def test_wire_inspector_shows_the_screen_after_the_chosen_write():
    box = widgets.wire_inspector("anthropic", index=0)
    _find(box, "lk-wire-write").value = 3
    assert "Your order" in _find(box, "lk-wire-screen").value


def test_wire_inspector_shows_a_responses_stream_named_event_by_event():
    box = widgets.wire_inspector("responses", index=0)
    assert "no new text (response.created)" in _find(box, "lk-wire-meaning").value
    _find(box, "lk-wire-write").value = 4  # four events open the stream, then the first delta
    assert "at 340 ms: delta &#x27;Your&#x27;" in _find(box, "lk-wire-meaning").value
    _find(box, "lk-wire-write").value = len(wire_rows("responses")) - 1
    assert "(complete)" in _find(box, "lk-wire-screen").value


def test_the_end_side_by_side_shows_chat_completions_responses_and_anthropic():
    streams = lesson02.side_by_side(last=1)
    assert list(streams) == ["openai", "responses", "anthropic"]
    assert [rows[-1].events[-1].event for rows in streams.values()] == [
        "message", "response.completed", "message_stop"]  # fmt: skip
    assert streams["openai"][-1].raw == b"data: [DONE]\n\n"


def test_walkthrough_next_button_advances_one_step():
    box = widgets.walkthrough_stepper()
    _find(box, "lk-walk-next").click()
    assert _find(box, "lk-walk-step").value == 2
    assert "Headers first" in _find(box, "lk-walk-view").value


def test_fitting_the_formula_recovers_prefill_and_per_token():
    assert lesson01.fit_timing([340, 380, 420, 460]) == (300, 40)


def test_long_chunk_data_is_shortened_in_the_description():
    step = parse_chunked(encode_chunked([b"x" * 500]))[0]
    assert len(step.describe()) < 120 and "..." in step.describe()


def test_side_by_side_text_shows_the_same_last_writes_as_the_html():
    streams = lesson02.side_by_side(last=2)
    text = lesson02.side_by_side_text(streams)
    assert text.splitlines()[0] == "openai (last 2 writes)"
    assert "  data: [DONE]⏎⏎" in text
    assert '  event: message_stop⏎data: {"type":"message_stop"}⏎⏎' in text
    html_text = views.side_by_side_html(streams)
    assert "message_stop" in html_text and "[DONE]" in html_text


@pytest.mark.parametrize(
    ("step", "expected"),
    [(0, 1), (1, 1), (4, 2), (6, 5), (19, 10), (20, 20), (203, 200), (999, 500)],
)
def test_the_timeline_time_slider_step_is_a_round_number_so_round_times_stay_on_its_grid(
    step, expected
):
    assert lesson01.round_step(step) == expected


def _descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)


def test_the_timeline_explorer_keeps_its_start_time_on_the_slider_grid():
    box = widgets.timeline_explorer(t_ms=400)
    sliders = [w for w in _descendants(box) if "lk-t-ms" in getattr(w, "_dom_classes", ())]
    assert len(sliders) == 1
    assert sliders[0].value == 400 and sliders[0].value % sliders[0].step == 0
