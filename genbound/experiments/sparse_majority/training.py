"""Training a stack of networks: the authors' SGD protocol (:func:`train_stack`) and full-batch Adam
(:mod:`genbound.experiments.fullbatch`) (part of :mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Sequence

import torch

from .config import SparseMajorityConfig
from .evaluation import bce_one_hot, evaluate_stack
from .model import cls_logits
from .task import SparseMajorityTask
from ..fullbatch import fit_stack

__all__ = ["TrainOutcome", "train_stack", "tensors_for", "train_adam"]


@dataclass
class TrainOutcome:
    """What :func:`train_stack` returns, per model ``k``: the stopping epoch, whether the cap was hit,
    and the checkpoints (stacked parameter dicts, detached) with the epoch each was taken at."""

    epochs: list[int]
    hit_cap: list[bool]
    checkpoints: dict[str, dict[str, torch.Tensor]]
    checkpoint_epochs: dict[str, list[int]]
    seconds: float
    history: list[dict] = field(default_factory=list)


def tensors_for(tasks, data, device):
    """The stacked token embeddings of ``tasks`` and their shared positional encoding, on ``device``."""
    E = torch.stack([t.embeddings for t in tasks]).to(device)
    return E, tasks[0].encoding.to(device)


def train_stack(
    params: dict[str, torch.Tensor],
    tasks: Sequence[SparseMajorityTask],
    data: dict,
    config: SparseMajorityConfig,
    *,
    generators: Sequence[torch.Generator],
    progress: bool | None = None,
    desc: str = "",
) -> TrainOutcome:
    """Train ``K`` stacked nets (``params`` from :func:`stack_parameters`) with the original optimiser.

    ``data[split] = (bits (K, n, T), labels (K, n))`` for ``split`` in ``train``, ``val`` (and ``test``
    when ``config.track_test_selection``), on the parameters' device. ``generators[k]`` shuffles model
    ``k``'s training set every epoch, so a model's run does not depend on which others share the stack.
    The training accuracy of an epoch is Keras' running accuracy: predictions of each batch *before*
    its update, averaged over the epoch. Model ``k`` stops at the end of the first epoch where it is 1.0;
    its checkpoints are then frozen. ``progress``: a tqdm bar (default: only on a terminal).
    """
    cfg = config.validated()
    K = len(tasks)
    dev = params["W_Q"].device
    E, pe = tensors_for(tasks, data, dev)
    scale = 1.0 / math.sqrt(cfg.d_head)
    bits_tr, y_tr = data["train"]
    n = bits_tr.shape[1]
    opt = torch.optim.SGD(list(params.values()), lr=cfg.lr, momentum=cfg.momentum)
    kinds = ["val", "last"] + (["test"] if cfg.track_test_selection else [])
    best = {k: torch.full((K,), math.inf, dtype=torch.float64) for k in ("val", "test")}
    ckpt = {kind: {nm: p.detach().clone() for nm, p in params.items()} for kind in kinds}
    ckpt_epoch = {kind: [0] * K for kind in kinds}
    active = torch.ones(K, dtype=torch.bool)
    epochs, hit_cap = [cfg.max_epochs] * K, [False] * K
    history: list[dict] = []
    if progress is None:
        progress = sys.stderr.isatty()
    from tqdm import tqdm

    bar = tqdm(
        range(1, cfg.max_epochs + 1),
        desc=desc or "sparse-majority",
        disable=not progress,
        leave=False,
        mininterval=1.0 if sys.stderr.isatty() else 60.0,
    )
    t0 = time.perf_counter()
    lr = cfg.lr
    ar = torch.arange(K, device=dev)[:, None]
    for epoch in bar:
        lr = max(cfg.lr_floor, lr * cfg.lr_decay)  # Keras' LearningRateScheduler, at epoch start
        for g in opt.param_groups:
            g["lr"] = lr
        perm = torch.stack([torch.randperm(n, generator=gen) for gen in generators]).to(dev)
        correct = torch.zeros(K, dtype=torch.float64, device=dev)
        for st in range(0, n, cfg.batch_size):
            idx = perm[:, st : st + cfg.batch_size]
            bb, yy = bits_tr[ar, idx], y_tr[ar, idx]
            z = cls_logits(params, bb, E, pe, scale)
            loss = bce_one_hot(z, yy)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()  # models are independent: grads separate
            opt.step()
            correct += (z.detach().argmax(-1) == yy).double().sum(1)
        train_acc = (correct / n).cpu()
        stopping = active & (train_acc >= 1.0)
        if epoch == cfg.max_epochs:
            capped = active & ~stopping
            for k in torch.nonzero(capped).flatten().tolist():
                hit_cap[k] = True
            stopping = active.clone()
        if bool(stopping.any()) or epoch % cfg.eval_interval == 0:
            _select(params, data, E, pe, scale, cfg, best, ckpt, ckpt_epoch, active, epoch)
            rec = {
                "epoch": epoch,
                "lr": lr,
                "train_acc": train_acc.tolist(),
                "val_loss": best["val"].tolist(),
            }
            history.append(rec)
        for k in torch.nonzero(stopping).flatten().tolist():
            epochs[k] = epoch
            for nm, p in params.items():
                ckpt["last"][nm][k] = p.detach()[k]
            ckpt_epoch["last"][k] = epoch
        active &= ~stopping
        bar.set_postfix(
            active=int(active.sum()), acc=f"{float(train_acc.mean()):.3f}", refresh=False
        )
        if not bool(active.any()):
            break
    bar.close()
    return TrainOutcome(epochs, hit_cap, ckpt, ckpt_epoch, time.perf_counter() - t0, history)


@torch.no_grad()
def _select(params, data, E, pe, scale, cfg, best, ckpt, ckpt_epoch, active, epoch):
    """Evaluate the selection splits and keep, per active model, the lowest-loss checkpoint so far."""
    for kind in ("val", "test"):
        if kind == "test" and not cfg.track_test_selection:
            continue
        loss, _ = evaluate_stack(params, *data[kind], E, pe, scale, chunk=cfg.eval_chunk)
        loss = loss.cpu()
        better = active & (loss < best[kind])
        for k in torch.nonzero(better).flatten().tolist():
            best[kind][k] = loss[k]
            for nm, p in params.items():
                ckpt[kind][nm][k] = p.detach()[k]
            ckpt_epoch[kind][k] = epoch


def train_adam(params, tasks, data, cfg, E, pe, scale, progress, desc):
    """Run the ``"adam"`` protocol; returns ``(stop, val_best, fitted, fit_step, steps, val_step,
    diverged, initial)``."""

    bits_tr, y_tr = data["train"]

    def loss_logits(P, idx):
        z = cls_logits(P, bits_tr[idx], E[idx], pe, scale)
        return bce_one_hot(z, y_tr[idx]), z

    def confirm(Pk, k):
        P1 = {nm: v[None] for nm, v in Pk.items()}
        _, acc = evaluate_stack(
            P1,
            bits_tr[k : k + 1],
            y_tr[k : k + 1],
            E[k : k + 1].double(),
            pe.double(),
            scale,
            chunk=cfg.eval_chunk,
        )
        return bool(acc[0] == 1.0)

    def val_loss(P, idx):
        loss, _ = evaluate_stack(
            P, data["val"][0][idx], data["val"][1][idx], E[idx], pe, scale, chunk=cfg.eval_chunk
        )
        return loss

    out = fit_stack(
        params,
        loss_logits,
        y_tr,
        cfg.adam_protocol(),
        confirm=confirm,
        val_loss=val_loss,
        progress=progress,
        desc=desc,
    )
    return (
        out.stop,
        out.val_best,
        out.fitted,
        out.fit_step,
        out.steps,
        out.val_step,
        out.diverged,
        out.initial,
    )
