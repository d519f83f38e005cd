"""Turning a stream of bytes into an answer: ``read_stream(chunks, dialect) -> Reply``.

Two layers, both pure: ``lessonkit.sse`` turns bytes into events, and
``lessonkit.core.dialects`` says what each event means. ``StreamReader`` joins them
incrementally, so a UI can show each delta the moment its bytes arrive::

    reader = StreamReader("openai")
    for chunk in response.iter_bytes():
        for delta in reader.feed(chunk):
            show(delta)
    reply = reader.close()

A reply is ``complete`` only when the dialect's end marker arrived (``data:
[DONE]``, ``message_stop`` for Anthropic, ``response.completed`` or
``response.incomplete`` for the Responses API). A stream that simply stops is not
an answer that ended: that difference is what a dropped connection looks like.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lessonkit.core.dialects import DIALECTS, Step, interpret
from lessonkit.core.sse import DEFAULT_MAX_EVENT_BYTES, Event, EventTooLarge, SSEDecoder

__all__ = ["Reply", "StreamReader", "read_stream"]


@dataclass(frozen=True)
class Reply:
    """The answer read so far: text, whether the end marker came, and what the end said."""

    text: str = ""
    complete: bool = False
    finish_reason: str | None = None
    usage: dict | None = None
    error: str | None = None
    events: int = 0


class StreamReader:
    """Incremental reader: ``feed(bytes) -> list[str]`` of new deltas, ``close() -> Reply``.

    After an error (a malformed event, an API ``error`` event, an event over
    ``max_event_bytes``) the reader keeps the text it had, records the error,
    and ignores the rest of the stream; such a reply is never complete. Events
    after the end marker are ignored too. The events completed before an
    oversized one are read first, whatever the cut (``EventTooLarge.events``),
    so the reply is the same for every cut of the same bytes.
    """

    def __init__(
        self, dialect: str = "lesson", *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
        self.dialect = dialect
        self._decoder = SSEDecoder(max_event_bytes=max_event_bytes)
        self._pieces: list[str] = []
        self._complete = False
        self._finish_reason: str | None = None
        self._usage: dict | None = None
        self._error: str | None = None
        self._events = 0

    @property
    def text(self) -> str:
        """Return the text of all deltas so far."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def complete(self) -> bool:
        """Return True once the dialect's end marker has arrived (and no error before it)."""
        return self._complete

    @property
    def reply(self) -> Reply:
        """Return a snapshot of the answer so far."""
        return Reply(
            text=self.text,
            complete=self._complete,
            finish_reason=self._finish_reason,
            usage=self._usage,
            error=self._error,
            events=self._events,
        )

    @property
    def finished(self) -> bool:
        """Return True when nothing more will be read: the end marker or an error came."""
        return self._complete or self._error is not None

    def feed(self, chunk: bytes) -> list[str]:
        """Return the text deltas that ``chunk`` completes, in order (often [])."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"feed() takes bytes from the network, got {type(chunk).__name__}; "
                f"encode text first, e.g. text.encode('utf-8')"
            )
        if self.finished:
            return []
        too_large = None
        try:
            events = self._decoder.feed(chunk)
        except EventTooLarge as exc:  # the events before the oversized one still count
            events, too_large = exc.events, exc
        deltas: list[str] = []
        for event in events:
            self._events += 1
            step = interpret(event, self.dialect)
            self._apply(step, event)
            if step.delta and step.error is None:
                deltas.append(step.delta)
            if self.finished:
                return deltas
        if too_large is not None:
            self._error = f"event {self._events + 1}: {too_large}"
        return deltas

    def _apply(self, step: Step, event: Event) -> None:
        if step.error is not None:
            self._error = f"event {self._events} ({event.event}): {step.error}"
            return
        if step.delta:
            self._pieces.append(step.delta)
        if step.finish_reason is not None:
            self._finish_reason = step.finish_reason
        if step.usage is not None:
            # Anthropic splits usage: input tokens in message_start, output in message_delta.
            self._usage = {**(self._usage or {}), **step.usage}
        if step.done:
            self._complete = True

    def close(self) -> Reply:
        """Return the final Reply; an event cut off by the end of the stream is dropped."""
        self._decoder.close()
        return self.reply


def read_stream(
    chunks: Iterable[bytes],
    dialect: str = "lesson",
    *,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> Reply:
    """Return the Reply read from ``chunks`` (bytes cut anywhere) in ``dialect``."""
    if isinstance(chunks, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"read_stream takes an iterable of byte chunks, got one {type(chunks).__name__} "
            f"object; wrap it in a list ([wire]) or cut it (cut(wire, 16))"
        )
    reader = StreamReader(dialect, max_event_bytes=max_event_bytes)
    for chunk in chunks:
        reader.feed(chunk)
        if reader.finished:
            break
    return reader.close()
