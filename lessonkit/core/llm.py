"""A deterministic simulated LLM that writes `(at_ms, bytes)` instead of sleeping.

The model:

    tokenize(text)                  GPT-like pieces: "Your", " order", " ships", ".", " café"
    answer_for(prompt)              the running example's answer, or a seeded longer one
    long_answer(500)                exactly 500 tokens, for the 20,300 ms example
    token_times_ms(n)               token i is ready at prefill_ms + (i + 1) * per_token_ms
    stream_writes(answer, dialect)  every write the server makes, as (at_ms, bytes)
    blocking_body(answer, dialect)  the one JSON body of a non-streaming reply, and when

Each option of a stream is one concern, in one small frozen object:

    Timing(prefill_ms, per_token_ms, jitter_ms, seed)   when the model makes each token
    Envelope(model, created, response_id)               what names the response in its events
    OpenAIOptions(include_usage)                        the "openai" dialect's stream_options
    EventSourceOptions(resume_after_id, retry_ms, end_after_tokens)
                                                        the "eventsource" dialect's reconnects
    ResponsesOptions(max_output_tokens, fail_after_tokens)  the "responses" dialect's
                                                        (its events: lessonkit.core.responses)

Timing of the writes (virtual milliseconds after the request arrived):

- The server sends its response headers at 0 ms and, in the dialects that
  have them, the opening events right away: the OpenAI role chunk
  (`delta: {"role": "assistant", "content": ""}`), Anthropic's `message_start`
  and `content_block_start`, the Responses API's `response.created` ...
  `response.content_part.added`, the `retry:` field of the eventsource flavour.
  They carry no text, so time to first token is unchanged; the client just
  learns early that the stream has started.
- Each token is written at the moment it is generated, `token_times_ms(...)[i]`.
- The end events (OpenAI's final chunk, usage chunk and `[DONE]`, Anthropic's
  `content_block_stop` ... `message_stop`, the lesson's `[DONE]`) follow the last
  token at the same `at_ms` (the Responses API's `response.failed` after the last
  token sent, when a failure is injected): the model's end-of-sequence pass costs nothing
  extra here (a real model spends one more pass on it before it can report
  `stop`; the lesson's simulation, and so this course, counts it as free).
  With no tokens at all they go at `prefill_ms`.
- `heartbeat_ms`: a `: ping` comment whenever `heartbeat_ms` passed with no
  other write, so also during prefill. Comments only: every SSE parser skips
  them. (Anthropic's real stream also sends named `ping` events; exercise 4
  handles those.)

Nothing here sleeps: `lessonkit.server` walks the writes and waits until each
`at_ms` on a real clock; tests and notebooks read them at once.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from lessonkit.core import network, responses, sse, wordbank
from lessonkit.core.dialects import DIALECTS
from lessonkit.core.responses import ResponsesOptions

__all__ = [
    "DIALECTS",
    "RUNNING_ANSWER",
    "RUNNING_PROMPT",
    "Answer",
    "DialectOptions",
    "Envelope",
    "EventSourceOptions",
    "OpenAIOptions",
    "ResponsesOptions",
    "Timing",
    "answer_for",
    "blocking_body",
    "long_answer",
    "stream_writes",
    "token_times_ms",
    "tokenize",
    "wire_bytes",
]

RUNNING_PROMPT = "When will my order arrive?"
RUNNING_ANSWER = "Your order ships on Monday."

FINISH_REASONS = ("stop", "length")
_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens"}

# GPT-2 style pre-tokenizer, written for Python's `re` (no \p{L}):
# English contractions, a word with its leading space, up to three digits,
# one punctuation mark (with its leading space), then runs of whitespace.
_TOKEN = re.compile(
    r"""'(?:[sdmt]|ll|ve|re)"""  # 's 'd 'm 't 'll 've 're
    r"""| ?[^\W\d_]+"""  # letters, any script: " café", " Zürich"
    r"""| ?\d{1,3}"""  # numbers in short groups, as BPE vocabularies do
    r"""| ?[^\s\w]"""  # one punctuation mark or symbol: ".", " (", "é" parts
    r"""| ?_"""
    r"""|\s+(?!\S)"""  # whitespace not followed by a word...
    r"""|\s+""",  # ...so the last space stays with the next word
)


