"""Training the family and its results file. Book: :ref:`ch-predict-gap`.

Every setting's seed indices are trained in one stack by full-batch Adam
(:mod:`genbound.experiments.fullbatch`) to one common stopping criterion: training accuracy exactly 1
(whole training set, confirmed in float64), within a step budget. A model that does not reach it is
**unfitted**; one whose loss became non-finite is **diverged** (its measures are ``nan``); both are
kept in the file and counted, and the statistics use the fitted ones (as Jiang et al. 2020 use the
models that reach their cross-entropy criterion).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ...errors import GenboundError, ParameterError
from ..fullbatch import AdamProtocol, fit_stack
from ..runtime.results import Schema, open_results, read_results
from ..runtime.machine import environment
from ..runtime.paths import data_path
from .family import (
    AXES,
    TASKS,
    FamilyConfig,
    batch_seed,
    build_model,
    corrupt_inputs,
    flip_seed,
    init_seed,
    make_task_data,
    task_shape,
)
from .measures import (
    CAPACITY_FORMS,
    DEPTH1_ONLY,
    MEASURES,
    REPORTED,
    measure_columns,
    measures_for,
)
from ...nets import stack_parameters
from ...nets import ModelNorms
from ..bound_measures import capacity_fields, spectra_from_json
from ..runtime.results import merge_results

__all__ = [
    "SAVED_FAMILY",
    "ModelRecord",
    "train_setting",
    "run_family",
    "SCHEMA",
    "open_family",
    "read_family",
    "family_key",
    "undefined_allowed",
    "merge_family",
    "recompute_measures",
    "family_config",
    "read_pilot",
    "PILOTS",
    "EARLIER_FAMILY_MOVES",
]

#: The saved family (CSV) and its notes (command, machine, wall time) beside it.
SAVED_FAMILY = data_path("predict_gap_family.csv")


@dataclass(frozen=True)
class ModelRecord:
    """One trained model: its setting (task and ``AXES``), seed index, whether it reached the
    stopping criterion (``fitted``; ``fit_step`` ``-1`` if not) or diverged, accuracies (float64, whole
    sets), ``gap`` = test error - train error, ``n_test`` and ``test_se`` (the standard error
    ``sqrt(e (1 - e) / n_test)`` of its test error ``e``), the measures and reported columns, and
    ``seconds`` (wall time of its stack / its size)."""

    task: str
    depth: int
    width: int
    lr: float
    batch: int
    weight_decay: float
    init_scale: float
    label_noise: float
    input_flip: float
    n_train: int
    seed: int
    fitted: bool
    diverged: bool
    fit_step: int
    steps: int
    train_acc: float
    test_acc: float
    gap: float
    n_test: int
    test_se: float
    seconds: float
    measures: dict

    def row(self) -> dict:
        """The CSV row (measures flattened into columns)."""
        d = asdict(self)
        d.update(d.pop("measures"))
        return d


def _nan_measures() -> dict:
    out = {m: math.nan for m in MEASURES}
    out.update(
        {k: (False if t is bool else "" if t is str else math.nan) for k, t in REPORTED.items()}
    )
    return out


def train_stack(setting: dict, seeds: Sequence[int], config: FamilyConfig):
    """Train one model per seed index at ``setting`` (the task and one value per axis), all in one
    stack, with the family's protocol; returns ``(datas, out)``: each seed index's
    :class:`TaskData` and the stack's :func:`~genbound.experiments.fullbatch.fit_stack` outcome (``out.stop``: the
    stopped parameters, float32, leading axis over ``seeds``)."""

    cfg = config.validated()
    task, L, w, n = setting["task"], setting["depth"], setting["width"], setting["n_train"]
    n_max = max(cfg.n_train[task])
    q = float(setting.get("label_noise", 0.0))
    datas = [
        make_task_data(
            task, width=w, n_train=n, seed=s, n_max=n_max, n_test=cfg.n_test, label_noise=q
        )
        for s in seeds
    ]
    scale = float(setting.get("init_scale", 1.0))
    nets = [
        build_model(w, datas[0].n_classes, depth=L, seed=init_seed(task, s), init_scale=scale)
        for s in seeds
    ]
    P = stack_parameters(nets, dtype=torch.float32)
    Xtr = torch.stack([d.X_train for d in datas]).float()
    ytr = torch.stack([d.y_train for d in datas])
    arch = nets[0]  # the architecture; the stacked mode trains every seed at once
    rho = float(setting.get("input_flip", 0.0))
    corrupted = {}
    if rho > 0.0:
        # the corruption of a step is drawn once, at its start, for every seed index of the stack from its
        # own generator (a model's draws do not depend on when the others leave); the loss is taken on the
        # corrupted inputs, the fitting check on the clean ones
        flips = [d.flip for d in datas]
        gens = [torch.Generator().manual_seed(flip_seed(task, s)) for s in seeds]

        def on_step(step):
            corrupted["X"] = torch.stack(
                [
                    corrupt_inputs(
                        datas[k].X_train, flips[k], rho, gens[k], unit=datas[k].flip_unit
                    )
                    for k in range(len(seeds))
                ]
            ).float()
    else:
        on_step = None

    def loss_logits(Pa, idx, weights=None):
        z = arch.forward_stacked(Pa, corrupted["X"][idx] if rho > 0.0 else Xtr[idx])
        ce = torch.nn.functional.cross_entropy(z.transpose(1, 2), ytr[idx], reduction="none")
        loss = ce.mean(-1) if weights is None else (ce * weights).sum(-1) / weights.sum(-1)
        if rho > 0.0:
            with torch.no_grad():
                z = arch.forward_stacked(Pa, Xtr[idx])
        return loss, z

    def confirm(Pk, k):
        z = arch.forward_stacked({nm: v[None] for nm, v in Pk.items()}, datas[k].X_train[None])
        return bool((z[0].argmax(-1) == datas[k].y_train).all())

    batch, wd = int(setting.get("batch", 0)), float(setting.get("weight_decay", 0.0))
    proto = AdamProtocol(
        lr=setting["lr"],
        steps=cfg.steps,
        warmup=cfg.warmup,
        weight_decay=wd,
        eval_every=cfg.steps,
        batch_size=batch,
    )
    out = fit_stack(
        P,
        loss_logits,
        ytr,
        proto,
        confirm=confirm,
        progress=False,
        batch_seeds=[batch_seed(task, s) for s in seeds],
        on_step=on_step,
    )
    return datas, out


def train_setting(setting: dict, seeds: Sequence[int], config: FamilyConfig) -> list[ModelRecord]:
    """Train one model per seed index at ``setting`` (the task and one value per axis), all in one
    stack (:func:`train_stack`); returns their records."""
    cfg = config.validated()
    t0 = time.perf_counter()
    task, L, w, n = setting["task"], setting["depth"], setting["width"], setting["n_train"]
    q = float(setting.get("label_noise", 0.0))
    scale = float(setting.get("init_scale", 1.0))
    batch, wd = int(setting.get("batch", 0)), float(setting.get("weight_decay", 0.0))
    datas, out = train_stack(setting, seeds, cfg)
    records = []
    elapsed = time.perf_counter() - t0
    for k, s in enumerate(seeds):
        d = datas[k]
        init = build_model(
            w, d.n_classes, depth=L, seed=init_seed(task, s), init_scale=scale
        ).requires_grad_(False)
        net = build_model(w, d.n_classes, depth=L, seed=0).requires_grad_(False)
        with torch.no_grad():
            for nm, p in net.named_parameters():
                p.copy_(out.stop[nm][k].double())
            acc = [
                float((net(X).argmax(-1) == y).double().mean())
                for X, y in ((d.X_train, d.y_train), (d.X_test, d.y_test))
            ]
        fitted = acc[0] == 1.0 and not out.diverged[k]
        if out.diverged[k]:
            meas = _nan_measures()
        else:
            meas = measures_for(
                net,
                init,
                X_train=d.X_train,
                y_train=d.y_train,
                m=n,
                seq_len=d.X_train.shape[1] - 1,
                B_X=d.B_X,
                delta=cfg.delta,
                margin=cfg.margin,
                margin_quantile=cfg.margin_quantile,
                flat_seed=init_seed(task, s),
                flat={
                    "max_error": cfg.flat_error,
                    "draws": cfg.flat_draws,
                    "steps": cfg.flat_steps,
                    "hi": cfg.flat_hi,
                },
            )
        e = 1.0 - acc[1]
        records.append(
            ModelRecord(
                task=task,
                depth=L,
                width=w,
                lr=float(setting["lr"]),
                batch=batch,
                weight_decay=wd,
                init_scale=scale,
                label_noise=q,
                input_flip=float(setting.get("input_flip", 0.0)),
                n_train=n,
                seed=int(s),
                fitted=fitted,
                diverged=bool(out.diverged[k]),
                fit_step=out.fit_step[k] if fitted else -1,
                steps=out.steps[k],
                train_acc=acc[0],
                test_acc=acc[1],
                gap=e - (1.0 - acc[0]),
                n_test=len(d.y_test),
                test_se=math.sqrt(e * (1 - e) / len(d.y_test)),
                seconds=elapsed / len(seeds),
                measures=meas,
            )
        )
    return records


def family_key(r: dict) -> tuple:
    """The tuple that identifies a family row: its task, the values of its axes and its seed (typed, so
    that a row read from a file and a setting built in code compare equal)."""
    return (
        str(r["task"]),
        int(r["depth"]),
        int(r["width"]),
        float(r["lr"]),
        int(r["batch"]),
        float(r["weight_decay"]),
        float(r["init_scale"]),
        float(r["label_noise"]),
        float(r["input_flip"]),
        int(r["n_train"]),
        int(r["seed"]),
    )


def run_family(
    config: FamilyConfig | None = None,
    *,
    csv_path=None,
    progress: bool | None = None,
    on_record: Callable[[ModelRecord], None] | None = None,
    report: Callable[[str], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> list[ModelRecord]:
    """Train the whole family; with ``csv_path``, a results file (:mod:`genbound.experiments.runtime.results`):
    created with every field of ``config`` and the environment in its header, or resumed when it
    records the same configuration (otherwise refused, naming the fields that differ). Every stack's
    records are appended in one whole write as soon as it finishes and the models already in the file
    are skipped (a killed run loses at most one stack). The stacks run block by block of seed indices
    (:class:`~genbound.experiments.predict_gap.FamilyConfig`). ``shard = (i, k)``: train only the stacks
    ``i, i + k, i + 2k, ...`` of that order, so that ``k`` processes, each with its own file, share the
    family (merge their files with :func:`~genbound.experiments.runtime.results.merge_results`); a stack's rows
    do not depend on the shard that trains it. Returns the records trained in this call."""
    cfg = (config or FamilyConfig()).validated()
    writer = open_family(csv_path, cfg, report=report) if csv_path is not None else None
    done = writer.done if writer is not None else set()
    out = []
    from tqdm import tqdm

    settings = cfg.settings()
    blocks = [range(b, min(b + cfg.stack, cfg.seeds)) for b in range(0, cfg.seeds, cfg.stack)]
    i, k = shard
    if not (isinstance(k, int) and isinstance(i, int) and k >= 1 and 0 <= i < k):
        raise ParameterError(f"shard must be (i, k) with 0 <= i < k, got {shard!r}")
    jobs = [(block, setting) for block in blocks for setting in settings][i::k]
    bar = tqdm(
        jobs,
        desc="predict-gap",
        disable=not (progress if progress is not None else sys.stderr.isatty()),
    )
    for block, setting in bar:
        seeds = [s for s in block if family_key({**setting, "seed": s}) not in done]
        if not seeds:
            continue
        recs = train_setting(setting, seeds, cfg)
        if writer is not None:
            writer.append(recs)
        for r in recs:
            out.append(r)
            if on_record is not None:
                on_record(r)
    return out


_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _schema() -> Schema:
    cols = tuple(
        (f.name, _TYPES[f.type if isinstance(f.type, str) else f.type.__name__])
        for f in fields(ModelRecord)
        if f.name != "measures"
    )
    cols += tuple((m, float) for m in MEASURES) + tuple(REPORTED.items())
    return Schema("predict-gap", cols, key=("task", *AXES, "seed"))


#: The columns of the family's results file (:class:`ModelRecord`, measures flattened), keyed by the
#: task, the axes and the seed index.
SCHEMA = _schema()


def open_family(path, config: FamilyConfig, *, report: Callable[[str], None] | None = None):
    """Open (create or resume) the family's results file at ``path`` for ``config``:
    :func:`~genbound.experiments.runtime.results.open_results` with every field of ``config`` and the
    environment; ``append`` takes :class:`ModelRecord` objects."""
    return open_results(
        path,
        SCHEMA,
        asdict(config.validated()),
        environment=environment(device="cpu"),
        report=report,
        to_row=lambda r: r.row(),
    )


def recompute_measures(row: dict, config: FamilyConfig) -> dict:
    """The capacity and spectral columns (``CAPACITIES`` and ``SPECTRAL``) of a saved model, recomputed
    from its saved ``norms_json`` and ``spectra_json`` alone (no weights, no training) through
    :func:`~genbound.experiments.bound_measures.capacity_fields`, the code that produced them from the
    trained network, with the row's ``m``, the task's ``T`` and ``B_X``
    (:func:`~genbound.experiments.predict_gap.task_shape`), the configuration's ``delta`` and margin, and
    the row's margin quantile ``margin_q``."""

    norms = ModelNorms.from_json(row["norms_json"])
    T, B_X = task_shape(str(row["task"]), int(row["width"]))
    m = int(row["n_train"])
    cf = capacity_fields(
        norms,
        m=m,
        seq_len=T,
        delta=config.delta,
        B_X=B_X,
        margin=config.margin,
        spectra=spectra_from_json(row["spectra_json"]),
        L_phi=norms.L_sigma,
    )
    return measure_columns(cf, m, float(row["margin_q"]))


