"""The :class:`Spectra` record: singular values and ``(2,1)`` norms of every matrix of a transformer."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..device import resolve_device
from ..errors import ParameterError
from ..kinds import ALL_KINDS, HEAD_KINDS, KIND_DESCRIPTIONS, KINDS, MLP_HEAD

__all__ = [
    "KINDS",
    "ALL_KINDS",
    "KIND_DESCRIPTIONS",
    "HEAD_KINDS",
    "MLP_HEAD",
    "Spectra",
    "kind_attr",
]

# KINDS, HEAD_KINDS, MLP_HEAD: defined once in genbound.kinds (re-exported here and by genbound.weights)

_TENSOR_FIELDS = (
    "qk",
    "v",
    "m_in",
    "m_out",
    "qk_norm21",
    "v_norm21",
    "m_in_norm21",
    "m_out_norm21",
)


@dataclass(frozen=True)
class Spectra:
    """Singular values and ``(2,1)`` norms of every matrix of a transformer, all on one device.

    Singular values are descending. ``qk`` and ``v`` have shape ``(L, H, K)``: ``K = min(N, d_head)``
    core values for ``method="core"`` (the remaining ``N - K`` singular values of the ``N x N`` product
    are exact zeros), ``K = N`` for ``method="dense"``. ``m_in`` and ``m_out`` have shape
    ``(L, min(N, d_ff))``. ``*_norm21`` hold ``||W||_{2,1}`` (sum of column l2 norms in the row-vector
    orientation), shape ``(L, H)`` or ``(L,)``. ``size`` maps a kind to ``min(rows, cols)`` of its
    matrices, the size used by the numerical-rank threshold. ``routes`` (optional) maps a kind to the
    route each layer's matrices took (``"qr-core"``, ``"gram"``, ``"qr-svd"``, ``"svd"``,
    ``"dense-svd"``; see :func:`genbound.spectra.certified_singular_values`), one entry per layer;
    ``None`` for spectra built by hand.
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
    routes: dict | None = None

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
        return getattr(self, kind_attr(kind))

    def norm21(self, kind: str) -> torch.Tensor:
        """``||W||_{2,1}`` of every matrix of one kind."""
        return getattr(self, kind_attr(kind) + "_norm21")

    def route(self, kind: str, layer: int) -> str:
        """The route the matrices of one kind in one layer took, or ``"precomputed"`` when unknown."""
        kind_attr(kind)
        if not self.routes or kind not in self.routes:
            return "precomputed"
        return self.routes[kind][layer]

    def spectral_norms(self) -> dict[str, torch.Tensor]:
        """``C_2`` (largest singular value) of every matrix: ``{"QK": (L,H), "V": (L,H), "M_in": (L,), "M_out": (L,)}``."""
        return {k: self.svals(k)[..., 0] for k in KINDS}

    def to(self, device) -> "Spectra":
        """A copy on another device."""
        dev = resolve_device(device)
        kw = {f: getattr(self, f).to(dev) for f in _TENSOR_FIELDS}
        return Spectra(
            **kw, hidden=self.hidden, d_ff=self.d_ff, method=self.method, routes=self.routes
        )


def kind_attr(kind: str) -> str:
    """The :class:`Spectra` attribute of a matrix kind."""
    names = {"QK": "qk", "V": "v", "M_in": "m_in", "M_out": "m_out"}
    if kind not in names:
        raise ParameterError(f"unknown matrix kind {kind!r}; expected one of {KINDS}")
    return names[kind]
