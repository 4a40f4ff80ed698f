"""The claim machinery: a :class:`Claim` pairs a book lemma with executable checks.

A claim's numeric check draws random instances, computes ``ratio = left side / right side`` of the
inequality on each, then runs an **adversarial search**: gradient ascent (torch autograd, Adam) on the
ratio, starting from the worst random instances, projected back into the claim's domain after every
step. The largest ratio seen anywhere is ``worst_ratio``; the claim passes when it is at most
``1 + rtol`` (and its symbolic check, if any, succeeds). A ratio near 1 means the inequality is tight
on some instance; a ratio far below 1 means the bound has slack everywhere we looked.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

import torch

from ..errors import ParameterError

__all__ = ["ClaimResult", "Claim", "InequalityCheck", "FunctionCheck", "AllOf", "NumericCheck"]

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of :meth:`Claim.check`."""

    label: str
    passed: bool
    worst_ratio: float
    trials: int
    adversarial_steps: int
    symbolic: bool | None
    seconds: float
    note: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict (the format of ``genbound claims --check --json``)."""
        return asdict(self)

    def summary(self) -> str:
        """One line for the book: worst ratio, trials, symbolic status.

        >>> ClaimResult("x", True, 0.5, 10, 3, True, 0.1).summary()
        'worst ratio 0.5000 over 10 random and 3 adversarial trials; symbolic check passed'
        """
        sym = {None: "no symbolic step", True: "symbolic check passed", False: "symbolic check FAILED"}
        if self.trials == 0:
            return f"symbolic only; {sym[self.symbolic]}"
        how = (f"{self.trials:,} random and {self.adversarial_steps:,} adversarial trials"
               if self.adversarial_steps else f"{self.trials:,} trials")
        return f"worst ratio {self.worst_ratio:.4f} over {how}; {sym[self.symbolic]}"


class NumericCheck:
    """Interface: ``run(seed) -> (worst_ratio, trials, adversarial_steps, note)``."""

    def run(self, seed: int) -> tuple[float, int, int, str]:  # pragma: no cover - interface
        raise NotImplementedError


def _finite_max(r: torch.Tensor) -> tuple[float, str]:
    """Max of a ratio tensor; a NaN counts as an infinite ratio (a failed check), with a note."""
    r = r.detach().reshape(-1)
    if bool(torch.isnan(r).any()):
        return float("inf"), f"{int(torch.isnan(r).sum())} NaN ratio(s)"
    return float(r.max()), ""


@dataclass
class InequalityCheck(NumericCheck):
    """Random instances plus projected gradient ascent on ``ratio``.

    Parameters
    ----------
    sample : ``(generator, n) -> dict of tensors`` with leading batch size ``n``.
    ratio : ``(**params) -> tensor (n,)``, left side over right side, differentiable in the tensors
        named in ``search`` (default: every floating tensor).
    project : maps a parameter dict back into the domain (called after each ascent step, no grad).
    trials : number of random instances; ``starts``: how many of the worst seed the ascent;
    steps, lr : Adam steps and learning rate (on the raw parameters).
    """

    sample: Callable[[torch.Generator, int], Params]
    ratio: Callable[..., torch.Tensor]
    project: Callable[[Params], Params] | None = None
    trials: int = 2000
    starts: int = 16
    steps: int = 150
    lr: float = 0.02
    search: tuple[str, ...] | None = None

    def run(self, seed: int) -> tuple[float, int, int, str]:
        gen = torch.Generator().manual_seed(int(seed))
        params = self.sample(gen, self.trials)
        if self.project is not None:
            params = self.project(params)
        with torch.no_grad():
            r = self.ratio(**params)
        worst, note = _finite_max(r)
        if self.steps <= 0 or self.starts <= 0 or not torch.isfinite(torch.tensor(worst)):
            return worst, self.trials, 0, note
        k = min(self.starts, r.numel())
        idx = torch.topk(torch.nan_to_num(r.detach(), nan=-1.0), k).indices
        names = self.search or tuple(n for n, v in params.items() if v.is_floating_point())
        x = {n: v[idx].clone() for n, v in params.items()}
        leaves = {n: x[n].detach().clone().requires_grad_(True) for n in names}
        opt = torch.optim.Adam(list(leaves.values()), lr=self.lr, maximize=True)
        steps_done = 0
        for _ in range(self.steps):
            opt.zero_grad()
            cur = {**x, **leaves}
            val = self.ratio(**cur)
            w, n2 = _finite_max(val)
            if w > worst or n2:
                worst, note = max(worst, w), (n2 or note)
            if n2:
                break
            val.sum().backward()
            opt.step()
            steps_done += k
            with torch.no_grad():
                if self.project is not None:
                    proj = self.project({**x, **{n: v.detach() for n, v in leaves.items()}})
                    for n in names:
                        leaves[n].copy_(proj[n])
        with torch.no_grad():
            w, n2 = _finite_max(self.ratio(**{**x, **leaves}))
            worst, note = max(worst, w), (n2 or note)
        return worst, self.trials, steps_done, note


@dataclass
class FunctionCheck(NumericCheck):
    """A numeric check given as a function ``seed -> (worst_ratio, trials)`` (e.g. a Monte Carlo study)."""

    fn: Callable[[int], tuple[float, int]]

    def run(self, seed: int) -> tuple[float, int, int, str]:
        worst, trials = self.fn(seed)
        return float(worst), int(trials), 0, ""


@dataclass
class AllOf(NumericCheck):
    """Several numeric checks as one: the worst ratio is the largest, trials and steps add up.

    Check ``i`` runs with seed ``seed + seed_stride * i`` so that the parts draw different instances.
    """

    checks: tuple
    seed_stride: int = 1000

    def run(self, seed: int) -> tuple[float, int, int, str]:
        worst, trials, steps, notes = -math.inf, 0, 0, []
        for i, c in enumerate(self.checks):
            w, t, s, n = c.run(seed + self.seed_stride * i)
            worst, trials, steps = max(worst, w), trials + t, steps + s
            if n:
                notes.append(n)
        return worst, trials, steps, "; ".join(notes)


@dataclass(frozen=True)
class Claim:
    """An executable statement of the book.

    ``label`` is the label of the ``{prf:lemma}``/``{prf:theorem}``/... block in the book;
    ``chapter`` the book file that states it; ``source`` one of ``"standard"`` (textbook fact),
    ``"paper"`` (stated in a cited paper), ``"authors-code"`` or ``"reconstructed"`` (our derivation).
    """

    label: str
    statement: str
    chapter: str
    source: str
    numeric: NumericCheck | None = None
    symbolic: Callable[[], bool] | None = None
    rtol: float = 1e-9
    tags: tuple[str, ...] = field(default_factory=tuple)

    _SOURCES = ("standard", "paper", "authors-code", "reconstructed")

    def __post_init__(self):
        if self.source not in self._SOURCES:
            raise ParameterError(f"claim {self.label!r}: source must be one of {self._SOURCES}, got {self.source!r}")
        if self.numeric is None and self.symbolic is None:
            raise ParameterError(f"claim {self.label!r} has neither a numeric nor a symbolic check")

    def check(self, seed: int = 0) -> ClaimResult:
        """Run the symbolic and numeric checks; see :class:`ClaimResult`.

        The checks run on one torch thread (the instances are small; more threads only add overhead
        and make timings depend on the machine's load); the previous setting is restored.
        """
        t0 = time.perf_counter()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            sym = None if self.symbolic is None else bool(self.symbolic())
            if self.numeric is not None:
                worst, trials, adv, note = self.numeric.run(seed)
            else:
                worst, trials, adv, note = 0.0, 0, 0, "symbolic only"
        finally:
            torch.set_num_threads(threads)
        passed = (worst <= 1.0 + self.rtol) and (sym is not False)
        return ClaimResult(self.label, passed, worst, trials, adv, sym, time.perf_counter() - t0, note)

    def describe(self) -> Mapping[str, str]:
        """Label, statement, chapter and source as a dict."""
        return {"label": self.label, "statement": self.statement, "chapter": self.chapter,
                "source": self.source}
