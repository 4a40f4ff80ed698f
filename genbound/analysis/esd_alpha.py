"""A power-law fit to each matrix's empirical spectral density: WeightWatcher's ``alpha``, an
empirical diagnostic, not a bound.

The empirical spectral density (ESD) of a weight matrix ``W`` is the distribution of the eigenvalues
``lambda_i = sigma_i^2`` of ``W^T W`` (the squared singular values). Martin & Mahoney (*Implicit
self-regularization in deep neural networks*, JMLR 2021) fit a power law ``p(x) ~ x^(-alpha)``,
``x >= xmin``, to its tail and read smaller ``alpha`` as heavier-tailed, "more trained" layers; the
WeightWatcher tool reports that ``alpha`` per layer. This module computes it the standard way
(Clauset, Shalizi & Newman, *Power-law distributions in empirical data*, SIAM Review 51, 2009):

* for a given ``xmin``, the maximum-likelihood exponent of the continuous power law over the ``n``
  eigenvalues ``>= xmin`` is ``alpha = 1 + n / sum_i log(lambda_i / xmin)`` (their eq. 3.1), with
  standard error ``(alpha - 1) / sqrt(n)`` (eq. 3.2, to first order in ``1/n``);
* ``xmin`` is the observed eigenvalue that minimises the Kolmogorov-Smirnov distance ``D`` between
  the empirical CDF of the tail and the fitted CDF ``1 - (x / xmin)^(1 - alpha)`` (their section 3.3),
  among those leaving at least ``min_tail`` eigenvalues in the tail.

The matrices are genbound's (:func:`~genbound.analysis.esd.named_spectra`): an attention head's
``QK`` and ``V`` are the papers' per-head products, with at most ``d_head`` nonzero singular values,
not WeightWatcher's whole ``W_Q``, ``W_K``, ``W_V``, so their ``alpha`` is not the number
WeightWatcher gives for those layers (and, fitted on a few dozen values, is noisy: read its
``stderr``). ``alpha`` does not change when ``W`` is scaled (only ``xmin`` does). It is a
description of the spectrum: none of genbound's bounds uses it, and nothing here certifies anything.
A matrix with too few nonzero eigenvalues (or all of them equal) is reported as not fitted, its
numbers ``None`` and a note saying why, never a NaN.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, NonFiniteError, ParameterError, ShapeError
from .esd import named_spectra

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import pandas as pd

__all__ = [
    "DEFAULT_MIN_TAIL",
    "ESD_ALPHA_FIELDS",
    "PowerLawFit",
    "power_law_alpha",
    "esd_alpha_table",
    "check_esd_alpha_path",
    "write_esd_alpha",
]

#: The fewest eigenvalues a fitted tail may hold (and so the fewest nonzero eigenvalues a matrix
#: needs to be fitted at all). Below about 10 points the exponent's standard error exceeds a third of
#: ``alpha - 1`` and the KS choice of ``xmin`` is noise.
DEFAULT_MIN_TAIL = 10

#: The columns of :func:`esd_alpha_table`, in order.
ESD_ALPHA_FIELDS = (
    "key",
    "kind",
    "layer",
    "head",
    "expert",
    "n_eigenvalues",
    "fitted",
    "alpha",
    "xmin",
    "ks_distance",
    "n_tail",
    "stderr",
    "note",
)


@dataclass(frozen=True)
class PowerLawFit:
    """The power-law fit of one spectrum (see the module's description; an empirical diagnostic,
    not a bound).

    ``alpha``: the fitted exponent of ``p(x) ~ x^(-alpha)``; ``xmin``: where the tail starts (an
    eigenvalue ``sigma^2``); ``ks_distance``: the Kolmogorov-Smirnov distance ``D`` of the fit on the
    tail; ``n_tail``: the eigenvalues ``>= xmin``; ``stderr``: ``(alpha - 1) / sqrt(n_tail)``;
    ``n_eigenvalues``: the nonzero eigenvalues offered. When the spectrum could not be fitted the five
    numbers are ``None`` and ``note`` says why (it is ``""`` for a fit).
    """

    alpha: float | None
    xmin: float | None
    ks_distance: float | None
    n_tail: int | None
    stderr: float | None
    n_eigenvalues: int
    note: str = ""

    @classmethod
    def not_fitted(cls, n_eigenvalues: int, note: str) -> "PowerLawFit":
        """A matrix whose spectrum has no tail to fit: every fitted quantity ``None``, ``note`` says why."""
        return cls(None, None, None, None, None, n_eigenvalues, note)

    @property
    def fitted(self) -> bool:
        """Whether a power law was fitted (``alpha`` is a number)."""
        return self.alpha is not None

    def to_dict(self) -> dict:
        """The fields and ``fitted``, JSON-ready (``None`` for the numbers of a spectrum not fitted)."""
        return dict(asdict(self), fitted=self.fitted)


def _eigenvalues(svals) -> np.ndarray:
    """The nonzero eigenvalues ``sigma^2`` of a 1-D array of singular values, ascending; raise an
    :class:`~genbound.errors.InputError` subclass naming what is wrong with ``svals``."""
    if hasattr(svals, "detach"):  # a torch tensor, on any device
        svals = svals.detach().cpu()
    try:
        s = np.asarray(svals)
    except (TypeError, ValueError) as exc:
        raise InputError(f"svals: not an array of numbers ({exc})") from exc
    if s.dtype == bool or not (
        np.issubdtype(s.dtype, np.integer) or np.issubdtype(s.dtype, np.floating)
    ):
        raise InputError(f"svals: need real numbers (singular values), got dtype {s.dtype}")
    if s.ndim != 1:
        raise ShapeError(f"svals: need a 1-D array of singular values, got shape {s.shape}")
    if s.size == 0:
        raise InputError("svals: empty (no singular values to fit)")
    s = s.astype(np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise NonFiniteError(
            f"svals: {int(bad.sum())} of {s.size} values are not finite (first at index {first}: "
            f"{s[first]})"
        )
    if (s < 0).any():
        first = int(np.flatnonzero(s < 0)[0])
        raise InputError(
            f"svals: singular values are >= 0, got {float(s[first])!r} at index {first} "
            f"({int((s < 0).sum())} negative)"
        )
    with np.errstate(over="ignore", under="ignore"):
        lam = s * s
    if not np.isfinite(lam).all():
        raise InputError(
            f"svals: {float(s.max())!r} squared exceeds the float64 range (eigenvalue sigma^2 overflows)"
        )
    return np.sort(lam[lam > 0])


def _ks_distance(log_tail: np.ndarray, alpha: float) -> float:
    """The exact sup distance between the empirical CDF of a sorted tail (``log(x / xmin)``) and the
    power law's CDF ``1 - (x / xmin)^(1 - alpha)`` (both sides of each step; ties included)."""
    n = log_tail.size
    cdf = -np.expm1((1.0 - alpha) * log_tail)
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(max(np.max(i / n - cdf), np.max(cdf - (i - 1.0) / n)))


