"""Part V: do the bounds rank trained transformers by their generalization gap? Book: :ref:`ch-predict-gap`.

A **family** of one-layer :class:`~genbound.nets.ReferenceTransformer` models (the class on which every
bound of the book is defined) is trained as a full factorial over four hyperparameter axes
(:data:`AXES`: model width, peak learning rate, weight decay, training-set size), with several seeds,
on two tasks (:data:`TASKS`): sparse majority (Part II) and scikit-learn's bundled 8x8 digits read as a
sequence of eight pixel rows. Every model is trained by full-batch Adam
(:mod:`genbound.experiments.fullbatch`) to one common stopping criterion: training accuracy exactly 1
(whole training set, float64), within a step budget; models that do not reach it are counted and
reported, and the rank statistics use the fitted ones (as Jiang et al. 2019 use the models that reach
their cross-entropy criterion).

Per model, one column per **measure** (:data:`MEASURES`): the Part II bounds at the trained norms with
the union bound over a grid of radii, the Part III proxies on the model's four-matrix form, and simple
baselines (parameter count, norms, distance from initialisation). The statistics
(:func:`kendall_table`) are Kendall's tau-b of each measure against the measured gap (test error minus
train error) with a bootstrap interval, the granulated tau ``Psi`` of Jiang et al. (for each axis, the
mean of tau over groups of models that differ only in that axis, task and seed fixed; ``Psi`` is the
mean over axes), and tau within each value of each axis (the Simpson's-paradox check of Martin &
Mahoney 2021).

>>> len(AXES), len(TASKS), "tt_bound" in MEASURES
(4, 2, True)
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Sequence

import torch

from .._validate import check_positive_int, check_real
from ..errors import GenboundError, ParameterError

__all__ = ["TASKS", "AXES", "MEASURES", "SAVED_FAMILY", "FamilyConfig", "TaskData", "make_task_data",
           "stacked_logits", "ModelRecord", "measures_for", "train_config", "run_family", "SCHEMA",
           "open_family", "read_family",
           "kendall_tau_b", "kendall_table", "granulated_psi", "conditional_taus", "summary"]

#: The two tasks. ``sparse-majority``: Part II's task at ``T = 16`` (``s = 9``) with embeddings of the
#: model's width; ``digits``: scikit-learn's bundled 8x8 digits (1,797 images, 10 classes), rows as tokens.
TASKS = ("sparse-majority", "digits")
#: Hyperparameter axes of the factorial (CSV columns).
AXES = ("width", "lr", "weight_decay", "n_train")
#: Measures, one CSV column each (see :func:`measures_for`).
MEASURES = ("tt_bound", "edelman_bound", "spectral_adaptive", "spectral_p0", "spectral_pmax",
            "edelman_proxy", "n_params", "frobenius_sum", "spectral_product", "l11_norm_sum",
            "l11_dist_from_init", "fro_dist_from_init", "stable_rank_mean")
#: The saved family (CSV) and its notes (command, machine, wall time) beside it.
SAVED_FAMILY = Path(__file__).resolve().parents[1] / "data" / "predict_gap_family.csv"

_SM_SEQ_LEN = 16
_DIGIT_ROWS = 8


# ---------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class FamilyConfig:
    """The factorial: ``widths`` x ``lrs`` x ``weight_decays`` x the two training-set sizes of each task
    (``n_train``), times ``seeds`` seeds, on ``tasks``. Training: full-batch Adam with ``warmup`` steps
    of warm-up and cosine decay over ``steps``. ``n_test``: test sequences for sparse majority (digits
    test on every image not used for training). ``delta``, ``margin``: of the Part II bounds."""

    tasks: tuple[str, ...] = TASKS
    widths: tuple[int, ...] = (16, 32)
    lrs: tuple[float, ...] = (1e-3, 3e-3)
    weight_decays: tuple[float, ...] = (0.0, 0.1)
    n_train: dict = field(default_factory=lambda: {"sparse-majority": (60, 120), "digits": (150, 450)})
    seeds: int = 7
    steps: int = 6000
    warmup: int = 100
    n_test: int = 2000
    delta: float = 0.05
    margin: float = 1.0

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
            if t == "digits" and max(self.n_train[t]) > 1797 - 100:
                raise ParameterError("digits: n_train must leave at least 100 of the 1,797 images for testing")
        for name in ("widths", "lrs", "weight_decays"):
            if not getattr(self, name):
                raise ParameterError(f"{name} must name at least one value")
        for w in self.widths:
            check_positive_int(w, "width", minimum=10)
            if w % 2:
                raise ParameterError(f"width {w} must be even (two heads of width/2)")
        for lr in self.lrs:
            check_real(lr, "lr", lo=0.0, lo_open=True)
        for wd in self.weight_decays:
            check_real(wd, "weight_decay", lo=0.0)
        check_positive_int(self.seeds, "seeds")
        check_positive_int(self.steps, "steps")
        check_positive_int(self.n_test, "n_test")
        check_real(self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        check_real(self.margin, "margin", lo=0.0, lo_open=True)
        from .fullbatch import AdamProtocol

        AdamProtocol(steps=self.steps, warmup=self.warmup).validated()
        return self

    def grid(self) -> list[dict]:
        """Every hyperparameter point of the factorial (without seeds), in a fixed order."""
        out = []
        for task in self.tasks:
            for w, lr, wd, n in itertools.product(self.widths, self.lrs, self.weight_decays, self.n_train[task]):
                out.append({"task": task, "width": int(w), "lr": float(lr), "weight_decay": float(wd),
                            "n_train": int(n)})
        return out


# ---------------------------------------------------------------------------------------------- data
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


def _digits_inputs(width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All 1,797 digits as sequences: row ``r`` of the image (8 pixels scaled to ``[0, 1]``) in the
    first 8 coordinates and the sinusoidal encoding of ``r`` in the other ``width - 8``; a [CLS] row
    (pixels 0, encoding of position 8) last. Every coordinate lies in ``[-1, 1]``, so ``||x|| <= sqrt(d)``."""
    from sklearn.datasets import load_digits

    from .sparse_majority import sinusoidal_encoding

    data = load_digits()
    img = torch.as_tensor(data.images, dtype=torch.float64) / 16.0                  # (N, 8, 8)
    N = img.shape[0]
    pe = sinusoidal_encoding(_DIGIT_ROWS + 1, width - 8)                             # (9, d - 8)
    rows = torch.cat([torch.cat([img, torch.zeros(N, 1, 8, dtype=torch.float64)], 1),
                      pe.expand(N, -1, -1)], dim=-1)                                 # (N, 9, d)
    return rows, torch.as_tensor(data.target, dtype=torch.long)


