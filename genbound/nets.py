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

__all__ = ["ACTIVATIONS", "activation_lipschitz", "row_projection", "EffectiveWeights",
           "ReferenceTransformer", "matrix_norms", "forward_effective", "augment"]


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
        raise ArchitectureError(f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}")
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
        "sqrt_din": torch.full(M.shape[:-2], math.sqrt(M.shape[-2]), dtype=M.dtype, device=M.device),
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


def forward_effective(QK, V, C, w, X, *, bias: bool = False, activation: str = "relu",
                      row_norm: bool = False, positions=-1, all_rows: bool = False) -> torch.Tensor:
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
        Zh = Za.unsqueeze(1)                                       # (B, 1, T, d_in)
        A = torch.softmax((Zh @ QK[:, l]) @ Zh.transpose(-1, -2), dim=-1)   # (B, H, T, T)
        U = ((A @ Zh) @ V[:, l]).sum(1)                            # sum over heads
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
    """One multi-head self-attention layer followed by sigma, the dense map and (optionally) Pi."""

    def __init__(self, d, H, dh, *, bias, dense, gen, dtype, device):
        super().__init__()
        kw = dict(dtype=dtype, device=device)

        def rnd(*shape, fan_in):
            return nn.Parameter(torch.randn(*shape, generator=gen, dtype=dtype).to(device) / math.sqrt(fan_in))

        self.W_Q, self.W_K, self.W_V = (rnd(H, d, dh, fan_in=d) for _ in range(3))
        self.W_O = rnd(H, dh, d, fan_in=H * dh)
        self.W_C = rnd(d, d, fan_in=d) if dense else None
        if bias:
            self.b_Q, self.b_K, self.b_V = (nn.Parameter(torch.zeros(H, dh, **kw)) for _ in range(3))
            self.b_O = nn.Parameter(torch.zeros(d, **kw))
            self.b_C = nn.Parameter(torch.zeros(d, **kw)) if dense else None
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = self.b_C = None

    def attention(self, Z: torch.Tensor, scale: float) -> torch.Tensor:
        """``u_i`` of the module docstring for every row: ``(B, T, d) -> (B, T, d)``, all heads at once."""
        q = torch.einsum("btd,hde->bhte", Z, self.W_Q)
        k = torch.einsum("btd,hde->bhte", Z, self.W_K)
        v = torch.einsum("btd,hde->bhte", Z, self.W_V)
        if self.b_Q is not None:
            q = q + self.b_Q[None, :, None, :]
            k = k + self.b_K[None, :, None, :]
            v = v + self.b_V[None, :, None, :]
        A = torch.softmax(scale * q @ k.transpose(-1, -2), dim=-1)        # (B, H, T, T)
        U = torch.einsum("bhte,hef->btf", A @ v, self.W_O)                 # sum over heads
        return U + self.b_O if self.b_O is not None else U

    def forward(self, Z, scale, sigma, row_norm):
        Y = sigma(self.attention(Z, scale))
        if self.W_C is not None:
            Y = Y @ self.W_C
            if self.b_C is not None:
                Y = Y + self.b_C
        return row_projection(Y) if row_norm else Y


