"""Benchmark lessonkit's SSE decoder against the openai SDK, httpx-sse and sseclient-py.

Run: .venv/bin/python bench/bench_decoders.py [--quick] [--write-readme]

Every decoder gets the same bytes, cut the same way, through its own normal
incremental API, and must find the same number of events:

- lessonkit:    SSEDecoder().feed(chunk) for each chunk
- openai SDK:   openai._streaming.SSEDecoder().iter_bytes(iter(chunks))
- httpx-sse:    a UTF-8 incremental decoder + httpx's LineDecoder (what
                ``Response.iter_lines`` uses) feeding httpx_sse._decoders.SSEDecoder
- sseclient-py: sseclient.SSEClient(iter(chunks)).events()

Prints a markdown table of MB/s (best of several runs, decoders taking turns) and, for one big event
fed in 64-byte pieces, the time against size on a log-log scale: a slope near 1
is linear, near 2 quadratic. A decoder whose run passes SLOW_RUN_S is not run on
bigger sizes (its quadratic cost would take minutes); the table says so.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx
import openai
from httpx._decoders import LineDecoder
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
from openai._streaming import SSEDecoder as OpenAISSEDecoder
from sseclient import SSEClient

from lessonkit.sse import SSEDecoder

MB = 1_000_000
SLOW_RUN_S = 20.0
MIN_ROUND_S = 0.05
README = Path(__file__).with_name("README.md")
SECTION = "## SSE decoders"


# --- the decoders, each through its normal incremental API -------------------


def run_lessonkit(chunks: list[bytes]) -> int:
    return sum(1 for _ in SSEDecoder(max_event_bytes=1 << 30).iter_events(iter(chunks)))


def run_lessonkit_feed(chunks: list[bytes]) -> int:
    decoder = SSEDecoder(max_event_bytes=1 << 30)
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    decoder.close()
    return count


def run_openai(chunks: list[bytes]) -> int:
    return sum(1 for _ in OpenAISSEDecoder().iter_bytes(iter(chunks)))


def run_httpx_sse(chunks: list[bytes]) -> int:
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = LineDecoder()
    sse = HttpxSSEDecoder()
    count = 0
    for chunk in chunks:
        text = text_decoder.decode(chunk)
        if not text:
            continue
        for line in lines.decode(text):
            if sse.decode(line) is not None:
                count += 1
    for line in lines.decode(text_decoder.decode(b"", final=True)) + lines.flush():
        if sse.decode(line) is not None:
            count += 1
    return count


def run_sseclient(chunks: list[bytes]) -> int:
    return sum(1 for _ in SSEClient(iter(chunks)).events())


DECODERS: dict[str, Callable[[list[bytes]], int]] = {
    "lessonkit": run_lessonkit,
    "lessonkit feed()": run_lessonkit_feed,
    "openai SDK": run_openai,
    "httpx-sse": run_httpx_sse,
    "sseclient-py": run_sseclient,
}


# --- the workloads -------------------------------------------------------------


def openai_stream(n_chunks: int) -> bytes:
    """Return the bytes of a chat.completion.chunk stream with n_chunks token events."""
    words = ["Your", " order", " ships", " on", " Monday", ".", " Thanks", " for", " waiting"]
    parts = []
    for i in range(n_chunks):
        chunk = {
            "id": "chatcmpl-lessonkit",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "lessonkit-sim",
            "choices": [{"index": 0, "delta": {"content": words[i % len(words)]}}],
        }
        parts.append(f"data: {json.dumps(chunk)}\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def one_big_event(size_bytes: int) -> bytes:
    """Return one event whose single data line makes the whole event size_bytes long."""
    head, tail = b"data: ", b"\n\n"
    body = (b'{"text": "' + b"token " * (size_bytes // 6))[: size_bytes - len(head) - len(tail)]
    return head + body + tail


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- timing ----------------------------------------------------------------------


def time_once(
    run: Callable[[list[bytes]], int], chunks: list[bytes], number: int = 1
) -> tuple[float, int]:
    """Return (seconds per run, events found), timing ``number`` runs back to back."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(number):
        count = run(chunks)
    return (time.perf_counter() - start) / number, count


def best_times(
    runs: dict[str, Callable[[list[bytes]], int]],
    chunks: list[bytes],
    repeats: int,
    expected: int,
) -> dict[str, float]:
    """Return each decoder's best time per run over ``repeats`` rounds (decoders take turns).

    Taking turns spreads the load of a shared machine over every decoder alike,
    and the best round is the one least disturbed by it. A fast decoder is run
    several times per round (at least MIN_ROUND_S of work) so that a millisecond
    run is not measured alone; one slower than SLOW_RUN_S / 4 runs only once.
    """
    best: dict[str, float] = {}
    number: dict[str, int] = {}
    for _ in range(repeats):
        for name, run in runs.items():
            if best.get(name, 0.0) > SLOW_RUN_S / 4:
                continue
            seconds, count = time_once(run, chunks, number.get(name, 1))
            if count != expected:
                raise SystemExit(f"{name} found {count} events, expected {expected}")
            best[name] = min(best.get(name, seconds), seconds)
            number.setdefault(name, max(1, min(100, round(MIN_ROUND_S / max(seconds, 1e-6)))))
    return best


