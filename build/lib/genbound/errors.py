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
]


class GenboundError(Exception):
    """Base class of every error genbound raises on purpose."""


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