def make_task_data(task: str, *, width: int, n_train: int, seed: int, n_test: int = 2000) -> TaskData:
    """The data of one run (seeded by ``seed``): for ``digits`` a random split of the 1,797 images
    (``n_train`` for training, the rest for testing); for ``sparse-majority`` fresh draws of the task
    of :mod:`genbound.experiments.sparse_majority` at ``T = 16`` with token width ``width``."""
    if task == "digits":
        X, y = _digits_inputs(width)
        perm = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(int(seed)))
        tr, te = perm[:n_train], perm[n_train:]
        return TaskData(X[tr], y[tr], X[te], y[te], 10, math.sqrt(width))
    if task == "sparse-majority":
        from .sparse_majority import make_task, uniform_input_radius

        t = make_task(_SM_SEQ_LEN, d=width, seed=int(seed))
        g = torch.Generator().manual_seed(int(seed) + 1)
        (btr, ytr), (bte, yte) = t.sample(n_train, g), t.sample(n_test, g)
        return TaskData(t.embed(btr), ytr, t.embed(bte), yte, 2, uniform_input_radius(width))
    raise ParameterError(f"unknown task {task!r}; expected one of {TASKS}")


# ---------------------------------------------------------------------------------------------- model
def _build(width: int, n_classes: int, seed: int):
    from ..nets import ReferenceTransformer

    return ReferenceTransformer(width, n_layers=1, n_heads=2, d_head=width // 2, out_dim=n_classes,
                                activation="relu", bias=True, dense=True, cls_index=-1, seed=int(seed))


