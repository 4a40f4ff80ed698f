"""What the claims of ``book/part7/compression.md`` share: exact references (the kl divergence and its inverse by
scipy's root finder, two-sided ratios) and the **coverage checks** of the probabilistic statements, which test the
production bounds against exact failure probabilities instead of the typed tails they are derived from.

* :func:`azuma_coverage`: a model of zero code length, losses in ``{0, w}`` (a fair coin, the case where Azuma's
  exponent is sharpest, and an adaptive martingale whose coin depends on the past, every path enumerated): the
  exact probability that the mean conditional loss exceeds :func:`~genbound.bounds.compression.token_bound` is at
  most ``delta`` (integer arithmetic, ``delta`` down to ``1e-9``). A wrong exponent shared by the code and the
  sympy derivation (``exp(-4 M t^2 / w^2)``) fails it.
* :func:`kraft_coverage`: the confidence the code gives a model of ``C`` bits, found from the code alone (the
  ``delta'`` at which the bound of a zero-length model equals the bound of the ``C``-bit model, by bisection), summed
  over the words of explicit complete prefix codes, is at most (and, the codes being complete, equal to) ``delta``:
  with the zero-length case covered by :func:`azuma_coverage`, the union over the class fails with probability at
  most ``delta``. A wrong conversion of the prior ``2^-C`` to nats (``C (ln 2)^2``) fails it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import brentq

import sympy as sp

from ..bounds import compression as cb
from ..bounds import ngram as ng
from ..symbolic import compression as sc
from ._core import Mutant, two_sided

__all__ = [
    "two_sided",
    "kl",
    "kl_inv",
    "azuma_coverage",
    "kraft_coverage",
    "implied_confidence",
    "PREFIX_CODES",
    "token_mutant",
    "doc_mutant",
    "swap_range",
    "azuma_error_width",
    "dict_losses",
    "TOKEN_SHARED_MUTANTS",
    "DOC_SHARED_MUTANT",
    "ngram_cert_check",
]


def kl(q, p):
    """``kl(q || p)`` of Bernoulli means."""
    out = 0.0
    if q > 0:
        out += q * math.log(q / p)
    if q < 1:
        out += (1 - q) * math.log((1 - q) / (1 - p))
    return out


def kl_inv(q, c):
    """The ``p >= q`` with ``kl(q || p) = c`` (1 when none below 1), by brentq."""
    if q >= 1 or kl(q, 1 - 1e-15) <= c:
        return 1.0
    return brentq(lambda p: kl(q, p) - c, q, 1 - 1e-15, xtol=1e-15, rtol=1e-15)


#: the confidences and sequence lengths of :func:`azuma_coverage`
AZUMA_DELTAS = (0.5, 0.2, 0.05, 1e-2, 1e-3, 1e-4, 1e-6, 1e-9)
AZUMA_LENGTHS = (1, 2, 5, 20, 64, 200, 1000)


def _fair_coin_failure(M: int, t: float) -> float:
    """``P[1/2 - S/M > t]``, ``S ~ Bin(M, 1/2)``, exactly (integers), as a float."""
    hits = sum(math.comb(M, s) for s in range(M + 1) if 0.5 - s / M > t)
    return hits / 2**M


def _adaptive_failure(M: int, t: float, w: float) -> float:
    """An adaptive martingale, every path enumerated: ``X_k in {0, w}`` with ``P[X_k = w | past] = 0.3`` after a
    ``w`` and ``0.6`` otherwise (``0.5`` first); the probability that ``(1/M) sum_k (E[X_k | past] - X_k) > t``."""
    paths = np.array(list(itertools.product((0, 1), repeat=M)), dtype=np.float64)
    prev = np.concatenate([np.full((len(paths), 1), -1.0), paths[:, :-1]], axis=1)
    p = np.where(prev < 0, 0.5, np.where(prev == 1, 0.3, 0.6))
    prob = np.where(paths == 1, p, 1 - p).prod(axis=1)
    dev = (w * (p - paths)).sum(axis=1) / M
    return float(prob[dev > t].sum())


def azuma_coverage(seed: int) -> tuple[float, int]:
    """The worst ``P[failure] / delta`` (see the module) over :data:`AZUMA_DELTAS` and :data:`AZUMA_LENGTHS` (the
    fair coin) and lengths 1-12 (the adaptive martingale, ``w`` drawn from ``seed``); the deviation is the
    production bound's, ``token_bound(lo, lo, w, M, 0, delta) - lo``."""
    rng = np.random.default_rng(seed)
    worst, trials = 0.0, 0
    for M in AZUMA_LENGTHS:
        for d in AZUMA_DELTAS:
            t = cb.token_bound(0.0, 0.0, 1.0, M, 0.0, d)
            worst, trials = max(worst, _fair_coin_failure(M, t) / d), trials + 1
    for M in range(1, 13):
        w, lo = float(10 ** rng.uniform(-1, 1)), float(rng.uniform(0, 2))
        for d in AZUMA_DELTAS[:5]:
            t = cb.token_bound(lo, lo, w, M, 0.0, d) - lo
            worst, trials = max(worst, _adaptive_failure(M, t, w) / d), trials + 1
    return worst, trials