def tokenize(text: str) -> list[str]:
    """Return GPT-like tokens of `text`; joining them gives `text` back exactly.

    Words carry their leading space and punctuation stands alone:
    "Your order ships on Monday." -> ["Your", " order", " ships", " on", " Monday", "."].
    """
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class Answer:
    """A finished answer: its tokens, why it stopped, and the prompt's size in tokens."""

    tokens: tuple[str, ...]
    finish_reason: str = "stop"
    prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if self.finish_reason not in FINISH_REASONS:
            raise ValueError(
                f"finish_reason must be one of {FINISH_REASONS}, got {self.finish_reason!r}"
            )
        object.__setattr__(self, "tokens", tuple(self.tokens))

    @property
    def text(self) -> str:
        """The whole answer as one string."""
        return "".join(self.tokens)

    @property
    def completion_tokens(self) -> int:
        """How many tokens the model generated."""
        return len(self.tokens)

    def usage(self) -> dict[str, int]:
        """Return OpenAI-style usage counts: prompt, completion and total tokens."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


# ---------------------------------------------------------------------------
# Answers: the running example, or sentences from the word bank (lessonkit.core.wordbank).


def _sentence_tokens(rng: random.Random, first: bool) -> list[str]:
    text = wordbank.sentence(rng)
    return tokenize(text if first else " " + text)


def _cut(tokens: list[str], max_tokens: int | None) -> tuple[tuple[str, ...], str]:
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number of at least 1, got {max_tokens!r}")
        if max_tokens < len(tokens):
            return tuple(tokens[:max_tokens]), "length"
    return tuple(tokens), "stop"


def answer_for(prompt: str, max_tokens: int | None = None) -> Answer:
    """Return the simulated model's answer to `prompt` (the same prompt, the same answer).

    The running example's prompt gets the running answer. Any other prompt gets
    40-80 tokens of sentences about orders, shipping and streaming, chosen by a
    seed from zlib.crc32 of the prompt (stable across runs and machines).
    If `max_tokens` stops the answer early, finish_reason is "length".
    """
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, got {type(prompt).__name__}")
    if prompt.strip() == RUNNING_PROMPT:
        tokens = tokenize(RUNNING_ANSWER)
    else:
        rng = random.Random(zlib.crc32(prompt.encode("utf-8")))
        target = rng.randint(40, 80)
        tokens = []
        while len(tokens) < target:
            sentence = _sentence_tokens(rng, first=not tokens)
            if len(tokens) >= 40 and len(tokens) + len(sentence) > 80:
                break  # long enough, and one more sentence would overshoot
            tokens += sentence
    kept, finish_reason = _cut(tokens, max_tokens)
    return Answer(kept, finish_reason, len(tokenize(prompt)))


def long_answer(n_tokens: int, seed: int = 0, *, prompt: str = RUNNING_PROMPT) -> Answer:
    """Return an answer of exactly `n_tokens` tokens (finish_reason "stop"), seeded.

    Made of whole sentences where it fits; the last token is a full stop so the
    text ends cleanly. prompt_tokens counts `prompt`.
    """
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number, 0 or more, got {n_tokens!r}")
    rng = random.Random(seed)
    tokens: list[str] = []
    while len(tokens) < n_tokens:
        tokens += _sentence_tokens(rng, first=not tokens)
    tokens = tokens[:n_tokens]
    if tokens and tokens[-1] != ".":
        tokens[-1] = "."
    return Answer(tuple(tokens), "stop", len(tokenize(prompt)))


def token_times_ms(
    n_tokens: int,
    *,
    prefill_ms: float = 300,
    per_token_ms: float = 40,
    jitter_ms: float = 0,
    seed: int = 0,
) -> list[float]:
    """Return when each token is generated: token i at prefill_ms + (i + 1) * per_token_ms.

    With `jitter_ms`, each token is late by a seeded random 0..jitter_ms, but
    never earlier than the token before it: the model emits tokens in order.
    """
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number, 0 or more, got {n_tokens!r}")
    for name, value in (("prefill_ms", prefill_ms), ("per_token_ms", per_token_ms)):
        if value < 0:
            raise ValueError(f"{name} must be 0 or more, got {value!r}")
    if jitter_ms < 0:
        raise ValueError(f"jitter_ms must be 0 or more, got {jitter_ms!r}")
    rng = random.Random(seed)
    times: list[float] = []
    previous = prefill_ms
    for i in range(n_tokens):
        at_ms = prefill_ms + (i + 1) * per_token_ms  # the lesson's formula, defined here only
        if jitter_ms:
            at_ms += rng.uniform(0.0, jitter_ms)
        previous = max(previous, at_ms)
        times.append(previous)
    return times


@dataclass(frozen=True)
class Timing:
    """When the simulated model makes its tokens: a prefill, then one token per step.

    `token_times_ms(n)` gives the times; jitter_ms makes each token late by a
    seeded random 0..jitter_ms (the same `seed`, the same times).
    """

    prefill_ms: float = 300
    per_token_ms: float = 40
    jitter_ms: float = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prefill_ms", "per_token_ms", "jitter_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a number of ms, 0 or more, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be a whole number, got {self.seed!r}")

    def token_times_ms(self, n_tokens: int) -> list[float]:
        """Return when each of `n_tokens` tokens is generated (see the function token_times_ms)."""
        return token_times_ms(
            n_tokens,
            prefill_ms=self.prefill_ms,
            per_token_ms=self.per_token_ms,
            jitter_ms=self.jitter_ms,
            seed=self.seed,
        )

    def done_ms(self, n_tokens: int) -> float:
        """Return when the whole answer of `n_tokens` tokens exists (prefill_ms if none)."""
        times = self.token_times_ms(n_tokens)
        return times[-1] if times else float(self.prefill_ms)


@dataclass(frozen=True)
class Envelope:
    """What names one response in its events: the model, when it was created, its id.

    With response_id None the id is made from the answer's text ("chatcmpl-sim...",
    "msg_sim..." or "resp_sim..."), so the same answer always gets the same id.
    """

    model: str = "lessonkit-sim"
    created: int = 1_700_000_000
    response_id: str | None = None

    def id_for(self, answer: Answer, dialect: str) -> str:
        """Return the response id the events carry."""
        if self.response_id is not None:
            return self.response_id
        digest = f"{zlib.crc32(answer.text.encode('utf-8')):08x}"
        return _ID_PREFIXES.get(dialect, "chatcmpl-sim") + digest


_ID_PREFIXES = {"anthropic": "msg_sim", "responses": "resp_sim"}


@dataclass(frozen=True)
class OpenAIOptions:
    """The "openai" dialect's option: stream_options.include_usage adds the usage chunk."""

    include_usage: bool = False