@functools.lru_cache(maxsize=16)
def _architecture(width: int, n_classes: int, score_scale: float):
    """A network of the family's architecture (its parameter values are never used): the model class
    whose stacked mode :meth:`~genbound.nets.ReferenceTransformer.forward_stacked` trains the family."""
    from ..nets import ReferenceTransformer

    return ReferenceTransformer(width, n_layers=1, n_heads=2, d_head=width // 2, out_dim=n_classes,
                                activation="relu", bias=True, dense=True, cls_index=-1,
                                score_scale=score_scale, device="cpu").requires_grad_(False)


def stacked_logits(P: dict[str, torch.Tensor], X: torch.Tensor, score_scale: float) -> torch.Tensor:
    """Logits ``(K, n, classes)`` of ``K`` stacked one-layer ``ReferenceTransformer`` models of the
    family (biases, dense map, ReLU, read out at the last row) on their own inputs ``X`` ``(K, n, T, d)``.

    ``P`` holds the modules' parameters stacked along a leading axis, keyed by their
    ``named_parameters`` names (:func:`genbound.nets.stack_parameters`). This is the stacked mode of
    the model class, :meth:`genbound.nets.ReferenceTransformer.forward_stacked` (a test checks
    equality with ``ReferenceTransformer.forward``).
    """
    arch = _architecture(int(X.shape[-1]), int(P["w"].shape[-1]), float(score_scale))
    return arch.forward_stacked(P, X)


# ---------------------------------------------------------------------------------------------- measures
@torch.no_grad()
def measures_for(net, init, *, m: int, seq_len: int, B_X: float, delta: float, margin: float) -> dict:
    """Every measure of :data:`MEASURES` for one trained network ``net`` (``init``: its initial weights).

    * ``tt_bound``, ``edelman_bound``: :func:`~genbound.experiments.sparse_majority.bounds_for` (Part II,
      the certified values, radii rounded to the grid of :prf:ref:`thm-radius-union`, uniform input
      radius ``B_X``);
    * ``spectral_adaptive``: Sakai-Imaizumi's ``B_ours`` on the four-matrix form
      (:meth:`~genbound.nets.ReferenceTransformer.proxy_weights`), the Schatten index chosen per matrix;
      ``spectral_p0`` and ``spectral_pmax``: the same sum with every matrix at the smallest (rank) and
      the largest index of the grid (no adaptive choice); ``edelman_proxy``: the norm-based proxy
      (all four from :func:`~genbound.experiments.sparse_majority.spectral_measures`);
    * ``n_params``; ``frobenius_sum``: sum of the Frobenius norms of the weight tensors;
      ``spectral_product``: ``(sum_h ||V_h||_op) ||C||_op ||w||_op`` of the effective maps (the product
      of spectral norms along the value path); ``l11_norm_sum``; ``l11_dist_from_init`` and
      ``fro_dist_from_init``: entrywise l1 and Frobenius distance of all parameters from initialisation;
      ``stable_rank_mean``: mean stable rank ``||A||_F^2 / ||A||_op^2`` of the effective maps.
    """
    from .sparse_majority.bounds import bounds_for, spectral_measures

    tt, ed = bounds_for(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin)
    spec = spectral_measures(net)
    params = dict(net.named_parameters())
    p0 = dict(init.named_parameters())
    mats = [p for n, p in params.items() if p.ndim >= 2]
    E = net.effective_weights()
    maps = [E.QK[0, h] for h in range(E.QK.shape[1])] + [E.V[0, h] for h in range(E.V.shape[1])] + [E.C[0], E.w]
    op = lambda A: float(torch.linalg.matrix_norm(A, ord=2))
    sr = [float(torch.linalg.matrix_norm(A) ** 2) / max(op(A) ** 2, 1e-300) for A in maps]
    diff = [params[n] - p0[n] for n in params]
    return {
        "tt_bound": tt, "edelman_bound": ed, **spec,
        "n_params": float(sum(p.numel() for p in params.values())),
        "frobenius_sum": float(sum(torch.linalg.vector_norm(p) for p in mats)),
        "spectral_product": sum(op(E.V[0, h]) for h in range(E.V.shape[1])) * op(E.C[0]) * op(E.w),
        "l11_norm_sum": float(sum(p.abs().sum() for p in params.values())),
        "l11_dist_from_init": float(sum(d.abs().sum() for d in diff)),
        "fro_dist_from_init": math.sqrt(float(sum((d**2).sum() for d in diff))),
        "stable_rank_mean": sum(sr) / len(sr),
    }


