"""Lesson 01, why streaming: the state behind its explorers (state in, state out).

    decode_steps, decode_step_text,         the prefill/decode loop, one pass per token
      decode_readouts
    timeline_view, timeline_panes,          the timeline explorer: what each user sees at t
      timeline_text, timeline_readouts
    cancel_view, cancel_text,               stop early: tokens, time and money saved
      cancel_readouts
    idle_report, idle_text                  proxy idle timeouts and heartbeats
    decode_speed, decode_speed_text         tokens per second and words a minute
    fit_timing                              a measured stream's prefill and per-token times
    line_ready_times                        render sooner: when each markdown line is safe

Pure: no widgets, no clocks. Each ``*_readouts`` function is one explorer's whole state
for its controls' values, by name (what lessonkit.lab.binding.bind shows; tests call the
same functions); it draws with lessonkit.lab.views and lessonkit.lab.svg.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lessonkit.core import llm, timeline
from lessonkit.lab import svg, views

EOS = "<eos>"  # the end-of-sequence token, drawn the way a model vocabulary names it


SPINNER = "◐◓◑◒"  # one quarter turn per 100 ms of virtual time


def _tail(text: str, max_chars: int) -> str:
    """Return the last `max_chars` characters of `text`, with "…" in front when cut."""
    return text if len(text) <= max_chars else "…" + text[-max_chars:]


def _spinner(t_ms: float) -> str:
    return SPINNER[int(t_ms // 100) % len(SPINNER)]


@dataclass(frozen=True)
class DecodeStep:
    """One forward pass of the model: what it reads and the one token it writes.

    `phase` is "prefill" for the pass over the whole prompt, then "decode".
    `stop_reason` is None while the loop goes on, "eos" when the model writes
    the end-of-sequence token, "length" when max_tokens stops it.
    """

    index: int
    phase: str
    prompt: tuple[str, ...]
    generated: tuple[str, ...]
    new_token: str
    at_ms: float
    stop_reason: str | None = None

    @property
    def reads(self) -> int:
        """How many tokens this pass reads (the prompt plus everything generated so far)."""
        return len(self.prompt) + len(self.generated)


def decode_steps(
    prompt: str = llm.RUNNING_PROMPT,
    *,
    max_tokens: int | None = None,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
) -> list[DecodeStep]:
    """Return every pass of the decode loop for `prompt`, ending at <eos> or max_tokens.

    Token i exists at prefill_ms + (i + 1) * per_token_ms (the lesson's model).
    When the model stops by itself, one more pass writes <eos>. A real model spends
    one more pass on it; the course's timing model (llm.token_times_ms, the lesson's
    simulation) counts that pass as free, so <eos> is written at the last token's
    time, and the finish reason, [DONE] and the blocking body all go out then too.
    """
    answer = llm.answer_for(prompt, max_tokens)
    prompt_tokens = tuple(llm.tokenize(prompt))
    times = llm.token_times_ms(len(answer.tokens), prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    steps = []
    for i, token in enumerate(answer.tokens):
        last = i == len(answer.tokens) - 1
        steps.append(
            DecodeStep(
                index=i,
                phase="prefill" if i == 0 else "decode",
                prompt=prompt_tokens,
                generated=answer.tokens[:i],
                new_token=token,
                at_ms=times[i],
                stop_reason="length" if last and answer.finish_reason == "length" else None,
            )
        )
    if answer.finish_reason == "stop":
        n = len(answer.tokens)
        steps.append(
            DecodeStep(
                index=n,
                phase="prefill" if n == 0 else "decode",
                prompt=prompt_tokens,
                generated=answer.tokens,
                new_token=EOS,
                at_ms=float(times[-1]) if times else float(prefill_ms),
                stop_reason="eos",
            )
        )
    return steps


def decode_step_text(step: DecodeStep) -> str:
    """Return one line describing a pass: what it reads, what it writes, when."""
    how = "reads the whole prompt at once" if step.phase == "prefill" else "reads"
    line = (
        f"pass {step.index:>2} ({step.phase:<7}) {how} {step.reads:>2} tokens"
        f" -> writes {step.new_token!r:<10} at {step.at_ms:>5.0f} ms"
    )
    if step.stop_reason == "eos":
        line += "  (end of sequence, free in this model: the loop stops)"
    elif step.stop_reason == "length":
        line += "  (max_tokens reached: the loop stops)"
    return line


def decode_readouts(index: int, *, steps: Sequence[DecodeStep]) -> dict[str, Any]:
    """Return what the decode-loop player shows for pass `index`: the boxes and the pass in words."""
    step = steps[max(0, min(index, len(steps) - 1))]
    caption = decode_step_text(step)
    return {"view": views.Html(views.decode_step_html(step, caption)), "text": caption}


def explorer_tokens(n_tokens: int) -> tuple[str, ...]:
    """Return `n_tokens` tokens: the running answer's first ones, or a longer seeded answer."""
    running = tuple(llm.tokenize(llm.RUNNING_ANSWER))
    if n_tokens <= len(running):
        return running[:n_tokens]
    return llm.long_answer(n_tokens).tokens


