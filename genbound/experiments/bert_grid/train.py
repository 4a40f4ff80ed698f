"""The BERT grid's training: one model (:func:`~genbound.experiments.bert_grid.train_bert`, AdamW, float32, CPU) and
the whole grid, resumable per (cell, seed) and in chunks under a time budget
(:func:`~genbound.experiments.bert_grid.train_grid`), with its retry rule
(:data:`MIN_TEST_ACC`, :data:`MAX_RETRIES`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from ..runtime.machine import environment
from .config import DEPTHS, WIDTHS, GridConfig
from .data import count_task
from .model import accuracy, initial_model

__all__ = ["train_bert", "train_grid", "point_dir", "MIN_TEST_ACC", "MAX_RETRIES"]

#: A grid point whose test accuracy ends below this is trained again from scratch with half the learning
#: rate (deep post-LN models can diverge at the default rate); at most ``MAX_RETRIES`` times.
MIN_TEST_ACC = 0.9
#: The most retries of one grid point (see :data:`MIN_TEST_ACC`).
MAX_RETRIES = 2


def train_bert(L: int, N: int, cfg: GridConfig = GridConfig(), *, log=None):
    """Train one randomly initialised BERT classifier of depth ``L`` and width ``N`` on
    :func:`~genbound.experiments.bert_grid.count_task`.

    AdamW with a linear warm-up of ``cfg.warmup`` steps, then a constant rate; float32; seeded by
    ``cfg.seed``, ``L`` and ``N``. Returns ``(model, metrics)`` where ``metrics`` holds the final training
    loss (mean of the last 20 steps), train and test accuracy and the wall time in seconds.
    """
    model, seed = initial_model(L, N, cfg)
    model.train()
    g = torch.Generator().manual_seed(seed + 1)
    test_ids, test_y = count_task(
        cfg.n_test,
        seq_len=cfg.seq_len,
        vocab=cfg.vocab,
        generator=torch.Generator().manual_seed(10_000 + cfg.seed),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(cfg.warmup, 1)))
    t0 = time.perf_counter()
    losses = []
    train_ids = []
    train_y = []
    for step in range(cfg.steps):
        ids, y = count_task(cfg.batch, seq_len=cfg.seq_len, vocab=cfg.vocab, generator=g)
        if step >= cfg.steps - 8:
            train_ids.append(ids)
            train_y.append(y)
        loss = model(input_ids=ids, labels=y).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach().item())
        if log is not None and (step + 1) % 50 == 0:
            log(f"L={L} N={N} step {step + 1}/{cfg.steps} loss {np.mean(losses[-50:]):.4f}")
    metrics = {
        "L": L,
        "N": N,
        "heads": N // cfg.head_dim,
        "steps": cfg.steps,
        "final_loss": float(np.mean(losses[-20:])),
        "train_acc": accuracy(model, torch.cat(train_ids), torch.cat(train_y)),
        "test_acc": accuracy(model, test_ids, test_y),
        "seconds": time.perf_counter() - t0,
    }
    model.eval()
    return model, metrics


def point_dir(work, L: int, N: int, seed: int = 0) -> Path:
    """The folder of one trained model under the work folder: ``work/s{seed}/L{L}_N{N}``.

    >>> point_dir("w", 2, 64, 1).as_posix()
    'w/s1/L2_N64'
    """
    return Path(work) / f"s{seed}" / f"L{L}_N{N}"


def train_grid(
    work,
    *,
    depths=DEPTHS,
    widths=WIDTHS,
    cfg: GridConfig = GridConfig(),
    seeds=None,
    budget_s: float | None = None,
    expected_s=None,
    log=print,
) -> bool:
    """Train every ``(L, N, seed)`` model not yet saved under ``work`` and save it (``save_pretrained``).

    Resumable per (cell, seed): a model is saved under ``work/s{seed}/L{L}_N{N}`` as soon as it is trained,
    and a later call skips it. ``seeds`` defaults to ``(cfg.seed,)``; the order is seed by seed, then width,
    then depth. With ``budget_s`` a model is not started when the seconds spent in this call plus its
    expected time would exceed the budget, so that a long run goes in chunks (the first model of a call
    always starts). The expected time is ``expected_s(L, N)`` (default 0), rescaled, once a model of this
    call has finished, by the largest ratio of taken to expected seconds so far, times 1.15. Returns ``True`` when every requested model is trained.

    Retry rule: a point whose test accuracy is below ``MIN_TEST_ACC`` is trained again, from the same
    seed, with the learning rate halved, up to ``MAX_RETRIES`` times; ``metrics.json`` records the
    learning rate used and every attempt's accuracy.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    seeds = (cfg.seed,) if seeds is None else tuple(seeds)
    t_start = time.perf_counter()
    complete, trained = True, 0
    speed = []  # seconds taken / seconds expected, this call
    for seed in seeds:
        scfg = replace(cfg, seed=seed)
        (work / f"s{seed}").mkdir(exist_ok=True)
        (work / f"s{seed}" / "grid_config.json").write_text(json.dumps(asdict(scfg), indent=1))
        for N in widths:
            for L in depths:
                d = point_dir(work, L, N, seed)
                prev = (
                    json.loads((d / "metrics.json").read_text())
                    if (d / "metrics.json").exists()
                    else None
                )
                attempts = prev.get("attempts", [prev["test_acc"]]) if prev else []
                if prev and (prev["test_acc"] >= MIN_TEST_ACC or len(attempts) > MAX_RETRIES):
                    continue
                spent = time.perf_counter() - t_start
                need = float(expected_s(L, N)) if expected_s is not None else 0.0
                if speed:  # rescale by this call's own pace (15 % margin)
                    need *= 1.15 * max(speed)
                if budget_s is not None and trained and spent + need > budget_s:
                    log(
                        f"L={L} N={N} seed {seed}: not started ({spent:.0f} s spent, ~{need:.0f} s needed, "
                        f"budget {budget_s:.0f} s)"
                    )
                    complete = False
                    continue
                lr = cfg.lr * 0.5 ** len(attempts)
                model, metrics = train_bert(L, N, replace(scfg, lr=lr), log=log)
                metrics.update(
                    seed=seed,
                    lr=lr,
                    attempts=attempts + [metrics["test_acc"]],
                    **environment(device="cpu"),
                )
                model.save_pretrained(d)
                (d / "metrics.json").write_text(json.dumps(metrics, indent=1))
                trained += 1
                if expected_s is not None and float(expected_s(L, N)) > 0:
                    speed.append(metrics["seconds"] / float(expected_s(L, N)))
                log(
                    f"L={L} N={N} seed {seed}: done in {metrics['seconds']:.0f} s (lr {lr:g}), "
                    f"test accuracy {metrics['test_acc']:.3f}"
                )
                if metrics["test_acc"] < MIN_TEST_ACC and len(metrics["attempts"]) <= MAX_RETRIES:
                    complete = False  # a retry is due at the next call
    return complete
