"""Claims of :ref:`ch-schatten` (Part III, Schatten quasi-norms)."""

from __future__ import annotations

import math
import sys

import torch

from ..symbolic import schatten as sym
from . import AllOf, Claim, InequalityCheck, register, scaled

_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here

CHAPTER = "book/part3/schatten.md"
_K = 12  # singular values per random instance


def _spectra(gen: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Random spectra of mixed shapes: flat, decaying, low rank with a floor, and heavy tailed."""
    u = torch.rand(n, _K, generator=gen, dtype=torch.float64)
    kind = torch.randint(0, 4, (n, 1), generator=gen)
    scale = 10 ** (4 * torch.rand(n, 1, generator=gen, dtype=torch.float64) - 2)
    idx = torch.arange(1, _K + 1, dtype=torch.float64)
    flat = 0.5 + u
    poly = idx ** (-3 * u[:, :1])
    floor = torch.where(idx <= 3, 1.0 + u, 1e-3 * u)
    heavy = u ** 6
    s = torch.where(kind == 0, flat, torch.where(kind == 1, poly, torch.where(kind == 2, floor, heavy)))
    return {"s": scale * s, "p": 2 * torch.rand(n, generator=gen, dtype=torch.float64),
            "tau": scale[:, 0] * torch.rand(n, generator=gen, dtype=torch.float64) * 1.5 + 1e-6}


def _project(x: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {**x, "s": x["s"].abs().clamp(min=1e-12), "p": x["p"].clamp(0.0, 2.0),
            "tau": x["tau"].abs().clamp(min=1e-9)}


def _spow(s: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Differentiable sum_i s_i**p (all entries positive here)."""
    return (s ** p.unsqueeze(-1)).sum(-1)


def counting_bound(s, p, tau):
    """``tau^{-p} ||W||_{S_p}^p``: the right side of :prf:ref:`lem-spectral-counting`."""
    return tau ** (-p) * _spow(s, p)


def residual_bound(s, p, tau):
    """``tau^{2-p} ||W||_{S_p}^p``: the right side of :prf:ref:`lem-truncation-residual`."""
    return tau ** (2 - p) * _spow(s, p)


def schatten_norm(s, p):
    """``||W||_{S_p} = (sum_i s_i^p)^{1/p}`` from the singular values (``p > 0``)."""
    return _spow(s, p) ** (1 / p)


def rank_factor(rank):
    """``sqrt(rank W)``: the factor of the last link of :prf:ref:`lem-norm-chain`."""
    return rank.sqrt()


STABLE_RANK_LOWER = 1.0  #: the lower end of :prf:ref:`lem-stable-rank`


def _counting_ratio(s, p, tau):
    count = (s > tau.unsqueeze(-1)).to(s.dtype).sum(-1)
    return count / _THIS.counting_bound(s, p, tau)


def _residual_ratio(s, p, tau):
    small = torch.where(s <= tau.unsqueeze(-1), s, torch.zeros_like(s))
    return (small**2).sum(-1) / _THIS.residual_bound(s, p, tau)


def _order_ratio(s, p, tau):
    # ||W||_{S_q} <= ||W||_{S_p} for p <= q; use q = p + (2 - p) * tau/(1 + tau) in (p, 2]
    q = p + (2 - p) * tau / (1 + tau)
    p_ = p.clamp(min=1e-3)
    first = schatten_norm(s, q) / _THIS.schatten_norm(s, p_)
    # second statement: for ||W||_2 <= 1, p -> ||W||_{S_p}^p is non-increasing: sum s^q <= sum s^p
    t = s / s.max(-1, keepdim=True).values
    second = _spow(t, q) / _THIS.schatten_norm(t, p_) ** p_
    return torch.maximum(first, second)


def _chain_ratio(s, p, tau):
    # all three links: ||W||_2 <= ||W||_F <= ||W||_* <= sqrt(rank) ||W||_F, rank = number of s_i > 0
    rank = (s > 0).to(s.dtype).sum(-1)
    fro = (s**2).sum(-1).sqrt()
    links = torch.stack([s.max(-1).values / fro, fro / s.sum(-1), s.sum(-1) / (_THIS.rank_factor(rank) * fro)])
    return links.amax(0)


def _stable_rank_ratio(s, p, tau):
    # both ends: 1 <= ||W||_F^2 / ||W||_2^2 <= rank
    rank = (s > 0).to(s.dtype).sum(-1)
    sr = (s**2).sum(-1) / s.max(-1).values ** 2
    return torch.maximum(sr / rank, _THIS.STABLE_RANK_LOWER / sr)


def _low_rank(gen, n):
    """Spectra with one dominant value, or all equal: the extremal cases of the first links and of the
    lower end of the stable rank."""
    x = _spectra(gen, n)
    u = torch.rand(n, _K, generator=gen, dtype=torch.float64)
    spike = torch.where(torch.arange(_K) == 0, torch.ones_like(u), 1e-4 * u)
    x["s"] = torch.where((torch.arange(n) % 2 == 0)[:, None], spike, torch.ones_like(u)) * x["s"][:, :1]
    return x


register(Claim(
    label="lem-spectral-counting",
    statement="#{i : sigma_i > tau} <= tau^{-p} ||W||_{S_p}^p for every tau > 0 and p in [0, 2]",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _counting_ratio, _project),
    symbolic=sym.verify_markov_step,
    mutants=(scaled(_THIS, "counting_bound", 0.5, name="rhs-halved", what="tau^{-p} ||W||_{S_p}^p / 2"),),
))

register(Claim(
    label="lem-truncation-residual",
    statement="sum_{sigma_i <= tau} sigma_i^2 <= tau^{2-p} ||W||_{S_p}^p for tau > 0 and p in [0, 2]",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _residual_ratio, _project),
    symbolic=sym.verify_power_split,
    mutants=(scaled(_THIS, "residual_bound", 0.5, name="rhs-halved", what="tau^{2-p} ||W||_{S_p}^p / 2"),),
))

register(Claim(
    label="lem-schatten-order",
    statement="||W||_{S_q} <= ||W||_{S_p} whenever 0 < p <= q <= 2; if ||W||_2 <= 1, p -> ||W||_{S_p}^p "
              "is non-increasing on [0, 2]",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _order_ratio, _project),
    symbolic=sym.verify_decreasing_in_p,
    mutants=(scaled(_THIS, "schatten_norm", 0.5, name="rhs-halved", what="||W||_{S_p} taken as half its value"),),
))

register(Claim(
    label="lem-norm-chain",
    statement="||W||_2 <= ||W||_F <= ||W||_* <= sqrt(rank W) ||W||_F",
    chapter=CHAPTER, provenance="standard",
    numeric=AllOf((InequalityCheck(_spectra, _chain_ratio, _project),
                   InequalityCheck(_low_rank, _chain_ratio, _project, trials=500, starts=4, steps=20))),
    mutants=(scaled(_THIS, "rank_factor", 0.5, name="sqrt-rank-halved", what="||W||_* <= sqrt(rank)/2 ||W||_F"),),
))

register(Claim(
    label="lem-stable-rank",
    statement="1 <= stable rank ||W||_F^2 / ||W||_2^2 <= rank W for W != 0",
    chapter=CHAPTER, provenance="standard",
    numeric=AllOf((InequalityCheck(_spectra, _stable_rank_ratio, _project),
                   InequalityCheck(_low_rank, _stable_rank_ratio, _project, trials=500, starts=4, steps=20))),
    mutants=(scaled(_THIS, "STABLE_RANK_LOWER", 2.0, name="lower-end-doubled", what="stable rank >= 2"),),
))
