"""Exercise 4: Anthropic's named events, ``read_anthropic(chunks) -> (text, complete, stop_reason)``.

Only ``text_delta`` pieces of ``content_block_delta`` events are text; the
answer is complete at ``message_stop``, and ``stop_reason`` comes from
``message_delta``. The reference is the course client,
``lessonkit.core.client.read_stream(chunks, "anthropic")``. Besides the
simulated LLM's streams, ``blocks_wire`` writes a message with a thinking
block and a tool_use block, whose deltas are not text for the screen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from lessonkit.core import client, llm, network, sse
from lessonkit.grading.engine import Case, Exercise, Rule
from lessonkit.grading.streams import (
    chunks_case,
    chunks_cases,
    event_ends,
    hints_of,
    reader_exercise,
    sizes,
    split_inside_characters,
)

__all__ = ["THINKING", "TOOL_JSON", "blocks_wire", "exercise", "reference", "rules"]

# Which rule's hint fits a diagnosed cause (see streams.stream_diagnosis), and the
# hints for causes that have no rule of their own here.
CAUSES = {
    "decode": "a character split across chunks survives",
    "comment": "ping events and comments are ignored",
    "chunk_not_event": "an event cut across two chunks waits for the rest",
}
EXTRA_HINTS = {
    "append": "Each text_delta carries only the new piece: text += delta['text'], "
    "not text = delta['text'].",
    "while": "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
}
TOOL_JSON = ('{"order_id', '": "A-1042"', ', "text": "', 'where is it?"}')
THINKING = ("The user asks", " about a delivery date;", " look up the order.")
_PING_EVENT = b'event: ping\ndata: {"type": "ping"}\n\n'


def reference(chunks: Iterable[bytes]) -> tuple[str, bool, str | None]:
    """Return (text, complete, stop_reason) of an Anthropic Messages stream."""
    reply = client.read_stream(chunks, "anthropic")
    return reply.text, reply.complete, reply.finish_reason


def _anthropic_wire(answer: llm.Answer, **options: Any) -> bytes:
    return llm.wire_bytes(answer, "anthropic", **options)


def _with_pings(data: bytes) -> bytes:
    ends = event_ends(data)
    pieces = network.cut_at(data, ends[:-1])
    out = [pieces[0], _PING_EVENT]
    for piece in pieces[1:]:
        out += [piece, _PING_EVENT] if b"content_block_delta" in piece else [piece]
    return b"".join(out)


def _cuts_near_lines(data: bytes, step: int = 6) -> list[list[bytes]]:
    points = set(range(0, len(data) + 1, step))
    for i, byte in enumerate(data):
        if byte == 10:
            points |= {i, i + 1, i + 2}
    return [[data[:i], data[i:]] for i in sorted(p for p in points if 0 < p < len(data))]


def _noted(case: Case, note: str) -> Case:
    return Case(case.rule, case.args, case.size, case.control, note)


def blocks_wire(
    text: Sequence[str],
    *,
    thinking: Sequence[str] = (),
    tool_json: Sequence[str] = (),
    stop_reason: str = "tool_use",
) -> bytes:
    """Return an Anthropic stream with a thinking block, a text block and a tool_use block.

    Only the text block's ``text_delta`` deltas are text for the screen; the
    thinking block streams ``thinking_delta`` (and a ``signature_delta``), the
    tool call ``input_json_delta`` pieces of its JSON input.
    """

    def event(kind: str, obj: dict) -> bytes:
        obj = {"type": kind, **obj}
        return sse.encode(json.dumps(obj, ensure_ascii=False, separators=(",", ":")), event=kind)

    def block(index: int, start: dict, deltas: list[dict]) -> list[bytes]:
        out = [event("content_block_start", {"index": index, "content_block": start})]
        out += [event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
        return [*out, event("content_block_stop", {"index": index})]

    message = {
        "id": "msg_blocks",
        "type": "message",
        "role": "assistant",
        "model": "lessonkit-sim",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 0},
    }
    out = [event("message_start", {"message": message})]
    index = 0
    if thinking:
        deltas = [{"type": "thinking_delta", "thinking": t} for t in thinking]
        deltas.append({"type": "signature_delta", "signature": "EqQBCkYIARgCIkB0c2ln"})
        out += block(index, {"type": "thinking", "thinking": ""}, deltas)
        index += 1
    out += block(
        index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text]
    )
    index += 1
    if tool_json:
        start = {"type": "tool_use", "id": "toolu_sim01", "name": "track_order", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": j} for j in tool_json]
        out += block(index, start, deltas)
    out.append(
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": len(text) + len(thinking) + len(tool_json)},
            },
        )
    )
    out.append(event("message_stop", {}))
    return b"".join(out)


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 4, public first, then hidden."""
    running = _anthropic_wire(llm.answer_for(llm.RUNNING_PROMPT))
    one = _anthropic_wire(llm.Answer(("Hi",), "stop"))
    cafe = _anthropic_wire(llm.Answer(("Your", " café", " 😀", "."), "stop"))
    short = _anthropic_wire(llm.answer_for(llm.RUNNING_PROMPT, max_tokens=3))
    ends = event_ends(running)
    stop_at = running.rfind(b"event: message_stop")
    delta_at = running.rfind(b"event: message_delta")
    without_stop = "the running answer's whole stream without its last event, message_stop"
    without_delta = "the running answer's stream without message_delta and message_stop"
    half_stop = "the running answer's whole stream, but the blank line after message_stop is cut"
    tool = blocks_wire(("It ships", " on Monday."), tool_json=TOOL_JSON)
    thinks = blocks_wire(("Monday.",), thinking=THINKING, stop_reason="end_turn")
    both = blocks_wire(("Let me check.",), thinking=THINKING, tool_json=TOOL_JSON)
    c = chunks_cases  # Rule.cases from lists of chunks

    return (
        Rule(
            "the whole stream in one chunk",
            "Text is in content_block_delta events, in data['delta']['text'].",
            c("whole", [[running], [one]]),
        ),
        Rule(
            "ping events and comments are ignored",
            "Use only the event types you need; skip 'ping' and any you do not know.",
            c(
                "ping",
                [
                    [_with_pings(running)],
                    network.cut(_with_pings(one), 40),
                    [_anthropic_wire(llm.Answer(("Hi",), "stop"), heartbeat_ms=100)],
                ],
            ),
        ),
        Rule(
            "complete only after message_stop",
            "message_delta is not the end; only the message_stop event completes the answer.",
            lambda: [
                _noted(chunks_case("complete", [running[:stop_at]]), without_stop),
                _noted(chunks_case("complete", [running[:delta_at]]), without_delta),
                _noted(chunks_case("complete", [running[: ends[-1] - 1]]), half_stop),
            ],
        ),
        Rule(
            "stop_reason comes from message_delta",
            "Read data['delta']['stop_reason'] of the message_delta event; None until it comes.",
            c("stop", [[short], [running], [running[: ends[1]]]]),
        ),
        Rule(
            "only text_delta deltas are text: thinking and tool_use blocks are not",
            "Append delta['text'] only when delta['type'] == 'text_delta'; thinking_delta and "
            "input_json_delta pieces are not text for the screen.",
            c("blocks", [[tool], [thinks], [both], network.cut(both, 50)]),
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "Keep a buffer; handle an event only when its blank line has arrived.",
            c("two-cut", _cuts_near_lines(one)),
        ),
        Rule(
            "every chunk size gives the same answer",
            "Try cut(wire, 1): the bytes may arrive one at a time.",
            c("sizes", [network.cut(running, size) for size in sizes(len(running))]),
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with an incremental UTF-8 decoder.",
            c("utf8", [*split_inside_characters(cafe), network.cut(cafe, 1)]),
        ),
        Rule(
            "a dropped connection keeps the text so far",
            "Without message_stop the answer is not complete, whatever came before.",
            c(
                "drop",
                [
                    network.cut(running[:n], 64)
                    for n in sorted({*ends, *range(0, len(running), 29)})
                ],
            ),
        ),
        Rule(
            "long answers cut at seeded random points",
            "Test your reader on random cuts of a long answer.",
            c(
                "random",
                [
                    network.random_cuts(
                        _anthropic_wire(llm.long_answer(30 + 9 * s, seed=s)), seed=s
                    )
                    for s in range(6)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "tool calls and thinking in longer answers, cut at random",
            "Only text_delta pieces are text, whatever other blocks the message holds.",
            c(
                "blocks-hidden",
                [
                    network.random_cuts(
                        blocks_wire(
                            llm.long_answer(12 + 5 * s, seed=s).tokens,
                            thinking=THINKING[: s % 3 + 1] if s % 2 else (),
                            tool_json=TOOL_JSON if s != 2 else (),
                            stop_reason="tool_use" if s != 2 else "end_turn",
                        ),
                        seed=s,
                        max_piece_bytes=11,
                    )
                    for s in range(5)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "answers cut by max_tokens, with drops",
            "stop_reason is 'max_tokens' when the limit ended the answer.",
            c(
                "length",
                [
                    network.random_cuts(
                        network.drop_after(
                            _anthropic_wire(llm.answer_for("Where is my parcel?", max_tokens=9)), n
                        ),
                        seed=n,
                    )
                    for n in range(0, 2600, 83)
                ],
            ),
            hidden=True,
        ),
    )


def exercise() -> Exercise:
    """Return exercise 4, graded against ``reference``."""
    graded = rules()
    return reader_exercise(
        "read_anthropic",
        "Exercise 4: Anthropic's named events",
        20,
        graded,
        reference,
        returns=[("text", (str,)), ("complete", (bool,)), ("stop_reason", (str, type(None)))],
        dialect="anthropic",
        hints=hints_of(graded, CAUSES) | EXTRA_HINTS,
    )
