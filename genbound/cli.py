"""The ``genbound`` command line.

Subcommands live next to the code they expose: a module listed in :data:`COMMANDS` defines
``add_parser(subparsers)`` (which registers its subcommand and sets ``func`` to a handler that takes the
parsed arguments and returns an exit code). Errors genbound raises on purpose are printed as one line
``genbound: error: ...`` with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import GenboundError

#: Modules that contribute subcommands (each has ``add_parser``).
COMMANDS = [
    "genbound.claims._cli",
    "genbound.analyze",
    "genbound.experiments._cli",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="genbound",
        description="Generalization bounds for transformers, evaluated numerically on real weights.",
    )
    parser.add_argument("--version", action="version", version=f"genbound {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # that part of genbound is not installed yet
            raise
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``genbound`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except GenboundError as exc:
        print(f"genbound: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
