"""``genbound analyze``: both Part III proxies for a checkpoint folder, from the command line.

Book: :ref:`ch-sakai-trained`. ``genbound analyze PATH`` loads a checkpoint folder (``config.json`` +
``model.safetensors``, a sharded ``model.safetensors.index.json`` or ``pytorch_model.bin``) of one of
five architectures (BERT, RoBERTa, ELECTRA, DistilBERT, GPT-2; ``genbound.weights.families``)
layer by layer, and prints the spectrum-adaptive proxy of Sakai & Imaizumi (2026) and their
Edelman-style proxy.

The proxies are sums over four kinds of matrix per layer (:data:`KINDS`), not over the raw weights:

* ``QK``: one head's query-key product ``W_Q W_K^T`` (``N x N``, rank at most ``d_head``, with the
  head's row-vector maps ``W_Q, W_K`` of shape ``N x d_head``; the scores are ``x W_Q W_K^T y^T``),
  one per head;
* ``V``: one head's value-output product ``W_V W_O`` (``N x N``, rank at most ``d_head``), one per head;
* ``M_in``: the feed-forward input matrix (``N x d_ff``); ``M_out``: its output matrix (``d_ff x N``).

``--json`` prints one object whose keys are those of :data:`JSON_FIELDS` (each described there);
``matrices`` is the per-matrix list (keys :data:`MATRIX_FIELDS`), the same rows as the ``--csv`` table.
The console shows the totals, the matrices with the largest contributions, the chosen Schatten
index ``p`` per kind with counts and, when ``p = 0`` wins for every matrix, what the proxy then
is: ``sum sqrt(rank * N) + sqrt(L)``, a function of the shapes and ranks only.

Every bad file, config or option ends in one line ``genbound: error: ...`` on stderr and exit code 2
(``genbound.weights.files``), before any spectrum is computed and before anything is written:
``--csv`` and ``--plot`` paths (existing folder, known figure format) and ``--layers`` (each layer
once, all in range) are checked first; a ``config.json`` whose ``model_type`` disagrees with the
tensor names is refused (``genbound.weights.loading.check_model_type``). A progress bar over layers
goes to stderr when stderr is a terminal (``--quiet`` turns it off).

From Python, ``genbound.analyze(model)`` (:func:`analyze`: this module is callable) takes a model
object, a state dict with its config, or a folder; ``--n-samples N`` / ``n_samples=N`` adds the gap
estimates at ``N`` and the verdict (:func:`verdict`), one line in every report saying whether the values
are vacuous and where the book defines it (:data:`DEFINED_IN`).

A model whose blocks the papers' bound does not all cover gets a spectra-only report
(:class:`SpectraOnly`): its first console lines say that no bound is given and why, per uncovered
kind; then every matrix's spectral quantities (:data:`SPECTRA_FIELDS`); ``--json`` has
``"spectra_only": true``, ``"bound": null`` and every bound key ``null``. Never a bound value.

One concept: the Part III report of one model (load, both proxies, the verdict; or, for a model the
bound does not cover, its spectra only), as a function and as the ``genbound analyze`` command with
its outputs. The matrix-by-matrix comparison of two checkpoints (``--compare``) is
:mod:`genbound.compare`.

>>> import tempfile, json, io, contextlib
>>> from genbound.testing import make_bert_checkpoint
>>> from genbound.cli import main
>>> with tempfile.TemporaryDirectory() as d:
...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
...     buf = io.StringIO()
...     with contextlib.redirect_stdout(buf):
...         rc = main(["analyze", d, "--json", "--device", "cpu"])
>>> out = json.loads(buf.getvalue())
>>> rc, out["layers"], out["hidden"], out["heads"], out["n_matrices"], len(out["matrices"])
(0, 2, 8, 2, 12, 12)
>>> sorted(out["matrices"][0])
['contribution', 'frobenius', 'head', 'kind', 'layer', 'p_opt', 'rank', 'shape', 'sigma_max', 'stable_rank']
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from .errors import ArchitectureError, require
from .kinds import KIND_DESCRIPTIONS

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import pandas as pd

__all__ = [
    "Analysis",
    "SpectraOnly",
    "NoBoundError",
    "analyze",
    "add_parser",
    "run",
    "fix_heap_growth",
    "matrix_table",
    "check_outputs",
    "KINDS",
    "JSON_FIELDS",
    "MATRIX_FIELDS",
]

#: The four kinds of proxy matrix, in words (the ``kind`` column and key): the one definition,
#: :data:`genbound.kinds.KIND_DESCRIPTIONS` (its keys are :data:`genbound.kinds.KINDS`).
KINDS = KIND_DESCRIPTIONS

#: Keys of each row of ``matrices`` in the JSON (the ``--csv`` columns, with ``shape`` as ``rows, cols``).
MATRIX_FIELDS = {
    "kind": "QK, V, M_in or M_out (see KINDS)",
    "layer": "layer index (0-based, among the analysed layers)",
    "head": "head index for QK and V; -1 for M_in and M_out",
    "shape": "[rows, cols] of the matrix",
    "rank": "numerical rank (singular values above rank_tol * min(rows, cols) * max(sigma_max, 1))",
    "sigma_max": "largest singular value (spectral norm)",
    "frobenius": "Frobenius norm (in mode exact: of the singular values above the rank threshold)",
    "stable_rank": "frobenius^2 / sigma_max^2 (0 for a zero matrix)",
    "p_opt": "the Schatten index p in the grid that minimises the matrix's term T(p)",
    "contribution": "min_p T(p): the matrix's term in the spectrum-adaptive proxy",
}

#: Keys of the ``--json`` object, in words.
JSON_FIELDS = {
    "spectral_adaptive": "the spectrum-adaptive proxy of Sakai & Imaizumi: sum of contributions + sqrt(L)",
    "spectral_adaptive_capacity": "the n-free complexity of the spectrum-adaptive bound "
    "(prop-sa-capacity): the rate is capacity / sqrt(n)",
    "spectral_adaptive_trivial": "null: a checkpoint carries no sample size n, so triviality is undecided",
    "edelman": "the Edelman-style proxy; null when it exceeds float64",
    "edelman_capacity": "the Edelman-style proxy's n-free complexity (the proxy itself)",
    "edelman_trivial": "null: a checkpoint carries no sample size n, so triviality is undecided",
    "edelman_log": "natural log of the Edelman-style proxy (always finite)",
    "edelman_overflow": "true when edelman exceeds float64",
    "layers": "L, the number of analysed layers",
    "hidden": "N, the hidden size",
    "heads": "attention heads per layer",
    "d_head": "N / heads",
    "d_ff": "feed-forward width",
    "n_matrices": "number of proxy matrices: L * (2 * heads + 2)",
    "matrices": "one object per proxy matrix (keys: MATRIX_FIELDS), the rows of the --csv table",
    "p_opt_counts": "per kind, how many matrices chose each p ({kind: {p: count}}; p as a string)",
    "grid_m": "grid resolution m of the Schatten indices p",
    "L_phi": "activation Lipschitz constant",
    "rank_tol": "relative rank tolerance",
    "mode": "exact or authors",
    "p_opt_zero": "number of matrices whose p_opt is 0",
    "attention_scale": "whether the score scale 1/sqrt(d_head) is inside every QK",
    "device": "device the spectra were computed on",
    "seconds": "wall time of loading and both proxies",
    "source": "the checkpoint folder",
    "family": "weight-name family (bert, distilbert, gpt2)",
    "routes": "matrices per spectrum route (qr-core, gram, qr-svd, svd, dense-svd)",
    "n_samples": "the sample size given with --n-samples (null: none given)",
    "spectral_adaptive_gap": "capacity / sqrt(n_samples): the spectrum-adaptive estimate of the "
    "generalization gap at n_samples (null without n_samples)",
    "spectral_adaptive_samples_needed": "the least n with capacity / sqrt(n) <= 1, the loss range: "
    "from this sample size on the estimate is not vacuous (null beyond 10**40)",
    "edelman_gap": "edelman / sqrt(n_samples) (null without n_samples, or beyond float64)",
    "edelman_samples_needed": "the least n with edelman / sqrt(n) <= 1 (null beyond 10**40)",
    "verdict": "one line: whether the values are vacuous (at n_samples, or undecided without it) "
    "and where the book defines it",
    "defined_in": "the book's chapter and statement that define capacity, the rate "
    "capacity / sqrt(n) and vacuous (trivial)",
}

#: Where the book defines the capacity, the rate ``capacity / sqrt(n)`` and when a report is vacuous
#: (``trivial``): the chapter file and the statement's label (:prf:ref:`prop-sa-capacity`).
DEFINED_IN = "book/part3/deep.md, prop-sa-capacity (section 'Capacity: the proxy as a rate in n')"


def _count(n: int) -> str:
    """A sample size: ``54``, or ``6.1e+10`` from a million on."""
    return f"{n:d}" if n < 10**6 else f"{float(n):.2g}"


def verdict(spectral, edelman) -> str:
    """One line: whether the two reports are vacuous (``trivial``: the gap estimate at ``n_samples`` is
    at or above the loss range 1), the sample size from which each would not be
    (``samples_needed()``), and where the book defines both (:data:`DEFINED_IN`).

    >>> from genbound.bounds.sakai_imaizumi import SpectralBoundReport, EdelmanProxyReport
    >>> r, e = SpectralBoundReport.examples()[1], EdelmanProxyReport.examples()[1]
    >>> r.n_samples, r.trivial
    (10, True)
    >>> print(verdict(r, e))  # doctest: +ELLIPSIS
    vacuous at n = 10: spectrum-adaptive capacity/sqrt(n) = ... >= 1 (not vacuous from n = ... on); ...
    """
    n = spectral.n_samples
    parts = []
    for name, rep, rate in (
        ("spectrum-adaptive", spectral, "capacity/sqrt(n)"),
        ("Edelman-style", edelman, "value/sqrt(n)"),
    ):
        m = rep.samples_needed()
        need = (
            f"not vacuous from n = {_count(m)} on"
            if math.isfinite(m)
            else "vacuous for every n up to 1e40"
        )
        if n is None:
            parts.append(f"{name} {rate}: {need}")
            continue
        gap = rep.gap_at(n)
        g = f"{gap:.3g}" if math.isfinite(gap) else "inf"
        parts.append(f"{name} {rate} = {g} {'>=' if rep.trivial else '<'} 1 ({need})")
    flags = {"spectrum-adaptive": spectral.trivial, "Edelman-style": edelman.trivial}
    if n is None:
        head = "vacuous: undecided, no sample size given (--n-samples N decides it); "
    elif all(flags.values()):
        head = f"vacuous at n = {n}: "
    elif not any(flags.values()):
        head = f"not vacuous at n = {n}: "
    else:
        vac = next(k for k, v in flags.items() if v)
        head = f"{vac} vacuous at n = {n}, the other not: "
    return head + "; ".join(parts) + f"; defined in {DEFINED_IN}"


def matrix_table(report) -> "pd.DataFrame":
    """The per-matrix table a user reads (``--csv``, and ``matrices`` in the JSON): columns ``kind, layer,
    head, rows, cols, rank, sigma_max, frobenius, stable_rank, p_opt, contribution`` (:data:`MATRIX_FIELDS`),
    one row per matrix of a :class:`~genbound.bounds.sakai_imaizumi.SpectralBoundReport`, in its order."""
    import numpy as np

    t = report.table
    smax = t["spectral_norm"].to_numpy(dtype=float)
    fro = t["frobenius_norm"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        stable = np.where(smax > 0, (fro / np.where(smax > 0, smax, 1.0)) ** 2, 0.0)
    out = t[["kind", "layer", "head", "rows", "cols", "rank"]].copy()
    out["sigma_max"], out["frobenius"], out["stable_rank"] = smax, fro, stable
    out["p_opt"], out["contribution"] = (
        t["p_opt"].to_numpy(dtype=float),
        t["contribution"].to_numpy(dtype=float),
    )
    return out.reset_index(drop=True)


def _matrix_rows(table) -> list[dict]:
    rows = []
    for r in table.itertuples(index=False):
        rows.append(
            {
                "kind": r.kind,
                "layer": int(r.layer),
                "head": int(r.head),
                "shape": [int(r.rows), int(r.cols)],
                "rank": int(r.rank),
                "sigma_max": float(r.sigma_max),
                "frobenius": float(r.frobenius),
                "stable_rank": float(r.stable_rank),
                "p_opt": float(r.p_opt),
                "contribution": float(r.contribution),
            }
        )
    return rows


def _p_counts(table) -> dict:
    out = {}
    for kind in KINDS:
        sel = table.loc[table["kind"] == kind, "p_opt"]
        if len(sel):
            out[kind] = {f"{p:g}": int(n) for p, n in sel.value_counts().sort_index().items()}
    return out


def _finite_or_none(x):
    """The JSON policy (:mod:`genbound.jsonsafe`): a non-finite number is ``None``."""
    return None if x is None or not math.isfinite(x) else x


@dataclass(frozen=True)
class Analysis:
    """Both proxies of one checkpoint, with the weights' shape and the wall time.

    :meth:`to_dict` is the ``--json`` object (keys :data:`JSON_FIELDS`); :meth:`matrices` the
    per-matrix table (:func:`matrix_table`).
    """

    spectral: object  # SpectralBoundReport
    edelman: object  # EdelmanProxyReport
    weights: object  # TransformerWeights
    device: str
    seconds: float
    #: False: this report has a bound (:class:`SpectraOnly` has ``True``).
    spectra_only: ClassVar[bool] = False

    def matrices(self):
        """The per-matrix table, a pandas DataFrame with one row per proxy matrix (:func:`matrix_table`;
        columns :data:`MATRIX_FIELDS`, ``shape`` as ``rows, cols``)."""
        return matrix_table(self.spectral)

    def verdict(self) -> str:
        """One line: vacuous or not at the sample size given (:func:`verdict`)."""
        return verdict(self.spectral, self.edelman)

    def to_dict(self) -> dict:
        w, r, e = self.weights, self.spectral, self.edelman
        finite = math.isfinite(e.value)
        mt = self.matrices()
        return {
            "spectral_adaptive": r.value,
            "spectral_adaptive_capacity": r.to_dict()["capacity"],
            "spectral_adaptive_trivial": r.trivial,
            "edelman": e.value if finite else None,
            "edelman_capacity": e.to_dict()["capacity"],
            "edelman_trivial": e.trivial,
            "edelman_log": e.log_value,
            "edelman_overflow": not finite,
            "layers": w.n_layers,
            "hidden": w.hidden,
            "heads": w.n_heads,
            "d_head": w.d_head,
            "d_ff": w.d_ff,
            "n_matrices": len(r.table),
            "matrices": _matrix_rows(mt),
            "p_opt_counts": _p_counts(mt),
            "grid_m": r.grid_m,
            "L_phi": r.L_phi,
            "rank_tol": r.rank_tol,
            "mode": r.mode,
            "p_opt_zero": int((r.table["p_opt"] == 0).sum()),
            "attention_scale": w.attention_scale,
            "device": self.device,
            "seconds": self.seconds,
            "source": w.source,
            "family": w.family,
            "routes": {k: int(v) for k, v in r.table["route"].value_counts().sort_index().items()},
            "n_samples": r.n_samples,
            "spectral_adaptive_gap": _finite_or_none(
                None if r.n_samples is None else r.gap_at(r.n_samples)
            ),
            "spectral_adaptive_samples_needed": _finite_or_none(r.samples_needed()),
            "edelman_gap": _finite_or_none(None if e.n_samples is None else e.gap_at(e.n_samples)),
            "edelman_samples_needed": _finite_or_none(e.samples_needed()),
            "verdict": self.verdict(),
            "defined_in": DEFINED_IN,
        }


class NoBoundError(ArchitectureError, AttributeError):
    """Asked for a bound of a :class:`SpectraOnly` report: the papers' bound does not cover the
    model, so there is none. An ``AttributeError`` too, so ``getattr(a, "spectral", None)`` is
    ``None`` and ``hasattr(a, "spectral")`` is ``False``."""


#: Keys of each row of ``matrices`` in a spectra-only JSON (the ``--csv`` columns, with ``shape`` as
#: ``rows, cols``): the columns of :meth:`genbound.weights.TransformerWeights.matrix_table`.
SPECTRA_FIELDS = {
    "kind": "QK, V, M_in, M_out, and M_gate / router where the block has them",
    "layer": "layer index (0-based, among the analysed layers)",
    "head": "query-head index for QK and V; -1 for the feed-forward kinds",
    "expert": "expert index in a mixture of experts; -1 elsewhere",
    "shape": "[rows, cols] of the matrix",
    "rank": "numerical rank (singular values above rank_tol * min(rows, cols) * max(sigma_max, 1))",
    "sigma_max": "largest singular value (spectral norm)",
    "frobenius": "Frobenius norm",
    "nuclear": "nuclear norm (sum of the singular values)",
    "stable_rank": "frobenius^2 / sigma_max^2 (0 for a zero matrix)",
    "norm_21": "(2,1) norm: the sum of the columns' Euclidean norms",
    "route": "how the spectrum was computed (qr-core, gram, qr-svd)",
    "covered": "whether the papers' bound covers the matrix's block",
    "note": "why not (or what the architecture changes), in words",
}

#: The JSON keys that hold a bound or one of its parameters: ``null`` in a spectra-only report.
_BOUND_KEYS = (
    "spectral_adaptive",
    "spectral_adaptive_capacity",
    "spectral_adaptive_trivial",
    "edelman",
    "edelman_capacity",
    "edelman_trivial",
    "edelman_log",
    "edelman_overflow",
    "p_opt_counts",
    "grid_m",
    "L_phi",
    "mode",
    "p_opt_zero",
    "spectral_adaptive_gap",
    "spectral_adaptive_samples_needed",
    "edelman_gap",
    "edelman_samples_needed",
)


def short_reason(note: str, gqa: str = "", limit: int = 110) -> str:
    """A coverage note on one short line: without the grouped-query explanation ``gqa`` (which says
    how the heads are formed, not why the bound fails), cut to ``limit`` characters.

    >>> short_reason("a; rotary position embeddings: one form per offset", gqa="a")
    'rotary position embeddings: one form per offset'
    """
    if gqa and note.startswith(gqa):
        note = note[len(gqa) :].lstrip("; ")
    return note if len(note) <= limit else note[: limit - 3].rstrip() + "..."


@dataclass(frozen=True)
class SpectraOnly:
    """The report of a model whose blocks the papers' bound does not all cover (rotary query-key
    maps, gated feed-forward blocks, mixtures of experts: ``weights.coverage``): every matrix's
    spectral quantities, and **no bound**.

    :meth:`matrices` is :meth:`~genbound.weights.TransformerWeights.matrix_table` (one row per
    matrix, with ``covered`` and ``note``); :attr:`reasons` maps each uncovered kind to its note;
    ``spectral`` and ``edelman`` raise :class:`NoBoundError` saying why there is no bound;
    ``bound`` is ``None``; ``to_dict()`` is the ``--json`` object: the keys of
    :data:`JSON_FIELDS`, those of a bound ``null``, ``matrices`` with the keys of
    :data:`SPECTRA_FIELDS`, and ``spectra_only`` (``true``), ``bound`` (``null``), ``uncovered``
    (uncovered kind -> its note in full), ``kv_heads`` and ``experts`` (``null`` without experts).
    """

    weights: object  # TransformerWeights
    table: object  # pandas DataFrame (TransformerWeights.matrix_table)
    device: str
    seconds: float
    rank_tol: float
    n_samples: int | None = None
    #: True: there is no bound in this report.
    spectra_only: ClassVar[bool] = True
    #: No bound value: the papers' bound does not cover this model.
    bound: ClassVar[None] = None

    @property
    def reasons(self) -> dict:
        """Uncovered kind -> its coverage note (why the papers' bound does not describe it)."""
        return {k: c.note for k, c in (self.weights.coverage or {}).items() if not c.covered}

    def why_no_bound(self) -> str:
        """One line: no bound, and why."""
        w = self.weights
        return (
            f"no bound: the papers' bound does not cover every block of this {w.family} model "
            f"({', '.join(self.reasons)}); this is a spectra-only report: .matrices() has every "
            f"matrix's spectral quantities"
        )

    @property
    def spectral(self):
        raise NoBoundError(self.why_no_bound())

    @property
    def edelman(self):
        raise NoBoundError(self.why_no_bound())

    def matrices(self):
        """The per-matrix spectra, a pandas DataFrame (columns :data:`SPECTRA_FIELDS`, ``shape`` as
        ``rows, cols``)."""
        return self.table.copy()

    def verdict(self) -> str:
        """One line: there is no bound, so nothing is or is not vacuous."""
        n = "" if self.n_samples is None else f" at n = {self.n_samples}"
        return (
            f"no bound exists for this model, so no gap estimate{n} and no sample size from which "
            f"one is not vacuous; the uncovered kinds: {', '.join(self.reasons)}"
        )

    def to_dict(self) -> dict:
        w, t = self.weights, self.table
        rows = []
        for r in t.itertuples(index=False):
            rows.append(
                {
                    "kind": r.kind,
                    "layer": int(r.layer),
                    "head": int(r.head),
                    "expert": int(r.expert),
                    "shape": [int(r.rows), int(r.cols)],
                    "rank": int(r.rank),
                    "sigma_max": float(r.sigma_max),
                    "frobenius": float(r.frobenius),
                    "nuclear": float(r.nuclear),
                    "stable_rank": float(r.stable_rank),
                    "norm_21": float(r.norm_21),
                    "route": r.route,
                    "covered": bool(r.covered),
                    "note": r.note,
                }
            )
        out = {"spectra_only": True, "bound": None, "uncovered": self.reasons}
        out.update({k: None for k in _BOUND_KEYS})
        out.update(
            {
                "layers": w.n_layers,
                "hidden": w.hidden,
                "heads": w.n_heads,
                "kv_heads": w.kv_heads or w.n_heads,
                "experts": w.n_experts,
                "d_head": w.d_head,
                "d_ff": w.d_ff,
                "n_matrices": len(t),
                "matrices": rows,
                "rank_tol": self.rank_tol,
                "attention_scale": w.attention_scale,
                "device": self.device,
                "seconds": self.seconds,
                "source": w.source,
                "family": w.family,
                "routes": {k: int(v) for k, v in t["route"].value_counts().sort_index().items()},
                "n_samples": self.n_samples,
                "verdict": self.verdict(),
                "defined_in": DEFINED_IN,
            }
        )
        return out


def _weights_of(source, *, config, attention_scale: bool, layers):
    """:class:`~genbound.weights.TransformerWeights` of what :func:`analyze` accepts (see there)."""
    from collections.abc import Mapping

    from .errors import ParameterError
    from .weights import load_weights, weights_from_state_dict

    if isinstance(source, Mapping):
        if config is None:
            raise ParameterError(
                "a state dict carries no sizes: pass its config too, "
                "analyze(state_dict, config=model.config) (a dict or a Hugging Face config)"
            )
        return weights_from_state_dict(
            source, config, attention_scale=attention_scale, layers=layers
        )
    if config is not None:
        if not hasattr(source, "named_parameters"):
            raise ParameterError(
                f"config= applies to a state dict or a torch.nn.Module, not to a "
                f"{type(source).__name__} (a checkpoint folder has its own config.json)"
            )
        return weights_from_state_dict(
            dict(source.named_parameters()),
            config,
            attention_scale=attention_scale,
            layers=layers,
            source=f"module {type(source).__name__}",
        )
    return load_weights(source, attention_scale=attention_scale, layers=layers)


def analyze(
    source,
    *,
    config=None,
    n_samples: int | None = None,
    device=None,
    attention_scale: bool = False,
    mode: str = "exact",
    L_phi: float = 1.13,
    grid_m: int | None = None,
    rank_tol: float = 1e-10,
    layers=None,
    progress: bool = False,
    svd_driver: str | None = None,
) -> "Analysis | SpectraOnly":
    """Both Part III proxies of a model: load ``source`` and evaluate
    :func:`~genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
    :func:`~genbound.bounds.sakai_imaizumi.edelman_proxy` on it (one pass over the layers).

    Reachable as ``genbound.analyze(...)`` (the module :mod:`genbound.analyze` is callable and calls
    this function) and as ``genbound.analyze.analyze(...)``.

    ``source``: a checkpoint folder (what ``genbound analyze PATH`` reads); a ``torch.nn.Module`` of a
    supported family (a Hugging Face model with or without a task head, a ``torch.compile``'d one,
    one wrapped in another module, in float32, float16 or bfloat16: spectra are always taken in
    float64 of the stored values); a state dict (parameter name -> tensor) together with
    ``config`` (a dict or a Hugging Face config with the family's size keys); or
    :class:`~genbound.weights.TransformerWeights`. ``config`` also overrides the sizes of a module.
    A model whose blocks the papers' bound does not all cover (Llama, Mistral, Qwen, Gemma, Phi-3,
    Mixtral, GPT-NeoX, Falcon, GPT-J: ``weights.covered`` is False) gives a :class:`SpectraOnly`
    report instead: every matrix's spectra (``.matrices()``), the reasons per kind (``.reasons``),
    and no bound (``.bound`` is ``None``; ``.spectral``/``.edelman`` raise :class:`NoBoundError`);
    ``.spectra_only`` tells the two apart.
    ``n_samples``: the training-set size; then both reports decide ``trivial`` (vacuous) at it and
    :meth:`Analysis.verdict` says so (:prf:ref:`prop-sa-capacity`). The other keywords are those of
    ``genbound analyze`` (``--help``).

    >>> import torch, transformers, genbound
    >>> cfg = transformers.BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    ...                               intermediate_size=32, vocab_size=40)
    >>> _ = torch.manual_seed(0)
    >>> model = transformers.BertModel(cfg)
    >>> a = genbound.analyze(model, n_samples=10**6)
    >>> a.weights.family, a.to_dict()["n_matrices"], a.spectral.trivial
    ('bert', 12, False)
    >>> t = a.matrices()                        # a pandas DataFrame, one row per matrix
    >>> t.shape, list(t.columns[:4])
    ((12, 11), ['kind', 'layer', 'head', 'rows'])
    >>> float(t["contribution"].sum() + 2 ** 0.5) == a.spectral.value
    True
    >>> genbound.analyze(torch.compile(model)).spectral.value == a.spectral.value
    True
    >>> sd = {k: v.clone() for k, v in model.state_dict().items()}
    >>> genbound.analyze(sd, config=cfg).spectral.value == a.spectral.value
    True
    >>> half = model.half()                     # float16 weights, spectra in float64 of them
    >>> genbound.analyze(half).spectral.value == genbound.analyze(half.double()).spectral.value
    True
    """
    from .bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound
    from .device import resolve_device
    from .errors import ParameterError

    dev = resolve_device(device)
    t0 = time.perf_counter()
    if mode not in ("exact", "authors"):
        raise ParameterError(f"mode must be 'exact' or 'authors', got {mode!r}")
    if n_samples is not None:
        from ._validate import check_positive_int

        n_samples = check_positive_int(n_samples, "n_samples")
    w = _weights_of(source, config=config, attention_scale=attention_scale, layers=layers)
    if not w.covered:  # the papers' bound does not describe some block: spectra only, no bound
        table = w.matrix_table(device=dev, rank_tol=rank_tol)
        return SpectraOnly(
            weights=w,
            table=table,
            device=str(dev),
            seconds=time.perf_counter() - t0,
            rank_tol=rank_tol,
            n_samples=n_samples,
        )
    # every spectrum once: both proxies read these Spectra (no second pass through the weights' cache)
    sp = w.spectra(
        device=dev,
        method="core" if mode == "exact" else "dense",
        progress=progress,
        svd_driver=svd_driver,
    )
    r = spectral_adaptive_bound(
        sp,
        L_phi=L_phi,
        grid_m=grid_m,
        rank_tol=rank_tol,
        device=dev,
        mode=mode,
        progress=progress,
        n_samples=n_samples,
    )
    e = edelman_proxy(r.spectra, L_phi=L_phi, mode=mode, n_samples=n_samples)
    return Analysis(
        spectral=r, edelman=e, weights=w, device=str(dev), seconds=time.perf_counter() - t0
    )


_KINDS_HELP = "; ".join(f"{k} = {v}" for k, v in KINDS.items())


#: The largest grid resolution ``--grid-m`` (the default, ``ceil(L + ln N)``, is a few tens).
MAX_GRID_M = 1000


def add_parser(sub) -> None:
    import argparse
    import textwrap

    def fill(text):
        return textwrap.fill(text, 78, break_on_hyphens=False)

    p = sub.add_parser(
        "analyze",
        help="spectrum-adaptive and Edelman-style proxies of a checkpoint",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=fill(
            "Evaluate the Sakai & Imaizumi (2026) spectrum-adaptive proxy and the Edelman-style "
            "proxy on a checkpoint folder (config.json + model.safetensors) of a family the "
            "papers' bound covers (BERT, RoBERTa, ELECTRA, DistilBERT, GPT-2, OPT, ViT), layer by "
            "layer. For a family it does not cover (Llama, Mistral, Qwen, Gemma, Phi-3, Mixtral, "
            "GPT-NeoX, Falcon, GPT-J) the report is labelled SPECTRA ONLY, NO BOUND: why, per "
            "matrix kind, then every matrix's spectra. --compare B: two checkpoints of one "
            "architecture, matrix by matrix."
        )
        + "\n\n"
        + fill("The proxies sum over products of weights, not over raw weights. Per layer:")
        + "\n"
        + "\n".join(f"  {k:6s} {v}" for k, v in KINDS.items()),
        epilog=fill("--json keys: " + ", ".join(JSON_FIELDS) + ".")
        + "\n"
        + fill(
            "Per-matrix rows (JSON 'matrices', --csv columns): "
            + ", ".join(MATRIX_FIELDS)
            + " (CSV: shape as rows, cols). Descriptions: genbound.analyze.JSON_FIELDS."
        ),
    )
    p.add_argument(
        "path", help="checkpoint folder (config.json + model.safetensors or pytorch_model.bin)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (totals, and 'matrices': one row per QK/V/M_in/M_out matrix)",
    )
    p.add_argument(
        "--csv",
        metavar="FILE",
        help="write the per-matrix table (kind, layer, head, rows, cols, rank, "
        "sigma_max, frobenius, stable_rank, p_opt, contribution) as CSV",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a figure of the per-matrix contributions (format from the "
        "extension: png, pdf, svg, ...)",
    )
    p.add_argument(
        "--device", default="auto", help="auto (CUDA when available), cpu or cuda (default auto)"
    )
    p.add_argument(
        "--attention-scale",
        action="store_true",
        help="put the model's score scale (1/sqrt(d_head)) into every QK = W_Q W_K^T",
    )
    p.add_argument(
        "--mode",
        choices=["exact", "authors"],
        default="exact",
        help="exact: thin-QR cores, sub-threshold values are zeros (default); authors: dense SVD, "
        "threshold only at p = 0",
    )
    p.add_argument(
        "--L-phi", type=float, default=1.13, dest="L_phi", help="activation Lipschitz constant"
    )
    p.add_argument(
        "--grid-m",
        type=int,
        default=None,
        help="grid resolution m, 1 .. 1000 (default ceil(L + ln N))",
    )
    p.add_argument(
        "--rank-tol", type=float, default=1e-10, help="relative rank tolerance (default 1e-10)"
    )
    p.add_argument(
        "--layers",
        type=int,
        nargs="+",
        default=None,
        help="analyse only these layer indices (0-based, each once; treated as the whole network)",
    )
    p.add_argument(
        "--top",
        type=int,
        default=5,
        help="matrices with the largest contributions shown (default 5)",
    )
    p.add_argument(
        "--n-samples",
        type=int,
        default=None,
        dest="n_samples",
        metavar="N",
        help="training-set size: report each estimate of the gap at N (capacity / sqrt(N)), "
        "whether it is vacuous there, and the sample size from which it would not be",
    )
    p.add_argument(
        "--compare",
        metavar="B",
        default=None,
        help="a second checkpoint of the same architecture (for example the fine-tuned model of "
        "a base PATH): a table of each matrix's sigma_max, frobenius, stable_rank, rank (and "
        "contribution, where a bound exists) in PATH and B with their ratio B / PATH and "
        "difference, and the two bound values side by side",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let --csv or --plot replace a file that is a genbound results file of an experiment "
        "(refused without it, so that a trained sweep is not lost to a typo)",
    )
    p.set_defaults(func=run)


def _check_path(path, option: str) -> None:
    import os
    from pathlib import Path

    from .errors import ParameterError

    f = Path(path)
    if f.is_dir():
        raise ParameterError(f"{option} {path}: is a folder; expected a file name")
    parent = f.parent if str(f.parent) else Path(".")
    if not parent.is_dir():
        raise ParameterError(f"{option} {path}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{option} {path}: folder {str(parent)!r} is not writable")


def check_outputs(csv=None, plot=None, *, overwrite: bool = False) -> None:
    """Refuse output paths that could not be written, before any work: ``csv``/``plot`` must name a file in an
    existing, writable folder, must not be a genbound results file of an experiment (unless
    ``overwrite``), and ``plot`` must end in a format matplotlib writes (``.png``, ``.pdf``,
    ``.svg``, ...). Raises :class:`~genbound.errors.ParameterError` naming the option."""
    from pathlib import Path

    from .errors import ParameterError
    from .experiments.runtime.results import results_file_kind

    for option, path in (("--csv", csv), ("--plot", plot)):
        if path is None:
            continue
        _check_path(path, option)
        kind = results_file_kind(path)
        if kind is not None and not overwrite:
            raise ParameterError(
                f"{option} {path}: is a genbound results file of experiment {kind!r}; writing "
                f"the analysis there would replace its rows; choose another file, or pass "
                f"--overwrite to replace it"
            )
    if plot is not None:
        FigureCanvasBase = require(
            "matplotlib.backend_bases", "genbound analyze --plot"
        ).FigureCanvasBase

        formats = sorted(FigureCanvasBase.get_supported_filetypes())
        ext = Path(plot).suffix.lower().lstrip(".")
        if ext not in formats:
            what = (
                f"format {ext!r} is not one matplotlib writes"
                if ext
                else "has no extension to give the format"
            )
            raise ParameterError(f"--plot {plot}: {what}; use one of {', '.join(formats)}")


def fix_heap_growth(threshold: int = 128 * 1024) -> bool:
    """Pin glibc's mmap threshold (``mallopt(M_MMAP_THRESHOLD, 128 KiB)``) for this process.

    glibc raises the threshold after a large block is freed, so later layer-sized temporaries come
    from the heap, which fragments and keeps several layers' worth of memory resident. The
    ``analyze`` command owns its process and pins the threshold, so every layer-sized temporary is
    mapped and unmapped on its own and the peak stays near one layer (measured in
    ``benchmarks/RESULTS.md``). The library never changes allocator settings. Returns whether the
    setting was applied (False where glibc is not available).
    """
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(-3, int(threshold)))  # -3 = M_MMAP_THRESHOLD (malloc.h)
    except (OSError, AttributeError):
        return False


def run(args) -> int:
    from .errors import ParameterError

    require("torch", "genbound analyze")
    check_outputs(csv=args.csv, plot=args.plot, overwrite=getattr(args, "overwrite", False))
    if args.top < 0:
        raise ParameterError(f"--top must be >= 0, got {args.top}")
    if args.n_samples is not None and args.n_samples < 1:
        raise ParameterError(f"--n-samples must be >= 1, got {args.n_samples}")
    if args.grid_m is not None:
        from ._validate import check_int_range

        check_int_range(args.grid_m, "--grid-m", 1, MAX_GRID_M, why="MAX_GRID_M")
    if not 0.0 <= args.rank_tol < 1.0:  # NaN fails this too
        raise ParameterError(
            f"--rank-tol must lie in [0, 1) (relative to sigma_max), got {args.rank_tol}"
        )
    fix_heap_growth()
    progress = (not args.quiet) and sys.stderr.isatty()
    if args.plot and getattr(args, "compare", None) is not None:
        raise ParameterError("--plot and --compare together: draw each model's figure on its own")
    if args.plot:
        # the figure draws the bound's contributions: refused without a bound, before any spectrum
        from .weights import load_weights

        w = load_weights(args.path, layers=args.layers)
        if not w.covered:
            raise ParameterError(
                f"--plot {args.plot}: the figure draws each matrix's contribution to the bound, and "
                f"this {w.family} model has none (the papers' bound does not cover "
                f"{', '.join(k for k, c in w.coverage.items() if not c.covered)}); drop --plot for "
                f"its spectra-only report"
            )
    kwargs = dict(
        device=args.device,
        attention_scale=args.attention_scale,
        mode=args.mode,
        L_phi=args.L_phi,
        grid_m=args.grid_m,
        rank_tol=args.rank_tol,
        layers=args.layers,
        progress=progress,
        n_samples=args.n_samples,
    )
    if getattr(args, "compare", None) is not None:
        from .compare import run_compare

        return run_compare(args, kwargs)
    a = analyze(args.path, **kwargs)
    table = a.matrices()
    if args.csv:
        table.to_csv(args.csv, index=False)
    if a.spectra_only:
        d = a.to_dict()
        print(json.dumps(d) if args.json else spectra_only_report(a, d, table))
        return 0
    if args.plot:
        write_plot(a.spectral, args.plot)
    d = a.to_dict()
    if args.json:
        print(json.dumps(d))
        return 0
    print(console_report(a, d, table, top=args.top))
    return 0


def console_report(a: Analysis, d: dict, table, *, top: int = 5) -> str:
    """The text ``genbound analyze`` prints without ``--json``."""
    n = d["n_matrices"]
    lines = [
        f"{d['source']}: {d['family']}, {d['layers']} layers, hidden {d['hidden']}, {d['heads']} heads (d_head "
        f"{d['d_head']}), d_ff {d['d_ff']}; {n} matrices; device {d['device']}; {d['seconds']:.2f} s",
        "matrices per layer: QK = one head's W_Q W_K^T, V = one head's W_V W_O (one each per head), "
        "M_in and M_out = the feed-forward matrices",
        "spectrum routes: " + ", ".join(f"{k} {v}" for k, v in d["routes"].items()),
        f"spectral-adaptive proxy (Sakai & Imaizumi): {a.spectral.value:.6g}   [sum over {n} matrices of "
        f"min_p T(p), + sqrt(L); grid m = {d['grid_m']}, mode {d['mode']}]",
    ]
    ed = f"{a.edelman.value:.6g}" if math.isfinite(a.edelman.value) else "inf in float64"
    lines.append(f"Edelman-style proxy: {ed}   (log = {a.edelman.log_value:.6g})")
    lines.append(d["verdict"])
    lines.append("chosen Schatten index p_opt per kind (p: count):")
    for kind, counts in d["p_opt_counts"].items():
        lines.append(f"  {kind:6s} " + ", ".join(f"p = {p}: {c}" for p, c in counts.items()))
    if d["p_opt_zero"] == n:
        lines.append(
            f"p = 0 wins for all {n} matrices: the proxy is then sum sqrt(rank * N) + sqrt(L) over the "
            f"matrices, a function of the shapes and ranks only: no norm or singular value of any "
            f"weight enters it."
        )
    if top:
        k = min(top, n)
        big = table.sort_values("contribution", ascending=False, kind="stable").head(k)
        share = (
            big["contribution"].sum() / a.spectral.value if a.spectral.value > 0 else float("nan")
        )
        lines.append(f"largest {k} contributions ({share:.1%} of the proxy):")
        show = big[
            ["kind", "layer", "head", "rank", "sigma_max", "stable_rank", "p_opt", "contribution"]
        ]
        lines.append(show.to_string(index=False, float_format=lambda x: f"{x:.5g}"))
    t = a.spectral.table
    per = (
        t.groupby(["layer", "kind"], sort=False)["contribution"].sum().unstack("kind")[list(KINDS)]
    )
    per.insert(0, "log_alpha", a.edelman.table["log_alpha"].to_numpy())
    lines.append("per-layer sums of min_p T(p):")
    lines.append(per.to_string(float_format=lambda x: f"{x:.5g}"))
    return "\n".join(lines)


def spectra_only_report(a: SpectraOnly, d: dict, table) -> str:
    """The text ``genbound analyze`` prints for a model the papers' bound does not cover: the label
    and one line per uncovered kind first, then every matrix's spectral quantities."""
    w = a.weights
    gqa = (w.coverage or {}).get("V")
    gqa = gqa.note if gqa is not None else ""
    lines = [
        f"SPECTRA ONLY, NO BOUND: the papers' bound does not cover every block of this {d['family']} "
        f"model, so genbound gives no bound value for it; not covered:",
    ]
    for kind, note in a.reasons.items():
        lines.append(f"  {kind:6s} {short_reason(note, gqa)}")
    lines.append("  (each reason in full: --json 'uncovered', or the note column of --csv)")
    if a.n_samples is not None:
        lines.append(
            f"--n-samples {a.n_samples}: no bound exists for this model, so there is no gap "
            f"estimate at n = {a.n_samples} and no sample size from which one is not vacuous"
        )
    experts = f", {d['experts']} experts" if d["experts"] else ""
    lines.append(
        f"{d['source']}: {d['family']}, {d['layers']} layers, hidden {d['hidden']}, {d['heads']} "
        f"heads ({d['kv_heads']} key/value), d_head {d['d_head']}, d_ff {d['d_ff']}{experts}; "
        f"{d['n_matrices']} matrices; device {d['device']}; {d['seconds']:.2f} s"
    )
    lines.append("per-matrix spectra (covered = whether the papers' bound describes the block):")
    show = table.drop(columns=["note"])
    lines.append(show.to_string(index=False, float_format=lambda x: f"{x:.5g}"))
    return "\n".join(lines)


def write_plot(report, path) -> None:
    """Write ``genbound.plotting.plot_contributions`` of ``report`` to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plotting import plot_contributions

    ax = plot_contributions(report)
    ax.figure.savefig(path, bbox_inches="tight")
    plt.close(ax.figure)


#: The former name of :func:`write_plot` (kept importable).
plot_contributions = write_plot


class _CallableModule(type(sys)):
    """The type of this module: ``genbound.analyze(...)`` calls :func:`analyze`, so the function is
    reachable by the package's name while ``genbound.analyze`` stays this module (``from
    genbound.analyze import MATRIX_FIELDS`` and the ``genbound analyze`` command read it)."""

    def __call__(self, *args, **kwargs) -> Analysis:
        return analyze(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
