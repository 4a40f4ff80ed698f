"""Transformer weights in the row-vector orientation of the spectrum-adaptive bound (Part III).

This is the *weights* stage of genbound's data flow: it turns a BERT-family checkpoint folder, an
``nn.Module`` or a list of proxy matrices into one architecture-neutral :class:`TransformerWeights`,
and computes from it, layer by layer, the :class:`Spectra` (singular values and ``(2,1)`` group norms)
that every bound of Part III needs. Book: :ref:`ch-sakai-trained` (the trained-transformer chapter of
Part III) and :ref:`ch-schatten`.

Conventions (the authors' proxies, Sakai & Imaizumi 2026, code ``extract.py``). A torch ``nn.Linear``
weight has shape ``(out, in)``. With ``q, k, v, o`` the query, key, value and attention-output weights,
``f_in, f_out`` the feed-forward ``intermediate.dense`` and ``output.dense`` weights, ``d_head = N / H``
and ``s_h`` the rows of head ``h``:

=========  ====================================  ===================================
matrix     formula                               shape, rank
=========  ====================================  ===================================
``QK``     ``q[s_h, :]^T  k[s_h, :]``            ``N x N``, rank ``<= d_head``
``V``      ``v[s_h, :]^T  (o^T)[s_h, :]``        ``N x N``, rank ``<= d_head``
``M_in``   ``f_in^T``                            ``N x d_ff``
``M_out``  ``f_out^T``                           ``d_ff x N``
=========  ====================================  ===================================

Biases, LayerNorm and the ``1/sqrt(d_head)`` score scale are left out, unless
``attention_scale=True`` multiplies every ``QK`` by ``1/sqrt(d_head)``.

How the spectra are computed (``method="core"``, the default): a head's product ``A B`` with thin
factors ``A`` (``N x d_head``) and ``B`` (``d_head x N``) is never formed. With thin QR factorisations
``A = Q_1 R_1`` and ``B^T = Q_2 R_2`` its nonzero singular values are those of the ``d_head x d_head``
core ``R_1 R_2^T``, and its column norms are those of ``R_1 B`` (``Q_1`` has orthonormal columns), so
``||A B||_{2,1}`` is exact too. All heads of a layer go through one batched QR and one batched
``svdvals``. A feed-forward matrix is first reduced by a Householder QR of its tall orientation
(``d_ff x N`` when ``d_ff >= N``) to an ``N x N`` triangle ``R`` with the same singular values, and
``svdvals(R)`` is taken: backward stable, so small singular values are as accurate as a full SVD gives
them (the eigenvalues of the Gram matrix are not: their error is ``eps * sigma_1^2 / sigma_i``).
``method="dense"`` is the authors' pipeline: every product is formed densely and a full float64 SVD
is taken; rank-deficient products then carry a round-off "noise floor" of tiny singular values.

Checkpoints are read lazily, tensor by tensor, with ``safetensors.safe_open``, so the peak memory
of :meth:`TransformerWeights.spectra` stays near one layer, not the whole model.

>>> import torch
>>> from genbound.weights import TransformerWeights
>>> g = torch.Generator().manual_seed(0)
>>> qk = torch.randn(2, 3, 8, 8, generator=g, dtype=torch.float64)   # 2 layers, 3 heads, N = 8
>>> m_in = torch.eye(8, 16, dtype=torch.float64).expand(2, 8, 16)           # N x d_ff per layer
>>> w = TransformerWeights.from_proxy_matrices(qk, qk, m_in, m_in.transpose(1, 2))
>>> (w.n_layers, w.n_heads, w.hidden, w.d_ff, w.d_head)
(2, 3, 8, 16, None)
>>> w.spectra().m_in.tolist()[0]
[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from ._validate import as_tensor, check_positive_int
from .device import resolve_device
from .errors import ArchitectureError, InputError, NonFiniteError, ParameterError, ShapeError

__all__ = [
    "KINDS",
    "HEAD_KINDS",
    "MLP_HEAD",
    "Spectra",
    "TransformerWeights",
    "load_weights",
    "bert_weights_from_state_dict",
    "bert_tensor_names",
]

#: The four matrix types of a layer, in the order of every table.
KINDS = ("QK", "V", "M_in", "M_out")
#: The per-head matrix types.
HEAD_KINDS = ("QK", "V")
#: The ``head`` value of the layer-wise feed-forward matrices in every table (the authors' convention).
MLP_HEAD = -1

#: Short role -> BERT parameter name (without the ``encoder.layer.{i}.`` part and ``.weight``).
_BERT_ROLES = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "attn_out": "attention.output.dense",
    "ff_in": "intermediate.dense",
    "ff_out": "output.dense",
}
_ANCHOR = "encoder.layer.0.attention.self.query.weight"


def bert_tensor_names(layer: int, prefix: str = "") -> dict[str, str]:
    """Full parameter names of one BERT layer's six weight matrices, by role.

    >>> bert_tensor_names(2, "bert.")["ff_in"]
    'bert.encoder.layer.2.intermediate.dense.weight'
    """
    return {role: f"{prefix}encoder.layer.{layer}.{name}.weight" for role, name in _BERT_ROLES.items()}


# --------------------------------------------------------------------------------------------------
# spectra


@dataclass(frozen=True)
class Spectra:
    """Singular values and ``(2,1)`` norms of every matrix of a transformer, all on one device.

    Singular values are descending. ``qk`` and ``v`` have shape ``(L, H, K)``: ``K = min(N, d_head)``
    core values for ``method="core"`` (the remaining ``N - K`` singular values of the ``N x N`` product
    are exact zeros), ``K = N`` for ``method="dense"``. ``m_in`` and ``m_out`` have shape
    ``(L, min(N, d_ff))``. ``*_norm21`` hold ``||W||_{2,1}`` (sum of column l2 norms in the row-vector
    orientation), shape ``(L, H)`` or ``(L,)``. ``size`` maps a kind to ``min(rows, cols)`` of its
    matrices, the size used by the numerical-rank threshold.
    """

    qk: torch.Tensor
    v: torch.Tensor
    m_in: torch.Tensor
    m_out: torch.Tensor
    qk_norm21: torch.Tensor
    v_norm21: torch.Tensor
    m_in_norm21: torch.Tensor
    m_out_norm21: torch.Tensor
    hidden: int
    d_ff: int
    method: str

    @property
    def n_layers(self) -> int:
        return int(self.qk.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.qk.shape[1])

    @property
    def device(self) -> torch.device:
        return self.qk.device

    @property
    def size(self) -> dict[str, int]:
        k_ff = min(self.hidden, self.d_ff)
        return {"QK": self.hidden, "V": self.hidden, "M_in": k_ff, "M_out": k_ff}

    def svals(self, kind: str) -> torch.Tensor:
        """Singular values of one kind (``"QK"``, ``"V"``, ``"M_in"``, ``"M_out"``)."""
        return getattr(self, _attr(kind))

    def norm21(self, kind: str) -> torch.Tensor:
        """``||W||_{2,1}`` of every matrix of one kind."""
        return getattr(self, _attr(kind) + "_norm21")

    def spectral_norms(self) -> dict[str, torch.Tensor]:
        """``C_2`` (largest singular value) of every matrix: ``{"QK": (L,H), "V": (L,H), "M_in": (L,), "M_out": (L,)}``."""
        return {k: self.svals(k)[..., 0] for k in KINDS}

    def to(self, device) -> "Spectra":
        """A copy on another device."""
        dev = resolve_device(device)
        kw = {f: getattr(self, f).to(dev) for f in ("qk", "v", "m_in", "m_out", "qk_norm21", "v_norm21",
                                                   "m_in_norm21", "m_out_norm21")}
        return Spectra(**kw, hidden=self.hidden, d_ff=self.d_ff, method=self.method)


def _attr(kind: str) -> str:
    names = {"QK": "qk", "V": "v", "M_in": "m_in", "M_out": "m_out"}
    if kind not in names:
        raise ParameterError(f"unknown matrix kind {kind!r}; expected one of {KINDS}")
    return names[kind]


def _colnorm_sum(M: torch.Tensor) -> torch.Tensor:
    """``||M||_{2,1}``: sum over the columns of their l2 norms (batched over leading axes)."""
    return torch.linalg.vector_norm(M, ord=2, dim=-2).sum(dim=-1)


def _svdvals(A: torch.Tensor, driver: str | None = None) -> torch.Tensor:
    """``torch.linalg.svdvals`` with an optional cuSOLVER driver (ignored on the CPU)."""
    if driver is not None and A.is_cuda:
        return torch.linalg.svdvals(A, driver=driver)
    return torch.linalg.svdvals(A)


def _head_summary(left: torch.Tensor, right: torch.Tensor, method: str, driver: str | None = None):
    """Singular values (descending) and ``(2,1)`` norms of the products ``left @ right`` of a stack.

    ``left`` is ``(H, N, r)``, ``right`` is ``(H, r, N)``. ``method="core"`` uses thin QR cores,
    ``"dense"`` forms the products and takes a full SVD.
    """
    if method == "dense":
        P = left @ right
        return _svdvals(P, driver), _colnorm_sum(P)
    R1 = torch.linalg.qr(left, mode="r").R  # (H, k1, r), k1 = min(N, r)
    R2 = torch.linalg.qr(right.transpose(-1, -2), mode="r").R  # (H, k2, r)
    s = _svdvals(R1 @ R2.transpose(-1, -2), driver)
    # columns of left @ right = Q1 (R1 @ right); Q1 has orthonormal columns
    return s, _colnorm_sum(R1 @ right)


def _dense_summary(P: torch.Tensor, method: str, driver: str | None = None):
    """Singular values and ``(2,1)`` norm of dense matrices (batched); see :func:`_mlp_svals`."""
    return _mlp_svals(P, method, driver), _colnorm_sum(P)


def _mlp_svals(M: torch.Tensor, method: str, driver: str | None = None) -> torch.Tensor:
    """Singular values of ``M`` (``(..., rows, cols)``).

    ``"core"``: Householder QR of the tall orientation, then ``svdvals`` of the square triangle.
    ``"dense"``: ``svdvals`` of ``M`` as it is (the authors' call).
    """
    if method == "dense":
        return _svdvals(M, driver)
    tall = M if M.shape[-2] >= M.shape[-1] else M.transpose(-1, -2)
    if tall.shape[-2] == tall.shape[-1]:
        return _svdvals(tall, driver)
    return _svdvals(torch.linalg.qr(tall, mode="r").R, driver)


def _sorted_desc(s: torch.Tensor) -> torch.Tensor:
    return torch.sort(s, dim=-1, descending=True).values


# --------------------------------------------------------------------------------------------------
# storage back-ends: where the raw tensors of a layer come from


class _TensorStore:
    """Raw BERT weight tensors by (layer, role), in the torch ``(out, in)`` layout."""

    def get(self, layer: int, role: str) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def release(self) -> None:
        """Drop anything cached between calls (file handles)."""


class _DictStore(_TensorStore):
    def __init__(self, tensors: dict[str, torch.Tensor], prefix: str, layer_ids: Sequence[int]):
        self.tensors, self.prefix, self.layer_ids = tensors, prefix, list(layer_ids)

    def get(self, layer, role):
        name = bert_tensor_names(self.layer_ids[layer], self.prefix)[role]
        return self.tensors[name].detach()


class _SafetensorsStore(_TensorStore):
    """Reads one tensor at a time with ``safe_open``, so only that tensor is ever resident."""

    def __init__(self, files: dict[str, Path], prefix: str, layer_ids: Sequence[int]):
        self.files, self.prefix, self.layer_ids = files, prefix, list(layer_ids)

    def get(self, layer, role):
        from safetensors import safe_open

        name = bert_tensor_names(self.layer_ids[layer], self.prefix)[role]
        # a fresh handle per tensor: its memory map (and the pages it touched) is released at once
        with safe_open(str(self.files[name]), framework="pt", device="cpu") as f:
            return f.get_tensor(name)


@dataclass(frozen=True)
class _DenseHeads:
    """Proxy matrices given directly: dense heads ``(L, H, N, N)`` and feed-forward matrices."""

    qk: torch.Tensor
    v: torch.Tensor
    m_in: torch.Tensor
    m_out: torch.Tensor


# --------------------------------------------------------------------------------------------------
# the weights object


@dataclass(frozen=True)
class TransformerWeights:
    """The per-layer, per-head matrices of a BERT-family transformer, in row-vector orientation.

    Build one with :func:`load_weights` (checkpoint folder or ``nn.Module``),
    :func:`bert_weights_from_state_dict` or :meth:`from_proxy_matrices`. Checkpoint-backed objects
    hold no weights: each layer is read when needed. ``d_head`` is ``None`` when the heads were given
    as dense proxy matrices.
    """

    n_layers: int
    n_heads: int
    hidden: int
    d_head: int | None
    d_ff: int
    source: str
    attention_scale: bool = False
    _store: object = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_proxy_matrices(cls, qk, v, m_in, m_out, *, source: str = "proxy matrices") -> "TransformerWeights":
        """Weights from the proxy matrices themselves (row-vector orientation).

        ``qk[l][h]`` and ``v[l][h]`` are the ``N x N`` query-key and value-output matrices of head
        ``h`` in layer ``l`` (nested lists or tensors of shape ``(L, H, N, N)``), ``m_in[l]`` is
        ``N x d_ff`` and ``m_out[l]`` is ``d_ff x N``. Everything is copied to float64.

        >>> import torch
        >>> w = TransformerWeights.from_proxy_matrices([[torch.eye(4)]], [[torch.eye(4)]],
        ...                                            [torch.ones(4, 6)], [torch.ones(6, 4)])
        >>> w.matrix("M_out", 0).shape
        torch.Size([6, 4])
        """
        # weights are data here, never differentiated: detach (an nn.Parameter may be passed directly)
        QK = _stack_heads(qk, "qk").detach()
        V = _stack_heads(v, "v").detach()
        if QK.shape != V.shape:
            raise ShapeError(f"qk has shape {tuple(QK.shape)} but v has shape {tuple(V.shape)}; they must agree")
        L, H, N, N2 = QK.shape
        if N != N2:
            raise ShapeError(f"query-key matrices must be square N x N, got {N} x {N2}")
        Min = _stack_layers(m_in, "m_in").detach()
        Mout = _stack_layers(m_out, "m_out").detach()
        if Min.shape[0] != L or Mout.shape[0] != L:
            raise ShapeError(f"qk has {L} layers but m_in has {Min.shape[0]} and m_out has {Mout.shape[0]}")
        if Min.shape[1] != N:
            raise ShapeError(f"m_in[l] must be N x d_ff with N = {N}, got {tuple(Min.shape[1:])}")
        d_ff = Min.shape[2]
        if tuple(Mout.shape[1:]) != (d_ff, N):
            raise ShapeError(f"m_out[l] must be d_ff x N = {d_ff} x {N}, got {tuple(Mout.shape[1:])}")
        return cls(n_layers=L, n_heads=H, hidden=N, d_head=None, d_ff=d_ff, source=source,
                   _store=_DenseHeads(QK, V, Min, Mout))

    # ---- access to matrices -------------------------------------------------------------------
    @property
    def is_dense(self) -> bool:
        """Whether the heads are held as dense ``N x N`` proxy matrices (no thin factors)."""
        return isinstance(self._store, _DenseHeads)

    def _check_layer(self, layer) -> int:
        layer = check_positive_int(layer, "layer", minimum=0)
        if layer >= self.n_layers:
            raise ParameterError(f"layer must be < n_layers = {self.n_layers}, got {layer}")
        return layer

    def head_factors(self, kind: str, layer: int, *, device=None):
        """Thin factors ``(left, right)`` of every head of one layer: ``left`` ``(H, N, d_head)``,
        ``right`` ``(H, d_head, N)``, float64, with ``left[h] @ right[h]`` the head's ``QK`` or ``V``.
        """
        layer = self._check_layer(layer)
        if kind not in HEAD_KINDS:
            raise ParameterError(f"kind must be one of {HEAD_KINDS}, got {kind!r}")
        if self.is_dense:
            raise ArchitectureError("these weights were given as dense proxy matrices: they have no thin factors")
        dev = resolve_device(device)
        H, N, dh = self.n_heads, self.hidden, self.d_head
        if kind == "QK":
            a = self._raw(layer, "query", dev).reshape(H, dh, N)
            b = self._raw(layer, "key", dev).reshape(H, dh, N)
            left = a.transpose(-1, -2)
            if self.attention_scale:
                left = left / math.sqrt(dh)
            return left, b
        a = self._raw(layer, "value", dev).reshape(H, dh, N)
        o = self._raw(layer, "attn_out", dev)  # (N, H*dh): rows of o^T for head h are o[:, s_h]^T
        return a.transpose(-1, -2), o.transpose(0, 1).reshape(H, dh, N)

    def matrix(self, kind: str, layer: int, head: int | None = None, *, device=None) -> torch.Tensor:
        """One proxy matrix as a dense float64 tensor (for inspection and plots, not for speed).

        ``QK``/``V`` need ``head`` and are ``N x N``; ``M_in`` is ``N x d_ff``; ``M_out`` is ``d_ff x N``.
        """
        layer = self._check_layer(layer)
        dev = resolve_device(device)
        if kind in HEAD_KINDS:
            if head is None:
                raise ParameterError(f"{kind} is a per-head matrix: pass head=0..{self.n_heads - 1}")
            head = check_positive_int(head, "head", minimum=0)
            if head >= self.n_heads:
                raise ParameterError(f"head must be < n_heads = {self.n_heads}, got {head}")
            if self.is_dense:
                return getattr(self._store, _attr(kind))[layer, head].to(dev)
            left, right = self.head_factors(kind, layer, device=dev)
            return left[head] @ right[head]
        if kind not in KINDS:
            raise ParameterError(f"unknown matrix kind {kind!r}; expected one of {KINDS}")
        return self._mlp_matrix(kind, layer, dev)

    def _raw(self, layer: int, role: str, dev) -> torch.Tensor:
        """One raw weight tensor of layer ``layer`` in float64 on ``dev``, checked for finiteness."""
        t = self._store.get(layer, role).to(device=dev, dtype=torch.float64)
        if not (bool(torch.isfinite(t.max())) and bool(torch.isfinite(t.min()))):  # NaN/inf propagate
            name = bert_tensor_names(getattr(self._store, "layer_ids", range(self.n_layers))[layer],
                                     getattr(self._store, "prefix", ""))[role]
            raise NonFiniteError(f"{self.source}: {name!r} holds non-finite values (NaN or inf)")
        return t

    def _mlp_matrix(self, kind: str, layer: int, dev) -> torch.Tensor:
        if self.is_dense:
            return getattr(self._store, _attr(kind))[layer].to(dev)
        role = "ff_in" if kind == "M_in" else "ff_out"
        return self._raw(layer, role, dev).transpose(0, 1)

    # ---- spectra ------------------------------------------------------------------------------
    def layer_spectra(self, layer: int, *, device=None, method: str = "core", svd_driver: str | None = None) -> dict:
        """Singular values and ``(2,1)`` norms of one layer's matrices (see :class:`Spectra`)."""
        layer = self._check_layer(layer)
        method = _check_method(method)
        dev = resolve_device(device)
        out = {}
        if self.is_dense:
            for kind in HEAD_KINDS:
                s, n21 = _dense_summary(getattr(self._store, _attr(kind))[layer].to(dev), method, svd_driver)
                out[kind] = (_sorted_desc(s), n21)
        else:
            for kind in HEAD_KINDS:
                left, right = self.head_factors(kind, layer, device=dev)
                s, n21 = _head_summary(left, right, method, svd_driver)
                del left, right
                out[kind] = (_sorted_desc(s), n21)
                _return_freed_memory()
        for kind in ("M_in", "M_out"):
            M = self._mlp_matrix(kind, layer, dev)
            n21 = _colnorm_sum(M)
            s = _mlp_svals(M, method, svd_driver)
            del M
            out[kind] = (_sorted_desc(s), n21)
            _return_freed_memory()
        return out

    def spectra(self, *, device=None, method: str = "core", progress: bool = False,
                cache: bool = True, svd_driver: str | None = None) -> Spectra:
        """Singular values and ``(2,1)`` norms of every matrix, computed layer by layer.

        ``method="core"`` (exact, fast: thin-QR cores for heads, QR + SVD of the triangle for the
        feed-forward matrices) or ``"dense"`` (the authors' pipeline: dense products, full SVD).
        ``progress=True`` shows a tqdm bar over layers on stderr. Results are cached per
        ``(device, method)`` on this object. ``svd_driver`` picks the cuSOLVER driver on CUDA
        (``"gesvd"``, ``"gesvdj"``; default torch's choice); it is ignored on the CPU.
        """
        method = _check_method(method)
        dev = resolve_device(device)
        key = (str(dev), method)
        if cache and key in self._cache:
            return self._cache[key]
        layers = range(self.n_layers)
        if progress:
            from tqdm.auto import tqdm

            layers = tqdm(layers, desc="layers", unit="layer", file=_stderr(), leave=False)
        if svd_driver not in (None, "gesvd", "gesvdj", "gesvda"):
            raise ParameterError(f"svd_driver must be None, 'gesvd', 'gesvdj' or 'gesvda', got {svd_driver!r}")
        per = []
        for l in layers:
            per.append(self.layer_spectra(l, device=dev, method=method, svd_driver=svd_driver))
            _return_freed_memory()  # keeps the peak near one layer (see _return_freed_memory)
        stack = {k: (torch.stack([p[k][0] for p in per]), torch.stack([p[k][1] for p in per])) for k in KINDS}
        sp = Spectra(qk=stack["QK"][0], v=stack["V"][0], m_in=stack["M_in"][0], m_out=stack["M_out"][0],
                     qk_norm21=stack["QK"][1], v_norm21=stack["V"][1], m_in_norm21=stack["M_in"][1],
                     m_out_norm21=stack["M_out"][1], hidden=self.hidden, d_ff=self.d_ff, method=method)
        if cache:
            self._cache[key] = sp
        return sp

    def layer_bytes(self) -> int:
        """Bytes of the six weight matrices of one layer in float64 (what one layer costs in memory)."""
        N, F = self.hidden, self.d_ff
        return 8 * (4 * N * N + 2 * N * F)


_LIBC = None


def _return_freed_memory() -> None:
    """Give the heap pages freed by the last layer back to the OS (glibc ``malloc_trim(0)``).

    glibc raises its mmap threshold after large blocks are freed, so later layer-sized temporaries
    come from the heap, which fragments: without this call the resident set of a 12-layer BERT-base
    pass grows to several layers' worth (measured: ~200-300 MB instead of ~47 MB above the
    interpreter). ``malloc_trim`` only releases free memory; it changes no allocator setting. A no-op
    where glibc is not available.
    """
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC = lib if hasattr(lib, "malloc_trim") else False
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


def _stderr():
    import sys

    return sys.stderr


def _check_method(method: str) -> str:
    if method not in ("core", "dense"):
        raise ParameterError(f"method must be 'core' or 'dense', got {method!r}")
    return method


def _stack_heads(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor) or not isinstance(x, (list, tuple)):
        t = as_tensor(x, name, ndim=4)
        return t
    if len(x) == 0:
        raise ShapeError(f"{name} is empty: expected {name}[l][h] for at least one layer and head")
    layers = []
    for l, heads in enumerate(x):
        if not isinstance(heads, (list, tuple)) or len(heads) == 0:
            raise ShapeError(f"{name}[{l}] must be a non-empty list of per-head matrices")
        mats = [as_tensor(m, f"{name}[{l}][{h}]", ndim=2) for h, m in enumerate(heads)]
        shapes = {tuple(m.shape) for m in mats}
        if len(shapes) != 1:
            raise ShapeError(f"{name}[{l}] holds matrices of different shapes {sorted(shapes)}")
        layers.append(torch.stack(mats))
    if len({tuple(t.shape) for t in layers}) != 1:
        raise ShapeError(f"the layers of {name} differ in head count or matrix shape")
    return torch.stack(layers)


def _stack_layers(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor) or not isinstance(x, (list, tuple)):
        return as_tensor(x, name, ndim=3)
    if len(x) == 0:
        raise ShapeError(f"{name} is empty: expected one matrix per layer")
    mats = [as_tensor(m, f"{name}[{l}]", ndim=2) for l, m in enumerate(x)]
    if len({tuple(m.shape) for m in mats}) != 1:
        raise ShapeError(f"the matrices of {name} differ in shape: {[tuple(m.shape) for m in mats]}")
    return torch.stack(mats)


# --------------------------------------------------------------------------------------------------
# loading


def _find_prefix(names, where: str) -> str:
    names = list(names)
    hits = [n[: -len(_ANCHOR)] for n in names if n.endswith(_ANCHOR)]
    if not hits:
        shown = ", ".join(repr(n) for n in names[:4]) or "no parameters"
        raise ArchitectureError(
            f"{where} is not a BERT-family model: found {shown}{' ...' if len(names) > 4 else ''}; expected "
            f"parameters like {_ANCHOR!r} (optionally with a prefix such as 'bert.')"
        )
    if len(set(hits)) > 1:
        raise ArchitectureError(f"{where} holds several BERT encoders (prefixes {sorted(set(hits))}); pass one")
    return hits[0]


def _count_layers(names, prefix: str) -> int:
    n = 0
    names = set(names)
    while f"{prefix}encoder.layer.{n}.attention.self.query.weight" in names:
        n += 1
    return n


def _config_value(config, key: str, where: str):
    val = config.get(key) if isinstance(config, dict) else getattr(config, key, None)
    if val is None:
        raise ArchitectureError(f"{where} has no {key!r}; a BERT config needs hidden_size, num_attention_heads, "
                                f"intermediate_size and num_hidden_layers")
    return val


def _layer_ids(n_total: int, layers) -> list[int]:
    if layers is None:
        return list(range(n_total))
    ids = [check_positive_int(i, "layers[i]", minimum=0) for i in layers]
    if not ids:
        raise ParameterError("layers is empty: select at least one layer")
    bad = [i for i in ids if i >= n_total]
    if bad:
        raise ParameterError(f"layers {bad} do not exist: the model has {n_total} layers")
    return ids


def bert_weights_from_state_dict(state_dict, config, *, attention_scale: bool = False, layers=None,
                                 source: str = "state dict") -> TransformerWeights:
    """Weights of a BERT-family encoder from a state dict (name -> tensor) and its config.

    ``config`` is a dict or an object with ``hidden_size``, ``num_attention_heads`` and
    ``intermediate_size`` (a Hugging Face ``BertConfig`` works). Parameter names may carry any prefix
    before ``encoder.layer.`` (``bert.``, ``roberta.``, none). ``layers`` selects a subset of layers
    (then treated as the whole network). Nothing is copied: tensors are read when spectra are taken.
    """
    names = list(state_dict.keys())
    prefix = _find_prefix(names, source)
    n_total = _count_layers(names, prefix)
    N = int(_config_value(config, "hidden_size", f"the config of {source}"))
    H = int(_config_value(config, "num_attention_heads", f"the config of {source}"))
    F = int(_config_value(config, "intermediate_size", f"the config of {source}"))
    n_cfg = config.get("num_hidden_layers") if isinstance(config, dict) else getattr(config, "num_hidden_layers", None)
    if n_cfg is not None and int(n_cfg) != n_total:
        raise ArchitectureError(f"{source}: config says num_hidden_layers={n_cfg} but {n_total} layers were found")
    return _build(names, prefix, n_total, N, H, F, attention_scale, layers, source,
                  lambda ids: _DictStore(state_dict, prefix, ids),
                  shape_of=lambda n: tuple(state_dict[n].shape))


def _build(names, prefix, n_total, N, H, F, attention_scale, layers, source, make_store, shape_of):
    if H < 1 or N < 1 or F < 1:
        raise ArchitectureError(f"{source}: sizes must be positive, got hidden={N}, heads={H}, d_ff={F}")
    if N % H:
        raise ArchitectureError(f"{source}: hidden_size {N} is not divisible by num_attention_heads {H}")
    dh = N // H
    ids = _layer_ids(n_total, layers)
    expected = {"query": (N, N), "key": (N, N), "value": (N, N), "attn_out": (N, N), "ff_in": (F, N),
                "ff_out": (N, F)}
    nameset = set(names)
    for i in ids:
        for role, name in bert_tensor_names(i, prefix).items():
            if name not in nameset:
                raise ArchitectureError(f"{source}: parameter {name!r} is missing")
            shp = shape_of(name)
            if tuple(shp) != expected[role]:
                raise ShapeError(f"{source}: {name!r} has shape {tuple(shp)}, expected {expected[role]} "
                                 f"(hidden_size={N}, intermediate_size={F})")
    return TransformerWeights(n_layers=len(ids), n_heads=H, hidden=N, d_head=dh, d_ff=F, source=source,
                              attention_scale=bool(attention_scale), _store=make_store(ids))


def _weights_from_module(model, attention_scale, layers) -> TransformerWeights:
    where = f"module {type(model).__name__}"
    sd = dict(model.named_parameters())
    prefix = _find_prefix(sd.keys(), where)
    config = getattr(model, "config", None)
    if config is None:
        enc = model
        for part in prefix.split(".")[:-1]:
            enc = getattr(enc, part)
        att = enc.encoder.layer[0].attention.self
        heads = getattr(att, "num_attention_heads", None)
        if heads is None:
            raise ArchitectureError(f"{where} has no .config and its attention has no num_attention_heads")
        q = sd[prefix + _ANCHOR]
        f = sd[f"{prefix}encoder.layer.0.intermediate.dense.weight"]
        config = {"hidden_size": q.shape[1], "num_attention_heads": heads, "intermediate_size": f.shape[0]}
    return bert_weights_from_state_dict(sd, config, attention_scale=attention_scale, layers=layers, source=where)


def _weights_from_folder(path: Path, attention_scale, layers) -> TransformerWeights:
    if not path.exists():
        raise InputError(f"checkpoint folder {str(path)!r} does not exist")
    if not path.is_dir():
        raise InputError(f"{str(path)!r} is a file; expected a folder holding config.json and model.safetensors")
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        found = sorted(p.name for p in path.iterdir())[:8]
        raise ArchitectureError(f"{str(path)!r} has no config.json (found {found}); expected config.json and "
                                f"model.safetensors (or pytorch_model.bin)")
    try:
        config = json.loads(cfg_path.read_text())
    except (OSError, ValueError) as exc:
        raise ArchitectureError(f"{str(cfg_path)!r} is not valid JSON: {exc}") from exc
    source = str(path)
    index = path / "model.safetensors.index.json"
    single = path / "model.safetensors"
    if single.is_file() or index.is_file():
        from safetensors import safe_open

        if single.is_file():
            shards = {None: single}
        else:
            wmap = json.loads(index.read_text()).get("weight_map", {})
            shards = {n: path / f for n, f in wmap.items()}
        files, shapes = {}, {}
        for fpath in sorted(set(shards.values())):
            with safe_open(str(fpath), framework="pt", device="cpu") as f:
                for n in f.keys():
                    files[n] = fpath
                    shapes[n] = tuple(f.get_slice(n).get_shape())
        names = list(files)
        prefix = _find_prefix(names, source)
        n_total = _count_layers(names, prefix)
        make = lambda ids: _SafetensorsStore(files, prefix, ids)  # noqa: E731
        shape_of = shapes.__getitem__
    elif (path / "pytorch_model.bin").is_file():
        try:  # zip-format files are memory-mapped (read lazily); legacy ones are read whole
            sd = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:
            sd = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        names = list(sd)
        prefix = _find_prefix(names, source)
        n_total = _count_layers(names, prefix)
        make = lambda ids: _DictStore(sd, prefix, ids)  # noqa: E731
        shape_of = lambda n: tuple(sd[n].shape)  # noqa: E731
    else:
        found = sorted(p.name for p in path.iterdir())[:8]
        raise ArchitectureError(f"{str(path)!r} has no model.safetensors, model.safetensors.index.json or "
                                f"pytorch_model.bin (found {found})")
    N = int(_config_value(config, "hidden_size", str(cfg_path)))
    H = int(_config_value(config, "num_attention_heads", str(cfg_path)))
    F = int(_config_value(config, "intermediate_size", str(cfg_path)))
    n_cfg = config.get("num_hidden_layers")
    if n_cfg is not None and int(n_cfg) != n_total:
        raise ArchitectureError(f"{source}: config.json says num_hidden_layers={n_cfg} but the weights hold "
                                f"{n_total} layers")
    return _build(names, prefix, n_total, N, H, F, attention_scale, layers, source, make, shape_of)


def load_weights(source, *, attention_scale: bool = False, layers=None) -> TransformerWeights:
    """Load the proxy matrices of a BERT-family transformer (Part III, :ref:`ch-sakai-trained`).

    ``source`` is a folder holding ``config.json`` and ``model.safetensors`` (or a sharded
    ``model.safetensors.index.json``, or ``pytorch_model.bin``), or a ``torch.nn.Module`` of the BERT
    family (``encoder.layer[i].attention.self.{query,key,value}``, ``attention.output.dense``,
    ``intermediate.dense``, ``output.dense``; names with or without a ``bert.`` prefix). Nothing is
    downloaded and, for folders, no weight is read until spectra are taken (layer by layer).
    ``attention_scale=True`` puts the ``1/sqrt(d_head)`` score scale into every ``QK``. ``layers``
    selects layer indices (the selection is then treated as the whole network).

    >>> import tempfile
    >>> from genbound.testing import make_bert_checkpoint
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
    ...     w = load_weights(d)
    ...     (w.n_layers, w.n_heads, w.hidden, w.d_head, w.d_ff, w.spectra().qk.shape)
    (2, 2, 8, 4, 16, torch.Size([2, 2, 4]))
    """
    if isinstance(source, TransformerWeights):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _weights_from_folder(Path(source), attention_scale, layers)
    if isinstance(source, torch.nn.Module):
        return _weights_from_module(source, attention_scale, layers)
    raise ArchitectureError(
        f"cannot load weights from a {type(source).__name__}; expected a checkpoint folder (str or Path) "
        f"or a torch.nn.Module of the BERT family"
    )
