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
  reports for a command killed by a closed pipe);
* a bad argument, argparse's own refusals included (``--seeds 1.5``, an unknown option, a missing
  value): ``genbound: error: ...`` (the command's name, the option and the value), exit code 2, never
  argparse's usage block (``--help`` shows it);
* every other ``OSError`` (a full device, a closed standard output, a file that cannot be written):
  ``genbound: error: ...`` naming the file (or "standard output") and the reason, exit code 2; so is
  running out of memory (``MemoryError``).

What the command already wrote to standard output and could not flush is dropped (so the
interpreter's exit prints nothing more). Error lines go to standard error only: with standard error
closed they go nowhere (descriptor 2 is pointed at ``/dev/null`` first, so neither an error line nor a
library's message can land in standard output or in a file the command opens). A working directory
that no longer exists is one ``genbound: error:`` line before anything heavy (torch) is imported.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__
from .errors import GenboundError, Interrupted, MissingDependencyError, ParameterError

#: Subcommand -> (module that registers it with ``add_parser``, the one-line help of ``genbound --help``).
COMMANDS = {
    "claims": ("genbound.claims._cli", "list the book's executable claims, or check them"),
    "analyze": (
        "genbound.analysis.cli",
        "spectrum-adaptive and Edelman-style proxies of a checkpoint",
    ),
    "experiment": ("genbound.experiments._cli", "run an experiment of the book"),
}

#: Exit codes of an interrupted command and of one whose output pipe was closed.
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
#: Exit code of every error line (bad input, bad argument, output that cannot be written).
EXIT_ERROR = 2


class UsageError(ParameterError):
    """A command-line argument argparse refused (unknown option, missing or malformed value)."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose refusals raise :class:`UsageError` (one ``genbound: error:`` line)
    instead of printing the usage block and exiting; subparsers inherit the class."""

    def _print_message(self, message, file=None):
        # argparse swallows OSError here; a --help that cannot be written is an error like any other
        if message:
            (file or sys.stderr).write(message)

    def error(self, message):
        raise UsageError(f"{self.prog}: {_short(message)} (see {self.prog} --help)")


def _short(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (argparse quotes whole values)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _os_error_line(exc: OSError) -> str:
    """One line for an ``OSError`` that reached the command line: the file (or standard output) and the
    reason."""
    import errno

    what = (
        "an output could not be written (standard output or a file of the command)"
        if exc.filename is None
        else repr(str(exc.filename))
    )
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    return _short(f"{what}: {reason}" + (f" ({code})" if code else ""))


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
    parser = _Parser(
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
    """Entry point of the ``genbound`` console script (the module docstring lists every way it ends)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _guard_stderr()
    if sys.stdout is None:  # started with standard output closed (``genbound ... >&-``)
        _err("genbound: error: standard output is closed; nothing can be printed")
        return EXIT_ERROR
    try:
        os.getcwd()
    except OSError as exc:  # before torch's import, which cannot start without one
        _err(
            f"genbound: error: the working directory cannot be resolved ({exc.strerror or exc}; "
            f"it was deleted or cannot be read); change to an existing folder and rerun"
        )
        return EXIT_ERROR
    try:
        parser = build_parser(_command_of(argv))
        try:
            args = parser.parse_args(argv)
        except SystemExit:  # --help, --version: argparse printed them and exits 0
            sys.stdout.flush()  # a full device shows here (then one error line, exit 2)
            raise
        if not getattr(args, "func", None):
            parser.print_help()
            sys.stdout.flush()
            return 0
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe or a full device shows here, not in the interpreter's exit
        return code
    except GenboundError as exc:
        _quiet_stdout_if_unflushable()
        _err(f"genbound: error: {exc}")
        return EXIT_ERROR
    except Interrupted as exc:
        _err(f"genbound: interrupted: {exc}")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        _err("genbound: interrupted (nothing of this command is saved)")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        _quiet_stdout()
        _err(f"genbound: error: {_os_error_line(exc)}")
        return EXIT_ERROR
    except MemoryError:
        _quiet_stdout()
        _err("genbound: error: out of memory (the input asks for more than this machine has)")
        return EXIT_ERROR


def _guard_stderr() -> None:
    """With descriptor 2 closed (``genbound ... 2>&-``), point it at ``/dev/null`` and make
    ``sys.stderr`` write there: error lines then go nowhere, never into standard output (where
    ``print(file=None)`` would put them) nor into the next file opened (which would get descriptor 2)."""
    try:
        os.fstat(2)
        if sys.stderr is not None:
            return
    except OSError:
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            if fd != 2:
                os.dup2(fd, 2)
                os.close(fd)
        except OSError:
            return
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")  # noqa: SIM115


def _err(line: str) -> None:
    """Write one line to standard error, and nowhere else: a standard error that cannot be written
    drops it (the exit code still says what happened)."""
    try:
        if sys.stderr is not None:
            print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _quiet_stdout_if_unflushable() -> None:
    """Before an error line: flush what the command printed; if standard output cannot take it, drop
    it (:func:`_quiet_stdout`) so that the exit prints nothing more."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        _quiet_stdout()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
