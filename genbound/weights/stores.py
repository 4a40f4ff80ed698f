"""Where the raw tensors of a layer come from: a state dict, safetensors files, or dense proxy matrices.

A store hands out one role's weight of one layer in the torch ``(out, in)`` orientation, whatever the
family's storage (GPT-2's ``Conv1D`` tensors are transposed, its fused ``c_attn`` is sliced), and
knows the score scale the model applies in that layer. ``layer_ids`` map the store's layers to the
checkpoint's, so a selection of layers is a store with fewer ids.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from ..errors import InputError, short_repr
from .families import Family, fused_rows
from .files import read_safetensor

__all__ = ["TensorStore", "DictStore", "SafetensorsStore", "DenseHeads", "check_real_tensor"]

#: What a tensor of each non-strided layout is called in an error.
_LAYOUTS = {
    torch.sparse_coo: "sparse COO",
    torch.sparse_csr: "sparse CSR",
    torch.sparse_csc: "sparse CSC",
    torch.sparse_bsr: "sparse BSR",
    torch.sparse_bsc: "sparse BSC",
    torch._mkldnn: "MKL-DNN",  # type: ignore[attr-defined]
}


def check_real_tensor(t: torch.Tensor, name: str, source: str) -> None:
    """Refuse a tensor whose values genbound cannot read as a dense matrix: one on the meta device
    (a shape without values) or of a layout other than strided (sparse COO, CSR, CSC, BSR, BSC,
    MKL-DNN, nested). Raises :class:`~genbound.errors.InputError` naming the parameter and what to do.

    >>> check_real_tensor(torch.empty(2, 2, device="meta"), "w", "module M")
    Traceback (most recent call last):
    ...
    genbound.errors.InputError: module M: parameter 'w' is on the meta device (a shape without values); load the model's weights before analysing it (e.g. from_pretrained without a meta device_map, or load_state_dict(..., assign=True))
    """
    if t.is_meta:
        raise InputError(
            f"{source}: parameter {short_repr(name)} is on the meta device (a shape without "
            f"values); load the model's weights before analysing it (e.g. from_pretrained without "
            f"a meta device_map, or load_state_dict(..., assign=True))"
        )
    if t.layout is not torch.strided or getattr(t, "is_nested", False):
        what = _LAYOUTS.get(t.layout, "nested" if getattr(t, "is_nested", False) else str(t.layout))
        raise InputError(
            f"{source}: parameter {short_repr(name)} is a {what} tensor; genbound reads dense "
            f"(strided) weight matrices: convert it with .to_dense() first"
        )


@dataclass(frozen=True)
class TensorStore:
    """Raw weight tensors of a checkpoint by (layer, role); subclasses say how a tensor is read."""

    family: Family
    prefix: str
    layer_ids: tuple[int, ...]
    config: Mapping | object
    d_head: int
    dims: Mapping[str, int] | None = None  # H, KV, dh, F: how fused tensors split

    def name(self, layer: int, role: str, expert: int | None = None) -> str:
        """The checkpoint's name of a role's tensor in (store) layer ``layer``."""
        return self.family.tensor_name(self.prefix, self.layer_ids[layer], role, expert)

    def score_scale(self, layer: int) -> float:
        """The factor the model multiplies the scores of (store) layer ``layer`` by."""
        return float(self.family.score_scale(self.config, self.layer_ids[layer], self.d_head))

    def read(self, name: str) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def get(self, layer: int, role: str, expert: int | None = None) -> torch.Tensor:
        """One role's weight in the ``(out, in)`` orientation (a view where possible; the rows of a
        per-head interleaved fused tensor are gathered, a copy of that role only)."""
        spec = self.family.roles[role]
        t = self.read(self.name(layer, role, expert))
        if spec.stacked:
            t = t[expert]
        if spec.conv1d:
            t = t.transpose(0, 1)
        layout = spec.layout_for(self.config)
        if layout is not None:
            _, rows = fused_rows(layout, spec.part, self.dims)
            t = t[rows] if isinstance(rows, slice) else t[torch.as_tensor(rows, dtype=torch.long)]
        return t

    def select(self, ids: Sequence[int]) -> "TensorStore":
        """The store restricted to (store) layers ``ids``, in that order."""
        return replace(self, layer_ids=tuple(self.layer_ids[i] for i in ids))


@dataclass(frozen=True)
class DictStore(TensorStore):
    """Tensors held in a mapping (a state dict, a module's parameters, a memory-mapped ``.bin``)."""

    tensors: Mapping[str, torch.Tensor] | None = None
    #: Called before every read (e.g. :meth:`~genbound.weights.files.CheckpointFile.check` of the
    #: memory-mapped ``.bin`` files, so that a file changed on disk mid-run is an error).
    guard: Callable[[], None] | None = None

    def read(self, name):
        if self.guard is not None:
            self.guard()
        return self.tensors[name].detach()


@dataclass(frozen=True)
class SafetensorsStore(TensorStore):
    """Reads one tensor at a time, so only that tensor is ever resident. ``files`` maps each name to
    its :class:`~genbound.weights.files.TensorInfo` (read through the file opened once for the run,
    checked unchanged before and after each read) or to a path (read with a fresh ``safe_open``)."""

    files: Mapping[str, "Path | object"] | None = None

    def read(self, name):

        return read_safetensor(self.files[name], name)


@dataclass(frozen=True)
class DenseHeads:
    """Proxy matrices given directly: dense heads ``(L, H, N, N)`` and feed-forward matrices."""

    qk: torch.Tensor
    v: torch.Tensor
    m_in: torch.Tensor
    m_out: torch.Tensor

    def select(self, ids: Sequence[int]) -> "DenseHeads":
        idx = torch.as_tensor(list(ids), dtype=torch.long)
        return DenseHeads(self.qk[idx], self.v[idx], self.m_in[idx], self.m_out[idx])
