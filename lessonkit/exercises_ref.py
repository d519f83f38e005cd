"""Reference answers for the graded exercises: what a correct learner function returns.

Each reference is a thin wrapper over the course library, so the exercises are
graded against the same code the lessons teach with:

    response_times(prefill_ms, per_token_ms, n_tokens) -> dict   lessonkit.timeline
    read_stream(chunks) -> (text, complete)                      lessonkit.client, "lesson"
    read_anthropic(chunks) -> (text, complete, stop_reason)      lessonkit.client, "anthropic"
    resume(fetch) -> text                                        lessonkit.sse + dialects
    parse_sse(chunks) -> [(event type, data, last event id)]     lessonkit.sse

The practice stream and reader of the "now change it" experiments are
lessonkit.core.practice's, so their predictions are graded against what the
changed code really does.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lessonkit.core import client, sse, timeline
from lessonkit.core.dialects import interpret

__all__ = [
    "parse_sse",
    "read_anthropic",
    "read_stream",
    "response_times",
    "resume",
]


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