def merge_family(paths, out) -> Path:
    """Merge the shards of one family run (:func:`run_family` with ``shard``) into the new file ``out``
    (:func:`~genbound.experiments.runtime.results.merge_results`: one header, rows sorted; a model trained in
    two shards is kept once, only if the two rows agree in every column but the wall time ``seconds``)."""

    return merge_results(paths, out, SCHEMA, same_except=("seconds",))


#: The pilots that chose the family's axes (issue 27): one results file per task and candidate pair.
PILOTS = data_path("predict_gap_pilots")

#: The paired gap changes of the first family (initialisation scale instead of input corruption), kept
#: after it was replaced (``tools/predict_gap_notes.py OLD.csv --moves``; the notes beside the file).
EARLIER_FAMILY_MOVES = data_path("predict_gap_earlier_family_moves.csv")

#: The value every axis had in a pilot written before that axis existed (full batch, no weight
#: decay, unit initialisation scale, clean labels).
_PILOT_DEFAULTS = {
    "batch": 0,
    "weight_decay": 0.0,
    "init_scale": 1.0,
    "label_noise": 0.0,
    "input_flip": 0.0,
}


def read_pilot(path):
    """A pilot's results file as a DataFrame with every column of ``AXES``: the pilots were written
    while the axes were being added, so an older file lacks the later axes, which take the value they
    ran with (``_PILOT_DEFAULTS``). Only the rows are read (pandas); the header is checked to name
    the ``predict-gap`` experiment."""
    import pandas as pd

    path = Path(path)
    first = path.read_text(encoding="utf-8").split("\n", 40)
    if not any('"experiment": "predict-gap"' in ln for ln in first):
        raise GenboundError(f"{path}: not a predict-gap results file")
    df = pd.read_csv(path, comment="#")
    for a, v in _PILOT_DEFAULTS.items():
        if a not in df.columns:
            df[a] = v
    for col in ("fitted", "diverged"):
        df[col] = df[col].astype(str).str.lower().eq("true")
    missing = [
        c for c in ("task", *AXES, "seed", "gap", "test_se", "fitted") if c not in df.columns
    ]
    if missing:
        raise GenboundError(f"{path}: missing column(s) {missing}")
    return df