@dataclass(frozen=True)
class TimelineView:
    """What the timeline explorer shows at time t: both screens, both numbers, all arrivals."""

    t_ms: float
    prefill_ms: float
    per_token_ms: float
    n_tokens: int
    latency_ms: float
    frame: timeline.Frame
    timings: timeline.Timings
    arrival_ms: tuple[float, ...]  # when each token becomes visible when streaming

    @property
    def t_max_ms(self) -> float:
        """A good end for the time slider: the total time plus a little room."""
        return timeline_t_max_ms(self.prefill_ms, self.per_token_ms, self.n_tokens, self.latency_ms)


def timeline_t_max_ms(
    prefill_ms: float, per_token_ms: float, n_tokens: int, latency_ms: float = 0
) -> float:
    """Return the end of the time axis: total time plus 10% (at least 100 ms) of room."""
    total = timeline.response_times(prefill_ms, per_token_ms, n_tokens, latency_ms).total_ms
    return float(total + max(100.0, 0.1 * total))


def timeline_view(
    t_ms: float,
    *,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
    n_tokens: int = 6,
    latency_ms: float = 0,
) -> TimelineView:
    """Return what a user sees at `t_ms` with and without streaming, plus TTFT and total time."""
    tokens = explorer_tokens(n_tokens)
    times = timeline.visible_times_ms(
        n_tokens, prefill_ms=prefill_ms, per_token_ms=per_token_ms, latency_ms=latency_ms
    )
    return TimelineView(
        t_ms=float(t_ms),
        prefill_ms=prefill_ms,
        per_token_ms=per_token_ms,
        n_tokens=n_tokens,
        latency_ms=latency_ms,
        frame=timeline.frame(
            t_ms,
            list(tokens),
            prefill_ms=prefill_ms,
            per_token_ms=per_token_ms,
            latency_ms=latency_ms,
        ),
        timings=timeline.response_times(prefill_ms, per_token_ms, n_tokens, latency_ms),
        arrival_ms=tuple(times),
    )


def _timeline_lines(view: TimelineView) -> dict[str, str]:
    """Return the timeline's five lines of text by name: t, ttft, blocking, total, visible."""
    timings = view.timings
    return {
        "t": f"t = {view.t_ms:,.0f} ms",
        "ttft": f"streaming: first token at {timings.streaming_first_ms:,.0f} ms",
        "blocking": f"blocking: first text at {timings.blocking_first_ms:,.0f} ms",
        "total": f"both finish at {timings.total_ms:,.0f} ms",
        "visible": f"{view.frame.tokens_visible} of {view.n_tokens} tokens on screen",
    }


def round_step(step: int) -> int:
    """Return the largest 1, 2 or 5 x 10^k that is <= step (at least 1).

    A round slider step keeps round start values (t = 400 ms) on the slider's grid, so the
    browser does not snap them to a neighbour.
    """
    best = 1
    scale = 1
    while scale <= step:
        for factor in (1, 2, 5):
            if factor * scale <= step:
                best = factor * scale
        scale *= 10
    return best