@dataclass(frozen=True)
class EventSourceOptions:
    """The "eventsource" dialect's options: where a reconnect resumes, the retry: it sets,
    and where the body ends early.

    resume_after_id is the Last-Event-ID (a token index, int or digits): the
    stream then starts with the token after it. retry_ms None sends no retry: field.
    end_after_tokens N ends the body cleanly once the answer's first N tokens are
    sent, with no `done` event: an EventSource reconnects, and the reconnect (which
    resumes at token N or later) is not cut again. None sends the whole answer.
    """

    resume_after_id: int | str | None = None
    retry_ms: int | None = 3000
    end_after_tokens: int | None = None

    def __post_init__(self) -> None:
        _resume_index(self.resume_after_id)  # refuse a bad id now, with its own message
        retry_ms = self.retry_ms
        if retry_ms is not None and (
            isinstance(retry_ms, bool) or not isinstance(retry_ms, int) or retry_ms < 0
        ):
            raise ValueError(f"retry_ms must be a whole number of ms or None, got {retry_ms!r}")
        end = self.end_after_tokens
        if end is not None and (isinstance(end, bool) or not isinstance(end, int) or end < 1):
            raise ValueError(f"end_after_tokens must be a whole number, 1 or more, got {end!r}")

    def first_index(self, n_tokens: int) -> int:
        """Return the index of the first token to send (Last-Event-ID k: token k + 1)."""
        return min(_resume_index(self.resume_after_id), n_tokens)

    def end_index(self, n_tokens: int) -> int:
        """Return the index after the last token to send: n_tokens, or end_after_tokens
        if the body ends early on this connection (it starts before that token)."""
        end = self.end_after_tokens
        if end is None or end <= self.first_index(n_tokens):
            return n_tokens
        return min(end, n_tokens)


DialectOptions = OpenAIOptions | EventSourceOptions | ResponsesOptions