def power_law_alpha(svals, *, min_tail: int = DEFAULT_MIN_TAIL) -> PowerLawFit:
    """The power-law fit of the empirical spectral density of one matrix with singular values
    ``svals``: WeightWatcher's ``alpha`` (Martin & Mahoney), an empirical diagnostic, not a bound.

    The eigenvalues are ``lambda_i = sigma_i^2`` (exact zeros, such as the ``N - d_head`` zeros of a
    head's product, are left out). For each observed eigenvalue ``xmin`` leaving ``n >= min_tail``
    eigenvalues ``>= xmin``, the maximum-likelihood exponent is ``alpha = 1 + n / sum log(lambda_i /
    xmin)`` (Clauset, Shalizi & Newman 2009, eq. 3.1); the ``xmin`` kept is the one whose fit has the
    smallest Kolmogorov-Smirnov distance ``D`` to the tail's empirical CDF (their section 3.3; on a
    tie, the smallest ``xmin``). The standard error is ``(alpha - 1) / sqrt(n)`` (their eq. 3.2).
    The cost is ``O(N^2)`` in the ``N`` eigenvalues.

    ``svals`` is any 1-D array of finite, nonnegative numbers (numpy, a list, a torch tensor), in any
    order. Fewer than ``min_tail`` nonzero eigenvalues, or all of them equal, give a fit with
    ``fitted`` false, its numbers ``None`` and ``note`` saying why. An empty, non-1-D, non-finite or
    negative ``svals`` raises an :class:`~genbound.errors.InputError` subclass naming the problem;
    ``min_tail`` below 2 a :class:`~genbound.errors.ParameterError`.

    >>> import numpy as np
    >>> u = (np.arange(2000) + 0.5) / 2000
    >>> lam = (1 - u) ** (-1 / 1.5)            # the quantiles of a Pareto law, alpha = 2.5, xmin = 1
    >>> fit = power_law_alpha(np.sqrt(lam))   # singular values sigma = sqrt(lambda)
    >>> round(fit.alpha, 2), fit.xmin < 1.1, fit.n_tail > 1000, round(fit.stderr, 3)
    (2.5, True, True, 0.034)
    >>> power_law_alpha([3.0, 2.0, 1.0, 0.0])
    PowerLawFit(alpha=None, xmin=None, ks_distance=None, n_tail=None, stderr=None, n_eigenvalues=3, note='3 nonzero eigenvalues, fewer than min_tail = 10')
    """
    if isinstance(min_tail, bool) or not isinstance(min_tail, Integral) or min_tail < 2:
        raise ParameterError(f"min_tail must be an integer >= 2, got {min_tail!r}")
    min_tail = int(min_tail)
    x = _eigenvalues(svals)
    total = int(x.size)
    if total < min_tail:
        return PowerLawFit.not_fitted(
            total, f"{total} nonzero eigenvalues, fewer than min_tail = {min_tail}"
        )
    logx = np.log(x)
    best: tuple[float, float, int, float] | None = None  # (D, alpha, k, xmin)
    for k in range(total - min_tail + 1):
        if k > 0 and x[k] == x[k - 1]:
            continue  # the tail of a repeated value starts at its first occurrence
        log_tail = logx[k:] - logx[k]
        denom = float(np.sum(log_tail))
        if denom <= 0.0:
            break  # every eigenvalue from here on is equal: no larger xmin has a tail either
        n = total - k
        alpha = 1.0 + n / denom
        d = _ks_distance(log_tail, alpha)
        if best is None or d < best[0]:
            best = (d, alpha, k, float(x[k]))
    if best is None:
        return PowerLawFit.not_fitted(
            total,
            f"no tail of >= {min_tail} eigenvalues with distinct values (no power law to fit)",
        )
    d, alpha, k, xmin = best
    n = total - k
    return PowerLawFit(alpha, xmin, d, n, (alpha - 1.0) / math.sqrt(n), total)


