"""Errors raised by genbound.

Every problem with what a caller passed in (a non-finite weight, a matrix of the wrong shape, a Schatten
index outside ``[0, 2]``, an architecture genbound cannot read) raises a subclass of
:class:`GenboundError` whose message names the offending input. Callers can catch the base class.

>>> from genbound.errors import GenboundError, ParameterError
>>> issubclass(ParameterError, GenboundError) and issubclass(ParameterError, ValueError)
True
"""

from __future__ import annotations

__all__ = [
    "GenboundError",
    "Interrupted",
    "InputError",
    "ShapeError",
    "NonFiniteError",
    "ParameterError",
    "ArchitectureError",
    "CheckpointError",
    "DeviceError",
    "ResultsFileError",
    "MissingDependencyError",
    "INSTALL_HINTS",
    "require",
    "shorten",
    "short_repr",
    "MAX_QUOTED",
    "MAX_MESSAGE",
]

#: The most characters of a value given by the user (a config field, an option's value) an error quotes.
MAX_QUOTED = 120
#: The most characters of an error message (a message of many values is cut there, its length said).
MAX_MESSAGE = 4000


def shorten(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` on one line, cut to about ``limit`` characters with its full length said, so that an
    error line stays short whatever the user passed (a 1 MB ``model_type``, a long path).

    >>> shorten("abc")
    'abc'
    >>> shorten("x" * 10**6, 10)
    'xxxxxxx... (1000000 characters)'
    """
    text = " ".join(str(text).split()) if ("\n" in text or "\r" in text) else str(text)
    if len(text) <= limit:
        return text
    return text[: max(limit - 3, 0)] + f"... ({len(text)} characters)"


def short_repr(value, limit: int = MAX_QUOTED) -> str:
    """``repr(value)`` cut like :func:`shorten` (a string's length is said in characters of the
    string, any other value's in characters of its repr).

    >>> short_repr("bert")
    "'bert'"
    >>> short_repr("b" * 500, 12)
    "'bbbbbbbb... (500 characters)"
    """
    if isinstance(value, str) and len(value) > limit:
        return repr(value[: max(limit - 4, 0)])[:-1] + f"... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else shorten(text, limit)


class GenboundError(Exception):
    """Base class of every error genbound raises on purpose. A message longer than
    :data:`MAX_MESSAGE` characters is cut there (its length said), so no error line is unbounded."""

    def __init__(self, *args, **kwargs):
        args = tuple(shorten(a, MAX_MESSAGE) if isinstance(a, str) else a for a in args)
        super().__init__(*args, **kwargs)


class InputError(GenboundError, ValueError):
    """An array or tensor argument is unusable (wrong type, shape or values)."""


class ShapeError(InputError):
    """An array has the wrong number of dimensions or incompatible sizes."""


class NonFiniteError(InputError):
    """An array holds NaN or infinite entries."""


class ParameterError(GenboundError, ValueError):
    """A scalar parameter is outside its allowed range (e.g. a Schatten index ``p`` outside ``[0, 2]``)."""


class ArchitectureError(GenboundError):
    """A model or checkpoint does not have an architecture genbound knows how to read."""


class CheckpointError(InputError):
    """A checkpoint file cannot be used: empty, truncated, corrupt, inconsistent with its index, or
    holding something other than tensors (never unpickled). The message names the file."""


class DeviceError(GenboundError):
    """An unknown or unavailable compute device was requested."""


class ResultsFileError(InputError):
    """An experiment's results file cannot be used: not a genbound results file (random bytes, another
    experiment's file, an empty file), a row that does not match its columns, a duplicate key, a resume
    whose configuration differs from the one recorded in the file, or a path that cannot be written.
    The message names the file (and the line or the fields)."""


class Interrupted(Exception):
    """A long command was interrupted (Ctrl-C); the message says what was saved and how to resume.
    Raised from a ``KeyboardInterrupt`` by commands that write results files; the command line prints
    it as one line ``genbound: interrupted: ...`` with exit code 130. Not a :class:`GenboundError`:
    nothing was wrong with the input."""


#: How to install each optional package a genbound command may need (by the module's import name).
#: torch is pinned as in the README (a plain ``torch`` may pull a multi-GB CUDA build).
INSTALL_HINTS = {
    "torch": "pip install torch==2.13.0",
    "matplotlib": "pip install matplotlib (or pip install 'genbound[plot]')",
    "transformers": "pip install transformers (or pip install 'genbound[hf]')",
    "sklearn": "pip install scikit-learn (or pip install 'genbound[experiments]')",
}


class MissingDependencyError(GenboundError, ImportError):
    """An optional package that the requested work needs is not installed. The message names the
    package, what needs it and how to install it (:data:`INSTALL_HINTS`); the command line prints
    it as one ``genbound: error:`` line (exit code 2).

    >>> err = MissingDependencyError.of("matplotlib", "genbound analyze --plot")
    >>> str(err)
    "genbound analyze --plot needs matplotlib, which is not installed: pip install matplotlib (or pip install 'genbound[plot]')"
    >>> isinstance(err, ImportError) and err.name
    'matplotlib'
    """

    @classmethod
    def of(cls, package: str, what: str) -> "MissingDependencyError":
        """The error saying that ``what`` needs ``package`` (an import name)."""
        top = package.split(".")[0]
        hint = INSTALL_HINTS.get(top, f"pip install {top}")
        return cls(f"{what} needs {top}, which is not installed: {hint}", name=top)


def require(package: str, what: str):
    """Import ``package`` and return it, or raise :class:`MissingDependencyError` naming it when it is
    not installed (or fails to import because one of its own dependencies is missing).

    >>> require("math", "this example").sqrt(4.0)
    2.0
    """
    import importlib

    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        raise MissingDependencyError.of(exc.name or package, what) from exc
