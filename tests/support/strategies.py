"""Named Hypothesis strategies for the wire format (owner: wire-core; others may append)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from lessonkit.core.sse import comment, encode

# --- raw SSE-ish bytes ---------------------------------------------------------

# Pieces that make the decoder's corner cases likely when joined at random:
# field names with and without colon/space, every line end, BOM, NUL, digits
# that int() accepts but the spec does not, multi-byte and invalid UTF-8, and
# characters str.splitlines would (wrongly) treat as line ends.
SSE_FRAGMENTS = [
    b"data",
    b"data:",
    b"data: ",
    b"data ",
    b"event:",
    b"event: ",
    b"id:",
    b"id: ",
    b"retry:",
    b"retry: ",
    b":",
    b": ping",
    b" ",
    b"\r",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"\xef\xbb\xbf",  # BOM
    b"\x00",
    b"7",
    b"42",
    b"+5",
    "\u0661\u0662".encode(),  # Arabic-Indic digits
    b"x",
    b"hello",
    b"[DONE]",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    "\u2028".encode(),  # LINE SEPARATOR: not a line end in SSE
    "\x85".encode(),  # NEXT LINE: not a line end in SSE
    b"\x1c",
    b"\xff",  # never valid in UTF-8
    b"\xe2\x82",  # a cut euro sign
]

sse_bytes = st.lists(st.sampled_from(SSE_FRAGMENTS), max_size=40).map(b"".join)
"""Bytes built from SSE fragments: mostly well-formed lines, with every corner case."""

wire_like_bytes = st.one_of(sse_bytes, st.binary(max_size=200))
"""SSE fragments or completely arbitrary bytes."""


@st.composite
def chunkings(draw: st.DrawFn, data: bytes, max_cuts: int = 12) -> list[bytes]:
    """Return ``data`` cut at drawn positions, empty chunks included (repeated positions)."""
    positions = draw(st.lists(st.integers(0, len(data)), max_size=max_cuts))
    positions.sort()
    bounds = [0, *positions, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@st.composite
def bytes_and_chunks(draw: st.DrawFn, data_strategy=wire_like_bytes) -> tuple[bytes, list[bytes]]:
    """Return (data, a random chunking of data)."""
    data = draw(data_strategy)
    return data, draw(chunkings(data))


# --- answers and their wires -----------------------------------------------------

token_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # any text except lone surrogates
    min_size=1,
    max_size=8,
)
"""One token's text: any Unicode, including CR, LF, U+2028, emoji and quotes."""

token_lists = st.lists(token_text, max_size=12)
"""The tokens of an answer (possibly empty)."""

finish_reasons = st.sampled_from(["stop", "length", "end_turn", "max_tokens"])


