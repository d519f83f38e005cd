"""The `lessonkit` command: one sub-command per edge module.

Each sub-command lives in its own module, which provides two functions:
``configure_parser(parser)`` adds its options and ``main(args) -> int`` runs it.
Modules are imported only when their sub-command runs, so `lessonkit --help`
stays fast and the pure core never pulls in servers or notebooks.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "serve": ("lessonkit.server", "run the local streaming LLM server"),
    "proxy": ("lessonkit.proxy", "run a reverse proxy that buffers or passes a stream through"),
    "grade": ("lessonkit.grade", "grade exercise notebooks headless, writing a CSV"),
    "assign": ("lessonkit.assign", "generate exercises/ from the solution notebooks"),
}


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every sub-command whose module is present."""
    parser = argparse.ArgumentParser(
        prog="lessonkit", description="Tools for the token-streaming course."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.configure_parser(sub)
        sub.set_defaults(run=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from lessonkit import __version__

        print(__version__)
        return 0
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("stopped.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
