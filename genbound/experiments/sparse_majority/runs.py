"""One run record per trained network, and the runs themselves: the seeds at one ``T``, trained in one
stack (:func:`run_seq_len`), and a sweep over ``T`` that trains every run alone (:func:`run_sweep`) (part of
:mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import torch

from ..._validate import check_positive_int
from ...device import resolve_device
from ...errors import ParameterError
from ...nets import ModelNorms
from .bounds import M_STAR_TARGET, bound_fields
from .config import SparseMajorityConfig
from .evaluation import evaluate_stack, ramp_risk
from .model import _PARAM_NAMES, build_model, load_stacked, stack_parameters
from ...positional import uniform_input_radius
from ..runtime.seeds import sparse_majority_seed
from .data import regenerate_data
from .task import _check_task
from .training import tensors_for, train_adam, train_stack

__all__ = ["RESULT_KEYS", "RunResult", "initial_model", "run_seq_len", "run_sweep"]

#: Keys of every run record (the JSON objects of ``genbound experiment sparse-majority --json``).
RESULT_KEYS = (
    "seq_len",
    "seed",
    "fitted",
    "fit_step",
    "train_acc",
    "test_acc",
    "acc_gap",
    "train_loss",
    "test_loss",
    "loss_gap",
    "l11_norm_sum",
    "l11_dist_from_init",
    "input_radius",
    "tt_bound",
    "edelman_bound",
    "tt_trivial",
    "edelman_trivial",
    "tt_capacity",
    "edelman_capacity",
    "tt_m_star",
    "edelman_m_star",
    "one_bit_acc",
    "diverged",
    "steps",
    "seconds",
)


@dataclass(frozen=True)
class RunResult:
    """One trained model. The primary numbers are those of the **stopping checkpoint** (the first
    weights that classify the whole training set correctly; for a run that never fits, its last
    weights), all evaluated in float64. Gaps are "how much worse on test": ``acc_gap = train_acc -
    test_acc`` and ``loss_gap = test_loss - train_loss``.

    ``fitted``: the stopping checkpoint has training accuracy exactly 1 (checked on the whole training
    set); ``fit_step``: when it was reached (Adam steps, or epochs for the original protocol; ``-1`` if
    never); ``steps``: steps (epochs) taken. ``l11_norm_sum``: the sum of the entrywise l1 norms of every
    parameter tensor (what the authors' script prints); ``l11_dist_from_init``: the same sum for the
    difference from the initial weights. ``input_radius``: the ``T``-uniform ``B_X`` the bounds use
    (:func:`~genbound.positional.uniform_input_radius`); ``input_radius_T``: the exact maximum row norm at this ``T``, for
    comparison. ``tt_bound``, ``edelman_bound``: the bounds of :func:`bounds_for` at the trained norms,
    with the union bound over a grid of radii; ``tt_trivial``, ``edelman_trivial``: that value is the
    trivial cap (it cannot see the weights); ``tt_capacity``, ``edelman_capacity``: the bounds' m-free
    complexity at these norms (``capacity`` of :mod:`genbound.bounds`); ``tt_m_star``, ``edelman_m_star``:
    :func:`sample_size_needed` (NaN when skipped). ``val_*``: the secondary, validation-selected
    checkpoint; ``orig_*``: the original protocol's test-selected checkpoint (NaN unless tracked).
    ``seconds``: wall time of training and evaluating the run, or, for seeds trained together in one
    stack by :func:`run_seq_len`, the stack's wall time divided by their number (:func:`run_sweep`
    trains every run alone). ``one_bit_acc``: the test accuracy of the best one-relevant-bit rule
    **chosen on the test set itself** (:meth:`~genbound.experiments.sparse_majority.SparseMajorityTask.one_bit_accuracy`),
    a maximum biased upward; the chapter's baseline is the bit chosen on the training set
    (:func:`~genbound.experiments.sparse_majority.one_bit_baselines`). ``norms_json``: the stopping checkpoint's
    :class:`~genbound.nets.ModelNorms` as JSON, from which every bound column recomputes
    (:func:`~genbound.experiments.sparse_majority.saved_norms`). ``l11_norms``: the entrywise l1 norm of
    every parameter tensor."""

    seq_len: int
    seed: int
    protocol: str
    fitted: bool
    fit_step: int
    steps: int
    train_acc: float
    test_acc: float
    acc_gap: float
    train_loss: float
    test_loss: float
    loss_gap: float
    val_acc: float
    l11_norm_sum: float
    l11_dist_from_init: float
    input_radius: float
    input_radius_T: float
    tt_bound: float
    edelman_bound: float
    tt_m_star: float
    edelman_m_star: float
    tt_trivial: bool
    edelman_trivial: bool
    tt_capacity: float
    edelman_capacity: float
    train_ramp_risk: float
    n_train: int
    seconds: float
    diverged: bool
    val_step: int
    val_train_acc: float
    val_test_acc: float
    val_acc_gap: float
    orig_step: int
    orig_train_acc: float
    orig_test_acc: float
    orig_acc_gap: float
    one_bit_acc: float = math.nan
    norms_json: str = "{}"
    l11_norms: dict = field(default_factory=dict, compare=False)

    def to_dict(self, *, with_norms: bool = False) -> dict:
        """A JSON-ready dict (``l11_norms``, the per-tensor norms, only when ``with_norms``)."""
        d = asdict(self)
        if not with_norms:
            d.pop("l11_norms")
        return d


def initial_model(seq_len: int, seed: int, config: SparseMajorityConfig | None = None):
    """The float64 network of run ``(seq_len, seed)`` at initialisation (before any training step).

    A snapshot for measuring (norms, bounds): its parameters do not require gradients.
    """
    return build_model(config, seed=sparse_majority_seed(seq_len, seed, 2)).requires_grad_(False)


def run_seq_len(
    seq_len: int,
    seeds: Sequence[int],
    config: SparseMajorityConfig | None = None,
    *,
    device=None,
    progress: bool | None = None,
    return_models: bool = False,
):
    """Train and evaluate one model per seed at sequence length ``seq_len`` (all seeds in one stack).

    Returns the list of :class:`RunResult` (one per seed); with ``return_models`` a pair
    ``(results, nets)`` where ``nets[k]`` is seed ``k``'s float64
    :class:`~genbound.nets.ReferenceTransformer` holding the stopping checkpoint (a snapshot for
    measuring: its parameters do not require gradients).

    Each seed fixes its task (positions, embeddings), its data (train, validation, test), its Keras-style
    initialisation and its shuffling; results do not depend on which seeds are trained together.
    """
    cfg = (config or SparseMajorityConfig()).validated()
    _check_task(seq_len, cfg.s)
    dev = resolve_device(device)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ParameterError("seeds must name at least one seed")
    t_start = time.perf_counter()
    tasks, data, nets, gens = [], {"train": [], "val": [], "test": []}, [], []
    for sd in seeds:
        task, drawn = regenerate_data(seq_len, sd, cfg)
        for split in data:
            data[split].append(drawn[split])
        tasks.append(task)
        nets.append(initial_model(seq_len, sd, cfg))
        gens.append(torch.Generator().manual_seed(sparse_majority_seed(seq_len, sd, 3)))
    data = {
        k: (torch.stack([b for b, _ in v]).to(dev), torch.stack([y for _, y in v]).to(dev))
        for k, v in data.items()
    }
    init64 = {
        nm: p.detach() for nm, p in stack_parameters(nets, dtype=torch.float64, device=dev).items()
    }
    params = stack_parameters(nets, dtype=cfg.dtype, device=dev)
    E, pe = tensors_for(tasks, data, dev)
    E, pe = E.to(params["W_Q"].dtype), pe.to(params["W_Q"].dtype)
    scale = 1.0 / math.sqrt(cfg.d_head)
    K = len(seeds)
    orig = None
    if cfg.protocol == "adam":
        stop, val_best, _, fit_step, steps, val_step, diverged, _ = train_adam(
            params, tasks, data, cfg, E, pe, scale, progress, f"T={seq_len}"
        )
    else:
        out = train_stack(
            params, tasks, data, cfg, generators=gens, progress=progress, desc=f"T={seq_len}"
        )
        stop, val_best = out.checkpoints["last"], out.checkpoints["val"]
        steps, val_step = out.epochs, out.checkpoint_epochs["val"]
        fit_step, diverged = [-1] * K, [False] * K
        if cfg.track_test_selection:
            orig = (out.checkpoints["test"], out.checkpoint_epochs["test"])
    E64, pe64 = E.double(), pe.double()

    def evaluate(P):
        P = {nm: p.to(torch.float64) for nm, p in P.items()}
        return P, {
            split: evaluate_stack(P, *data[split], E64, pe64, scale, chunk=cfg.eval_chunk)
            for split in ("train", "val", "test")
        }

    P_stop, res = evaluate(stop)
    _, res_val = evaluate(val_best)
    res_orig = evaluate(orig[0])[1] if orig is not None else None
    ramp = ramp_risk(P_stop, *data["train"], E64, pe64, scale, margin=cfg.margin)
    B_X = uniform_input_radius(cfg.d)
    elapsed = time.perf_counter() - t_start
    results = []
    for k, sd in enumerate(seeds):
        load_stacked(nets[k], P_stop, k)
        raw = nets[k].weight_norms()["raw"]
        dist = sum(float((P_stop[nm][k] - init64[nm][k]).abs().sum()) for nm in _PARAM_NAMES)
        bf = bound_fields(
            nets[k],
            m=cfg.n_train,
            seq_len=seq_len,
            delta=cfg.delta,
            B_X=B_X,
            margin=cfg.margin,
            m_star_target=M_STAR_TARGET if cfg.m_star else None,
        )
        tt_m, ed_m = bf.get("tt_m_star", math.nan), bf.get("edelman_m_star", math.nan)
        one_bit = tasks[k].one_bit_accuracy(data["test"][0][k].cpu(), data["test"][1][k].cpu())
        (trl, tra), (_, vaa), (tel, tea) = (
            (float(l[k]), float(a[k])) for l, a in (res["train"], res["val"], res["test"])
        )
        fitted = tra == 1.0
        if cfg.protocol == "original" and fitted:
            fit_step[k] = steps[k]
        v_tr, v_te = float(res_val["train"][1][k]), float(res_val["test"][1][k])
        if res_orig is not None:
            o_step, o_tr, o_te = (
                orig[1][k],
                float(res_orig["train"][1][k]),
                float(res_orig["test"][1][k]),
            )
        else:
            o_step, o_tr, o_te = -1, math.nan, math.nan
        results.append(
            RunResult(
                seq_len=seq_len,
                seed=sd,
                protocol=cfg.protocol,
                fitted=fitted,
                fit_step=fit_step[k] if fitted else -1,
                steps=steps[k],
                train_acc=tra,
                test_acc=tea,
                acc_gap=tra - tea,
                train_loss=trl,
                test_loss=tel,
                loss_gap=tel - trl,
                val_acc=vaa,
                l11_norm_sum=float(sum(raw.values())),
                l11_dist_from_init=dist,
                input_radius=B_X,
                input_radius_T=tasks[k].input_radius(),
                tt_bound=bf["tt_bound"],
                edelman_bound=bf["edelman_bound"],
                tt_m_star=tt_m,
                edelman_m_star=ed_m,
                tt_trivial=bf["tt_trivial"],
                edelman_trivial=bf["edelman_trivial"],
                tt_capacity=bf["tt_capacity"],
                edelman_capacity=bf["edelman_capacity"],
                train_ramp_risk=float(ramp[k]),
                n_train=cfg.n_train,
                seconds=elapsed / len(seeds),
                diverged=diverged[k],
                val_step=val_step[k],
                val_train_acc=v_tr,
                val_test_acc=v_te,
                val_acc_gap=v_tr - v_te,
                orig_step=o_step,
                orig_train_acc=o_tr,
                orig_test_acc=o_te,
                orig_acc_gap=o_tr - o_te,
                one_bit_acc=one_bit,
                norms_json=ModelNorms.of(nets[k]).to_json(),
                l11_norms=raw,
            )
        )
    return (results, nets) if return_models else results


def run_sweep(
    seq_lens: Iterable[int],
    seeds: int | Sequence[int],
    config: SparseMajorityConfig | None = None,
    *,
    device=None,
    progress: bool | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    skip: Callable[[int, int], bool] | None = None,
    on_stack: Callable[[list[RunResult]], None] | None = None,
) -> list[RunResult]:
    """Train every run ``(T, seed)`` of ``seq_lens`` x ``seeds`` (``seeds``: a count ``n`` meaning
    ``0..n-1``, or explicit seeds), **each alone** (:func:`run_seq_len` with one seed), so that a row
    depends only on ``(T, seed)`` and the configuration: rerunning one row reproduces it bit for bit on
    a CPU with one thread. (Models trained in one stack are independent functions, but the stacked
    kernels round differently with the stack's size, and Adam's early, nearly sign-like steps amplify
    those last-bit differences into different trajectories.)

    ``on_stack`` is called with the one-record list of every run as soon as it finishes (e.g.
    :meth:`~genbound.experiments.runtime.results.ResultsWriter.append` of a results file), then ``on_result``
    with the record; runs with ``skip(T, seed)`` true are not trained (finished rows of a results file
    being resumed), so a resumed sweep equals an uninterrupted one."""
    cfg = (config or SparseMajorityConfig()).validated()
    seq_lens = [int(t) for t in seq_lens]
    if not seq_lens:
        raise ParameterError("seq_lens must name at least one sequence length")
    for T in seq_lens:
        _check_task(T, cfg.s)
    seed_list = (
        list(range(check_positive_int(seeds, "seeds"))) if isinstance(seeds, int) else list(seeds)
    )
    resolve_device(device)
    out = []
    for T in seq_lens:
        for sd in seed_list:
            if skip is not None and skip(T, sd):
                continue
            stack = run_seq_len(T, [sd], cfg, device=device, progress=progress)
            if on_stack is not None:
                on_stack(stack)
            for r in stack:
                out.append(r)
                if on_result is not None:
                    on_result(r)
    return out
