"""What every bound result of Part II says about itself: ``trivial``, ``capacity``, ``samples_needed``,
``to_dict`` (shared by :class:`~genbound.bounds.trauger_tewari.TTBound` and
:class:`~genbound.bounds.edelman.EdelmanBound`).

>>> smallest_m(lambda m: 10.0 / m, 0.5)
20
>>> smallest_m(lambda m: 10.0 / m, 0.5, tol=0.05) >= 20
True
>>> smallest_m(lambda m: 1.0, 0.5, max_m=10**6)
inf
"""

from __future__ import annotations

import math
from typing import Callable

from .._validate import check_positive_int, check_real

__all__ = ["TRIVIAL_RADEMACHER", "LOSS_RANGE", "is_trivial", "check_target", "smallest_m", "json_float",
           "BoundResultMixin"]

#: ``R_S(G) = R_S(G - 1/2) <= 1/2`` for any class of ``[0, 1]``-valued losses (the trivial cap on Dudley).
TRIVIAL_RADEMACHER = 0.5
#: The losses lie in ``[0, LOSS_RANGE]``: a gap bound at or above it says nothing.
LOSS_RANGE = 1.0


def is_trivial(dudley, value: float) -> bool:
    """``True`` when the bound cannot see the class: Dudley's cut-off sits at half the diameter (the
    integral is empty), or Dudley's value is at or above the trivial ``1/2``, or ``value`` is at or above
    the loss range."""
    return bool(dudley.alpha >= dudley.diameter / 2 or dudley.value >= TRIVIAL_RADEMACHER
                or value >= LOSS_RANGE)


def check_target(target) -> float:
    """``target`` must lie in ``(0, 1]`` (a gap bound on ``[0, 1]``-valued losses)."""
    return check_real(target, "target", lo=0.0, hi=LOSS_RANGE, lo_open=True)


def smallest_m(value_at: Callable[[int], float], target: float, *, tol: float = 0.0,
               max_m: int = 10**40) -> float:
    """The least ``m`` in ``[1, max_m]`` with ``value_at(m) <= target`` for a non-increasing ``value_at``: bisect
    ``[lo, hi] = [1, max_m]`` at ``isqrt(lo hi)`` while ``hi > 4 lo``, else at ``(lo + hi) // 2`` (inside ``(lo, hi)``),
    return ``hi``; ``inf`` when ``value_at(max_m) > target``, ``1`` when ``value_at(1) <= target``.
    ``tol`` (decades): stop once ``hi <= lo * 10**tol``; the result ``M`` then meets the target and
    ``M / 10**tol`` does not (``tol = 0``: exact, ``M - 1`` does not)."""
    target = check_target(target)
    tol = check_real(tol, "tol", lo=0.0)
    max_m = check_positive_int(max_m, "max_m")
    if value_at(max_m) > target:
        return math.inf
    if value_at(1) <= target:
        return 1
    lo, hi = 1, max_m                      # value_at(lo) > target >= value_at(hi)
    ratio = 10.0**tol
    while hi - lo > 1 and hi > lo * ratio:
        mid = math.isqrt(lo * hi) if hi > 4 * lo else (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        if value_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def json_float(x: float):
    """``x`` if finite, else ``"inf"``/``"-inf"``/``"nan"`` (strict JSON has no infinities)."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


class BoundResultMixin:
    """``trivial``, ``samples_needed`` and ``to_dict`` for a frozen bound result with ``value``,
    ``dudley``, ``m``, ``delta``, ``capacity``, ``log_factor`` and a method ``at(m)`` (the same bound at
    another sample size, every radius and the confidence held fixed)."""

    @property
    def trivial(self) -> bool:
        """``True`` when ``value`` is the trivial cap (:func:`is_trivial`): it cannot see the weights."""
        return is_trivial(self.dudley, self.value)

    def samples_needed(self, target: float = 0.5, *, tol: float = 0.0, max_m: int = 10**40) -> float:
        """The smallest ``m`` at which this bound (same radii, same ``delta`` -- with a radius grid, the
        grid point's ``delta``) is at most ``target`` (:func:`smallest_m`; ``inf`` if not by ``max_m``)."""
        return smallest_m(lambda m: self.at(m).value, target, tol=tol, max_m=max_m)

    def to_dict(self, *, m_star_target: float | None = None, tol: float = 0.0) -> dict:
        """JSON-ready summary: ``value``, ``trivial``, ``capacity``, ``log_factor``, ``rademacher``, ``m``,
        ``delta``, ``margin`` (and ``T`` where the bound has one); with ``m_star_target`` also ``m_star``
        (``samples_needed`` at that target) and ``m_star_target``."""
        out = {"bound": type(self).__name__, "value": json_float(self.value), "trivial": self.trivial,
               "capacity": json_float(self.capacity), "log_factor": json_float(self.log_factor),
               "rademacher": json_float(self.rademacher), "m": int(self.m), "delta": float(self.delta),
               "margin": float(self.margin)}
        if hasattr(self, "T"):
            out["T"] = int(self.T)
        if m_star_target is not None:
            ms = self.samples_needed(m_star_target, tol=tol)
            out["m_star"] = ms if isinstance(ms, int) else json_float(ms)
            out["m_star_target"] = float(m_star_target)
        return out
