"""What keeps alice and bob apart on a hub where each learner is a Unix user of their own.

On the hub of conftest.py (LocalProcessSpawner, as root), each check runs code in bob's
kernel, as his notebook could, against something of alice's, and the same code in
alice's kernel, the positive control: alice reaches her own. What each met goes to
timings["isolation"] (printed at the end, test-artifacts/hub/timings.json):

* their homes: each server and kernel runs as its learner's user, in a 0700 home;
* her demo's socket: bob cannot connect to it, she gets an answer through it;
* her notebooks and progress file: bob cannot read them, she can;
* her kernel's connection file (the key to her kernel): bob cannot read it, she can;
* her server's API token in /proc/<pid>/environ: bob cannot read it (nor find it on the
  command line, which he can read), she can;
* her kernel's ports on loopback TCP, JupyterHub's default. TCP keeps nobody out: bob
  connects to every port, and finds them in /proc/net/tcp under her user id. The key
  keeps his messages out: signed with a key he made up, or unsigned, her kernel refuses
  them (its log says so) and runs nothing, while hers, signed with her key, runs. What
  the key does not keep apart: her kernel publishes the code it runs and its output on
  its iopub port to any subscriber, unencrypted, and bob's subscriber hears them;
* kernels over Unix sockets (KernelManager.transport = "ipc", as bob's server runs its
  kernels): the channels are socket files in bob's 0700 runtime folder, so alice cannot
  even connect, and bob's own client, with his key, runs code there.
"""

from __future__ import annotations

import contextlib
import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from accounts import mode
from hubdriver import COURSE_FOLDER, Hub
from labdriver import wait_for
from learners import Learner, Share

pytestmark = [pytest.mark.timeout(600)]

# Defined in each learner's kernel: a Jupyter client's execute_request over ZMQ, a listener
# for a kernel's iopub channel, the learner's own connection files, a socket's first line.
CLIENT = '''
import socket, threading
import zmq
from jupyter_client.session import Session
from jupyter_core.paths import jupyter_runtime_dir

kept, heard = [], []

def execute_over_zmq(url, key, code, expressions=None, wait_s=None):
    """Send code to the kernel whose shell channel is at url, signed with key ("": unsigned);
    return its execute_reply's content as JSON (None when not waiting for it)."""
    session = Session(key=key.encode(), signature_scheme="hmac-sha256", username="learner")
    shell = zmq.Context.instance().socket(zmq.DEALER)
    shell.connect(url)
    content = {"code": code, "silent": False, "store_history": False,
               "user_expressions": expressions or {}, "allow_stdin": False}
    sent = session.send(shell, "execute_request", content)
    if wait_s is None:
        kept.append(shell)  # the message leaves once connected: keep the socket open
        return None
    while shell.poll(wait_s * 1000):
        _, reply = session.recv(shell)
        if reply and reply["parent_header"].get("msg_id") == sent["header"]["msg_id"]:
            shell.close(linger=0)
            return json.dumps(reply["content"])
    return json.dumps({"status": "no reply"})

def listen(url):
    """Collect every message published at url (a kernel's iopub channel) into `heard`."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(url)
    def collect():
        while True:
            heard.append(b"".join(bytes(frame) for frame in sub.recv_multipart()))
    threading.Thread(target=collect, daemon=True).start()

def push(url, frames):
    """Send frames to the PULL socket at url (a kernel's pipe for its forked children)."""
    pipe = zmq.Context.instance().socket(zmq.PUSH)
    pipe.connect(url)
    pipe.send_multipart(frames)
    kept.append(pipe)  # the message leaves once connected: keep the socket open
    return "sent"

def key_of(kernel_id):
    """The key in one of this learner's own kernels' connection file."""
    path = os.path.join(jupyter_runtime_dir(), f"kernel-{kernel_id}.json")
    return json.load(open(path))["key"]

def first_line(path, request):
    """Send request to the Unix socket at path; return the first line of the answer."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(path)
        s.sendall(request)
        return s.recv(100).split(b"\\r\\n")[0].decode()
'''

INVALID = r"^\[IPKernelApp\] ERROR \| Invalid message"  # ipykernel, on a bad signature
BAD_PIPE = r"^Bad pipe message: "  # ipykernel, on a pipe message without its token


