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

import codecs
import re
from collections.abc import Iterable
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

_BOM = "\ufeff"
# The spec's only line ends: CRLF, LF or CR. (str.splitlines also splits on
# U+2028, U+0085, \x1c and friends, which the spec does not.)
_LINE_END = re.compile(r"\r\n|\r|\n")


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


class EventTooLarge(ValueError):
    """Raised by ``SSEDecoder.feed`` when one unfinished event outgrows max_event_bytes."""


def _utf8_len(text: str) -> int:
    """Return the UTF-8 size of ``text`` in bytes (cheap for ASCII: isascii is O(1))."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class SSEDecoder:
    """Incremental SSE parser: ``feed(bytes) -> list[Event]``, any chunking, linear cost.

    State kept between calls, as the spec names it: the data buffer, the event
    type buffer, the last event ID buffer, the last event ID string and the
    reconnection time (``retry``). Plus what the chunking forces on us: the bytes
    of a UTF-8 character cut in half (inside the incremental codec), the pieces
    of a line whose end has not arrived, and whether the last chunk ended in CR
    (the LF of a CRLF may open the next chunk).
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
        # Spec: "The stream must then be parsed by reading everything line by line ...
        # the UTF-8 decode algorithm" -- decode incrementally, so a character whose
        # bytes are cut across chunks survives; invalid bytes become U+FFFD.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # Spec: "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are
        # present." Checked on the first *decoded character*, so an empty first chunk
        # or a BOM cut across chunks changes nothing.
        self._bom_checked = False
        self._after_cr = False  # the previous chunk ended in CR: skip one leading LF
        # The line whose end has not arrived yet, kept as a list of pieces and joined
        # once when its line end comes. Cost goal: O(n) in the bytes fed, whatever the
        # chunk sizes -- each new piece of text is scanned once for line ends and never
        # again; we never re-scan or re-concatenate a growing buffer.
        self._partial: list[str] = []
        self._partial_bytes = 0
        self._data: list[str] = []  # spec: "data buffer", one entry per data line
        self._data_bytes = 0
        self._event_type = ""  # spec: "event type buffer"
        self._block_retry: int | None = None  # a valid retry: seen since the last blank line

    @property
    def pending(self) -> bool:
        """Return True when bytes of an unfinished event are held (it would be lost at close)."""
        return bool(
            self._partial
            or self._data
            or self._event_type
            or self._block_retry is not None
            or self._decoder.getstate()[0]
        )

    def feed(self, chunk: bytes) -> list[Event]:
        """Return the events completed by ``chunk`` (often none; any cut point works).

        Raises EventTooLarge when the unfinished event would hold more than
        ``max_event_bytes``; after that the stream is broken and the decoder has
        dropped the event's buffers.
        """
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._bom_checked:
            self._bom_checked = True
            if text[0] == _BOM:
                text = text[1:]
                if not text:
                    return []
        if self._after_cr:
            # Spec: lines end with "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF)
            # character pair". Its CR closed the line in the last chunk already.
            self._after_cr = False
            if text[:1] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\r" in text:
            # A CR at the very end may be the first half of a CRLF cut by the chunking.
            self._after_cr = text[-1] == "\r"
            lines = _LINE_END.split(text)
        elif "\n" in text:
            lines = text.split("\n")
        else:
            # No line end in this chunk: keep it and wait (the common case for big events).
            self._partial.append(text)
            self._partial_bytes += _utf8_len(text)
            self._check_size()
            return []
        # lines[-1] is what follows the last line end: the start of the next line.
        rest = lines.pop()
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = "".join(self._partial)
            self._partial = []
            self._partial_bytes = 0
        events = self._process_lines(lines)
        if rest:
            self._partial.append(rest)
            self._partial_bytes = _utf8_len(rest)
            self._check_size()
        return events

    def _process_lines(self, lines: list[str]) -> list[Event]:
        """Return the events dispatched by these complete lines (line ends removed)."""
        events: list[Event] = []
        data = self._data
        for line in lines:
            if not line:
                # Spec: "If the line is empty (a blank line): Dispatch the event."
                event = self._dispatch()
                if event is not None:
                    events.append(event)
                data = self._data
            elif line[:5] == "data:":
                # The common case, handled inline: spec "Append the field value to the
                # data buffer, then append a single U+000A LINE FEED (LF) character".
                # Spec: "If value starts with a U+0020 SPACE character, remove it".
                value = line[6:] if line[5:6] == " " else line[5:]
                data.append(value)
                self._data_bytes += _utf8_len(value) + 1
                if self._data_bytes > self.max_event_bytes:
                    self._check_size()
            elif line[0] != ":":
                self._process_field(line)
            # Spec: "If the line starts with a U+003A COLON character (:) Ignore the line."
        return events

    def _process_field(self, line: str) -> None:
        """Apply one non-comment line to the buffers (spec: "process the field")."""
        # Spec: "If the line contains a U+003A COLON character (:) Collect the characters
        # on the line before the first U+003A COLON character (:), and let field be that
        # string. Collect the characters on the line after the first U+003A COLON
        # character (:), and let value be that string. If value starts with a U+0020
        # SPACE character, remove it from value."
        # "Otherwise, the string is not empty but does not contain a U+003A COLON
        # character (:) ... using the whole line as the field name, and the empty string
        # as the field value."
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_bytes += _utf8_len(value) + 1
            self._check_size()
        elif name == "event":
            # Spec: "Set the event type buffer to the field value."
            self._event_type = value
            self._check_size()
        elif name == "id":
            # Spec: "If the field value does not contain U+0000 NULL, then set the last
            # event ID buffer to the field value. Otherwise, ignore the field."
            if "\x00" not in value:
                self._id_buffer = value
        elif name == "retry":
            # Spec: "If the field value consists of only ASCII digits, then interpret the
            # field value as an integer in base ten, and set the event stream's
            # reconnection time to that integer. Otherwise, ignore the field."
            # (str.isdigit would accept "١٢"; int() would accept "+5" and " 5".)
            if value and value.isascii() and value.isdigit():
                self.retry = int(value)
                self._block_retry = self.retry
        # Spec: "Otherwise: The field is ignored."

    def _dispatch(self) -> Event | None:
        """Return the event a blank line completes, or None when its data buffer is empty."""
        # Spec: "Set the last event ID string of the event source to the value of the
        # last event ID buffer. The buffer does not get reset, so the last event ID
        # string of the event source remains set to this value until the next time it
        # is set by the server."
        self.last_event_id = self._id_buffer
        retry = self._block_retry
        self._block_retry = None
        event_type = self._event_type
        # Spec: "If the data buffer is an empty string, set the data buffer and the event
        # type buffer to the empty string and return."
        self._event_type = ""
        if not self._data:
            return None
        # Spec: "If the data buffer's last character is a U+000A LINE FEED (LF)
        # character, then remove the last character from the data buffer." Joining the
        # lines with LF gives exactly that.
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        self._data = []
        self._data_bytes = 0
        # Spec: "Initialize event's type attribute to "message" ... If the event type
        # buffer has a value other than the empty string, change the type of the newly
        # created event to equal the value of the event type buffer."
        return Event(event_type or "message", data, self.last_event_id, retry)

    def _check_size(self) -> None:
        held = self._partial_bytes + self._data_bytes + len(self._event_type)
        if held > self.max_event_bytes:
            self._partial = []
            self._partial_bytes = 0
            self._data = []
            self._data_bytes = 0
            self._event_type = ""
            raise EventTooLarge(
                f"event exceeded max_event_bytes={self.max_event_bytes} "
                f"(an unfinished event held {held} bytes before its blank line); "
                f"pass SSEDecoder(max_event_bytes=...) to raise it"
            )

    def close(self) -> list[Event]:
        """Return [] and end the stream: an unfinished event is dropped, never dispatched.

        Spec: "Once the end of the file is reached, any pending data must be
        discarded. (If the file ends in the middle of an event, before the final
        empty line, the incomplete event is not dispatched.)"
        ``last_event_id`` and ``retry`` are kept, as a reconnecting client needs them;
        bytes fed after close() are read as a new stream (a fresh BOM check).
        """
        self._decoder.decode(b"", final=True)
        self._start_stream()
        return []


def decode_all(chunks: Iterable[bytes], **kwargs: int) -> list[Event]:
    """Return every event in ``chunks`` (an iterable of bytes), then close the stream."""
    decoder = SSEDecoder(**kwargs)
    events: list[Event] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


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