def implied_confidence(bound, C: float, delta: float) -> float:
    """The ``delta'`` at which ``bound(C=0, delta')`` equals ``bound(C, delta)``: the share of the confidence the
    code gives a model of ``C`` bits, read off the code (bisection on ``log delta'``; the bound decreases in
    ``delta'``)."""
    target = bound(C, delta)
    lo, hi = (
        math.log(delta) - 2.0 * C - 50.0,
        math.log(delta),
    )  # bound(0, e^lo) > target >= bound(0, e^hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if bound(0.0, math.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def _lengths_1_to_k(k: int) -> list[int]:
    return list(range(1, k + 1)) + [k]  # 0, 10, 110, ..., 1...10, 1...11


#: explicit complete prefix codes, as their word lengths (each sums ``2^-L`` to 1): all words of one length,
#: the unary code cut at ``k``, and a Huffman code of the counts 1..12 (built here)
PREFIX_CODES = {
    "block-8": [8] * 2**8,
    "unary-40": _lengths_1_to_k(40),
}


def _huffman_lengths(weights) -> list[int]:
    import heapq

    heap = [(w, i, [i]) for i, w in enumerate(weights)]
    depth = [0] * len(weights)
    heapq.heapify(heap)
    n = len(weights)
    while len(heap) > 1:
        w1, _, a = heapq.heappop(heap)
        w2, _, b = heapq.heappop(heap)
        for i in a + b:
            depth[i] += 1
        heapq.heappush(heap, (w1 + w2, n, a + b))
        n += 1
    return depth


PREFIX_CODES["huffman-12"] = _huffman_lengths(list(range(1, 13)))


def kraft_coverage(seed: int, which: str = "token") -> tuple[float, int]:
    """``sum over the words h of a complete prefix code of implied_confidence(C(h)) / delta``, for the token bound
    (``which="token"``: Azuma, width and empirical loss drawn from ``seed``) or the document bound
    (``"document"``: Maurer-kl), over
    :data:`PREFIX_CODES` and three confidences: at most 1 is the union bound; the codes being complete, the
    claim's two-sided reading also rejects a code that spends less."""
    rng = np.random.default_rng(seed)
    worst, trials = 0.0, 0
    w, lo = float(10 ** rng.uniform(-1, 1)), float(rng.uniform(0, 1))
    emp = lo + w * float(rng.uniform(0, 0.8))
    M, m = int(rng.integers(10, 10**6)), int(rng.integers(10, 10**4))
    bounds = (  # the document bound (interval arithmetic, milliseconds a call) on the codes of few lengths
        (lambda C, d: cb.token_bound(emp, lo, w, M, C, d), (0.3, 0.05, 1e-4), tuple(PREFIX_CODES)),
        (lambda C, d: cb.document_bound(emp, lo, w, m, C, d), (0.05,), ("block-8", "huffman-12")),
    )
    for bound, deltas, codes in bounds[:1] if which == "token" else bounds[1:]:
        for d in deltas:
            for lengths in (PREFIX_CODES[c] for c in codes):
                share = {L: implied_confidence(bound, float(L), d) / d for L in set(lengths)}
                total = math.fsum(share[L] for L in lengths)
                worst, trials = max(worst, two_sided(total, 1.0)), trials + 1
    return worst, trials


# the mutants and mutant makers of the chapter's claims
def token_mutant(fn):
    return lambda old: lambda emp, lo, w, M, C, d: fn(old, emp, lo, w, M, C, d)


def doc_mutant(fn):
    return lambda old: lambda emp, lo, w, m, C, d: fn(old, emp, lo, w, m, C, d)


def swap_range(old):
    def f(emp, sumsq, errors, V, alpha, m, M, C, d, **kw):
        out = old(emp, sumsq, errors, V, alpha, m, M, C, d, **kw)
        w = out["width"]
        out["token_err"] = cb.CompressionBound.of(
            "token-kl", errors / M, 0.0, w, M, C, d, 1 - 1 / V
        )
        return out

    return f


def azuma_error_width(old):
    def f(emp, sumsq, errors, V, alpha, m, M, C, d, **kw):
        out = old(emp, sumsq, errors, V, alpha, m, M, C, d, **kw)
        out["token_err_azuma"] = cb.CompressionBound.of(
            "token", errors / M, 0.0, out["width"], M, C, d, 1 - 1 / V
        )
        return out

    return f


