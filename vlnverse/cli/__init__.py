"""The ``vlnverse`` command line: the user's front door.

Each command group lives in its own module exposing ``register(subparsers)``; the
module list below is the only place a new group is added.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from vlnverse import __version__
from vlnverse.errors import VLNVerseError
from vlnverse.fileio import describe_os_error
from vlnverse.redact import scrub

COMMAND_MODULES = (
    "vlnverse.cli.scenes",
    "vlnverse.cli.sim",
    "vlnverse.cli.ext",
    "vlnverse.cli.dataset",
    "vlnverse.cli.datagen",
    "vlnverse.cli.release",
    "vlnverse.cli.eval",
    "vlnverse.cli.serve_policy",
    "vlnverse.cli.demo",
    "vlnverse.cli.train",
    "vlnverse.cli.llm",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vlnverse",
        description="VLNVerse: scenes, datasets and evaluation for Vision-Language Navigation.",
    )
    parser.add_argument("--version", action="version", version=f"vlnverse {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("-v", "--verbose", action="store_true", help="show info logs")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


GLOBAL_FLAGS = ("--debug", "-v", "--verbose")
"""Options of ``vlnverse`` itself that are also accepted after the subcommand."""


def _global_flags(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--debug``/``-v``/``--verbose`` moved before the subcommand, so they
    work wherever they are written (``vlnverse eval ... --debug``)."""
    words = list(argv)
    end = words.index("--") if "--" in words else len(words)
    flags = [w for w in words[:end] if w in GLOBAL_FLAGS]
    return flags + [w for i, w in enumerate(words) if i >= end or w not in GLOBAL_FLAGS]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(_global_flags(sys.argv[1:] if argv is None else argv))
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except VLNVerseError as exc:
        if args.debug:
            raise
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a writer or reader the library does not wrap: still one line
        if args.debug:
            raise
        print(f"error: {scrub(describe_os_error(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _scrubbed_excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    import traceback

    sys.stderr.write(scrub("".join(traceback.format_exception(kind, value, tb))))


def entry() -> None:
    """Console-script and ``python -m vlnverse`` entry: run, then exit with the code.

    Our output is complete when the command returns; stdout's descriptor is then pointed
    at /dev/null so that C libraries flushing their own buffers at interpreter exit
    (PyBullet's build banner) cannot append stray lines to tables or ``--json`` output.
    A traceback (``--debug``, or a bug) is printed with known secret values masked.
    """
    sys.excepthook = _scrubbed_excepthook
    code = main()
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)
