"""The authors' network as a :class:`~genbound.nets.ReferenceTransformer`, Keras' initialisation, and
stacks of networks (part of :mod:`genbound.experiments.sparse_majority`). The forward pass is the
model class's own: :meth:`genbound.nets.ReferenceTransformer.forward_stacked_tokens`."""

from __future__ import annotations

import functools
import math
from typing import Sequence

import torch

from ...device import resolve_device, resolve_dtype
from .config import SparseMajorityConfig
from .task import D_HEAD, D_MODEL, N_HEADS
from ...nets import ReferenceTransformer

__all__ = ["build_model", "keras_init_", "stack_parameters", "load_stacked", "cls_logits"]

_PARAM_NAMES = ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O", "W_C", "b_C", "w", "b_w")


def build_model(
    config: SparseMajorityConfig | None = None,
    *,
    seed: int = 0,
    dtype=torch.float64,
    device=None,
    keras_init: bool = True,
):
    """The authors' network as a :class:`genbound.nets.ReferenceTransformer` (one layer, 2 logits, biases).

    With ``keras_init`` the weights are re-drawn as Keras draws them (:func:`keras_init_`).

    >>> net = build_model(seed=0)
    >>> net.n_heads, net.d_head, net.out_dim, net.bias, net.score_scale
    (2, 64, 2, True, 0.125)
    """

    cfg = (config or SparseMajorityConfig()).validated()
    net = ReferenceTransformer(
        cfg.d,
        n_layers=1,
        n_heads=cfg.n_heads,
        d_head=cfg.d_head,
        out_dim=2,
        activation="relu",
        row_norm=False,
        bias=True,
        score_scale=1.0 / math.sqrt(cfg.d_head),
        cls_index=-1,
        dense=True,
        dtype=dtype,
        device=device,
        seed=seed,
    )
    if keras_init:
        keras_init_(net, torch.Generator().manual_seed(int(seed)))
    return net


def _glorot_limit(shape: Sequence[int]) -> float:
    """Keras' Glorot-uniform limit ``sqrt(6 / (fan_in + fan_out))`` with Keras' fans for ``shape``
    (for ``len(shape) > 2`` the leading axes form a receptive field multiplying both fans)."""
    rf = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return math.sqrt(6.0 / (shape[-2] * rf + shape[-1] * rf))


@torch.no_grad()
def keras_init_(net, generator: torch.Generator):
    """Re-draw ``net``'s weights as the original Keras model does, in place; returns ``net``.

    Keras' ``MultiHeadAttention`` kernels have shapes ``(d, H, d_head)`` (query, key, value) and
    ``(H, d_head, d)`` (output) and are Glorot-uniform with Keras' fans for 3-d kernels; ``Dense`` is
    Glorot-uniform; the readout is ``random_normal`` (standard deviation 0.05); every bias is zero.
    (Keras' defaults are recalled, not read from the Keras source.)
    """
    lay = net.layers[0]
    d, H, dh = net.d, net.n_heads, net.d_head

    def uni(keras_shape, perm):
        lim = _glorot_limit(keras_shape)
        t = (torch.rand(*keras_shape, generator=generator, dtype=torch.float64) * 2 - 1) * lim
        return t.permute(*perm)

    for name in ("W_Q", "W_K", "W_V"):
        getattr(lay, name).copy_(uni((d, H, dh), (1, 0, 2)))  # keras (d, H, dh) -> ours (H, d, dh)
    lay.W_O.copy_(uni((H, dh, d), (0, 1, 2)))
    lay.W_C.copy_(uni((d, d), (0, 1)))
    net.w.copy_(torch.randn(d, net.out_dim, generator=generator, dtype=torch.float64) * 0.05)
    for p in (lay.b_Q, lay.b_K, lay.b_V, lay.b_O, lay.b_C, net.b_w):
        p.zero_()
    return net


def stack_parameters(nets, *, dtype=torch.float32, device=None) -> dict[str, torch.Tensor]:
    """The parameters of one-layer nets stacked along a new leading model axis ``K`` (leaf tensors
    with ``requires_grad``), keyed by the names of :class:`genbound.nets.ReferenceTransformer`;
    on ``device``, by default the first net's."""
    dev = nets[0].w.device if device is None else resolve_device(device)
    out = {}
    for name in _PARAM_NAMES:
        ts = [_param(net, name).detach() for net in nets]
        out[name] = torch.stack(ts).to(dtype=resolve_dtype(dtype), device=dev).requires_grad_(True)
    return out


def _param(net, name):
    return getattr(net, name) if name in ("w", "b_w") else getattr(net.layers[0], name)


@torch.no_grad()
def load_stacked(net, params: dict[str, torch.Tensor], k: int):
    """Copy model ``k`` of a stacked parameter dict into ``net`` (in ``net``'s dtype); returns ``net``."""
    for name in _PARAM_NAMES:
        p = _param(net, name)
        p.copy_(params[name][k].to(dtype=p.dtype, device=p.device))
    return net


def _full_names(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A stack keyed by the short names of :func:`stack_parameters` re-keyed by ``named_parameters``
    names (the same tensors, so gradients flow to ``params``)."""
    return {(nm if nm in ("w", "b_w") else f"layers.0.{nm}"): p for nm, p in params.items()}


@functools.lru_cache(maxsize=8)
def _architecture(score_scale: float):
    """A network of the experiment's architecture with score scale ``score_scale``: the model class
    whose stacked modes evaluate the stacks (its own parameter values are never used)."""

    return ReferenceTransformer(
        D_MODEL,
        n_layers=1,
        n_heads=N_HEADS,
        d_head=D_HEAD,
        out_dim=2,
        activation="relu",
        row_norm=False,
        bias=True,
        score_scale=score_scale,
        cls_index=-1,
        dense=True,
        device="cpu",
    ).requires_grad_(False)


def cls_logits(
    params: dict[str, torch.Tensor],
    bits: torch.Tensor,
    embeddings: torch.Tensor,
    encoding: torch.Tensor,
    score_scale: float,
) -> torch.Tensor:
    """Logits ``(K, n, 2)`` of ``K`` stacked one-layer nets on their own bit sequences, exactly.

    ``params`` from :func:`stack_parameters`, ``bits`` ``(K, n, T)`` (0/1), ``embeddings`` ``(K, 3, d)``,
    ``encoding`` ``(T + 1, d)``. This is the structured ``[CLS]`` mode of the model class,
    :meth:`genbound.nets.ReferenceTransformer.forward_stacked_tokens` (see there how it avoids the
    ``n x T`` attention matrix without cancellation); it equals ``ReferenceTransformer.forward`` on
    ``task.embed(bits)`` for each model (a test compares them).
    """
    return _architecture(float(score_scale)).forward_stacked_tokens(
        _full_names(params), bits, embeddings, encoding
    )
