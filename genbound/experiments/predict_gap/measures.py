"""The measures of Part V: what is ranked against the gap, and what is only reported. Book:
:ref:`ch-predict-gap`.

**Capacities** (from :func:`~genbound.experiments.bound_measures.capacity_fields`, the one
caller of :mod:`genbound.bounds` in the experiments), at the network's own norms. For each of the four bounds ``b`` of
``BOUNDS`` (Trauger-Tewari, Edelman-type, the spectrum-adaptive
proxy, the Edelman proxy), four columns:

* ``{b}_cap``: the bound's ``m``-free ``capacity`` (the certified bound is about
  ``capacity * log / sqrt(m)``, before its cap);
* ``{b}_cap_sqrtm``: ``capacity / sqrt(m)``;
* ``{b}_cap_margin``: ``capacity / gamma_q``, with ``gamma_q`` the trained model's multiclass margin
  ``f_y(x) - max_{j != y} f_j(x)`` on its own training set at the quantile ``margin_quantile`` (10th
  percentile by default; numpy's linear interpolation), the normalisation of Jiang et al. (2020), who
  divide by the margin at the 10th percentile; the capacities are evaluated at ramp margin 1;
* ``{b}_cap_margin_sqrtm``: ``capacity / (gamma_q sqrt(m))``.

The Edelman-type bound is proved for one layer: its columns are ``nan`` on deeper models and it is
ranked on the depth-1 models only. A margin-normalised value is ``nan`` when ``gamma_q <= 0`` (only an
unfitted model can have it). The capped bound values (``tt_bound``, ``edelman_bound``) and the
``*_trivial`` flags are kept in the file and reported as a share, never ranked.

**The spectrum-adaptive choice**: ``spectral_adaptive`` (the proxy's value, index chosen per matrix),
``spectral_p0``, ``spectral_pmax`` (every matrix at the rank end and at the largest index of the grid).

**Baselines** (after Jiang et al. 2020, our reading): ``n_params``; over the weight
matrices of the model (each head's ``W_Q, W_K, W_V, W_O``, each layer's ``W_C``, the readout ``w``)
``fro_sum`` and ``log_fro_prod`` (sum of Frobenius norms, log of their product), ``spec_sum`` and
``log_spec_prod`` (the same with spectral norms); ``fro_dist_init`` (Frobenius distance of all
parameters from initialisation) and ``spec_dist_init`` (sum of the spectral norms of ``W - W_0``);
``mag_flatness``: ``1 / sigma'^2`` with ``sigma'`` of
:func:`~genbound.experiments.predict_gap.magnitude_flatness` (Jiang et al.'s "magnitude-aware" PAC-Bayes
flatness, the family of measures that ranked best there).

>>> len(MEASURES), "tt_cap" in MEASURES, "tt_bound" in MEASURES
(27, True, False)
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...weights import TransformerWeights
from ...nets import ModelNorms
from ..bound_measures import capacity_fields, spectra_to_json

__all__ = [
    "BOUNDS",
    "CAPACITY_FORMS",
    "CAPACITIES",
    "SPECTRAL",
    "BASELINES",
    "MEASURES",
    "DEPTH1_ONLY",
    "REPORTED",
    "multiclass_margins",
    "magnitude_flatness",
    "measures_for",
    "measure_columns",
]

#: The four bounds, by column prefix.
BOUNDS = ("tt", "edelman", "sa", "edproxy")
#: The four forms of each capacity: suffix -> (divided by the margin, divided by sqrt(m)).
CAPACITY_FORMS = {
    "cap": (False, False),
    "cap_sqrtm": (False, True),
    "cap_margin": (True, False),
    "cap_margin_sqrtm": (True, True),
}
#: The capacity measures, ``{bound}_{form}``.
CAPACITIES = tuple(f"{b}_{f}" for b in BOUNDS for f in CAPACITY_FORMS)
#: The spectrum-adaptive proxy and its two fixed-index sums.
SPECTRAL = ("spectral_adaptive", "spectral_p0", "spectral_pmax")
#: The baselines.
BASELINES = (
    "n_params",
    "fro_sum",
    "log_fro_prod",
    "spec_sum",
    "log_spec_prod",
    "fro_dist_init",
    "spec_dist_init",
    "mag_flatness",
)
#: Every ranked measure, one float column each.
MEASURES = CAPACITIES + SPECTRAL + BASELINES
#: Measures defined on depth-1 models only (``nan`` on deeper ones).
DEPTH1_ONLY = tuple(f"edelman_{f}" for f in CAPACITY_FORMS)
#: Columns kept for reporting, never ranked: the capped values and trivial flags, the margin and the
#: flatness noise level. Name -> type.
REPORTED = {
    "tt_bound": float,
    "tt_trivial": bool,
    "edelman_bound": float,
    "edelman_trivial": float,
    "sa_trivial": bool,
    "edproxy_trivial": bool,
    "sa_all_p0": bool,
    "margin_q": float,
    "flat_sigma": float,
    "norms_json": str,
    "spectra_json": str,
}


def multiclass_margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``f_y(x) - max_{j != y} f_j(x)`` per example (``logits`` ``(..., n, classes)``).

    >>> multiclass_margins(torch.tensor([[2.0, 0.5, 1.0], [0.0, 3.0, 1.0]]), torch.tensor([0, 2])).tolist()
    [1.0, -2.0]
    """
    fy = logits.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    other = logits.scatter(-1, y.unsqueeze(-1), -math.inf).amax(-1)
    return fy - other