def dict_losses(train, docs, order, V, alpha, beta):
    """The smoothed losses (sum, sum of squares) and top-1 errors on ``docs`` of the count table of
    ``train``, with Python dictionaries."""
    cells, ctxs = {}, {}
    for doc in train.tolist():
        padded = [V] * (order - 1) + doc
        for t, y in enumerate(doc):
            x = tuple(padded[t : t + order - 1])
            cells[(x, y)] = cells.get((x, y), 0) + 1
            ctxs[x] = ctxs.get(x, 0) + 1
    s = s2 = 0.0
    err = 0
    for doc in docs.tolist():
        padded = [V] * (order - 1) + doc
        for t, y in enumerate(doc):
            x = tuple(padded[t : t + order - 1])
            if x in ctxs:
                p = (cells.get((x, y), 0) + beta) / (ctxs[x] + beta * V)
                best = max(range(V), key=lambda z: (cells.get((x, z), 0), -z))
            else:
                p, best = 1 / V, 0
            loss = -math.log2((1 - alpha) * p + alpha / V)
            s, s2, err = s + loss, s2 + loss * loss, err + (best != y)
    return s, s2, err


#: wrong constants shared by the code and the sympy derivation (the derivation's own check cannot see them)
TOKEN_SHARED_MUTANTS = (
    Mutant(
        "azuma-exponent-4-shared",
        "Azuma's tail exp(-4 M t^2 / w^2), in the code and the sympy derivation together",
        (
            (sc, "azuma_occam_deviation", lambda old: lambda: old().subs(sc.M, 2 * sc.M)),
            (
                cb,
                "token_bound",
                token_mutant(lambda o, e, lo, w, M, C, d: o(e, lo, w, 2 * M, C, d)),
            ),
        ),
    ),
    Mutant(
        "nats-ln2-squared-shared",
        "the prior 2^-C as C (ln 2)^2 nats, in the code and the sympy derivation together",
        (
            (
                sc,
                "azuma_occam_deviation",
                lambda old: lambda: old().subs(sc.C, sc.C * sp.log(2)),
            ),
            (
                cb,
                "token_bound",
                token_mutant(lambda o, e, lo, w, M, C, d: o(e, lo, w, M, C * math.log(2), d)),
            ),
        ),
    ),
)
DOC_SHARED_MUTANT = Mutant(
    "nats-ln2-squared-shared",
    "the prior 2^-C as C (ln 2)^2 nats, in the code and the sympy derivation together",
    (
        (
            sc,
            "maurer_occam_rhs",
            lambda old: lambda: old().subs(sc.C, sc.C * sp.log(2)),
        ),
        (
            cb,
            "document_bound",
            doc_mutant(lambda o, e, lo, w, m, C, d: o(e, lo, w, m, C * math.log(2), d)),
        ),
    ),
)


def ngram_cert_check(seed: int) -> tuple[float, int]:
    """``ngram_certificate``: its code is the table's, its losses and errors on the training and
    held-out documents are those of a dictionary count at its (alpha, beta), its certificates are
    ``lm_certificates`` of those numbers, and no other (alpha, beta) of the grids has a smaller
    empirical-Bernstein bound (two-sided)."""
    rng = np.random.default_rng(seed)
    worst, trials = 0.0, 0
    for _ in range(4):
        V, order = int(rng.integers(2, 7)), int(rng.integers(1, 4))
        L = int(rng.integers(4, 12))
        train = rng.integers(0, V, size=(int(rng.integers(20, 60)), L))
        held = rng.integers(0, V, size=(int(rng.integers(5, 20)), L))
        alphas, d = (0.05, 0.2), 0.01
        r = ng.ngram_certificate(order, train, held, V, alphas, d)
        a, b, M = r["alpha"], r["beta"], train.size
        s, s2, err = dict_losses(train, train, order, V, a, b)
        hs, _, herr = dict_losses(train, held, order, V, a, b)
        C = ng.table_code_bits(ng.ngram_table(train, order, V), (4, 2, len(ng.NGRAM_BETAS)))
        lo, w = cb.smoothed_range(V, a)
        worst = max(worst, two_sided(r["code_bits"], C), two_sided(r["train_bits"], s / M))
        worst = max(worst, two_sided(r["heldout_bits"], hs / held.size))
        worst = max(
            worst, 1.0 if (err, herr) == (r["train_errors"], r["heldout_errors"]) else math.inf
        )
        eb = cb.token_bound_bernstein(s / M, s2, lo, w, M, C, d)
        worst = max(worst, two_sided(r["certificates"]["token-eb"].bound, eb))
        for a2 in alphas:
            for b2 in ng.NGRAM_BETAS:
                t2, t22, _ = dict_losses(train, train, order, V, a2, b2)
                lo2, w2 = cb.smoothed_range(V, a2)
                other = cb.token_bound_bernstein(t2 / M, t22, lo2, w2, M, C, d)
                worst = max(worst, 1.0 if other >= eb * (1 - 1e-12) else math.inf)
        trials += 1
    return worst, trials