# ---------------------------------------------------------------------------------------------- training
@dataclass(frozen=True)
class ModelRecord:
    """One trained model of the family: its hyperparameters, seed, whether it reached the stopping
    criterion (``fitted``; ``fit_step`` ``-1`` if not), accuracies (float64, whole sets), ``gap`` =
    test error - train error, the measures, and ``seconds`` (wall time of its stack / its size)."""

    task: str
    width: int
    lr: float
    weight_decay: float
    n_train: int
    seed: int
    fitted: bool
    fit_step: int
    steps: int
    train_acc: float
    test_acc: float
    gap: float
    measures: dict
    seconds: float

    def row(self) -> dict:
        """The CSV row (measures flattened into columns)."""
        d = asdict(self)
        d.update(d.pop("measures"))
        return d


def _columns() -> list[str]:
    return [f.name for f in fields(ModelRecord) if f.name != "measures"] + list(MEASURES)


def _model_seed(point: dict, seed: int) -> int:
    key = f"{point['task']}|{point['width']}|{point['lr']}|{point['weight_decay']}|{point['n_train']}|{seed}"
    return sum((i + 1) * ord(c) for i, c in enumerate(key)) * 1_000_003 % (2**31 - 1)


def train_config(point: dict, seeds: Sequence[int], config: FamilyConfig, *, progress: bool | None = None
                 ) -> list[ModelRecord]:
    """Train one model per seed at the hyperparameter point ``point`` (a dict with the task and the
    :data:`AXES`), all seeds in one stack; returns their records."""
    from .fullbatch import AdamProtocol, fit_stack

    cfg = config.validated()
    t0 = time.perf_counter()
    datas, nets = [], []
    for sd in seeds:
        data = make_task_data(point["task"], width=point["width"], n_train=point["n_train"], seed=sd,
                              n_test=cfg.n_test)
        datas.append(data)
        nets.append(_build(point["width"], data.n_classes, _model_seed(point, sd)))
    from ..nets import stack_parameters

    P = stack_parameters(nets, dtype=torch.float32)
    Xtr = torch.stack([d.X_train for d in datas]).float()
    ytr = torch.stack([d.y_train for d in datas])
    arch = nets[0]                            # the architecture; the stacked mode trains all seeds at once

    def loss_logits(Pa, idx):
        z = arch.forward_stacked(Pa, Xtr[idx])
        return torch.nn.functional.cross_entropy(z.transpose(1, 2), ytr[idx], reduction="none").mean(-1), z

    def confirm(Pk, k):
        z = arch.forward_stacked({n: v[None] for n, v in Pk.items()}, datas[k].X_train[None])
        return bool((z[0].argmax(-1) == datas[k].y_train).all())

    proto = AdamProtocol(lr=point["lr"], steps=cfg.steps, warmup=cfg.warmup,
                         weight_decay=point["weight_decay"], eval_every=cfg.steps)
    desc = f"{point['task']} w={point['width']} lr={point['lr']:g} wd={point['weight_decay']:g} n={point['n_train']}"
    out = fit_stack(P, loss_logits, ytr, proto, confirm=confirm, progress=progress, desc=desc)
    records = []
    elapsed = time.perf_counter() - t0
    for k, sd in enumerate(seeds):
        init = _build(point["width"], datas[k].n_classes, _model_seed(point, sd)).requires_grad_(False)
        net = _build(point["width"], datas[k].n_classes, 0).requires_grad_(False)
        with torch.no_grad():
            for n, p in net.named_parameters():
                p.copy_(out.stop[n][k].double())
            acc = [float((net(X).argmax(-1) == y).double().mean()) for X, y in
                   ((datas[k].X_train, datas[k].y_train), (datas[k].X_test, datas[k].y_test))]
        meas = measures_for(net, init, m=point["n_train"], seq_len=datas[k].X_train.shape[1] - 1,
                            B_X=datas[k].B_X, delta=cfg.delta, margin=cfg.margin)
        records.append(ModelRecord(
            task=point["task"], width=point["width"], lr=point["lr"], weight_decay=point["weight_decay"],
            n_train=point["n_train"], seed=int(sd), fitted=acc[0] == 1.0,
            fit_step=out.fit_step[k] if acc[0] == 1.0 else -1, steps=out.steps[k], train_acc=acc[0],
            test_acc=acc[1], gap=(1 - acc[1]) - (1 - acc[0]), measures=meas, seconds=elapsed / len(seeds)))
    return records


