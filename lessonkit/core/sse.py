"""The Server-Sent Events wire format, sans-IO: bytes in, events out.

This module contains no networking code and no clocks at all. A socket loop,
an HTTP client or a test hands ``SSEDecoder.feed`` whatever bytes arrived, cut
anywhere, and gets back the events those bytes completed::

    dec = SSEDecoder()
    for chunk in chunks:
        for event in dec.feed(chunk):
            ...
    dec.close()

The decoder is the WHATWG HTML standard, section "Server-sent events",
subsections "Parsing an event stream" and "Interpreting an event stream"
("the spec"). Its sentences are quoted beside the lines that do what they say,
in the spec's order, so the two can be read side by side:

    SSEDecoder.feed_step_by_step  the stream: one leading BOM dropped, then line by line
    SSEDecoder._split_lines       "the ways in which a line can end"
    SSEDecoder._process_line      "Lines must be processed, in the order they are received"
    SSEDecoder._process_field     "the steps to process the field"
    SSEDecoder._dispatch_event    "dispatch the event"
    SSEDecoder.close              "Once the end of the file is reached"

Those steps are the reference: one way to do each thing, one method each.
``SSEDecoder.feed`` gives exactly what ``feed_step_by_step`` gives (the tests
hold the two together, chunk by chunk) in one loop, for speed: the module's one
speed trick, with its reasons and measurements written beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NoReturn

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

_BOM = b"\xef\xbb\xbf"  # U+FEFF BYTE ORDER MARK, in UTF-8
_LF, _CR, _COLON = 10, 13, 58  # byte values, as line[0] gives them


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
    """Raised by ``SSEDecoder.feed`` when one unfinished event outgrows max_event_bytes.

    ``events`` holds the events completed before the oversized one that the
    caller has not received yet: for ``feed``, the ones that same call completed.
    So what a caller receives before the error is the same wherever the chunks
    were cut.
    """

    def __init__(self, message: str, events: Iterable[Event] = ()) -> None:
        super().__init__(message)
        self.events: list[Event] = list(events)


class SSEDecoder:
    """Incremental SSE parser: ``feed(bytes) -> list[Event]``, any chunking, linear cost.

    State kept between calls, named as in the spec: the data buffer, the event
    type buffer, the last event ID buffer, the last event ID string and the
    reconnection time (``retry``). Plus what the chunking forces on us: the line
    whose end has not arrived yet, and whether the last line ended at a CR.

    Decoding: the spec decodes the whole stream as UTF-8, then splits it into
    lines. We split the bytes first and decode each value once its line is
    complete. That gives the same text: CR, LF and ':' are ASCII bytes, which never
    occur inside a multi-byte character and which the UTF-8 decoder never swallows
    into a U+FFFD. So a character cut across chunks survives (its bytes are joined
    before decoding) and invalid bytes become U+FFFD, never an exception.

    ``max_event_bytes`` bounds what one unfinished event holds at any byte of the
    stream: its data buffer (each value and its LF), its event type buffer, and
    the line being read (every byte of it so far, field name included). It is
    counted at every byte, not where the chunks happen to end, so the same bytes
    pass or fail whatever the cut.
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be at least 1, got {max_event_bytes}")
        self.max_event_bytes = max_event_bytes
        self.last_event_id = ""  # spec: the "last event ID string"
        self.retry: int | None = None  # spec: the event stream's "reconnection time", in ms
        self._id_buffer = ""  # spec: the "last event ID buffer" (dispatch does not reset it)
        self._start_stream()

    def _start_stream(self) -> None:
        """Set up the state of one stream (again after close(); the id and retry stay)."""
        self._at_stream_start = True  # no line has ended yet: the first may open with a BOM
        # The line whose end has not arrived yet, as the pieces it came in, joined once
        # when its end arrives: ``line += chunk`` would cost O(n^2) for a line that
        # spans many chunks, the trap eventsource-parser and the openai SDK fell into.
        self._pieces: list[bytes] = []
        self._unfinished_bytes = 0  # their total length
        # The last line ended at a CR: an LF right after it (nothing held in between) is
        # the second half of a CRLF, not a line end of its own.
        self._after_cr = False
        self._data_lines: list[bytes] = []  # spec: the "data buffer", one entry per line
        self._event_type = b""  # spec: the "event type buffer"
        self._event_retry: int | None = None  # a valid retry: seen since the last blank line
        # What max_event_bytes bounds, besides the line being read: the data buffer
        # (values and their LFs) and the event type buffer.
        self._event_bytes = 0

    @property
    def pending(self) -> bool:
        """Return True when bytes of an unfinished event are held (they would be lost at close)."""
        line_held = self._unfinished_bytes > 0
        if self._at_stream_start and self._unfinished_bytes == len(_BOM):
            line_held = b"".join(self._pieces) != _BOM  # a BOM alone belongs to no event
        return (
            line_held
            or bool(self._data_lines or self._event_type)
            or (self._event_retry is not None)
        )

    # --- the stream -----------------------------------------------------------------------

    def feed_step_by_step(self, chunk: bytes) -> list[Event]:
        """Return the events completed by ``chunk``, as ``feed`` does, one step per call.

        The readable version of ``feed``: the spec's steps, each in its own method.
        It raises EventTooLarge where ``feed`` does, with the same ``events``.
        """
        if chunk.__class__ is not bytes:
            chunk = _as_bytes(chunk)
        events: list[Event] = []
        # Spec: "The stream must then be parsed by reading everything line by line".
        for line in self._split_lines(chunk):
            # max_event_bytes: this line's bytes were held beside the event's buffers.
            if self._event_bytes + len(line) > self.max_event_bytes:
                self._too_large(events)
            if self._at_stream_start:
                # Spec: "One leading U+FEFF BYTE ORDER MARK character must be ignored if
                # any are present." (The stream's first bytes are its first line's.)
                self._at_stream_start = False
                line = line.removeprefix(_BOM)
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        if self._event_bytes + self._unfinished_bytes > self.max_event_bytes:
            self._too_large(events)
        return events

    def _split_lines(self, chunk: bytes) -> list[bytes]:
        """Return the lines ``chunk`` completes, without their line ends; keep the rest.

        Spec: "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair, a single
        U+000A LINE FEED (LF) character not preceded by a U+000D CARRIAGE RETURN (CR)
        character, and a single U+000D CARRIAGE RETURN (CR) character not followed by a
        U+000A LINE FEED (LF) character being the ways in which a line can end."
        """
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == _LF and not self._pieces:  # a CRLF cut in two by the chunking
                chunk = chunk[1:]
        lines = []
        # bytes.splitlines ends lines at CRLF, LF and CR only (str.splitlines also at
        # U+2028, U+0085 and more, which the spec does not).
        for piece in chunk.splitlines(keepends=True):
            if piece[-1] == _LF or piece[-1] == _CR:  # the line has ended
                line_end_bytes = 2 if piece.endswith(b"\r\n") else 1
                self._pieces.append(piece[:-line_end_bytes])
                lines.append(b"".join(self._pieces))
                self._pieces, self._unfinished_bytes = [], 0
                self._after_cr = piece[-1] == _CR
            else:  # the start of a line whose end has not arrived yet
                self._pieces.append(piece)
                self._unfinished_bytes += len(piece)
        return lines

    # --- process the line -----------------------------------------------------------------

    def _process_line(self, line: bytes) -> Event | None:
        """Return the event this complete line (its line end removed) dispatches, if any.

        Spec: "Lines must be processed, in the order they are received, as follows:"
        """
        if not line:
            # Spec: "If the line is empty (a blank line): Dispatch the event".
            return self._dispatch_event()
        if line[0] == _COLON:
            # Spec: "If the line starts with a U+003A COLON character (:): Ignore the line."
            return None
        # Spec: "If the line contains a U+003A COLON character (:): Collect the characters
        # on the line before the first U+003A COLON character (:), and let field be that
        # string. Collect the characters on the line after the first U+003A COLON
        # character (:), and let value be that string."
        # "Otherwise, [...] using the whole line as the field name, and the empty string
        # as the field value." (For a line without a colon, partition gives just that.)
        field, _, value = line.partition(b":")
        # Spec: "If value starts with a U+0020 SPACE character, remove it from value."
        if value[:1] == b" ":
            value = value[1:]
        self._process_field(field, value)
        return None

    # --- process the field ----------------------------------------------------------------

    def _process_field(self, field: bytes, value: bytes) -> None:
        """Apply one field to the buffers (spec: "the steps to process the field")."""
        # Spec: "Field names must be compared literally, with no case folding performed."
        if field == b"event":
            # Spec: "Set the event type buffer to field value."
            self._event_bytes += len(value) - len(self._event_type)
            self._event_type = value
        elif field == b"data":
            # Spec: "Append the field value to the data buffer, then append a single
            # U+000A LINE FEED (LF) character to the data buffer." (The buffer is a list
            # of lines: the LFs go in when they are joined at dispatch; counted here.)
            self._data_lines.append(value)
            self._event_bytes += len(value) + 1
        elif field == b"id":
            # Spec: "If the field value does not contain U+0000 NULL, then set the last
            # event ID buffer to the field value. Otherwise, ignore the field."
            # (In UTF-8 the byte 0 is U+0000 and nothing else.)
            if 0 not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif field == b"retry":
            # Spec: "If the field value consists of only ASCII digits, then interpret the
            # field value as an integer in base ten, and set the event stream's
            # reconnection time to that integer. Otherwise, ignore the field."
            # (bytes.isdigit() is ASCII-only, so "١٢" and "+5" are refused.)
            if value.isdigit():
                self.retry = self._event_retry = int(value)
        # Spec: "Otherwise: The field is ignored."

    # --- dispatch the event ---------------------------------------------------------------

    def _dispatch_event(self) -> Event | None:
        """Return the event a blank line completes, or None when its data buffer is empty."""
        # Spec 1: "Set the last event ID string of the event source to the value of the
        # last event ID buffer. The buffer does not get reset, so the last event ID
        # string of the event source remains set to this value until the next time it
        # is set by the server."
        self.last_event_id = self._id_buffer
        data_lines, event_type, retry = self._data_lines, self._event_type, self._event_retry
        # Spec 2 and 7: "set the data buffer and the event type buffer to the empty
        # string" (and the retry seen since the last blank line is spent).
        self._data_lines, self._event_type, self._event_retry = [], b"", None
        self._event_bytes = 0
        # Spec 2: "If the data buffer is an empty string, [...] return."
        if not data_lines:
            return None
        # Spec 3: "If the data buffer's last character is a U+000A LINE FEED (LF)
        # character, then remove the last character from the data buffer."
        # (Joining the lines with LF gives exactly that.)
        data = b"\n".join(data_lines)
        # Spec 5 and 6: "Initialize event's type attribute to "message", its data
        # attribute to data, [...] and its lastEventId attribute to the last event ID
        # string of the event source." "If the event type buffer has a value other than
        # the empty string, change the type of the newly created event to equal the
        # value of the event type buffer."
        return Event(
            event=event_type.decode("utf-8", "replace") if event_type else "message",
            data=data.decode("utf-8", "replace"),
            id=self.last_event_id,
            retry=retry,
        )

    # --- the end of the stream, and the size bound ----------------------------------------

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

    def _too_large(self, events: list[Event]) -> NoReturn:
        """Drop the unfinished event; raise EventTooLarge with ``events``, the ones before it."""
        self._pieces, self._unfinished_bytes = [], 0
        self._data_lines, self._event_type, self._event_retry = [], b"", None
        self._event_bytes = 0
        self._at_stream_start = False  # the stream's first bytes are gone with the event
        raise EventTooLarge(
            f"event exceeded max_event_bytes={self.max_event_bytes} (one unfinished event "
            f"held more than {self.max_event_bytes} bytes before its blank line); "
            f"pass SSEDecoder(max_event_bytes=...) to raise it",
            events,
        )

    # --- the hot path: the steps above in one loop ----------------------------------------

    def feed(self, chunk: bytes) -> list[Event]:
        """Return the events completed by ``chunk`` (often none; any cut point works).

        Raises EventTooLarge when the unfinished event would hold more than
        ``max_event_bytes``; its ``events`` are the events this call completed
        before the oversized one. The decoder drops that event's bytes; treat the
        stream as broken.

        Hot path: ``feed_step_by_step`` in one loop, with the same events and state
        after every chunk (tests/core/test_sse.py holds the two together on every
        cut). The steps make a call per chunk, per line, per field and per event; this
        loop makes one per chunk and one per line that is neither blank nor
        ``data: ...``. Why: feed() runs once per network read, and an LLM's token
        stream is small reads of ``data:`` lines and blank lines, so the calls cost
        more than the bytes. Measured (bench/README.md: CPU time, median of 3 runs),
        the steps / this loop / the fastest other Python decoder, in MB/s: 19 / 42 /
        25 on 16-byte pieces of a token stream, 60 / 172 / 107 on 1,460-byte pieces,
        88 / 254 / 110 on 4,096-byte pieces of an event of 80-byte data lines.
        """
        if chunk.__class__ is not bytes:
            chunk = _as_bytes(chunk)
        unfinished_bytes = self._unfinished_bytes + len(chunk)
        # Every byte an event holds during this chunk is a byte of its buffers, of the
        # unfinished line or of the chunk: only if those pass the limit can a line here.
        near_limit = self._event_bytes + unfinished_bytes > self.max_event_bytes
        # 1. No line end: the chunk is a piece of the unfinished line and completes
        # nothing. (Nine in ten 16-byte reads of a token stream end here.)
        if 10 not in chunk and 13 not in chunk and not near_limit:
            if chunk:
                self._pieces.append(chunk)
                self._unfinished_bytes = unfinished_bytes
            return []
        # 2. Near the limit the steps check line by line, so the loop below has no check
        # (one per line there cost 13% on 4,096-byte pieces of 80-byte lines).
        if near_limit:
            return self.feed_step_by_step(chunk)
        # 3. _split_lines, inline.
        if self._after_cr:
            self._after_cr = False
            if chunk[0] == _LF and not self._pieces:  # a CRLF cut in two by the chunking
                return self.feed(chunk[1:])
        lines = chunk.splitlines()
        last_byte = chunk[-1]
        if last_byte == _LF or last_byte == _CR:
            self._after_cr = last_byte == _CR
            rest = b""
        else:
            rest = lines.pop()  # the start of a line whose end has not arrived
        if self._pieces:
            self._pieces.append(lines[0])
            lines[0] = b"".join(self._pieces)
        self._pieces = [rest] if rest else []
        self._unfinished_bytes = len(rest)
        if self._at_stream_start:  # feed_step_by_step's BOM step
            self._at_stream_start = False
            lines[0] = lines[0].removeprefix(_BOM)
        # 4. The lines: blank lines and "data: " lines here, every other line by the steps.
        events: list[Event] = []
        data_lines = self._data_lines
        event_bytes = self._event_bytes  # a local here, self._event_bytes for the steps
        for line in lines:
            if not line:  # _dispatch_event, inline
                self.last_event_id = self._id_buffer
                if data_lines:
                    # Event(...) without the frozen dataclass's __init__, which sets each
                    # field through object.__setattr__: with Event(...) here, 99 instead
                    # of 186 MB/s on 1,460-byte pieces of a token stream. The same object
                    # (the differential test compares with the steps' Event(...)).
                    event = _object_new(Event)
                    fields = event.__dict__
                    event_type = self._event_type
                    fields["event"] = (
                        event_type.decode("utf-8", "replace") if event_type else "message"
                    )
                    fields["data"] = b"\n".join(data_lines).decode("utf-8", "replace")
                    fields["id"] = self._id_buffer
                    fields["retry"] = self._event_retry
                    events.append(event)
                    data_lines = self._data_lines = []
                self._event_type, self._event_retry = b"", None
                event_bytes = 0
            elif len(value := line.removeprefix(b"data: ")) < len(line):  # a "data: " line
                # _process_line and _process_field, inline. (One call: a slice to compare
                # and one to keep the value cost twice as long per line.)
                data_lines.append(value)
                event_bytes += len(value) + 1
            else:
                self._event_bytes = event_bytes
                self._process_line(line)
                event_bytes = self._event_bytes
        self._event_bytes = event_bytes
        return events

    def iter_events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Yield each event as soon as the chunk completing it is read; close() at the end.

        The same events, at the same chunks, as calling ``feed`` on each chunk. At
        an event over ``max_event_bytes``, the events before it are yielded first;
        the EventTooLarge raised after them has no events left in it.
        """
        for chunk in chunks:
            try:
                events = self.feed(chunk)
            except EventTooLarge as exc:
                yield from exc.events
                exc.events = []
                raise
            if events:  # most reads complete none
                yield from events
        yield from self.close()


_object_new = object.__new__


def decode_all(chunks: Iterable[bytes], **kwargs: int) -> list[Event]:
    """Return every event in ``chunks`` (an iterable of bytes), read to the end.

    At an event over ``max_event_bytes`` it raises EventTooLarge, whose ``events``
    are all the events before that one.
    """
    events: list[Event] = []
    try:
        events.extend(SSEDecoder(**kwargs).iter_events(chunks))
    except EventTooLarge as exc:
        exc.events = events
        raise
    return events


def _as_bytes(chunk: object) -> bytes:
    """Return ``chunk`` as bytes, or raise a TypeError that says what to pass instead."""
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    hint = "; encode text first: text.encode('utf-8')" if isinstance(chunk, str) else ""
    raise TypeError(f"the decoder reads bytes from the network, got {type(chunk).__name__}{hint}")


# --- writing events -----------------------------------------------------------------------

# The spec's only line ends: CRLF, LF or CR. (str.splitlines also splits on
# U+2028, U+0085, \x1c and friends, which the spec does not.)
_LINE_END = re.compile(r"\r\n|\r|\n")


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