def throughput_rows(quick: bool) -> list[tuple[str, dict[str, float]]]:
    repeats = 3 if quick else 7
    n_events = 2_000 if quick else 20_000
    stream = openai_stream(n_events)
    big = one_big_event(2 * MB)
    workloads = [
        (f"{n_events:,} OpenAI chunks, 16-byte pieces", stream, 16, n_events + 1),
        (f"{n_events:,} OpenAI chunks, 1,460-byte pieces", stream, 1460, n_events + 1),
        ("one 2 MB event, 64-byte pieces", big, 64, 1),
        ("one 2 MB event, 4,096-byte pieces", big, 4096, 1),
    ]
    rows = []
    for title, data, piece, expected in workloads:
        best = best_times(DECODERS, cut(data, piece), repeats, expected)
        speeds = {name: len(data) / MB / seconds for name, seconds in best.items()}
        for name, speed in speeds.items():
            print(f"  {title:45} {name:17} {speed:9.1f} MB/s", file=sys.stderr)
        rows.append((title, speeds))
    return rows


def slope(sizes: Iterable[float], seconds: Iterable[float]) -> float:
    """Return the least-squares slope of log(seconds) against log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def scaling_rows(quick: bool) -> dict[str, tuple[list[float], list[float], str]]:
    sizes_mb = [0.5, 1.0, 2.0] if quick else [0.5, 1.0, 2.0, 4.0]
    results: dict[str, tuple[list[float], list[float], str]] = {n: ([], [], "") for n in DECODERS}
    running = dict(DECODERS)
    for size_mb in sizes_mb:
        best = best_times(running, cut(one_big_event(int(size_mb * MB)), 64), 5, 1)
        for name, seconds in best.items():
            sizes, times, _ = results[name]
            sizes.append(size_mb)
            times.append(seconds)
            print(f"  scaling {name:17} {size_mb:4} MB {seconds:8.3f} s", file=sys.stderr)
            if seconds > SLOW_RUN_S / 4 and size_mb != sizes_mb[-1]:
                note = (
                    f"stopped after {size_mb:g} MB ({seconds:.1f} s; the next size would take ~4x)"
                )
                results[name] = (sizes, times, note)
                del running[name]
    return results


def markdown(rows, scaling) -> str:
    names = list(DECODERS)
    lines = [
        f"Python {sys.version.split()[0]}, openai {openai.__version__}, "
        f"httpx {httpx.__version__}; MB/s, best of several runs taken in turns (higher is better).",
        "",
        "| workload | " + " | ".join(names) + " | lessonkit / best peer |",
        "|---" * (len(names) + 2) + "|",
    ]
    for title, speeds in rows:
        best_peer = max(v for k, v in speeds.items() if not k.startswith("lessonkit"))
        cells = " | ".join(f"{speeds[n]:.1f}" for n in names)
        lines.append(f"| {title} | {cells} | {speeds['lessonkit'] / best_peer:.2f}x |")
    lines += [
        "",
        "One event fed in 64-byte pieces, time against size (log-log slope: 1 = linear, "
        "2 = quadratic):",
        "",
        "| decoder | sizes (MB) | seconds | slope | note |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        sizes, times, note = scaling[name]
        fitted = f"{slope(sizes, times):.2f}" if len(sizes) > 1 else "n/a"
        lines.append(
            f"| {name} | {', '.join(f'{s:g}' for s in sizes)} | "
            f"{', '.join(f'{t:.3f}' for t in times)} | {fitted} | {note} |"
        )
    return "\n".join(lines) + "\n"


def write_readme(table: str) -> None:
    """Replace (or add) the decoders section of bench/README.md with this run's table."""
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    body = (
        f"{SECTION}\n\n"
        "`.venv/bin/python bench/bench_decoders.py --write-readme` (about 2 minutes).\n\n" + table
    )
    start = text.find(SECTION)
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body + ("" if end == -1 else text[end:])
    README.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, fewer runs")
    parser.add_argument("--write-readme", action="store_true", help="update bench/README.md")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = throughput_rows(args.quick)
    scaling = scaling_rows(args.quick)
    table = markdown(rows, scaling)
    print(table)
    print(f"(took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