def run_family(config: FamilyConfig | None = None, *, csv_path=None, progress: bool | None = None,
               on_record: Callable[[ModelRecord], None] | None = None,
               report: Callable[[str], None] | None = None) -> list[ModelRecord]:
    """Train the whole family; with ``csv_path``, a results file (:mod:`genbound.experiments.results`):
    created with every field of ``config`` and the environment in its header, or resumed when it
    records the same configuration (otherwise refused, naming the fields that differ). Every stack's
    records are appended in one whole write as soon as it finishes and the models already in the file
    are skipped (a killed run loses at most one stack; an unfinished last row is ``report``-ed and
    re-run). Returns the records trained in this call."""
    cfg = (config or FamilyConfig()).validated()
    writer = open_family(csv_path, cfg, report=report) if csv_path is not None else None
    done = writer.done if writer is not None else set()
    out = []
    points = cfg.grid()
    from tqdm import tqdm

    bar = tqdm(points, desc="predict-gap", disable=not (progress if progress is not None else sys.stderr.isatty()))
    for point in bar:
        seeds = [s for s in range(cfg.seeds) if _key({**point, "seed": s}) not in done]
        if not seeds:
            continue
        recs = train_config(point, seeds, cfg, progress=False)
        if writer is not None:
            writer.append(recs)
        for r in recs:
            out.append(r)
            if on_record is not None:
                on_record(r)
    return out


def _key(r: dict) -> tuple:
    return (str(r["task"]), int(r["width"]), float(r["lr"]), float(r["weight_decay"]), int(r["n_train"]),
            int(r["seed"]))


_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _schema():
    from .results import Schema

    cols = tuple((f.name, _TYPES[f.type if isinstance(f.type, str) else f.type.__name__])
                 for f in fields(ModelRecord) if f.name != "measures") + tuple((m, float) for m in MEASURES)
    return Schema("predict-gap", cols, key=("task", "width", "lr", "weight_decay", "n_train", "seed"))


#: The columns of the family's results file (:class:`ModelRecord`, measures flattened), keyed by the
#: task, the four axes and the seed.
SCHEMA = _schema()


def open_family(path, config: FamilyConfig, *, report: Callable[[str], None] | None = None):
    """Open (create or resume) the family's results file at ``path`` for ``config``:
    :func:`~genbound.experiments.results.open_results` with every field of ``config`` and the
    environment; ``append`` takes :class:`ModelRecord` objects."""
    from .results import environment, open_results

    return open_results(path, SCHEMA, asdict(config.validated()), environment=environment(device="cpu"),
                        report=report, to_row=lambda r: r.row())


def read_family(path=None, *, report: Callable[[str], None] | None = None):
    """The saved family (default :data:`SAVED_FAMILY`) as a DataFrame, read by
    :func:`~genbound.experiments.results.read_results` (the one reader of results files: every row
    checked against the columns, unique keys, an unfinished last row reported and left out) and
    validated: at least one row, known tasks, finite measures (a :class:`~genbound.errors.GenboundError`
    naming the problem otherwise). The file is only read."""
    from .results import read_results

    path = Path(SAVED_FAMILY if path is None else path)
    df = read_results(path, SCHEMA, report=report).frame()
    if len(df) == 0:
        raise GenboundError(f"{path}: the family is empty")
    bad_tasks = sorted(set(df["task"]) - set(TASKS))
    if bad_tasks:
        raise GenboundError(f"{path}: unknown task(s) {bad_tasks}")
    for col in (*MEASURES, "gap", "train_acc", "test_acc"):
        if not df[col].map(math.isfinite).all():
            raise GenboundError(f"{path}: column {col!r} has a non-finite value")
    return df


