"""Exercise 4: Anthropic's named events, ``read_anthropic(chunks) -> (text, complete, stop_reason)``.

Only ``text_delta`` pieces of ``content_block_delta`` events are text; the
answer is complete at ``message_stop``, and ``stop_reason`` comes from
``message_delta``. The reference is the course client,
``lessonkit.core.client.read_stream(chunks, "anthropic")``. Besides the
simulated LLM's streams, ``blocks_wire`` writes a message with a thinking
block and a tool_use block, whose deltas are not text for the screen, and
``error_wire`` one that an ``error`` event ends (as the real API does when it
is overloaded): no ``message_stop``, so not complete.

Points per rule (20 in all): the whole stream in one chunk 3; ping events,
look-alike text, the end, the stop reason and the text_delta rule 2 each; cuts,
sizes and long answers, split characters, drops and error events 1 each; two
hidden rules (1 each) draw longer inputs of the public kinds from the grading
seed. May use from lessonkit: ``lessonkit.sse`` (the wire format: this
exercise is about what Anthropic's events mean), but no reader of the meaning
(``lessonkit.client``, ``lessonkit.core.dialects``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence

from lessonkit.core import client, llm, network, sse
from lessonkit.grading.engine import Case, Rule
from lessonkit.grading.mistakes import ANTHROPIC_MISTAKES
from lessonkit.grading.streams import (
    ReaderExercise,
    chunks_case,
    chunks_cases,
    event_ends,
    sizes,
    split_inside_characters,
)

LOOKALIKE_TOKENS = ("Send", " ping", " then", " message_stop", " event: ping", " data: [DONE]", ".")
# Hints for mistakes that have no rule of their own here.
EXTRA_HINTS = {
    "append": "Each text_delta carries only the new piece: text += delta['text'], "
    "not text = delta['text'].",
    "while": "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
    "loose-stop": "The answer is complete when an event's type (its event: line) is "
    "message_stop; a text that contains 'message_stop' is still text.",
}
TOOL_JSON = ('{"order_id', '": "A-1042"', ', "text": "', 'where is it?"}')
THINKING = ("The user asks", " about a delivery date;", " look up the order.")
_PING_EVENT = b'event: ping\ndata: {"type": "ping"}\n\n'


def reference(chunks: Iterable[bytes]) -> tuple[str, bool, str | None]:
    """Return (text, complete, stop_reason) of an Anthropic Messages stream."""
    reply = client.read_stream(chunks, "anthropic")
    return reply.text, reply.complete, reply.finish_reason


def _anthropic_wire(answer: llm.Answer, heartbeat_ms: float | None = None) -> bytes:
    return llm.wire_bytes(answer, "anthropic", heartbeat_ms=heartbeat_ms)


def error_wire(tokens: Sequence[str], kind: str = "overloaded_error") -> bytes:
    """Return an Anthropic stream that an ``error`` event ends after ``tokens`` (no message_stop)."""
    wire = _anthropic_wire(llm.Answer(tuple(tokens), "stop"))
    cut_at = wire.find(b"event: content_block_stop")
    error = {"type": "error", "error": {"type": kind, "message": "Overloaded"}}
    return wire[:cut_at] + sse.encode(json.dumps(error), event="error")


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
    lookalike = _anthropic_wire(llm.Answer(LOOKALIKE_TOKENS, "stop"))
    failed = error_wire(("It ships", " on"))
    long = [
        network.random_cuts(_anthropic_wire(llm.long_answer(30 + 9 * s, seed=s)), seed=s)
        for s in range(2)
    ]
    c = chunks_cases  # Rule.cases from lists of chunks

    def hidden_blocks(seed: int) -> list[list[bytes]]:
        rng = random.Random(f"read_anthropic/blocks/{seed}")
        out = []
        for k in range(5):
            tokens = list(llm.long_answer(rng.randint(10, 40), seed=rng.randrange(1 << 30)).tokens)
            for _ in range(rng.randint(1, 3)):
                tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(LOOKALIKE_TOKENS[1:-1]))
            wire = blocks_wire(
                tokens,
                thinking=THINKING[: rng.randint(1, 3)] if rng.random() < 0.6 else (),
                tool_json=TOOL_JSON if k != 2 else (),
                stop_reason="tool_use" if k != 2 else "end_turn",
            )
            out.append(network.random_cuts(wire, seed=rng.randrange(1 << 30), max_piece_bytes=11))
        return out

    def hidden_length(seed: int) -> list[list[bytes]]:
        rng = random.Random(f"read_anthropic/length/{seed}")
        answer = llm.long_answer(rng.randint(20, 50), seed=rng.randrange(1 << 30))
        wire = _anthropic_wire(llm.Answer(answer.tokens[: rng.randint(5, 15)], "length"))
        points = sorted(rng.sample(range(len(wire) + 1), 20))
        return [
            network.random_cuts(network.drop_after(wire, n), seed=rng.randrange(1 << 30))
            for n in points
        ]

    return (
        Rule(
            "the whole stream in one chunk",
            "Text is in content_block_delta events, in data['delta']['text'].",
            c("whole", [[running], [one]]),
            points=3,
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
            points=2,
            cause="comment",
        ),
        Rule(
            "a text that holds 'ping', 'message_stop' or 'event:' is still text",
            "Tell events by their type (the event: line), never by searching the text: a "
            "token may contain 'ping' or 'message_stop'.",
            c("lookalike", [[lookalike], network.cut(lookalike, 9)]),
            points=2,
            cause="loose",
        ),
        Rule(
            "complete only after message_stop",
            "message_delta is not the end; only the message_stop event completes the answer.",
            lambda: [
                _noted(chunks_case("complete", [running[:stop_at]]), without_stop),
                _noted(chunks_case("complete", [running[:delta_at]]), without_delta),
                _noted(chunks_case("complete", [running[: ends[-1] - 1]]), half_stop),
            ],
            points=2,
            cause="complete",
        ),
        Rule(
            "stop_reason comes from message_delta",
            "Read data['delta']['stop_reason'] of the message_delta event; None until it comes.",
            c("stop", [[short], [running], [running[: ends[1]]]]),
            points=2,
            cause="stop",
        ),
        Rule(
            "only text_delta deltas are text: thinking and tool_use blocks are not",
            "Append delta['text'] only when delta['type'] == 'text_delta'; thinking_delta and "
            "input_json_delta pieces are not text for the screen.",
            c("blocks", [[tool], [thinks], [both], network.cut(both, 50)]),
            points=2,
            cause="blocks",
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "Keep a buffer; handle an event only when its blank line has arrived.",
            c("two-cut", _cuts_near_lines(one)),
            points=1,
            cause="chunk_not_event",
        ),
        Rule(
            "every chunk size, and random cuts of long answers, give the same answer",
            "Try cut(wire, 1) and random cuts of a long answer: the bytes may arrive any way.",
            c("sizes", [network.cut(running, size) for size in sizes(len(running))] + long),
            points=1,
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with an incremental UTF-8 decoder.",
            c("utf8", [*split_inside_characters(cafe), network.cut(cafe, 1)]),
            points=1,
            cause="decode",
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
            points=1,
            cause="drop",
        ),
        Rule(
            "an error event ends the answer: not complete",
            "An `error` event (e.g. overloaded_error) ends the stream early: keep the text so "
            "far; without message_stop the answer is not complete.",
            c("error", [[failed], network.cut(failed, 13)]),
            points=1,
        ),
        Rule(
            "tool calls, thinking and look-alike text in longer answers, cut at random",
            "Only text_delta pieces are text, whatever other blocks the message holds.",
            lambda seed: chunks_cases("blocks-hidden", hidden_blocks(seed))(),
            hidden=True,
            extends="only text_delta deltas are text: thinking and tool_use blocks are not",
        ),
        Rule(
            "answers cut by max_tokens, with drops",
            "stop_reason is 'max_tokens' when the limit ended the answer.",
            lambda seed: chunks_cases("length", hidden_length(seed))(),
            hidden=True,
            extends="a dropped connection keeps the text so far",
        ),
    )


class ReadAnthropic(ReaderExercise):
    """Exercise 4, graded against ``reference``, the course client's Anthropic dialect."""

    id = "read_anthropic"
    title = "Exercise 4: Anthropic's named events"
    returns = (("text", (str,)), ("complete", (bool,)), ("stop_reason", (str, type(None))))
    dialect = "anthropic"
    mistakes = ANTHROPIC_MISTAKES
    extra_hints = EXTRA_HINTS
    allowed = ("lessonkit.sse",)  # the wire format may come from the course; the meaning may not
    own_work = "reader of the events"
    read = staticmethod(reference)
    make_rules = staticmethod(rules)
