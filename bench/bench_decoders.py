"""Benchmark lessonkit's SSE decoder against the openai SDK, httpx-sse and sseclient-py.

Run: .venv/bin/python bench/bench_decoders.py [--quick] [--runs N] [--write-readme]

Every decoder gets the same bytes, cut the same way, through its own normal
incremental API, and must find the same number of events:

- lessonkit feed():      SSEDecoder().feed(chunk) for each chunk (the API the
                         lessons and exercises use: the headline column)
- lessonkit iter_events: SSEDecoder().iter_events(iter(chunks))
- lessonkit step by step: SSEDecoder().feed_step_by_step(chunk) for each chunk (the
                         readable reference, one call per spec step; not a headline)
- openai SDK:            openai._streaming.SSEDecoder().iter_bytes(iter(chunks))
- httpx-sse:             a UTF-8 incremental decoder + httpx's LineDecoder (what
                         ``Response.iter_lines`` uses) feeding httpx_sse._decoders.SSEDecoder
- sseclient-py:          sseclient.SSEClient(iter(chunks)).events()

Workloads: a token stream of OpenAI chunks in 16-byte and 1,460-byte pieces; one
2 MB event that is a single data line, and one 2 MB event of 80-byte data lines
(a long JSON or Markdown payload, 25,000 lines), each in 64-byte and 4,096-byte
pieces.

Prints a markdown table of MB/s of CPU time (best of several runs, decoders taking
turns) and, for each big event fed in 64-byte pieces, the time against size on a
log-log scale: a slope near 1 is linear, near 2 quadratic. A decoder whose run
passes SLOW_RUN_S is not run on bigger sizes (its quadratic cost would take
minutes); the table says so.

The whole measurement is done --runs times (default 3); the table gives the median
of the runs and, for the ratios and slopes, their range, so the spread caused by a
shared machine is visible.

Same conditions for every decoder: CPU time of this process (time.process_time), so
other jobs on a shared machine count less than they would in wall time; the garbage
collector is off while a run is timed; and glibc's malloc is told to keep freed
memory (see pin_malloc), so that big buffers cost the same at every size and in any
order of sizes.
"""

from __future__ import annotations

import argparse
import codecs
import ctypes
import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import httpx
import openai
from httpx._decoders import LineDecoder
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
from openai._streaming import SSEDecoder as OpenAISSEDecoder
from sseclient import SSEClient

from lessonkit.core.sse import SSEDecoder

MB = 1_000_000
SLOW_RUN_S = 20.0
MIN_ROUND_S = 0.05
README = Path(__file__).with_name("README.md")
SECTION = "## SSE decoders"


# --- the decoders, each through its normal incremental API -------------------


def run_lessonkit_feed(chunks: list[bytes]) -> int:
    decoder = SSEDecoder(max_event_bytes=1 << 30)
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    decoder.close()
    return count


def run_lessonkit_iter_events(chunks: list[bytes]) -> int:
    return sum(1 for _ in SSEDecoder(max_event_bytes=1 << 30).iter_events(iter(chunks)))


def run_lessonkit_steps(chunks: list[bytes]) -> int:
    """Count the events of the readable reference, one call per step (what feed() speeds up)."""
    decoder = SSEDecoder(max_event_bytes=1 << 30)
    count = 0
    for chunk in chunks:
        count += len(decoder.feed_step_by_step(chunk))
    decoder.close()
    return count


def run_openai(chunks: list[bytes]) -> int:
    return sum(1 for _ in OpenAISSEDecoder().iter_bytes(iter(chunks)))


def iter_httpx_sse(chunks: list[bytes]) -> Iterator[object]:
    """Yield httpx-sse's events: what ``EventSource.iter_sse`` does over ``Response.iter_lines``."""
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = LineDecoder()
    sse = HttpxSSEDecoder()
    for chunk in chunks:
        text = text_decoder.decode(chunk)
        if not text:
            continue
        for line in lines.decode(text):
            event = sse.decode(line)
            if event is not None:
                yield event
    for line in lines.decode(text_decoder.decode(b"", final=True)) + lines.flush():
        event = sse.decode(line)
        if event is not None:
            yield event


