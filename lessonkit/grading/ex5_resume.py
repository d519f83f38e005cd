"""Exercise 5: resume after a drop with Last-Event-ID, ``resume(fetch) -> text``.

``fetch(last_event_id)`` opens one connection to GET /v1/stream (``id:`` per
token, ``event: done`` at the end) and returns its chunks. The checks serve it
from a ``FetchScript``: a scripted server whose connection i drops after
``drops[i]`` bytes. A ``FakeFetch`` serves a script and records the
Last-Event-ID of each call, so a case is right when the text is right and the
requests are the reference's. Both stay in the grader's process
(``codec.Served``); the learner's code gets a fetch that asks for each
connection's chunks.

Points per rule (15 in all): one connection with heartbeats 3; each kind of
drop 2; a drop just before ``done`` and tokens that look like the protocol 1;
two hidden rules (1 each) draw long answers with many drops and heartbeats
from the grading seed. May use from lessonkit: no stream reader (remembering
the last id of a *complete* event is the exercise).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lessonkit.core import llm, network, sse
from lessonkit.core.dialects import interpret
from lessonkit.grading.codec import Served, show_plain
from lessonkit.grading.engine import Case, Exercise, Outcome, Returned, Rule
from lessonkit.grading.streams import event_ends

MAX_FETCHES = 20  # a resume loop that asks more often than this is stopped
LOOKALIKE_TOKENS = ("We", " are", " done", " soon;", " event: done", " id: 9", " then", " more.")
HINTS = {
    "loose": "Tell the done event by its type (an event: done line), never by searching the "
    "text: a token may contain the word 'done'.",
    "no-id": "Pass the id of the last complete event to fetch() when you reconnect; sending "
    "None asks for the whole answer again.",
}


def reference(fetch: Callable[[str | None], Iterable[bytes]], max_attempts: int = 50) -> str:
    """Return the whole answer of a GET /v1/stream, reconnecting with Last-Event-ID after drops.

    ``fetch(last_event_id)`` opens one connection and returns its chunks;
    ``None`` means "no Last-Event-ID header" (the first request).
    """
    text: list[str] = []
    last_event_id: str | None = None
    for _ in range(max_attempts):
        decoder = sse.SSEDecoder()
        for chunk in fetch(last_event_id):
            for event in decoder.feed(chunk):
                step = interpret(event, "eventsource")
                text.append(step.delta)
                if step.done:
                    return "".join(text)
        decoder.close()
        # Spec: the last event ID string survives the connection; "" means no header.
        last_event_id = decoder.last_event_id or last_event_id
    raise RuntimeError(f"no done event after {max_attempts} connections")


@dataclass(frozen=True)
class FetchScript(Served):
    """A scripted server for the resume exercise: connection i drops after ``drops[i]`` bytes.

    Connections past the end of ``drops`` (or with ``None``) deliver the whole
    rest of the answer. Each connection's bytes are cut at seeded random points.
    """

    tokens: tuple[str, ...]
    drops: tuple[int | None, ...] = ()
    seed: int = 0
    heartbeat_ms: float | None = None

    def serving(self) -> FakeFetch:
        """Return a fresh FakeFetch serving this script."""
        return FakeFetch(self)

    def wire(self, last_event_id: str | None) -> bytes:
        """Return what the server would send for a request with this Last-Event-ID."""
        answer = llm.Answer(self.tokens, "stop")
        resume_after = last_event_id if last_event_id not in (None, "") else None
        return llm.wire_bytes(
            answer,
            "eventsource",
            timing=llm.Timing(prefill_ms=300, per_token_ms=40),
            options=llm.EventSourceOptions(resume_after_id=resume_after),
            heartbeat_ms=self.heartbeat_ms,
        )

    def respond(self, attempt: int, last_event_id: str | None) -> list[bytes]:
        """Return the chunks of connection number ``attempt`` (0 first)."""
        data = self.wire(last_event_id)
        if attempt < len(self.drops) and self.drops[attempt] is not None:
            data = network.drop_after(data, self.drops[attempt])
        return network.random_cuts(data, seed=self.seed * 101 + attempt, max_piece_bytes=24)

    def describe(self) -> str:
        """Return the call that replays this script in a notebook, and the answer in words.

        ``resume(practice_fetch(drops=[72], tokens=(...), seed=2))`` serves exactly
        the same chunks as the check did.
        """
        args = [f"drops={list(self.drops)!r}", f"tokens={self.tokens!r}", f"seed={self.seed}"]
        if self.heartbeat_ms:
            args.append(f"heartbeat_ms={self.heartbeat_ms:g}")
        drops = [
            f"connection {i} {'does not drop' if d is None else f'drops after {d} bytes'}"
            for i, d in enumerate(self.drops, 1)
        ]
        drops.append("later ones bring the rest" if drops else "no connection drops")
        return (
            f"resume(practice_fetch({', '.join(args)}))\n"
            f"            (answer {''.join(self.tokens)!r}; {', '.join(drops)})"
        )


class FakeFetch(Served):
    """``fetch(last_event_id) -> chunks`` served from a FetchScript; records each request."""

    def __init__(self, script: FetchScript) -> None:
        self.script = script
        self.requests: list[str | None] = []

    def serving(self) -> FakeFetch:
        """Return this fetch itself: its requests are the ones recorded."""
        return self

    def __call__(self, last_event_id: str | None = None) -> list[bytes]:
        if last_event_id is not None and not isinstance(last_event_id, str):
            last_event_id = str(last_event_id)
        self.requests.append(last_event_id)
        if len(self.requests) > MAX_FETCHES:
            raise RuntimeError(
                f"fetch was called more than {MAX_FETCHES} times; stop after the done event"
            )
        return self.script.respond(len(self.requests) - 1, last_event_id)


def rules() -> tuple[Rule, ...]:
    """Return the rules of exercise 5, public first, then hidden (drawn from the grading seed)."""
    running = tuple(llm.tokenize(llm.RUNNING_ANSWER))
    cafe = ("Your", " café", " order", " ships", " on", " Monday", " 😀", ".")
    first = FetchScript(running).wire(None)
    ends = event_ends(first)  # ends[0] closes the retry: block, ends[k] closes token k - 1
    done_at = first.rfind(b"event: done")
    look = FetchScript(LOOKALIKE_TOKENS).wire(None)

    def c(rule, scripts):
        return lambda: [
            Case(rule, (s,), (len(s.drops), sum(d or 0 for d in s.drops), s.seed)) for s in scripts
        ]

    def hidden_long(seed: int) -> list[Case]:
        rng = random.Random(f"resume/long/{seed}")
        scripts = []
        for _ in range(4):
            tokens = list(llm.long_answer(rng.randint(20, 45), seed=rng.randrange(1 << 30)).tokens)
            tokens.insert(rng.randrange(len(tokens)), rng.choice(LOOKALIKE_TOKENS[2:6]))
            drops = tuple(rng.randrange(0, 400) for _ in range(rng.randint(2, 6)))
            scripts.append(FetchScript(tuple(tokens), drops, seed=rng.randrange(1 << 16)))
        return c("long", scripts)()

    def hidden_heartbeats(seed: int) -> list[Case]:
        rng = random.Random(f"resume/heartbeat/{seed}")
        scripts = [
            FetchScript(
                tuple(llm.long_answer(rng.randint(8, 20), seed=rng.randrange(1 << 30)).tokens),
                tuple(rng.randrange(20, 200) for _ in range(rng.randint(1, 3))),
                seed=rng.randrange(1 << 16),
                heartbeat_ms=rng.choice((10, 25)),
            )
            for _ in range(2)
        ]
        return c("heartbeat", scripts)()

    return (
        Rule(
            "no drop: one connection gives the whole answer",
            "Stop reading when the 'done' event arrives; return the text. Comments carry no "
            "id and no text.",
            c(
                "nodrop",
                [FetchScript(running), FetchScript(cafe, seed=1, heartbeat_ms=25)],
            ),
            points=3,
        ),
        Rule(
            "one drop: reconnect with the id of the last event received",
            "Remember the id: field of each complete event; pass the last one to fetch().",
            c("one", [FetchScript(running, (ends[k],), seed=k) for k in (1, 2, 3, 5)]),
            points=2,
            cause="no-id",
        ),
        Rule(
            "a drop inside an event: that event is not counted and comes again",
            "Only a blank line completes an event; a half event at a drop is thrown away.",
            c("inside", [FetchScript(running, (ends[k] - 3,), seed=k) for k in (2, 4)]),
            points=2,
        ),
        Rule(
            "a drop before any event: reconnect without Last-Event-ID",
            "With no id received yet, call fetch(None) again.",
            c("early", [FetchScript(running, (5,)), FetchScript(running, (ends[0] + 4,))]),
            points=2,
        ),
        Rule(
            "several drops in a row, no gap and no duplicate",
            "Keep the last id across connections; a connection may bring no new event at all.",
            c(
                "several",
                [
                    FetchScript(running, (ends[2], 20, 60)),
                    FetchScript(cafe, (ends[1] + 7, 10, 55, 70), seed=4),
                    FetchScript(tuple(llm.long_answer(24, seed=3).tokens), (90, 150, 60), seed=3),
                ],
            ),
            points=2,
        ),
        Rule(
            "a drop just before the done event",
            "All tokens came but not 'done': reconnect once more; the server sends only 'done'.",
            c("late", [FetchScript(running, (done_at,)), FetchScript(running, (done_at + 5,))]),
            points=1,
        ),
        Rule(
            "a token whose text holds 'done', 'event: done' or 'id:' is still text",
            HINTS["loose"],
            c(
                "lookalike",
                [FetchScript(LOOKALIKE_TOKENS), FetchScript(LOOKALIKE_TOKENS, (len(look) // 2,))],
            ),
            points=1,
            cause="loose",
        ),
        Rule(
            "long answers with many drops",
            "Reconnect as often as needed, always with the last id received.",
            hidden_long,
            hidden=True,
            extends="several drops in a row, no gap and no duplicate",
        ),
        Rule(
            "heartbeat comments between events, with drops",
            "Comments carry no id and no text.",
            hidden_heartbeats,
            hidden=True,
            extends="no drop: one connection gives the whole answer",
        ),
    )


class Resume(Exercise):
    """Exercise 5: the text and the Last-Event-ID of each request, as ``reference``'s."""

    id = "resume"
    title = "Exercise 5: resume after a drop with Last-Event-ID"
    shape_hint = "Return the whole text of the answer, one str."
    extra_hints = HINTS
    own_work = "resume loop"
    make_rules = staticmethod(rules)

    def reference(self, case: Case) -> dict:
        """Return the reference's text and the Last-Event-ID it sent on each request."""
        fetch = FakeFetch(case.args[0])
        text = reference(fetch)
        return {"text": text, "requests": list(fetch.requests)}

    def got_of(self, outcome: Outcome) -> Any:
        """Return the text that came back and the Last-Event-IDs the learner sent."""
        return {"text": getattr(outcome, "value", None), "requests": list(outcome.requests or ())}

    def shape(self, got: Any) -> str | None:
        """Return what is wrong when the text is not a str, or None."""
        if not isinstance(got["text"], str):
            return f"{show_plain(got['text'])} -- resume must return the whole text, a str"
        return None

    def same(self, case: Case, expected: Any, got: Any) -> bool:
        """Return True for the right text from the right requests (no id sent: None or "")."""
        norm = [r or None for r in got["requests"]]
        return expected["text"] == got["text"] and expected["requests"] == norm

    def show_input(self, case: Case) -> str:
        """Return the notebook call that replays the case's script."""
        return case.args[0].describe()

    def show_value(self, value: Any) -> str:
        """Return the text and the requests, in words."""
        if isinstance(value, dict) and "requests" in value:
            return f"text {value['text']!r}, fetch called with {value['requests']!r}"
        return show_plain(value)

    def diagnose(self, case: Case, outcome: Outcome, more: object = ()) -> str | None:
        """Return "loose" for a text cut before a token holding 'done', "no-id" when no id was sent."""
        if not isinstance(outcome, Returned) or not isinstance(outcome.value, str):
            return None
        text = outcome.value
        script = case.args[0]
        whole = "".join(script.tokens)
        requests = list(outcome.requests or ())
        if len(requests) > 1 and not any(requests) and text != whole:
            return "no-id"
        if whole.startswith(text) and text != whole:
            rest = whole[len(text) :]
            nxt = next((t for t in script.tokens if rest.startswith(t)), "")
            if "done" in nxt or "id:" in nxt:
                return "loose"
        return None
