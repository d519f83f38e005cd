"""What the stream-reader exercises share: chunk cases, cuts, ``ReaderExercise``, the diagnosis.

Exercises 2, 4 and 6 call the learner's function with one argument, a list of
chunks (``bytes``), and exercise 5's fetch returns such lists. Their cases are
built here the same way (``chunks_case``: sorted by bytes, then chunks), shown
the same way (``chunks_input``: a long list keeps its head and its tail, where
streams end). A reader returning ``(text, complete, ...)`` is a
``ReaderExercise``: its shape is checked and its hint read from what came
back (the mistakes of ``lessonkit.grading.mistakes``, then clues).

Pure: no clocks, sockets or widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

from lessonkit.core import sse
from lessonkit.core.dialects import interpret
from lessonkit.grading.codec import SHOWN_CHARS, show_plain, to_jsonable, type_name
from lessonkit.grading.engine import Case, Exercise, Outcome, Raised, Returned
from lessonkit.grading.mistakes import Mistakes

# ---------------------------------------------------------------------------
# Cases


def chunks_case(rule: str, chunks: Iterable[bytes]) -> Case:
    """Return the case "call the function with these chunks", sized by bytes, then chunks."""
    chunks = list(chunks)
    return Case(rule, (chunks,), (sum(len(c) for c in chunks), len(chunks)))


def chunks_cases(rule: str, chunk_lists: Iterable[list[bytes]]) -> Callable[[], list[Case]]:
    """Return ``Rule.cases``: one chunks_case per list of chunks."""
    return lambda: [chunks_case(rule, chunks) for chunks in chunk_lists]


def empty_chunks_case(chunks: list[bytes]) -> Case:
    """Return a case holding at least one b'', whose control is the same cut without them."""
    assert b"" in chunks, "an empty-chunk case must hold an empty chunk"
    case = chunks_case("empty", chunks)
    return Case(case.rule, case.args, case.size, control=([c for c in chunks if c],))


def event_ends(data: bytes) -> list[int]:
    """Return the offset just after each blank line that ends an event."""
    ends, start = [], 0
    while (i := data.find(b"\n\n", start)) != -1:
        ends.append(i + 2)
        start = i + 2
    return ends


def sizes(length: int) -> list[int]:
    """Return the chunk sizes to try on a stream of ``length`` bytes: 1 to 48, then every 17th."""
    return sorted(set(range(1, min(length, 48) + 1)) | set(range(48, length + 1, 17)) | {length})


def split_inside_characters(data: bytes) -> Iterator[list[bytes]]:
    """Yield two-piece cuts of ``data`` that land inside a multi-byte character."""
    for i in range(1, len(data)):
        if data[i] & 0xC0 == 0x80:  # a continuation byte: the cut splits a character
            yield [data[:i], data[i:]]


# ---------------------------------------------------------------------------
# Showing inputs and results


def chunks_input(case: Case) -> str:
    """Return ``chunks = [...]`` of a chunks case; a long list keeps its head and its tail
    (where streams end)."""
    chunks = case.args[0]
    text = f"chunks = {list(chunks)!r}"
    if len(text) > SHOWN_CHARS:
        total = sum(len(c) for c in chunks)
        middle = f" ... ({len(chunks)} chunks, {total} bytes in all; the middle left out) ... "
        keep = (SHOWN_CHARS - 40 - len(middle)) // 2
        text = text[:keep] + middle + text[-keep:]
    return text


def show_tuple(value: Any) -> str:
    """Return a returned tuple (a list in its JSON form) as Python would print the tuple."""
    return show_plain(tuple(value)) if isinstance(value, list) else show_plain(value)


# ---------------------------------------------------------------------------
# Which bug: the mistake read from what came back


MORE_CASES = 12  # of a rule's other cases, how many may tell two look-alike mistakes apart


def _gives(mistaken: Callable[[list[bytes]], Any], chunks: list[bytes], outcome: Outcome) -> bool:
    """Return True when a mistaken reader gives exactly the learner's value or error."""
    try:
        value, error = to_jsonable(mistaken(chunks)), None
    except Exception as exc:
        value, error = None, f"{type(exc).__name__}: {exc}"
    if isinstance(outcome, Raised):
        return error == outcome.error
    return isinstance(outcome, Returned) and error is None and value == outcome.value


