"""Claims of :ref:`ch-sa-trained` (Part III, trained transformers): which matrix ``QK`` is.

In the row-vector convention of the book (``x -> x W``, :doc:`/notation`), a head's query and key maps
are ``W_Q, W_K`` in ``R^{N x d_head}`` (the transposes of the head's rows of ``nn.Linear.weight``), its
scores are ``x_s W_Q W_K^T x_t^T``, and the matrix whose spectrum the proxies price is
``QK = W_Q W_K^T``: ``N x N``, rank at most ``d_head``. The product of the same factors in the other
order (transpose on the query map) is ``d_head x d_head`` and has another spectrum. :func:`named_qk_product` is the book's formula as written;
the claim ties it (shape, entries, singular values, scores) to what :mod:`genbound.weights` computes.

>>> import torch
>>> WQ, WK = torch.eye(3, 2, dtype=torch.float64), torch.ones(3, 2, dtype=torch.float64)
>>> tuple(named_qk_product(WQ, WK).shape)
(3, 3)
"""

from __future__ import annotations

import math
import sys

import torch

from . import register
from ._core import AllOf, Claim, FunctionCheck, replaced
from ..weights import model as _wmodel
from ..weights import weights_from_state_dict

_THIS = sys.modules[__name__]
CH = "book/part3/trained.md"
F64 = torch.float64

#: The book's name of the query-key matrix in the row-vector convention (a test keeps the pages to it).
QK_NAME = "W_Q W_K^T"


def named_qk_product(W_Q: torch.Tensor, W_K: torch.Tensor) -> torch.Tensor:
    """The query-key matrix as the book names it: ``W_Q W_K^T`` for row-vector maps ``W_Q, W_K`` of
    shape ``(N, d_head)``; the result is ``N x N``."""
    return W_Q @ W_K.transpose(-1, -2)


def _instance(gen: torch.Generator, i: int):
    """A random BERT-layout state dict with ``L`` layers, width ``N``, ``H`` heads of width ``d_head``.

    Instance kinds, cycled by ``i``: Gaussian weights; rank-1 query and key blocks; query equal to key
    (a symmetric head, where query and key are easy to confuse); heads whose scales differ by 10^4;
    a wide head (``d_head = N``, one head) where both products are ``N x N`` and only the spectrum
    tells them apart.
    """
    kind = i % 5
    H = [1, 2, 4][int(torch.randint(0, 3, (1,), generator=gen))]
    dh = int(torch.randint(2, 7, (1,), generator=gen))
    if kind == 4:
        H, dh = 1, int(torch.randint(3, 9, (1,), generator=gen))
    N = H * dh
    L = int(torch.randint(1, 3, (1,), generator=gen))
    sd = {}
    for layer in range(L):
        q, k, v, o = (torch.randn(N, N, generator=gen, dtype=F64) for _ in range(4))
        if kind == 1:
            q = torch.randn(N, 1, generator=gen, dtype=F64) @ torch.randn(
                1, N, generator=gen, dtype=F64
            )
            k = torch.randn(N, 1, generator=gen, dtype=F64) @ torch.randn(
                1, N, generator=gen, dtype=F64
            )
        elif kind == 2:
            k = q.clone()
        elif kind == 3:
            s = 10.0 ** (4 * torch.rand(N, 1, generator=gen, dtype=F64) - 2)
            q, k = q * s, k * s
        pre = f"encoder.layer.{layer}."
        sd.update(
            {
                pre + "attention.self.query.weight": q,
                pre + "attention.self.key.weight": k,
                pre + "attention.self.value.weight": v,
                pre + "attention.output.dense.weight": o,
                pre + "intermediate.dense.weight": torch.randn(4 * N, N, generator=gen, dtype=F64),
                pre + "output.dense.weight": torch.randn(N, 4 * N, generator=gen, dtype=F64),
            }
        )
    return sd, {"hidden_size": N, "num_attention_heads": H, "intermediate_size": 4 * N}, L, H, dh, N


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """``1 + max|a - b| / max|b|`` (two-sided: any difference raises it); infinite on a shape mismatch."""
    if a.shape != b.shape:
        return math.inf
    den = float(b.abs().max())
    return 1.0 + (float((a - b).abs().max()) / den if den > 0 else float((a - b).abs().max()))


