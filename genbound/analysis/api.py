"""``genbound.analyze(model)``: both Part III proxies of one model, from Python.

Book: :ref:`ch-sakai-trained`. :func:`analyze` takes a model object, a state dict with its config, or a
checkpoint folder (``config.json`` + ``model.safetensors``, a sharded ``model.safetensors.index.json``
or ``pytorch_model.bin``) of a supported family (``genbound.weights.families``), loads it layer by
layer and evaluates the spectrum-adaptive proxy of Sakai & Imaizumi (2026) and their Edelman-style
proxy in one pass. ``n_samples=N`` adds the gap estimates at ``N`` and decides the verdict
(:func:`~genbound.analysis.report.verdict`).

A model whose blocks the papers' bound does not all cover gets a spectra-only report
(:class:`SpectraOnly`): every matrix's spectral quantities and the reasons per uncovered kind, and
never a bound value (its ``spectral`` and ``edelman`` raise :class:`NoBoundError`).

One concept: the library entry of the analysis (load what the caller holds, both proxies or the
spectra only, the result objects); their text and rows are :mod:`genbound.analysis.report`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import ArchitectureError, ParameterError
from . import report
from .identity import source_record

__all__ = ["Analysis", "SpectraOnly", "NoBoundError", "analyze", "weights_of"]


@dataclass(frozen=True)
class Analysis:
    """Both proxies of one checkpoint, with the weights' shape and the wall time.

    :meth:`to_dict` is the ``--json`` object (keys :data:`~genbound.analysis.report.JSON_FIELDS`);
    :meth:`matrices` the per-matrix table (:func:`~genbound.analysis.report.matrix_table`).
    """

    spectral: object  # SpectralBoundReport
    edelman: object  # EdelmanProxyReport
    weights: object  # TransformerWeights
    device: str
    seconds: float
    #: theorem P on the reference model built from these matrices (:class:`~genbound.bounds.network.NetworkBound`)
    network: object = None
    #: which bytes it was computed from (:mod:`genbound.analysis.identity`; keys ``CHECKPOINT_FIELDS``)
    checkpoint: dict | None = field(default=None, repr=False)
    #: False: this report has a bound (:class:`SpectraOnly` has ``True``).
    spectra_only: ClassVar[bool] = False

    def matrices(self):
        """The per-matrix table, a pandas DataFrame with one row per proxy matrix
        (:func:`~genbound.analysis.report.matrix_table`; columns
        :data:`~genbound.analysis.report.MATRIX_FIELDS`, ``shape`` as ``rows, cols``)."""
        return report.matrix_table(self.spectral, self.network)

    def verdict(self) -> str:
        """One line: vacuous or not at the sample size given, decided by the proved bound
        (:func:`~genbound.analysis.report.verdict`)."""
        return report.verdict(self.spectral, self.edelman, self.network)

    def to_dict(self) -> dict:
        """The ``--json`` object (:func:`~genbound.analysis.report.analysis_dict`)."""
        return report.analysis_dict(self)


class NoBoundError(ArchitectureError, AttributeError):
    """Asked for a bound of a :class:`SpectraOnly` report: the papers' bound does not cover the
    model, so there is none. An ``AttributeError`` too, so ``getattr(a, "spectral", None)`` is
    ``None`` and ``hasattr(a, "spectral")`` is ``False``."""


@dataclass(frozen=True)
class SpectraOnly:
    """The report of a model whose blocks the papers' bound does not all cover (rotary query-key
    maps, gated feed-forward blocks, mixtures of experts: ``weights.coverage``): every matrix's
    spectral quantities, and **no bound**.

    :meth:`matrices` is :meth:`~genbound.weights.TransformerWeights.matrix_table` (one row per
    matrix, with ``covered`` and ``note``); :attr:`reasons` maps each uncovered kind to its note;
    ``spectral`` and ``edelman`` raise :class:`NoBoundError` saying why there is no bound;
    ``bound`` is ``None``; ``to_dict()`` is the ``--json`` object: the keys of
    :data:`~genbound.analysis.report.JSON_FIELDS`, those of a bound ``null``, ``matrices`` with the
    keys of :data:`~genbound.analysis.report.SPECTRA_FIELDS`, and ``spectra_only`` (``true``),
    ``bound`` (``null``), ``uncovered`` (uncovered kind -> its note in full), ``kv_heads`` and
    ``experts`` (``null`` without experts).
    """

    weights: object  # TransformerWeights
    table: object  # pandas DataFrame (TransformerWeights.matrix_table)
    device: str
    seconds: float
    rank_tol: float
    n_samples: int | None = None
    #: every matrix's singular values (:class:`~genbound.weights.model.MatrixSpectrum`), table order
    spectra: tuple = field(default=(), repr=False)
    #: which bytes it was computed from (:mod:`genbound.analysis.identity`; keys ``CHECKPOINT_FIELDS``)
    checkpoint: dict | None = field(default=None, repr=False)
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
        """The per-matrix spectra, a pandas DataFrame (columns
        :data:`~genbound.analysis.report.SPECTRA_FIELDS`, ``shape`` as ``rows, cols``)."""
        return self.table.copy()

    def verdict(self) -> str:
        """One line: there is no bound, so nothing is or is not vacuous."""
        n = "" if self.n_samples is None else f" at n = {self.n_samples}"
        return (
            f"no bound exists for this model, so no gap estimate{n} and no sample size from which "
            f"one is not vacuous; the uncovered kinds: {', '.join(self.reasons)}"
        )

    def to_dict(self) -> dict:
        """The ``--json`` object (:func:`~genbound.analysis.report.spectra_only_dict`)."""
        return report.spectra_only_dict(self)


def _weights_of_module(source, config, *, attention_scale: bool, layers):
    """The weights of a ``torch.nn.Module`` read with the sizes of ``config``."""
    from ..weights import weights_from_state_dict

    if not hasattr(source, "named_parameters"):
        raise ParameterError(
            f"config= applies to a state dict or a torch.nn.Module, not to a "
            f"{type(source).__name__} (a checkpoint folder has its own config.json)"
        )
    from ..weights.modules import merged_parameters, unwrap_holders

    where = f"module {type(source).__name__}"
    inner = unwrap_holders(source)[0] if hasattr(source, "_modules") else source
    return weights_from_state_dict(
        merged_parameters(inner, where),
        config,
        attention_scale=attention_scale,
        layers=layers,
        source=where,
    )


def weights_of(source, *, config=None, attention_scale: bool = False, layers=None):
    """:class:`~genbound.weights.TransformerWeights` of what :func:`analyze` accepts (see there): a
    state dict needs its ``config``; a module takes one to override its sizes; anything else goes to
    :func:`~genbound.weights.load_weights`."""
    from ..weights import load_weights, weights_from_state_dict

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
        return _weights_of_module(source, config, attention_scale=attention_scale, layers=layers)
    return load_weights(source, attention_scale=attention_scale, layers=layers)


def _checked_arguments(mode: str, n_samples):
    """Refuse a mode other than ``exact``/``authors``; ``n_samples`` as a positive int (or ``None``)."""
    if mode not in ("exact", "authors"):
        raise ParameterError(f"mode must be 'exact' or 'authors', got {mode!r}")
    if n_samples is None:
        return None
    from .._validate import check_positive_int

    return check_positive_int(n_samples, "n_samples")


def _both_proxies(
    w, dev, *, mode, L_phi, grid_m, rank_tol, progress, svd_driver, n_samples, proved
):
    """The spectrum-adaptive and the Edelman-style report of ``w`` and theorem P's bound (``proved``: its
    keywords), every spectrum computed once (theorem P reads the exact spectra: in mode ``authors`` they
    are computed a second time)."""
    from ..bounds.network import network_bound
    from ..bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound

    # both proxies read these Spectra (no second pass through the weights' cache)
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
    exact = sp if mode == "exact" else w.spectra(device=dev, method="core", svd_driver=svd_driver)
    nb = network_bound(exact, n_samples, L_phi=L_phi, grid_m=grid_m, **proved)
    return r, edelman_proxy(r.spectra, L_phi=L_phi, mode=mode, n_samples=n_samples), nb


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
    delta: float = 0.05,
    margin: float = 1.0,
    input_radius: float = 1.0,
    seq_len: int | None = None,
    digest: bool = True,
) -> "Analysis | SpectraOnly":
    """Both Part III proxies of a model: load ``source`` and evaluate
    :func:`~genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
    :func:`~genbound.bounds.sakai_imaizumi.edelman_proxy` on it (one pass over the layers).

    Reachable as ``genbound.analyze(...)`` and as ``genbound.analysis.analyze(...)``.

    ``source``: a checkpoint folder (what ``genbound analyze PATH`` reads); a ``torch.nn.Module`` of a
    supported family (a Hugging Face model with or without a task head, a ``torch.compile``'d one,
    one wrapped in another module, in float32, float16 or bfloat16: spectra are always taken in
    float64 of the stored values); a state dict (parameter name -> tensor) together with
    ``config`` (a dict or a Hugging Face config with the family's size keys); or
    :class:`~genbound.weights.TransformerWeights`. ``config`` also overrides the sizes of a module.
    A model whose blocks the papers' bound does not all cover (Llama, Mistral, Qwen, Gemma, Phi-3,
    Mixtral, GPT-NeoX, Falcon, GPT-J, BLOOM, DeBERTa-v2: ``weights.covered`` is False) gives a :class:`SpectraOnly`
    report instead: every matrix's spectra (``.matrices()``), the reasons per kind (``.reasons``),
    and no bound (``.bound`` is ``None``; ``.spectral``/``.edelman`` raise :class:`NoBoundError`);
    ``.spectra_only`` tells the two apart.
    ``n_samples``: the training-set size; then every report decides ``trivial`` (vacuous) at it and
    :meth:`Analysis.verdict` says so. The verdict is the **proved** bound's, ``.network``
    (:prf:ref:`thm-p-network`, on the reference model built from these matrices, with premises ``delta``,
    ``margin``, ``input_radius`` and ``seq_len``); the two proxies are printed as what they are, not bounds.
    ``.checkpoint`` says which bytes the report was computed from (:mod:`genbound.analysis.identity`):
    a folder's files with their sizes and SHA-256 and one combined digest, or a digest of a model's
    tensors; ``digest=False`` (``--no-hash``) lists the files and sizes without hashing them.
    The other keywords are those of ``genbound analyze`` (``--help``).

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
    ((12, 15), ['kind', 'layer', 'head', 'rows'])
    >>> float(t["contribution"].sum() + 2 ** 0.5) == a.spectral.value
    True
    >>> genbound.analyze(torch.compile(model)).spectral.value == a.spectral.value
    True
    >>> a.checkpoint["kind"], a.checkpoint["tensors"], len(a.checkpoint["sha256"])
    ('module', 39, 64)
    >>> sd = {k: v.clone() for k, v in model.state_dict().items()}
    >>> genbound.analyze(sd, config=cfg).spectral.value == a.spectral.value
    True
    >>> half = model.half()                     # float16 weights, spectra in float64 of them
    >>> genbound.analyze(half).spectral.value == genbound.analyze(half.double()).spectral.value
    True
    """
    from ..device import resolve_device

    dev = resolve_device(device)
    t0 = time.perf_counter()
    n_samples = _checked_arguments(mode, n_samples)
    w = weights_of(source, config=config, attention_scale=attention_scale, layers=layers)
    if not w.covered:  # the papers' bound does not describe some block: spectra only, no bound
        ms = tuple(w.matrix_spectra(device=dev))  # kept for the figure and --svals
        table = w.matrix_table(rank_tol=rank_tol, spectra=ms)
        seconds = time.perf_counter() - t0
        return SpectraOnly(
            w,
            table,
            str(dev),
            seconds,
            rank_tol=rank_tol,
            n_samples=n_samples,
            spectra=ms,
            checkpoint=source_record(source, w, digest=digest),
        )
    r, e, nb = _both_proxies(
        w,
        dev,
        mode=mode,
        L_phi=L_phi,
        grid_m=grid_m,
        rank_tol=rank_tol,
        progress=progress,
        svd_driver=svd_driver,
        n_samples=n_samples,
        proved=dict(delta=delta, margin=margin, input_radius=input_radius, seq_len=seq_len),
    )
    seconds = time.perf_counter() - t0
    return Analysis(r, e, w, str(dev), seconds, nb, source_record(source, w, digest=digest))
