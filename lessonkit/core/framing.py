"""HTTP framing on the wire, sans-IO: the response head, chunked encoding, HTTP/2-3 frames.

Pure functions over bytes, for lesson 02 and for lessonkit.serve.rawhttp, which
reads real responses over a socket and hands the bytes here:

    request_bytes(path, body)    the bytes of an HTTP/1.1 request, as a client writes them
    split_response(raw)          (ResponseHead, body) at the first CRLF CRLF
    parse_chunked(body)          each step of decoding a chunked body (RFC 9112 section 7.1)
    encode_chunked(pieces)       pieces framed as chunks, ending with the zero-size chunk
    h2_data_frames(pieces)       HTTP/2 DATA frames (RFC 9113 section 6.1)
    h3_data_frames(pieces)       HTTP/3 DATA frames (RFC 9114 section 7.2.1)
    HOP_BY_HOP_HEADERS           headers about one connection, which a proxy must not pass on
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

# Headers about one connection, not about the message (RFC 9110 section 7.6.1): a proxy
# drops them and writes its own for the next hop (lowercase, as compared).
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def request_bytes(
    path: str,
    body: dict | None = None,
    *,
    method: str = "POST",
    host: str = "127.0.0.1:8000",
    headers: Iterable[tuple[str, str]] = (),
) -> bytes:
    """Return the bytes of an HTTP/1.1 request (a JSON body if given), as a client writes them."""
    payload = b"" if body is None else json.dumps(body).encode("utf-8")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Accept: text/event-stream"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


@dataclass(frozen=True)
class ResponseHead:
    """The status line and headers of an HTTP/1.1 response."""

    status_line: str
    headers: tuple[tuple[str, str], ...]

    @property
    def status(self) -> int:
        """The status code, e.g. 200."""
        return int(self.status_line.split()[1])

    def header(self, name: str) -> str | None:
        """Return the first header called `name` (any case), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


def split_response(raw: bytes) -> tuple[ResponseHead, bytes]:
    """Return (head, body bytes) of a raw HTTP/1.1 response; the head ends at the first CRLF CRLF."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError("no blank line (CRLF CRLF) after the headers: the head is not complete")
    lines = raw[:end].decode("latin-1").split("\r\n")
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    )
    return ResponseHead(lines[0], headers), raw[end + 4 :]


@dataclass(frozen=True)
class ChunkStep:
    """One step of decoding a chunked body: a size line and the bytes it announces.

    kind: "chunk" (size > 0), "last" (the zero-size chunk: the body is over) or
    "incomplete" (the bytes stop in the middle: more must arrive).
    """

    offset: int
    size_line: bytes
    size: int
    data: bytes
    kind: str

    def describe(self, max_data_bytes: int = 64) -> str:
        """Return one line: where the step starts in the body, the hex size, its value, the data.

        The start is a byte offset into the body ("at byte  219"), not a time.
        The data is shortened to about max_data_bytes.
        """
        where = f"at byte {self.offset:>4}"
        size_line = f"{self.size_line.decode('latin-1')!r:>6}"
        if self.kind == "last":
            return f"{where}  {size_line} = 0 bytes: end of body"
        if self.kind == "incomplete":
            return f"{where}  incomplete: {len(self.data)} bytes wait for the rest"
        data = self.data
        if len(data) > max_data_bytes:
            data = data[: max_data_bytes // 2] + b"..." + data[-max_data_bytes // 2 :]
        return f"{where}  {size_line} = {self.size:>3} bytes: {data!r}"


def parse_chunked(body: bytes) -> list[ChunkStep]:
    """Return the steps of decoding an HTTP/1.1 chunked body, up to the zero-size chunk.

    Each chunk is `<size in hex>[;extensions]CRLF <size bytes> CRLF`; a chunk of
    size 0 (then optional trailer lines and a final CRLF) ends the body. Bytes
    that stop mid-chunk give a last step of kind "incomplete".
    """
    steps: list[ChunkStep] = []
    pos = 0
    while pos < len(body):
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            steps.append(ChunkStep(pos, body[pos:], 0, b"", "incomplete"))
            break
        size_line = body[pos:eol]
        size_hex = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_hex, 16)
        except ValueError:
            raise ValueError(f"bad chunk size line {size_line!r} at byte {pos}") from None
        start = eol + 2
        if size == 0:
            end = body.find(b"\r\n\r\n", eol)  # trailer lines, if any, end with a blank line
            kind = "last" if end >= 0 else "incomplete"
            steps.append(ChunkStep(pos, size_line, 0, b"", kind))
            break
        if len(body) < start + size + 2:
            steps.append(ChunkStep(pos, size_line, size, body[start : start + size], "incomplete"))
            break
        if body[start + size : start + size + 2] != b"\r\n":
            raise ValueError(f"chunk at byte {pos} announced {size} bytes but no CRLF follows them")
        steps.append(ChunkStep(pos, size_line, size, body[start : start + size], "chunk"))
        pos = start + size + 2
    return steps


def encode_chunked(pieces: Iterable[bytes]) -> bytes:
    """Return `pieces` framed with chunked transfer encoding, ending with the zero-size chunk."""
    out = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p]
    return b"".join(out) + b"0\r\n\r\n"


def dechunk(body: bytes) -> bytes:
    """Return the payload of a chunked body: the data of every complete chunk, joined."""
    return b"".join(step.data for step in parse_chunked(body) if step.kind == "chunk")


def chunked_complete(body: bytes) -> bool:
    """Return True once the zero-size chunk (and its final CRLF) has arrived."""
    steps = parse_chunked(body)
    return bool(steps) and steps[-1].kind == "last"


def h2_data_frames(pieces: Iterable[bytes], *, stream_id: int = 1) -> list[bytes]:
    """Return HTTP/2 DATA frames for `pieces`: a 9-byte header each, END_STREAM on the last.

    Header: 24-bit length, type 0x0 (DATA), flags (0x1 = END_STREAM), a reserved
    bit and the 31-bit stream id. The end of the body is a flag, not a zero chunk.
    """
    pieces = [p for p in pieces if p] + [b""]
    frames = []
    for i, piece in enumerate(pieces):
        flags = 0x1 if i == len(pieces) - 1 else 0x0
        header = len(piece).to_bytes(3, "big") + bytes([0x0, flags])
        frames.append(header + (stream_id & 0x7FFFFFFF).to_bytes(4, "big") + piece)
    return frames


def _quic_varint(n: int) -> bytes:
    for size, prefix in ((1, 0x00), (2, 0x40), (4, 0x80), (8, 0xC0)):
        if n < 1 << (8 * size - 2):
            raw = bytearray(n.to_bytes(size, "big"))
            raw[0] |= prefix
            return bytes(raw)
    raise ValueError(f"{n} is too large for a QUIC variable-length integer")


def h3_data_frames(pieces: Iterable[bytes]) -> list[bytes]:
    """Return HTTP/3 DATA frames: type 0x00 and a QUIC varint length, then the bytes.

    HTTP/3 has no end flag in the frame: QUIC closes the stream (FIN) instead.
    """
    return [_quic_varint(0x00) + _quic_varint(len(p)) + p for p in pieces if p]
