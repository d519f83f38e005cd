"""Exercise 2: a stream reader that survives any cut, ``read_stream(chunks) -> (text, complete)``.

The lesson dialect (``data: {"delta": ...}``, ``: ping`` comments, ``data:
[DONE]``), cut anywhere, with UTF-8 decoded incrementally. The reference is
the course client, ``lessonkit.core.client.read_stream(chunks, "lesson")``.
The practice stream is ``lessonkit.core.practice``'s, as in the lesson.

Points per rule (30 in all): the whole stream in one chunk is the lesson's
core (4); each behaviour of the reader 2; empty chunks and long answers 1;
four hidden rules (1 each) draw longer inputs of the public kinds from the
grading seed. May use from lessonkit: no stream reader (``allowed`` is empty):
reading the wire is the exercise.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from lessonkit.core import client, llm, network
from lessonkit.core.practice import PRACTICE_TOKENS, practice_wire
from lessonkit.grading.engine import Rule
from lessonkit.grading.mistakes import LESSON_MISTAKES
from lessonkit.grading.streams import (
    ReaderExercise,
    chunks_cases,
    empty_chunks_case,
    event_ends,
    sizes,
    split_inside_characters,
)

# Text that looks like the protocol: a reader must find comments, fields and the end
# marker by where they stand (a line's start, the whole data), never by searching the text.
LOOKALIKE_TOKENS = (
    "Type",
    " ping",
    " to",
    " test;",
    " data:",
    " [DONE]",
    " means",
    " : ping",
    " event: end.",
)
_LOOKALIKES = (" ping", " [DONE]", " data:", " event:", ": ping", " data: [DONE]", "ping", " id: 7")
EXTRA_HINTS = {
    "loose-done": "The end marker is an event whose data is exactly '[DONE]'; a token whose "
    "text contains [DONE] is still text.",
    "loose-data": "Remove the 'data: ' at the start of the event only (removeprefix); the text "
    "itself may contain 'data:'.",
}


def reference(chunks: Iterable[bytes]) -> tuple[str, bool]:
    """Return (text, complete) of a lesson-dialect stream cut anywhere."""
    reply = client.read_stream(chunks, "lesson")
    return reply.text, reply.complete


def _lesson_wire(tokens: Sequence[str], heartbeat_ms: float | None = None) -> bytes:
    return llm.wire_bytes(llm.Answer(tuple(tokens), "stop"), "lesson", heartbeat_ms=heartbeat_ms)


def _with_lookalikes(rng: random.Random, tokens: Sequence[str]) -> list[str]:
    out = list(tokens)
    for _ in range(rng.randint(3, 6)):
        out.insert(rng.randrange(len(out) + 1), rng.choice(_LOOKALIKES))
    return out


def _seeded(seed: int, what: str) -> random.Random:
    return random.Random(f"read_stream/{what}/{seed}")


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 2, public first, then hidden (drawn from the grading seed)."""
    practice = practice_wire(PRACTICE_TOKENS)
    plain = practice_wire(["Hi", " there"], heartbeat=False)
    tiny = practice_wire(["Hi"], heartbeat=False)
    three = practice_wire(["One", " two", " three"], heartbeat=False)
    no_done = practice_wire(PRACTICE_TOKENS, done=False)
    pinged = (
        b": ping\n\n"
        + b"".join(
            practice_wire([t], heartbeat=False, done=False) + b": ping\n\n"
            for t in ("Your", " order", " ships")
        )
        + b": ping\n\ndata: [DONE]\n\n"
    )
    lookalike = practice_wire(LOOKALIKE_TOKENS)
    accents = practice_wire(["é", " ü"], heartbeat=False)
    emoji = practice_wire(["€", " 😀"], heartbeat=False)
    c = chunks_cases  # Rule.cases from lists of chunks

    def by_events(data: bytes, group: int) -> list[bytes]:
        ends = event_ends(data)
        return network.cut_at(data, ends[group - 1 :: group][:-1] if len(ends) > group else [])

    def long_wire(seed: int) -> bytes:
        return _lesson_wire(llm.long_answer(40 + 7 * seed, seed=seed).tokens)

    def hidden_long(seed: int) -> list[list[bytes]]:
        rng = _seeded(seed, "long")
        tokens = llm.long_answer(rng.randint(30, 90), seed=rng.randrange(1 << 30)).tokens
        wire = _lesson_wire(_with_lookalikes(rng, tokens), heartbeat_ms=rng.choice((15, 40)))
        return [network.random_cuts(wire, seed=rng.randrange(1 << 30)) for _ in range(6)]

    def hidden_heartbeats(seed: int) -> list[list[bytes]]:
        rng = _seeded(seed, "heartbeat")
        out = []
        for _ in range(4):
            tokens = llm.long_answer(rng.randint(20, 60), seed=rng.randrange(1 << 30)).tokens
            wire = _lesson_wire(tokens, heartbeat_ms=rng.choice((10, 15, 25)))
            out.append(network.random_cuts(wire, seed=rng.randrange(1 << 30), max_piece_bytes=9))
        return out

    def hidden_drops(seed: int) -> list[list[bytes]]:
        rng = _seeded(seed, "drop")
        wire = _lesson_wire(
            llm.long_answer(rng.randint(30, 70), seed=rng.randrange(1 << 30)).tokens
        )
        points = sorted(rng.sample(range(len(wire)), 24))
        return [
            network.random_cuts(network.drop_after(wire, n), seed=rng.randrange(1 << 30))
            for n in points
        ]

    def hidden_scripts(seed: int) -> list[list[bytes]]:
        rng = _seeded(seed, "scripts")
        pool = [" 😀", " naïve", " Zürich", " €5", " Ελλάδα", " русский", " 한국어", " 🚀🚀", " ½"]
        tokens = ["日本", *rng.sample(pool, 5)]
        wire = _lesson_wire(tokens)
        return [network.cut(wire, size) for size in sorted(rng.sample(range(1, 9), 5))]

    return (
        Rule(
            "the whole stream in one chunk",
            "Split the buffer at blank lines, strip 'data: ', parse the JSON, add its delta.",
            c("whole", [[practice], [plain], [_lesson_wire(llm.tokenize(llm.RUNNING_ANSWER))]]),
            points=4,
        ),
        Rule(
            "deltas are appended, never replaced",
            "Each event carries only the new piece: text += delta, not text = delta.",
            c("append", [[three], network.cut_at(three, event_ends(three)[:-1])]),
            points=2,
            cause="append",
        ),
        Rule(
            "[DONE] ends the stream and is not JSON",
            "Compare the data with '[DONE]' before calling json.loads.",
            c("done", [[b"data: [DONE]\n\n"], [tiny]]),
            points=2,
            cause="done_json",
        ),
        Rule(
            "complete only after [DONE] arrives",
            "Start with complete = False and set it to True only when the [DONE] event comes.",
            c("complete", [[no_done], [plain[:-2]], [tiny.replace(b"[DONE]\n\n", b"[DONE]\n")]]),
            points=2,
            cause="complete",
        ),
        Rule(
            "heartbeat comments (': ping') are skipped",
            "An event whose text starts with ':' is a comment: skip it, do not parse it.",
            c("ping", [[pinged], by_events(pinged, 1), [b": ping\n\n" + tiny]]),
            points=2,
            cause="comment",
        ),
        Rule(
            "a token whose text holds 'ping', '[DONE]', 'data:' or ': ping' is still text",
            "Tell a comment by its first character (':' at the start of the event) and the end "
            "marker by the whole data ('[DONE]'), never by searching the text: a token may "
            "contain those words.",
            c("lookalike", [[lookalike], network.cut(lookalike, 7), by_events(lookalike, 2)]),
            points=2,
            cause="loose",
        ),
        Rule(
            "several events in one chunk are all handled",
            "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
            c("several", [by_events(practice, 2), by_events(practice, 3), [three]]),
            points=2,
            cause="while",
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "A chunk is not an event: keep a buffer and act only on events ended by a blank line.",
            c("two-cut", list(network.every_cut(tiny))[1:-1]),  # both pieces non-empty
            points=2,
            cause="chunk_not_event",
        ),
        Rule(
            "every chunk size gives the same answer",
            "Try cut(wire, 1): the bytes may arrive one at a time.",
            c("sizes", [network.cut(practice, size) for size in sizes(len(practice))]),
            points=2,
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with codecs.getincrementaldecoder('utf-8')(); it keeps half a character.",
            c(
                "utf8",
                [*split_inside_characters(accents), *split_inside_characters(emoji)]
                + [network.cut(emoji, 1), network.cut(practice, 5)],
            ),
            points=2,
            cause="decode",
        ),
        Rule(
            "a dropped connection keeps the text so far, with complete=False",
            "An event counts only once its blank line has arrived: keep its lines in the "
            "buffer until then. When the connection drops, a half event is never shown and "
            "complete stays False.",
            c(
                "drop",
                [network.cut(tiny[:n], 16) for n in range(len(tiny))]
                + [network.cut(practice[:n], 16) for n in range(len(practice))],
            ),
            points=2,
            cause="early",
        ),
        Rule(
            "empty chunks change nothing",
            "A network read can return b''; it adds nothing to the buffer.",
            lambda: [
                empty_chunks_case(chunks)
                for chunks in (
                    [b"", tiny],
                    [tiny[:9], b"", tiny[9:]],
                    [b"", *network.cut(plain, 9), b""],
                    [p for piece in network.random_cuts(plain, seed=3) for p in (piece, b"")],
                )
            ],
            control_hint="Your function gets these chunks wrong even with the b'' removed: "
            "fix the rules above first; this one is only about b''.",
            points=1,
        ),
        Rule(
            "long answers cut at random points",
            "Test your reader on cut(wire, 1) and on random cuts of a long answer.",
            c("random", [network.random_cuts(long_wire(s), seed=s) for s in range(3)]),
            points=1,
        ),
        Rule(
            "longer answers with protocol-like tokens and heartbeats, cut at random",
            "Comments and the end marker are found by their place, never by searching the text.",
            lambda seed: chunks_cases("hidden-long", hidden_long(seed))(),
            hidden=True,
            extends="a token whose text holds 'ping', '[DONE]', 'data:' or ': ping' is still text",
        ),
        Rule(
            "heartbeats while the model thinks, cut anywhere",
            "Comments may come before, between and after the data events.",
            lambda seed: chunks_cases("heartbeat", hidden_heartbeats(seed))(),
            hidden=True,
            extends="heartbeat comments (': ping') are skipped",
        ),
        Rule(
            "drops anywhere in a longer answer",
            "Only whole events count, and complete stays False without [DONE].",
            lambda seed: chunks_cases("long-drop", hidden_drops(seed))(),
            hidden=True,
            extends="a dropped connection keeps the text so far, with complete=False",
        ),
        Rule(
            "characters from other scripts, split anywhere",
            "Multi-byte characters may be split at any byte: decode incrementally.",
            lambda seed: chunks_cases("scripts", hidden_scripts(seed))(),
            hidden=True,
            extends="a character split across chunks survives",
        ),
    )


class ReadStream(ReaderExercise):
    """Exercise 2, graded against ``reference``, the course client's lesson dialect."""

    id = "read_stream"
    title = "Exercise 2: a stream reader that survives any cut"
    returns = (("text", (str,)), ("complete", (bool,)))
    dialect = "lesson"
    mistakes = LESSON_MISTAKES
    extra_hints = EXTRA_HINTS
    own_work = "reader"
    read = staticmethod(reference)
    make_rules = staticmethod(rules)