# Which dialect each options class belongs to; the others take none.
_OPTIONS_FOR = {
    "openai": OpenAIOptions,
    "eventsource": EventSourceOptions,
    "responses": ResponsesOptions,
}


# ---------------------------------------------------------------------------
# The wire: what the server writes, and when.


def _json(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")


def _dialect_options(dialect: str, options: DialectOptions | None) -> DialectOptions | None:
    """Return the options for `dialect` (its defaults if None); refuse another dialect's."""
    wanted = _OPTIONS_FOR.get(dialect)
    if options is None:
        return wanted() if wanted is not None else None
    if type(options) is not wanted:
        owner = next(d for d, cls in _OPTIONS_FOR.items() if isinstance(options, cls))
        raise ValueError(
            f"{type(options).__name__} only applies to the {owner!r} dialect; "
            f"got dialect {dialect!r}"
        )
    return options


def _resume_index(resume_after_id: int | str | None) -> int:
    """Return how many tokens the client already has (Last-Event-ID k means 0..k)."""
    if resume_after_id is None or resume_after_id == "":
        return 0
    if isinstance(resume_after_id, str):
        text = resume_after_id.strip()
        if not (text.isascii() and text.isdigit()):
            raise ValueError(
                f"resume_after_id must be a token index such as '4', got {resume_after_id!r}"
            )
        resume_after_id = int(text)
    if isinstance(resume_after_id, bool) or not isinstance(resume_after_id, int):
        raise ValueError(f"resume_after_id must be an int, got {resume_after_id!r}")
    if resume_after_id < 0:
        raise ValueError(f"resume_after_id must be 0 or more, got {resume_after_id}")
    return resume_after_id + 1


def _openai_chunk(
    delta: dict, finish_reason: str | None, *, rid: str, created: int, model: str, usage: bool
) -> bytes:
    chunk = {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage:  # with stream_options.include_usage every chunk says "usage": null
        chunk["usage"] = None
    return sse.encode(_json(chunk))


def _anthropic_event(obj: dict) -> bytes:
    return sse.encode(_json(obj), event=obj["type"])


@dataclass(frozen=True)
class _Plan:
    """What one stream writes, before times are known: what opens it, one write per token
    sent, and what closes it. ``first_index`` is the first token sent (after a resume)."""

    answer: Answer
    first_index: int
    envelope: Envelope
    rid: str
    options: DialectOptions | None
    end_index: int | None = None  # the body ends before this token (None: the whole answer)

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.answer.tokens[self.first_index : self.end_index]

    @property
    def ends_early(self) -> bool:
        """True if the body ends before the answer does (no end events are sent)."""
        return self.end_index is not None and self.end_index < len(self.answer.tokens)


Writes = tuple[list[bytes], list[bytes], list[bytes]]


def _lesson_writes(plan: _Plan, *, with_ids: bool = False, retry_ms: int | None = None) -> Writes:
    """The lesson dialect: {"delta": t} per token, [DONE]; "eventsource" adds ids and retry."""
    opening, per_token, closing = [], [], []
    if retry_ms is not None:
        # A block with only a retry: field sets the reconnection delay and
        # dispatches nothing (an empty data: line would dispatch "").
        opening.append(f"retry: {retry_ms}\n\n".encode())
    tokens = plan.tokens
    last = len(plan.answer.tokens) - 1
    for offset, token in enumerate(tokens):
        payload: dict = {"delta": token}
        if plan.first_index + offset == last:
            payload["finish_reason"] = plan.answer.finish_reason  # the last token says why
        event_id = str(plan.first_index + offset) if with_ids else None
        per_token.append(sse.encode(_json(payload), id=event_id))
    if not tokens:
        # Nothing left to generate (a resume after the last token): one empty event
        # still carries the finish reason. With ids it repeats the last token's id,
        # so every event has an id and a reconnect from here loses nothing.
        last_id = str(max(plan.first_index - 1, 0)) if with_ids else None
        finish = {"delta": "", "finish_reason": plan.answer.finish_reason}
        closing.append(sse.encode(_json(finish), id=last_id))
    if plan.ends_early:
        return opening, per_token, []  # the body just ends: no done event
    if with_ids:
        closing.append(sse.encode("[DONE]", event="done", id=str(len(plan.answer.tokens))))
    else:
        closing.append(sse.encode("[DONE]"))
    return opening, per_token, closing


def _eventsource_writes(plan: _Plan) -> Writes:
    """The browser flavour of GET /v1/stream: the lesson's events with ids, retry, event: done."""
    assert isinstance(plan.options, EventSourceOptions)
    return _lesson_writes(plan, with_ids=True, retry_ms=plan.options.retry_ms)


def _openai_writes(plan: _Plan) -> Writes:
    """chat.completion.chunk objects: a role chunk, one per token, the finish, usage, [DONE]."""
    assert isinstance(plan.options, OpenAIOptions)
    include_usage = plan.options.include_usage
    envelope = plan.envelope
    common = {"rid": plan.rid, "created": envelope.created, "model": envelope.model}
    common["usage"] = include_usage
    opening = [_openai_chunk({"role": "assistant", "content": ""}, None, **common)]
    per_token = [_openai_chunk({"content": token}, None, **common) for token in plan.tokens]
    closing = [_openai_chunk({}, plan.answer.finish_reason, **common)]
    if include_usage:
        usage_chunk = {
            "id": plan.rid,
            "object": "chat.completion.chunk",
            "created": envelope.created,
            "model": envelope.model,
            "choices": [],
            "usage": plan.answer.usage(),
        }
        closing.append(sse.encode(_json(usage_chunk)))
    closing.append(sse.encode("[DONE]"))
    return opening, per_token, closing


def _anthropic_writes(plan: _Plan) -> Writes:
    """Named events: message_start, content_block_start, one delta per token, ... message_stop."""
    answer = plan.answer
    message = {
        "id": plan.rid,
        "type": "message",
        "role": "assistant",
        "model": plan.envelope.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": answer.prompt_tokens, "output_tokens": 0},
    }
    block = {"type": "text", "text": ""}
    opening = [
        _anthropic_event({"type": "message_start", "message": message}),
        _anthropic_event({"type": "content_block_start", "index": 0, "content_block": block}),
    ]
    per_token = [
        _anthropic_event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        )
        for t in plan.tokens
    ]
    stop = {"stop_reason": _ANTHROPIC_STOP[answer.finish_reason], "stop_sequence": None}
    closing = [
        _anthropic_event({"type": "content_block_stop", "index": 0}),
        _anthropic_event(
            {
                "type": "message_delta",
                "delta": stop,
                "usage": {"output_tokens": answer.completion_tokens},
            }
        ),
        _anthropic_event({"type": "message_stop"}),
    ]
    return opening, per_token, closing


def _responses_writes(plan: _Plan) -> Writes:
    """The Responses API's typed events (lessonkit.core.responses)."""
    assert isinstance(plan.options, ResponsesOptions)
    envelope = plan.envelope
    return responses.writes(plan.answer, rid=plan.rid, created_at=envelope.created,
                            model=envelope.model, options=plan.options)  # fmt: skip


# Each dialect's writer, as h11 keeps its readers in a table.
_WRITERS = {
    "lesson": _lesson_writes,
    "eventsource": _eventsource_writes,
    "openai": _openai_writes,
    "anthropic": _anthropic_writes,
    "responses": _responses_writes,
}


def stream_writes(
    answer: Answer,
    dialect: str,
    *,
    timing: Timing = Timing(),
    envelope: Envelope = Envelope(),
    options: DialectOptions | None = None,
    heartbeat_ms: float | None = None,
) -> Iterator[tuple[float, bytes]]:
    """Yield every write of a streamed answer as (at_ms, bytes), in order; never sleeps.

    Dialects: "lesson" (`data: {"delta": t}` ... `data: [DONE]`), "openai"
    (chat.completion.chunk objects, optional usage chunk, `[DONE]`), "anthropic"
    (named events message_start ... message_stop) and "eventsource" (the
    lesson's events with `id: <token index>`, a leading `retry:` and a final
    `event: done`). In "lesson" and "eventsource" the last token's event also
    carries "finish_reason". Anthropic always reports usage.
    "responses": the Responses API's typed events (lessonkit.core.responses), with
    ResponsesOptions(max_output_tokens=..., fail_after_tokens=...) as its options.

    `timing` says when each token is made, `envelope` what names the response,
    `options` is the dialect's own: OpenAIOptions(include_usage=...) for
    "openai", EventSourceOptions(resume_after_id=..., retry_ms=...) for
    "eventsource". A resume skips tokens 0..resume_after_id: the server reads
    the prompt plus the text already sent (a new prefill) and generates the
    rest, so the reconnect has no gap and no duplicate; end_after_tokens ends
    the body early, with no end events. `heartbeat_ms` adds
    `: ping` comments in any dialect. See the module docstring for when each
    write happens.
    """
    _check_dialect(dialect)
    options = _dialect_options(dialect, options)
    if heartbeat_ms is not None and heartbeat_ms <= 0:
        raise ValueError(
            f"heartbeat_ms must be a positive number of ms or None, got {heartbeat_ms!r}"
        )
    first_index, end_index = 0, len(answer.tokens)
    if isinstance(options, EventSourceOptions):
        first_index = options.first_index(len(answer.tokens))
        end_index = options.end_index(len(answer.tokens))
    times = timing.token_times_ms(end_index - first_index)
    rid = envelope.id_for(answer, dialect)
    plan = _Plan(answer, first_index, envelope, rid, options, end_index)
    opening, per_token, closing = _WRITERS[dialect](plan)
    times = times[: len(per_token)]  # a stream that fails part way sends fewer tokens
    end_ms = times[-1] if times else float(timing.prefill_ms)
    schedule = [(0.0, data) for data in opening]
    schedule += list(zip(times, per_token, strict=True))
    schedule += [(end_ms, data) for data in closing]

    if heartbeat_ms is None:
        yield from schedule
    else:  # the headers went out at 0 ms: the silence is counted from there
        yield from network.with_heartbeats(schedule, heartbeat_ms=heartbeat_ms, ping=sse.comment())


def wire_bytes(
    answer: Answer,
    dialect: str,
    *,
    timing: Timing = Timing(),
    envelope: Envelope = Envelope(),
    options: DialectOptions | None = None,
    heartbeat_ms: float | None = None,
) -> bytes:
    """Return all bytes of a streamed answer joined, as a recording of the wire.

    The options are stream_writes' own.
    """
    same = {
        "timing": timing,
        "envelope": envelope,
        "options": options,
        "heartbeat_ms": heartbeat_ms,
    }
    return b"".join(data for _, data in stream_writes(answer, dialect, **same))


def blocking_body(
    answer: Answer,
    dialect: str,
    *,
    timing: Timing = Timing(),
    envelope: Envelope = Envelope(),
    options: ResponsesOptions | None = None,
) -> tuple[float, bytes]:
    """Return (at_ms when the whole answer exists, the JSON body of a non-streaming reply).

    "openai": a chat.completion object; "anthropic": a message object; "responses":
    a Response object (`options`: ResponsesOptions, the only dialect with options here);
    "lesson": {"text", "finish_reason", "usage"}. Nothing can be sent before
    the last token is generated: at_ms = prefill_ms + n_tokens * per_token_ms
    (later with jitter: the last token's time).
    """
    _check_dialect(dialect)
    if options is not None and dialect != "responses":
        raise ValueError(f"a blocking reply takes options only in 'responses', not {dialect!r}")
    at_ms = timing.done_ms(len(answer.tokens))
    rid = envelope.id_for(answer, dialect)
    created, model = envelope.created, envelope.model
    if dialect == "openai":
        body: dict = {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.text, "refusal": None},
                    "finish_reason": answer.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": answer.usage(),
        }
    elif dialect == "anthropic":
        body = {
            "id": rid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer.text}],
            "stop_reason": _ANTHROPIC_STOP[answer.finish_reason],
            "stop_sequence": None,
            "usage": {
                "input_tokens": answer.prompt_tokens,
                "output_tokens": answer.completion_tokens,
            },
        }
    elif dialect == "responses":
        options = options or ResponsesOptions()
        body = responses.response_object(answer, rid=rid, created_at=created, model=model,
                                         options=options)  # fmt: skip
        if options.fails(len(answer.tokens)):  # the failure comes with its last token
            at_ms = timing.done_ms(options.fail_after_tokens or 0)
    elif dialect == "lesson":
        body = {"text": answer.text, "finish_reason": answer.finish_reason, "usage": answer.usage()}
    else:
        raise ValueError(
            "'eventsource' is a streaming-only dialect (EventSource cannot read one JSON body); "
            "use 'lesson' for a blocking reply"
        )
    return at_ms, _json(body).encode("utf-8")
