"""Which of the course's own answers learner code really calls: ``recording() -> names``.

An exercise asks the learner to write something the course already has: a
stream reader (``lessonkit.client.read_stream``), a WHATWG parser
(``lessonkit.sse.SSEDecoder``), the timing formula, the checker's reference
answers. A function that hands its work to one of those would pass every
check, so the process that runs learner code records, while the learner's
function runs, every call into the course's answers:

* ``install()`` replaces the code of each answer function and method (the
  catalogue ``ANSWERS``) with a trampoline that notes its public name, then
  runs the original. It patches the function objects themselves, so a name
  imported before (``from lessonkit.client import read_stream``), a bound
  method or a stored reference all count. Only the outermost course call is
  noted (``read_stream``, not the decoder inside it).
* ``recording()`` is the window: ``with recording() as used: fn(*args)``.
* ``copies(fn)`` reads code instead: a learner function, or a function or
  class it names, whose bytecode equals an answer's (a pasted copy of the
  course's source).
* An audit hook notes a course answer module executed again (``reload``) and a
  patched function's ``__code__`` put back: both hide calls, so they count as
  calls (``tampering()``).

Which names an exercise may use is the exercise's business
(``Exercise.allowed``, e.g. exercise 4 may use ``lessonkit.sse``); this module
records everything. It runs only in processes that run learner code (the
grading child, ``check``'s fork): never in the grader, whose references must
stay untouched. It stops honest use of the course's answers; learner code that
deliberately digs the originals out of this module is out of its reach (the
feedback and the instructor's report then still show what passed).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["ANSWERS", "copies", "install", "installed", "recording", "tampering"]

# module, the answers in it ("*": every function and method written in it), the name shown
ANSWERS: tuple[tuple[str, tuple[str, ...] | str, str], ...] = (
    ("lessonkit.core.sse", "*", "lessonkit.sse"),
    ("lessonkit.core.client", "*", "lessonkit.client"),
    ("lessonkit.core.dialects", "*", "lessonkit.core.dialects"),
    ("lessonkit.core.practice", ("practice_reader", "feed_reader"), "lessonkit.core.practice"),
    (
        "lessonkit.core.timeline",
        ("response_times", "visible_times_ms", "frame", "frames"),
        "lessonkit.core.timeline",
    ),
    ("lessonkit.grading.ex1_response_times", ("reference",), ""),
    ("lessonkit.grading.ex2_read_stream", ("reference",), ""),
    ("lessonkit.grading.ex3_now_change_it", ("reference", "_run_experiments"), ""),
    ("lessonkit.grading.ex4_read_anthropic", ("reference",), ""),
    ("lessonkit.grading.ex5_resume", ("reference",), ""),
    ("lessonkit.grading.ex6_parse_sse", ("reference", "conformance_cases"), ""),
)
# Writers in an answer module: building a stream is not reading one.
_NOT_ANSWERS = {"lessonkit.core.sse": {"encode", "comment", "_check_one_line"}}
_MIN_COPY_BYTES = 64  # shorter bytecode may match by chance ("return self._text")
_ENTER = "__lessonkit_integrity__"

_originals: dict[int, tuple[Callable[..., Any], str]] = {}  # key -> (original, shown name)
_patched: dict[int, int] = {}  # id(function) -> key
_fingerprints: dict[tuple, str] = {}  # bytecode fingerprint -> shown name
_files: dict[str, str] = {}  # source file of an answer module -> its shown module name
_recording: dict[str, None] | None = None
_tampered: dict[str, None] = {}
_depth = 0
_trampolines: dict[int, types.CodeType] = {}  # compiled once per process, reused after fork


def _answer_functions() -> Iterator[tuple[str, Callable[..., Any], str]]:
    """Yield (module name, function, shown name) for every course answer."""
    for module_name, names, shown in ANSWERS:
        module = importlib.import_module(module_name)
        prefix = shown or module_name
        skip = _NOT_ANSWERS.get(module_name, set())
        for name, obj in vars(module).items():
            if names != "*" and name not in names or name in skip:
                continue
            if isinstance(obj, types.FunctionType):
                found = [(obj, f"{prefix}.{name}")]
            elif isinstance(obj, type) and obj.__module__ == module_name:
                found = [(fn, f"{prefix}.{name}") for fn in _methods(obj)]
            else:
                continue
            for fn, shown_name in found:
                if fn.__code__.co_filename == module.__file__ and not fn.__closure__:
                    yield module_name, fn, shown_name


def _methods(cls: type) -> Iterator[types.FunctionType]:
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            yield from (f for f in (value.fget, value.fset) if isinstance(f, types.FunctionType))
        elif isinstance(value, types.FunctionType):
            yield value


def _fingerprint(code: types.CodeType) -> tuple:
    consts = tuple(
        _fingerprint(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts
    )
    return (code.co_code, code.co_names, consts)


def _codes_in(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes_in(const)


def _enter(key: int, args: tuple, kwargs: dict) -> Any:
    """Run the original of a patched answer, noting its name when a recording is open."""
    global _depth
    original, shown = _originals[key]
    if _recording is not None and _depth == 0:
        _recording.setdefault(shown)
    _depth += 1
    try:
        return original(*args, **kwargs)
    finally:
        _depth -= 1


def _trampoline(key: int, fn: types.FunctionType) -> types.CodeType:
    code = _trampolines.get(key)
    if code is None:
        source = f"def {fn.__name__}(*args, **kwargs):\n    return {_ENTER}({key}, args, kwargs)\n"
        outer = compile(source, fn.__code__.co_filename, "exec")
        code = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
        _trampolines[key] = code
    return code


def installed() -> bool:
    """Return True once this process records calls into the course's answers."""
    return bool(_patched)


