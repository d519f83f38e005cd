"""Which of the course's own answers learner code uses: ``Recorder`` (calls) and ``copies`` (code, data).

An exercise asks the learner to write something the course already has: a
stream reader (``lessonkit.client.read_stream``), a WHATWG parser
(``lessonkit.sse.SSEDecoder``), the timing formula, the checker's reference
answers and cases. A function that hands its work to one of those would pass
every check. There are three ways to hand it in, and three checks, all here:

1. **Calling it.** While the learner's code runs, a ``Recorder`` sees each
   Python call (the ``"call"`` event of ``sys.settrace``) and notes those that
   enter a course answer: a code object whose file is an answer module's file
   (``ANSWERS``) and whose name is one of its answers. Only the outermost
   course call is noted (``read_stream``, not the decoder inside it). Nothing
   of the course is patched: a name imported earlier, a bound method, a stored
   reference or a module executed again (``importlib.reload``) run the same
   files, so they all count. The same recorder serves every runner: the
   grading child (which watches each rule's first three calls and every
   eighth after them: the hook costs time on every call), ``check``'s worker
   process and the in-process runner (every call).
2. **Pasting its code.** ``copies(value)`` reads the learner's code: bytecode
   equal to an answer's (a pasted copy of the course's source), in the
   function, the functions and classes it names, and so on.
3. **Holding its data.** ``copies`` also looks through what the function holds
   (the globals it names, its closure, defaults and constants) for the
   course's answer data: three or more of exercise 6's conformance inputs (a
   lookup table of the cases), or exercise 3's answer key, whose texts are
   ``KeyText`` (a dict filled from ``reference()``).

Which names an exercise may use is the exercise's business (``Exercise.allowed``,
e.g. exercise 4 may use ``lessonkit.sse``); this module reports everything. It
stops honest use of the course's answers; learner code that deliberately hides
a call (C code, ``sys.settrace`` of its own) is out of its reach, and the
feedback and the instructor's report then still show what passed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["ANSWERS", "Catalogue", "Recorder", "copies"]

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
NOT_ANSWERS = {"lessonkit.core.sse": ("encode", "comment", "_check_one_line")}
MIN_COPY_BYTES = 64  # shorter bytecode may match by chance ("return self._text")
CASES_HELD = 3  # conformance inputs a function may hold before it holds "the cases"
_COURSE = str(Path(__file__).resolve().parent.parent)  # learner code is never in here


class _AnswerFile:
    """The answers written in one module file: which code names count, and how they are shown."""

    def __init__(self, module: str, names: tuple[str, ...] | str, shown: str) -> None:
        self.module = module
        self.names = names
        self.shown = shown or module
        self.skip = NOT_ANSWERS.get(module, ())

    def answer(self, code: types.CodeType) -> str | None:
        """Return the shown name of the answer ``code`` belongs to, or None."""
        if not code.co_flags & inspect.CO_NEWLOCALS:
            return None  # a module or class body running (an import), not a call
        top = code.co_qualname.split(".", 1)[0]
        if top.startswith("<") or top in self.skip:
            return None
        if self.names != "*" and top not in self.names:
            return None
        return f"{self.shown}.{top}"


def _answer_files() -> dict[str, _AnswerFile]:
    """Return source file -> its answers, found without importing the modules."""
    files = {}
    for module, names, shown in ANSWERS:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            files[spec.origin] = _AnswerFile(module, names, shown)
    return files


class Recorder:
    """Notes the course answers that Python code calls while it records (one per run).

    ``with recorder.recording(): fn(*args)``; then ``recorder.take()`` returns
    the names noted and starts afresh. A runner that traces for its own reason
    (the in-process time budget) calls ``note(frame)`` from its trace function.
    """

    def __init__(self) -> None:
        self.files = _answer_files()
        self._used: dict[str, None] = {}

    def note(self, frame: types.FrameType) -> None:
        """Note the answer ``frame`` enters, unless code of an answer module called it."""
        found = self._answer_of(frame.f_code)
        if found is None or found in self._used:
            return
        caller = frame.f_back
        while caller is not None:
            if caller.f_code.co_filename in self.files:
                return  # inside the course's answer modules: only the outermost call counts
            caller = caller.f_back
        self._used[found] = None

    def _answer_of(self, code: types.CodeType) -> str | None:
        entry = self.files.get(code.co_filename)
        return entry.answer(code) if entry is not None else None

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Record the calls made inside the block (the tracer of before is put back after)."""
        files, note = self.files, self.note

        def on_call(frame: types.FrameType, event: str, arg: Any) -> None:
            if frame.f_code.co_filename in files:  # most calls: one look-up, then nothing
                note(frame)
            # returns None: no line events, only calls are watched

        before = sys.gettrace()
        sys.settrace(on_call)
        try:
            yield
        finally:
            sys.settrace(before)

    def take(self) -> list[str]:
        """Return the answers noted since the last take, in the order first called."""
        used, self._used = list(self._used), {}
        return used


