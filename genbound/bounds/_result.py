"""The protocol every bound result of :mod:`genbound.bounds` follows (:class:`BoundResult`), and its helpers.

A bound result is what a bound function returns: the frozen dataclasses
:class:`~genbound.bounds.trauger_tewari.TTBound`, :class:`~genbound.bounds.edelman.EdelmanBound`,
:class:`~genbound.bounds.sakai_imaizumi.SpectralBoundReport` and
:class:`~genbound.bounds.sakai_imaizumi.EdelmanProxyReport`. Each subclasses :class:`BoundResult` and so
says the same things about itself, whatever proves it (Dudley's integral, a PAC-Bayes KL term, a test
set): nothing in the protocol reads how the bound was proved.

**What a result class provides** (``tests/bounds/test_bound_protocol.py`` discovers every public class of every
module of :mod:`genbound.bounds` and checks each one against this list on the instances of its
:meth:`~BoundResult.examples`; a class named ``*Bound``, ``*Report`` or ``*Result`` that does not subclass
:class:`BoundResult` fails that test):

* ``value: float`` -- the number the bound reports (the book's number).
* ``n_samples: int | None`` -- the sample size the result was evaluated at (``None``: none given, as for
  a proxy read off a checkpoint).
* ``capacity: float`` -- the sample-size-free complexity: ``gap_at(n) <= capacity * (logarithms) / sqrt(n)``.
  A bound without one (a test-set bound) returns ``nan`` (written ``null`` in JSON), never raises.
* ``gap_at(n: int) -> float`` -- the bound on the generalization gap of a ``[0, LOSS_RANGE]``-valued loss
  at sample size ``n``, every other quantity (radii, weights, confidence) held fixed; non-increasing in
  ``n``. For a bound stated at its sample size, ``gap_at(n_samples) == value``; for an ``n``-free proxy it
  is the estimate the proxy stands for (``capacity / sqrt(n)`` for Sakai-Imaizumi).
* ``trivial_reason: str | None`` -- why the value says nothing about the weights: a non-empty sentence
  when it is trivial, ``""`` when it is not, ``None`` when it cannot be decided (no ``n_samples``).
* ``_dict_fields() -> dict`` -- the class's own JSON fields (the shared ones are added by
  :meth:`~BoundResult.to_dict`).
* ``examples() -> list`` (classmethod) -- a few small, cheap, deterministic instances for the conformance
  test, including a trivial and a non-trivial one where the bound can be both.

**What the protocol adds** (implemented once, here):

* ``trivial: bool | None`` -- ``None`` if ``trivial_reason`` is ``None``, else ``trivial_reason != ""``.
  A bound is trivial at least when ``gap_at(n_samples) >= LOSS_RANGE``.
* ``samples_needed(target=LOSS_RANGE, *, tol=0.0, limit=SAMPLES_LIMIT) -> int | float`` -- the least
  ``n`` in ``[1, limit]`` with ``gap_at(n) <= target`` (``target`` in ``(0, LOSS_RANGE]``), by the one
  bisection :func:`smallest_m`; ``math.inf`` when ``gap_at(limit) > target``. ``tol`` (decades): the
  result ``M`` meets the target and ``M / 10**tol`` does not. The default target is the loss range: the
  smallest sample size at which the bound stops being vacuous. A class may override
  ``_smallest_n(target, tol, limit)`` with an exact closed form only if ``tests/bounds/test_bound_protocol.py``
  checks it against the bisection (Sakai-Imaizumi does: :func:`~genbound.bounds.sakai_imaizumi.samples_needed`).
* ``to_dict(*, target=None, tol=0.0) -> dict`` -- JSON-ready: ``bound`` (the class name), ``value``,
  ``trivial``, ``trivial_reason``, ``capacity``, ``n_samples``, the class's ``_dict_fields()``, and with
  ``target`` also ``samples_needed`` and ``target``. Every float goes through
  :func:`genbound.jsonsafe.json_tree`: a non-finite float is ``None`` (``null``), the one policy of the
  package.

>>> smallest_m(lambda m: 10.0 / m, 0.5)
20
>>> smallest_m(lambda m: 10.0 / m, 0.5, tol=0.05) >= 20
True
>>> smallest_m(lambda m: 1.0, 0.5, max_m=10**6)
inf
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

from .._validate import check_positive_int, check_real
from ..jsonsafe import json_tree

__all__ = [
    "TRIVIAL_RADEMACHER",
    "LOSS_RANGE",
    "SAMPLES_LIMIT",
    "is_trivial",
    "dudley_trivial_reason",
    "check_target",
    "smallest_m",
    "BoundResult",
    "DudleyHooks",
]

#: ``R_S(G) = R_S(G - 1/2) <= 1/2`` for any class of ``[0, 1]``-valued losses (the trivial cap on Dudley).
TRIVIAL_RADEMACHER = 0.5
#: The losses lie in ``[0, LOSS_RANGE]``: a gap bound at or above it says nothing.
LOSS_RANGE = 1.0
#: The default ``limit`` of :meth:`BoundResult.samples_needed` (and of :func:`smallest_m`): beyond ``10**40``
#: samples the answer is ``inf``. (Far beyond any data set; and a cover on ``m T`` points, as Edelman's,
#: overflows float64 long before ``2**1000``.)
SAMPLES_LIMIT = 10**40


def dudley_trivial_reason(dudley, value: float) -> str:
    """Why a Dudley-based gap bound is trivial, or ``""``: Dudley's cut-off sits at half the diameter (the
    integral is empty), or Dudley's value is at or above the trivial ``1/2``, or ``value`` is at or above the
    loss range. (A helper for Dudley-based results; the protocol itself does not read ``dudley``.)"""
    if value >= LOSS_RANGE:
        return f"the gap bound {value:.6g} is at or above the loss range {LOSS_RANGE:g}"
    if dudley.value >= TRIVIAL_RADEMACHER:
        return f"Dudley's bound {dudley.value:.6g} is at or above the trivial Rademacher cap {TRIVIAL_RADEMACHER:g}"
    if dudley.alpha >= dudley.diameter / 2:
        return "Dudley's cut-off sits at half the diameter: the entropy integral is empty"
    return ""


def is_trivial(dudley, value: float) -> bool:
    """``True`` when :func:`dudley_trivial_reason` gives a reason."""
    return dudley_trivial_reason(dudley, value) != ""


def check_target(target) -> float:
    """``target`` must lie in ``(0, 1]`` (a gap bound on ``[0, 1]``-valued losses)."""
    return check_real(target, "target", lo=0.0, hi=LOSS_RANGE, lo_open=True)


def smallest_m(
    value_at: Callable[[int], float], target: float, *, tol: float = 0.0, max_m: int = SAMPLES_LIMIT
) -> float:
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
    lo, hi = 1, max_m  # value_at(lo) > target >= value_at(hi)
    ratio = 10.0**tol
    while hi - lo > 1 and hi > lo * ratio:
        mid = math.isqrt(lo * hi) if hi > 4 * lo else (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        if value_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


class BoundResult:
    """Base class of every bound result (the protocol of the module docstring): ``trivial``,
    ``samples_needed`` and ``to_dict`` implemented once from the hooks ``value``, ``n_samples``,
    ``capacity``, ``gap_at``, ``trivial_reason``, ``_dict_fields`` and ``examples``."""

    # -- hooks a result class provides -----------------------------------------------------------------

    if TYPE_CHECKING:  # fields or properties of every result class (declared for the type checker)

        @property
        def value(self) -> float: ...

        @property
        def capacity(self) -> float: ...

        @property
        def n_samples(self) -> int | None: ...

    def gap_at(self, n: int) -> float:
        """The bound on the generalization gap at sample size ``n``, all else held fixed."""
        raise NotImplementedError(f"{type(self).__name__} must define gap_at(n)")

    @property
    def trivial_reason(self) -> str | None:
        """Why the value is trivial (non-empty), ``""`` when it is not, ``None`` when undecided."""
        raise NotImplementedError(f"{type(self).__name__} must define trivial_reason")

    def _dict_fields(self) -> dict:
        """The class's own fields of :meth:`to_dict` (beyond the shared ones)."""
        return {}

    @classmethod
    def examples(cls) -> list:
        """Small instances for ``tests/bounds/test_bound_protocol.py``."""
        raise NotImplementedError(f"{cls.__name__} must define the classmethod examples()")

    # -- what the protocol implements ------------------------------------------------------------------

    @property
    def trivial(self) -> bool | None:
        """``True`` when the value cannot see the weights (see :attr:`trivial_reason`), ``None`` when
        undecided (no sample size)."""
        reason = self.trivial_reason
        return None if reason is None else reason != ""

    def samples_needed(
        self, target: float = LOSS_RANGE, *, tol: float = 0.0, limit: int = SAMPLES_LIMIT
    ) -> int | float:
        """The least sample size ``n`` in ``[1, limit]`` with ``gap_at(n) <= target`` (:func:`smallest_m`;
        ``inf`` if not by ``limit``); ``tol`` in decades. Default target: the loss range."""
        target = check_target(target)
        tol = check_real(tol, "tol", lo=0.0)
        limit = check_positive_int(limit, "limit")
        return self._smallest_n(target, tol, limit)

    def _smallest_n(self, target: float, tol: float, limit: int) -> int | float:
        """The shared bisection; a class may override it with an exact closed form that a test compares."""
        return smallest_m(self.gap_at, target, tol=tol, max_m=limit)

    def to_dict(self, *, target: float | None = None, tol: float = 0.0) -> dict:
        """JSON-ready summary: ``bound, value, trivial, trivial_reason, capacity, n_samples``, the class's own
        fields, and with ``target`` also ``samples_needed`` (at that target and ``tol``) and ``target``.
        Non-finite floats are ``None`` (:func:`genbound.jsonsafe.json_tree`)."""
        out = {
            "bound": type(self).__name__,
            "value": self.value,
            "trivial": self.trivial,
            "trivial_reason": self.trivial_reason,
            "capacity": self.capacity,
            "n_samples": self.n_samples,
        }
        out.update(self._dict_fields())
        if target is not None:
            out["samples_needed"] = self.samples_needed(target, tol=tol)
            out["target"] = float(target)
        return json_tree(out)


class DudleyHooks:
    """The protocol's hooks that the two Dudley-based bounds (Trauger-Tewari, Edelman-type) share, as a
    mixin listed before :class:`BoundResult` (``class TTBound(DudleyHooks, BoundResult)``): a
    sample size ``m`` (the protocol's ``n_samples``), a Dudley integral ``dudley`` that decides triviality
    (:func:`dudley_trivial_reason`), and ``at(n)``, the same bound at another sample size (``gap_at``).
    Subclasses are frozen dataclasses with the fields ``m``, ``dudley`` and ``value`` and the method ``at``."""

    if TYPE_CHECKING:  # what the subclasses define (declared for the type checker)
        m: int
        dudley: Any
        value: float

        def at(self, n: int) -> Any: ...

    @property
    def n_samples(self) -> int:
        """The sample size ``m`` (the protocol's name)."""
        return self.m

    @property
    def trivial_reason(self) -> str:
        """Why the value is trivial (:func:`dudley_trivial_reason`), or ``""``."""
        return dudley_trivial_reason(self.dudley, self.value)

    def gap_at(self, n: int) -> float:
        """``at(n).value``: the same bound at sample size ``n``."""
        return self.at(n).value