def family_config(path=None) -> FamilyConfig:
    """The :class:`~genbound.experiments.predict_gap.FamilyConfig` recorded in a family's results file
    (default ``SAVED_FAMILY``)."""
    from dataclasses import fields as _fields

    cfg = read_results(Path(SAVED_FAMILY if path is None else path), SCHEMA).config
    names = {f.name for f in _fields(FamilyConfig)}
    return FamilyConfig(
        **{
            k: (
                tuple(v)
                if isinstance(v, list)
                else {t: tuple(n) for t, n in v.items()}
                if isinstance(v, dict)
                else v
            )
            for k, v in cfg.items()
            if k in names
        }
    )


def undefined_allowed(df, col: str) -> "np.ndarray":
    """Where a measure column may be ``nan`` by definition: every measure of a diverged model, the
    depth-1-only measures (``DEPTH1_ONLY``) of deeper
    models, and the margin-normalised capacities of unfitted models (their margin quantile may be
    ``<= 0``)."""
    mask = df["diverged"].to_numpy(bool).copy()
    if col in DEPTH1_ONLY:
        mask |= df["depth"].to_numpy() != 1
    if any(col.endswith("_" + f) for f, (by_margin, _) in CAPACITY_FORMS.items() if by_margin):
        mask |= ~df["fitted"].to_numpy(bool)
    return mask


