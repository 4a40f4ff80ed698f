"""Every matrix's singular values from an analysis: for the figure's spectra and for ``--svals FILE``.

One concept: the singular values a report was computed from, named matrix by matrix (``L0.H3.QK``,
``L0.M_in``, ``L2.E1.M_gate``), without a second pass over the weights: a report with a bound reads
the exact spectra its proved bound used (cached on its weights), a spectra-only report the values it
kept. A head's ``QK`` and ``V`` are ``N x N`` products of rank at most ``d_head``: their values are the
``min(N, d_head)`` largest (the other ``N - d_head`` are exactly 0), as every table counts them.
Users who fit their own power laws to the empirical spectral densities (as WeightWatcher does) read
the ``.npz`` with ``numpy.load``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ParameterError

if TYPE_CHECKING:  # annotations only: numpy is imported where arrays are made
    import numpy as np

__all__ = ["NamedSpectrum", "matrix_key", "named_spectra", "write_svals", "check_svals_path"]


@dataclass(frozen=True)
class NamedSpectrum:
    """One matrix's singular values (descending, float64) with its place in the model."""

    key: str
    kind: str
    layer: int
    head: int
    expert: int
    svals: "np.ndarray"


def matrix_key(kind: str, layer: int, head: int = -1, expert: int = -1) -> str:
    """The name of one matrix: ``L{layer}``, then ``H{head}`` or ``E{expert}`` where it has one, then
    the kind.

    >>> matrix_key("QK", 0, 3), matrix_key("M_in", 2), matrix_key("M_gate", 1, expert=4)
    ('L0.H3.QK', 'L2.M_in', 'L1.E4.M_gate')
    """
    parts = [f"L{layer}"]
    if head >= 0:
        parts.append(f"H{head}")
    if expert >= 0:
        parts.append(f"E{expert}")
    return ".".join(parts + [kind])


def _from_matrix_spectra(spectra) -> list[NamedSpectrum]:
    return [
        NamedSpectrum(
            matrix_key(m.kind, m.layer, m.head, m.expert),
            m.kind,
            m.layer,
            m.head,
            m.expert,
            _np(m.svals),
        )
        for m in spectra
    ]


def named_spectra(analysis) -> list[NamedSpectrum]:
    """Every matrix's singular values of an :class:`~genbound.analysis.api.Analysis` (the exact
    spectra of its proved bound, read from the weights' cache) or a
    :class:`~genbound.analysis.api.SpectraOnly` (the values it kept), in the order of its tables."""
    if analysis.spectra_only:
        kept = analysis.spectra or analysis.weights.matrix_spectra(device=analysis.device)
        return _from_matrix_spectra(kept)
    sp = analysis.weights.spectra(device=analysis.device, method="core")
    out = []
    for layer in range(sp.n_layers):
        for head in range(sp.n_heads):
            for kind in ("QK", "V"):
                s = sp.svals(kind)[layer, head]
                out.append(
                    NamedSpectrum(matrix_key(kind, layer, head), kind, layer, head, -1, _np(s))
                )
        for kind in ("M_in", "M_out"):
            s = sp.svals(kind)[layer]
            out.append(NamedSpectrum(matrix_key(kind, layer), kind, layer, -1, -1, _np(s)))
    return out


def _np(t) -> "np.ndarray":
    return t.detach().double().cpu().numpy()


def check_svals_path(path) -> None:
    """Refuse a ``--svals`` file name that does not end in ``.npz`` (``numpy.savez`` would add it,
    and the file written would not be the one named)."""
    if Path(path).suffix.lower() != ".npz":
        raise ParameterError(
            f"--svals {path}: the singular values are written as a numpy .npz archive; name a "
            f"file ending in .npz"
        )


def write_svals(analysis, path) -> int:
    """Write every matrix's singular values to the ``.npz`` archive ``path`` (one float64 array per
    :func:`matrix_key`, descending); return how many matrices were written."""
    import numpy as np

    check_svals_path(path)
    spectra = named_spectra(analysis)
    with open(path, "wb") as f:
        np.savez(f, **{m.key: m.svals for m in spectra})
    return len(spectra)
