"""Transformer weights in the row-vector orientation of the spectrum-adaptive bound (Part III).

This is the *weights* stage of genbound's data flow: it turns a checkpoint folder, an ``nn.Module``,
a state dict or a list of proxy matrices into one architecture-neutral :class:`TransformerWeights`,
and computes from it, layer by layer, the :class:`Spectra` (singular values and ``(2,1)`` group norms)
that every bound of Part III needs. Book: :ref:`ch-sakai-trained` (the trained-transformer chapter of
Part III) and :ref:`ch-schatten`.

Eighteen families, one small module each under ``genbound.weights.families``: BERT (RoBERTa,
ELECTRA), DistilBERT, GPT-2, OPT and ViT, whose blocks the papers' bound covers, and Llama, Mistral,
Qwen2, Qwen3, Gemma, Gemma 2, Phi-3, Mixtral, GPT-NeoX, Falcon, GPT-J, BLOOM and DeBERTa-v2, whose
rotary, ALiBi or disentangled query-key maps, gated feed-forward blocks or mixtures of experts it
does not: for those,
:meth:`TransformerWeights.matrix_table` reports every matrix's spectrum with ``covered`` and a
``note``, and :meth:`TransformerWeights.spectra` (the bound's input) is refused with the reasons.
:func:`extra_spectra` (:mod:`genbound.weights.extras`) adds, on request, the token and position
embeddings and the LM head or classifier as spectra only: no bound covers or reads them.
Grouped- and multi-query attention, fused query-key-value and gate-up tensors are split by the
config. Encoder-decoders (T5, BART) are refused (cross-attention).

Conventions (the authors' proxies, Sakai & Imaizumi 2026, code ``extract.py``). A torch ``nn.Linear``
weight has shape ``(out, in)`` (GPT-2's ``Conv1D`` weights are transposed to it on loading). With
``q, k, v, o`` the query, key, value and attention-output weights, ``f_in, f_out`` the feed-forward
input and output weights, ``d_head = N / H`` and ``s_h`` the rows of head ``h``:

=========  ====================================  ===================================
matrix     formula                               shape, rank
=========  ====================================  ===================================
``QK``     ``q[s_h, :]^T  k[s_h, :]``            ``N x N``, rank ``<= d_head``
``V``      ``v[s_h, :]^T  (o^T)[s_h, :]``        ``N x N``, rank ``<= d_head``
``M_in``   ``f_in^T``                            ``N x d_ff``
``M_out``  ``f_out^T``                           ``d_ff x N``
=========  ====================================  ===================================

Biases, LayerNorm and the score scale are left out, unless ``attention_scale=True`` multiplies every
``QK`` by the model's score scale (``1/sqrt(d_head)``).

How the spectra are computed (``method="core"``, the default): a head's product ``A B`` with thin
factors ``A`` (``N x d_head``) and ``B`` (``d_head x N``) is never formed. With thin QR factorisations
``A = Q_1 R_1`` and ``B^T = Q_2 R_2`` its nonzero singular values are those of the ``d_head x d_head``
core ``R_1 R_2^T``, and its column norms are those of ``R_1 B`` (``Q_1`` has orthonormal columns), so
``||A B||_{2,1}`` is exact too. All heads of a layer go through one batched QR and one batched
``svdvals``. A feed-forward matrix goes through :func:`genbound.spectra.certified_singular_values`:
the square roots of its Gram matrix's eigenvalues when an a posteriori bound certifies every singular
value to relative accuracy ``1e-10``, else a Householder QR of its tall orientation and the SVD of the
``N x N`` triangle (backward stable, as accurate as a full SVD). ``Spectra.routes`` records the
route of every matrix. ``method="dense"`` is the authors' pipeline: every product is formed densely
and a full float64 SVD is taken; rank-deficient products then carry a round-off "noise floor".

Checkpoints are validated before anything is read (``genbound.weights.files``: every bad file is a
:class:`~genbound.errors.CheckpointError` naming it, and ``.bin`` files are never unpickled beyond
tensors), and read lazily, tensor by tensor, so the peak memory of :meth:`TransformerWeights.spectra`
stays near one layer, not the whole model.

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

from .extras import EXTRA_KINDS, extra_spectra, extra_table
from .families import FAMILIES, REFUSALS, ROLES, Family, Refusal, Role
from .loading import (
    bert_tensor_names,
    bert_weights_from_state_dict,
    config_sizes,
    find_family,
    load_weights,
    weights_from_state_dict,
)
from .model import FF_ROUTES, MatrixSpectrum, TransformerWeights
from .record import ALL_KINDS, HEAD_KINDS, KIND_DESCRIPTIONS, KINDS, MLP_HEAD, Spectra

__all__ = [
    "KINDS",
    "ALL_KINDS",
    "MatrixSpectrum",
    "EXTRA_KINDS",
    "extra_spectra",
    "extra_table",
    "KIND_DESCRIPTIONS",
    "HEAD_KINDS",
    "MLP_HEAD",
    "FF_ROUTES",
    "ROLES",
    "Spectra",
    "TransformerWeights",
    "load_weights",
    "weights_from_state_dict",
    "bert_weights_from_state_dict",
    "bert_tensor_names",
    "find_family",
    "config_sizes",
    "Family",
    "Role",
    "Refusal",
    "FAMILIES",
    "REFUSALS",
]
