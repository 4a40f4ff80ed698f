"""The spectrum-adaptive post hoc proxy of Sakai & Imaizumi (2026) and their Edelman-style proxy.

Book: :ref:`ch-sakai-trained` (Part III). Every definition follows the authors' public code
(``bounds.py``; see the digest, sections 3.3-3.5), evaluated in float64 and in log space:

* ``C_2`` is the spectral norm of a matrix (its largest singular value).
* Per-layer Lipschitz factor ``lambda_k = L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h) (1 + 4 C2(QK_k,h))``
  and ``alpha_l = prod_{k > l} lambda_k`` (``alpha`` of the last layer is 1): :func:`layer_alpha`.
* ``gamma = 2 C2(V) C2(M_out) C2(M_in)`` for ``QK`` (same head), ``C2(M_out) C2(M_in)`` for ``V``,
  ``C2(M_out)`` for ``M_in``, ``1`` for ``M_out`` (no ``L_phi``, as in the authors' code):
  :func:`matrix_gamma`.
* ``scale = gamma * alpha_l * L``.
* Per-matrix term ``T(p) = (||W||_{S_p}^p)^{1/(p+2)} scale^{p/(p+2)} N^{(p+1)/(p+2)}``
  (``||W||_{S_0}^0`` is the numerical rank; ``N`` is the hidden width, also for the feed-forward
  matrices): :func:`log_contribution`; minimised over the grid ``{0, 1/m, ..., 2}``,
  ``m = ceil(L + ln max(N, 2))``: :func:`p_grid`.
* ``B_ours = sum of the minima + sqrt(L)``: :func:`spectral_adaptive_bound`.
* ``B_Edelman = (1 + sum_l alpha_l^{2/3} xi_l)^{3/2}``: :func:`edelman_proxy`.

Every constant here (``1.13``, the ``4`` in ``1 + 4 C2``, the ``2`` in ``gamma``, the grid rule and the
exponents of ``T(p)``) is derived or checked in :mod:`genbound.symbolic.spectral_bound`, and a test
compares the two.

Two modes. ``mode="exact"`` (default): head spectra from thin-QR cores, certified feed-forward spectra,
and singular values at or below the numerical-rank threshold ``tol * min(rows, cols) * max(sigma_1, 1)``
(``tol = max(rank_tol, eps)`` of the spectra's dtype, :func:`genbound.spectra.rank_threshold`) are
exact zeros for every ``p``. ``mode="authors"``: dense products and a full SVD, and the threshold is
applied only at ``p = 0`` (so the round-off noise floor of rank-deficient products enters the Schatten
sums for ``p > 0``, exactly as in the authors' code). Precomputed :class:`~genbound.weights.Spectra`
carry the method they were computed with; a mode that does not match it (``"authors"`` on exact
``method="core"`` spectra, or ``"exact"`` on dense ones) raises instead of reporting a mode that was
not used.

Table convention: feed-forward rows have ``head = -1`` (``genbound.weights.MLP_HEAD``).

>>> import torch
>>> from genbound.bounds.sakai_imaizumi import p_grid
>>> p_grid(6, 384).shape[0], float(p_grid(6, 384)[1])        # m = ceil(6 + ln 384) = 12
(25, 0.08333333333333333)

One concept: the Sakai-Imaizumi bound and its result object (the proxy, the post hoc index grid and
the Edelman-style proxy are its parts, evaluated by one code path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
import torch

from .. import norms as _norms
from .. import rademacher as _rademacher
from .. import schatten_entropy as _se
from .._validate import check_positive_int, check_real
from ..errors import InputError, ParameterError
from ..spectra import DEFAULT_RANK_TOL, numerical_rank, threshold_spectrum
from ..weights import KINDS, MLP_HEAD, Spectra, TransformerWeights
from ._result import BoundResult

__all__ = [
    "L_PHI",
    "ATTENTION_QK_FACTOR",
    "GAMMA_QK_FACTOR",
    "DUDLEY_INTEGRAL_COEF",
    "grid_m",
    "p_grid",
    "log_layer_lipschitz",
    "log_layer_alpha",
    "layer_alpha",
    "matrix_gamma",
    "log_schatten_grid",
    "log_contribution",
    "layer_table",
    "samples_needed",
    "SpectralBoundReport",
    "EdelmanProxyReport",
    "spectral_adaptive_bound",
    "edelman_proxy",
]

#: Lipschitz constant of GELU used by the authors (``sup GELU' = 1.1289...`` rounded up); defined in
#: :mod:`genbound.schatten_entropy`, the single home of the lemma-level constants.
L_PHI = _se.L_PHI
#: The ``4`` in a head's Lipschitz factor ``C2(V) (1 + 4 C2(QK))`` (:data:`genbound.schatten_entropy.ATTENTION_QK_FACTOR`).
ATTENTION_QK_FACTOR = _se.ATTENTION_QK_FACTOR
#: The ``2`` in ``gamma(QK) = 2 C2(V) C2(M_out) C2(M_in)`` (:data:`genbound.schatten_entropy.GAMMA_QK_FACTOR`).
GAMMA_QK_FACTOR = _se.GAMMA_QK_FACTOR
#: The ``12`` of Dudley's integral, used by ``capacity`` (:prf:ref:`prop-sa-capacity`).
DUDLEY_INTEGRAL_COEF = _rademacher.DUDLEY_INTEGRAL_COEF

_MODES = ("exact", "authors")
#: The spectra method each mode needs.
_METHOD_OF_MODE = {"exact": "core", "authors": "dense"}


def grid_m(n_layers: int, hidden: int) -> int:
    """The grid resolution ``m = ceil(L + ln max(N, 2))`` of the authors' code.

    >>> grid_m(12, 768), grid_m(2, 128), grid_m(6, 384)
    (19, 7, 12)
    """
    L = check_positive_int(n_layers, "n_layers")
    N = check_positive_int(hidden, "hidden")
    return int(math.ceil(L + math.log(max(N, 2))))


def p_grid(n_layers: int, hidden: int, grid_m: int | None = None, *, device=None) -> torch.Tensor:
    """The Schatten indices ``{0, 1/m, 2/m, ..., 2}`` (``2m + 1`` points, float64).

    ``grid_m`` overrides ``m``; by default ``m = ceil(L + ln max(N, 2))`` (:func:`grid_m`).

    >>> p_grid(1, 2, grid_m=2).tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    m = _grid_m(n_layers, hidden) if grid_m is None else check_positive_int(grid_m, "grid_m")
    return torch.arange(2 * m + 1, dtype=torch.float64, device=device) / m


