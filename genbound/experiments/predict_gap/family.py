"""The family of Part V: its configuration, its two tasks and its models. Book: :ref:`ch-predict-gap`.

Coupling. A model is named by its setting (task and one value of every axis of
``AXES``) and its seed index. Everything random about a model
depends on the task and the seed index only, never on the setting: the initialisation seed
(:func:`~genbound.experiments.predict_gap.init_seed`), the data seed, the split. Training sets are
**nested**: the ``n`` training examples of seed index ``s`` are the first ``n`` of one fixed draw, and
the test set of seed index ``s`` is the same for every training-set size. So two models of one seed
index that differ in one axis differ in that axis only (Dziugaite et al. 2020 call such a pair coupled).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import torch

from ..._validate import check_positive_int, check_real
from ...errors import ParameterError
from ..runtime.seeds import batch_seed, family_data_seed, flip_seed, init_seed
from ...errors import require
from ..sparse_majority import sinusoidal_encoding
from ...nets import ReferenceTransformer
from ..fullbatch import AdamProtocol
from ..sparse_majority import uniform_input_radius
from ..sparse_majority import make_task

__all__ = [
    "TASKS",
    "AXES",
    "FamilyConfig",
    "TaskData",
    "corrupt_labels",
    "corrupt_inputs",
    "make_task_data",
    "init_seed",
    "batch_seed",
    "flip_seed",
    "task_shape",
    "build_model",
]

#: The two tasks. ``sparse-majority``: Part II's task at ``T = 16`` (``s = 9``) with embeddings of the
#: model's width; ``digits``: scikit-learn's bundled 8x8 digits (1,797 images, 10 classes), rows as tokens.
TASKS = ("sparse-majority", "digits")
#: The hyperparameter axes: CSV columns, one value each per model (the seed index is ``seed``).
AXES = (
    "depth",
    "width",
    "lr",
    "batch",
    "weight_decay",
    "init_scale",
    "label_noise",
    "input_flip",
    "n_train",
)

_SM_SEQ_LEN = 16
_DIGIT_ROWS = 8
_N_DIGITS = 1797


@dataclass(frozen=True)
class FamilyConfig:
    """The factorial ``depths x widths x lrs x batches x weight_decays x init_scales x label_noises x
    input_flips x n_train[task]`` on
    every task of ``tasks``, times ``seeds`` seed indices, trained in stacks of at most ``stack`` seed
    indices of one setting; the seed indices come in blocks of ``stack``, and every setting of a block is
    trained before the next block starts (so a family cut short is a complete factorial over fewer seed
    indices). Training: Adam at peak learning rate ``lr``, on the full training set (``batch`` 0) or on a
    fresh mini-batch of ``batch`` examples per step, ``warmup`` steps of warm-up, cosine decay over the
    budget ``steps``, decoupled ``weight_decay``; ``label_noise``: the share of training labels replaced
    by a wrong one (:func:`corrupt_labels`; the test labels are clean); ``input_flip``: the probability
    with which each training input unit is corrupted at every step (:func:`corrupt_inputs`; the fit is
    checked on the clean inputs); a model is fitted at the first
    step at which it classifies its whole (noisy) training set correctly. ``n_test``: test sequences of sparse majority (digits test on the images
    beyond the largest training set). ``delta``, ``margin``: confidence and ramp margin at which the
    Part II bounds are evaluated. ``margin_quantile``: the quantile of the training margins that
    normalises capacities. ``flat_*``: the magnitude-aware flatness measure (largest multiplicative noise
    ``sigma'`` whose mean training error over ``flat_draws`` seeded draws exceeds the model's own by at
    most ``flat_error``; bisection on ``[0, flat_hi]`` in ``flat_steps`` steps)."""

    tasks: tuple[str, ...] = TASKS
    depths: tuple[int, ...] = (1, 2)
    widths: tuple[int, ...] = (12, 32)
    lrs: tuple[float, ...] = (1e-2,)
    batches: tuple[int, ...] = (0,)
    weight_decays: tuple[float, ...] = (0.0,)
    init_scales: tuple[float, ...] = (1.0,)
    label_noises: tuple[float, ...] = (0.0, 0.1)
    input_flips: tuple[float, ...] = (0.0, 0.05)
    n_train: dict = field(
        default_factory=lambda: {"sparse-majority": (30, 120), "digits": (100, 400)}
    )
    seeds: int = 24
    stack: int = 12
    steps: int = 3000
    warmup: int = 50
    n_test: int = 2000
    delta: float = 0.05
    margin: float = 1.0
    margin_quantile: float = 0.1
    flat_error: float = 0.1
    flat_draws: int = 8
    flat_steps: int = 12
    flat_hi: float = 2.0

    def validated(self) -> "FamilyConfig":
        """Return ``self`` after checking every field (raises :class:`~genbound.errors.ParameterError`)."""
        if not self.tasks:
            raise ParameterError("the family needs at least one task")
        for t in self.tasks:
            if t not in TASKS:
                raise ParameterError(f"unknown task {t!r}; expected one of {TASKS}")
            if t not in self.n_train or not self.n_train[t]:
                raise ParameterError(f"n_train has no sizes for task {t!r}")
            for n in self.n_train[t]:
                check_positive_int(n, f"n_train[{t!r}]", minimum=2)
            if t == "digits" and max(self.n_train[t]) > _N_DIGITS - 100:
                raise ParameterError(
                    "digits: n_train must leave at least 100 of the 1,797 images for testing"
                )
        for name in ("depths", "widths", "lrs"):
            if not getattr(self, name):
                raise ParameterError(f"{name} must name at least one value")
        for L in self.depths:
            check_positive_int(L, "depth")
        for w in self.widths:
            check_positive_int(w, "width", minimum=10)
            if w % 2:
                raise ParameterError(f"width {w} must be even (two heads of width/2)")
        for lr in self.lrs:
            check_real(lr, "lr", lo=0.0, lo_open=True)
        if not self.label_noises:
            raise ParameterError("label_noises must name at least one value")
        for q in self.label_noises:
            check_real(q, "label_noise", lo=0.0, hi=1.0, hi_open=True)
        if not self.input_flips:
            raise ParameterError("input_flips must name at least one value")
        for r in self.input_flips:
            check_real(r, "input_flip", lo=0.0, hi=1.0, hi_open=True)
        for name in ("batches", "weight_decays"):
            if not getattr(self, name):
                raise ParameterError(f"{name} must name at least one value")
        for b in self.batches:
            if not isinstance(b, int) or isinstance(b, bool) or b < 0:
                raise ParameterError(f"batch must be an integer >= 0 (0: full batch), got {b!r}")
        for wd in self.weight_decays:
            check_real(wd, "weight_decay", lo=0.0)
        if not self.init_scales:
            raise ParameterError("init_scales must name at least one value")
        for a in self.init_scales:
            check_real(a, "init_scale", lo=0.0, lo_open=True)
        check_positive_int(self.seeds, "seeds")
        check_positive_int(self.stack, "stack")
        check_positive_int(self.steps, "steps")
        check_positive_int(self.n_test, "n_test")
        check_real(self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        check_real(self.margin, "margin", lo=0.0, lo_open=True)
        check_real(self.margin_quantile, "margin_quantile", lo=0.0, hi=1.0)
        check_real(self.flat_error, "flat_error", lo=0.0, hi=1.0, lo_open=True)
        check_positive_int(self.flat_draws, "flat_draws")
        check_positive_int(self.flat_steps, "flat_steps")
        check_real(self.flat_hi, "flat_hi", lo=0.0, lo_open=True)

        AdamProtocol(steps=self.steps, warmup=self.warmup).validated()
        return self

    def settings(self) -> list[dict]:
        """Every setting of the factorial (task and one value per axis), in a fixed order."""
        out = []
        for task in self.tasks:
            for L, w, lr, b, wd, a, q, r, n in itertools.product(
                self.depths,
                self.widths,
                self.lrs,
                self.batches,
                self.weight_decays,
                self.init_scales,
                self.label_noises,
                self.input_flips,
                self.n_train[task],
            ):
                out.append(
                    {
                        "task": task,
                        "depth": int(L),
                        "width": int(w),
                        "lr": float(lr),
                        "batch": int(b),
                        "weight_decay": float(wd),
                        "init_scale": float(a),
                        "label_noise": float(q),
                        "input_flip": float(r),
                        "n_train": int(n),
                    }
                )
        return out


@dataclass(frozen=True)
class TaskData:
    """Inputs ``X`` ``(n, T + 1, d)`` (float64, the [CLS] row last) and labels for train and test, the
    number of classes, and ``B_X``: a bound on every input row's l2 norm that holds for every input the
    task can produce (fixed before the data are drawn)."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    B_X: float
    #: ``flip``: what corrupting each input unit of the training set adds to ``X_train`` (same shape): a
    #: sparse-majority bit ``b`` turned into ``1 - b`` (``embed(1 - b) - embed(b)``, per position; the
    #: [CLS] row 0), or a digits pixel intensity ``v`` turned into ``1 - v`` (``1 - 2 v`` on the pixel
    #: coordinates, 0 elsewhere); ``flip_unit``: ``"position"`` (one draw per row) or ``"coordinate"``.
    #: See :func:`corrupt_inputs`.
    flip: torch.Tensor | None = None
    flip_unit: str = "position"


