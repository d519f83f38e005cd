"""Values across a process boundary: ``to_jsonable(value)`` and back, and one call's reply.

The learner's function may run in another process (``python -m
lessonkit.grading.child``); what it returns comes back as JSON:
bytes as ``{"__bytes__": base64}``, tuples as lists, anything else as its repr
(``{"__repr__": ..., "__type__": ...}``). A generator's items are collected
first (``materialize``), so ``yield`` is a fine way to write an answer. A list of
chunks, the usual argument, travels as one base64 text and the chunk sizes.
``show_plain`` prints a value in its JSON form as Python would print it.

An argument that must stay in the grader's process (exercise 5's scripted
server) is a ``Served``: it crosses as a placeholder, and the learner's code
gets a ``fetch`` that asks the grader for each connection's chunks.

``call_reply(fn, args)`` is one call of the learner's function, told as the
child's reply (result, raised, exited or timeout): every way of running it
(the sandboxed child, check's worker, this process) builds its reply here.

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

import base64
import linecache
import os
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import accumulate
from typing import Any

SHOWN_CHARS = 600  # longest input or value quoted in feedback
# Frames in these folders are the course's or Python's, not the learner's (see learner_line).
_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB = os.path.dirname(os.path.abspath(traceback.__file__))
_FETCH_PLACEHOLDER = "__fetch__"


class Served:
    """An argument that stays in the grader's process; the learner's code gets a stand-in.

    ``serving()`` returns the callable that answers the stand-in's requests
    (``fetch(last_event_id) -> chunks``) and records each one in ``.requests``.
    """

    def serving(self) -> Any:
        """Return the callable that answers requests for this argument."""
        raise NotImplementedError


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Return ``value`` as plain JSON data: tuples become lists, bytes a base64 object."""
    if _depth > 30:
        return {"__repr__": "...(nested too deep)", "__type__": type(value).__name__}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        if len(value) > 1 and all(isinstance(item, bytes) for item in value):
            # a list of chunks, the usual argument: one base64 text and the sizes
            joined = base64.b64encode(b"".join(value)).decode("ascii")
            return {"__chunks__": joined, "sizes": [len(item) for item in value]}
        return [to_jsonable(item, _depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item, _depth + 1) for key, item in value.items()}
    try:
        shown = repr(value)
    except Exception as exc:  # a learner's object whose repr breaks
        shown = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return {"__repr__": shown[:SHOWN_CHARS], "__type__": type(value).__name__}


def type_name(value: Any) -> str:
    """Return "a str", "a list or tuple", ... for a value in its JSON form."""
    if isinstance(value, dict) and "__type__" in value:
        return f"a {value['__type__']}"
    if isinstance(value, list):
        return "a list or tuple"
    return f"a {type(value).__name__}"


def show_plain(value: Any) -> str:
    """Return a value in its JSON form as Python would print it (bytes as bytes)."""
    if isinstance(value, dict) and value.get("__type__") == "answer":
        return value["__repr__"]
    if isinstance(value, dict) and "__repr__" in value:
        return f"{value['__repr__']} (a {value.get('__type__', 'object')})"
    return repr(from_jsonable(value))


def materialize(value: Any) -> Any:
    """Return a list for a generator or iterator result (``yield`` is a fine way to write it)."""
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict)):
        return value
    if hasattr(value, "__next__") and hasattr(value, "__iter__"):
        return list(value)
    return value


def from_jsonable(value: Any) -> Any:
    """Return ``value`` with base64 objects turned back into bytes (lists stay lists)."""
    if isinstance(value, list):
        return [from_jsonable(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        if set(value) == {"__chunks__", "sizes"} and isinstance(value["sizes"], list):
            return _chunks(value["__chunks__"], value["sizes"])
        return {key: from_jsonable(item) for key, item in value.items()}
    return value


def _chunks(encoded: Any, sizes: list) -> list[bytes]:
    """Return the list of chunks that ``to_jsonable`` packed as one base64 text and sizes."""
    data = base64.b64decode(encoded)
    sizes = [int(size) for size in sizes]
    return [data[end - size : end] for size, end in zip(sizes, accumulate(sizes), strict=True)]


def encode_args(args: Sequence[Any]) -> list[Any]:
    """Return call arguments as JSON data; a Served argument becomes a placeholder."""
    return [{_FETCH_PLACEHOLDER: 1} if isinstance(a, Served) else to_jsonable(a) for a in args]


def decode_args(args: Sequence[Any], fetch: Callable[..., Any] | None = None) -> list[Any]:
    """Return the arguments ``encode_args`` sent, with ``fetch`` in place of the placeholder."""
    out = []
    for arg in args:
        if isinstance(arg, dict) and set(arg) == {_FETCH_PLACEHOLDER}:
            out.append(fetch)
        else:
            out.append(from_jsonable(arg))
    return out


class TimeUp(BaseException):
    """Raised inside the learner's code when its time is up (a BaseException on purpose)."""


def call_reply(
    fn: Callable[..., Any],
    args: Sequence[Any],
    limit: AbstractContextManager | None = None,
    *,
    everything: bool = False,
) -> dict:
    """Return the reply to ``fn(*args)`` run inside ``limit`` (a time limit that raises TimeUp).

    The reply is {"op": "result", "value": ...}, "raised" (type, message, the
    learner's line), "exited" (sys.exit) or "timeout". ``everything``: report
    a KeyboardInterrupt too (the child does; in a kernel it interrupts the cell).
    """
    caught = BaseException if everything else Exception
    try:
        with limit or nullcontext():
            value = materialize(fn(*args))
    except TimeUp:
        return {"op": "timeout"}
    except SystemExit:
        return {"op": "exited"}  # the function tried to end the process
    except caught as exc:
        return {
            "op": "raised",
            "type": type(exc).__name__,
            "message": message_of(exc),
            "where": learner_line(exc.__traceback__),
            "at": learner_frame(exc.__traceback__),
            "detail": error_detail(exc),
        }
    return {"op": "result", "value": to_jsonable(value)}


def message_of(exc: BaseException) -> str:
    """Return an exception's message, at most 2,000 characters (never raises)."""
    try:
        return str(exc)[:2000]
    except Exception:
        return "(the exception's message could not be shown)"


def error_detail(exc: BaseException) -> str | None:
    """Return the start of the text a JSONDecodeError could not parse (None for other errors)."""
    doc = getattr(exc, "doc", None)
    if isinstance(exc, ValueError) and isinstance(doc, str):
        return doc[:200]
    return None


def learner_frame(tb: Any) -> tuple[str, int, str] | None:
    """Return (file name, line number, code name) of the innermost frame in the learner's code."""
    where = None
    for frame, lineno in traceback.walk_tb(tb):
        code = frame.f_code
        name = os.path.abspath(code.co_filename) if not code.co_filename.startswith("<") else ""
        if name.startswith(_LIBRARY) or name.startswith(_STDLIB):
            continue
        where = (code.co_filename, lineno or 0, code.co_qualname)
    return where


def learner_line(tb: Any) -> str | None:
    """Return "line N: source" of the innermost traceback frame in the learner's code."""
    where = learner_frame(tb)
    return line_at(where[0], where[1]) if where else None


def line_at(filename: str, lineno: int) -> str:
    """Return "line N: source", or "line N" where this process cannot read the source.

    The kernel can read a notebook cell's source; a worker process it started
    cannot, so the kernel fills it in from the worker's file name and number.
    """
    source = linecache.getline(filename, lineno).strip()
    return f"line {lineno}: {source}" if source else f"line {lineno}"