def _qk_orientation_ratio(seed: int, n: int = 60) -> tuple[float, int]:
    """Worst disagreement between the named product and the computed ``QK`` over ``n`` random models.

    Per head it compares (1) shape and entries of :func:`named_qk_product` (of the row-vector maps read
    from the raw ``nn.Linear`` weights) with :meth:`TransformerWeights.matrix`; (2) its singular values,
    from a dense float64 SVD, with :meth:`TransformerWeights.spectra` (``method="core"``, the numbers of
    the book), all ``N`` of them (the code's ``d_head`` values followed by zeros); (3) the scores
    ``q_s . k_t`` of the head, computed as BERT computes them (``q = x W_query^T`` per head block), with
    ``x_s QK x_t^T``. The ratio is ``1 + relative difference``; 1 means exact agreement.
    """

    gen = torch.Generator().manual_seed(seed)
    worst, trials = 1.0, 0
    for i in range(n):
        sd, cfg, L, H, dh, N = _instance(gen, i)
        w = weights_from_state_dict(sd, cfg, source=f"claim instance {i}")
        sp = w.spectra(device="cpu", method="core", cache=False)
        X = torch.randn(7, N, generator=gen, dtype=F64)
        for layer in range(L):
            Wq_st = sd[f"encoder.layer.{layer}.attention.self.query.weight"]
            Wk_st = sd[f"encoder.layer.{layer}.attention.self.key.weight"]
            q_all, k_all = X @ Wq_st.T, X @ Wk_st.T  # BERT's query and key activations
            for h in range(H):
                blk = slice(h * dh, (h + 1) * dh)
                W_Q, W_K = Wq_st[blk].T, Wk_st[blk].T  # row-vector maps, N x d_head
                P = named_qk_product(W_Q, W_K)
                code = w.matrix("QK", layer, h, device="cpu")
                worst = max(worst, _rel(code, P) if P.shape == code.shape else math.inf)
                s_ref = torch.linalg.svdvals(P)
                s_code = sp.qk[layer, h]
                s_code = torch.cat(
                    [s_code, s_code.new_zeros(max(0, s_ref.numel() - s_code.numel()))]
                )
                worst = max(worst, _rel(s_code, s_ref))
                scores = q_all[:, blk] @ k_all[:, blk].T
                if P.shape == (N, N):
                    worst = max(worst, _rel(X @ P @ X.T, scores))
                else:
                    worst = math.inf
                trials += 1
    return worst, trials


def _qk_rank_ratio(seed: int, n: int = 40) -> tuple[float, int]:
    """Rank at most ``d_head``: the computed ``QK`` spectrum has ``min(N, d_head)`` entries and the named
    product's singular values beyond ``d_head`` are round-off. Ratio ``1 + (sigma_{d_head+1} /
    sigma_1) / 1e-12`` (above 1 + 1e-9 only if a value beyond ``d_head`` is not round-off) and, for the
    count, infinite when the code keeps a number of values other than ``d_head``."""

    gen = torch.Generator().manual_seed(seed + 17)
    worst, trials = 1.0, 0
    for i in range(n):
        sd, cfg, L, H, dh, N = _instance(gen, i)
        w = weights_from_state_dict(sd, cfg, source=f"claim instance {i}")
        sp = w.spectra(device="cpu", method="core", cache=False)
        if sp.qk.shape[-1] != min(N, dh):
            return math.inf, trials + 1
        for layer in range(L):
            Wq_st = sd[f"encoder.layer.{layer}.attention.self.query.weight"]
            Wk_st = sd[f"encoder.layer.{layer}.attention.self.key.weight"]
            for h in range(H):
                blk = slice(h * dh, (h + 1) * dh)
                P = named_qk_product(Wq_st[blk].T, Wk_st[blk].T)
                if P.shape != (N, N):
                    return math.inf, trials + 1
                s = torch.linalg.svdvals(P)
                tail = float(s[dh:].max()) / float(s[0]) if dh < N else 0.0
                worst = max(worst, 1.0 + tail * 1e-3)  # round-off ~1e-16; 1e-3 * 1e-6 = 1e-9 trips
                trials += 1
    return worst, trials


def _transposed_head_factors(old):
    """Mutant: the code computes the ``d_head x d_head`` product (transpose on the query map) instead of
    ``W_Q W_K^T``."""

    def head_factors(self, kind, layer, *, device=None):
        left, right = old(self, kind, layer, device=device)
        if kind != "QK":
            return left, right
        return left.transpose(-1, -2), right.transpose(-1, -2)

    return head_factors


def _swapped_head_factors(old):
    """Mutant: query and key swapped, ``W_K W_Q^T`` (same singular values, transposed scores)."""

    def head_factors(self, kind, layer, *, device=None):
        left, right = old(self, kind, layer, device=device)
        if kind != "QK":
            return left, right
        return right.transpose(-1, -2), left.transpose(-1, -2)

    return head_factors


register(
    Claim(
        label="prop-sa-qk-orientation",
        statement="in the row-vector convention a head's query-key matrix is QK = W_Q W_K^T (N x N, rank <= d_head, "
        "scores x_s QK x_t^T); the computed QK and its singular values are those of this product",
        chapter=CH,
        provenance="standard",
        numeric=AllOf((FunctionCheck(_qk_orientation_ratio), FunctionCheck(_qk_rank_ratio))),
        covers=(
            "genbound.weights.model.TransformerWeights.head_factors",
            "genbound.weights.model.TransformerWeights.spectra",
            "genbound.weights.model.TransformerWeights.matrix",
        ),
        mutants=(
            replaced(
                _THIS,
                "named_qk_product",
                lambda old: lambda W_Q, W_K: W_Q.transpose(-1, -2) @ W_K,
                name="named-transposed",
                what="the book names the product in the other order: d_head x d_head, another spectrum",
            ),
            replaced(
                _wmodel.TransformerWeights,
                "head_factors",
                _transposed_head_factors,
                name="code-transposed",
                what="the code prices the d_head x d_head product instead of W_Q W_K^T",
            ),
            replaced(
                _wmodel.TransformerWeights,
                "head_factors",
                _swapped_head_factors,
                name="query-key-swapped",
                what="the code uses W_K W_Q^T (same spectrum, transposed scores)",
            ),
        ),
    )
)
