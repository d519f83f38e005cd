"""Reference answers for the graded exercises: what a correct learner function returns.

Each reference is a thin wrapper over the course library, so the exercises are
graded against the same code the lessons teach with:

    response_times(prefill_ms, per_token_ms, n_tokens) -> dict   lessonkit.timeline
    read_stream(chunks) -> (text, complete)                      lessonkit.client, "lesson"
    read_anthropic(chunks) -> (text, complete, stop_reason)      lessonkit.client, "anthropic"
    resume(fetch) -> text                                        lessonkit.sse + dialects
    parse_sse(chunks) -> [(event type, data, last event id)]     lessonkit.sse

``practice_reader`` is the lesson's practice reader with the switches of the
three "now change it" experiments, so their predictions are graded against
what the changed code really does.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable

from lessonkit import client, sse, timeline
from lessonkit.dialects import interpret

__all__ = [
    "parse_sse",
    "practice_reader",
    "practice_wire",
    "read_anthropic",
    "read_stream",
    "response_times",
    "resume",
]

BLANK = "\n\n"  # the lesson's event border


def response_times(prefill_ms: float, per_token_ms: float, n_tokens: int) -> dict[str, float]:
    """Return streaming_first_ms, blocking_first_ms and total_ms of one answer."""
    return timeline.response_times(prefill_ms, per_token_ms, n_tokens).as_dict()


def read_stream(chunks: Iterable[bytes]) -> tuple[str, bool]:
    """Return (text, complete) of a lesson-dialect stream cut anywhere."""
    reply = client.read_stream(chunks, "lesson")
    return reply.text, reply.complete


def read_anthropic(chunks: Iterable[bytes]) -> tuple[str, bool, str | None]:
    """Return (text, complete, stop_reason) of an Anthropic Messages stream."""
    reply = client.read_stream(chunks, "anthropic")
    return reply.text, reply.complete, reply.finish_reason


def parse_sse(chunks: Iterable[bytes]) -> list[tuple[str, str, str]]:
    """Return (event type, data, last event id) for each event the WHATWG algorithm dispatches."""
    return [(event.event, event.data, event.id) for event in sse.decode_all(chunks)]


def resume(fetch: Callable[[str | None], Iterable[bytes]], max_attempts: int = 50) -> str:
    """Return the whole answer of a GET /v1/stream, reconnecting with Last-Event-ID after drops.

    ``fetch(last_event_id)`` opens one connection and returns its chunks;
    ``None`` means "no Last-Event-ID header" (the first request).
    """
    text: list[str] = []
    last_event_id: str | None = None
    for _ in range(max_attempts):
        decoder = sse.SSEDecoder()
        for chunk in fetch(last_event_id):
            for event in decoder.feed(chunk):
                step = interpret(event, "eventsource")
                text.append(step.delta)
                if step.done:
                    return "".join(text)
        decoder.close()
        # Spec: the last event ID string survives the connection; "" means no header.
        last_event_id = decoder.last_event_id or last_event_id
    raise RuntimeError(f"no done event after {max_attempts} connections")


def practice_wire(tokens: Iterable[str], *, heartbeat: bool = True, done: bool = True) -> bytes:
    """Return the bytes of the lesson's practice stream: a ping, one event per token, [DONE]."""
    events = [": ping"] if heartbeat else []
    events += ["data: " + json.dumps({"delta": t}, ensure_ascii=False) for t in tokens]
    if done:
        events.append("data: [DONE]")
    return (BLANK.join(events) + BLANK).encode("utf-8")


def practice_reader(
    chunks: Iterable[bytes], *, decode_each_chunk: bool = False, if_not_while: bool = False
) -> tuple[str, bool]:
    """Return (text, done) as the lesson's practice reader does, with the experiments' changes.

    ``decode_each_chunk``: each chunk is decoded on its own (raises
    UnicodeDecodeError when a chunk ends inside a character).
    ``if_not_while``: at most one event is handled per chunk.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    buffer, text, done = "", "", False
    for chunk in chunks:
        buffer += chunk.decode("utf-8") if decode_each_chunk else decoder.decode(chunk)
        while BLANK in buffer:
            event, buffer = buffer.split(BLANK, 1)
            if event.startswith(":"):
                if if_not_while:
                    break
                continue
            data = event.removeprefix("data: ")
            if data == "[DONE]":
                done = True
            else:
                text += json.loads(data)["delta"]
            if if_not_while:
                break
    return text, done