_grid_m = grid_m


def log_layer_lipschitz(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``log lambda_k`` with ``lambda_k = L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h)(1 + 4 C2(QK_k,h))``:
    :func:`genbound.schatten_entropy.log_layer_lipschitz`.

    ``C2_qk``, ``C2_v`` have shape ``(L, H)``; ``C2_in``, ``C2_out`` shape ``(L,)``.
    """
    return _se.log_layer_lipschitz(C2_qk, C2_v, C2_in, C2_out, L_phi=L_phi)


def log_layer_alpha(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``log alpha_l = sum_{k > l} log lambda_k`` for every layer ``l`` (0 for the last layer):
    :func:`genbound.schatten_entropy.log_layer_alphas` of :func:`log_layer_lipschitz`."""
    return _se.log_layer_alphas(log_layer_lipschitz(C2_qk, C2_v, C2_in, C2_out, L_phi=L_phi))


def layer_alpha(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``alpha_l = prod_{k > l} L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h) (1 + 4 C2(QK_k,h))``.

    May overflow to ``inf`` on real weights; use :func:`log_layer_alpha` for the logarithm.

    >>> import torch
    >>> one = torch.ones(3, 1, dtype=torch.float64)
    >>> [round(a, 9) for a in layer_alpha(one, one, one[:, 0], one[:, 0], L_phi=1.0).tolist()]   # 1 * (1 + 4)
    [25.0, 5.0, 1.0]
    """
    return log_layer_alpha(C2_qk, C2_v, C2_in, C2_out, L_phi=L_phi).exp()


def matrix_gamma(C2_qk, C2_v, C2_in, C2_out) -> dict[str, torch.Tensor]:
    """``gamma`` of every matrix: ``{"QK": (L,H), "V": (L,H), "M_in": (L,), "M_out": (L,)}``, the authors'
    convention of :func:`genbound.schatten_entropy.sensitivities`.

    ``gamma(QK) = 2 C2(V) C2(M_out) C2(M_in)`` (same head), ``gamma(V) = C2(M_out) C2(M_in)``,
    ``gamma(M_in) = C2(M_out)``, ``gamma(M_out) = 1``.

    >>> import torch
    >>> g = matrix_gamma(torch.tensor([[1.0]]), torch.tensor([[3.0]]), torch.tensor([5.0]), torch.tensor([7.0]))
    >>> [g[k].flatten().item() for k in ("QK", "V", "M_in", "M_out")]
    [210.0, 35.0, 7.0, 1.0]
    """
    del C2_qk  # the authors' gammas do not involve the query-key norms
    return _se.sensitivities(C2_v, C2_in, C2_out, convention="authors")


def log_schatten_grid(
    svals: torch.Tensor,
    p: torch.Tensor,
    *,
    size: int,
    rank_tol: float = DEFAULT_RANK_TOL,
    mode: str = "exact",
) -> torch.Tensor:
    """``log ||W||_{S_p}^p`` for a stack of spectra ``(..., k)`` and a grid ``p`` ``(P,)`` -> ``(..., P)``:
    :func:`genbound.norms.log_schatten_power` in the chosen mode.

    ``size`` is ``min(rows, cols)`` of the matrices (the threshold's size; ``k`` may be smaller when
    the remaining singular values are exact zeros). ``p = 0`` gives the log numerical rank. In
    ``"exact"`` mode values at or below the threshold are zeros for every ``p``; in ``"authors"`` mode
    only for ``p = 0``.

    >>> import torch
    >>> s = torch.tensor([2.0, 1e-20], dtype=torch.float64)
    >>> log_schatten_grid(s, torch.tensor([0.0, 1.0], dtype=torch.float64), size=2).exp().tolist()
    [1.0, 2.0]
    """
    if mode not in _MODES:
        raise ParameterError(f"mode must be one of {_MODES}, got {mode!r}")
    exact = _norms.log_schatten_power(svals, p, rank_tol=rank_tol, size=size)
    if mode == "exact":
        return exact
    raw = _norms.log_schatten_power(svals, p, rank_tol=0.0)
    return torch.where(p == 0, exact, raw)


def log_contribution(log_spow, log_scale, N, p) -> torch.Tensor:
    """``log T(p) = [log M + p log scale + (p + 1) log N] / (p + 2)``, broadcast over matrices x grid:
    :func:`genbound.schatten_entropy.log_per_matrix_term` without ``c_p``.

    ``log_spow`` is ``log ||W||_{S_p}^p`` with a trailing grid axis, ``log_scale`` has the matrix
    shape (a trailing axis is added), ``p`` is the grid. Exponents ``1/(p+2)``, ``p/(p+2)``,
    ``(p+1)/(p+2)`` (:func:`genbound.symbolic.spectral_bound.term_exponents`).

    >>> import torch, math
    >>> p = torch.tensor([0.0, 2.0], dtype=torch.float64)
    >>> log_M = torch.tensor([[3.0, 5.0]], dtype=torch.float64).log()          # ||W||_{S_p}^p at p = 0, 2
    >>> lt = log_contribution(log_M, torch.tensor([math.log(4.0)], dtype=torch.float64), 12, p)
    >>> [round(v, 12) for v in lt.exp().flatten().tolist()]   # sqrt(3 * 12), (5 * 16 * 12**3) ** (1/4)
    [6.0, 19.282282054672]
    """
    ls = torch.as_tensor(log_scale, dtype=torch.float64).unsqueeze(-1)
    return _se.log_per_matrix_term(log_spow, ls, N, p, with_cp=False)


def samples_needed(log_capacity: float, target) -> int | float:
    """The smallest sample size ``n >= 1`` with ``capacity / sqrt(n) <= target``, from ``log capacity``.

    ``target`` must lie in ``(0, 1]``. Exact (least) up to ``2**50``; above, rounded up with relative
    accuracy ``1e-12``; ``math.inf`` when ``n`` exceeds ``2**1000`` (beyond float64).

    >>> samples_needed(math.log(7.3), 0.5), samples_needed(math.log(7.3), 1.0), samples_needed(-1.0, 1.0)
    (214, 54, 1)
    """
    t = check_real(target, "target", lo=0.0, hi=1.0, lo_open=True)
    lc = float(log_capacity)
    if math.isnan(lc):
        raise InputError("log_capacity is NaN")
    log_n = 2.0 * (lc - math.log(t))
    if log_n > 1000 * math.log(2):
        return math.inf
    if log_n > 50 * math.log(2):  # beyond exact float steps: round up, relative accuracy 1e-12
        return int(math.ceil(math.exp(log_n) * (1 + 1e-12)))
    n = max(1, math.ceil(math.exp(log_n)))
    ok = lambda k: lc - 0.5 * math.log(k) <= math.log(t)  # noqa: E731
    while not ok(n):
        n += 1
    while n > 1 and ok(n - 1):
        n -= 1
    return n


# --------------------------------------------------------------------------------------------------
# reports


def _check_n_samples(n):
    return None if n is None else check_positive_int(n, "n_samples")


def _trivial(log_capacity: float, n_samples):
    """``capacity / sqrt(n) >= 1`` (the loss range), or ``None`` without a sample size."""
    if n_samples is None:
        return None
    return bool(log_capacity - 0.5 * math.log(n_samples) >= 0.0)


def _gap_estimate(log_capacity: float, n: int) -> float:
    """``capacity / sqrt(n)`` from ``log capacity`` (``inf`` beyond float64)."""
    x = float(log_capacity) - 0.5 * math.log(check_positive_int(n, "n"))
    return math.exp(x) if x < _LOG_MAX else math.inf


def _trivial_reason(log_capacity: float, n_samples) -> str | None:
    """The protocol's ``trivial_reason`` of both reports: :func:`_trivial` with its reason."""
    t = _trivial(log_capacity, n_samples)
    if t is None:
        return None
    if not t:
        return ""
    return (
        f"capacity / sqrt(n) = exp({float(log_capacity) - 0.5 * math.log(n_samples):.6g}) is at or above "
        f"the loss range 1 at n = {n_samples}"
    )