def timeline_readouts(
    t_ms: int,
    *,
    prefill_ms: int = 300,
    per_token_ms: int = 40,
    n_tokens: int = 6,
    latency_ms: int = 0,
) -> dict[str, Any]:
    """Return everything the timeline explorer shows for these slider values, by name.

    The five lines (t, ttft, blocking, total, visible), both screens, the SVG plot, the
    time slider's end and step (t_max, t_step) and the time it shows (t_ms: the asked time,
    or the end of the axis when that is earlier), and the frame as text (text).
    """
    speeds = {"prefill_ms": prefill_ms, "per_token_ms": per_token_ms, "n_tokens": n_tokens}
    t_max = int(timeline_t_max_ms(latency_ms=latency_ms, **speeds))
    view = timeline_view(min(t_ms, t_max), latency_ms=latency_ms, **speeds)
    return {
        **_timeline_lines(view),
        "screens": views.Html(views.timeline_panes_html(*timeline_panes(view))),
        "plot": svg.timeline_svg(view),
        "t_max": t_max,
        "t_step": round_step(t_max // 100),
        "t_ms": min(t_ms, t_max),
        "text": timeline_text(view),
    }


def _screen(text: str, done: bool, t_ms: float, *, max_chars: int) -> str:
    if done:
        return _tail(text, max_chars)
    if not text:
        return f"{_spinner(t_ms)} waiting…"
    return _tail(text, max_chars) + "▌"


def timeline_panes(view: TimelineView, *, max_chars: int = 160) -> tuple[str, str]:
    """Return the (blocking, streaming) screen texts at view.t_ms: spinner, cursor or full text."""
    frame = view.frame
    blocking = _screen(frame.blocking_text, frame.blocking_done, view.t_ms, max_chars=max_chars)
    streaming = _screen(frame.streaming_text, frame.streaming_done, view.t_ms, max_chars=max_chars)
    return blocking, streaming


def timeline_text(view: TimelineView) -> str:
    """Return a plain-text frame of the explorer (its twin for nbval, nbconvert and PDF)."""
    blocking, streaming = timeline_panes(view, max_chars=70)
    r = _timeline_lines(view)
    return "\n".join(
        [
            f"{r['t']}  (phase: {view.frame.phase}; {r['visible']})",
            f"  blocking  | {blocking}",
            f"  streaming | {streaming}",
            f"  {r['ttft']}; {r['blocking']}; {r['total']}",
        ]
    )


@dataclass(frozen=True)
class CancelView:
    """What cancelling a stream at `cancel_at_ms` saves: tokens, time and money."""

    cancel_at_ms: float
    n_tokens: int
    tokens_generated: int
    seen_text: str
    generation_ms_saved: float
    usd_per_million_tokens: float

    @property
    def tokens_saved(self) -> int:
        """Tokens the model never had to generate."""
        return self.n_tokens - self.tokens_generated

    def usd_per_thousand_answers(self, tokens: int) -> float:
        """Return what `tokens` output tokens cost per 1,000 answers at the given price."""
        return tokens * self.usd_per_million_tokens / 1_000_000 * 1_000


def cancel_view(
    cancel_at_ms: float,
    *,
    n_tokens: int = 500,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
    usd_per_million_tokens: float = 10.0,
) -> CancelView:
    """Return the savings when the user stops the stream at `cancel_at_ms`.

    A server that notices the disconnect stops generating: tokens generated up
    to the cancel time are paid for, the rest are never produced.
    """
    tokens = explorer_tokens(n_tokens)
    generated, _ = timeline.cancel_savings(n_tokens, cancel_at_ms, prefill_ms, per_token_ms)
    total_ms = timeline.response_times(prefill_ms, per_token_ms, n_tokens).total_ms
    return CancelView(
        cancel_at_ms=float(cancel_at_ms),
        n_tokens=n_tokens,
        tokens_generated=generated,
        seen_text="".join(tokens[:generated]),
        generation_ms_saved=max(0.0, total_ms - cancel_at_ms),
        usd_per_million_tokens=usd_per_million_tokens,
    )


def _cancel_lines(view: CancelView) -> dict[str, str]:
    """Return the stop-early lines of text by name: seen, generated, saved, time, cost."""
    spent = view.usd_per_thousand_answers(view.tokens_generated)
    saved = view.usd_per_thousand_answers(view.tokens_saved)
    return {
        "seen": f"the user saw: {_tail(view.seen_text, 90)!r}",
        "generated": f"generated before the stop: {view.tokens_generated} of {view.n_tokens} tokens",
        "saved": f"never generated: {view.tokens_saved} tokens",
        "time": (
            f"generation time avoided: {view.generation_ms_saved / 1000:,.1f} s"
            " (this answer's remaining decode time)"
        ),
        "cost": (
            f"per 1,000 answers at ${view.usd_per_million_tokens:g} per million output tokens:"
            f" ${spent:,.2f} spent, ${saved:,.2f} saved"
        ),
    }


def cancel_text(view: CancelView) -> str:
    """Return a plain-text summary of a cancel point (the explorer's headless twin)."""
    r = _cancel_lines(view)
    return "\n".join(
        [f"stop at {view.cancel_at_ms:,.0f} ms"]
        + [f"  {r[k]}" for k in ("seen", "generated", "saved", "time", "cost")]
    )


def cancel_readouts(
    cancel_at_ms: int,
    usd_per_million_tokens: float = 10.0,
    *,
    n_tokens: int = 500,
    prefill_ms: int = 300,
    per_token_ms: int = 40,
) -> dict[str, Any]:
    """Return everything the stop-early explorer shows for a stop time and a price, by name.

    The five lines (seen, generated, saved, time, cost), the SVG bar (plot) and the
    summary as text (text).
    """
    view = cancel_view(
        cancel_at_ms,
        n_tokens=n_tokens,
        prefill_ms=prefill_ms,
        per_token_ms=per_token_ms,
        usd_per_million_tokens=usd_per_million_tokens,
    )
    return {**_cancel_lines(view), "plot": svg.cancel_svg(view), "text": cancel_text(view)}


@dataclass(frozen=True)
class IdleReport:
    """The silences in one response, as an idle-timeout proxy sees them."""

    write_ms: tuple[float, ...]  # when each write left the server
    is_heartbeat: tuple[bool, ...]  # True for writes that are only `:` comments
    longest_silence_ms: float
    idle_timeout_ms: float
    cut_at_ms: float | None  # when the proxy gives up, or None if bytes kept flowing

    @property
    def heartbeats(self) -> int:
        """How many writes were heartbeat comments."""
        return sum(self.is_heartbeat)


def idle_report(
    writes: Iterable[tuple[float, bytes]], *, idle_timeout_ms: float, start_ms: float = 0.0
) -> IdleReport:
    """Return the longest silence in `writes` and when a proxy with `idle_timeout_ms` cuts it.

    The proxy's clock starts at `start_ms` (the request) and restarts at every
    byte; a silence longer than idle_timeout_ms closes the connection.
    """
    write_ms: list[float] = []
    beats: list[bool] = []
    for at_ms, data in writes:
        write_ms.append(float(at_ms))
        beats.append(data.startswith(b":"))
    longest, cut_at, last = 0.0, None, float(start_ms)
    for at_ms in write_ms:
        gap = at_ms - last
        if cut_at is None and gap > idle_timeout_ms:
            cut_at = last + idle_timeout_ms
        longest = max(longest, gap)
        last = at_ms
    return IdleReport(tuple(write_ms), tuple(beats), longest, float(idle_timeout_ms), cut_at)


def idle_text(label: str, report: IdleReport) -> str:
    """Return one line: the longest silence, heartbeats sent, and whether the proxy cut it."""
    verdict = (
        f"CUT by the proxy at {report.cut_at_ms / 1000:,.0f} s"
        if report.cut_at_ms is not None
        else "bytes kept flowing: not cut"
    )
    return (
        f"{label:<28} longest silence {report.longest_silence_ms / 1000:6.1f} s,"
        f" {report.heartbeats:>2} heartbeats -> {verdict}"
    )


WORDS_PER_TOKEN = 0.75  # about 3/4 of an English word per token (OpenAI's rule of thumb)


def decode_speed(per_token_ms: float) -> tuple[float, float]:
    """Return (tokens per second, English words per minute) at one token every per_token_ms."""
    tokens_per_second = 1000 / per_token_ms
    return tokens_per_second, tokens_per_second * 60 * WORDS_PER_TOKEN


def decode_speed_text(per_token_ms: float) -> str:
    """Return "25 tokens per second, about 1,125 words a minute" for a per-token time."""
    tokens_per_second, words_per_minute = decode_speed(per_token_ms)
    return (
        f"{tokens_per_second:.0f} tokens per second, about {words_per_minute:,.0f} words a minute"
    )


def fit_timing(arrival_ms: Iterable[float]) -> tuple[float, float]:
    """Return (prefill_ms, per_token_ms) of the lesson's formula fitted to measured arrivals.

    per_token_ms is the median gap between pieces; prefill_ms is what is left of
    the first arrival: ttft - per_token_ms (the formula's first token).
    """
    times = sorted(arrival_ms)
    if not times:
        raise ValueError("no arrivals to fit: the reply had no text")
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    per_token = gaps[len(gaps) // 2] if gaps else 0.0
    return max(0.0, times[0] - per_token), per_token


@dataclass(frozen=True)
class LineReady:
    """When one finished line of a markdown answer can be rendered, streaming vs blocking."""

    line: str
    streaming_ms: float
    blocking_ms: float


MARKDOWN_TOKENS = (
    "**", "Order", " 1042", "**", "\n",
    "-", " Ships", " on", " Monday", "\n",
    "-", " Arrives", " Wednesday", "\n",
    "-", " Track", " it", " at", " /", "orders", "/", "1042", "\n",
)  # fmt: skip


def line_ready_times(
    tokens: Iterable[str] = MARKDOWN_TOKENS, *, prefill_ms: float = 300, per_token_ms: float = 40
) -> list[LineReady]:
    """Return each complete line with the time a front end can render it, streaming and blocking.

    A line is safe to render as markdown once its newline arrives; blocking
    delivers every line at the end.
    """
    tokens = list(tokens)
    times = llm.token_times_ms(len(tokens), prefill_ms=prefill_ms, per_token_ms=per_token_ms)
    end_ms = times[-1] if times else float(prefill_ms)
    ready, line = [], ""
    for token, at_ms in zip(tokens, times, strict=True):
        line += token
        while "\n" in line:
            done, line = line.split("\n", 1)
            ready.append(LineReady(done, at_ms, end_ms))
    if line:
        ready.append(LineReady(line, end_ms, end_ms))
    return ready
