"""A class on one JupyterHub: memory per learner with and without culling, and 10 stream starts.

    .venv/bin/python bench/bench_class.py [--learners 4] [--cull-after-s 20]

Twice, once per setting:

* "no culling": each learner's Jupyter server runs with
  ``--MappingKernelManager.cull_idle_timeout=0``: every kernel lives until its server stops;
* "culling": the course's shipped setting (lessonkit.serve.jupyter_culling, enabled by
  etc/jupyter/jupyter_server_config.d/streaming-course.json: idle kernels culled, also
  with their tab open), with the timeout and interval shortened on the command line so
  the bench need not wait 20 minutes.

For each, a real JupyterHub (tests/hub/hubdriver.py: SimpleLocalProcessSpawner, every
user on this machine) starts N learners. Each learner opens lessons 00-05 as JupyterLab
does when a notebook is opened (a session, so a kernel, whose WebSocket stays open like
a tab) and runs every code cell in order, two learners at a time. With culling, the
learner then keeps working in lesson 05 (a cell every few seconds) while the culler
removes the idle kernels. Then the PSS (psutil: shared pages split between the processes
that share them) of each learner's server and kernels is summed per learner.

On the "no culling" hub, with every learner's lesson-03 demo server alive, 10 requests
start a stream at once through the hub's proxy and the course's route
(/user/<name>/lessonkit/demo/<socket>/v1/stream, no prefill, no pacing): the time to each first
token, and to the last of the ten, is printed for 3 rounds.

Measured here, never asserted in tests. Needs what `make hub` installs (JupyterHub's
proxy from npm: tools/ensure_hub_proxy.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import nbformat
import psutil
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # labdriver, which hubdriver uses
sys.path.insert(0, str(ROOT / "tests" / "hub"))  # the hub the classroom test runs
from hubdriver import (  # noqa: E402
    CHP,
    COURSE_FOLDER,
    Hub,
    HubSpec,
    KernelClient,
    course_files,
    prepare_home,
)
from labdriver import wait_for  # noqa: E402

from lessonkit.core import llm  # noqa: E402

LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("0[0-5]_*.ipynb"))
MIB = 2**20
STREAM_STARTS = 10
ROUNDS = 3


@dataclass
class Learner:
    """One learner's open notebooks: notebook name -> kernel id, and lesson 03's demo socket."""

    name: str
    tabs: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)  # open WebSockets
    kernels: dict[str, str] = field(default_factory=dict)
    demo_socket: str = ""
    errors: list[str] = field(default_factory=list)
    run_s: float = 0.0


def code_cells(notebook: str) -> list[str]:
    """Return the sources of the notebook's code cells that Run All executes."""
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return [c.source for c in cells if c.cell_type == "code" and c.source.strip()]


def run_lessons(hub: Hub, learner: Learner, then_work: threading.Event | None) -> None:
    """Open each lesson (a kernel with its WebSocket left open, like a tab) and run its cells.

    With `then_work`, the learner then goes on working in the last lesson (a thread that
    runs a cell every 3 s until the event is set), from the moment they finish.
    """
    server = hub.user_server(learner.name)
    started = time.monotonic()
    for notebook in LESSONS:
        session = server.open_session(f"{COURSE_FOLDER}/notebooks/{notebook}")
        learner.kernels[notebook] = session["kernel"]["id"]
        kernel = learner.tabs.enter_context(server.kernel_client(session["kernel"]["id"]))
        for index, source in enumerate(code_cells(notebook)):
            try:
                kernel.execute(source, timeout_s=300)
            except AssertionError as error:  # KernelError or a timeout: note it, go on
                learner.errors.append(f"{notebook} cell {index}: {error}")
        if notebook.startswith("03_"):
            learner.demo_socket = kernel.execute("print(server.socket_name)").strip()
    learner.run_s = time.monotonic() - started
    if then_work is not None:
        last = kernel  # the last lesson's tab
        threading.Thread(target=keep_working, args=(last, then_work), daemon=True).start()


