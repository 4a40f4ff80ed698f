"""The reference transformer of Part II: exactly the function class the bounds are proved for.

Book chapters: :ref:`ch-tt-covers`, :ref:`ch-tt-single-layer`, :ref:`ch-tt-multilayer` (the class is
written out there as equation ``(eq-tt-class)``).

Function class
--------------
Inputs are sequences ``X`` in ``R^{T x d}`` (rows are tokens, any ``T >= 1``); ``Z^(0) = X``. Layer
``l = 1..L`` maps ``Z = Z^(l-1)`` to ``Z^(l)`` by, for every row ``i``,

.. math::

   u_i = \\sum_{h=1}^{H} \\sum_{t=1}^{T} \\operatorname{softmax}_t\\big(s\\,(z_i W_Q^h + b_Q^h)\\cdot
        (z_t W_K^h + b_K^h)\\big)\\,\\big((z_t W_V^h + b_V^h) W_O^h\\big) + b_O,

   y_i = \\sigma(u_i)\\,W_C + b_C \\quad(\\text{or } y_i=\\sigma(u_i) \\text{ when } \\texttt{dense=False}),

   z^{(l)}_i = \\Pi(y_i) = y_i / \\max(1, \\|y_i\\|_2) \\quad(\\text{or } z^{(l)}_i = y_i \\text{ when } \\texttt{row\\_norm=False}),

and the output is the readout of one row of the last layer, ``f(X) = z^(L)_{cls} w + b_w`` in
``R^{out_dim}``. Here ``s`` is the score scale (default ``1/sqrt(d_head)``, as in Keras' and PyTorch's
multi-head attention), ``sigma`` acts coordinatewise with ``sigma(0) = 0`` and Lipschitz constant
``L_sigma`` (:data:`ACTIVATIONS`), and every bias is present only when ``bias=True``. There is no
residual connection and no LayerNorm: this is the class of the Trauger-Tewari reconstruction (and of
the authors' sparse-majority code, which is ``L = 1``, ``H = 2``, ReLU, a dense map and biases).

What the bounds see
-------------------
The function depends on the weights only through, per layer and head, the query-key form
``W_QK^h = s [W_Q^h; b_Q^h] [W_K^h; b_K^h]^T`` and the value map ``W_V^h W_O^h`` (plus biases), and
through ``W_C`` and ``w``. :meth:`ReferenceTransformer.effective_weights` returns these maps; with
``bias=True`` every map acts on the **augmented** row ``[z, 1]``, so the biases are absorbed as one
extra input coordinate (the output bias ``b_O`` is carried by head 1's value map, which is valid because
attention weights sum to one). The bounds then use the augmented input radius ``sqrt(B^2 + 1)`` in
place of ``B`` at every layer. :meth:`ReferenceTransformer.weight_norms` reports the norms of those
maps that the bounds need.

>>> import torch
>>> net = ReferenceTransformer(4, n_heads=2, seed=0)
>>> net(torch.zeros(3, 5, 4)).shape
torch.Size([3, 1])
>>> sorted(net.weight_norms())
['C', 'QK', 'V', 'raw', 'w']

One concept: the reference transformer's forward pass (plain, stacked and [CLS] modes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ._validate import as_tensor, check_positive_int, check_real
from .device import resolve_device, resolve_dtype
from .errors import ArchitectureError, ParameterError, ShapeError
from .model_norms import ModelNorms  # noqa: F401  (re-exported: genbound.nets.ModelNorms)

__all__ = [
    "ACTIVATIONS",
    "activation_lipschitz",
    "row_projection",
    "EffectiveWeights",
    "ReferenceTransformer",
    "ModelNorms",
    "matrix_norms",
    "forward_effective",
    "augment",
    "stack_parameters",
]


def _leaky(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.leaky_relu(x, 0.01)


#: name -> (coordinatewise function with sigma(0) = 0, its Lipschitz constant L_sigma)
ACTIVATIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], float]] = {
    "relu": (torch.relu, 1.0),
    "leaky_relu": (_leaky, 1.0),
    "tanh": (torch.tanh, 1.0),
    "identity": (lambda x: x, 1.0),
}


def activation_lipschitz(name: str) -> float:
    """Lipschitz constant ``L_sigma`` of a named activation.

    >>> activation_lipschitz("relu")
    1.0
    """
    if name not in ACTIVATIONS:
        raise ArchitectureError(
            f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}"
        )
    return ACTIVATIONS[name][1]


def row_projection(Y: torch.Tensor) -> torch.Tensor:
    """``Pi``: project every row (last axis) onto the closed unit l2 ball; 1-Lipschitz row by row.

    >>> row_projection(torch.tensor([[3.0, 4.0], [0.3, 0.4]])).tolist()
    [[0.6, 0.8], [0.3, 0.4]]
    """
    n = torch.linalg.vector_norm(Y, dim=-1, keepdim=True)
    return Y / torch.clamp(n, min=1.0)


def matrix_norms(M: torch.Tensor) -> dict[str, torch.Tensor]:
    """Norms of a batch of maps ``x -> x M`` (``M``: ``(..., d_in, d_out)``) that the bounds use.

    ``l11`` entrywise l1; ``op`` spectral; ``fro`` Frobenius; ``l21`` the sum over output units of their
    weight vectors' l2 norms, i.e. the column-convention ``||M||_{2,1}`` (BFT's ``||A^T||_{2,1}`` for
    the map ``x -> A x`` with ``A = M^T``); ``sqrt_din`` is ``sqrt(d_in)``, the worst ratio
    ``l11 / l21`` (see :prf:ref:`lem-tt-norm-price`).

    >>> n = matrix_norms(torch.tensor([[3.0, 0.0], [4.0, -1.0]]))
    >>> [round(n[k].item(), 6) for k in ("l11", "l21", "fro")]
    [8.0, 6.0, 5.09902]
    """
    M = as_tensor(M, "M", min_ndim=2)
    return {
        "l11": M.abs().sum((-2, -1)),
        "op": torch.linalg.matrix_norm(M, ord=2),
        "fro": torch.linalg.matrix_norm(M, ord="fro"),
        "l21": torch.linalg.vector_norm(M, dim=-2).sum(-1),
        "sqrt_din": torch.full(
            M.shape[:-2], math.sqrt(M.shape[-2]), dtype=M.dtype, device=M.device
        ),
    }


@dataclass(frozen=True)
class EffectiveWeights:
    """The maps the function depends on (augmented by a constant coordinate when ``bias``).

    ``QK``: ``(L, H, d_in, d_in)`` query-key forms; ``V``: ``(L, H, d_in, d)`` value maps;
    ``C``: ``(L, d_in, d)`` dense maps or ``None`` (``dense=False``); ``w``: ``(d_in, out_dim)``;
    ``d_in = d + 1`` when ``bias`` else ``d``.
    """

    QK: torch.Tensor
    V: torch.Tensor
    C: torch.Tensor | None
    w: torch.Tensor
    bias: bool


def augment(Z: torch.Tensor, bias: bool) -> torch.Tensor:
    """Append the constant coordinate ``1`` to every row when ``bias`` (how biases are absorbed)."""
    if not bias:
        return Z
    return torch.cat([Z, torch.ones_like(Z[..., :1])], dim=-1)


def forward_effective(
    QK,
    V,
    C,
    w,
    X,
    *,
    bias: bool = False,
    activation: str = "relu",
    row_norm: bool = False,
    positions=-1,
    all_rows: bool = False,
) -> torch.Tensor:
    """The function class written with the effective maps only (batched over instances).

    ``QK``: ``(B, L, H, d_in, d_in)``, ``V``: ``(B, L, H, d_in, d)``, ``C``: ``(B, L, d_in, d)`` or
    ``None``, ``w``: ``(B, d_in, K)``, ``X``: ``(B, T, d)``; ``d_in = d + 1`` when ``bias``. Layer ``l``
    maps ``Z`` to ``Pi(sigma(sum_h softmax(Z~ QK_h Z~^T) Z~ V_h) C)`` with ``Z~ = [Z, 1]`` (or ``Z``), and
    the output is ``[z_j, 1] w`` at row ``j = positions`` (an int or one index per instance); with
    ``all_rows`` the whole last layer ``Z^(L)`` is returned instead. This is the formula the bounds are
    proved for; :meth:`ReferenceTransformer.effective_weights` gives the maps of a module, and the
    module's forward pass equals this function (a test checks it).
    """
    activation_lipschitz(activation)  # raises ArchitectureError for an unknown name
    sigma = ACTIVATIONS[activation][0]
    Z = X
    for l in range(QK.shape[1]):
        Za = augment(Z, bias)
        Zh = Za.unsqueeze(1)  # (B, 1, T, d_in)
        A = torch.softmax((Zh @ QK[:, l]) @ Zh.transpose(-1, -2), dim=-1)  # (B, H, T, T)
        U = ((A @ Zh) @ V[:, l]).sum(1)  # sum over heads
        Y = sigma(U)
        if C is not None:
            Y = augment(Y, bias) @ C[:, l]
        Z = row_projection(Y) if row_norm else Y
    if all_rows:
        return Z
    pos = torch.as_tensor(positions, device=Z.device).long().expand(Z.shape[0])
    z = Z[torch.arange(Z.shape[0], device=Z.device), pos % Z.shape[1]]
    return torch.einsum("bi,bik->bk", augment(z, bias), w)


class _Layer(nn.Module):
    """The parameters of one layer (multi-head self-attention, sigma, the dense map); the computation is
    :meth:`ReferenceTransformer.forward_stacked`, the one forward pass of the class."""

    def __init__(self, d, H, dh, *, bias, dense, gen, dtype, device):
        super().__init__()
        kw = dict(dtype=dtype, device=device)

        def rnd(*shape, fan_in):
            return nn.Parameter(
                torch.randn(*shape, generator=gen, dtype=dtype).to(device) / math.sqrt(fan_in)
            )

        self.W_Q, self.W_K, self.W_V = (rnd(H, d, dh, fan_in=d) for _ in range(3))
        self.W_O = rnd(H, dh, d, fan_in=H * dh)
        self.W_C = rnd(d, d, fan_in=d) if dense else None
        if bias:
            self.b_Q, self.b_K, self.b_V = (
                nn.Parameter(torch.zeros(H, dh, **kw)) for _ in range(3)
            )
            self.b_O = nn.Parameter(torch.zeros(d, **kw))
            self.b_C = nn.Parameter(torch.zeros(d, **kw)) if dense else None
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = self.b_C = None


def _plus(x: torch.Tensor, b: torch.Tensor | None, index=(slice(None), None)) -> torch.Tensor:
    """``x + b[index]`` (a stacked bias broadcast to ``x``; default ``b[:, None]``), or ``x`` without bias."""
    return x if b is None else x + b[index]


_HEAD_ROWS = (slice(None), None, slice(None), None)  # b[:, None, :, None]: (K, 1, H, 1, e)
_ROWS = (slice(None), None, None)  # b[:, None, None]: (K, 1, 1, d)
_SAME = (slice(None),)  # b as it is


def stack_parameters(
    nets, *, dtype=None, device=None, requires_grad: bool = False
) -> dict[str, torch.Tensor]:
    """The parameters of ``K`` networks of one architecture stacked along a new leading model axis,
    keyed by their ``named_parameters`` names (``"layers.0.W_Q"``, ..., ``"w"``, ``"b_w"``): the input
    of :meth:`ReferenceTransformer.forward_stacked`. ``dtype``/``device``: of the first network by
    default; with ``requires_grad`` the stacked tensors are leaves that require gradients.

    >>> nets = [ReferenceTransformer(4, seed=s) for s in (0, 1)]
    >>> P = stack_parameters(nets)
    >>> P["layers.0.W_Q"].shape, bool(P["w"][1].equal(nets[1].w))
    (torch.Size([2, 1, 4, 4]), True)
    """
    nets = list(nets)
    if not nets:
        raise ParameterError("stack_parameters needs at least one network")
    names = [n for n, _ in nets[0].named_parameters()]
    out = {}
    for name in names:
        ts = [dict(net.named_parameters())[name].detach() for net in nets]
        t = torch.stack(ts)
        t = t.to(
            dtype=resolve_dtype(dtype) if dtype is not None else t.dtype,
            device=resolve_device(device) if device is not None else t.device,
        )
        out[name] = t.requires_grad_(True) if requires_grad else t
    return out


class ReferenceTransformer(nn.Module):
    """The transformer of Part II as a plain ``torch.nn.Module`` (see the module docstring for the math).

    Arguments: ``d`` is the token dimension (model width); ``n_layers``, ``n_heads`` are ``L`` and
    ``H``; ``d_head`` is the per-head width (default ``d // n_heads``, at least 1); ``out_dim`` the width
    of the readout; ``activation`` a key of :data:`ACTIVATIONS`; ``row_norm`` applies ``Pi`` after every
    layer; with ``bias`` every linear map has a bias; ``score_scale`` is ``s`` (default
    ``1/sqrt(d_head)``); ``cls_index`` is the row that is read out (default the last, as in the authors'
    code); ``dense`` includes ``W_C`` in every layer; ``seed`` seeds the (normal, ``1/sqrt(fan_in)``)
    initialisation; biases start at zero. ``device``: where the parameters live, the CPU unless one is
    named (``"cuda"``, or ``"auto"`` for CUDA when present), as for every ``torch.nn`` module; inputs
    are moved to it by :meth:`forward`.

    >>> net = ReferenceTransformer(3, n_layers=2, row_norm=True, bias=True, seed=1)
    >>> X = torch.randn(2, 7, 3, dtype=torch.float64)
    >>> bool(torch.allclose(net(X), net.forward_rows(X)[:, -1] @ net.w + net.b_w))
    True
    """

    def __init__(
        self,
        d: int,
        *,
        n_layers: int = 1,
        n_heads: int = 1,
        d_head: int | None = None,
        out_dim: int = 1,
        activation: str = "relu",
        row_norm: bool = False,
        bias: bool = False,
        score_scale: float | None = None,
        cls_index: int = -1,
        dense: bool = True,
        dtype=torch.float64,
        device=None,
        seed: int | None = 0,
    ):
        super().__init__()
        self.d = check_positive_int(d, "d")
        self.n_layers = check_positive_int(n_layers, "n_layers")
        self.n_heads = check_positive_int(n_heads, "n_heads")
        self.d_head = (
            max(1, self.d // self.n_heads)
            if d_head is None
            else check_positive_int(d_head, "d_head")
        )
        self.out_dim = check_positive_int(out_dim, "out_dim")
        self.activation = str(activation)
        self.L_sigma = activation_lipschitz(self.activation)
        self.row_norm, self.bias, self.dense = bool(row_norm), bool(bias), bool(dense)
        self.score_scale = (
            1.0 / math.sqrt(self.d_head)
            if score_scale is None
            else check_real(score_scale, "score_scale", lo=0.0, lo_open=True)
        )
        if isinstance(cls_index, bool) or not isinstance(cls_index, int):
            raise ParameterError(f"cls_index must be an integer row index, got {cls_index!r}")
        self.cls_index = cls_index
        dtype = resolve_dtype(dtype)
        device = resolve_device("cpu" if device is None else device)
        gen = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self.layers = nn.ModuleList(
            _Layer(
                self.d,
                self.n_heads,
                self.d_head,
                bias=self.bias,
                dense=self.dense,
                gen=gen,
                dtype=dtype,
                device=device,
            )
            for _ in range(self.n_layers)
        )
        self.w = nn.Parameter(
            torch.randn(self.d, self.out_dim, generator=gen, dtype=dtype).to(device)
            / math.sqrt(self.d)
        )
        self.b_w = (
            nn.Parameter(torch.zeros(self.out_dim, dtype=dtype, device=device))
            if self.bias
            else None
        )

    # ------------------------------------------------------------------ forward pass
    def _check_input(self, X) -> tuple[torch.Tensor, bool]:
        p = self.w
        X = as_tensor(X, "X", dtype=p.dtype, device=p.device)
        single = X.ndim == 2
        if single:
            X = X.unsqueeze(0)
        if X.ndim != 3 or X.shape[-1] != self.d:
            raise ShapeError(
                f"X must have shape (batch, T, {self.d}) or (T, {self.d}), got {tuple(X.shape)}"
            )
        return X, single

    def forward_rows(self, X) -> torch.Tensor:
        """All rows of the last layer, ``Z^(L)``: ``(batch, T, d)`` (or ``(T, d)`` for one sequence)."""
        Z, single = self._check_input(X)
        Z = self.forward_stacked(self._own_stack(), Z[None], all_rows=True)[0]
        return Z[0] if single else Z

    def _own_stack(self) -> dict[str, torch.Tensor]:
        """This module's parameters as a stack of one model (views: gradients reach the parameters)."""
        return {n: p[None] for n, p in self.named_parameters()}

    # ------------------------------------------------------------------ stacked modes
    def forward_stacked(
        self, params: dict[str, torch.Tensor], X: torch.Tensor, *, all_rows: bool = False
    ) -> torch.Tensor:
        """The forward pass of ``K`` models of **this architecture** at once (the one forward pass of
        the class: :meth:`forward` is this with ``K = 1`` and the module's own parameters).

        ``params``: stacked parameters keyed by ``named_parameters`` names, each with a leading model
        axis ``K`` (:func:`stack_parameters`); ``X``: ``(K, n, T, d)``, model ``k`` on its own inputs
        ``X[k]``. Returns the logits ``(K, n, out_dim)`` of row ``cls_index`` (at the last layer
        only that row's query is formed), or with ``all_rows`` the last layer ``Z^(L)``
        ``(K, n, T, d)``. The architecture (depth, heads, biases, dense map, activation, ``Pi``, score
        scale) is read from ``self``; its own parameter values are not used.
        """
        sigma = ACTIVATIONS[self.activation][0]
        s = self.score_scale
        Z = X
        for l in range(self.n_layers):
            pre = f"layers.{l}."
            g = lambda name: params.get(pre + name)  # noqa: E731
            last = l == self.n_layers - 1 and not all_rows
            if last:  # the read-out row only
                T = Z.shape[-2]
                if not -T <= self.cls_index < T:
                    raise ShapeError(
                        f"cls_index {self.cls_index} is outside a sequence of length T = {T}"
                    )
                z = Z[:, :, self.cls_index]  # (K, n, d)
                q = _plus(torch.einsum("knd,khde->knhe", z, g("W_Q")), g("b_Q"))
                k = _plus(torch.einsum("kntd,khde->knhte", Z, g("W_K")), g("b_K"), _HEAD_ROWS)
                v = _plus(torch.einsum("kntd,khde->knhte", Z, g("W_V")), g("b_V"), _HEAD_ROWS)
                A = torch.softmax(s * torch.einsum("knhe,knhte->knht", q, k), dim=-1)
                u = _plus(torch.einsum("knht,knhte,khef->knf", A, v, g("W_O")), g("b_O"))
                y = sigma(u)
                if self.dense:
                    y = _plus(torch.einsum("knf,kfg->kng", y, g("W_C")), g("b_C"))
                y = row_projection(y) if self.row_norm else y
                return _plus(torch.einsum("kng,kgo->kno", y, params["w"]), params.get("b_w"))
            q = _plus(torch.einsum("kntd,khde->knhte", Z, g("W_Q")), g("b_Q"), _HEAD_ROWS)
            k = _plus(torch.einsum("kntd,khde->knhte", Z, g("W_K")), g("b_K"), _HEAD_ROWS)
            v = _plus(torch.einsum("kntd,khde->knhte", Z, g("W_V")), g("b_V"), _HEAD_ROWS)
            A = torch.softmax(s * q @ k.transpose(-1, -2), dim=-1)  # (K, n, H, T, T)
            U = _plus(torch.einsum("knhte,khef->kntf", A @ v, g("W_O")), g("b_O"), _ROWS)
            Y = sigma(U)
            if self.dense:
                Y = _plus(torch.einsum("kntf,kfg->kntg", Y, g("W_C")), g("b_C"), _ROWS)
            Z = row_projection(Y) if self.row_norm else Y
        return Z

    def forward_stacked_tokens(
        self,
        params: dict[str, torch.Tensor],
        bits: torch.Tensor,
        tokens: torch.Tensor,
        encoding: torch.Tensor,
    ) -> torch.Tensor:
        """The structured ``[CLS]`` mode of :meth:`forward_stacked`, for inputs built from two tokens.

        Input ``k, i`` is the sequence with rows ``x_t = e_{b_t} + PE_t`` (``t < T``, ``b = bits[k, i]``
        of 0/1) and the ``[CLS]`` row ``e_cls + PE_T`` last: ``tokens`` ``(K, 3, d)`` holds the rows
        ``e_0, e_1, e_cls`` of each model, ``encoding`` ``(T + 1, d)`` the positions. Returns the
        logits ``(K, n, out_dim)`` of the read-out row, which must be the ``[CLS]`` row (``cls_index``
        ``-1`` or ``T``). It equals ``forward_stacked(params, X)`` on the embedded inputs ``X`` (a test
        compares them on every depth); for one layer it never forms the ``n x T`` attention matrix nor
        the embedded sequences:

        * the ``[CLS]`` query ``q`` is the same for every sequence, so the score of row ``t`` is
          ``u . x_t`` with ``u = s W_K q`` (the key bias adds a constant that softmax ignores), and
          ``u . x_t = u . e_0 + delta b_t + u . PE_t`` with ``delta = u . (e_1 - e_0)``;
        * hence ``exp(score_t - c) = w_t alpha_{b_t}`` with a **sequence-independent** weight
          ``w_t = exp(u . PE_t + u . e_0 + delta_+ - c)`` and ``alpha_b = exp(delta b - delta_+)``
          (``delta_+ = max(delta, 0)``; the shift ``c`` is the largest score any row can have, so every
          factor is at most 1 and nothing overflows);
        * because ``b_t`` is 0 or 1, the attention-weighted input splits into the rows holding a 0 and
          the rows holding a 1: ``sum_t w_t alpha_{b_t} x_t = alpha_0 ((1 - b) W_0) + alpha_1 (b W_1)``
          with the **sequence-independent** ``(T x d)`` matrices ``W_j = [w_t (e_j + PE_t)]_t``, and the
          normaliser likewise with ``w`` in place of ``W_j``. Both are sums of nonnegative weights, so
          nothing cancels in float32. (An earlier form, a shared term plus ``(alpha_1 - alpha_0) b W``,
          is a difference that can cancel when ``alpha_1 << alpha_0``; one run of a first sweep ended
          with a non-finite loss under it, cause not isolated.)

        Two batched matrix products ``(K, n, T) @ (K, T, H (d + 1))`` do all heads at once. The
        normaliser is at least ``min(alpha_0, alpha_1) max_t w_t``, which underflows only for scores
        about 80 apart in float32; the training loops stop a run whose loss is not finite. Deeper
        models need every row of the first layer, so for ``n_layers > 1`` the inputs are embedded and
        :meth:`forward_stacked` is called. Computed in the dtype of ``params``.
        """
        P = params
        dt = P["w"].dtype
        T = bits.shape[-1]
        if self.cls_index not in (-1, T):
            raise ShapeError(
                f"the structured mode reads out the [CLS] row (index -1 or T = {T}); "
                f"cls_index is {self.cls_index}"
            )
        if self.n_layers > 1:
            E = tokens.to(dt)
            X = E[
                torch.arange(E.shape[0], device=E.device)[:, None, None], bits.long()
            ]  # (K, n, T, d)
            cls = E[:, 2][:, None, None, :].expand(-1, bits.shape[1], 1, -1)
            X = torch.cat([X, cls], dim=2) + encoding.to(dt)
            return self.forward_stacked(P, X)
        g = lambda name: P.get("layers.0." + name)  # noqa: E731
        sigma = ACTIVATIONS[self.activation][0]
        score_scale = self.score_scale
        b = bits.to(dt)
        E = tokens.to(dt)
        pe = encoding.to(dt)
        K, n, T = b.shape
        x_cls = E[:, 2] + pe[-1]  # (K, d)
        q = _plus(torch.einsum("kd,khde->khe", x_cls, g("W_Q")), g("b_Q"), _SAME)  # (K, H, dh)
        u = score_scale * torch.einsum("khe,khde->khd", q, g("W_K"))  # (K, H, d)
        eu = torch.einsum("kjd,khd->khj", E, u)  # (K, H, 3)
        pu = torch.einsum("td,khd->kht", pe, u)  # (K, H, T+1)
        delta = eu[..., 1] - eu[..., 0]  # (K, H)
        dplus = torch.clamp(delta, min=0.0)
        s_cls = eu[..., 2] + pu[..., T]  # (K, H)
        top = pu[..., :T].max(-1).values + eu[..., 0] + dplus
        shift = torch.maximum(top, s_cls).detach()
        w = torch.exp(pu[..., :T] + (eu[..., 0] + dplus - shift)[..., None])  # (K, H, T)
        c = torch.exp(s_cls - shift)  # (K, H)
        a0, a1 = torch.exp(-dplus), torch.exp(delta - dplus)  # (K, H)
        # sum_t w_t alpha_{b_t} x_t = alpha_0 sum_t (1 - b_t) w_t (e_0 + PE_t) + alpha_1 sum_t b_t w_t (e_1 + PE_t):
        # two sums of nonnegative weights, no cancellation (the normaliser rides along as a last column)
        H, d = w.shape[1], pe.shape[1]
        cols = [
            torch.cat([w[..., None] * (E[:, None, j, None, :] + pe[:T]), w[..., None]], dim=-1)
            for j in (0, 1)
        ]  # 2 x (K, H, T, d+1)
        flat = [cj.permute(0, 2, 1, 3).reshape(K, T, H * (d + 1)) for cj in cols]
        s0 = torch.bmm(1 - b, flat[0]).view(K, n, H, d + 1)  # tokens equal to 0
        s1 = torch.bmm(b, flat[1]).view(K, n, H, d + 1)  # tokens equal to 1
        x_cls_h = c[..., None] * (E[:, None, 2] + pe[T])  # (K, H, d)
        num = a0[:, None, :, None] * s0 + a1[:, None, :, None] * s1  # (K, n, H, d+1)
        Z = num[..., d] + c[:, None]  # (K, n, H)
        xbar = (num[..., :d] + x_cls_h[:, None]) / Z[..., None]  # (K, n, H, d)
        v = _plus(torch.einsum("knhd,khde->knhe", xbar, g("W_V")), g("b_V"))
        o = _plus(torch.einsum("knhe,khef->knf", v, g("W_O")), g("b_O"))
        y = sigma(o)
        if self.dense:
            y = _plus(torch.einsum("knf,kfg->kng", y, g("W_C")), g("b_C"))
        y = row_projection(y) if self.row_norm else y
        return _plus(torch.einsum("kng,kgo->kno", y, P["w"]), P.get("b_w"))

    def readout(self, z: torch.Tensor) -> torch.Tensor:
        """``z w + b_w`` for rows ``z`` of shape ``(..., d)``."""
        out = z @ self.w
        return out + self.b_w if self.b_w is not None else out

    def forward(self, X) -> torch.Tensor:
        """``f(X)``: the readout of row ``cls_index`` of the last layer, ``(batch, T, d) -> (batch, out_dim)``."""
        X, single = self._check_input(X)
        out = self.forward_stacked(self._own_stack(), X[None])[0]
        return out[0] if single else out

    def predict_at(self, X, positions) -> torch.Tensor:
        """Masked-token prediction: the readout at row ``positions[b]`` of sequence ``b`` (``(batch, out_dim)``)."""
        Z, _ = self._check_input(X)
        Z = self.forward_rows(Z)
        pos = torch.as_tensor(positions, device=Z.device).long().reshape(-1)
        if pos.numel() != Z.shape[0]:
            raise ShapeError(
                f"positions must hold one index per sequence ({Z.shape[0]}), got {pos.numel()}"
            )
        T = Z.shape[1]
        if bool(((pos < -T) | (pos >= T)).any()):
            raise ShapeError(f"positions must lie in [-{T}, {T}), got {pos.tolist()}")
        return self.readout(Z[torch.arange(Z.shape[0], device=Z.device), pos % T])

    # ------------------------------------------------------------------ what the bounds see
    def effective_weights(self) -> EffectiveWeights:
        """The maps ``W_QK^h``, ``W_V^h W_O^h``, ``W_C``, ``w`` (augmented by the biases when ``bias``)."""
        QK, V, C = [], [], []
        for lay in self.layers:
            Q, K, Vv = lay.W_Q, lay.W_K, lay.W_V
            VO = Vv @ lay.W_O  # (H, d, d)
            if self.bias:
                Q = torch.cat([Q, lay.b_Q[:, None, :]], dim=1)  # (H, d+1, dh)
                K = torch.cat([K, lay.b_K[:, None, :]], dim=1)
                last = lay.b_V[:, None, :] @ lay.W_O  # (H, 1, d)
                last = torch.cat([last[:1] + lay.b_O, last[1:]], dim=0)  # b_O rides on head 1
                VO = torch.cat([VO, last], dim=1)
            QK.append(self.score_scale * Q @ K.transpose(-1, -2))
            V.append(VO)
            if self.dense:
                C.append(torch.cat([lay.W_C, lay.b_C[None]], 0) if self.bias else lay.W_C)
        w = torch.cat([self.w, self.b_w[None]], 0) if self.bias else self.w
        return EffectiveWeights(
            torch.stack(QK), torch.stack(V), torch.stack(C) if self.dense else None, w, self.bias
        )

    @torch.no_grad()
    def weight_norms(self) -> dict:
        """Norms the bounds need: for ``QK`` ``(L, H)``, ``V`` ``(L, H)``, ``C`` ``(L,)`` (absent when
        ``dense=False``) and ``w`` (scalar), a dict of :func:`matrix_norms`; ``raw`` maps every
        parameter name to its entrywise l1 norm (what the authors' code prints, biases included).
        """
        E = self.effective_weights()
        out = {
            "QK": matrix_norms(E.QK),
            "V": matrix_norms(E.V),
            "w": matrix_norms(E.w),
            "raw": {n: float(p.abs().sum()) for n, p in self.named_parameters()},
        }
        if E.C is not None:
            out["C"] = matrix_norms(E.C)
        return out

    def extra_repr(self) -> str:
        return (
            f"d={self.d}, n_layers={self.n_layers}, n_heads={self.n_heads}, d_head={self.d_head}, "
            f"out_dim={self.out_dim}, activation={self.activation!r}, row_norm={self.row_norm}, "
            f"bias={self.bias}, dense={self.dense}, score_scale={self.score_scale:.4g}, "
            f"cls_index={self.cls_index}"
        )
