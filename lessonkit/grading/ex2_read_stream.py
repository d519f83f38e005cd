"""Exercise 2: a stream reader that survives any cut, ``read_stream(chunks) -> (text, complete)``.

The lesson dialect (``data: {"delta": ...}``, ``: ping`` comments, ``data:
[DONE]``), cut anywhere, with UTF-8 decoded incrementally. The reference is
the course client, ``lessonkit.core.client.read_stream(chunks, "lesson")``.
The practice stream is ``lessonkit.core.practice``'s, as in the lesson.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lessonkit.core import client, llm, network
from lessonkit.core.practice import PRACTICE_TOKENS, practice_wire
from lessonkit.grading.engine import Exercise, Rule
from lessonkit.grading.streams import (
    chunks_cases,
    empty_chunks_case,
    event_ends,
    hints_of,
    reader_exercise,
    sizes,
    split_inside_characters,
)

__all__ = ["exercise", "reference", "rules"]

# Which rule's hint fits a diagnosed cause (see streams.stream_diagnosis).
CAUSES = {
    "decode": "a character split across chunks survives",
    "done_json": "[DONE] ends the stream and is not JSON",
    "comment": "heartbeat comments (': ping') are skipped",
    "chunk_not_event": "an event cut across two chunks waits for the rest",
    "append": "deltas are appended, never replaced",
    "while": "several events in one chunk are all handled",
}


def reference(chunks: Iterable[bytes]) -> tuple[str, bool]:
    """Return (text, complete) of a lesson-dialect stream cut anywhere."""
    reply = client.read_stream(chunks, "lesson")
    return reply.text, reply.complete


def _lesson_wire(tokens: Sequence[str], **options: Any) -> bytes:
    return llm.wire_bytes(llm.Answer(tuple(tokens), "stop"), "lesson", **options)


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 2, public first, then hidden."""
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
    accents = practice_wire(["é", " ü"], heartbeat=False)
    emoji = practice_wire(["€", " 😀"], heartbeat=False)
    c = chunks_cases  # Rule.cases from lists of chunks

    def by_events(data: bytes, group: int) -> list[bytes]:
        ends = event_ends(data)
        return network.cut_at(data, ends[group - 1 :: group][:-1] if len(ends) > group else [])

    return (
        Rule(
            "the whole stream in one chunk",
            "Split the buffer at blank lines, strip 'data: ', parse the JSON, add its delta.",
            c("whole", [[practice], [plain], [_lesson_wire(llm.tokenize(llm.RUNNING_ANSWER))]]),
        ),
        Rule(
            "deltas are appended, never replaced",
            "Each event carries only the new piece: text += delta, not text = delta.",
            c("append", [[three], network.cut_at(three, event_ends(three)[:-1])]),
        ),
        Rule(
            "[DONE] ends the stream and is not JSON",
            "Compare the data with '[DONE]' before calling json.loads.",
            c("done", [[b"data: [DONE]\n\n"], [tiny]]),
        ),
        Rule(
            "complete only after [DONE] arrives",
            "Start with complete = False and set it to True only when the [DONE] event comes.",
            c("complete", [[no_done], [plain[:-2]], [tiny.replace(b"[DONE]\n\n", b"[DONE]\n")]]),
        ),
        Rule(
            "heartbeat comments (': ping') are skipped",
            "An event whose text starts with ':' is a comment: skip it, do not parse it.",
            c("ping", [[pinged], by_events(pinged, 1), [b": ping\n\n" + tiny]]),
        ),
        Rule(
            "several events in one chunk are all handled",
            "After adding a chunk, handle every complete event in the buffer: `while`, not `if`.",
            c("several", [by_events(practice, 2), by_events(practice, 3), [three]]),
        ),
        Rule(
            "an event cut across two chunks waits for the rest",
            "A chunk is not an event: keep a buffer and act only on events ended by a blank line.",
            c("two-cut", list(network.every_cut(tiny))[1:-1]),  # both pieces non-empty
        ),
        Rule(
            "every chunk size gives the same answer",
            "Try cut(wire, 1): the bytes may arrive one at a time.",
            c("sizes", [network.cut(practice, size) for size in sizes(len(practice))]),
        ),
        Rule(
            "a character split across chunks survives",
            "Decode with codecs.getincrementaldecoder('utf-8')(); it keeps half a character.",
            c(
                "utf8",
                [*split_inside_characters(accents), *split_inside_characters(emoji)]
                + [network.cut(emoji, 1), network.cut(practice, 5)],
            ),
        ),
        Rule(
            "a dropped connection keeps the text so far, with complete=False",
            "Only whole events count; a half event at the end is never shown.",
            c("drop", [network.cut(practice[:n], 16) for n in range(len(practice))]),
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
        ),
        Rule(
            "long answers cut at seeded random points",
            "Test your reader on cut(wire, 1) and on random cuts of a long answer.",
            c(
                "random",
                [
                    network.random_cuts(
                        _lesson_wire(llm.long_answer(40 + 7 * s, seed=s).tokens), seed=s
                    )
                    for s in range(8)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "heartbeats while the model thinks, cut anywhere",
            "Comments may come before, between and after the data events.",
            c(
                "heartbeat",
                [
                    network.random_cuts(
                        _lesson_wire(llm.answer_for("Where is my parcel?").tokens, heartbeat_ms=15),
                        seed=s,
                        max_piece_bytes=9,
                    )
                    for s in range(4)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "drops anywhere in a longer answer",
            "Only whole events count, and complete stays False without [DONE].",
            c(
                "long-drop",
                [
                    network.random_cuts(
                        network.drop_after(
                            _lesson_wire(llm.answer_for("Can I change the address?").tokens), n
                        ),
                        seed=n,
                    )
                    for n in range(0, 1400, 37)
                ],
            ),
            hidden=True,
        ),
        Rule(
            "characters from other scripts, split anywhere",
            "Multi-byte characters may be split at any byte: decode incrementally.",
            c(
                "scripts",
                [
                    network.cut(_lesson_wire(["日本", " 😀", " naïve", " Zürich", " €5"]), size)
                    for size in (1, 2, 3, 5, 7)
                ],
            ),
            hidden=True,
        ),
    )


def exercise() -> Exercise:
    """Return exercise 2, graded against ``reference``."""
    graded = rules()
    return reader_exercise(
        "read_stream",
        "Exercise 2: a stream reader that survives any cut",
        30,
        graded,
        reference,
        returns=[("text", (str,)), ("complete", (bool,))],
        dialect="lesson",
        hints=hints_of(graded, CAUSES),
    )
