"""The ``genbound`` command line.

Subcommands live next to the code they expose: a module listed in :data:`COMMANDS` defines
``add_parser(subparsers)`` (which registers its subcommand and sets ``func`` to a handler that takes the
parsed arguments and returns an exit code). Only the module of the command being run is imported, so
``genbound --help`` and a command that needs no torch start without importing torch.

Ends, always as one line on stderr at most:

* errors genbound raises on purpose: ``genbound: error: ...``, exit code 2, never a traceback;
* Ctrl-C (``KeyboardInterrupt``): ``genbound: interrupted: ...``, saying what was saved and how to
  resume when the command writes a results file (:class:`~genbound.errors.Interrupted`), exit code 130;
* a closed pipe (``genbound claims | head -1``): nothing, exit code 141 (128 + SIGPIPE, what a shell
  reports for a command killed by a closed pipe).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__
from .errors import GenboundError, Interrupted, MissingDependencyError

#: Subcommand -> (module that registers it with ``add_parser``, the one-line help of ``genbound --help``).
COMMANDS = {
    "claims": ("genbound.claims._cli", "list the book's executable claims, or check them"),
    "analyze": ("genbound.analyze", "spectrum-adaptive and Edelman-style proxies of a checkpoint"),
    "experiment": ("genbound.experiments._cli", "run an experiment of the book"),
}

#: Exit codes of an interrupted command and of one whose output pipe was closed.
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (its first argument that is not an option: the top-level
    options take no values), or ``None``."""
    for a in argv:
        if not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The argument parser. ``command``: the subcommand whose module is imported and whose full
    parser is built (``"*"``: every one; ``None``: none, each subcommand listed by its help only)."""
    parser = argparse.ArgumentParser(
        prog="genbound",
        description="Generalization bounds for transformers, evaluated numerically on real weights.",
    )
    parser.add_argument("--version", action="version", version=f"genbound {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if command not in ("*", name):
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                continue  # that part of genbound is not installed yet
            if exc.name is not None and not exc.name.startswith("genbound"):
                # a package the command needs is missing: one line naming it (exit code 2)
                raise MissingDependencyError.of(exc.name, f"genbound {name}") from exc
            raise
        mod.add_parser(sub)
    return parser


def _quiet_stdout() -> None:
    """After a closed pipe: send what is still buffered for stdout to /dev/null, so that the
    interpreter's final flush does not print a second ``BrokenPipeError``."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``genbound`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(_command_of(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except GenboundError as exc:
        print(f"genbound: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"genbound: interrupted: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("genbound: interrupted (nothing of this command is saved)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