def build_wire(
    tokens: list[str],
    dialect: str,
    *,
    finish_reason: str = "stop",
    heartbeat: bool = False,
    usage: dict | None = None,
) -> bytes:
    """Return the bytes of a complete stream of ``tokens`` in ``dialect``, built with encode."""
    ping = comment() if heartbeat else b""
    parts: list[bytes] = []
    if dialect in ("lesson", "eventsource"):
        if dialect == "eventsource":
            parts.append(b"retry: 3000\n\n")  # a block without data: sets retry only
        for i, token in enumerate(tokens):
            fields = {"delta": token}
            if i == len(tokens) - 1:
                fields["finish_reason"] = finish_reason
            ident = str(i) if dialect == "eventsource" else None
            parts += [ping, encode(json.dumps(fields), id=ident)]
        if dialect == "eventsource":
            parts.append(encode("[DONE]", event="done", id=str(len(tokens))))
        else:
            parts.append(encode("[DONE]"))
    elif dialect == "openai":

        def chunk(delta: dict, finish: str | None) -> bytes:
            obj = {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return encode(json.dumps(obj))

        parts.append(chunk({"role": "assistant", "content": ""}, None))
        for token in tokens:
            parts += [ping, chunk({"content": token}, None)]
        parts.append(chunk({}, finish_reason))
        if usage is not None:
            parts.append(
                encode(
                    json.dumps({"object": "chat.completion.chunk", "choices": [], "usage": usage})
                )
            )
        parts.append(encode("[DONE]"))
    elif dialect == "anthropic":

        def event(kind: str, **fields: object) -> bytes:
            return encode(json.dumps({"type": kind, **fields}), event=kind)

        start_usage = {"input_tokens": 3, "output_tokens": 0}
        parts.append(event("message_start", message={"content": [], "usage": start_usage}))
        parts.append(
            event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        )
        parts.append(event("ping"))
        for token in tokens:
            parts += [
                ping,
                event("content_block_delta", index=0, delta={"type": "text_delta", "text": token}),
            ]
        parts.append(event("content_block_stop", index=0))
        parts.append(
            event(
                "message_delta",
                delta={"stop_reason": finish_reason, "stop_sequence": None},
                usage={"output_tokens": len(tokens)},
            )
        )
        parts.append(event("message_stop"))
    elif dialect == "responses":
        parts += _responses_events(tokens, finish_reason, ping, usage)
    else:
        raise ValueError(f"unknown dialect {dialect!r}")
    return b"".join(parts)


def _responses_events(
    tokens: list[str], finish_reason: str, ping: bytes, usage: dict | None
) -> list[bytes]:
    """Return a Responses API stream of ``tokens``, written from OpenAI's documented events.

    "stop" ends with response.completed; any other finish reason with response.incomplete,
    "length" as the API says it (incomplete_details.reason "max_output_tokens"). Each delta
    carries an ``obfuscation`` field, as OpenAI's do by default.
    """
    numbers = iter(range(10_000))

    def event(kind: str, **fields: object) -> bytes:
        body = {"type": kind, "sequence_number": next(numbers), **fields}
        return encode(json.dumps(body), event=kind)

    def response(status: str, output: list) -> dict:
        return {"id": "resp_test", "object": "response", "created_at": 1, "model": "m",
                "status": status, "output": output, "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [], "usage": usage}  # fmt: skip

    text = "".join(tokens)
    where = {"item_id": "msg_test", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    item = {"id": "msg_test", "type": "message", "role": "assistant", "status": "in_progress",
            "content": []}  # fmt: skip
    parts = [
        event("response.created", response=response("in_progress", [])),
        event("response.in_progress", response=response("in_progress", [])),
        event("response.output_item.added", output_index=0, item=item),
        event("response.content_part.added", **where, part=part),
    ]
    for i, token in enumerate(tokens):
        padding = "x" * (i % 7)  # random characters in the real stream
        parts += [ping, event("response.output_text.delta", **where, delta=token,
                              logprobs=[], obfuscation=padding)]  # fmt: skip
    done_part = {**part, "text": text}
    status = "completed" if finish_reason == "stop" else "incomplete"
    done_item = {**item, "status": status, "content": [done_part]}
    parts += [
        event("response.output_text.done", **where, text=text, logprobs=[]),
        event("response.content_part.done", **where, part=done_part),
        event("response.output_item.done", output_index=0, item=done_item),
    ]
    final = response(status, [done_item])
    if status == "incomplete":
        reason = "max_output_tokens" if finish_reason == "length" else finish_reason
        final["incomplete_details"] = {"reason": reason}
    parts.append(event(f"response.{status}", response=final))
    return parts


def sim_answers() -> st.SearchStrategy:
    """Return a strategy of lessonkit.core.llm.Answer with arbitrary tokens (for stream_writes)."""
    from lessonkit.core.llm import FINISH_REASONS, Answer

    return st.builds(
        Answer,
        tokens=token_lists.map(tuple),
        finish_reason=st.sampled_from(FINISH_REASONS),
        prompt_tokens=st.integers(0, 50),
    )


# --- streams on which httpx-sse is known to follow the spec ---------------------------

# httpx's LineDecoder splits like str.splitlines, so keep those characters out.
_SPLITLINES_EXTRA = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
field_text = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\n\x00" + _SPLITLINES_EXTRA
    ),
    max_size=12,
)
"""A field value: one line of any text (no NUL, nothing splitlines would split on)."""


@st.composite
def plain_streams(draw: st.DrawFn) -> bytes:
    """Return a stream without httpx-sse's known quirks (STYLE.md section 3).

    Every block has at least one data line (so no data-less block after an id,
    no block with only an event field); no BOM; no retry; comments allowed.
    """
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    blocks = []
    for _ in range(draw(st.integers(0, 6))):
        lines = []
        if draw(st.booleans()):
            lines.append(": " + draw(field_text))
        if draw(st.booleans()):
            lines.append("event: " + draw(field_text))
        if draw(st.booleans()):
            lines.append("id: " + draw(field_text))
        for value in draw(st.lists(field_text, min_size=1, max_size=3)):
            lines.append(draw(st.sampled_from(["data: ", "data:"])) + value)
        lines = draw(st.permutations(lines))
        blocks.append(end.join(lines) + end + end)
    return "".join(blocks).encode()


# --- token streams: mostly one `data: ` line per event -------------------------------


@st.composite
def token_streams(draw: st.DrawFn) -> bytes:
    """Return a stream shaped like an LLM's: mostly ``data: <text>`` + blank line blocks.

    Now and then a block carries an id, event or retry line, a comment, a second
    data line, ``data:`` without its space, or a blank line too many, and the line
    ends are LF, CRLF or CR: so the decoder's shortcut for token streams meets
    every way such a stream can stop being one.
    """
    end = draw(st.sampled_from(["\n", "\n", "\n", "\r\n", "\r"]))
    blocks = []
    for _ in range(draw(st.integers(0, 12))):
        lines = ["data: " + draw(field_text)]
        extra = draw(
            st.sampled_from(
                [None] * 6 + ["id: 7", "event: x", "retry: 5", ": ping", "data: more", "data:"]
            )
        )
        if extra is not None:
            lines.insert(draw(st.integers(0, 1)), extra)
        if draw(st.integers(0, 9)) == 0:
            lines.append("")  # a blank line too many: dispatches nothing
        blocks.append(end.join(lines) + end + end)
    return "".join(blocks).encode()


# --- streams with an event over max_event_bytes ------------------------------------------

limits = st.one_of(st.integers(1, 80), st.just(1 << 20))
"""A max_event_bytes: small enough to be reached by the fragments above, or the default."""


@st.composite
def streams_over_a_limit(draw: st.DrawFn) -> tuple[bytes, int]:
    """Return (stream, max_event_bytes) where one event outgrows the limit, events around it.

    Small events before and after the oversized one (short ASCII values, any line
    end, now and then an id, a comment or a BOM at the start). What outgrows the
    limit: one long data line, many short data lines, a long event type, a long
    comment or unknown field (the line being read counts too), or a line that
    never ends.
    """
    max_event_bytes = draw(st.integers(24, 80))
    end = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    short = st.text(alphabet="abcxyz019 {}:", max_size=4).map(str.encode)

    def small_events() -> bytes:
        blocks = []
        for _ in range(draw(st.integers(0, 3))):
            lines = [b"data: " + draw(short)]
            extra = draw(st.sampled_from([None, b"id: " + draw(short), b": ping"]))
            if extra is not None:
                lines.insert(0, extra)
            blocks.append(end.join(lines) + end + end)
        return b"".join(blocks)

    fill = b"x" * draw(st.integers(max_event_bytes, 2 * max_event_bytes))
    oversized = draw(
        st.sampled_from(
            [
                b"data: " + fill + end + end,
                (b"data: abc" + end) * (max_event_bytes // 4 + 1) + end,
                b"event: " + fill + end + b"data: a" + end + end,
                b": " + fill + end + b"data: a" + end + end,
                b"unknown: " + fill + end + b"data: a" + end + end,
                b"data: " + fill,  # no line end: the stream stops inside it
            ]
        )
    )
    bom = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    return bom + small_events() + oversized + small_events(), max_event_bytes
