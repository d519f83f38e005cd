"""The `lessonkit` command: one sub-command per edge module.

Each sub-command lives in its own module, which provides two functions:
``configure_parser(parser)`` adds its options and ``main(args) -> int`` runs it.
Only the module of the sub-command being run is imported, so `lessonkit grade`
never loads the web server and `lessonkit --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMANDS = {
    "lab": ("lessonkit.learner.launch", "open the course in JupyterLab, on lesson 00"),
    "progress": ("lessonkit.learner.status", "show which exercises pass and what comes next"),
    "submit": ("lessonkit.learner.handin", "hand in the exercises as one zip, with a receipt"),
    "serve": ("lessonkit.serve.cli", "run the local streaming LLM server"),
    "proxy": (
        "lessonkit.serve.proxy",
        "run a reverse proxy that buffers or passes a stream through",
    ),
    "grade": ("lessonkit.grading.grade", "grade exercise notebooks headless, writing a CSV"),
    "assign": ("lessonkit.grading.assign", "generate exercises/ from the solution notebooks"),
}


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser; only the `selected` sub-command's module is imported."""
    parser = argparse.ArgumentParser(
        prog="lessonkit", description="Tools for the token-streaming course."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.set_defaults(run=None)  # a sub-command sets its own
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if name == selected:
            module = importlib.import_module(module_name)
            module.configure_parser(sub)
            sub.set_defaults(run=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected if selected in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    if args.version:
        from lessonkit import __version__

        print(__version__)
        return 0
    if args.run is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("stopped.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lessonkit progress --json | head`: the reader left early
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- no flush error at exit
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