def esd_alpha_table(analysis, *, min_tail: int = DEFAULT_MIN_TAIL) -> "pd.DataFrame":
    """One row per matrix of an :class:`~genbound.analysis.api.Analysis` or
    :class:`~genbound.analysis.api.SpectraOnly` (the spectra of
    :func:`~genbound.analysis.esd.named_spectra`, in its order): the columns of
    :data:`ESD_ALPHA_FIELDS`, the :func:`power_law_alpha` fit of each matrix's ESD. A diagnostic,
    not a bound: no bound of genbound reads it.

    A matrix not fitted has ``fitted`` false, ``alpha``, ``xmin``, ``ks_distance``, ``n_tail`` and
    ``stderr`` missing (pandas' ``<NA>``, an empty CSV cell: the columns are nullable ``Float64`` and
    ``Int64``, never NaN) and ``note`` saying why; ``head`` and ``expert`` are -1 where a matrix has
    none, as in :func:`~genbound.analysis.esd.matrix_key`.
    """
    import pandas as pd

    rows = []
    for m in named_spectra(analysis):
        fit = power_law_alpha(m.svals, min_tail=min_tail)
        rows.append(
            {
                "key": m.key,
                "kind": m.kind,
                "layer": m.layer,
                "head": m.head,
                "expert": m.expert,
                "n_eigenvalues": fit.n_eigenvalues,
                "fitted": fit.fitted,
                "alpha": fit.alpha,
                "xmin": fit.xmin,
                "ks_distance": fit.ks_distance,
                "n_tail": fit.n_tail,
                "stderr": fit.stderr,
                "note": fit.note,
            }
        )
    table = pd.DataFrame(rows, columns=list(ESD_ALPHA_FIELDS))
    types = {c: "Float64" for c in ("alpha", "xmin", "ks_distance", "stderr")}
    types.update({c: "Int64" for c in ("layer", "head", "expert", "n_eigenvalues", "n_tail")})
    return table.astype(dict(types, fitted=bool, key=str, kind=str, note=str))


def check_esd_alpha_path(path) -> None:
    """Refuse an ``--esd-alpha`` file name that does not end in ``.csv`` (the table is written as
    CSV), with a :class:`~genbound.errors.ParameterError` naming it."""
    if Path(path).suffix.lower() != ".csv":
        raise ParameterError(
            f"--esd-alpha {path}: the power-law fits are written as CSV; name a file ending in .csv"
        )


def write_esd_alpha(analysis, path, *, min_tail: int = DEFAULT_MIN_TAIL) -> int:
    """Write :func:`esd_alpha_table` of ``analysis`` as CSV to ``path`` (ending in ``.csv``; a
    matrix not fitted has empty cells for its numbers); return how many matrices were fitted."""
    check_esd_alpha_path(path)
    table = esd_alpha_table(analysis, min_tail=min_tail)
    table.to_csv(path, index=False)
    return int(table["fitted"].sum())