def _catalogue() -> list[tuple[int, types.FunctionType, str]]:
    """Return (key, function, shown name) of every answer; learn their fingerprints (once)."""
    if not _catalogue_cache:
        for key, (_, fn, shown) in enumerate(_answer_functions()):
            for code in _codes_in(fn.__code__):
                if len(code.co_code) >= _MIN_COPY_BYTES:
                    _fingerprints.setdefault(_fingerprint(code), shown)
            _files[fn.__code__.co_filename] = shown.rsplit(".", 1)[0]
            _catalogue_cache.append((key, fn, shown))
            _answer_ids.add(id(fn))
    return _catalogue_cache


_catalogue_cache: list[tuple[int, types.FunctionType, str]] = []
_answer_ids: set[int] = set()


def install() -> None:
    """Patch every course answer in this process so that ``recording`` sees its calls (once).

    Call it only where learner code runs (the grading child, check's fork):
    the patched functions still work, a little slower.
    """
    if _patched:
        return
    for key, fn, shown in _catalogue():
        original = types.FunctionType(
            fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
        )
        original.__kwdefaults__ = fn.__kwdefaults__
        _originals[key] = (original, shown)
        fn.__globals__[_ENTER] = _enter
        fn.__code__ = _trampoline(key, fn)
        _patched[id(fn)] = key
    sys.addaudithook(_audit)


def _audit(event: str, args: tuple) -> None:
    """Note what hides calls from the trampolines: a reload, a ``__code__`` put back."""
    try:
        found = None
        if event == "exec" and args and isinstance(args[0], types.CodeType):
            module = _files.get(args[0].co_filename)
            if module is not None:
                found = f"{module} (executed again)"
        elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__":
            key = _patched.get(id(args[0]))
            if key is not None:
                found = f"{_originals[key][1]} (its code replaced)"
        if found is not None:
            _tampered.setdefault(found)
            if _recording is not None:
                _recording.setdefault(found)
    except Exception:  # an audit hook must never break the code it watches
        pass


@contextmanager
def recording() -> Iterator[dict[str, None]]:
    """Yield the names (an ordered dict's keys) of course answers called inside the block."""
    global _recording, _depth
    saved = _recording
    _recording, _depth = {}, 0
    try:
        yield _recording
    finally:
        _recording = saved


def tampering() -> list[str]:
    """Return what hid calls from this process's record so far (a reload, a restored code)."""
    return list(_tampered)


def copies(value: Any, *, limit: int = 200) -> list[str]:
    """Return the course answers whose bytecode appears in ``value``'s reach (pasted copies).

    Reads the code of ``value`` (a function or a class), of the functions and
    classes its code names in its module or holds in its closure, and so on, up
    to ``limit`` objects.
    """
    _catalogue()
    found: dict[str, None] = {}
    seen: set[int] = set()
    todo: list[Any] = [value]
    while todo and len(seen) < limit:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, type):
            todo += list(_methods(item))
            continue
        if (
            not isinstance(item, types.FunctionType)
            or id(item) in _patched
            or any(item is fn for _, fn, _ in _catalogue_cache)
        ):
            continue
        for cell in item.__closure__ or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        for code in _codes_in(item.__code__):
            shown = (
                _fingerprints.get(_fingerprint(code))
                if len(code.co_code) >= _MIN_COPY_BYTES
                else None
            )
            if shown:
                found.setdefault(shown)
            for name in code.co_names:
                target = item.__globals__.get(name)
                if isinstance(target, (types.FunctionType, type)) and id(target) not in seen:
                    todo.append(target)
    return list(found)
