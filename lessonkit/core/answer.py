"""What the simulated model says: tokens of a text, and whole answers.

    tokenize(text)                  GPT-like pieces: "Your", " order", " ships", ".", " café"
    Answer(tokens, finish_reason)   a finished answer, its text and its usage counts
    answer_for(prompt)              the running example's answer, or a seeded longer one
    long_answer(500)                exactly 500 tokens, for the 20,300 ms example

When and how the answer is written to the wire is ``lessonkit.core.llm``'s business;
the sentences of the longer answers come from ``lessonkit.core.wordbank``.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass

from lessonkit.core import wordbank

__all__ = [
    "FINISH_REASONS",
    "RUNNING_ANSWER",
    "RUNNING_PROMPT",
    "Answer",
    "answer_for",
    "long_answer",
    "tokenize",
]

RUNNING_PROMPT = "When will my order arrive?"
RUNNING_ANSWER = "Your order ships on Monday."

FINISH_REASONS = ("stop", "length")

# GPT-2 style pre-tokenizer, written for Python's `re` (no \p{L}):
# English contractions, a word with its leading space, up to three digits,
# one punctuation mark (with its leading space), then runs of whitespace.
_TOKEN = re.compile(
    r"""'(?:[sdmt]|ll|ve|re)"""  # 's 'd 'm 't 'll 've 're
    r"""| ?[^\W\d_]+"""  # letters, any script: " café", " Zürich"
    r"""| ?\d{1,3}"""  # numbers in short groups, as BPE vocabularies do
    r"""| ?[^\s\w]"""  # one punctuation mark or symbol: ".", " (", "é" parts
    r"""| ?_"""
    r"""|\s+(?!\S)"""  # whitespace not followed by a word...
    r"""|\s+""",  # ...so the last space stays with the next word
)


def tokenize(text: str) -> list[str]:
    """Return GPT-like tokens of `text`; joining them gives `text` back exactly.

    Words carry their leading space and punctuation stands alone:
    "Your order ships on Monday." -> ["Your", " order", " ships", " on", " Monday", "."].
    """
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class Answer:
    """A finished answer: its tokens, why it stopped, and the prompt's size in tokens."""

    tokens: tuple[str, ...]
    finish_reason: str = "stop"
    prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if self.finish_reason not in FINISH_REASONS:
            raise ValueError(
                f"finish_reason must be one of {FINISH_REASONS}, got {self.finish_reason!r}"
            )
        object.__setattr__(self, "tokens", tuple(self.tokens))

    @property
    def text(self) -> str:
        """The whole answer as one string."""
        return "".join(self.tokens)

    @property
    def completion_tokens(self) -> int:
        """How many tokens the model generated."""
        return len(self.tokens)

    def usage(self) -> dict[str, int]:
        """Return OpenAI-style usage counts: prompt, completion and total tokens."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


# ---------------------------------------------------------------------------
# Answers: the running example, or sentences from the word bank (lessonkit.core.wordbank).


def _sentence_tokens(rng: random.Random, first: bool) -> list[str]:
    text = wordbank.sentence(rng)
    return tokenize(text if first else " " + text)


def _cut(tokens: list[str], max_tokens: int | None) -> tuple[tuple[str, ...], str]:
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number of at least 1, got {max_tokens!r}")
        if max_tokens < len(tokens):
            return tuple(tokens[:max_tokens]), "length"
    return tuple(tokens), "stop"


def answer_for(prompt: str, max_tokens: int | None = None) -> Answer:
    """Return the simulated model's answer to `prompt` (the same prompt, the same answer).

    The running example's prompt gets the running answer. Any other prompt gets
    40-80 tokens of sentences about orders, shipping and streaming, chosen by a
    seed from zlib.crc32 of the prompt (stable across runs and machines).
    If `max_tokens` stops the answer early, finish_reason is "length".
    """
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, got {type(prompt).__name__}")
    if prompt.strip() == RUNNING_PROMPT:
        tokens = tokenize(RUNNING_ANSWER)
    else:
        rng = random.Random(zlib.crc32(prompt.encode("utf-8")))
        target = rng.randint(40, 80)
        tokens = []
        while len(tokens) < target:
            sentence = _sentence_tokens(rng, first=not tokens)
            if len(tokens) >= 40 and len(tokens) + len(sentence) > 80:
                break  # long enough, and one more sentence would overshoot
            tokens += sentence
    kept, finish_reason = _cut(tokens, max_tokens)
    return Answer(kept, finish_reason, len(tokenize(prompt)))


def long_answer(n_tokens: int, seed: int = 0, *, prompt: str = RUNNING_PROMPT) -> Answer:
    """Return an answer of exactly `n_tokens` tokens (finish_reason "stop"), seeded.

    Made of whole sentences where it fits; the last token is a full stop so the
    text ends cleanly. prompt_tokens counts `prompt`.
    """
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number, 0 or more, got {n_tokens!r}")
    rng = random.Random(seed)
    tokens: list[str] = []
    while len(tokens) < n_tokens:
        tokens += _sentence_tokens(rng, first=not tokens)
    tokens = tokens[:n_tokens]
    if tokens and tokens[-1] != ".":
        tokens[-1] = "."
    return Answer(tuple(tokens), "stop", len(tokenize(prompt)))
