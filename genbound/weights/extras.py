"""Embeddings and the LM head (or classifier) as spectra only: rows no bound reads.

The papers' bounds are about the transformer blocks; the token embedding matrix (``vocab x N``),
the learned position embeddings (``positions x N``, where a family has them) and the model's head
(``lm_head``: ``vocab x N``; ``classifier``: ``labels x N``) are outside them. A WeightWatcher user
expects them in the per-matrix table, so :func:`extra_spectra` gives their singular values, as
:class:`~genbound.weights.model.MatrixSpectrum` rows with ``layer = -1`` (:data:`EXTRA_LAYER`:
outside the blocks), ``head = expert = -1``, ``covered=False`` and the note :data:`EXTRA_NOTE`.
Nothing of :meth:`~genbound.weights.TransformerWeights.spectra` (the bounds' input) reads them.

Where the tensors are: each family's ``embeddings`` (after the model prefix) and ``heads`` (after
the prefix's parent: ``lm_head.weight`` beside ``model.``) in ``genbound.weights.families``;
a name the checkpoint does not hold gives no row. A head that is the embedding matrix (the same
tensor, or equal values) is reported once, as ``embed_tokens``, with :data:`TIED_NOTE`; so is a
head left out of the file because it is tied (``tie_word_embeddings`` not false and an LM-head
architecture in ``config.json``'s ``architectures``). Each matrix is read, in float64, one at a
time (two while a stored head is compared with the embeddings) and goes through
:func:`~genbound.spectra.certified_singular_values` (the Gram route for ``vocab x N``: ``N x N``).

>>> import tempfile
>>> from genbound.testing import make_bert_checkpoint
>>> from genbound.weights import load_weights
>>> with tempfile.TemporaryDirectory() as d:
...     _ = make_bert_checkpoint(d, layers=1, heads=2, hidden=8, d_ff=16, seed=0)
...     rows = extra_spectra(load_weights(d))
>>> [(m.kind, m.layer, m.rows, m.cols, m.covered) for m in rows]
[('embed_tokens', -1, 64, 8, False), ('embed_positions', -1, 64, 8, False)]
>>> rows[0].note
"not in any bound: the papers' bounds cover the blocks only"
"""

from __future__ import annotations

import torch

from ..device import home_device, resolve_device
from ..errors import ArchitectureError, NonFiniteError
from ..spectra import DEFAULT_CERT_RTOL, certified_singular_values
from .families import config_value, family_by_name
from .model import MatrixSpectrum
from .stores import TensorStore

__all__ = [
    "EXTRA_KINDS",
    "EXTRA_LAYER",
    "EXTRA_NOTE",
    "TIED_NOTE",
    "extra_names",
    "extra_spectra",
    "extra_table",
    "with_extras",
]

#: The kinds of the matrices outside the blocks, in table order.
EXTRA_KINDS = ("embed_tokens", "embed_positions", "lm_head", "classifier")
#: The ``layer`` of their rows: outside the blocks (``head`` and ``expert`` are -1 too).
EXTRA_LAYER = -1
#: The note of every such row.
EXTRA_NOTE = "not in any bound: the papers' bounds cover the blocks only"
#: Added to the ``embed_tokens`` note when the LM head is the same matrix.
TIED_NOTE = "the LM head is tied to this matrix (one row for both)"
#: ``architectures`` suffixes of models with an LM head (for a tied head left out of the file).
_LM_ARCHS = ("LMHeadModel", "ForCausalLM", "ForMaskedLM")
#: The columns of :meth:`~genbound.weights.TransformerWeights.matrix_table`.
_COLUMNS = (
    "kind layer head expert rows cols rank sigma_max frobenius nuclear stable_rank norm_21 "
    "route covered note"
).split()


def _held(store) -> dict:
    """The tensor names the store can read (a state dict's, or the safetensors files')."""
    held = getattr(store, "tensors", None)
    if held is None:
        held = getattr(store, "files", None)
    return held or {}


def _parent(prefix: str) -> str:
    """``prefix`` less its last component: ``"bert."`` -> ``""``, ``"a.model."`` -> ``"a."``."""
    parts = prefix.rstrip(".").split(".")
    return "".join(p + "." for p in parts[:-1]) if prefix else ""


