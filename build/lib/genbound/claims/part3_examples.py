"""Claims of :ref:`ch-sa-examples` (``book/part3/examples.md``): when the ``p = 0`` end of the grid wins,
and the Markov bound on the spectral count.
"""

from __future__ import annotations

import math
import sys

import torch

from .. import norms as _nm
from .. import schatten_entropy as se
from ..symbolic import sakai_imaizumi as sym
from . import Claim, InequalityCheck, register, replaced
from ._part3 import DT, _u

CH = "book/part3/examples.md"
_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


_PK = 8


def _p0_sample(gen, n):
    r = torch.randint(1, _PK + 1, (n, 1), generator=gen)
    mask = (torch.arange(_PK).unsqueeze(0) < r).to(DT)
    s = 10 ** _u(gen, n * _PK, -3, 1).view(n, _PK)
    logN = _u(gen, n, math.log(_PK), math.log(4096))
    return {
        "s": s * mask,
        "mask": mask,
        "p": _u(gen, n, 0, 2),
        "logN": logN,
        "slack": _u(gen, n, 0, 3),
    }


def _p0_project(x):
    s = torch.where(x["mask"] > 0, x["s"].abs().clamp(min=1e-4), torch.zeros_like(x["s"]))
    return {**x, "s": s, "p": x["p"].clamp(0.0, 2.0), "slack": x["slack"].clamp(min=0.0)}


def _p0_ratio(s, mask, p, logN, slack):
    logS = _THIS.p0_log_threshold(s, logN) + slack  # at or above the threshold sqrt(r/N)/sigma_r
    lm = _nm.log_schatten_power_at(s, p, rank_tol=0.0)
    logT = se.log_per_matrix_term(lm, logS, logN.exp(), p, with_cp=False)
    logT0 = se.log_per_matrix_term(
        _nm.log_schatten_power_at(s, torch.zeros_like(p), rank_tol=0.0),
        logS,
        logN.exp(),
        torch.zeros_like(p),
        with_cp=False,
    )
    return (logT0 - logT).exp()


def p0_log_threshold(s, logN):
    """``log(sqrt(r/N) / sigma_r)``: the scale above which ``p = 0`` wins, :func:`genbound.schatten_entropy.p0_scale_threshold`."""
    return se.p0_scale_threshold(s, logN.exp(), rank_tol=0.0).log()


register(
    Claim(
        label="prop-sa-p0-wins",
        statement="if S sigma_r >= sqrt(r/N) (r = rank, sigma_r the smallest nonzero singular value) then "
        "T(0) = sqrt(r N) <= T(p) for every p in [0, 2], so p = 0 is the grid minimiser",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _p0_sample,
            _p0_ratio,
            _p0_project,
            trials=3000,
            starts=16,
            steps=120,
            lr=0.05,
            search=("s", "p", "slack"),
        ),
        symbolic=sym.verify_p0_gap,
        covers=(
            "genbound.schatten_entropy.p0_scale_threshold",
            "genbound.schatten_entropy.log_per_matrix_term",
            "genbound.norms.log_schatten_power_at",
        ),
        mutants=(
            replaced(
                _THIS,
                "p0_log_threshold",
                lambda old: lambda s, logN: old(s, logN) - math.log(4),
                name="threshold-quartered",
                what="p = 0 claimed to win from S sigma_r >= sqrt(r/N)/4 on",
            ),
        ),
    )
)


_CK = 10


def _count_sample(gen, n):
    u = torch.rand(n, _CK, generator=gen, dtype=DT)
    kind = torch.randint(0, 3, (n, 1), generator=gen)
    idx = torch.arange(1, _CK + 1, dtype=DT)
    s = torch.where(
        kind == 0,
        idx ** (-3 * u[:, :1]),
        torch.where(kind == 1, torch.where(idx <= 3, 1 + u, 1e-3 * u), u),
    )
    return {
        "s": s * 10 ** _u(gen, n, -2, 2).unsqueeze(-1),
        "logS": _u(gen, n, -3, 6) * math.log(10),
        "logN": _u(gen, n, math.log(_CK), math.log(2048)),
        "p": _u(gen, n, 0.01, 2.0),
    }


def _count_project(x):
    return {**x, "s": x["s"].abs().clamp(min=1e-8), "p": x["p"].clamp(1e-3, 2.0)}


def _count_ratio(s, logS, logN, p):
    # min_tau [sqrt(N r(tau)) + S N tau] over c_p T(p): the package's spectral_count_minimum over its
    # per_matrix_term (with c_p), the Schatten power from genbound.norms
    Nn, Sv = logN.exp(), logS.exp()
    count = se.spectral_count_minimum(s, Sv, Nn, rank_tol=0.0)
    logM = _nm.log_schatten_power_at(s, p, rank_tol=0.0)
    bound = se.log_per_matrix_term(logM, logS, Nn, p).exp()
    return count / bound


register(
    Claim(
        label="lem-sa-count-markov",
        statement="min_tau [sqrt(N r(tau)) + S N tau] <= c_p T(p) for every p in (0, 2]: each per-matrix term "
        "is a Markov-type upper bound on the spectral count functional",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _count_sample, _count_ratio, _count_project, trials=1500, starts=12, steps=60, lr=0.05
        ),
        symbolic=sym.verify_threshold_optimum,
        covers=(
            "genbound.schatten_entropy.spectral_count_minimum",
            "genbound.schatten_entropy.log_per_matrix_term",
            "genbound.schatten_entropy.log_c_p",
            "genbound.norms.log_schatten_power_at",
        ),
        mutants=(
            replaced(
                se,
                "log_c_p",
                lambda old: lambda q: old(q) - math.log(2),
                name="cp-halved",
                what="the bound c_p T(p) with c_p halved",
            ),
        ),
    )
)
