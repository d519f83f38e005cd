"""Facts a learner can trust: every number typed in the lessons' prose is what lessonkit computes,
one end-of-sequence model holds everywhere, and the measured outputs stored in the
notebooks tell the lessons' story.

Numbers printed by code cells need no test here (nbval compares them on every run).
The few numbers typed in prose are listed below, each as the exact phrase the notebook
contains, built from the value lessonkit computes: if the model changes, the phrase is
no longer found and this test names the notebook and the number to update.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from pacing import assert_paced, paced_in_one_of

from lessonkit.core import llm, network, practice, timeline
from lessonkit.lab import lesson01, lesson02, lesson03, lesson04, lesson05

ROOT = Path(__file__).resolve().parents[2]


def _notebook(name: str) -> nbformat.NotebookNode:
    folder, _, stem = name.rpartition("/")
    path = next((ROOT / (folder or "notebooks")).glob(f"{stem}*.ipynb"))
    return nbformat.read(path, as_version=4)


def _prose(name: str) -> str:
    """Return the markdown of a notebook (or of a page: README.md, docs/*.md) as one string,
    whitespace collapsed."""
    if name.endswith(".md"):
        text = (ROOT / name).read_text()
    else:
        text = "\n".join(c.source for c in _notebook(name).cells if c.cell_type == "markdown")
    return " ".join(text.split())


def ms(value: float) -> str:
    return f"{value:,.0f}"


def s(value_ms: float) -> str:
    return f"{value_ms / 1000:,.1f}"


# The model's numbers, computed once.
RUN = timeline.response_times(300, 40, 6)
RUN_LATE = timeline.response_times(300, 40, 6, latency_ms=100)
LONG = timeline.response_times(300, 40, 500)
SHORTHAND_MS = LONG.streaming_first_ms + 500 * 40  # the lesson's "TTFT + n x per token"
VISIBLE = timeline.visible_times_ms(6, prefill_ms=300, per_token_ms=40)
AT_2000 = lesson01.timeline_view(2000, n_tokens=500).frame
STOP = lesson01.cancel_view(2000)
FIRST_LINE = lesson01.line_ready_times()[0]
CANCEL_ANSWER_TOKENS = len(llm.answer_for("Tell me everything about my parcel.").tokens)
IDLE = {
    "blocking": lesson01.idle_report(
        [llm.blocking_body(llm.long_answer(2_000), "lesson")], idle_timeout_ms=60_000
    ),
    "streaming": lesson01.idle_report(
        llm.stream_writes(llm.long_answer(2_000), "lesson"), idle_timeout_ms=60_000
    ),
}
LESSON_WIRE = [row.raw for row in lesson02.wire_rows("lesson")]
WORKED, WORKED_CUTS = lesson03.worked_example()
PRACTICE = practice.practice_wire()
EVENT_ENDS = [m.end() for m in re.finditer(b"\n\n", PRACTICE)]
ANSWER = llm.answer_for(llm.RUNNING_PROMPT)
BUFFERED = network.buffer_until_end(list(llm.stream_writes(ANSWER, "openai")), latency_ms=20)
PHONE_TOKENS = llm.tokenize("Your order ships on Monday. Call 555-0142 to change it.")
LATE = lesson05.late_check(
    PHONE_TOKENS,
    llm.token_times_ms(len(PHONE_TOKENS), prefill_ms=300, per_token_ms=40),
    lesson05.find_phone_number,
)
N_EVENTS_IN_WORDS = {7: "seven"}.get(len(EVENT_ENDS), str(len(EVENT_ENDS)))
RESPONSES_ROWS = lesson02.wire_rows("responses")
RESPONSES_OPENING = next(i for i, row in enumerate(RESPONSES_ROWS) if row.delta)
# "All deltas land in item 0, part 0": unpacking fails unless there is exactly one place.
((DELTA_ITEM, DELTA_PART),) = {
    (e["output_index"], e["content_index"])
    for e in map(json.loads, (ev.data for row in RESPONSES_ROWS for ev in row.events))
    if e["type"] == "response.output_text.delta"
}
CHUNK_AS_EVENT_ERRORS = lesson03.every_cut_verdicts(
    lesson03.BUGGY_READERS["chunk = event"], PRACTICE
).count("error")

TYPED = [
    # 01 · Why streaming
    ("01", f"300 + 40 = **{ms(RUN.streaming_first_ms)} ms**"),
    ("01", f"the second at {ms(VISIBLE[1])} ms"),
    ("01", f"so it can be sent at {ms(RUN.streaming_first_ms)} ms"),
    ("01", f"go out with the last token, at {ms(RUN.total_ms)} ms"),
    ("01", f"The first token exists at {ms(RUN.streaming_first_ms)} ms"),
    ("01", f"waiting until {ms(RUN.total_ms)} ms"),
    ("01", f"moves the first text from {s(LONG.total_ms)} s"),
    ("01", f"would say {ms(SHORTHAND_MS)} ms"),
    ("01", f"at t = 400 ms the streaming user already reads \"{lesson01.timeline_view(400).frame.streaming_text}\""),
    ("01", f"Both finish at {ms(RUN.total_ms)} ms"),
    ("01", f"has {AT_2000.tokens_visible} of the 500 tokens on screen"),
    ("01", f"will until {ms(LONG.total_ms)} ms"),
    ("01", f"TTFT {ms(RUN.streaming_first_ms)} → {ms(RUN_LATE.streaming_first_ms)} ms, total {ms(RUN.total_ms)} → {ms(RUN_LATE.total_ms)} ms"),
    ("01", f"2 s of a {s(LONG.total_ms)} s answer keeps {STOP.tokens_generated} tokens and skips {STOP.tokens_saved}"),
    ("01", f"drawn at {ms(FIRST_LINE.streaming_ms)} ms instead of {ms(FIRST_LINE.blocking_ms)} ms"),
    ("01", f"({s(LONG.total_ms)} s → {LONG.streaming_first_ms / 1000:.2f} s for 500 tokens)"),
    ("01", f"about 5 of its {CANCEL_ANSWER_TOKENS} tokens"),
    ("01", f"the {IDLE['blocking'].longest_silence_ms / 1000:.0f} s blocking reply"),
    ("01", f"its wait for the first token, {ms(IDLE['streaming'].longest_silence_ms)} ms (printed as {IDLE['streaming'].longest_silence_ms / 1000:.1f} s)"),
    ("01", f"300 + 500 × 40 = {ms(LONG.total_ms)} ms"),
    # 02 · SSE on the wire
    ("02", f"`18` hex = 1×16 + 8 = {len(LESSON_WIRE[0])} bytes"),
    ("02", f"the {len(LESSON_WIRE[0]) - 2} characters of `{LESSON_WIRE[0].decode().strip()}`"),
    ("02", f"12 + 2 = {len(LESSON_WIRE[-1])}, hex `{len(LESSON_WIRE[-1]):x}`"),
    ("02", f"`d5` is 13×16 + 5 = {0xD5} bytes"),
    ("02", f"{ {4: 'four'}.get(RESPONSES_OPENING, '?') } events open the stream before any text"),
    # 03 · Reading the stream
    ("03", f"the first at {ms(RUN.streaming_first_ms)} ms"),
    ("03", f"with the last token at {ms(RUN.total_ms)} ms"),
    ("03", f"cuts the {len(WORKED)} bytes"),
    ("03", f"cuts after bytes {WORKED_CUTS[0]} and {WORKED_CUTS[1]} are filled in"),
    ("03", f"{len(PRACTICE) + 1} cut positions and 60 chunk sizes"),
    ("03", f"out of {len(PRACTICE) + 1}"),
    ("03", f"too few arrivals for {N_EVENTS_IN_WORDS} events"),
    # 04 · Practice
    ("04", "{}, {} and {} chunks, one answer".format(*(len(network.cut(PRACTICE, n)) for n in (1000, 16, 5)))),
    ("04", f"ends at byte {EVENT_ENDS[0]} and the `\"Your\"` event at byte {EVENT_ENDS[1]}"),
    ("04", f"{ {7: 'seven'}.get(40 - EVENT_ENDS[1], '?') } bytes of the next event"),
    ("04", f"leaves `{lesson04.drop_frame(PRACTICE, 70).text!r}` with `complete=False`"),
    # 05 · Streaming in the real world
    ("05", f"sees nothing until {ms(BUFFERED[-1].at_ms)} ms"),
    ("05", f"failing at {CHUNK_AS_EVENT_ERRORS} of {len(PRACTICE) + 1} cut positions"),
    ("05", f"fails at {ms(LATE.checked_ms)} ms, but the number was on screen from {ms(LATE.streamed_failure_ms)} ms"),
    ("05", f"pays {lesson05.ws_frame_header_bytes(100)} bytes of header per short message"),
    ("05", f"All deltas land in item {DELTA_ITEM}, part {DELTA_PART}"),
    # the course map (the README's lesson tables) and the learning guide's lesson map
    ("00", f"300 + 500 x 40 = {ms(LONG.total_ms)} ms"),
    ("README.md", f"300 + 500 x 40 = {ms(LONG.total_ms)} ms"),
    ("docs/learning.md", f"300 + 500 × 40 = {ms(LONG.total_ms)} ms, {ms(RUN.streaming_first_ms)} / {ms(RUN.total_ms)} ms"),
    # the exercise the timing model is graded in
    ("exercises/ex1", f"need {ms(LONG.total_ms)} ms in all"),
    ("exercises/ex1", f"first token at {ms(RUN.streaming_first_ms)} ms and is done at {ms(RUN.total_ms)} ms"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "phrase"), TYPED, ids=[f"{w}: {p[:40]}" for w, p in TYPED])
def test_every_number_typed_in_the_prose_is_what_lessonkit_computes(where, phrase):
    assert phrase in _prose(where), (
        f"{where}: lessonkit computes the phrase {phrase!r}, which the prose does not contain;"
        " update the number typed there (or the model)"
    )


def test_one_end_of_sequence_model_everywhere_the_eos_pass_is_free():
    """<eos>, the finish reason, [DONE], message_stop and the blocking body all come at 540 ms."""
    eos = lesson01.decode_steps()[-1]
    assert eos.new_token == lesson01.EOS and eos.at_ms == RUN.total_ms
    for dialect in ("lesson", "openai", "anthropic"):
        rows = lesson02.wire_rows(dialect)
        last_text_ms = max(row.at_ms for row in rows if row.delta)
        end_ms = next(row.at_ms for row in rows if row.done)
        assert last_text_ms == end_ms == RUN.total_ms, dialect
    body_ms, _ = llm.blocking_body(ANSWER, "openai")
    assert body_ms == RUN.blocking_first_ms == RUN.total_ms
    assert timeline.render_log(ANSWER.tokens, prefill_ms=300, per_token_ms=40)[-1] == (
        f"[ {ms(RUN.total_ms)} ms] stream closed"
    )


def test_the_total_is_prefill_plus_n_token_times_which_is_ttft_plus_n_minus_one():
    assert LONG.total_ms == 300 + 500 * 40 == LONG.streaming_first_ms + 499 * 40


# ---------------------------------------------------------------------------------------------
# Stored measurements tell the story (real clocks, NBVAL_IGNORE_OUTPUT cells)


def _stdout_of(name: str, needle: str) -> str:
    notebook = _notebook(name)
    cell = next(c for c in notebook.cells if c.cell_type == "code" and needle in c.source)
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def test_the_stored_proxy_measurement_shows_pass_through_before_buffered():
    text = _stdout_of("05", "measure.through_proxies")
    runs = {}
    for line in text.splitlines():
        match = re.match(
            r"(.+?)\s+(\d+) arrivals, first bytes\s+(\d+) ms, first token\s+(\d+) ms, last\s+(\d+) ms",
            line,
        )
        if match:
            name, arrivals, first_bytes, first_token, last = match.groups()
            runs[name.strip()] = (int(arrivals), int(first_bytes), int(first_token), int(last))
    through, buffered = runs["proxy --no-buffer"], runs["proxy --buffer"]
    honoured = runs["--buffer, honours X-Accel-Buffering"]
    assert through[2] < buffered[1], "pass-through's first token must come before buffered bytes"
    assert buffered[0] == 1 and through[0] > 1
    assert through[3] <= buffered[3] + 50, "pass-through must not finish after the buffered run"
    assert honoured[2] < buffered[1]
    assert "the lesson's story holds" in text


def test_the_stored_real_stream_shows_its_first_piece_long_before_the_blocking_reply():
    text = _stdout_of("01", "rawhttp.time_request(target, stream=False")
    blocking = float(re.search(r"blocking : all \d+ characters after\s+(\d+) ms", text).group(1))
    first, last = map(
        float, re.search(r"first piece after\s+(\d+) ms, last after\s+(\d+) ms", text).groups()
    )
    assert first < blocking / 2 and abs(last - blocking) < 0.15 * blocking


def test_the_stored_cancelled_stream_stopped_generating_soon_after_the_hang_up():
    text = _stdout_of("01", "rawhttp.cancel_stream")
    generated = int(re.search(r"the server generated (\d+)", text).group(1))
    assert 5 <= generated <= 6 and f"has {CANCEL_ANSWER_TOKENS} tokens" in text


def test_the_stored_chunked_body_arrived_token_by_token():
    text = _stdout_of("02", "framing.parse_chunked(chunked_body)")
    times = [int(t) for t in re.findall(r"'(\d+)'", text.split("socket reads at", 1)[1])]
    # the head and the role chunk at once, then the tokens one by one from about 340 ms on
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    assert len([t for t in times if t >= 300]) >= 5 and times[0] < 300
    envelope = llm.Envelope(response_id="chatcmpl-000001")
    first_write = list(llm.stream_writes(ANSWER, "openai", envelope=envelope))[0][1]
    assert f"'d5' = {len(first_write)} bytes" in text


@pytest.mark.server
def test_a_warmed_up_proxy_measurement_tells_the_lessons_story_now():
    from lessonkit import serve
    from lessonkit.lab import measure

    body = {"model": "lessonkit-sim", "stream": True,
            "messages": [{"role": "user", "content": llm.RUNNING_PROMPT}]}  # fmt: skip

    def both_paced(runs: dict) -> None:
        for name in ("proxy --no-buffer", "--buffer, honours X-Accel-Buffering"):
            assert_paced([at_ms for at_ms, _ in runs[name].arrivals], 40, name)

    with serve.running(prefill_ms=300, per_token_ms=40) as url:
        runs = paced_in_one_of(lambda: measure.through_proxies(url, body, warmups=1), both_paced)
    # The story as shapes and lower bounds (story_holds, which the lesson prints, also
    # compares two measured times within 50 ms: a busy machine could tell it otherwise).
    buffered = runs["proxy --buffer"]
    for name, run in runs.items():
        assert (run.text, run.complete) == (llm.RUNNING_ANSWER, True), name
    assert len(buffered.arrivals) == 1  # everything in one arrival ...
    assert buffered.first_bytes_ms >= 300 + 5 * 40  # ... once the last token was generated


def test_the_story_check_holds_for_a_paced_run_and_flags_a_late_one():
    from lessonkit.lab.measure import Run, story_holds

    def run(first_token_ms: float, *arrival_ms: float) -> Run:
        """A run whose reads came at arrival_ms, the first text in the read at first_token_ms."""
        arrivals = tuple((at_ms, 10) for at_ms in arrival_ms)
        return Run(arrivals, arrival_ms[0], first_token_ms, arrival_ms[-1], "text", True)

    paced = run(340, 10, 340, 380, 420, 460, 500, 540)
    runs = {"proxy --no-buffer": paced, "proxy --buffer": run(545, 545),
            "--buffer, honours X-Accel-Buffering": paced}  # fmt: skip
    assert story_holds(runs) == []
    assert story_holds({**runs, "proxy --no-buffer": run(560, 10, 560, 600, 640)}) == [
        "pass-through's first token came no earlier than buffered's first bytes",
        "pass-through finished more than 50 ms after the buffered run",
    ]
