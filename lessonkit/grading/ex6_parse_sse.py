"""Exercise 6 (stretch): a full WHATWG SSE parser, ``parse_sse(chunks) -> [(type, data, id)]``.

One rule per conformance case of ``lessonkit/data/sse_cases.json`` (the
course's one copy of them; ``conformance_cases()`` loads it), each fed whole,
one byte at a time and at every single cut, with that case's own hint. Then
seeded generated streams that mix every field kind, comments, a BOM and all
three line endings, compared with the course decoder, ``lessonkit.core.sse``.

Points (30 in all): each conformance case 0.5 (16), the public generated
streams 8, the hidden generated streams (drawn from the grading seed) 6. May
use from lessonkit: nothing of the wire format (``lessonkit.sse`` is the
course's answer; so are the conformance cases, called while the function runs
or held by it in any form, see ``lessonkit.grading.integrity``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from importlib import resources
from typing import Any

from lessonkit.core import network, sse
from lessonkit.grading.codec import from_jsonable, show_plain
from lessonkit.grading.engine import Case, Exercise, Rule
from lessonkit.grading.streams import chunks_case, chunks_input

CONFORMANCE_HINT = "Follow the WHATWG 'interpret an event stream' steps for this case."
CONFORMANCE_POINTS = 0.5
GENERATED_POINTS = (8, 6)  # public, hidden


def reference(chunks: Iterable[bytes]) -> list[tuple[str, str, str]]:
    """Return (event type, data, last event id) for each event the WHATWG algorithm dispatches."""
    return [(event.event, event.data, event.id) for event in sse.decode_all(chunks)]


def conformance_cases() -> tuple[dict, ...]:
    """Return the packaged SSE conformance cases: name, input bytes, expected events, hint."""
    raw = resources.files("lessonkit").joinpath("data/sse_cases.json").read_text("utf-8")
    cases = []
    for item in json.loads(raw):
        if "input_hex" in item:
            data = bytes.fromhex(item["input_hex"])
        else:
            data = item["input"].encode("utf-8")
        cases.append(
            {
                "name": item["name"],
                "input": data,
                "events": [tuple(e) for e in item["events"]],
                "hint": item.get("hint") or CONFORMANCE_HINT,
            }
        )
    return tuple(cases)


_LINE_ENDS = ("\n", "\r", "\r\n")
_FIELDS = [
    "data: {t}",
    "data:{t}",
    "data",
    "data:",
    "event: {w}",
    "event:{w}",
    "id: {n}",
    "id",
    "id: 7\x00",
    "retry: {n}",
    "retry: x{n}",
    ": {t}",
    ":",
    "{w}: {t}",
    "data :{t}",
]
_WORDS = ["add", "remove", "message", "café", "ping", "x y"]
_TEXTS = [
    "hello",
    " two spaces",
    "a:b: c",
    "é😀€",
    "[DONE]",
    '{"delta": "Hi"}',
    "",
    "data: x",
    ": ping",
    "event: add",
]


def generated_stream(seed: int) -> bytes:
    """Return a seeded random SSE stream mixing every field kind and line ending."""
    rng = random.Random(seed)
    lines: list[str] = ["\ufeff"] if rng.random() < 0.2 else []
    for _ in range(rng.randint(3, 18)):
        if rng.random() < 0.3:
            template = ""
        else:
            template = rng.choice(_FIELDS)
        line = template.format(t=rng.choice(_TEXTS), w=rng.choice(_WORDS), n=rng.randint(0, 99))
        lines.append(line + rng.choice(_LINE_ENDS))
    if rng.random() < 0.8:
        lines.append("\n")
    return "".join(lines).encode("utf-8")


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 6: one per conformance case, then generated streams."""
    rules = []
    for item in conformance_cases():
        data = item["input"]

        def cases(data=data, name=item["name"]) -> list[Case]:
            ways = [[data], network.cut(data, 1), *network.every_cut(data)]
            return [chunks_case(name, chunks) for chunks in ways]

        rules.append(
            Rule(f"conformance: {item['name']}", item["hint"], cases, points=CONFORMANCE_POINTS)
        )
    rules.append(
        Rule(
            "generated streams give the same events as lessonkit.core.sse.SSEDecoder",
            "Mix of fields, comments, BOM and line endings; the cut must not matter.",
            lambda: [
                chunks_case(
                    "gen", network.random_cuts(generated_stream(s), seed=s, max_piece_bytes=7)
                )
                for s in range(12)
            ],
            points=GENERATED_POINTS[0],
        )
    )

    def hidden(seed: int) -> list[Case]:
        rng = random.Random(f"parse_sse/{seed}")
        return [
            chunks_case(
                "gen-hidden",
                network.random_cuts(
                    generated_stream(rng.randrange(1 << 30)),
                    seed=rng.randrange(1 << 30),
                    max_piece_bytes=rng.choice((3, 5, 9)),
                ),
            )
            for _ in range(60)
        ]

    rules.append(
        Rule(
            "more generated streams, cut at random",
            "Every cut of the same bytes must give the same events.",
            hidden,
            hidden=True,
            points=GENERATED_POINTS[1],
            extends="generated streams give the same events as lessonkit.core.sse.SSEDecoder",
        )
    )
    return tuple(rules)


class ParseSSE(Exercise):
    """Exercise 6, graded against ``reference``, the course decoder."""

    id = "parse_sse"
    title = "Exercise 6 (stretch): a full WHATWG SSE parser"
    shape_hint = (
        "Return a list with one (event type, data, last event id) tuple of three str "
        "per dispatched event."
    )
    own_work = "parser"
    make_rules = staticmethod(rules)

    def reference(self, case: Case) -> list[tuple[str, str, str]]:
        """Return the events of the case's chunks."""
        return reference(case.args[0])

    def shape(self, got: Any) -> str | None:
        """Return what is wrong with the list of events that came back, or None."""
        if not isinstance(got, list):
            return f"{show_plain(got)} -- parse_sse must return a list of (type, data, id) tuples"
        for item in got:
            if not (
                isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
            ):
                return f"{self.show_value(got)} -- each event must be a tuple of three str"
        return None

    def show_input(self, case: Case) -> str:
        """Return the chunks of the case as the feedback shows them."""
        return chunks_input(case)

    def show_value(self, value: Any) -> str:
        """Return a list of events (lists in their JSON form) as a list of tuples."""
        if isinstance(value, list):
            return repr([tuple(v) if isinstance(v, list) else from_jsonable(v) for v in value])
        return show_plain(value)