# ---------------------------------------------------------------------------------------------- statistics
def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two sequences (``nan`` when either is constant), via ``scipy.stats.kendalltau``.

    >>> kendall_tau_b([1, 2, 3], [1, 3, 2])
    0.3333333333333333
    """
    from scipy.stats import kendalltau

    return float(kendalltau(x, y, variant="b").statistic)


def granulated_psi(df, measure: str, *, axes: Sequence[str] = AXES, gap: str = "gap") -> dict:
    """Jiang et al.'s granulated Kendall coefficient: for each axis, the mean of tau-b(measure, gap) over
    the groups of models that share every other axis, the task and the seed (groups with an undefined
    tau, e.g. fewer than two models or ties throughout, are left out); ``psi`` is the mean over the
    axes that have at least one group. Returns ``{"psi": ..., "per_axis": {axis: (mean, n_groups)}}``."""
    per = {}
    for ax in axes:
        others = ["task", "seed", *[a for a in axes if a != ax]]
        taus = []
        for _, g in df.groupby(others):
            if len(g) >= 2:
                t = kendall_tau_b(g[measure], g[gap])
                if math.isfinite(t):
                    taus.append(t)
        per[ax] = (sum(taus) / len(taus) if taus else math.nan, len(taus))
    vals = [m for m, n in per.values() if n]
    return {"psi": sum(vals) / len(vals) if vals else math.nan, "per_axis": per}


def kendall_table(df, measures: Sequence[str] = MEASURES, *, n_boot: int = 1000, seed: int = 0,
                  gap: str = "gap"):
    """One row per measure: ``kendall_tau`` (tau-b against the gap over all rows of ``df``), its 95%
    bootstrap interval ``tau_lo, tau_hi`` (models resampled with replacement), ``granulated_psi`` and
    ``psi_<axis>`` for every axis. Pass only the models that reached the stopping criterion."""
    import numpy as np
    import pandas as pd

    if len(df) < 3:
        raise ParameterError("kendall_table needs at least 3 models")
    rng = np.random.default_rng(seed)
    idx = [rng.integers(0, len(df), len(df)) for _ in range(n_boot)]
    rows = []
    g = df[gap].to_numpy()
    for m in measures:
        x = df[m].to_numpy()
        boots = np.array([kendall_tau_b(x[i], g[i]) for i in idx])
        boots = boots[np.isfinite(boots)]
        lo, hi = np.quantile(boots, [0.025, 0.975]) if len(boots) else (math.nan, math.nan)
        psi = granulated_psi(df, m, gap=gap)
        row = {"measure": m, "kendall_tau": kendall_tau_b(x, g), "tau_lo": float(lo), "tau_hi": float(hi),
               "granulated_psi": psi["psi"]}
        row.update({f"psi_{ax}": v[0] for ax, v in psi["per_axis"].items()})
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure")


def conditional_taus(df, by: str, measures: Sequence[str] = MEASURES, *, gap: str = "gap"):
    """tau-b of each measure against the gap within each value of column ``by`` (a DataFrame indexed by
    measure, one column per value), next to the pooled tau: the Simpson's-paradox check."""
    import pandas as pd

    out = {f"{by}={v}": {m: kendall_tau_b(g[m], g[gap]) for m in measures} for v, g in df.groupby(by)}
    out["pooled"] = {m: kendall_tau_b(df[m], df[gap]) for m in measures}
    return pd.DataFrame(out)


def summary(df, *, csv_path=None, n_boot: int = 1000) -> dict:
    """The JSON object of ``genbound experiment predict-gap --saved --json`` for a family DataFrame
    (from :func:`read_family`): counts, the axes, and per measure tau, Psi and the interval, over the
    fitted models."""
    fit = df[df["fitted"]]
    tab = kendall_table(fit, n_boot=n_boot)
    return {
        "n_models": int(len(df)), "n_fitted": int(len(fit)), "tasks": sorted(set(df["task"])),
        "hyperparameters": list(AXES), "csv": str(csv_path) if csv_path is not None else None,
        "measures": {m: {"kendall_tau": float(r["kendall_tau"]), "granulated_psi": float(r["granulated_psi"]),
                         "tau_ci": [float(r["tau_lo"]), float(r["tau_hi"])]} for m, r in tab.iterrows()},
    }