def run_httpx_sse(chunks: list[bytes]) -> int:
    # Counted like the others: each event is handed to a consumer through an iterator.
    return sum(1 for _ in iter_httpx_sse(chunks))


def run_sseclient(chunks: list[bytes]) -> int:
    return sum(1 for _ in SSEClient(iter(chunks)).events())


FEED = "lessonkit feed()"
ITER_EVENTS = "lessonkit iter_events"
DECODERS: dict[str, Callable[[list[bytes]], int]] = {
    FEED: run_lessonkit_feed,
    ITER_EVENTS: run_lessonkit_iter_events,
    "lessonkit step by step": run_lessonkit_steps,
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


MARKDOWN_WORDS = (
    b"The **answer** arrives in `data:` lines, one JSON object or Markdown paragraph after"
    b" another; a reader joins them with LF and renders the text as it grows. "
).split()


def many_line_event(size_bytes: int, line_bytes: int = 80) -> bytes:
    """Return one event of ``data:`` lines, each ``line_bytes`` long with its LF, ~size_bytes."""
    value_bytes = line_bytes - len(b"data: ") - 1
    text = b" ".join(MARKDOWN_WORDS * (value_bytes * (size_bytes // line_bytes) // 40 + 1))
    values = [text[i : i + value_bytes] for i in range(0, len(text), value_bytes)]
    lines = [b"data: " + value + b"\n" for value in values[: (size_bytes - 1) // line_bytes]]
    assert all(len(line) == line_bytes for line in lines)
    return b"".join(lines) + b"\n"


EVENT_SHAPES: dict[str, Callable[[int], bytes]] = {
    "one-line event": one_big_event,
    "event of 80-byte lines": many_line_event,
}


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- timing ----------------------------------------------------------------------


def pin_malloc() -> bool:
    """Return True after telling glibc's malloc to keep freed memory (False: not glibc).

    By default glibc hands a freed block of more than 128 KiB back to the kernel,
    and raises that threshold to the biggest block freed so far; when the process
    later needs the memory again, every 4 KiB page is a page fault (about 2 us on
    the shared VM, i.e. 0.5 ms per MB per buffer). Which sizes pay this depends on
    the order sizes were run in: measured 0 faults per run up to 2 MB and ~820
    faults per MB from 2.8 MB on, a step that read as a log-log slope of 1.24 for
    a decoder whose work per byte is constant. Fixing both thresholds keeps every
    size on the same footing (and applies to every decoder alike).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's <malloc.h>
    return bool(mallopt(m_mmap_threshold, 1 << 30) and mallopt(m_trim_threshold, 1 << 30))


def time_once(
    run: Callable[[list[bytes]], int], chunks: list[bytes], number: int = 1
) -> tuple[float, int]:
    """Return (CPU seconds per run, events found), timing ``number`` runs back to back.

    The garbage collector is off while timing: a collection is triggered by how
    many objects were allocated so far, so it would land in some runs and not others.
    """
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(number):
            count = run(chunks)
        return (time.process_time() - start) / number, count
    finally:
        gc.enable()


Workload = tuple[str, bytes, list[bytes], int]  # title, bytes, their pieces, events expected


def best_times(workloads: list[Workload], repeats: int) -> list[dict[str, float]]:
    """Return, per workload, each decoder's best time per run over ``repeats`` rounds.

    Each round visits every workload and, in it, every decoder in turn, so the
    rounds of one workload are spread over the whole measurement: a busy spell of
    the shared machine then disturbs some rounds of every workload and decoder
    instead of all rounds of whichever was being measured at the time, and the best
    round is the one least disturbed. A fast decoder is run several times per round
    (at least MIN_ROUND_S of work) so that a millisecond run is not measured alone;
    one slower than SLOW_RUN_S / 4 runs only once, one slower than a second in three
    rounds (only sseclient-py's quadratic rows, far from any ratio in the table).
    """
    best: list[dict[str, float]] = [{} for _ in workloads]
    number: list[dict[str, int]] = [{} for _ in workloads]
    for round_number in range(repeats):
        for (title, _data, chunks, expected), fastest, runs in zip(
            workloads, best, number, strict=True
        ):
            for name, run in DECODERS.items():
                seconds = fastest.get(name, 0.0)
                if seconds > SLOW_RUN_S / 4 or (seconds > 1.0 and round_number >= 3):
                    continue
                seconds, count = time_once(run, chunks, runs.get(name, 1))
                if count != expected:
                    raise SystemExit(f"{name} found {count} events in {title}, not {expected}")
                fastest[name] = min(fastest.get(name, seconds), seconds)
                runs.setdefault(name, max(1, min(100, round(MIN_ROUND_S / max(seconds, 1e-6)))))
    return best


def throughput_rows(quick: bool) -> list[tuple[str, dict[str, float]]]:
    """Return (workload title, MB/s per decoder) for each workload of the table."""
    n_events = 2_000 if quick else 20_000
    stream = openai_stream(n_events)
    big = one_big_event(2 * MB)
    lines = many_line_event(2 * MB)
    n_lines = lines.count(b"\n") - 1
    workloads = [
        (title, data, cut(data, piece), expected)
        for title, data, piece, expected in [
            (f"{n_events:,} OpenAI chunks, 16-byte pieces", stream, 16, n_events + 1),
            (f"{n_events:,} OpenAI chunks, 1,460-byte pieces", stream, 1460, n_events + 1),
            ("one 2 MB one-line event, 64-byte pieces", big, 64, 1),
            ("one 2 MB one-line event, 4,096-byte pieces", big, 4096, 1),
            (f"one 2 MB event of {n_lines:,} 80-byte lines, 64-byte pieces", lines, 64, 1),
            (f"one 2 MB event of {n_lines:,} 80-byte lines, 4,096-byte pieces", lines, 4096, 1),
        ]
    ]
    rows = []
    for (title, data, _, _), best in zip(
        workloads, best_times(workloads, 3 if quick else 9), strict=True
    ):
        speeds = {name: len(data) / MB / seconds for name, seconds in best.items()}
        for name, speed in speeds.items():
            print(f"  {title:58} {name:22} {speed:9.1f} MB/s", file=sys.stderr)
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


def scaling_sizes_mb(quick: bool) -> list[float]:
    """Return the event sizes for the scaling run: 0.5 to 4 MB, evenly spaced on a log scale."""
    steps = 2 if quick else 6  # quick: 0.5, 1.41, 4 MB; else 7 sizes, x1.41 apart
    return [round(0.5 * 8 ** (k / steps), 2) for k in range(steps + 1)]


Scaling = dict[str, tuple[list[float], list[float], str]]  # name -> (sizes MB, seconds, note)


def scaling_rows(quick: bool, shape: str) -> Scaling:
    """Return each decoder's best time per size for one event of ``shape`` in 64-byte pieces.

    A first pass, smallest size first, warms every decoder up and drops a decoder
    from bigger sizes once a run passes SLOW_RUN_S / 4. Then the rounds: each
    round visits every size and decoder in turn, so a busy spell of the shared
    machine hits all sizes alike instead of inflating whichever size was being
    measured at the time (which tilts the slope). Runs over a second are not repeated.
    """
    sizes_mb = scaling_sizes_mb(quick)
    inputs = {size: cut(EVENT_SHAPES[shape](int(size * MB)), 64) for size in sizes_mb}
    best: dict[tuple[str, float], float] = {}
    number: dict[tuple[str, float], int] = {}
    notes = dict.fromkeys(DECODERS, "")
    for name, run in DECODERS.items():
        for size in sizes_mb:
            seconds, count = time_once(run, inputs[size])
            if count != 1:
                raise SystemExit(f"{name} found {count} events in one {size} MB event")
            best[name, size] = seconds
            number[name, size] = max(1, min(100, round(MIN_ROUND_S / seconds)))
            if seconds > SLOW_RUN_S / 4 and size != sizes_mb[-1]:
                notes[name] = (
                    f"stopped after {size:g} MB ({seconds:.1f} s; the next size ~2x or more)"
                )
                break
    for _ in range(2 if quick else 4):
        for size in sizes_mb:
            for name, run in DECODERS.items():
                if (name, size) not in best or best[name, size] > 1.0:
                    continue
                seconds, _ = time_once(run, inputs[size], number[name, size])
                best[name, size] = min(best[name, size], seconds)
    results: Scaling = {}
    for name in DECODERS:
        sizes = [size for size in sizes_mb if (name, size) in best]
        times = [best[name, size] for size in sizes]
        for size, seconds in zip(sizes, times, strict=True):
            print(
                f"  scaling, {shape}: {name:22} {size:4} MB {seconds * 1e3:9.2f} ms",
                file=sys.stderr,
            )
        results[name] = (sizes, times, notes[name])
    return results


def spread(values: list[float], fmt: str, unit: str = "") -> str:
    """Return the median of ``values``, with their range when there are several."""
    middle = format(statistics.median(values), fmt) + unit
    if len(values) == 1:
        return middle
    return f"{middle} ({format(min(values), fmt)}-{format(max(values), fmt)})"


Run = tuple[list[tuple[str, dict[str, float]]], dict[str, Scaling]]  # throughput, slopes


def markdown(runs: list[Run], load: tuple[float, float]) -> str:
    """Return the results of one or more runs as markdown (medians, with ranges).

    ``load`` is the machine's 1-minute load average when the runs started and ended.
    """
    names = list(DECODERS)
    peers = [name for name in names if not name.startswith("lessonkit")]
    titles = [title for title, _ in runs[0][0]]
    lines = [
        f"Python {sys.version.split()[0]}, openai {openai.__version__}, "
        f"httpx {httpx.__version__}; MB/s of CPU time (higher is better), each the best of "
        f"several runs taken in turns; median of {len(runs)} such measurements, with the "
        f"range for the ratios. Load average {load[0]:.1f} at the start, {load[1]:.1f} at "
        f"the end, on {os.cpu_count()} cores.",
        "",
        "| workload | " + " | ".join(names) + " | feed() / best peer | iter_events / best peer |",
        "|---" * (len(names) + 3) + "|",
    ]
    for i, title in enumerate(titles):
        speeds = [rows[i][1] for rows, _ in runs]
        cells = " | ".join(f"{statistics.median(s[n] for s in speeds):.1f}" for n in names)
        ratios = {
            ours: [s[ours] / max(s[peer] for peer in peers) for s in speeds]
            for ours in (FEED, ITER_EVENTS)
        }
        lines.append(
            f"| {title} | {cells} | **{spread(ratios[FEED], '.2f', 'x')}** "
            f"| {spread(ratios[ITER_EVENTS], '.2f', 'x')} |"
        )
    for shape in EVENT_SHAPES:
        scalings = [slopes[shape] for _, slopes in runs]
        sizes_mb = max((scaling[n][0] for scaling in scalings for n in names), key=len)
        lines += [
            "",
            f"One {shape} fed in 64-byte pieces: milliseconds per MB at each size (median "
            "of the measurements; a flat row is linear cost) and the least-squares slope of "
            "log(time) against log(size) (1 = linear, 2 = quadratic; median and range):",
            "",
            "| decoder | " + " | ".join(f"{s:g} MB" for s in sizes_mb) + " | slope | note |",
            "|---" * (len(sizes_mb) + 3) + "|",
        ]
        for name in names:
            per_mb = []
            for size in sizes_mb:
                times = [
                    t / size
                    for scaling in scalings
                    for s, t in zip(scaling[name][0], scaling[name][1], strict=True)
                    if s == size
                ]
                per_mb.append(f"{statistics.median(times) * 1e3:.2f}" if times else "-")
            slopes = [
                slope(*scaling[name][:2]) for scaling in scalings if len(scaling[name][0]) > 1
            ]
            fitted = spread(slopes, ".2f") if slopes else "n/a"
            note = scalings[-1][name][2]
            lines.append(f"| {name} | " + " | ".join(per_mb) + f" | {fitted} | {note} |")
    return "\n".join(lines) + "\n"


HOW_TO_READ = """\
How to read the table. `feed()` per chunk is the headline: it is what the lessons, the
exercises and `read_stream` call, once per network read. `iter_events` is the same
`feed()` behind a generator. `step by step` is `feed_step_by_step`, the readable
reference in lessonkit/core/sse.py: one method call per spec step (per chunk, per line,
per field, per event), each Event built by the dataclass's own `__init__`. `feed()` is
those steps in one loop and gives exactly the same events and state after every chunk
(tests/core/test_sse.py holds the two together); the gap between the two columns is the
measured reason for that loop, the module's one speed trick. The ratios compare with
the fastest of the three peers on each row.

Where the time goes, row by row:

- 16-byte pieces of a token stream: nine reads in ten hold no line end, so the cost is
  one call per read; `feed()` keeps the piece and returns. sseclient-py's generator pays
  no call per read, which makes this one of the two closest rows.
- 1,460-byte pieces: the cost is per event, building each Event and decoding its text.
  `feed()` fills a new Event's `__dict__` instead of calling the frozen dataclass's
  `__init__` (which sets each field through `object.__setattr__`): most of the gap to
  `step by step` on this row.
- One-line events: the pieces of the line wait in a list and are joined once, when its
  end arrives. On 4,096-byte pieces that is memory bandwidth.
- Events of 80-byte lines: the cost is per line; `data: ` lines go into the data buffer
  inside the loop, without a call.

The machine: a shared VM with 2 cores on which other jobs were running (the load
average is in the first line above). CPU time leaves out the time other jobs held the
cores, but not what they do to the caches, so single numbers move by tens of per cent
between measurements; the rounds of every workload are spread over the whole
measurement and the best is kept, and the table gives the median of the measurements
with the range of the ratios.

How to read the slope: it is k in time ~ size^k, fitted over seven sizes from 0.5 to
4 MB. Constant work per byte gives 1; a decoder that re-joins or re-scans its growing
buffer for every piece gives 2 or more (sseclient-py: `data += line` for every piece).
A slope a little off 1 is noise, not work: counted at 0.5, 1, 2 and 4 MB in 64-byte
pieces, `feed()` makes the same number of calls per MB at every size (62,500 for the
one-line event, 172,000 for the event of 80-byte lines, one Python call per piece) and
tracemalloc finds its peak memory at the same multiple of the event (3.0x and 3.4x: the
pieces, the joined line or data, the decoded text).

The benchmark fixes glibc malloc's trim and mmap thresholds (see pin_malloc): by default
malloc gives big freed blocks back to the kernel above a threshold that depends on which
sizes ran before, and the page faults that follow once read as a slope of 1.24 for a
decoder whose work per byte is constant. It also turns the garbage collector off while
timing. Every decoder is measured under the same conditions and counted the same way:
each event handed to a consumer.
"""


def write_readme(table: str) -> None:
    """Replace (or add) the decoders section of bench/README.md with this run's table."""
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    body = (
        f"{SECTION}\n\n"
        "`.venv/bin/python bench/bench_decoders.py --write-readme` (about 15 minutes on a "
        "loaded 2-core machine; `--runs 1` for one measurement, `--quick` for a smaller "
        "one).\n\n" + table + "\n" + HOW_TO_READ
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
    parser.add_argument("--runs", type=int, default=3, help="whole measurements (default 3)")
    parser.add_argument("--write-readme", action="store_true", help="update bench/README.md")
    args = parser.parse_args()
    if not pin_malloc():
        print("  (not glibc: malloc thresholds left as they are)", file=sys.stderr)
    started = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    runs = []
    for i in range(args.runs):
        print(f"measurement {i + 1} of {args.runs}", file=sys.stderr)
        rows = throughput_rows(args.quick)
        runs.append((rows, {shape: scaling_rows(args.quick, shape) for shape in EVENT_SHAPES}))
    table = markdown(runs, (load_at_start, os.getloadavg()[0]))
    print(table)
    print(f"(took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
