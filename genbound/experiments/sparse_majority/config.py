"""Every setting of one sparse-majority run (part of :mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..._validate import check_positive_int, check_real
from ...device import resolve_dtype
from ...errors import ParameterError
from .task import D_HEAD, D_MODEL, N_HEADS, S_RELEVANT, _check_task
from ..fullbatch import AdamProtocol

__all__ = ["PROTOCOLS", "SparseMajorityConfig"]

#: The training protocols, ``"adam"`` (full-batch Adam, the CPU default) and ``"original"`` (the authors' SGD).
PROTOCOLS = ("adam", "original")


@dataclass(frozen=True)
class SparseMajorityConfig:
    """Every setting of one run. ``protocol`` chooses the optimiser:

    * ``"adam"`` (default): full-batch Adam (:mod:`genbound.experiments.fullbatch`), peak rate
      ``adam_lr`` with ``warmup`` steps of linear warm-up and cosine decay to zero at ``steps``; a model
      stops at the first step whose weights classify the whole training set correctly (checked in
      float64). Chosen from pilots (``genbound/data/sparse_majority_pilots.csv`` and its notes
      ``sparse_majority_pilots.md``) to fit at every ``T`` from 16 to 1024 on two CPU cores.
    * ``"original"``: the authors' schedule: SGD (``lr``, ``momentum``), ``lr <- max(lr_floor,
      lr_decay lr)`` every epoch, batches of ``batch_size``, stop at the first epoch whose running
      (Keras-style) training accuracy is 1.0, at most ``max_epochs`` epochs (200,000 is feasible on a GPU).

    The primary checkpoint is always the **stopping** one (the first that fits, or the last weights of
    a run that never fits). Secondary: the checkpoint of lowest validation loss up to the stop, and,
    with ``track_test_selection`` (original protocol only), the lowest test loss (the original's
    choice). ``eval_every``: steps (adam) or epochs (original) between validation evaluations
    (``None``: 250 steps or 10 epochs). ``dtype``: training precision (everything reported is
    evaluated in float64). ``delta``, ``margin``: confidence and ramp margin of the bounds; ``m_star``:
    also compute :func:`sample_size_needed` (about a second per run).
    """

    s: int = S_RELEVANT
    d: int = D_MODEL
    n_heads: int = N_HEADS
    d_head: int = D_HEAD
    n_train: int = 300
    n_val: int = 1000
    n_test: int = 10_000
    protocol: str = "adam"
    steps: int = 40_000
    adam_lr: float = 1e-3
    warmup: int = 300
    batch_size: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    lr_decay: float = 0.999
    lr_floor: float = 0.001
    max_epochs: int = 2000
    eval_every: int | None = None
    track_test_selection: bool = False
    dtype: str = "float32"
    delta: float = 0.05
    margin: float = 1.0
    m_star: bool = True
    eval_chunk: int = 2000

    def validated(self) -> "SparseMajorityConfig":
        """Return ``self`` after checking every field (raises :class:`~genbound.errors.ParameterError`)."""
        _check_task(self.s, self.s)
        if self.protocol not in PROTOCOLS:
            raise ParameterError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        for name in (
            "d",
            "n_heads",
            "d_head",
            "n_train",
            "n_val",
            "n_test",
            "batch_size",
            "max_epochs",
            "steps",
            "eval_chunk",
        ):
            check_positive_int(getattr(self, name), name)
        if self.eval_every is not None:
            check_positive_int(self.eval_every, "eval_every")
        if self.d < 3:
            raise ParameterError(f"d = {self.d} must be >= 3 (three orthogonal token embeddings)")
        check_real(self.lr, "lr", lo=0.0, lo_open=True)
        check_real(self.momentum, "momentum", lo=0.0, hi=1.0, hi_open=True)
        check_real(self.lr_decay, "lr_decay", lo=0.0, lo_open=True, hi=1.0)
        check_real(self.lr_floor, "lr_floor", lo=0.0)
        check_real(self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        check_real(self.margin, "margin", lo=0.0, lo_open=True)
        if self.track_test_selection and self.protocol != "original":
            raise ParameterError(
                "track_test_selection reconstructs the original protocol's choice; "
                "it needs protocol='original'"
            )
        self.adam_protocol()
        resolve_dtype(self.dtype)
        return self

    @property
    def eval_interval(self) -> int:
        """The validation cadence, ``eval_every`` or else 250 steps (adam) or 10 epochs (original)."""
        if self.eval_every is not None:
            return int(self.eval_every)
        return 250 if self.protocol == "adam" else 10

    def adam_protocol(self):
        """The :class:`~genbound.experiments.fullbatch.AdamProtocol` of the ``"adam"`` protocol."""

        return AdamProtocol(
            lr=self.adam_lr, steps=self.steps, warmup=self.warmup, eval_every=self.eval_interval
        ).validated()