def _closed_form_n(log_capacity: float, target: float, limit: int) -> int | float:
    """The protocol's ``_smallest_n`` of both reports: :func:`samples_needed` (exact closed form; ``inf``
    beyond ``limit``). ``tests/bounds/test_bound_protocol.py`` compares it with the shared bisection."""
    n = samples_needed(log_capacity, target)
    return math.inf if n > limit else n


def _example_weights(
    seed: int,
    n_layers: int = 2,
    n_heads: int = 2,
    hidden: int = 6,
    d_ff: int = 8,
    scale: float = 1.0,
) -> TransformerWeights:
    """Small random proxy matrices (``examples()`` of both reports)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return scale * torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(shape[0])

    L, H, N = n_layers, n_heads, hidden
    return TransformerWeights.from_proxy_matrices(
        [[r(N, N) for _ in range(H)] for _ in range(L)],
        [[r(N, N) for _ in range(H)] for _ in range(L)],
        [r(N, d_ff) for _ in range(L)],
        [r(d_ff, N) for _ in range(L)],
    )


@dataclass(frozen=True)
class SpectralBoundReport(BoundResult):
    """Result of :func:`spectral_adaptive_bound`.

    ``value``: ``B_ours = sum_matrices min_p T(p) + sqrt(L)``. ``table``: one row per matrix (columns
    ``layer, head, kind, rows, cols, rank, spectral_norm, frobenius_norm, nuclear_norm, norm_21, alpha,
    log_alpha, gamma, scale, log_scale, p_opt, contribution, route``; ``head = -1`` for ``M_in``/``M_out``;
    ``route`` says how the matrix's spectrum was computed, see ``Spectra.routes``;
    ``alpha``/``scale`` may be ``inf`` in float64, their logs are finite). ``p`` is the grid and
    ``log_terms`` the ``(matrices, P)`` tensor of ``log T(p)`` with rows in table order (per layer:
    ``QK`` and ``V`` of head 0, of head 1, ..., then ``M_in``, ``M_out``, as in the authors'
    extraction); :attr:`grid` gives it as a long DataFrame for p-contribution curves.

    What the numbers are (:prf:ref:`prop-sa-capacity`): ``value`` is the authors' proxy, not a bound on
    the risk (the theorem's constants are not known, :prf:ref:`rem-sa-theorem-shape`). ``capacity`` is
    the ``n``-free complexity ``12 sum_a kappa_{p_a} T_a(p_a) + sqrt(L)`` (``kappa_p = sqrt(c_p)(p+2)/2``,
    ``p_a`` the proxy's ``p_opt``) such that the Rademacher term is ``capacity / sqrt(n)`` up to the
    untracked constants of the two-piece entropy and the logarithm of its rank part
    (:prf:ref:`rem-sa-two-piece`); ``log_capacity`` is its finite logarithm. ``trivial`` is ``True`` when
    ``capacity / sqrt(n_samples) >= 1``, the range of a ``[0, 1]`` loss (even with every untracked
    constant and logarithm set to 1 the estimate says nothing), ``False`` when below, and ``None`` when
    no ``n_samples`` was given (a proxy of a checkpoint has no sample size; nothing to compare).
    """

    value: float
    table: pd.DataFrame
    p: torch.Tensor
    log_terms: torch.Tensor
    n_layers: int
    hidden: int
    grid_m: int
    L_phi: float
    rank_tol: float
    mode: str
    spectra: Spectra = field(repr=False)
    log_capacity: float = math.nan
    n_samples: int | None = None

    @property
    def capacity(self) -> float:
        """``exp(log_capacity)`` (``inf`` beyond float64)."""
        return math.exp(self.log_capacity) if self.log_capacity < _LOG_MAX else math.inf

    @property
    def trivial_reason(self) -> str | None:
        """``capacity / sqrt(n_samples) >= 1`` with its reason; ``None`` without ``n_samples`` (see the class
        docstring); ``trivial`` follows (the protocol of :mod:`genbound.bounds._result`)."""
        return _trivial_reason(self.log_capacity, self.n_samples)

    def gap_at(self, n: int) -> float:
        """``capacity / sqrt(n)``: the estimate of the Rademacher term at sample size ``n``."""
        return _gap_estimate(self.log_capacity, n)

    def _smallest_n(self, target: float, tol: float, limit: int) -> int | float:
        """``samples_needed(target)``: the least ``n`` with ``capacity / sqrt(n) <= target`` in closed form
        (:func:`samples_needed`)."""
        return _closed_form_n(self.log_capacity, target, limit)

    def _dict_fields(self) -> dict:
        return {
            "log_capacity": self.log_capacity,
            "n_layers": self.n_layers,
            "hidden": self.hidden,
            "grid_m": self.grid_m,
            "L_phi": self.L_phi,
            "rank_tol": self.rank_tol,
            "mode": self.mode,
            "matrices": len(self.table),
            "p_opt_zero": int((self.table["p_opt"] == 0).sum()),
        }

    @classmethod
    def examples(cls) -> list["SpectralBoundReport"]:
        """Two-layer random proxies: without ``n_samples``, trivial at ``n = 10``, not at ``10**12``, and in
        ``"authors"`` mode."""
        w = _example_weights(0)
        return [
            spectral_adaptive_bound(w),
            spectral_adaptive_bound(w, n_samples=10),
            spectral_adaptive_bound(w, n_samples=10**12),
            spectral_adaptive_bound(
                _example_weights(1, n_layers=1, scale=3.0), mode="authors", n_samples=100
            ),
        ]

    @property
    def grid(self) -> pd.DataFrame:
        """Long table ``layer, head, kind, p, log_term, term, ratio_to_p0`` (every matrix x every p)."""
        lt = self.log_terms.detach().cpu()
        P = lt.shape[1]
        rows = (
            self.table[["layer", "head", "kind"]]
            .loc[self.table.index.repeat(P)]
            .reset_index(drop=True)
        )
        rows["p"] = self.p.cpu().repeat(lt.shape[0]).numpy()
        rows["log_term"] = lt.reshape(-1).numpy()
        rows["term"] = lt.exp().reshape(-1).numpy()
        rows["ratio_to_p0"] = (lt - lt[:, :1]).exp().reshape(-1).numpy()
        return rows

    def summary(self) -> str:
        n = len(self.table)
        at0 = int((self.table["p_opt"] == 0).sum())
        return (
            f"spectral-adaptive proxy B = {self.value:.6g} over {n} matrices (L = {self.n_layers}, "
            f"N = {self.hidden}, grid m = {self.grid_m}, mode {self.mode}); p_opt = 0 for {at0} of {n}; "
            f"capacity {self.capacity:.6g}"
        )


@dataclass(frozen=True)
class EdelmanProxyReport(BoundResult):
    """Result of :func:`edelman_proxy`: ``value`` (may be ``inf`` in float64), ``log_value`` (finite),
    and a per-layer ``table`` (``layer, log_lipschitz, alpha, log_alpha, xi, log_xi``).

    ``capacity`` is ``value`` itself: the Edelman-style bound is ``value / sqrt(n)`` up to its logarithmic
    factors (:ref:`ch-sakai-trained`), so the proxy is already ``n``-free. ``trivial``: ``value / sqrt(n_samples)
    >= 1`` (the range of a ``[0, 1]`` loss), ``None`` without ``n_samples``.
    """

    value: float
    log_value: float
    table: pd.DataFrame
    n_layers: int
    L_phi: float
    n_samples: int | None = None

    @property
    def capacity(self) -> float:
        return self.value

    @property
    def log_capacity(self) -> float:
        return self.log_value

    @property
    def trivial_reason(self) -> str | None:
        """``value / sqrt(n_samples) >= 1`` with its reason; ``None`` without ``n_samples``."""
        return _trivial_reason(self.log_value, self.n_samples)

    def gap_at(self, n: int) -> float:
        """``value / sqrt(n)``."""
        return _gap_estimate(self.log_value, n)

    def _smallest_n(self, target: float, tol: float, limit: int) -> int | float:
        """The least ``n`` with ``value / sqrt(n) <= target`` in closed form (:func:`samples_needed`)."""
        return _closed_form_n(self.log_value, target, limit)

    def _dict_fields(self) -> dict:
        """``value`` and ``capacity`` are ``None`` beyond float64: the logs are kept."""
        return {
            "log_value": self.log_value,
            "log_capacity": self.log_capacity,
            "n_layers": self.n_layers,
            "L_phi": self.L_phi,
        }

    @classmethod
    def examples(cls) -> list["EdelmanProxyReport"]:
        """Random proxies: without ``n_samples``, trivial at ``n = 10``, not at ``10**15``, and one whose
        value overflows float64 (``inf``, finite ``log_value``)."""
        w = _example_weights(0)
        big = _example_weights(2, n_layers=40, n_heads=1, hidden=4, d_ff=4, scale=400.0)
        return [
            edelman_proxy(w),
            edelman_proxy(w, n_samples=10),
            edelman_proxy(w, n_samples=10**15),
            edelman_proxy(big, n_samples=10**6),
        ]

    def summary(self) -> str:
        return (
            f"Edelman-style proxy = {self.value:.6g} (log = {self.log_value:.6g}) over "
            f"{self.n_layers} layers"
        )


#: ``log`` of the largest float64 (``math.exp`` overflows beyond it).
_LOG_MAX = math.log(torch.finfo(torch.float64).max)


# --------------------------------------------------------------------------------------------------
# evaluation on spectra (pure functions: nothing here reads a file)


def _get_spectra(weights, *, device, mode, progress=False) -> Spectra:
    if mode not in _MODES:
        raise ParameterError(f"mode must be one of {_MODES}, got {mode!r}")
    method = _METHOD_OF_MODE[mode]
    if isinstance(weights, Spectra):
        if weights.method != method:
            raise ParameterError(
                f"mode={mode!r} needs spectra computed with method={method!r}, but these were computed with "
                f"method={weights.method!r}; pass the weights themselves, or spectra from "
                f"weights.spectra(method={method!r})"
            )
        return weights.to(device) if device is not None else weights
    if not isinstance(weights, TransformerWeights):
        raise InputError(
            f"weights must be TransformerWeights or Spectra, got {type(weights).__name__}; to read a checkpoint "
            f"folder or a torch module use genbound.spectral_adaptive_bound / genbound.edelman_proxy "
            f"(genbound.checkpoint_bounds) or genbound.load_weights first"
        )
    return weights.spectra(device=device, method=method, progress=progress)


def _c2(sp: Spectra):
    c = sp.spectral_norms()
    return c["QK"], c["V"], c["M_in"], c["M_out"]


def layer_table(weights, *, L_phi: float = L_PHI, device=None, mode: str = "exact") -> pd.DataFrame:
    """Per-layer spectral norms and Lipschitz factors: ``layer, C2_M_in, C2_M_out, C2_QK_max,
    C2_V_max, head_sum, log_lipschitz, log_alpha, alpha`` (``head_sum = sum_h C2(V)(1 + 4 C2(QK))``)."""
    sp = _get_spectra(weights, device=device, mode=mode)
    qk, v, cin, cout = _c2(sp)
    lam = log_layer_lipschitz(qk, v, cin, cout, L_phi=L_phi)
    la = _se.log_layer_alphas(lam)
    return pd.DataFrame(
        {
            "layer": range(sp.n_layers),
            "C2_M_in": cin.cpu().numpy(),
            "C2_M_out": cout.cpu().numpy(),
            "C2_QK_max": qk.max(dim=-1).values.cpu().numpy(),
            "C2_V_max": v.max(dim=-1).values.cpu().numpy(),
            "head_sum": _se.head_lipschitz(qk, v).sum(-1).cpu().numpy(),
            "log_lipschitz": lam.cpu().numpy(),
            "log_alpha": la.cpu().numpy(),
            "alpha": la.exp().cpu().numpy(),
        }
    )


def _flat(sp: Spectra, per_kind: dict) -> torch.Tensor:
    """Concatenate per-kind tensors (``(L,H,...)`` for heads, ``(L,...)`` for MLP) in table order."""
    parts = []
    for l in range(sp.n_layers):  # small: only reorders already computed numbers
        heads = torch.stack([per_kind["QK"][l], per_kind["V"][l]], dim=1).flatten(
            0, 1
        )  # QK h0, V h0, QK h1, ...
        parts += [heads, per_kind["M_in"][l : l + 1], per_kind["M_out"][l : l + 1]]
    return torch.cat(parts)


def spectral_adaptive_bound(
    weights,
    *,
    L_phi: float = L_PHI,
    grid_m: int | None = None,
    rank_tol: float = DEFAULT_RANK_TOL,
    device=None,
    mode: str = "exact",
    progress: bool = False,
    n_samples: int | None = None,
) -> SpectralBoundReport:
    """The spectrum-adaptive post hoc proxy ``B_ours`` of Sakai & Imaizumi (2026), :ref:`ch-sakai-trained`.

    ``weights`` is a :class:`~genbound.weights.TransformerWeights` or precomputed
    :class:`~genbound.weights.Spectra` (a checkpoint folder or a torch module: ``genbound.spectral_adaptive_bound``,
    which loads it and calls this). All grid points of all matrices are evaluated at once in log space. See
    the module docstring for the definitions and the two modes. ``n_samples`` (optional) is the sample size
    at which ``SpectralBoundReport.trivial`` is decided.

    >>> import torch
    >>> from genbound.weights import TransformerWeights
    >>> A = 2 * torch.eye(4, dtype=torch.float64)
    >>> w = TransformerWeights.from_proxy_matrices([[A]], [[A]], [A], [A])   # one layer, N = 4
    >>> r = spectral_adaptive_bound(w)
    >>> r.table[["kind", "rank", "alpha", "gamma", "p_opt"]].values.tolist()
    [['QK', 4, 1.0, 16.0, 0.0], ['V', 4, 1.0, 4.0, 0.0], ['M_in', 4, 1.0, 2.0, 0.0], ['M_out', 4, 1.0, 1.0, 0.0]]
    >>> round(r.value, 9), round(r.capacity, 9)   # every matrix at p = 0: 4 sqrt(rank N) + sqrt(L); 12 * 16 + 1
    (17.0, 193.0)
    """
    L_phi = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    rank_tol = check_real(rank_tol, "rank_tol", lo=0.0)
    n_samples = _check_n_samples(n_samples)
    sp = _get_spectra(weights, device=device, mode=mode, progress=progress)
    L, H, N = sp.n_layers, sp.n_heads, sp.hidden
    grid_m = (
        _grid_m(L, N) if grid_m is None else check_positive_int(grid_m, "grid_m")
    )  # the grid resolution
    p = p_grid(L, N, grid_m, device=sp.device)
    qk, v, cin, cout = _c2(sp)
    log_alpha = log_layer_alpha(qk, v, cin, cout, L_phi=L_phi)  # (L,)
    gam = matrix_gamma(qk, v, cin, cout)
    size = sp.size
    log_M = {
        k: log_schatten_grid(sp.svals(k), p, size=size[k], rank_tol=rank_tol, mode=mode)
        for k in KINDS
    }
    la = {
        "QK": log_alpha.unsqueeze(-1).expand(L, H),
        "V": log_alpha.unsqueeze(-1).expand(L, H),
        "M_in": log_alpha,
        "M_out": log_alpha,
    }
    tiny = math.log(torch.finfo(torch.float64).tiny)
    log_scale = {k: (gam[k].log() + la[k] + math.log(L)).clamp(min=tiny) for k in KINDS}
    log_terms = {k: log_contribution(log_M[k], log_scale[k], N, p) for k in KINDS}
    LT = _flat(sp, log_terms)  # (n_matrices, P)
    best, idx = LT.min(dim=-1)  # argmin: the first (smallest p) on ties, as np.argmin
    contrib = best.exp()
    value = float(contrib.sum().item() + math.sqrt(L))
    p_opt = p[idx]
    # capacity (prop-sa-capacity): 12 sum_a kappa_{p_a} T_a(p_a) + sqrt(L), in log space
    log_cap_terms = _se.log_dudley_factor(p_opt) + best + math.log(DUDLEY_INTEGRAL_COEF)
    log_capacity = float(
        torch.logaddexp(
            torch.logsumexp(log_cap_terms, dim=0),
            torch.tensor(0.5 * math.log(L), dtype=best.dtype, device=best.device),
        )
    )
    # the table
    svals = {k: sp.svals(k) for k in KINDS}
    rank = {k: numerical_rank(svals[k], rank_tol=rank_tol, size=size[k]) for k in KINDS}
    kept = {
        k: svals[k]
        if mode == "authors"
        else threshold_spectrum(svals[k], rank_tol=rank_tol, size=size[k])
        for k in KINDS
    }
    fro = {k: _norms.frobenius_norm(kept[k]) for k in KINDS}
    nuc = {k: _norms.nuclear_norm(kept[k]) for k in KINDS}
    shape = {"QK": (N, N), "V": (N, N), "M_in": (N, sp.d_ff), "M_out": (sp.d_ff, N)}
    layers, heads, kinds, rows, cols, routes = [], [], [], [], [], []
    order = [(h, k) for h in range(H) for k in ("QK", "V")] + [
        (MLP_HEAD, "M_in"),
        (MLP_HEAD, "M_out"),
    ]
    for l in range(L):
        for h, k in order:
            layers.append(l), heads.append(h), kinds.append(k)  # type: ignore[func-returns-value]
            rows.append(shape[k][0]), cols.append(shape[k][1]), routes.append(sp.route(k, l))  # type: ignore[func-returns-value]

    def col(d):
        return _flat(sp, d).detach().cpu().numpy()

    log_alpha_m = col(la)
    table = pd.DataFrame(
        {
            "layer": layers,
            "head": heads,
            "kind": kinds,
            "rows": rows,
            "cols": cols,
            "rank": col(rank).astype(int),
            "spectral_norm": col({k: _norms.spectral_norm(svals[k]) for k in KINDS}),
            "frobenius_norm": col(fro),
            "nuclear_norm": col(nuc),
            "norm_21": col({k: sp.norm21(k) for k in KINDS}),
            "alpha": torch.as_tensor(log_alpha_m).exp().numpy(),
            "log_alpha": log_alpha_m,
            "gamma": col(gam),
            "scale": torch.as_tensor(col(log_scale)).exp().numpy(),
            "log_scale": col(log_scale),
            "p_opt": p_opt.cpu().numpy(),
            "contribution": contrib.cpu().numpy(),
            "route": routes,
        }
    )
    return SpectralBoundReport(
        value=value,
        table=table,
        p=p,
        log_terms=LT,
        n_layers=L,
        hidden=N,
        grid_m=grid_m,
        L_phi=L_phi,
        rank_tol=rank_tol,
        mode=mode,
        spectra=sp,
        log_capacity=log_capacity,
        n_samples=n_samples,
    )


def edelman_proxy(
    weights,
    *,
    L_phi: float = L_PHI,
    device=None,
    mode: str = "exact",
    progress: bool = False,
    n_samples: int | None = None,
) -> EdelmanProxyReport:
    """The Edelman-style norm-based proxy ``(1 + sum_l alpha_l^{2/3} xi_l)^{3/2}`` (:ref:`ch-sakai-trained`).

    ``xi_l = sum_h [(C2(M_out) C2(M_in) C2(V) ||QK||_{2,1})^{2/3} + (C2(M_out) C2(M_in) ||V||_{2,1})^{2/3}]
    + (C2(M_out) ||M_in||_{2,1})^{2/3} + ||M_out||_{2,1}^{2/3}`` with ``||A||_{2,1}`` the sum of the
    column l2 norms. Computed in log space; ``value`` is ``inf`` when it exceeds float64 (then use
    ``log_value``), never NaN. ``weights``: :class:`~genbound.weights.TransformerWeights` or
    :class:`~genbound.weights.Spectra`; ``n_samples`` as in :func:`spectral_adaptive_bound`.

    >>> import torch
    >>> from genbound.weights import TransformerWeights
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> r = edelman_proxy(TransformerWeights.from_proxy_matrices([[I]], [[I]], [I], [I]))
    >>> abs(r.value - (1 + 4 * 2 ** (2 / 3)) ** 1.5) < 1e-12   # alpha = 1, xi = 4 * 2^(2/3)
    True
    """
    L_phi = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    n_samples = _check_n_samples(n_samples)
    sp = _get_spectra(weights, device=device, mode=mode, progress=progress)
    qk, v, cin, cout = _c2(sp)
    lam = log_layer_lipschitz(qk, v, cin, cout, L_phi=L_phi)
    log_alpha = _se.log_layer_alphas(lam)
    lin, lout = cin.log(), cout.log()
    two3 = 2.0 / 3.0
    mlp = (lout + lin).unsqueeze(-1)
    head_terms = torch.cat(
        [two3 * (mlp + v.log() + sp.qk_norm21.log()), two3 * (mlp + sp.v_norm21.log())], dim=-1
    )  # (L, 2H)
    layer_terms = torch.stack(
        [two3 * (lout + sp.m_in_norm21.log()), two3 * sp.m_out_norm21.log()], dim=-1
    )
    log_xi = torch.logsumexp(torch.cat([head_terms, layer_terms], dim=-1), dim=-1)  # (L,)
    log_sum = torch.logsumexp(two3 * log_alpha + log_xi, dim=0)
    log_value = float(1.5 * torch.logaddexp(torch.zeros_like(log_sum), log_sum).item())
    if math.isnan(log_value):  # pragma: no cover - guarded by construction
        raise InputError(
            "the Edelman proxy evaluated to NaN; check the weights for degenerate layers"
        )
    value = math.exp(log_value) if log_value < _LOG_MAX else math.inf
    table = pd.DataFrame(
        {
            "layer": range(sp.n_layers),
            "log_lipschitz": lam.cpu().numpy(),
            "alpha": log_alpha.exp().cpu().numpy(),
            "log_alpha": log_alpha.cpu().numpy(),
            "xi": log_xi.exp().cpu().numpy(),
            "log_xi": log_xi.cpu().numpy(),
        }
    )
    return EdelmanProxyReport(
        value=value,
        log_value=log_value,
        table=table,
        n_layers=sp.n_layers,
        L_phi=L_phi,
        n_samples=n_samples,
    )
