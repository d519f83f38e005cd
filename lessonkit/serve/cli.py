"""``lessonkit serve``: the local streaming server on the command line (and shared options).

    lessonkit serve --port 8000 --prefill-ms 300 --per-token-ms 40

``add_bind_options``, ``serve_forever`` and the argparse types are shared with
``lessonkit proxy``.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import math
import sys
from typing import Any

import uvicorn

from lessonkit.serve.app import create_app
from lessonkit.serve.background import MAX_PORT, bind_socket, url_of, uvicorn_config
from lessonkit.serve.checks import MAX_DELAY_MS, Settings


def is_loopback(host: str) -> bool:
    """Return True if `host` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def port_number(text: str) -> int:
    """Return `text` as a TCP port (0-65535); argparse shows the error otherwise."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"must be a port number from 0 to {MAX_PORT} (0 picks a free one), got {text!r}"
        )
    return port


def milliseconds(text: str) -> float:
    """Return `text` as a duration in ms (finite, 0 or more); argparse shows the error otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a number of milliseconds, 0 or more, got {text!r}"
        )
    if value > MAX_DELAY_MS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_DELAY_MS:.0f} ms (10 minutes), got {text!r}"
        )
    return value


def add_bind_options(parser: argparse.ArgumentParser, default_port: int) -> None:
    """Add --host and --port (shared with lessonkit proxy)."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=default_port,
        help=f"port to listen on; 0 picks a free one (default {default_port})",
    )
    parser.add_argument("--quiet", action="store_true", help="no access log")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of `lessonkit serve`."""
    add_bind_options(parser, 8000)
    parser.add_argument(
        "--prefill-ms",
        type=milliseconds,
        default=300.0,
        help="time before the first token (default 300)",
    )
    parser.add_argument(
        "--per-token-ms", type=milliseconds, default=40.0, help="time between tokens (default 40)"
    )
    parser.add_argument(
        "--jitter-ms",
        type=milliseconds,
        default=0.0,
        help="seeded random variation of each token time (default 0)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the jitter")


def bind_warning(host: str, what: str = "server") -> str | None:
    """Return the warning to print when `host` is reachable from other machines, else None."""
    if is_loopback(host):
        return None
    return (
        f"warning: binding to {host} lets other machines reach this {what}; "
        "it has no authentication. Use --host 127.0.0.1 to keep it local."
    )


def serve_forever(app: Any, host: str, port: int, what: str, quiet: bool) -> int:
    """Bind, print the URL, and run uvicorn in this thread until Ctrl+C."""
    warning = bind_warning(host, what)
    if warning:
        print(warning, file=sys.stderr)
    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            reason = f"port {port} is in use; pick another with --port, or --port 0 for a free one"
        else:
            reason = exc.strerror or str(exc)
        print(f"error: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
        return 1
    print(f"lessonkit {what} listening on {url_of(sock)}  (Ctrl+C to stop)", flush=True)
    config = uvicorn_config(
        app, log_level="warning", access_log=not quiet, log_config=uvicorn.config.LOGGING_CONFIG
    )
    if not quiet:  # one line per request, but no start-up chatter
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def main(args: argparse.Namespace) -> int:
    """Run `lessonkit serve`; return the exit code."""
    settings = Settings(
        prefill_ms=args.prefill_ms,
        per_token_ms=args.per_token_ms,
        jitter_ms=args.jitter_ms,
        seed=args.seed,
    )
    return serve_forever(create_app(settings), args.host, args.port, "server", args.quiet)