# ---------------------------------------------------------------------------
# Copies: the course's code or data in what the learner's function holds


def _answer_functions() -> Iterator[tuple[types.FunctionType, str]]:
    """Yield (function, shown name) for every course answer (importing the answer modules)."""
    files = _answer_files()
    for module_name, _, _ in ANSWERS:
        module = importlib.import_module(module_name)
        entry = files.get(getattr(module, "__file__", ""))
        for obj in vars(module).values():
            candidates = _methods(obj) if isinstance(obj, type) else [obj]
            for fn in candidates:
                if isinstance(fn, types.FunctionType) and entry is not None:
                    shown = entry.answer(fn.__code__)
                    if shown and fn.__code__.co_filename == module.__file__:
                        yield fn, shown


def _methods(cls: type) -> list[types.FunctionType]:
    found = []
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            found += [f for f in (value.fget, value.fset) if isinstance(f, types.FunctionType)]
        elif isinstance(value, types.FunctionType):
            found.append(value)
    return found


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


def _fingerprints() -> dict[tuple, str]:
    """Return bytecode fingerprint -> the answer it belongs to, for every answer's code."""
    found: dict[tuple, str] = {}
    for fn, shown in _answer_functions():
        for code in _codes_in(fn.__code__):
            if len(code.co_code) >= MIN_COPY_BYTES:
                found.setdefault(_fingerprint(code), shown)
    return found


def _held_data() -> tuple[frozenset[bytes], tuple[type, ...]]:
    """Return the course's answer data: exercise 6's conformance inputs, exercise 3's key types."""
    from lessonkit.grading import ex3_now_change_it as ex3
    from lessonkit.grading import ex6_parse_sse as ex6

    inputs = frozenset(case["input"] for case in ex6.conformance_cases() if len(case["input"]) > 2)
    return inputs, (ex3.KeyText, ex3.AnswerKey)


def _reach(value: Any, limit: int) -> Iterator[Any]:
    """Yield the learner's objects ``value`` holds: the functions and classes its code names,
    its closure, defaults and constants, and the items of the containers among them."""
    seen: set[int] = set()
    todo: list[Any] = [value]
    while todo and len(seen) < limit:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, dict):
            todo += list(item.keys())[:500] + list(item.values())[:500]
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo += list(item)[:500]
        elif isinstance(item, type):
            todo += _methods(item)
        elif isinstance(item, types.FunctionType) and not _in_course(item):
            todo += _held_by(item)


def _in_course(fn: types.FunctionType) -> bool:
    return fn.__code__.co_filename.startswith(_COURSE)


def _held_by(fn: types.FunctionType) -> list[Any]:
    """Return what a function holds: closure cells, defaults, constants and the globals it names."""
    held: list[Any] = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    for cell in fn.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    for code in _codes_in(fn.__code__):
        held += [c for c in code.co_consts if not isinstance(c, types.CodeType)]
        held += [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
    return [h for h in held if not isinstance(h, types.ModuleType)]


class Catalogue:
    """The course's answers as code and data, read once: ``catalogue.copies(value)``.

    Building it imports the answer modules and reads each answer's bytecode (a
    few tens of ms): a process that checks many functions builds one.
    """

    def __init__(self) -> None:
        self.fingerprints = _fingerprints()
        self.inputs, self.key_types = _held_data()

    def copies(self, value: Any, *, limit: int = 2000) -> list[str]:
        """Return the course answers ``value`` holds (see ``copies``)."""
        return _copies(self, value, limit)


def copies(value: Any, *, limit: int = 2000) -> list[str]:
    """Return the course answers ``value`` holds: pasted code, the cases of exercise 6, the key.

    ``value`` is a learner's function (or class), or exercise 3's dict of answers.
    """
    return Catalogue().copies(value, limit=limit)


def _copies(catalogue: Catalogue, value: Any, limit: int) -> list[str]:
    fingerprints, inputs, key_types = catalogue.fingerprints, catalogue.inputs, catalogue.key_types
    found: dict[str, None] = {}
    cases_held: set[bytes] = set()
    for item in _reach(value, limit):
        if isinstance(item, key_types):
            found.setdefault("lessonkit.grading.ex3_now_change_it.reference")
        elif isinstance(item, bytes) and item in inputs:
            cases_held.add(item)
        elif isinstance(item, types.FunctionType) and not _in_course(item):
            for code in _codes_in(item.__code__):
                if len(code.co_code) >= MIN_COPY_BYTES:
                    shown = fingerprints.get(_fingerprint(code))
                    if shown:
                        found.setdefault(shown)
    if len(cases_held) >= CASES_HELD:
        found.setdefault("lessonkit.grading.ex6_parse_sse.conformance_cases")
    return list(found)