def extra_names(weights) -> list[tuple[str, str]]:
    """``(kind, tensor name)`` of the embeddings and head ``weights``' checkpoint holds, in
    :data:`EXTRA_KINDS` order; ``[]`` for proxy matrices and families that name none."""
    store = weights._store
    if not isinstance(store, TensorStore):
        return []
    fam, held = family_by_name(weights.family), _held(store)
    found = [(k, store.prefix + n) for k, n in fam.embeddings]
    found += [(k, _parent(store.prefix) + n) for k, n in fam.heads]
    return [(k, n) for k, n in found if n in held]


def _tied_by_config(config) -> bool:
    archs = config_value(config, "architectures") or ()
    lm = any(isinstance(a, str) and a.endswith(_LM_ARCHS) for a in archs)
    return lm and config_value(config, "tie_word_embeddings") is not False


def _same(store, a: str, b: str) -> bool:
    """Whether tensors ``a`` and ``b`` are one matrix (the same storage, or equal values)."""
    held = _held(store)
    ta, tb = held[a], held[b]
    if isinstance(ta, torch.Tensor) and isinstance(tb, torch.Tensor):
        if ta.shape == tb.shape and ta.data_ptr() == tb.data_ptr():
            return True
    x, y = store.read(a), store.read(b)
    return x.shape == y.shape and bool(torch.equal(x, y))


def _matrix(weights, name: str, dev) -> torch.Tensor:
    t = weights._store.read(name)
    if t.dim() != 2:
        raise ArchitectureError(
            f"{weights.source}: {name!r} has shape {tuple(t.shape)}; expected a matrix"
        )
    t = t.to(device=dev, dtype=torch.float64)
    if not (bool(torch.isfinite(t.max())) and bool(torch.isfinite(t.min()))):
        raise NonFiniteError(f"{weights.source}: {name!r} holds non-finite values (NaN or inf)")
    return t


def extra_spectra(weights, *, device=None) -> list[MatrixSpectrum]:
    """The spectra of the embeddings and head of ``weights`` (a checkpoint-backed
    :class:`~genbound.weights.TransformerWeights`), one
    :class:`~genbound.weights.model.MatrixSpectrum` each, in the orientation stored (``vocab x N``),
    ``covered=False``, note :data:`~genbound.weights.extras.EXTRA_NOTE` (see the module docstring
    for tied heads). ``[]`` where there are none."""
    names = extra_names(weights)
    store = weights._store
    embed = next((n for k, n in names if k == "embed_tokens"), None)
    tied = embed is not None and not any(k == "lm_head" for k, _ in names)
    tied = tied and _tied_by_config(store.config)
    kept = []
    for kind, name in names:
        if kind == "lm_head" and embed is not None and _same(store, name, embed):
            tied = True
            continue
        kept.append((kind, name))
    dev, home = resolve_device(device), home_device(device)
    out = []
    for kind, name in kept:
        M = _matrix(weights, name, dev)
        cert = certified_singular_values(M, rtol=DEFAULT_CERT_RTOL)
        note = EXTRA_NOTE + ("; " + TIED_NOTE if tied and kind == "embed_tokens" else "")
        out.append(
            MatrixSpectrum(
                kind=kind,
                layer=EXTRA_LAYER,
                head=-1,
                expert=-1,
                rows=int(M.shape[0]),
                cols=int(M.shape[1]),
                svals=torch.sort(cert.svals, descending=True).values.to(home),
                norm21=float(torch.linalg.vector_norm(M, dim=0).sum()),
                route=cert.route,
                covered=False,
                note=note,
            )
        )
        del M
    return out


def extra_table(weights, *, device=None, rank_tol: float = 1e-10):
    """:func:`extra_spectra` as rows of :meth:`~genbound.weights.TransformerWeights.matrix_table`
    (its columns, ``covered`` False and the note on every row); no rows where there are none."""
    rows = extra_spectra(weights, device=device)
    if not rows:  # matrix_table(spectra=[]) would take every block's spectra instead
        import pandas as pd

        return pd.DataFrame(columns=list(_COLUMNS))
    return weights.matrix_table(rank_tol=rank_tol, spectra=rows)


def with_extras(table, extras):
    """``table`` (a per-matrix table) followed by the rows of ``extras`` (:func:`extra_table`); the
    columns ``covered`` (True) and ``note`` ("") are added to ``table`` where it lacks them, and
    columns ``extras`` lacks (a bound's ``p_opt``, ``contribution``, ...) are empty there."""
    import pandas as pd

    table = table.copy()
    if "covered" not in table:
        table["covered"], table["note"] = True, ""
    if not len(extras):
        return table
    extras = extras[[c for c in extras.columns if c in table.columns]]
    return pd.concat([table, extras], ignore_index=True)