def note(timings: dict[str, Any], check: str, **results: str) -> None:
    """Keep what alice and bob met in `check`, for the summary."""
    timings.setdefault("isolation", {})[check] = results


def refused(result: str) -> bool:
    """True when the learner's code met a permission error, and nothing else."""
    return result.startswith("PermissionError: [Errno 13] Permission denied")


@pytest.fixture(scope="module")
def alice_bob(learners: dict[str, Learner]) -> tuple[Learner, Learner]:
    """alice and bob, their kernels holding the client code above."""
    for learner in learners.values():
        learner.run(CLIENT)
    return learners["alice"], learners["bob"]


@contextlib.contextmanager
def another_kernel(learner: Learner, hub: Hub) -> Iterator[tuple[str, dict[str, Any]]]:
    """Start another kernel of the learner's; yield its id and connection file (read as root)."""
    kernel_id = learner.server.api("POST", "/api/kernels", json={"name": "python3"}).json()["id"]
    runtime = learner.account.home / ".local" / "share" / "jupyter" / "runtime"
    path = runtime / f"kernel-{kernel_id}.json"
    try:
        with learner.server.kernel_client(kernel_id) as kernel:
            kernel.execute("pass")  # it runs code: it listens on every channel
        hub.tracker.adopt_tree(hub.process.pid)
        yield kernel_id, json.loads(path.read_text())
    finally:
        learner.server.api("DELETE", f"/api/kernels/{kernel_id}")


