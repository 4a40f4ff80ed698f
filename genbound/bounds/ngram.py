"""n-gram count tables as baselines for the compression certificates of Part VII (:ref:`ch-compression`).

A model of order ``n`` predicts a character from the ``n - 1`` characters before it in the same
document (the start symbol ``V`` stands in for the positions before the document's first character, as
for the transformers): with ``N(x, y)`` the number of times ``y`` follows the context ``x`` in the
training documents and ``N(x) = sum_y N(x, y)``,
``p(y | x) = (N(x, y) + beta) / (N(x) + beta V)`` (uniform where ``N(x) = 0``), smoothed with the
uniform distribution as the transformers are, ``p_alpha = (1 - alpha) p + alpha / V``. Its top-1
prediction is the most frequent ``y`` after ``x`` (the lowest code among ties; code 0 for an unseen
context).

**Its code** (:func:`table_code_bits`, prefix-free, decodable in this order): the family flag
(:data:`~genbound.bounds.compression.FAMILY_BITS`), ``log2`` of the sizes of the grids of orders, of
``alpha`` and of ``beta``; the number ``K`` of non-zero cells (Elias delta); the cells in increasing
order of their index ``x V + y`` (``x`` read as a number in base ``V + 1``), each as the Elias-delta code
of its gap to the previous index (the first: its index + 1) and of its count. The table, hence the
model, is a function of the training text; the code pays for it, so the Occam bounds of
:mod:`genbound.bounds.compression` apply to it exactly as to a quantized transformer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_positive_int
from ..errors import ParameterError
from .compression import (
    FAMILY_BITS,
    _iv,
    _up,
    elias_delta_bits,
    iv,
    lm_certificates,
    smoothed_range,
    token_bound_bernstein,
)

__all__ = [
    "NGRAM_ORDERS",
    "NGRAM_BETAS",
    "elias_delta_bits_array",
    "NgramTable",
    "ngram_table",
    "table_code_bits",
    "ngram_losses",
    "ngram_certificate",
]

#: The orders the baseline chooses among (unigram to 4-gram).
NGRAM_ORDERS = (1, 2, 3, 4)
#: The additive smoothing ``beta`` of the count table the baseline chooses among: ``4**-k``, ``k = 0 .. 7``.
NGRAM_BETAS = tuple(2.0**-k for k in (14, 12, 10, 8, 6, 4, 2, 0))


def elias_delta_bits_array(n) -> np.ndarray:
    """:func:`~genbound.bounds.compression.elias_delta_bits` of every entry of an integer array (all
    ``>= 1`` and below ``2**53``).

    >>> elias_delta_bits_array(np.array([1, 2, 3, 4, 17])).tolist()
    [1, 4, 4, 5, 9]
    """
    n = np.asarray(n, dtype=np.int64)
    if n.size and (n.min() < 1 or n.max() >= 2**53):
        raise ParameterError("Elias delta needs integers in [1, 2**53)")
    L = np.frexp(n.astype(np.float64))[1].astype(np.int64) - 1  # floor(log2 n)
    LL = np.frexp((L + 1).astype(np.float64))[1].astype(np.int64) - 1
    return L + 2 * LL + 1


def _contexts(docs: np.ndarray, order: int, V: int) -> np.ndarray:
    """The context index (base ``V + 1``, start symbol ``V``) of every position of ``docs``."""
    n, L = docs.shape
    ctx = np.zeros((n, L), dtype=np.int64)
    padded = np.concatenate([np.full((n, order - 1), V, dtype=np.int64), docs.astype(np.int64)], 1)
    for j in range(order - 1):  # the j-th character before, most distant first
        ctx = ctx * (V + 1) + padded[:, j : j + L]
    return ctx


@dataclass(frozen=True)
class NgramTable:
    """The non-zero cells of a count table: ``keys`` (``x V + y``, increasing), their ``counts``;
    ``order``, ``V``."""

    order: int
    V: int
    keys: np.ndarray
    counts: np.ndarray

    @property
    def n_cells(self) -> int:
        return int(self.keys.size)


def ngram_table(docs: np.ndarray, order: int, V: int) -> NgramTable:
    """The count table of order ``order`` of the documents ``docs`` ``(n, L)`` (codes ``< V``)."""
    order = check_positive_int(order, "order")
    V = check_positive_int(V, "V", minimum=2)
    if docs.size and int(docs.max()) >= V:
        raise ParameterError(f"a document holds code {int(docs.max())} >= V = {V}")
    keys = (_contexts(docs, order, V) * V + docs.astype(np.int64)).ravel()
    u, c = np.unique(keys, return_counts=True)
    return NgramTable(order, V, u, c.astype(np.int64))


def table_code_bits(table: NgramTable, grid_sizes) -> float:
    """The code length of the table (see the module), the family flag and the grid indices included
    (the book's lemma ``lem-lm-ngram-code``)."""
    sizes = [check_positive_int(g, "grid size") for g in grid_sizes]
    header = sum((iv.log(_iv(g)) for g in sizes), _iv(0)) / iv.log(_iv(2))
    gaps = np.diff(np.concatenate([[-1], table.keys]))
    body = elias_delta_bits(table.n_cells + 1)
    body += int(elias_delta_bits_array(gaps).sum()) + int(
        elias_delta_bits_array(table.counts).sum()
    )
    return _up(header + _iv(FAMILY_BITS) + _iv(body))


def ngram_losses(table: NgramTable, docs: np.ndarray, alphas, betas) -> dict:
    """Sums over the positions of ``docs``: ``{(alpha, beta): (sum of bits, sum of squared bits)}``
    under ``"smoothed"``, the top-1 ``"errors"``, ``"chars"``. (The loss of a position depends only on
    its cell ``(x, y)``: each distinct cell is evaluated once and weighted by its number of positions.)"""
    V, order = table.V, table.order
    u, n_pos = np.unique(
        (_contexts(docs, order, V) * V + docs.astype(np.int64)).ravel(), return_counts=True
    )
    ctx, y = u // V, u % V
    i = np.minimum(np.searchsorted(table.keys, u), table.n_cells - 1)
    n_xy = np.where(table.keys[i] == u, table.counts[i], 0).astype(np.float64)
    cx = table.keys // V
    uctx, first = np.unique(cx, return_index=True)
    tot = np.add.reduceat(table.counts, first)
    j = np.minimum(np.searchsorted(uctx, ctx), uctx.size - 1)
    seen = uctx[j] == ctx
    n_x = np.where(seen, tot[j], 0).astype(np.float64)
    # top-1: the most frequent y after each context (lowest code among ties)
    order_ = np.lexsort((table.keys % V, -table.counts, cx))
    starts = np.searchsorted(cx[order_], uctx)
    best = (table.keys % V)[order_][starts]
    pred = np.where(seen, best[j], 0)
    wts = n_pos.astype(np.float64)
    out: dict = {"smoothed": {}, "errors": int(n_pos[pred != y].sum()), "chars": int(n_pos.sum())}
    for b in betas:
        p = np.where(seen, (n_xy + b) / (n_x + b * V), 1.0 / V)
        for a in alphas:
            loss = -np.log2((1 - a) * p + a / V)
            out["smoothed"][(float(a), float(b))] = (
                math.fsum(wts * loss),
                math.fsum(wts * loss * loss),
            )
    return out


def ngram_certificate(
    order: int,
    train_docs: np.ndarray,
    held_docs: np.ndarray,
    V: int,
    alphas,
    delta: float,
    betas=NGRAM_BETAS,
) -> dict:
    """The certificates of the count table of order ``order`` (:func:`~genbound.bounds.compression.lm_certificates`, every
    certificate at ``delta``), at the ``(alpha, beta)`` of the grids with the least token-level
    empirical-Bernstein bound (every pair is paid by the grid bits of the code): a dict with the
    table's size, code length, losses and the certificates."""
    table = ngram_table(train_docs, order, V)
    C = table_code_bits(table, (len(NGRAM_ORDERS), len(alphas), len(betas)))
    tr = ngram_losses(table, train_docs, alphas, betas)
    ho = ngram_losses(table, held_docs, alphas, betas)
    M, m = int(train_docs.size), int(train_docs.shape[0])
    best = None
    for (a, b), (s, s2) in tr["smoothed"].items():
        lo, w = smoothed_range(V, a)
        eb = token_bound_bernstein(s / M, s2, lo, w, M, C, delta)
        if best is None or eb < best[0]:
            best = (eb, a, b, s, s2)
    assert best is not None  # the grids are never empty
    _, a, b, s, s2 = best
    cert = lm_certificates(
        s / M,
        s2,
        tr["errors"],
        V,
        a,
        m,
        M,
        C,
        delta,
        heldout=ho["smoothed"][(a, b)][0] / ho["chars"],
        n_held=int(held_docs.shape[0]),
        heldout_errors=ho["errors"] / ho["chars"],
    )
    best = (cert, a, b, s, s2)
    cert, a, b, s, s2 = best
    lo, w = smoothed_range(V, a)
    return {
        "order": order,
        "cells": table.n_cells,
        "code_bits": C,
        "alpha": a,
        "beta": b,
        "train_bits": s / M,
        "train_sumsq": s2,
        "train_errors": tr["errors"],
        "heldout_bits": ho["smoothed"][(a, b)][0] / ho["chars"],
        "heldout_errors": ho["errors"],
        "lo": lo,
        "width": w,
        "certificates": cert,
    }
