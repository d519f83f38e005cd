"""lessonkit.core.timeline: the lesson's numbers, what the screen shows at t, and measurements."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lessonkit.core import timeline
from lessonkit.core.client import StreamReader
from lessonkit.core.llm import RUNNING_PROMPT, answer_for, long_answer, stream_writes
from lessonkit.core.network import Arrival, buffer_until_end, deliver
from lessonkit.core.timeline import (
    Measured,
    Timings,
    cancel_savings,
    frame,
    frames,
    measure,
    render_log,
    response_times,
    visible_times_ms,
)

TOKENS = answer_for(RUNNING_PROMPT).tokens
LESSON = {"prefill_ms": 300, "per_token_ms": 40}
PHASE_ORDER = ("waiting", "prefill", "decoding", "done")

durations = st.integers(min_value=0, max_value=1000)
token_lists = st.lists(st.sampled_from(["Your", " order", " café", ".", " 12", "!"]), max_size=30)


# --- response_times -----------------------------------------------------------------


def test_a_500_token_answer_takes_300_plus_500_times_40_ms():
    timings = response_times(300, 40, 500)
    assert timings.total_ms == 20_300
    assert timings.streaming_first_ms == 340


def test_the_running_answer_shows_its_first_token_at_340_and_ends_at_540():
    assert response_times(300, 40, 6) == Timings(340, 540, 540)


def test_blocking_shows_nothing_until_the_total_time():
    timings = response_times(300, 40, 500)
    assert timings.blocking_first_ms == timings.total_ms


def test_latency_delays_every_time_by_the_same_amount():
    assert response_times(300, 40, 6, latency_ms=50) == Timings(390, 590, 590)


def test_an_empty_answer_shows_its_first_text_when_it_is_complete():
    assert response_times(300, 40, 0) == Timings(300, 300, 300)


def test_timings_as_dict_matches_the_graded_exercises_keys():
    assert response_times(300, 40, 6).as_dict() == {
        "streaming_first_ms": 340,
        "blocking_first_ms": 540,
        "total_ms": 540,
    }


@pytest.mark.parametrize(
    "args", [(-1, 40, 6), (300, -1, 6), (300, 40, -1), (300, 40, 6, -5), (300, 40, 2.5)]
)
def test_response_times_refuses_negative_or_fractional_inputs(args):
    with pytest.raises(ValueError):
        response_times(*args)


@given(durations, durations, st.integers(min_value=0, max_value=2000))
def test_streaming_never_shows_text_later_than_blocking(prefill_ms, per_token_ms, n_tokens):
    timings = response_times(prefill_ms, per_token_ms, n_tokens)
    assert timings.streaming_first_ms <= timings.blocking_first_ms == timings.total_ms


# --- render_log ---------------------------------------------------------------------


def test_render_log_reproduces_the_lessons_simulation_output():
    assert render_log(TOKENS, **LESSON) == [
        "[ 340 ms] render 'Your'",
        "[ 380 ms] render ' order'",
        "[ 420 ms] render ' ships'",
        "[ 460 ms] render ' on'",
        "[ 500 ms] render ' Monday'",
        "[ 540 ms] render '.'",
        "[ 540 ms] stream closed",
    ]


def test_render_log_shows_fractional_milliseconds_with_one_decimal():
    assert render_log(["a"], prefill_ms=0.5, per_token_ms=0.25)[0] == "[   0.8 ms] render 'a'"


def test_render_log_of_no_tokens_closes_after_prefill():
    assert render_log([], **LESSON) == ["[ 300 ms] stream closed"]


# --- frame --------------------------------------------------------------------------


def test_during_prefill_both_screens_are_empty():
    shown = frame(200, TOKENS, **LESSON)
    assert (shown.streaming_text, shown.blocking_text, shown.phase) == ("", "", "prefill")


def test_a_token_is_visible_from_its_exact_time():
    assert frame(339.9, TOKENS, **LESSON).streaming_text == ""
    assert frame(340, TOKENS, **LESSON).streaming_text == "Your"


def test_midway_streaming_shows_the_tokens_so_far_while_blocking_shows_a_spinner():
    shown = frame(420, TOKENS, **LESSON)
    assert shown.streaming_text == "Your order ships"
    assert shown.tokens_visible == 3
    assert shown.blocking_text == ""
    assert shown.phase == "decoding"
    assert not shown.streaming_done and not shown.blocking_done


def test_at_the_total_time_both_screens_show_the_whole_answer():
    shown = frame(540, TOKENS, **LESSON)
    assert shown.streaming_text == shown.blocking_text == "Your order ships on Monday."
    assert shown.streaming_done and shown.blocking_done
    assert shown.phase == "done"


def test_before_latency_has_passed_the_phase_is_waiting():
    assert frame(10, TOKENS, latency_ms=50, **LESSON).phase == "waiting"
    assert frame(60, TOKENS, latency_ms=50, **LESSON).phase == "prefill"


def test_frame_accepts_an_answer_object_as_well_as_tokens():
    assert frame(400, answer_for(RUNNING_PROMPT), **LESSON) == frame(400, TOKENS, **LESSON)


def test_frame_refuses_one_string_in_place_of_tokens():
    with pytest.raises(ValueError, match="tokenize"):
        frame(400, "Your order", **LESSON)


@given(token_lists, durations, durations, durations, st.floats(0, 30_000), st.floats(0, 30_000))
def test_frame_text_is_always_a_prefix_that_grows_with_t(
    tokens, prefill_ms, per_token_ms, latency_ms, t1, t2
):
    early, late = sorted([t1, t2])
    options = {"prefill_ms": prefill_ms, "per_token_ms": per_token_ms, "latency_ms": latency_ms}
    first, second = frame(early, tokens, **options), frame(late, tokens, **options)
    text = "".join(tokens)
    assert text.startswith(first.streaming_text)
    assert second.streaming_text.startswith(first.streaming_text)
    assert first.tokens_visible <= second.tokens_visible
    assert first.blocking_text in ("", text)
    assert PHASE_ORDER.index(first.phase) <= PHASE_ORDER.index(second.phase)


def test_frames_step_through_time_and_end_on_the_done_frame():
    shown = frames(TOKENS, step_ms=100, **LESSON)
    assert [f.t_ms for f in shown] == [0, 100, 200, 300, 400, 500, 540]
    assert shown[-1].phase == "done"


def test_visible_times_match_the_render_log():
    assert visible_times_ms(6, **LESSON) == [340, 380, 420, 460, 500, 540]


# --- measure ------------------------------------------------------------------------


def test_measure_gives_ttft_total_and_gaps():
    assert measure([340, 380, 460]) == Measured(340, 460, (40, 80))


def test_measure_counts_from_start_ms():
    assert measure([1340, 1380], start_ms=1000) == Measured(340, 380, (40,))


def test_measure_accepts_arrivals_from_the_network_model():
    measured = measure([Arrival(25.0, b"a"), Arrival(65.0, b"b")])
    assert (measured.ttft_ms, measured.max_gap_ms) == (25.0, 40.0)


def test_measure_of_nothing_says_to_pass_an_arrival():
    with pytest.raises(ValueError, match="at least one"):
        measure([])


def test_measure_refuses_times_out_of_order():
    with pytest.raises(ValueError, match="in order"):
        measure([380, 340])


def seen_times_ms(arrivals):
    """Return when our stream reader produced each delta, given timed arrivals."""
    reader = StreamReader("lesson")
    return [a.at_ms for a in arrivals for _ in reader.feed(a.data)]


def test_a_streamed_answer_measures_ttft_as_latency_plus_prefill_plus_one_token():
    answer = long_answer(30)
    streamed = measure(seen_times_ms(deliver(stream_writes(answer, "lesson"), latency_ms=20)))
    assert streamed.ttft_ms == 20 + 300 + 40
    assert streamed.total_ms == 20 + 300 + 30 * 40
    assert set(streamed.gaps_ms) == {40}


def test_a_buffering_proxy_makes_ttft_equal_the_total_time():
    answer = long_answer(30)
    buffered = measure(seen_times_ms(buffer_until_end(stream_writes(answer, "lesson"))))
    assert buffered.ttft_ms == buffered.total_ms == 300 + 30 * 40
    assert set(buffered.gaps_ms) == {0}


# --- cancel_savings -----------------------------------------------------------------


def test_stopping_during_prefill_saves_every_token():
    assert cancel_savings(500, 200, 300, 40) == (0, 500)


def test_stopping_at_five_seconds_saves_the_rest_of_a_500_token_answer():
    # tokens ready at 340, 380, ... 5000 ms: (5000 - 300) // 40 = 117 of them
    assert cancel_savings(500, 5000, 300, 40) == (117, 383)


def test_stopping_after_the_end_saves_nothing():
    assert cancel_savings(6, 10_000, 300, 40) == (6, 0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "300", None, True, -1])
def test_a_timing_that_is_not_a_finite_non_negative_number_gets_a_clear_error(bad):
    with pytest.raises(ValueError, match="prefill_ms must be a number of milliseconds, 0 or more"):
        timeline.response_times(bad, 40, 6)