def learner_processes(hub: Hub, name: str) -> list[psutil.Process]:
    """Return the learner's single-user server and its kernels."""
    for process in psutil.Process(hub.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if "jupyterhub.singleuser" in " ".join(process.cmdline()):
                if process.environ().get("JUPYTERHUB_USER") == name:
                    return [process, *process.children(recursive=True)]
    raise LookupError(f"no server runs for {name}")


def pss_mib(process: psutil.Process) -> float:
    """Return the process's PSS in MiB (0 if it is gone)."""
    try:
        return process.memory_full_info().pss / MIB
    except psutil.NoSuchProcess:
        return 0.0


def memory_line(hub: Hub, name: str) -> tuple[float, str]:
    """Return (total PSS MiB, one line: server, kernels) for one learner."""
    server, *kernels = learner_processes(hub, name)
    server_mib = pss_mib(server)
    kernel_mib = sorted((pss_mib(k) for k in kernels), reverse=True)
    total = server_mib + sum(kernel_mib)
    each = ", ".join(f"{m:.0f}" for m in kernel_mib) or "none"
    return total, f"{name:<10} {total:6.0f} MiB = server {server_mib:.0f} + kernels [{each}]"


@contextlib.contextmanager
def class_hub(n_learners: int, server_args: tuple[str, ...]) -> Iterator[Hub]:
    """Yield a running hub whose learners have the course's notebooks; stop it afterwards."""
    users = tuple(f"learner{i:02d}" for i in range(1, n_learners + 1))
    # A short folder: a Unix socket path (the demo's) holds at most 103 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="lk-bench-"))
    files = course_files()
    for user in users:
        prepare_home(workdir / "homes" / user, files)
    hub = Hub.start(HubSpec(users=users, server_args=server_args, start_timeout_s=180), workdir)
    try:
        for user in users:  # spawn through the hub's REST API, as a login would
            hub.api("POST", f"/hub/api/users/{user}/server")
        for user in users:
            wait_for(lambda u=user: hub.server_ready(u), timeout_s=180, what=f"{user}'s server")
        yield hub
    finally:
        survivors = hub.stop()
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
        if survivors:
            print(f"  (left running after the hub stopped: {survivors})")


@contextlib.contextmanager
def class_at_work(hub: Hub, *, keep_working: bool = False) -> Iterator[list[Learner]]:
    """Run lessons 00-05 for every learner, two at a time; yield them with every tab open.

    With keep_working, each learner goes on working in lesson 05 once done, until the end.
    """
    learners = [Learner(name) for name in hub.spec.users]
    working = threading.Event() if keep_working else None
    try:
        yield run_class(hub, learners, working)
    finally:
        if working is not None:
            working.set()
        for learner in learners:
            learner.tabs.close()


def run_class(
    hub: Hub, learners: list[Learner], then_work: threading.Event | None
) -> list[Learner]:
    """Run lessons 00-05 for every learner, two at a time; print what it took."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda learner: run_lessons(hub, learner, then_work), learners))
    hub.tracker.adopt_tree(hub.process.pid)
    runs = ", ".join(f"{learner.run_s:.0f}" for learner in learners)
    print(f"  lessons 00-05 for {len(learners)} learners: {time.monotonic() - started:.0f} s")
    print(f"  (per learner, s: {runs})")
    for learner in learners:
        for error in learner.errors:
            print(f"  ! {learner.name}: {error}")
    return learners


def keep_working(kernel: KernelClient, stop: threading.Event) -> None:
    """Run a small cell in `kernel` every 3 s until `stop` is set (a learner at work)."""
    with contextlib.suppress(ConnectionClosed):  # the bench closed the tab at the end
        while not stop.wait(3.0):
            kernel.execute("1 + 1")


def print_memory(hub: Hub, title: str) -> list[float]:
    """Print each learner's memory; return the totals (MiB)."""
    print(f"  {title}")
    totals = []
    for name in hub.spec.users:
        total, line = memory_line(hub, name)
        totals.append(total)
        print(f"    {line}")
    mean = statistics.mean(totals)
    print(
        f"    per learner: mean {mean:.0f} MiB (range {min(totals):.0f}-{max(totals):.0f}): "
        f"{1024 / mean:.1f} learners per GiB, {24 * 1024 / mean:.0f} on 24 GiB"
    )
    return totals


async def first_token_s(client: httpx.AsyncClient, url: str, started: float) -> float:
    """Return seconds from `started` until the stream at `url` brings its first event with data."""
    async with client.stream("GET", url) as response:
        response.raise_for_status()
        async for piece in response.aiter_raw():
            if b"data:" in piece:
                return time.monotonic() - started
    raise RuntimeError(f"{url} ended before a token")


async def stream_starts(hub: Hub, learners: list[Learner]) -> list[float]:
    """Start STREAM_STARTS streams at once, spread over the learners' demos; return each TTFT."""
    headers = {"Authorization": f"token {hub.api_token}"}
    urls = [
        f"{hub.internal_url}/user/{learner.name}/lessonkit/demo/{learner.demo_socket}"
        f"/v1/stream?prompt={llm.RUNNING_PROMPT}&prefill_ms=0&per_token_ms=0"
        for learner in learners
    ]
    limits = httpx.Limits(max_connections=STREAM_STARTS * 2)
    async with httpx.AsyncClient(headers=headers, timeout=60, limits=limits) as client:
        await first_token_s(client, urls[0], time.monotonic())  # warm the path once
        started = time.monotonic()
        jobs = [first_token_s(client, urls[i % len(urls)], started) for i in range(STREAM_STARTS)]
        return list(await asyncio.gather(*jobs))


def bench_stream_starts(hub: Hub, learners: list[Learner]) -> None:
    print(f"  {STREAM_STARTS} simultaneous stream starts (hub proxy -> course route -> socket):")
    for round_ in range(1, ROUNDS + 1):
        times_ms = sorted(t * 1000 for t in asyncio.run(stream_starts(hub, learners)))
        print(
            f"    round {round_}: first token after {times_ms[0]:.0f}-{times_ms[-1]:.0f} ms "
            f"(median {statistics.median(times_ms):.0f} ms; all ten by {times_ms[-1]:.0f} ms)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=4, help="hub users (default 4)")
    parser.add_argument(
        "--cull-after-s", type=int, default=20, help="the shortened idle timeout (default 20)"
    )
    args = parser.parse_args()
    if not CHP.exists():
        subprocess.run(
            [str(ROOT / "tools" / "ensure_hub_proxy.sh"), str(CHP.parents[2])], check=True
        )
    print(f"A class of {args.learners} on one JupyterHub, lessons {LESSONS[0]} .. {LESSONS[-1]}")

    print("\nNo culling (--MappingKernelManager.cull_idle_timeout=0):")
    with class_hub(args.learners, ("--MappingKernelManager.cull_idle_timeout=0",)) as hub:
        with class_at_work(hub) as learners:
            print_memory(hub, "after lessons 00-05, every tab still open:")
            bench_stream_starts(hub, learners)

    interval_s = max(1, args.cull_after_s // 4)
    culling = (
        f"--MappingKernelManager.cull_idle_timeout={args.cull_after_s}",
        f"--MappingKernelManager.cull_interval={interval_s}",
    )
    print(
        f"\nCulling (the course's setting, timeout {args.cull_after_s} s, interval {interval_s} s):"
    )
    with class_hub(args.learners, culling) as hub:
        with class_at_work(hub, keep_working=True):
            waited = time.monotonic()
            time.sleep(args.cull_after_s + 3 * interval_s)
            print(
                f"  waited {time.monotonic() - waited:.0f} s more with every tab open, "
                "each learner working in lesson 05"
            )
            print_memory(hub, "after culling:")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
