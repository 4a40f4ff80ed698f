"""Claims of :ref:`ch-schatten` (Part III, Schatten quasi-norms)."""

from __future__ import annotations

import torch

from ..symbolic import schatten as sym
from . import Claim, InequalityCheck, register

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


def _counting_ratio(s, p, tau):
    count = (s > tau.unsqueeze(-1)).to(s.dtype).sum(-1)
    return count / (tau ** (-p) * _spow(s, p))


def _residual_ratio(s, p, tau):
    small = torch.where(s <= tau.unsqueeze(-1), s, torch.zeros_like(s))
    return (small**2).sum(-1) / (tau ** (2 - p) * _spow(s, p))


def _order_ratio(s, p, tau):
    # ||W||_{S_q} <= ||W||_{S_p} for p <= q; use q = p + (2 - p) * tau/(1 + tau) in (p, 2]
    q = p + (2 - p) * tau / (1 + tau)
    p_ = p.clamp(min=1e-3)
    return _spow(s, q) ** (1 / q) / _spow(s, p_) ** (1 / p_)


def _chain_ratio(s, p, tau):
    # ||W||_* <= sqrt(rank) ||W||_F, the last link of the chain, with rank = number of s_i > 0
    rank = (s > 0).to(s.dtype).sum(-1)
    return s.sum(-1) / (rank.sqrt() * (s**2).sum(-1).sqrt())


def _stable_rank_ratio(s, p, tau):
    rank = (s > 0).to(s.dtype).sum(-1)
    return (s**2).sum(-1) / s.max(-1).values ** 2 / rank


register(Claim(
    label="lem-spectral-counting",
    statement="#{i : sigma_i > tau} <= tau^{-p} ||W||_{S_p}^p for every tau > 0 and p in [0, 2]",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _counting_ratio, _project),
    symbolic=sym.verify_markov_step,
))

register(Claim(
    label="lem-truncation-residual",
    statement="sum_{sigma_i <= tau} sigma_i^2 <= tau^{2-p} ||W||_{S_p}^p for tau > 0 and p in [0, 2]",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _residual_ratio, _project),
    symbolic=sym.verify_power_split,
))

register(Claim(
    label="lem-schatten-order",
    statement="||W||_{S_q} <= ||W||_{S_p} whenever 0 < p <= q <= 2",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _order_ratio, _project),
    symbolic=sym.verify_decreasing_in_p,
))

register(Claim(
    label="lem-norm-chain",
    statement="||W||_2 <= ||W||_F <= ||W||_* <= sqrt(rank W) ||W||_F (last link checked)",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _chain_ratio, _project),
))

register(Claim(
    label="lem-stable-rank",
    statement="1 <= stable rank ||W||_F^2 / ||W||_2^2 <= rank W for W != 0",
    chapter=CHAPTER, provenance="standard",
    numeric=InequalityCheck(_spectra, _stable_rank_ratio, _project),
))