def kernel_process(hub: Hub, kernel_id: str) -> psutil.Process:
    """Return the process of the kernel kernel_id."""
    for process in psutil.Process(hub.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if any(f"kernel-{kernel_id}.json" in part for part in process.cmdline()):
                return process
    raise AssertionError(f"no process runs kernel {kernel_id}")


def hub_log_count(hub: Hub, pattern: str) -> int:
    """How many lines of the hub's log (its servers' and kernels' too) match pattern."""
    return len(re.findall(pattern, hub.log_path.read_text(errors="replace"), re.MULTILINE))


def test_each_learner_runs_as_their_own_unix_user_in_a_home_only_they_can_open(
    hub: Hub, learners: dict[str, Learner], share: Share, timings: dict[str, Any]
) -> None:
    alice, bob = learners["alice"], learners["bob"]
    for learner in (alice, bob):
        account = learner.account
        assert account.home.is_dir() and mode(account.home) == 0o700
        assert account.home.stat().st_uid == account.uid
        for process in (hub.server_process(learner.name), kernel_process(hub, learner.kernel_id)):
            assert {process.uids().real, process.uids().effective} == {account.uid}, process
        ran = learner.run("import sys; print(os.getuid(), sys.executable, os.getcwd())")
        assert ran.split() == [
            str(account.uid),
            str(share.python),
            str(learner.course / "exercises"),
        ]
    # Their Python: the system's, in a venv outside root's home, that every user can run.
    assert share.python.resolve().is_relative_to("/usr")
    assert not share.python.is_relative_to("/root")
    for folder in share.python.parents:
        assert mode(folder) & 0o005 == 0o005, folder  # every user may enter and read
        assert not mode(folder) & 0o002 or mode(folder) & stat.S_ISVTX, folder  # no one swaps it

    mine = alice.attempt("sorted(os.listdir(os.path.expanduser('~')))")
    theirs = bob.attempt(f"os.listdir({str(alice.account.home)!r})")
    note(timings, "home: list alice's home", alice=mine, bob=theirs)
    assert mine.startswith("ok: ") and COURSE_FOLDER in mine, mine
    assert refused(theirs), theirs


def test_bob_cannot_connect_to_alices_demo_socket_and_alice_can(
    alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    socket_path = alice.run(
        "from lessonkit.lab import browser_demo\n"
        "demo = browser_demo.start_server(prefill_ms=0, per_token_ms=1)\n"
        "print(demo.socket_path)"
    ).strip()
    assert Path(socket_path).is_relative_to(alice.account.home), socket_path
    assert mode(Path(socket_path).parent) == 0o700
    request = b"GET /v1/stats HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n"
    get = f"first_line({socket_path!r}, {request!r})"
    mine, theirs = alice.attempt(get), bob.attempt(get)
    note(timings, "demo socket: connect, GET /v1/stats", alice=mine, bob=theirs)
    assert mine == "ok: HTTP/1.1 200 OK", mine
    assert refused(theirs), theirs
    alice.run("demo.stop()")


def test_bob_cannot_read_alices_notebooks_or_progress_file_and_alice_can(
    alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    # Her progress, recorded as her check() records it: in her own course folder.
    recorded = alice.run(
        "from lessonkit.course import record\n"
        "print(record.record('parse_sse', passed=False, checks_passed=3, checks=5,"
        " points=6, max_points=10).file)"
    ).strip()
    progress = alice.course / ".lessonkit-progress.json"
    assert recorded == str(progress) and progress.stat().st_uid == alice.account.uid
    notebook = alice.course / "notebooks" / "03_reading_the_stream.ipynb"
    for what, path, holds in (("notebook", notebook, "nbformat"), ("progress", progress, "ex6")):
        read = f"{holds!r} in open({str(path)!r}).read()"
        mine, theirs = alice.attempt(read), bob.attempt(read)
        where = path.relative_to(alice.account.home)
        note(timings, f"{what}: read ~alice/{where}", alice=mine, bob=theirs)
        assert mine == "ok: True", mine
        assert refused(theirs), theirs


def test_bob_cannot_read_alices_kernel_connection_file_and_alice_can(
    alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    path = alice.run("import ipykernel.connect; print(ipykernel.connect.get_connection_file())")
    path = path.strip()
    assert Path(path).is_relative_to(alice.account.home) and mode(Path(path)) == 0o600
    read = f"'a key of ' + str(len(json.load(open({path!r}))['key'])) + ' characters'"
    mine, theirs = alice.attempt(read), bob.attempt(read)
    note(timings, "kernel connection file: read her kernel's key", alice=mine, bob=theirs)
    assert re.fullmatch(r"ok: a key of [1-9]\d* characters", mine), mine
    assert refused(theirs), theirs


def test_bob_cannot_read_alices_server_token_through_proc_and_alice_can(
    hub: Hub, alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    server = hub.server_process(alice.name)
    token = server.environ()["JUPYTERHUB_API_TOKEN"].encode()  # as root, to compare with
    holds = f"{token!r} in open('/proc/{server.pid}/environ', 'rb').read()"
    mine, theirs = alice.attempt(holds), bob.attempt(holds)
    note(timings, "server token: read /proc/<her server>/environ", alice=mine, bob=theirs)
    assert mine == "ok: True", mine
    assert refused(theirs), theirs
    # The command line, which /proc shows everyone, does not hold it.
    shown = bob.attempt(f"{token!r} in open('/proc/{server.pid}/cmdline', 'rb').read()")
    assert shown == "ok: False", shown


def test_alices_kernel_ports_answer_bob_but_run_nothing_he_sends_without_her_key(
    hub: Hub, alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    with another_kernel(alice, hub) as (kernel_id, info):
        assert info["transport"] == "tcp" and info["ip"] == "127.0.0.1", info
        ports = sorted(info[k] for k in info if k.endswith("_port"))
        shell, iopub = (f"tcp://127.0.0.1:{info[k]}" for k in ("shell_port", "iopub_port"))

        # TCP keeps nobody out: bob connects to every port; /proc/net/tcp names their owner.
        connect = f"[socket.create_connection(('127.0.0.1', p), 30).close() or p for p in {ports}]"
        connected = bob.attempt(connect)
        assert connected == f"ok: {ports}", connected
        listed = bob.attempt(
            "sorted(int(f[1].split(':')[1], 16) for f in"
            " (line.split() for line in open('/proc/net/tcp').readlines()[1:])"
            f" if f[3] == '0A' and f[7] == '{alice.account.uid}')"
        )
        assert set(ports) <= set(json.loads(listed.removeprefix("ok: "))), listed

        # The key keeps his messages out: one signed with a key he made up, one unsigned.
        before = hub_log_count(hub, INVALID)
        bob.run(f"listen({iopub!r})")
        for key in ("a-key-bob-made-up", ""):
            bob.run(f"execute_over_zmq({shell!r}, {key!r}, 'bob_was_here = True')")
        wait_for(
            lambda: hub_log_count(hub, INVALID) >= before + 2,
            timeout_s=120,
            what="alice's kernel to refuse bob's two messages (its log)",
        )

        # Her client, with her key (in her connection file, which only she can read): her
        # code runs and her kernel has run nothing of bob's. What it publishes, bob hears.
        code, check = "alice_was_here = 'alice-runs-this'", {"bob": "'bob_was_here' in globals()"}
        runs, heard = 0, "False"
        while heard != "True" and runs < 20:  # a subscriber misses what came before it joined
            runs += 1
            reply = json.loads(
                alice.run(
                    f"print(execute_over_zmq({shell!r}, key_of({kernel_id!r}), {code!r},"
                    f" {check!r}, wait_s=60))"
                )
            )
            assert reply["status"] == "ok", reply
            assert reply["user_expressions"]["bob"]["data"]["text/plain"] == "False", reply
            heard = bob.run("print(any(b'alice-runs-this' in m for m in heard))").strip()
        assert heard == "True", f"bob's subscriber heard nothing of {runs} runs"
    note(
        timings,
        "kernel ports on loopback TCP (alice's server: JupyterHub's default)",
        alice=f"her client, with her key: execute_reply {reply['status']}; 'bob_was_here' in"
        " her kernel: False",
        bob=f"TCP connect to all {len(ports)} ports: ok (listed in /proc/net/tcp under her uid);"
        " execute_request signed with a made-up key, and unsigned: refused ('Invalid message'"
        f" in her kernel's log), nothing run; her iopub: heard her code ({runs} run(s))",
    )


def test_bobs_kernels_over_unix_sockets_cannot_even_be_reached_by_alice(
    hub: Hub, alice_bob: tuple[Learner, Learner], timings: dict[str, Any]
) -> None:
    alice, bob = alice_bob
    with another_kernel(bob, hub) as (kernel_id, info):
        assert info["transport"] == "ipc", info
        channel = f"{info['ip']}-{info['shell_port']}"
        assert Path(channel).is_relative_to(bob.account.home), channel
        assert stat.S_ISSOCK(Path(channel).stat().st_mode)

        hers = alice.attempt(f"socket.socket(socket.AF_UNIX).connect({channel!r})")
        his = json.loads(
            bob.run(
                f"print(execute_over_zmq('ipc://{channel}', key_of({kernel_id!r}), 'x = 6 * 7',"
                " {'x': 'x'}, wait_s=60))"
            )
        )
        # Its one loopback TCP port is ipykernel's pipe for the output of forked
        # subprocesses: alice connects, and what she sends without its random token is dropped.
        with bob.server.kernel_client(kernel_id) as kernel:
            pipe = int(kernel.execute("import sys; print(sys.stdout.pub_thread._pipe_port)"))
        listening = kernel_process(hub, kernel_id).net_connections(kind="inet")
        assert {c.laddr.port for c in listening if c.status == psutil.CONN_LISTEN} == {pipe}
        before = hub_log_count(hub, BAD_PIPE)
        forged = alice.attempt(
            f"push('tcp://127.0.0.1:{pipe}', [bytes(16), b'output of a child of hers'])"
        )
        wait_for(
            lambda: hub_log_count(hub, BAD_PIPE) > before,
            timeout_s=120,
            what="bob's kernel to drop alice's message on its pipe (its log)",
        )
    note(
        timings,
        "kernel channels over Unix sockets (bob's server: KernelManager.transport = 'ipc')",
        alice=f"connect to bob's kernel's shell socket: {hers}; a message to its one TCP port"
        f" (ipykernel's pipe for forked subprocesses' output): {forged}, dropped ('Bad pipe"
        " message' in his kernel's log)",
        bob=f"his client, with his key: execute_reply {his['status']},"
        f" x = {his['user_expressions']['x']['data']['text/plain']}",
    )
    assert refused(hers), hers
    assert his["status"] == "ok" and his["user_expressions"]["x"]["data"]["text/plain"] == "42"