def _clue(chunks: list[bytes], outcome: Outcome, dialect: str) -> str | None:
    if isinstance(outcome, Raised):
        return _clue_in_error(outcome)
    if (
        not isinstance(outcome, Returned)
        or not isinstance(outcome.value, list)
        or not outcome.value
    ):
        return None
    text = outcome.value[0]
    chunks = [c for c in chunks if c]
    deltas = _stream_deltas(chunks, dialect)
    if not isinstance(text, str) or len(deltas) < 2 or text == "".join(deltas):
        return None
    if text == deltas[-1]:
        return "append"
    events = b"".join(chunks).count(b"\n\n")
    prefixes = {"".join(deltas[:k]) for k in range(len(deltas))}
    if text in prefixes and len(chunks) < events:
        return "while"
    return None


def _clue_in_error(outcome: Raised) -> str | None:
    """Return the mistake an exception points to: a split character, or what JSON choked on."""
    if outcome.error_type == "UnicodeDecodeError":
        return "decode"
    if outcome.error_type == "JSONDecodeError" and outcome.detail is not None:
        doc = outcome.detail.strip()
        if "\n\n" in doc:  # several events parsed as one: chunks taken for events
            return "chunk_not_event"
        if doc.startswith("[DONE]"):
            return "done_json"
        if doc.startswith(":"):
            return "comment"
    return None


def _stream_deltas(chunks: Sequence[bytes], dialect: str) -> list[str]:
    """Return the text pieces of the complete events in ``chunks`` (non-empty ones)."""
    deltas = []
    for event in sse.decode_all(chunks):
        step = interpret(event, dialect)
        if step.delta:
            deltas.append(step.delta)
    return deltas


# ---------------------------------------------------------------------------
# A stream reader exercise


class ReaderExercise(Exercise):
    """A reader ``fn(chunks) -> tuple`` compared with ``read(chunks)``, the course's reader.

    A subclass gives ``read``, ``returns`` (each part's name and allowed
    types), its ``dialect`` and the ``mistakes`` learners make in it.
    """

    returns: ClassVar[Sequence[tuple[str, tuple[type, ...]]]] = ()
    dialect: ClassVar[str] = ""
    mistakes: ClassVar[Mistakes] = ()

    def read(self, chunks: list[bytes]) -> Any:
        """Return the right answer for a list of chunks."""
        raise NotImplementedError

    def reference(self, case: Case) -> Any:
        """Return the right answer for the case's chunks."""
        return self.read(case.args[0])

    @property
    def shape_hint(self) -> str:  # type: ignore[override]
        """Return the hint for a result of the wrong type: the tuple to return."""
        names = ", ".join(name for name, _ in self.returns)
        return (
            f"Return a tuple of {len(self.returns)}: `return {names}` "
            "(see the types in the exercise intro)."
        )

    def shape(self, got: Any) -> str | None:
        """Return what is wrong with the tuple that came back (a list in its JSON form), or None."""
        names = ", ".join(name for name, _ in self.returns)
        if not isinstance(got, list) or len(got) != len(self.returns):
            return f"{show_plain(got)} -- {self.id} must return a tuple ({names})"
        for (part, kinds), value in zip(self.returns, got, strict=True):
            if not isinstance(value, kinds):
                wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
                return f"{show_tuple(got)} -- {part} should be a {wanted}, got {type_name(value)}"
        return None

    def show_input(self, case: Case) -> str:
        """Return the chunks of the case as the feedback shows them."""
        return chunks_input(case)

    def show_value(self, value: Any) -> str:
        """Return a returned tuple as Python would print it."""
        return show_tuple(value)

    def diagnose(
        self, case: Case, outcome: Outcome, more: Sequence[tuple[Case, Outcome]] = ()
    ) -> str | None:
        """Return the cause of a failing read: first the classic mistakes as code, then clues.

        The mistaken reader (``lessonkit.grading.mistakes``) that gives exactly
        what the learner's gave on this input (the same value, or the same
        exception) names the cause; when several do, the rule's other cases
        keep those that agree with the learner there too, and the first left
        wins. Then clues in what came back: the exception type, the text
        json.loads choked on, a text that is only the last delta (replaced,
        not appended) or only the first deltas of a chunk holding more events
        (``if`` instead of ``while``).
        """
        chunks = list(case.args[0])
        alike = [(c, m) for c, m in self.mistakes if _gives(m, chunks, outcome)]
        for other, seen in list(more)[:MORE_CASES]:  # two mistakes alike here: the others decide
            if len({c for c, _ in alike}) < 2:
                break
            alike = [(c, m) for c, m in alike if _gives(m, list(other.args[0]), seen)] or alike
        return alike[0][0] if alike else _clue(chunks, outcome, self.dialect)