class ReferenceTransformer(nn.Module):
    """The transformer of Part II as a plain ``torch.nn.Module`` (see the module docstring for the math).

    Arguments: ``d`` is the token dimension (model width); ``n_layers``, ``n_heads`` are ``L`` and
    ``H``; ``d_head`` is the per-head width (default ``d // n_heads``, at least 1); ``out_dim`` the width
    of the readout; ``activation`` a key of :data:`ACTIVATIONS`; ``row_norm`` applies ``Pi`` after every
    layer; with ``bias`` every linear map has a bias; ``score_scale`` is ``s`` (default
    ``1/sqrt(d_head)``); ``cls_index`` is the row that is read out (default the last, as in the authors'
    code); ``dense`` includes ``W_C`` in every layer; ``seed`` seeds the (normal, ``1/sqrt(fan_in)``)
    initialisation; biases start at zero.

    >>> net = ReferenceTransformer(3, n_layers=2, row_norm=True, bias=True, seed=1)
    >>> X = torch.randn(2, 7, 3, dtype=torch.float64)
    >>> bool(torch.allclose(net(X), net.forward_rows(X)[:, -1] @ net.w + net.b_w))
    True
    """

    def __init__(self, d: int, *, n_layers: int = 1, n_heads: int = 1, d_head: int | None = None,
                 out_dim: int = 1, activation: str = "relu", row_norm: bool = False, bias: bool = False,
                 score_scale: float | None = None, cls_index: int = -1, dense: bool = True,
                 dtype=torch.float64, device=None, seed: int | None = 0):
        super().__init__()
        self.d = check_positive_int(d, "d")
        self.n_layers = check_positive_int(n_layers, "n_layers")
        self.n_heads = check_positive_int(n_heads, "n_heads")
        self.d_head = max(1, self.d // self.n_heads) if d_head is None else check_positive_int(d_head, "d_head")
        self.out_dim = check_positive_int(out_dim, "out_dim")
        self.activation = str(activation)
        self.L_sigma = activation_lipschitz(self.activation)
        self.row_norm, self.bias, self.dense = bool(row_norm), bool(bias), bool(dense)
        self.score_scale = (1.0 / math.sqrt(self.d_head) if score_scale is None
                            else check_real(score_scale, "score_scale", lo=0.0, lo_open=True))
        if isinstance(cls_index, bool) or not isinstance(cls_index, int):
            raise ParameterError(f"cls_index must be an integer row index, got {cls_index!r}")
        self.cls_index = cls_index
        dtype = resolve_dtype(dtype)
        device = resolve_device(device)
        gen = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self.layers = nn.ModuleList(
            _Layer(self.d, self.n_heads, self.d_head, bias=self.bias, dense=self.dense, gen=gen,
                   dtype=dtype, device=device) for _ in range(self.n_layers))
        self.w = nn.Parameter(torch.randn(self.d, self.out_dim, generator=gen, dtype=dtype).to(device)
                              / math.sqrt(self.d))
        self.b_w = nn.Parameter(torch.zeros(self.out_dim, dtype=dtype, device=device)) if self.bias else None

    # ------------------------------------------------------------------ forward pass
    def _check_input(self, X) -> tuple[torch.Tensor, bool]:
        p = self.w
        X = as_tensor(X, "X", dtype=p.dtype, device=p.device)
        single = X.ndim == 2
        if single:
            X = X.unsqueeze(0)
        if X.ndim != 3 or X.shape[-1] != self.d:
            raise ShapeError(f"X must have shape (batch, T, {self.d}) or (T, {self.d}), got {tuple(X.shape)}")
        return X, single

    def forward_rows(self, X) -> torch.Tensor:
        """All rows of the last layer, ``Z^(L)``: ``(batch, T, d)`` (or ``(T, d)`` for one sequence)."""
        Z, single = self._check_input(X)
        sigma = ACTIVATIONS[self.activation][0]
        for layer in self.layers:
            Z = layer(Z, self.score_scale, sigma, self.row_norm)
        return Z[0] if single else Z

    def readout(self, z: torch.Tensor) -> torch.Tensor:
        """``z w + b_w`` for rows ``z`` of shape ``(..., d)``."""
        out = z @ self.w
        return out + self.b_w if self.b_w is not None else out

    def forward(self, X) -> torch.Tensor:
        """``f(X)``: the readout of row ``cls_index`` of the last layer, ``(batch, T, d) -> (batch, out_dim)``."""
        Z = self.forward_rows(X)
        T = Z.shape[-2]
        if not -T <= self.cls_index < T:
            raise ShapeError(f"cls_index {self.cls_index} is outside a sequence of length T = {T}")
        return self.readout(Z[..., self.cls_index, :])

    def predict_at(self, X, positions) -> torch.Tensor:
        """Masked-token prediction: the readout at row ``positions[b]`` of sequence ``b`` (``(batch, out_dim)``)."""
        Z, _ = self._check_input(X)
        Z = self.forward_rows(Z)
        pos = torch.as_tensor(positions, device=Z.device).long().reshape(-1)
        if pos.numel() != Z.shape[0]:
            raise ShapeError(f"positions must hold one index per sequence ({Z.shape[0]}), got {pos.numel()}")
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
            VO = Vv @ lay.W_O                                         # (H, d, d)
            if self.bias:
                Q = torch.cat([Q, lay.b_Q[:, None, :]], dim=1)       # (H, d+1, dh)
                K = torch.cat([K, lay.b_K[:, None, :]], dim=1)
                last = lay.b_V[:, None, :] @ lay.W_O                  # (H, 1, d)
                last = torch.cat([last[:1] + lay.b_O, last[1:]], dim=0)  # b_O rides on head 1
                VO = torch.cat([VO, last], dim=1)
            QK.append(self.score_scale * Q @ K.transpose(-1, -2))
            V.append(VO)
            if self.dense:
                C.append(torch.cat([lay.W_C, lay.b_C[None]], 0) if self.bias else lay.W_C)
        w = torch.cat([self.w, self.b_w[None]], 0) if self.bias else self.w
        return EffectiveWeights(torch.stack(QK), torch.stack(V), torch.stack(C) if self.dense else None,
                                w, self.bias)

    @torch.no_grad()
    def proxy_weights(self):
        """The network in the four-matrix form of Part III (:class:`~genbound.weights.TransformerWeights`).

        Per layer and head the query-key form ``QK_h`` and the value-output map ``V_h`` of
        :meth:`effective_weights`; the block "``sigma``, then the dense map" is a feed-forward block
        ``phi(Z M_in) M_out`` with ``M_in = I`` and ``M_out = W_C``, exactly. With biases every map acts on
        the augmented row ``[z, 1]``; maps whose output has no constant coordinate are padded with zero
        columns to square ``(d_in x d_in)`` matrices, which changes no singular value and no column norm.
        Needs ``dense=True``.
        """
        from .weights import TransformerWeights

        if not self.dense:
            raise ArchitectureError("proxy_weights needs the dense map W_C (dense=True)")
        E = self.effective_weights()
        n = E.QK.shape[-1]

        def pad(M):
            return torch.nn.functional.pad(M, (0, M.shape[-2] - M.shape[-1]))

        m_in = torch.eye(n, dtype=E.QK.dtype, device=E.QK.device).expand(self.n_layers, n, n)
        return TransformerWeights.from_proxy_matrices(E.QK, pad(E.V), m_in, pad(E.C))

    @torch.no_grad()
    def weight_norms(self) -> dict:
        """Norms the bounds need: for ``QK`` ``(L, H)``, ``V`` ``(L, H)``, ``C`` ``(L,)`` (absent when
        ``dense=False``) and ``w`` (scalar), a dict of :func:`matrix_norms`; ``raw`` maps every
        parameter name to its entrywise l1 norm (what the authors' code prints, biases included).
        """
        E = self.effective_weights()
        out = {"QK": matrix_norms(E.QK), "V": matrix_norms(E.V), "w": matrix_norms(E.w),
               "raw": {n: float(p.abs().sum()) for n, p in self.named_parameters()}}
        if E.C is not None:
            out["C"] = matrix_norms(E.C)
        return out

    def extra_repr(self) -> str:
        return (f"d={self.d}, n_layers={self.n_layers}, n_heads={self.n_heads}, d_head={self.d_head}, "
                f"out_dim={self.out_dim}, activation={self.activation!r}, row_norm={self.row_norm}, "
                f"bias={self.bias}, dense={self.dense}, score_scale={self.score_scale:.4g}, "
                f"cls_index={self.cls_index}")
