"""The four kinds of proxy matrix of a transformer layer: the one definition of :data:`KINDS`.

Imported by :mod:`genbound.weights` (the :class:`~genbound.weights.Spectra` record and every table),
:mod:`genbound.analysis` (the ``kind`` key of its JSON and CSV) and the claims. Free of torch, so that the
command line's help can name the kinds without loading it.

>>> KINDS
('QK', 'V', 'M_in', 'M_out')
>>> HEAD_KINDS, MLP_HEAD
(('QK', 'V'), -1)
"""

__all__ = [
    "KINDS",
    "KIND_DESCRIPTIONS",
    "HEAD_KINDS",
    "MLP_HEAD",
    "EXTRA_KIND_DESCRIPTIONS",
    "ALL_KINDS",
]

#: The four matrix types of a layer, in words (the ``kind`` column of every table and JSON).
KIND_DESCRIPTIONS = {
    "QK": "one head's query-key product W_Q W_K^T (N x N, rank <= d_head; row-vector W_Q, W_K: N x d_head)",
    "V": "one head's value-output product W_V W_O (N x N, rank <= d_head)",
    "M_in": "the feed-forward input matrix (N x d_ff)",
    "M_out": "the feed-forward output matrix (d_ff x N)",
}
#: The four matrix types of a layer, in the order of every table.
KINDS = tuple(KIND_DESCRIPTIONS)
#: Matrix types outside the papers' four, reported (spectra only) for the families that have them.
EXTRA_KIND_DESCRIPTIONS = {
    "M_gate": "the gate matrix of a gated feed-forward block (N x d_ff; M_in is then the up "
    "matrix, M_out the down matrix)",
    "router": "the router of a mixture-of-experts block (N x E)",
}
#: Every matrix type a report may hold, in table order.
ALL_KINDS = ("QK", "V", "M_gate", "M_in", "M_out", "router")
#: The per-head matrix types.
HEAD_KINDS = ("QK", "V")
#: The ``head`` value of the layer-wise feed-forward matrices in every table (the authors' convention).
MLP_HEAD = -1
