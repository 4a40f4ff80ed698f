"""What the Part II bounds read off a reference transformer, without its weights (:class:`ModelNorms`).

A saved record: the sparse-majority experiment writes one per run (its ``norms_json`` column), and every
``*_bound_from_model`` function of :mod:`genbound.bounds` takes it in the model's place. Re-exported by
:mod:`genbound.nets` (``from genbound.nets import ModelNorms``), whose model it describes; this module
reads the model through what it answers (``weight_norms()`` and the architecture fields), so it never
imports :mod:`genbound.nets` (imports go one way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .errors import ArchitectureError, ParameterError

if TYPE_CHECKING:  # annotations only (nets imports this module)
    from .nets import ReferenceTransformer

__all__ = ["ModelNorms"]


#: The architecture fields a :class:`ModelNorms` carries besides the norms (what the bounds read).
_NORM_META = ("d", "n_layers", "n_heads", "out_dim", "L_sigma", "bias", "row_norm")


@dataclass(frozen=True)
class ModelNorms:
    """What the Part II bounds read off a :class:`~genbound.nets.ReferenceTransformer`, without its weights:
    the architecture fields ``d, n_layers, n_heads, out_dim, L_sigma, bias, row_norm`` and the norms of
    :meth:`~genbound.nets.ReferenceTransformer.weight_norms` (``norms``, nested lists of floats).

    It answers ``weight_norms()`` like the model, so every ``*_bound_from_model`` function of
    :mod:`genbound.bounds` takes it in the model's place: the bounds recomputed from saved norms go
    through the same code as the bounds of the trained model. ``to_json`` / ``from_json`` round-trip
    exactly (floats are written with ``repr``).

    >>> from genbound.nets import ReferenceTransformer
    >>> net = ReferenceTransformer(4, seed=0)
    >>> saved = ModelNorms.from_json(ModelNorms.of(net).to_json())
    >>> float(saved.weight_norms()["QK"]["op"][0, 0]) == float(net.weight_norms()["QK"]["op"][0, 0])
    True
    """

    d: int
    n_layers: int
    n_heads: int
    out_dim: int
    L_sigma: float
    bias: bool
    row_norm: bool
    norms: dict

    @classmethod
    def of(cls, model: "ReferenceTransformer") -> "ModelNorms":
        """The norms and architecture fields of ``model``."""
        if not (
            callable(getattr(model, "weight_norms", None))
            and all(hasattr(model, f) for f in _NORM_META)
        ):
            raise ArchitectureError(
                f"expected a genbound.nets.ReferenceTransformer, got {type(model).__name__}"
            )
        wn = model.weight_norms()
        norms = {
            g: (
                {k: float(v) for k, v in d.items()}
                if g == "raw"
                else {k: v.detach().to(torch.float64).cpu().tolist() for k, v in d.items()}
            )
            for g, d in wn.items()
        }
        return cls(*(getattr(model, f) for f in _NORM_META), norms=norms)

    def weight_norms(self) -> dict:
        """The norms as :meth:`~genbound.nets.ReferenceTransformer.weight_norms` returns them (float64 tensors)."""
        return {
            g: (
                dict(d)
                if g == "raw"
                else {k: torch.tensor(v, dtype=torch.float64) for k, v in d.items()}
            )
            for g, d in self.norms.items()
        }

    def to_json(self) -> str:
        """One line of JSON holding every field."""
        return json.dumps(
            {**{f: getattr(self, f) for f in _NORM_META}, "norms": self.norms},
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> "ModelNorms":
        """Inverse of :meth:`to_json` (raises :class:`~genbound.errors.ParameterError` on malformed text)."""
        try:
            obj = json.loads(text)
            out = cls(**{f: obj[f] for f in _NORM_META}, norms=obj["norms"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ParameterError(f"not the JSON of a ModelNorms: {exc}") from None
        for g in ("QK", "V", "w"):
            if g not in out.norms:
                raise ParameterError(f"ModelNorms JSON lacks the norms of {g!r}")
        return out
