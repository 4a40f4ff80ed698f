"""Input checks shared by every module: turn user input into a finite float tensor or fail clearly."""

from __future__ import annotations

import math
import os
from numbers import Real

import numpy as np
import torch

from .device import resolve_device, resolve_dtype
from .errors import InputError, NonFiniteError, ParameterError, ShapeError

__all__ = [
    "as_tensor",
    "check_finite",
    "check_real",
    "check_positive_int",
    "check_int_range",
    "max_threads",
    "shown",
    "broadcast_shape",
]


def as_tensor(
    x,
    name: str,
    *,
    min_ndim: int = 0,
    ndim: int | None = None,
    device=None,
    dtype=None,
    allow_empty: bool = False,
) -> torch.Tensor:
    """Convert ``x`` (tensor, numpy array, nested list) to a finite floating tensor, or raise.

    The error messages name the argument (``name``) and say what was expected.
    """
    dtype = resolve_dtype(dtype)
    dev = resolve_device(device) if device is not None else None
    if isinstance(x, torch.Tensor):
        t = x.detach() if not x.requires_grad else x
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # pragma: no cover - numpy raises many types
            raise InputError(f"{name} could not be converted to an array: {exc}") from exc
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise InputError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # np.ascontiguousarray would turn a 0-d array into 1-d
        t = torch.from_numpy(arr)
    if t.is_complex():
        raise InputError(f"{name} must be real, got a complex tensor")
    if ndim is not None and t.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if t.ndim < min_ndim:
        raise ShapeError(
            f"{name} must have at least {min_ndim} dimensions, got shape {tuple(t.shape)}"
        )
    if not allow_empty and t.numel() == 0:
        raise ShapeError(f"{name} is empty (shape {tuple(t.shape)})")
    t = t.to(dtype=dtype, device=dev) if dev is not None else t.to(dtype=dtype)
    check_finite(t, name)
    return t


def check_finite(t: torch.Tensor, name: str) -> torch.Tensor:
    """Raise :class:`NonFiniteError` if ``t`` holds NaN or infinity, naming how many and where.

    Fast path: ``max`` and ``min`` propagate NaN and expose infinities, so two reductions (no boolean
    copy of ``t``) decide the common, finite case; the slow count runs only on failure.
    """
    if t.numel() == 0 or (bool(torch.isfinite(t.max())) and bool(torch.isfinite(t.min()))):
        return t
    bad = ~torch.isfinite(t)
    if bool(bad.any()):
        n_bad = int(bad.sum())
        first = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
        raise NonFiniteError(
            f"{name} has {n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'} (first at index {first})"
        )
    return t


def check_real(
    value,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is finite and inside the given interval."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ParameterError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {v}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ParameterError(f"{name} must be {'<' if hi_open else '<='} {hi}, got {v}")
    return v


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int after checking it is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_int_range(value, name: str, lo: int, hi: int, *, why: str = "") -> int:
    """Return ``value`` as an int after checking it is an integer in ``[lo, hi]``; ``why`` (optional)
    says where the upper limit comes from and is added to the message.

    >>> check_int_range(3, "--seeds", 1, 10)
    3
    >>> check_int_range(10**9, "--seq-lens", 1, 8192, why="the longest sequence")
    Traceback (most recent call last):
    ...
    genbound.errors.ParameterError: --seq-lens must lie in 1 .. 8192 (the longest sequence), got 1000000000
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer, got {shown_value(value)}")
    if not lo <= value <= hi:
        tail = f" ({why})" if why else ""
        raise ParameterError(f"{name} must lie in {lo} .. {hi}{tail}, got {int(value)}")
    return int(value)


def max_threads() -> int:
    """The most CPU threads a command may ask for: the cores present (``os.cpu_count()``)."""
    return max(1, os.cpu_count() or 1)


def shown(items, k: int = 5) -> str:
    """The first ``k`` of ``items`` and how many there are, for an error line that stays short
    whatever the input's length.

    >>> shown(range(60000))
    '[0, 1, 2, 3, 4, ... (60000 in all)]'
    >>> shown([7, 9])
    '[7, 9]'
    """
    items = list(items)
    head = ", ".join(shown_value(i) for i in items[:k])
    return f"[{head}, ... ({len(items)} in all)]" if len(items) > k else f"[{head}]"


def shown_value(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a value pasted by mistake can be megabytes)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def broadcast_shape(*shapes) -> torch.Size:
    """The broadcast of ``shapes`` (as ``torch.broadcast_shapes``, which on first use imports
    ``torch._refs`` and with it sympy: half a second of a whole ``genbound analyze``).

    >>> tuple(broadcast_shape((3, 1), (4,), ()))
    (3, 4)
    """
    return torch.Size(np.broadcast_shapes(*(tuple(s) for s in shapes)))