@torch.no_grad()
def magnitude_flatness(
    net,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    seed: int,
    max_error: float = 0.1,
    draws: int = 8,
    steps: int = 12,
    hi: float = 2.0,
) -> float:
    """``sigma'``: the largest multiplicative noise level such that the mean training error of
    ``W -> W * (1 + sigma' eps)`` (every parameter, ``eps`` standard normal entrywise) over ``draws``
    noise draws exceeds the error of ``net`` on ``(X, y)`` by at most ``max_error``.

    The draws are fixed (one generator seeded by ``seed``, the same ``eps`` at every level), so the
    search is a bisection on ``[0, hi]`` in ``steps`` halvings of the bracket; returned is the midpoint of
    the final bracket (``hi`` when even ``hi`` passes). Float32; the draws form one stack of the model
    class (:meth:`~genbound.nets.ReferenceTransformer.forward_stacked`).
    """
    params = {n: p.detach().float() for n, p in net.named_parameters()}
    g = torch.Generator().manual_seed(int(seed))
    eps = {
        n: torch.randn((draws, *p.shape), generator=g, dtype=torch.float32)
        for n, p in params.items()
    }
    Xk = X.float()[None].expand(draws, *X.shape)
    base = float((net(X).argmax(-1) != y).double().mean())

    def error(sigma: float) -> float:
        P = {n: p[None] * (1 + sigma * eps[n]) for n, p in params.items()}
        z = net.forward_stacked(P, Xk)
        return float((z.argmax(-1) != y[None]).double().mean())

    if error(hi) <= base + max_error:
        return float(hi)
    lo, up = 0.0, float(hi)
    for _ in range(steps):
        mid = 0.5 * (lo + up)
        if error(mid) <= base + max_error:
            lo = mid
        else:
            up = mid
    return 0.5 * (lo + up)


_WEIGHTS = {"W_Q", "W_K", "W_V", "W_O", "W_C", "w"}


def _matrices(net) -> list[torch.Tensor]:
    """The weight matrices of ``net`` (biases excluded): each head's slice of the stacked
    ``(H, d, d_head)`` tensors ``W_Q, W_K, W_V`` and ``(H, d_head, d)`` ``W_O``, each ``W_C``, the readout
    ``w``."""
    out = []
    for name, p in net.named_parameters():
        if name.split(".")[-1] not in _WEIGHTS:
            continue
        out.extend(p[h] for h in range(p.shape[0])) if p.ndim == 3 else out.append(p)
    return out


def _op(A: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(A, ord=2))


@torch.no_grad()
def measures_for(
    net,
    init,
    *,
    X_train: torch.Tensor,
    y_train: torch.Tensor,
    m: int,
    seq_len: int,
    B_X: float,
    delta: float,
    margin: float,
    margin_quantile: float = 0.1,
    flat: dict | None = None,
    flat_seed: int = 0,
) -> dict:
    """Every column of ``MEASURES`` and ``REPORTED`` for the trained ``net`` (``init``: the same
    architecture at its initial weights) on its training set ``(X_train, y_train)`` of size ``m``.
    ``flat``: keyword arguments of :func:`magnitude_flatness` (``max_error``, ``draws``, ``steps``,
    ``hi``)."""

    sp = TransformerWeights.of_reference(net).spectra(method="core")
    cf = capacity_fields(
        net,
        m=m,
        seq_len=seq_len,
        delta=delta,
        B_X=B_X,
        margin=margin,
        spectra=sp,
        L_phi=net.L_sigma,
    )

    gm = float(np.quantile(multiclass_margins(net(X_train), y_train).numpy(), margin_quantile))
    out = measure_columns(cf, m, gm)
    mats, mats0 = _matrices(net), _matrices(init)
    p, p0 = dict(net.named_parameters()), dict(init.named_parameters())
    fro = [float(torch.linalg.matrix_norm(A)) for A in mats]
    op = [_op(A) for A in mats]
    sigma = magnitude_flatness(net, X_train, y_train, seed=flat_seed, **(flat or {}))
    out.update(
        n_params=float(sum(t.numel() for t in p.values())),
        fro_sum=sum(fro),
        log_fro_prod=sum(math.log(v) for v in fro),
        spec_sum=sum(op),
        log_spec_prod=sum(math.log(v) for v in op),
        fro_dist_init=math.sqrt(sum(float(((p[n] - p0[n]) ** 2).sum()) for n in p)),
        spec_dist_init=sum(_op(A - B) for A, B in zip(mats, mats0)),
        mag_flatness=1.0 / sigma**2,
    )
    out.update(
        {
            k: cf[k]
            for k in (
                "tt_bound",
                "tt_trivial",
                "edelman_bound",
                "edelman_trivial",
                "sa_trivial",
                "edproxy_trivial",
                "sa_all_p0",
            )
        }
    )
    out.update(
        margin_q=gm,
        flat_sigma=sigma,
        norms_json=ModelNorms.of(net).to_json(),
        spectra_json=spectra_to_json(sp),
    )
    return out


def measure_columns(cf: dict, m: int, gm: float) -> dict:
    """The ``CAPACITIES`` and ``SPECTRAL`` columns from :func:`capacity_fields` output, ``m`` and the
    margin quantile ``gm`` (one definition for the trained network and the saved row)."""
    out = {}
    for b in BOUNDS:
        c = cf[f"{b}_capacity"]
        for form, (by_margin, by_m) in CAPACITY_FORMS.items():
            v = c / math.sqrt(m) if by_m else c
            if by_margin:
                v = v / gm if gm > 0 else math.nan
            out[f"{b}_{form}"] = float(v)
    out.update({k: float(cf[k]) for k in SPECTRAL})
    return out
