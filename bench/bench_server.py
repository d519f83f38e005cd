"""Benchmark how faithfully `lessonkit serve` keeps its token timing under load.

Run: .venv/bin/python bench/bench_server.py [--quick] [--write-readme]   (under 4 minutes)

The server runs in its own process (`python -m lessonkit serve`), and so do the
two proxies (`lessonkit proxy --no-buffer` and `--buffer`). This process is the
client: httpx.AsyncClients (10 connections each, opened before the clock runs)
with 1, 10, 100 and 500 concurrent streams of GET /v1/stream?dialect=lesson,
started evenly within one token interval. For every token it notes the
arrival time of the network read that completed it, and reports:

- TTFT error: measured time to first token - configured (prefill_ms + per_token_ms)
- gap error:  measured time between tokens - per_token_ms

as p50 / p95 over all streams of a level. A positive error is lateness. Both
server and client share this machine's cores, so the numbers include the
client's own scheduling delays: an upper bound on the server's error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from lessonkit.client import StreamReader

PREFILL_MS = 200.0
PER_TOKEN_MS = 50.0
PROMPT = "Tell me everything about my parcel."
README = Path(__file__).with_name("README.md")
SECTION = "## Server timing fidelity"
LEVEL_TIMEOUT_S = 60.0
STREAMS_PER_CLIENT = 10


@dataclass(frozen=True)
class Level:
    """One measured row: a path, a number of concurrent streams and the errors seen."""

    path: str
    streams: int
    complete: int
    tokens: int
    ttft_errors_ms: tuple[float, ...]  # from sending the request
    ttft_after_headers_errors_ms: tuple[float, ...]  # from the response headers (sent at 0 ms)
    gap_errors_ms: tuple[float, ...]
    server_late_ms: tuple[float | None, float | None]  # p50, p95 of the server's own writes


def percentile(values: tuple[float, ...], q: float) -> float:
    """Return the q-th percentile (0-100) by the nearest-rank rule, nan if empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def start_process(*args: str) -> tuple[subprocess.Popen, str]:
    """Start a `python -m lessonkit ...` process; return it and the URL it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lessonkit", *args, "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # only "stopped." at the end
        text=True,
    )
    line = process.stdout.readline()
    if "listening on " not in line:
        process.kill()
        raise RuntimeError(f"lessonkit {args[0]} did not start: {line!r}")
    return process, line.split("listening on ")[1].split()[0]


def stop_process(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def one_stream(
    client: httpx.AsyncClient, url: str, n_tokens: int, delay_s: float = 0.0
) -> tuple[float, float, list[float]]:
    """Return (send time, headers time, arrival time of each token) for one streamed answer."""
    await asyncio.sleep(delay_s)
    params = {"prompt": PROMPT, "max_tokens": str(n_tokens), "dialect": "lesson"}
    reader = StreamReader("lesson")
    arrivals: list[float] = []
    request = client.build_request("GET", url + "/v1/stream", params=params)
    sent = time.perf_counter()
    response = await client.send(request, stream=True)
    headers_at = time.perf_counter()
    try:
        async for piece in response.aiter_raw():
            now = time.perf_counter()
            arrivals.extend(now for _ in reader.feed(piece))
    finally:
        await response.aclose()
    return sent, headers_at, arrivals if reader.close().complete else []


async def measure(path: str, url: str, server_url: str, streams: int, n_tokens: int) -> Level:
    """Run `streams` concurrent streams through `url` and collect the timing errors."""
    # httpcore's pool does work per request for every connection it holds, so a
    # single client with hundreds of connections measures its own overhead. Small
    # clients of STREAMS_PER_CLIENT connections each keep that out of the numbers.
    n_clients = -(-streams // STREAMS_PER_CLIENT)
    limits = httpx.Limits(
        max_connections=STREAMS_PER_CLIENT, max_keepalive_connections=STREAMS_PER_CLIENT
    )
    clients = [httpx.AsyncClient(limits=limits, timeout=LEVEL_TIMEOUT_S) for _ in range(n_clients)]
    try:
        # Open every connection before the clock runs (a quick stream on each), so the
        # numbers are about the stream's timing, not about TCP set-up in a crowd.
        await asyncio.gather(*(one_stream(clients[i % n_clients], url, 1) for i in range(streams)))
        await clients[0].delete(server_url + "/v1/stats")  # zero the server's lateness record
        # Start times spread evenly over one token interval: real users do not click in
        # step, and synchronised streams would all want the CPU at the same instant.
        spread_s = PER_TOKEN_MS / 1000 / streams
        jobs = [
            one_stream(clients[i % n_clients], url, n_tokens, i * spread_s) for i in range(streams)
        ]
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*jobs, return_exceptions=True), LEVEL_TIMEOUT_S
            )
        except asyncio.TimeoutError:
            results = []
        late = (await clients[0].get(server_url + "/v1/stats")).json()["write_lateness_ms"]
    finally:
        for client in clients:
            await client.aclose()
    ttft, ttft_headers, gaps, complete, tokens = [], [], [], 0, 0
    due_ms = PREFILL_MS + PER_TOKEN_MS
    for result in results:
        if isinstance(result, BaseException) or len(result[2]) != n_tokens:
            continue
        sent, headers_at, arrivals = result
        complete += 1
        tokens += len(arrivals)
        ttft.append((arrivals[0] - sent) * 1000 - due_ms)
        ttft_headers.append((arrivals[0] - headers_at) * 1000 - due_ms)
        gaps += [
            (b - a) * 1000 - PER_TOKEN_MS for a, b in zip(arrivals[:-1], arrivals[1:], strict=True)
        ]
    server_late = (late["p50"], late["p95"])
    return Level(
        path, streams, complete, tokens, tuple(ttft), tuple(ttft_headers), tuple(gaps), server_late
    )


def table(levels: list[Level], n_tokens: dict[int, int]) -> str:
    """Return the markdown table of the measured levels."""
    lines = [
        "| path | streams | complete | tokens each | TTFT err p50 / p95 (ms) "
        "| TTFT after headers err p50 / p95 (ms) | gap err p50 / p95 (ms) "
        "| server write late p50 / p95 (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lv in levels:
        cells = [
            lv.path,
            str(lv.streams),
            f"{lv.complete}/{lv.streams}",
            str(n_tokens[lv.streams]),
            *(
                f"{percentile(v, 50):+.1f} / {percentile(v, 95):+.1f}"
                for v in (lv.ttft_errors_ms, lv.ttft_after_headers_errors_ms, lv.gap_errors_ms)
            ),
            "{:+.1f} / {:+.1f}".format(*lv.server_late_ms),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_readme(text: str) -> None:
    """Replace (or add) only this benchmark's section of bench/README.md."""
    current = README.read_text() if README.exists() else "# Benchmarks\n"
    start = current.find(SECTION)
    if start == -1:
        current = current.rstrip("\n") + "\n\n" + text
    else:
        end = current.find("\n## ", start + len(SECTION))
        current = current[:start] + text + ("" if end == -1 else current[end:])
    README.write_text(current)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 10 streams only")
    parser.add_argument("--write-readme", action="store_true", help="update bench/README.md")
    args = parser.parse_args()
    counts = [1, 10] if args.quick else [1, 10, 100, 500]
    # 500 streams get fewer tokens, so the slowest level stays bounded in time
    n_tokens = {1: 20, 10: 20, 100: 20, 500: 10}
    started = time.perf_counter()
    server, server_url = start_process(
        "serve", "--prefill-ms", str(PREFILL_MS), "--per-token-ms", str(PER_TOKEN_MS)
    )
    proxies = []
    try:
        pass_proxy, pass_url = start_process("proxy", "--upstream", server_url, "--no-buffer")
        proxies.append(pass_proxy)
        hold_proxy, hold_url = start_process("proxy", "--upstream", server_url, "--buffer")
        proxies.append(hold_proxy)
        paths = [
            ("direct", server_url),
            ("proxy --no-buffer", pass_url),
            ("proxy --buffer", hold_url),
        ]
        levels = []
        for name, url in paths:
            for streams in counts:
                level = asyncio.run(measure(name, url, server_url, streams, n_tokens[streams]))
                levels.append(level)
                print(
                    f"  {name:18} {streams:4} streams: {level.complete} complete", file=sys.stderr
                )
    finally:
        for process in [*proxies, server]:
            stop_process(process)
    elapsed_s = time.perf_counter() - started
    result = table(levels, n_tokens)
    print(result)
    print(f"({elapsed_s:.0f} s, {os.cpu_count()} CPUs)")
    if args.write_readme:
        write_readme(
            f"{SECTION}\n\n"
            "`.venv/bin/python bench/bench_server.py --write-readme` (about a minute).\n"
            f"Server at prefill {PREFILL_MS:.0f} ms, {PER_TOKEN_MS:.0f} ms per token, in its own "
            "process; client: httpx.AsyncClients (10 connections each, opened beforehand) in another, streams started evenly within one token interval. "
            "Error = measured at the client - configured; positive means late. "
            f"Machine: {os.cpu_count()} CPUs shared with other jobs, so tails include the "
            "client's own scheduling delays, and rows vary from run to run with the "
            "machine's load.\n\n"
            "How to read it: *server write late* is the server's own error (how long after "
            "its due time each write happened); *gap err* is what the client saw between "
            "tokens. *TTFT err* counts from sending the request, so with 100 or 500 requests "
            "arriving at once it includes parsing every request in Python (client, proxy and "
            "server each spend about a millisecond per request); *TTFT after headers* starts at "
            "the response headers, which the server sends at 0 ms, and isolates the pacing. "
            "`--buffer` shows the mistake: every token arrives with the last one (first "
            "token late by (n - 1) x per_token_ms, gaps -50 ms = zero).\n\n" + result
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
