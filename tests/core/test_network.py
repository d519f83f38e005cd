"""lessonkit.core.network: cuts, drops and arrival times, with no sockets and no clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lessonkit.core import network
from lessonkit.core.network import (
    Arrival,
    buffer_until_end,
    cut,
    cut_at,
    deliver,
    drop_after,
    every_cut,
    random_cuts,
)

WIRE = 'data: {"delta": "Your"}\n\ndata: {"delta": " café"}\n\ndata: [DONE]\n\n'.encode()

sizes = st.integers(min_value=1, max_value=80)
seeds = st.integers(min_value=0, max_value=2**32)
sends_lists = st.lists(
    st.tuples(st.floats(min_value=0, max_value=10_000, allow_nan=False), st.binary(max_size=40)),
    max_size=20,
).map(lambda sends: sorted(sends, key=lambda send: send[0]))


# --- cut ----------------------------------------------------------------------------


def test_cut_gives_pieces_of_size_bytes_with_a_shorter_last_piece():
    assert cut(b"abcdefg", 3) == [b"abc", b"def", b"g"]


def test_cut_of_empty_data_gives_no_pieces():
    assert cut(b"", 4) == []


@pytest.mark.parametrize("size", [0, -1])
def test_cut_with_a_size_below_one_says_to_pass_a_positive_size(size):
    with pytest.raises(ValueError, match="positive"):
        cut(b"abc", size)


@given(st.binary(), sizes)
def test_cut_pieces_always_join_back_to_the_data(data, size):
    pieces = cut(data, size)
    assert b"".join(pieces) == data
    assert all(0 < len(piece) <= size for piece in pieces)


def test_cut_reproduces_the_lessons_chunk_counts():
    # the lesson's practice wire cut at 1000, 16 and 5 bytes gives 1, 10 and 30 chunks
    tokens = ["Your", " café", " order", " ships", "."]
    events = [": ping"] + ['data: {"delta": "' + t + '"}' for t in tokens]
    wire = ("\n\n".join([*events, "data: [DONE]"]) + "\n\n").encode()
    assert [len(cut(wire, size)) for size in (1000, 16, 5)] == [1, 10, 30]


# --- cut_at -------------------------------------------------------------------------


def test_cut_at_splits_at_each_offset():
    assert cut_at(b"abcdef", [2, 4]) == [b"ab", b"cd", b"ef"]


def test_cut_at_a_repeated_offset_gives_an_empty_piece():
    assert cut_at(b"abc", [1, 1]) == [b"a", b"", b"bc"]


def test_cut_at_an_offset_past_the_end_says_the_valid_range():
    with pytest.raises(ValueError, match=r"outside the data \(0\.\.3\)"):
        cut_at(b"abc", [4])


def test_cut_at_unsorted_offsets_says_to_sort_them():
    with pytest.raises(ValueError, match="sorted"):
        cut_at(b"abcdef", [4, 2])


@given(st.binary(), st.lists(st.integers(min_value=0, max_value=200)))
def test_cut_at_pieces_always_join_back_to_the_data(data, raw_positions):
    positions = sorted(p for p in raw_positions if p <= len(data))
    pieces = cut_at(data, positions)
    assert b"".join(pieces) == data
    assert len(pieces) == len(positions) + 1


# --- random_cuts --------------------------------------------------------------------


@given(st.binary(max_size=500), seeds, sizes)
def test_random_cuts_pieces_always_join_back_to_the_data(data, seed, max_piece_bytes):
    pieces = random_cuts(data, seed, max_piece_bytes)
    assert b"".join(pieces) == data
    assert all(len(piece) <= max_piece_bytes for piece in pieces)


def test_random_cuts_with_the_same_seed_gives_the_same_pieces():
    assert random_cuts(WIRE, 7) == random_cuts(WIRE, 7)


def test_random_cuts_with_another_seed_cuts_elsewhere():
    assert random_cuts(WIRE, 1) != random_cuts(WIRE, 2)


def test_random_cuts_includes_empty_pieces_and_single_bytes():
    pieces = [p for seed in range(20) for p in random_cuts(WIRE, seed)]
    assert b"" in pieces
    assert any(len(p) == 1 for p in pieces)


def test_random_cuts_with_max_piece_bytes_below_one_is_refused():
    with pytest.raises(ValueError, match="max_piece_bytes"):
        random_cuts(WIRE, 0, max_piece_bytes=0)


# --- every_cut and drop_after -------------------------------------------------------


def test_every_cut_yields_one_two_piece_split_per_position_including_both_ends():
    assert list(every_cut(b"ab")) == [[b"", b"ab"], [b"a", b"b"], [b"ab", b""]]


@given(st.binary(max_size=60))
def test_every_cut_pieces_always_join_back_to_the_data(data):
    splits = list(every_cut(data))
    assert len(splits) == len(data) + 1
    assert all(b"".join(split) == data for split in splits)


def test_drop_after_keeps_only_the_first_n_bytes():
    assert drop_after(WIRE, 5) == b"data:"


def test_drop_after_more_bytes_than_sent_keeps_everything():
    assert drop_after(WIRE, 10_000) == WIRE


def test_drop_after_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="0 or more"):
        drop_after(WIRE, -1)


# --- deliver ------------------------------------------------------------------------


def test_deliver_adds_the_latency_to_every_write():
    sends = [(0.0, b"a"), (40.0, b"b")]
    assert deliver(sends, latency_ms=25) == [Arrival(25.0, b"a"), Arrival(65.0, b"b")]


def test_deliver_drops_empty_writes_because_nothing_goes_on_the_wire():
    assert deliver([(0.0, b""), (5.0, b"x")]) == [Arrival(5.0, b"x")]


def test_deliver_splits_large_writes_into_segments_of_max_segment_bytes():
    arrivals = deliver([(10.0, b"abcdefg")], max_segment_bytes=3)
    assert [a.data for a in arrivals] == [b"abc", b"def", b"g"]


def test_deliver_with_jitter_is_the_same_for_the_same_seed():
    sends = [(i * 40.0, b"token") for i in range(20)]
    first = deliver(sends, latency_ms=10, jitter_ms=50, seed=3)
    assert first == deliver(sends, latency_ms=10, jitter_ms=50, seed=3)
    assert first != deliver(sends, latency_ms=10, jitter_ms=50, seed=4)


def test_deliver_with_jitter_never_lets_a_later_write_overtake_an_earlier_one():
    sends = [(0.0, b"a"), (1.0, b"b"), (2.0, b"c")]
    arrivals = deliver(sends, jitter_ms=100, seed=5)
    assert [a.data for a in arrivals] == [b"a", b"b", b"c"]
    assert [a.at_ms for a in arrivals] == sorted(a.at_ms for a in arrivals)


@given(
    sends_lists,
    st.floats(min_value=0, max_value=500),
    st.floats(min_value=0, max_value=500),
    seeds,
    st.none() | sizes,
)
def test_deliver_keeps_the_bytes_in_order_with_non_decreasing_times(
    sends, latency_ms, jitter_ms, seed, max_segment_bytes
):
    arrivals = deliver(
        sends,
        latency_ms=latency_ms,
        jitter_ms=jitter_ms,
        seed=seed,
        max_segment_bytes=max_segment_bytes,
    )
    assert b"".join([a.data for a in arrivals]) == b"".join(data for _, data in sends)
    times = [a.at_ms for a in arrivals]
    assert times == sorted(times)
    # nothing arrives before it was sent plus the latency
    assert all(a.at_ms >= latency_ms for a in arrivals)


def test_deliver_refuses_writes_out_of_time_order():
    with pytest.raises(ValueError, match="sort them by at_ms"):
        deliver([(10.0, b"a"), (5.0, b"b")])


@pytest.mark.parametrize(
    "options",
    [{"latency_ms": -1}, {"jitter_ms": -1}, {"max_segment_bytes": 0}],
)
def test_deliver_refuses_negative_delays_and_empty_segments(options):
    with pytest.raises(ValueError):
        deliver([(0.0, b"a")], **options)


# --- buffer_until_end and stall -----------------------------------------------------


def test_buffer_until_end_delivers_everything_at_once_after_the_last_write():
    sends = [(0.0, b"a"), (340.0, b"b"), (540.0, b"c")]
    assert buffer_until_end(sends) == [Arrival(540.0, b"abc")]


def test_buffer_until_end_adds_the_latency():
    assert buffer_until_end([(100.0, b"x")], latency_ms=20) == [Arrival(120.0, b"x")]


def test_buffer_until_end_of_nothing_delivers_nothing():
    assert buffer_until_end([]) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda text: network.cut(text, 4),
        lambda text: network.cut_at(text, [2]),
        lambda text: network.random_cuts(text, seed=1),
        lambda text: list(network.every_cut(text)),
        lambda text: network.drop_after(text, 3),
    ],
)
def test_text_instead_of_bytes_gets_an_error_that_says_to_encode_it(call):
    with pytest.raises(TypeError, match=r"encode text first: text.encode\('utf-8'\)"):
        call("data: hi\n\n")


def test_a_stall_moves_every_write_after_the_stall_point_later():
    writes = [(0.0, b"a"), (10.0, b"b"), (20.0, b"c")]
    assert network.stall(writes, after_ms=10.0, stall_ms=50.0) == [
        (0.0, b"a"),
        (10.0, b"b"),
        (70.0, b"c"),
    ]


def test_heartbeats_fill_every_silence_longer_than_the_heartbeat():
    writes = network.stall([(0.0, b"a"), (10.0, b"b"), (20.0, b"c")], after_ms=10.0, stall_ms=50.0)
    assert list(network.with_heartbeats(writes, heartbeat_ms=20.0)) == [
        (0.0, b"a"),
        (10.0, b"b"),
        (30.0, b": ping\n\n"),
        (50.0, b": ping\n\n"),
        (70.0, b"c"),
    ]


def test_heartbeats_also_fill_the_silence_before_the_first_write():
    beats = list(network.with_heartbeats([(50.0, b"a")], heartbeat_ms=20.0))
    assert beats == [(20.0, b": ping\n\n"), (40.0, b": ping\n\n"), (50.0, b"a")]


def test_stalled_times_agree_with_the_stalled_writes():
    times = [10.0, 20.0, 30.0, 40.0]
    after_ms = network.stall_point_ms(times)
    moved = network.stall([(t, None) for t in times], after_ms=after_ms, stall_ms=100.0)
    assert network.stalled_times(times, after_ms=after_ms, stall_ms=100.0) == [t for t, _ in moved]


def test_stall_point_is_after_half_the_tokens_rounded_up():
    assert network.stall_point_ms([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]) == 30.0
    assert network.stall_point_ms([10.0, 20.0, 30.0]) == 20.0
    assert network.stall_point_ms([]) == 0.0