def read_family(path=None, *, report: Callable[[str], None] | None = None):
    """The saved family (default ``SAVED_FAMILY``) as a DataFrame, read by
    :func:`~genbound.experiments.runtime.results.read_results` (every row checked against the columns, unique
    keys, an unfinished last row reported and left out) and validated: at least one row, known tasks,
    finite gaps and accuracies, every measure finite except where :func:`undefined_allowed` allows ``nan``
    (never an infinity). A :class:`~genbound.errors.GenboundError` names the problem otherwise. The
    file is only read."""
    path = Path(SAVED_FAMILY if path is None else path)
    df = read_results(path, SCHEMA, report=report).frame()
    if len(df) == 0:
        raise GenboundError(f"{path}: the family is empty")
    bad_tasks = sorted(set(df["task"]) - set(TASKS))
    if bad_tasks:
        raise GenboundError(f"{path}: unknown task(s) {bad_tasks}")
    for col in ("gap", "train_acc", "test_acc", "test_se"):
        if not np.isfinite(df[col].to_numpy(float)).all():
            raise GenboundError(f"{path}: column {col!r} has a non-finite value")
    for col in MEASURES:
        v = df[col].to_numpy(float)
        ok = np.isfinite(v) | (np.isnan(v) & undefined_allowed(df, col))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise GenboundError(
                f"{path}: column {col!r} has a non-finite value ({v[i]}) in row {i + 1}"
            )
    return df
