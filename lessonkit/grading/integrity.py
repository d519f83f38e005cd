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
   (the globals it names, its closure, defaults and constants, and the items
   of the containers among them) for the course's answer data: exercise 3's
   answer key, whose texts are ``KeyText`` (a dict filled from
   ``reference()``), and exercise 6's conformance cases (``CaseForms``): three
   or more of their inputs -- as bytes, as str, as hex or as a tuple of byte
   values -- or of their expected events, as a lookup table holds them; or
   their data file, ``lessonkit/data/sse_cases.json``: its name (a path the
   function reads at each call) or its text.

``copies`` returns each answer found with what the function holds of it ("a
copy of its code", "the inputs of 32 of its cases (as str)"), which the
feedback says instead of "your function calls it".

Which names an exercise may use is the exercise's business (``Exercise.allowed``,
e.g. exercise 4 may use ``lessonkit.sse``); this module reports everything. It
stops honest use of the course's answers; learner code that deliberately hides
a call (C code, ``sys.settrace`` of its own) is out of its reach, and the
feedback and the instructor's report then still show what passed.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
CASES_HELD = 3  # conformance inputs (or outputs) a function may hold before it holds "the cases"
CASES_FILE = "data/sse_cases.json"  # in lessonkit: the one copy of exercise 6's cases
_COURSE = str(Path(__file__).resolve().parent.parent)  # learner code is never in here
EX3_KEY = "lessonkit.grading.ex3_now_change_it.reference"  # the names the held data is shown by
EX6_CASES = "lessonkit.grading.ex6_parse_sse.conformance_cases"


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


def codes_in(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes_in(const)


def _fingerprints() -> dict[tuple, str]:
    """Return bytecode fingerprint -> the answer it belongs to, for every answer's code."""
    found: dict[tuple, str] = {}
    for fn, shown in _answer_functions():
        for code in codes_in(fn.__code__):
            if len(code.co_code) >= MIN_COPY_BYTES:
                found.setdefault(_fingerprint(code), shown)
    return found


class CaseForms:
    """Exercise 6's conformance cases in each form a lookup table may hold them.

    ``inputs`` maps each input, written as bytes, as str (UTF-8 with U+FFFD for
    a bad byte, or Latin-1), as hex or as a tuple of byte values, to (case
    name, how it is written); ``events`` maps each non-empty list of expected
    events, as a tuple of (type, data, id) tuples, to the names of the cases
    that expect it. ``text`` is the data file's text.
    """

    def __init__(self) -> None:
        from importlib import resources

        from lessonkit.grading import ex6_parse_sse as ex6

        self.inputs: dict[Any, tuple[str, str]] = {}
        self.events: dict[tuple, set[str]] = {}
        for case in ex6.conformance_cases():
            data, name = case["input"], case["name"]
            if len(data) > 2:  # shorter inputs may be anything's constant
                self.inputs[data] = (name, "as bytes")
                for written in (data.decode("utf-8", "replace"), data.decode("latin-1")):
                    self.inputs.setdefault(written, (name, "as str"))
                self.inputs.setdefault(data.hex(), (name, "as hex"))
                self.inputs.setdefault(tuple(data), (name, "as byte values"))
            if case["events"]:
                self.events.setdefault(tuple(map(tuple, case["events"])), set()).add(name)
        self.text = resources.files("lessonkit").joinpath(CASES_FILE).read_text("utf-8")

    def file_sign(self, item: Any) -> str:
        """Return what of the data file ``item`` is ("the path of ...", "the text of ..."), or ""."""
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if isinstance(item, bytes):
            item = item.decode("utf-8", "replace")
        if not isinstance(item, str):
            return ""
        if item == self.text:
            return "the text of its data file"
        # a path or a file name ends with it (a sentence that names the file rarely does)
        return "the path of its data file" if item.endswith(CASES_FILE.rsplit("/")[-1]) else ""


def _as_key(item: Any) -> Any:
    """Return ``item`` in the hashable form ``CaseForms`` keys use, or None."""
    if isinstance(item, (bytes, str)):
        return item
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    if not isinstance(item, (list, tuple)) or not 0 < len(item) <= 4096:
        return None
    if all(isinstance(b, int) and not isinstance(b, bool) for b in item):
        return tuple(item)
    if all(isinstance(e, (list, tuple)) and len(e) == 3 for e in item):
        if all(isinstance(x, str) for e in item for x in e):
            return tuple(tuple(e) for e in item)  # a list of (type, data, id) events
    return None


def reach(value: Any, limit: int) -> Iterator[Any]:
    """Yield the learner's objects ``value`` holds: the functions and classes its code names,
    its closure, defaults and constants, what a ``functools.partial`` binds, and the items
    of the containers among them (at most ``limit`` objects)."""
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
        elif isinstance(item, functools.partial):
            todo += [item.func, *item.args, *item.keywords.values()]
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
    for code in codes_in(fn.__code__):
        held += [c for c in code.co_consts if not isinstance(c, types.CodeType)]
        held += [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
    return [h for h in held if not isinstance(h, types.ModuleType)]


class Catalogue:
    """The course's answers as code and data, read once: ``catalogue.copies(value)``.

    Building it imports the answer modules and reads each answer's bytecode (a
    few tens of ms): a process that checks many functions builds one.
    """

    def __init__(self) -> None:
        from lessonkit.grading import ex3_now_change_it as ex3

        self.fingerprints = _fingerprints()
        self.cases = CaseForms()
        self.key_types = (ex3.KeyText, ex3.AnswerKey)

    def copies(self, value: Any, *, limit: int = 2000) -> dict[str, str]:
        """Return {course answer: what ``value`` holds of it}: pasted code, exercise 6's
        cases, the key. ``value`` is a learner's function (or class), or exercise 3's dict."""
        return _copies(self, value, limit)


def copies(value: Any, *, limit: int = 2000) -> dict[str, str]:
    """Return ``Catalogue().copies(value)``: for one check (a process of many builds one)."""
    return Catalogue().copies(value, limit=limit)


def _copies(catalogue: Catalogue, value: Any, limit: int) -> dict[str, str]:
    fingerprints, cases = catalogue.fingerprints, catalogue.cases
    found: dict[str, str] = {}
    inputs: dict[str, str] = {}  # case name -> how its input is written
    outputs: set[tuple] = set()  # expected event lists held
    file_signs: dict[str, None] = {}
    for item in reach(value, limit):
        if isinstance(item, catalogue.key_types):
            found.setdefault(EX3_KEY, "its answer key")
            continue
        if isinstance(item, types.FunctionType):
            if not _in_course(item):
                for code in codes_in(item.__code__):
                    if len(code.co_code) >= MIN_COPY_BYTES:
                        if shown := fingerprints.get(_fingerprint(code)):
                            found.setdefault(shown, "a copy of its code")
            continue
        key = _as_key(item)
        if key in cases.inputs:
            name, written = cases.inputs[key]
            inputs.setdefault(name, written)
        elif key in cases.events:
            outputs.add(key)
        if sign := cases.file_sign(item):
            file_signs.setdefault(sign)
    held = []
    if len(inputs) >= CASES_HELD:
        forms = " and ".join(sorted(set(inputs.values())))
        held.append(f"the inputs of {len(inputs)} of its cases ({forms})")
    if len(outputs) >= CASES_HELD:
        held.append(f"the expected events of {len(outputs)}" + ("" if held else " of its cases"))
    held += [f"{sign}, lessonkit/{CASES_FILE}" for sign in file_signs]
    if held:
        found.setdefault(EX6_CASES, " and ".join(held))
    return found