@functools.lru_cache(maxsize=8)
def _digits_inputs(width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All 1,797 digits as sequences: row ``r`` of the image (8 pixels scaled to ``[0, 1]``) in the
    first 8 coordinates and the sinusoidal encoding of ``r`` in the other ``width - 8``; a [CLS] row
    (pixels 0, encoding of position 8) last. Every coordinate lies in ``[-1, 1]``, so ``||x|| <= sqrt(d)``."""

    load_digits = require("sklearn.datasets", "the digits task of Part V").load_digits

    data = load_digits()
    img = torch.as_tensor(data.images, dtype=torch.float64) / 16.0  # (N, 8, 8)
    N = img.shape[0]
    pe = sinusoidal_encoding(_DIGIT_ROWS + 1, width - 8)  # (9, d - 8)
    rows = torch.cat(
        [torch.cat([img, torch.zeros(N, 1, 8, dtype=torch.float64)], 1), pe.expand(N, -1, -1)],
        dim=-1,
    )  # (N, 9, d)
    return rows, torch.as_tensor(data.target, dtype=torch.long)


def corrupt_labels(
    y: torch.Tensor, n_classes: int, label_noise: float, *, seed: int
) -> torch.Tensor:
    """Training labels with noise: example ``i`` of the pool gets a uniform draw ``u_i`` and a wrong label
    ``r_i`` (uniform over the ``n_classes - 1`` other classes), both from one generator seeded by
    ``seed``; it is corrupted (label ``r_i``) when ``u_i < label_noise``. The draws depend on the pool
    and the seed only, so the corrupted examples are nested in the noise level (a higher level corrupts
    every example a lower one does, with the same wrong label) and in the training-set size (the first
    ``n`` examples of the pool); the number corrupted is binomial, not fixed.

    >>> y = torch.zeros(8, dtype=torch.long)
    >>> corrupt_labels(y, 2, 0.0, seed=1).tolist() == y.tolist()
    True
    >>> a, b = corrupt_labels(y, 10, 0.2, seed=1), corrupt_labels(y, 10, 0.5, seed=1)
    >>> bool(((a != y) <= (b != y)).all()), bool((b[a != y] == a[a != y]).all())
    (True, True)
    """
    label_noise = check_real(label_noise, "label_noise", lo=0.0, hi=1.0, hi_open=True)
    g = torch.Generator().manual_seed(int(seed))
    u = torch.rand(y.shape[0], generator=g, dtype=torch.float64)
    shift = torch.randint(1, n_classes, (y.shape[0],), generator=g)
    wrong = (y + shift) % n_classes
    return torch.where(u < label_noise, wrong, y)


def task_shape(task: str, width: int) -> tuple[int, float]:
    """``(T, B_X)`` of a task at a model width: the sequence length before the [CLS] row (16 for sparse
    majority, 8 pixel rows for digits) and the input radius the bounds use (sparse majority:
    ``1 + sqrt(width)``, :func:`~genbound.positional.uniform_input_radius`; digits:
    ``sqrt(width)``, every coordinate in ``[-1, 1]``). Both are fixed before any data are drawn; the
    width enters ``B_X``, so a wider model is also bounded with a larger input radius.

    >>> task_shape("digits", 16), task_shape("sparse-majority", 16)
    ((8, 4.0), (16, 5.0))
    """
    if task == "digits":
        return _DIGIT_ROWS, math.sqrt(width)
    if task == "sparse-majority":
        return _SM_SEQ_LEN, uniform_input_radius(width)
    raise ParameterError(f"unknown task {task!r}; expected one of {TASKS}")


def corrupt_inputs(
    X: torch.Tensor, flip: torch.Tensor, rho: float, gen: torch.Generator, *, unit: str = "position"
) -> torch.Tensor:
    """``X`` with each input unit corrupted independently with probability ``rho`` (one fresh draw from
    ``gen``): ``X + mask * flip``, the mask drawn per row (``unit="position"``: a sparse-majority bit
    flipped) or per coordinate (``"coordinate"``: a digits pixel ``v`` turned into ``1 - v``); the labels
    are not touched. The training-input corruption axis of the family pilots (an input analogue of
    :func:`corrupt_labels`); test inputs and the fitting check stay clean.

    >>> X, f = torch.zeros(2, 3, 1), torch.ones(2, 3, 1)
    >>> corrupt_inputs(X, f, 1.0, torch.Generator().manual_seed(0)).flatten().tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    >>> corrupt_inputs(X, f, 0.0, torch.Generator().manual_seed(0)).abs().sum().item()
    0.0
    """
    rho = check_real(rho, "rho", lo=0.0, hi=1.0)
    if unit not in ("position", "coordinate"):
        raise ParameterError(f"unit must be 'position' or 'coordinate', got {unit!r}")
    if flip.shape != X.shape:
        raise ParameterError(f"flip has shape {tuple(flip.shape)}, the inputs {tuple(X.shape)}")
    shape = X.shape if unit == "coordinate" else (*X.shape[:-1], 1)
    mask = (torch.rand(shape, generator=gen, dtype=torch.float64) < rho).to(X.dtype)
    return X + mask * flip


def make_task_data(
    task: str,
    *,
    width: int,
    n_train: int,
    seed: int,
    n_max: int | None = None,
    n_test: int = 2000,
    label_noise: float = 0.0,
) -> TaskData:
    """The data of seed index ``seed`` with the first ``n_train`` training examples of a draw of
    ``n_max`` (default ``n_train``; the family passes its largest size, so training sets are nested and
    the test set does not depend on ``n_train``). ``digits``: a seeded permutation of the 1,797 images;
    the first ``n_max`` are the training pool, the rest the test set. ``sparse-majority``: the task of
    :mod:`genbound.experiments.sparse_majority` at ``T = 16`` with token width ``width`` (the positions,
    the bits and the labels depend on the seed only, the embeddings also on the width), ``n_max``
    training and ``n_test`` test sequences. ``label_noise``: the training labels of the pool corrupted by
    :func:`corrupt_labels` (seeded by the task and seed index); the test labels are never corrupted."""
    n_max = n_train if n_max is None else n_max
    if n_train > n_max:
        raise ParameterError(f"n_train {n_train} exceeds the pool n_max {n_max}")
    ds = family_data_seed(task, seed)
    if task == "digits":
        X, y = _digits_inputs(width)
        perm = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(ds))
        tr, te = perm[:n_train], perm[n_max:]
        ytr = corrupt_labels(y[perm[:n_max]], 10, label_noise, seed=ds + 2)[:n_train]
        flip = torch.zeros_like(X[tr])
        flip[:, :_DIGIT_ROWS, :8] = 1.0 - 2.0 * X[tr][:, :_DIGIT_ROWS, :8]
        return TaskData(X[tr], ytr, X[te], y[te], 10, math.sqrt(width), flip, "coordinate")
    if task == "sparse-majority":
        t = make_task(_SM_SEQ_LEN, d=width, seed=ds)
        g = torch.Generator().manual_seed(ds + 1)
        (btr, ytr), (bte, yte) = t.sample(n_max, g), t.sample(n_test, g)
        ytr = corrupt_labels(ytr, 2, label_noise, seed=ds + 2)
        Xtr = t.embed(btr[:n_train])
        return TaskData(
            Xtr,
            ytr[:n_train],
            t.embed(bte),
            yte,
            2,
            uniform_input_radius(width),
            t.embed(1 - btr[:n_train]) - Xtr,
            "position",
        )
    raise ParameterError(f"unknown task {task!r}; expected one of {TASKS}")


def build_model(
    width: int, n_classes: int, *, depth: int = 1, seed: int = 0, init_scale: float = 1.0
):
    """A :class:`~genbound.nets.ReferenceTransformer` of the family: ``depth`` layers of two heads of
    width ``width / 2``, biases, ReLU, a dense map, read out at the last ([CLS]) row, float64; every
    parameter of its seeded initialisation multiplied by ``init_scale``."""
    import torch

    net = ReferenceTransformer(
        width,
        n_layers=int(depth),
        n_heads=2,
        d_head=width // 2,
        out_dim=n_classes,
        activation="relu",
        bias=True,
        dense=True,
        cls_index=-1,
        seed=int(seed),
    )
    if init_scale != 1.0:
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(float(init_scale))
    return net
