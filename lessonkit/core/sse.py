"""The Server-Sent Events wire format, sans-IO: bytes in, events out.

This module contains no networking code and no clocks at all. A socket loop,
an HTTP client or a test hands ``SSEDecoder.feed`` whatever bytes arrived, cut
anywhere, and gets back the events those bytes completed::

    dec = SSEDecoder()
    for chunk in chunks:
        for event in dec.feed(chunk):
            ...
    dec.close()

The parser follows the WHATWG HTML standard, section "Server-sent events",
subsection "Interpreting an event stream" (quoted as "the spec" below).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "Event",
    "EventTooLarge",
    "SSEDecoder",
    "comment",
    "decode_all",
    "encode",
]

DEFAULT_MAX_EVENT_BYTES = 1 << 20  # 1 MiB
# Line ends are tested as `10 in chunk` / `13 in chunk` (LF, CR): with an int, bytes
# containment is one memchr; with b"\n" it first fails to read the argument as an int,
# which costs ten times more per chunk.
_WAIT_BYTES = 1 << 16  # iter_events hands line-less chunks to feed() after this many bytes
_SMALL_CHUNK_BYTES = 512  # ... and holds back only chunks smaller than this

_BOM = b"\xef\xbb\xbf"  # U+FEFF BYTE ORDER MARK in UTF-8
# The spec's only line ends: CRLF, LF or CR. (str.splitlines also splits on
# U+2028, U+0085, \x1c and friends, which the spec does not.)
_LINE_END = re.compile(r"\r\n|\r|\n")


def _text(raw: bytes) -> str:
    """Return ``raw`` decoded as UTF-8, each invalid byte sequence as U+FFFD."""
    return raw.decode("utf-8", "replace")


@dataclass(frozen=True)
class Event:
    """One dispatched event: its type, data, the last event ID, and any retry seen.

    ``id`` is the decoder's last event ID string at the moment of dispatch, so an
    event without its own ``id:`` line carries the previous one (spec: "Initialize
    the event's ... lastEventId attribute to the last event ID string").
    ``retry`` is the valid ``retry:`` value (milliseconds) seen in this event's
    block of lines, or None.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


_object_new = object.__new__


class EventTooLarge(ValueError):
    """Raised by ``SSEDecoder.feed`` when one unfinished event outgrows max_event_bytes."""


def _as_bytes(chunk: object) -> bytes:
    """Return ``chunk`` as bytes, or raise a TypeError that says what to pass instead."""
    if isinstance(chunk, (bytearray, memoryview)):
        return bytes(chunk)
    if isinstance(chunk, bytes):  # a subclass of bytes
        return bytes(chunk)
    hint = "; encode text first: text.encode('utf-8')" if isinstance(chunk, str) else ""
    raise TypeError(f"the decoder reads bytes from the network, got {type(chunk).__name__}{hint}")


class SSEDecoder:
    """Incremental SSE parser: ``feed(bytes) -> list[Event]``, any chunking, linear cost.

    State kept between calls, as the spec names it: the data buffer, the event
    type buffer, the last event ID buffer, the last event ID string and the
    reconnection time (``retry``). Plus what the chunking forces on us: the
    bytes of a line whose end has not arrived, whether the last chunk ended in
    CR (the LF of a CRLF may open the next chunk), and the first bytes of the
    stream while they might still be a BOM.

    Decoding: the spec decodes the whole stream as UTF-8 first, then splits it
    into lines. We split the bytes first and decode each field value once its
    line is complete. That gives the same text: CR, LF and ':' are ASCII bytes,
    which never occur inside a multi-byte character and which the UTF-8 decoder
    never swallows into a U+FFFD. So a character cut across chunks survives
    (its bytes are joined before decoding) and invalid bytes become U+FFFD.
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be at least 1, got {max_event_bytes}")
        self.max_event_bytes = max_event_bytes
        self.last_event_id = ""  # spec: the "last event ID string"
        self.retry: int | None = None  # spec: the event stream's "reconnection time", in ms
        self._id_buffer = ""  # spec: "last event ID buffer" (not reset between events)
        self._start_stream()

    def _start_stream(self) -> None:
        # Spec: "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are
        # present." Until 3 bytes have arrived they might still be a BOM, so they wait in
        # _head (None once decided). An empty first chunk decides nothing.
        self._head: bytes | None = b""
        self._after_cr = False  # the previous chunk ended in CR: skip one leading LF
        # The line whose end has not arrived yet, kept as a list of byte pieces and
        # joined once when its line end comes. Cost goal: O(n) in the bytes fed,
        # whatever the chunk sizes -- each chunk is scanned for line ends once and
        # never again; we never re-scan or re-concatenate a growing buffer.
        self._partial: list[bytes] = []
        self._data: list[bytes] = []  # spec: "data buffer", one entry per data line
        self._event_type = b""  # spec: "event type buffer"
        self._block_retry: int | None = None  # a valid retry: seen since the last blank line
        # Bytes held for the unfinished event (partial line + data + event type),
        # compared with max_event_bytes.
        self._held_bytes = 0

    @property
    def pending(self) -> bool:
        """Return True when bytes of an unfinished event are held (they would be lost at close)."""
        return bool(
            self._partial
            or self._data
            or self._event_type
            or self._block_retry is not None
            or self._head
        )

    def feed(self, chunk: bytes) -> list[Event]:
        """Return the events completed by ``chunk`` (often none; any cut point works).

        Raises EventTooLarge when the unfinished event would hold more than
        ``max_event_bytes``; the decoder then drops that event's buffers and the
        stream should be treated as broken.
        """
        if chunk.__class__ is not bytes:
            chunk = _as_bytes(chunk)
        if self._head is not None:
            chunk = self._strip_bom(chunk)
        if self._after_cr and chunk:
            # Spec: lines end with "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF)
            # character pair". Its CR already ended the line in the previous chunk.
            self._after_cr = False
            if chunk[0] == 10:  # 10 == ord("\n")
                chunk = chunk[1:]
        if 10 not in chunk and 13 not in chunk:  # no LF (10), no CR (13)
            # No line end here: keep the piece and wait (the common case for big events).
            if chunk:
                self._partial.append(chunk)
                self._held_bytes += len(chunk)
                if self._held_bytes > self.max_event_bytes:
                    self._too_large()
            return []
        if 13 in chunk:  # CR
            # A CR at the very end may be the first half of a CRLF cut by the chunking.
            self._after_cr = chunk[-1:] == b"\r"
            lines = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        else:
            lines = chunk.split(b"\n")
        # lines[-1] is what follows the last line end: the start of the next line.
        rest = lines.pop()
        if self._partial:
            first = lines[0]
            self._partial.append(first)
            lines[0] = b"".join(self._partial)
            self._partial = []
            # The joined line is counted again by _process_lines if it is kept.
            self._held_bytes -= len(lines[0]) - len(first)
        events = self._process_lines(lines)
        if rest:
            self._partial.append(rest)
            self._held_bytes += len(rest)
            if self._held_bytes > self.max_event_bytes:
                self._too_large()
        return events

    def _strip_bom(self, chunk: bytes) -> bytes:
        """Return ``chunk`` without a leading BOM, holding back bytes that may still be one."""
        chunk = self._head + chunk
        if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
            self._head = chunk
            return b""
        self._head = None
        return chunk[len(_BOM) :] if chunk.startswith(_BOM) else chunk

    def _process_lines(self, lines: list[bytes]) -> list[Event]:
        """Return the events dispatched by these complete lines (line ends removed)."""
        events: list[Event] = []
        data = self._data
        held = self._held_bytes
        limit = self.max_event_bytes
        for line in lines:
            if not line:
                # Spec: "If the line is empty (a blank line): Dispatch the event."
                event = self._dispatch()
                if event is not None:
                    events.append(event)
                    data = self._data
                held = 0
            elif line.startswith(b"data: "):
                # The common case, inline: spec "Append the field value to the data
                # buffer, then append a single U+000A LINE FEED (LF) character to the
                # data buffer"; "If value starts with a U+0020 SPACE character, remove it".
                data.append(line[6:])
                held += len(line) - 5
            elif line[0] != 58:  # 58 == ord(":")
                held += self._process_field(line)
            # Spec: "If the line starts with a U+003A COLON character (:) Ignore the line."
            if held > limit:
                self._held_bytes = held
                self._too_large()
        self._held_bytes = held
        return events

    def _process_field(self, line: bytes) -> int:
        """Return the bytes one non-comment line adds to the buffers (spec: "process the field")."""
        # Spec: "If the line contains a U+003A COLON character (:) Collect the characters
        # on the line before the first U+003A COLON character (:), and let field be that
        # string. Collect the characters on the line after the first U+003A COLON
        # character (:), and let value be that string. If value starts with a U+0020
        # SPACE character, remove it from value."
        # "Otherwise, the string is not empty but does not contain a U+003A COLON
        # character (:) ... using the whole line as the field name, and the empty string
        # as the field value."
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        added = 0
        if name == b"data":
            self._data.append(value)
            added = len(value) + 1
        elif name == b"event":
            # Spec: "Set the event type buffer to the field value."
            added = len(value) - len(self._event_type)
            self._event_type = value
        elif name == b"id":
            # Spec: "If the field value does not contain U+0000 NULL, then set the last
            # event ID buffer to the field value. Otherwise, ignore the field."
            # (In UTF-8 the byte 0 is U+0000 and nothing else.)
            if 0 not in value:
                self._id_buffer = _text(value)
        elif name == b"retry":
            # Spec: "If the field value consists of only ASCII digits, then interpret the
            # field value as an integer in base ten, and set the event stream's
            # reconnection time to that integer. Otherwise, ignore the field."
            # bytes.isdigit() is ASCII-only, so "١٢" and "+5" are refused.
            if value.isdigit():
                self.retry = int(value)
                self._block_retry = self.retry
        # Spec: "Otherwise: The field is ignored."
        return added

    def _dispatch(self) -> Event | None:
        """Return the event a blank line completes, or None when its data buffer is empty."""
        # Spec: "Set the last event ID string of the event source to the value of the
        # last event ID buffer. The buffer does not get reset, so the last event ID
        # string of the event source remains set to this value until the next time it
        # is set by the server."
        self.last_event_id = self._id_buffer
        retry, self._block_retry = self._block_retry, None
        event_type, self._event_type = self._event_type, b""
        # Spec: "If the data buffer is an empty string, set the data buffer and the event
        # type buffer to the empty string and return."
        lines = self._data
        if not lines:
            return None
        self._data = []
        # Spec: "If the data buffer's last character is a U+000A LINE FEED (LF)
        # character, then remove the last character from the data buffer." Joining the
        # lines with LF gives exactly that.
        data = lines[0] if len(lines) == 1 else b"\n".join(lines)
        # Spec: "Initialize event's type attribute to "message" ... If the event type
        # buffer has a value other than the empty string, change the type of the newly
        # created event to equal the value of the event type buffer."
        # (What Event(...) would do, filling the frozen instance's dict directly: the
        # dataclass sets each field through object.__setattr__, twice as slow.)
        event = _object_new(Event)
        fields = event.__dict__
        fields["event"] = event_type.decode("utf-8", "replace") if event_type else "message"
        fields["data"] = data.decode("utf-8", "replace")
        fields["id"] = self.last_event_id
        fields["retry"] = retry
        return event

    def _too_large(self) -> None:
        held = self._held_bytes
        self._partial = []
        self._data = []
        self._event_type = b""
        self._held_bytes = 0
        raise EventTooLarge(
            f"event exceeded max_event_bytes={self.max_event_bytes} "
            f"(an unfinished event held {held} bytes before its blank line); "
            f"pass SSEDecoder(max_event_bytes=...) to raise it"
        )

    def iter_events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Yield each event as soon as the chunk completing it is read; close() at the end.

        The same events, at the same chunks, as calling ``feed`` on each chunk; only
        faster when chunks are tiny. A small chunk with no CR or LF cannot complete
        a line, so it waits here in a list (no method call per chunk) until a chunk
        that may complete one arrives, or until ``_WAIT_BYTES`` have gathered; then
        they go to ``feed`` joined. Each byte is still copied a bounded number of
        times, so the cost stays linear.
        """
        wait_bytes = min(_WAIT_BYTES, self.max_event_bytes)
        waiting: list[bytes] = []
        waiting_bytes = 0
        for chunk in chunks:
            if chunk.__class__ is not bytes:
                chunk = _as_bytes(chunk)
            if len(chunk) < _SMALL_CHUNK_BYTES and 10 not in chunk and 13 not in chunk:
                waiting.append(chunk)  # no LF (10), no CR (13): hold it
                waiting_bytes += len(chunk)
                if waiting_bytes <= wait_bytes:
                    continue
                chunk = b""  # enough is held: hand it over now
            if waiting:
                waiting.append(chunk)
                chunk = b"".join(waiting)
                waiting = []
                waiting_bytes = 0
            yield from self.feed(chunk)
        yield from self.close()

    def close(self) -> list[Event]:
        """Return [] and end the stream: an unfinished event is dropped, never dispatched.

        Spec: "Once the end of the file is reached, any pending data must be
        discarded. (If the file ends in the middle of an event, before the final
        empty line, the incomplete event is not dispatched.)"
        ``last_event_id`` and ``retry`` are kept, as a reconnecting client needs them;
        bytes fed after close() are read as a new stream (with a fresh BOM check).
        """
        self._start_stream()
        return []


def decode_all(chunks: Iterable[bytes], **kwargs: int) -> list[Event]:
    """Return every event in ``chunks`` (an iterable of bytes), read to the end."""
    return list(SSEDecoder(**kwargs).iter_events(chunks))


def _check_one_line(name: str, value: str) -> None:
    if "\r" in value or "\n" in value:
        raise ValueError(f"{name} must not contain CR or LF, got {value!r}")


def encode(
    data: str,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Return the UTF-8 bytes of one event, blank line included.

    Each line of ``data`` (split at CRLF, LF or CR) becomes its own ``data:`` line,
    so the decoder gives back exactly ``data``. ``id`` and ``event`` must be one
    line; ``id`` must not contain U+0000 (the spec would ignore it).
    """
    parts: list[str] = []
    if event is not None:
        _check_one_line("event", event)
        parts.append(f"event: {event}\n")
    if id is not None:
        _check_one_line("id", id)
        if "\x00" in id:
            raise ValueError("id must not contain U+0000 NULL (the spec ignores such ids)")
        parts.append(f"id: {id}\n")
    if retry is not None:
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            raise ValueError(f"retry must be a non-negative int (milliseconds), got {retry!r}")
        parts.append(f"retry: {retry}\n")
    for line in _LINE_END.split(data):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode("utf-8")


def comment(text: str = "ping") -> bytes:
    """Return a comment block such as ``b": ping\\n\\n"`` (a heartbeat; dispatches nothing)."""
    _check_one_line("comment", text)
    return f": {text}\n\n".encode()
