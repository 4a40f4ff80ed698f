"""Full-batch Adam for a stack of independent models, each stopped at the first step that fits.

The book's experiments train many small models side by side: the parameters of ``K`` models are
stacked along a leading axis, one forward pass computes all ``K`` losses on their own training sets,
and the gradient of the summed loss is the per-model gradient (the models share nothing). This module
is the optimiser and the stopping rule; what a "model" computes is a callable the caller passes.

Stopping rule (Jiang et al. 2019 stop at a fixed training cross-entropy; the sparse-majority script of
Trauger & Tewari stops at training accuracy 1). Here a model **fits** when its argmax prediction is
right on *every* training example. Training is full-batch, so the logits of each step are the exact
predictions of the current weights on the whole training set (not a running average over batches):
whenever those float32 logits fit, ``confirm`` re-checks the same weights in float64 and, if it agrees,
that step's weights are the model's **stopping checkpoint** and the model leaves the stack. A model
that has not fitted when the step budget runs out keeps its last weights and ``fitted=False``.

Schedule: linear warm-up for ``warmup`` steps, then cosine annealing of the learning rate to zero at
``steps`` (the step budget). The update is Adam's (Kingma & Ba 2015) with bias correction, written out
here so that models can leave the stack; ``weight_decay > 0`` makes it AdamW (decoupled decay,
Loshchilov & Hutter 2019).

>>> proto = AdamProtocol(lr=1e-2, steps=100, warmup=10)
>>> [round(proto.lr_at(t), 6) for t in (1, 10, 55, 100)]
[0.001, 0.01, 0.005, 0.0]
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from .._validate import check_positive_int, check_real
from ..errors import ParameterError

__all__ = ["AdamProtocol", "FitOutcome", "fit_stack", "minibatch_weights"]


@dataclass(frozen=True)
class AdamProtocol:
    """Full-batch Adam: peak learning rate ``lr``, step budget ``steps``, linear warm-up ``warmup``
    steps then cosine decay to 0, Adam's ``betas`` and ``eps``, decoupled ``weight_decay`` (0: Adam),
    ``eval_every`` steps between validation evaluations (for the validation-selected checkpoint), and
    ``batch_size``: 0 for full-batch gradients, else the size of the mini-batch each step's gradient is
    computed on (a fresh draw without replacement per step and model; the stopping rule still checks
    the whole training set)."""

    lr: float = 3e-3
    steps: int = 20_000
    warmup: int = 100
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    eval_every: int = 250
    batch_size: int = 0

    def validated(self) -> "AdamProtocol":
        """Return ``self`` after checking every field (raises :class:`~genbound.errors.ParameterError`)."""
        check_real(self.lr, "lr", lo=0.0, lo_open=True)
        check_positive_int(self.steps, "steps (step budget)")
        if not isinstance(self.warmup, int) or self.warmup < 0 or self.warmup >= self.steps:
            raise ParameterError(f"warmup must be an integer in [0, steps), got {self.warmup!r}")
        check_real(self.beta1, "beta1", lo=0.0, hi=1.0, hi_open=True)
        check_real(self.beta2, "beta2", lo=0.0, hi=1.0, hi_open=True)
        check_real(self.eps, "eps", lo=0.0, lo_open=True)
        check_real(self.weight_decay, "weight_decay", lo=0.0)
        check_positive_int(self.eval_every, "eval_every")
        if (
            not isinstance(self.batch_size, int)
            or isinstance(self.batch_size, bool)
            or self.batch_size < 0
        ):
            raise ParameterError(
                f"batch_size must be an integer >= 0 (0: full batch), got {self.batch_size!r}"
            )
        return self

    def lr_at(self, step: int) -> float:
        """Learning rate of step ``step`` (``1..steps``): ``lr step / warmup`` during warm-up, then
        ``lr (1 + cos(pi s)) / 2`` with ``s`` the fraction of the post-warm-up steps done."""
        if step <= self.warmup:
            return self.lr * step / self.warmup
        s = (step - self.warmup) / (self.steps - self.warmup)
        return self.lr * 0.5 * (1.0 + math.cos(math.pi * min(s, 1.0)))


@dataclass
class FitOutcome:
    """Per model ``k``: ``fitted[k]``, ``fit_step[k]`` (the stopping step; ``-1`` when not fitted),
    ``steps[k]`` (steps taken), ``diverged[k]`` (a non-finite loss stopped it). ``stop``: stacked
    parameters at the stopping checkpoint (the last weights for models that did not fit);
    ``val_best`` and ``val_step``: the checkpoint of lowest validation loss among the evaluations up to
    the stop (``None`` without a validation callable); ``initial``: the weights before training;
    ``seconds``: wall time."""

    fitted: list[bool]
    fit_step: list[int]
    steps: list[int]
    diverged: list[bool]
    stop: dict[str, torch.Tensor]
    initial: dict[str, torch.Tensor]
    val_best: dict[str, torch.Tensor] | None
    val_step: list[int]
    seconds: float
    history: list[dict] = field(default_factory=list)


LossLogits = Callable[[dict, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def minibatch_weights(
    gens: list[torch.Generator], idx: torch.Tensor, n: int, batch_size: int
) -> torch.Tensor:
    """``(len(idx), n)`` float32 weights: for each active model ``k`` in ``idx``, ``1`` on a fresh draw of
    ``min(batch_size, n)`` of its ``n`` training examples without replacement (from its own generator
    ``gens[k]``, so a model's batches do not depend on the other models of the stack), ``0`` elsewhere.

    >>> w = minibatch_weights([torch.Generator().manual_seed(0)], torch.tensor([0]), 5, 2)
    >>> w.shape, float(w.sum())
    (torch.Size([1, 5]), 2.0)
    """
    W = torch.zeros(len(idx), n)
    b = min(int(batch_size), n)
    for j, k in enumerate(idx.tolist()):
        W[j, torch.randperm(n, generator=gens[k])[:b]] = 1.0
    return W


def fit_stack(
    params: dict[str, torch.Tensor],
    loss_logits: LossLogits,
    train_labels: torch.Tensor,
    protocol: AdamProtocol,
    *,
    confirm: Callable[[dict, int], bool] | None = None,
    val_loss: Callable[[dict, torch.Tensor], torch.Tensor] | None = None,
    progress: bool | None = None,
    desc: str = "fit",
    batch_seeds: list[int] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> FitOutcome:
    """Train the stacked models in ``params`` (``name -> (K, ...)`` tensors) until each fits or the
    budget runs out; ``params`` is not modified.

    ``loss_logits(P, idx)``: for the active models ``idx`` (int64 indices into ``0..K-1``) with stacked
    parameters ``P`` (``name -> (len(idx), ...)``), the per-model training losses ``(len(idx),)`` and the
    logits on the whole training set ``(len(idx), n, classes)``. ``train_labels`` ``(K, n)``.
    ``confirm(P_k, k)``: re-check that model ``k`` with parameters ``P_k`` (``name -> tensor`` without
    the model axis, float64) fits (default: accept the float32 verdict). ``val_loss(P, idx)``: per-model
    validation losses, evaluated every ``protocol.eval_every`` steps. With ``protocol.batch_size > 0``
    the call is ``loss_logits(P, idx, weights)`` with the :func:`minibatch_weights` of the step (model
    ``k``'s batches drawn from a generator seeded by ``batch_seeds[k]``), and the returned losses must
    be the weighted means of the per-example losses; the logits stay those of the whole training set.
    ``on_step(step)``: called once at the start of every step (``step`` from 1), before any call of
    ``loss_logits`` in it, so that a loss with its own per-step randomness (a corruption of the inputs)
    draws it once per step, not once per call (a step calls ``loss_logits`` again when models leave).
    """
    proto = protocol.validated()
    K = int(train_labels.shape[0])
    if any(p.shape[0] != K for p in params.values()):
        raise ParameterError(
            "every stacked parameter must have the model axis K = len(train_labels) first"
        )
    full = {nm: p.detach().clone() for nm, p in params.items()}
    initial = {nm: p.clone() for nm, p in full.items()}
    val_best = {nm: p.clone() for nm, p in full.items()} if val_loss is not None else None
    best = torch.full((K,), math.inf, dtype=torch.float64)
    val_step = [0] * K
    fitted, fit_step, steps, diverged = [False] * K, [-1] * K, [proto.steps] * K, [False] * K
    idx = torch.arange(K)
    P = {nm: p.clone().requires_grad_(True) for nm, p in full.items()}
    m1 = {nm: torch.zeros_like(p) for nm, p in full.items()}
    m2 = {nm: torch.zeros_like(p) for nm, p in full.items()}
    history: list[dict] = []
    if progress is None:
        progress = sys.stderr.isatty()
    from tqdm import tqdm

    bar = tqdm(
        range(1, proto.steps + 2),
        desc=desc,
        disable=not progress,
        leave=False,
        mininterval=1.0 if sys.stderr.isatty() else 60.0,
    )
    t0 = time.perf_counter()
    b1, b2 = proto.beta1, proto.beta2
    n_train = int(train_labels.shape[1])
    if proto.batch_size:
        if batch_seeds is None or len(batch_seeds) != K:
            raise ParameterError(
                "a mini-batch protocol needs one batch seed per model (batch_seeds)"
            )
        gens = [torch.Generator().manual_seed(int(s)) for s in batch_seeds]

    def losses(P, idx, Wb):
        return loss_logits(P, idx) if Wb is None else loss_logits(P, idx, Wb)

    for step in bar:
        if on_step is not None:
            on_step(step)
        Wb = minibatch_weights(gens, idx, n_train, proto.batch_size) if proto.batch_size else None
        loss, logits = losses(P, idx, Wb)
        y = train_labels[idx.to(train_labels.device)]
        done = (logits.detach().argmax(-1) == y).all(-1).cpu()
        bad = ~torch.isfinite(loss.detach()).cpu()
        leave = torch.zeros(len(idx), dtype=torch.bool)
        for j in torch.nonzero(done | bad).flatten().tolist():
            k = int(idx[j])
            if bool(bad[j]):
                diverged[k], steps[k], leave[j] = True, step - 1, True
                continue
            Pk = {nm: p.detach()[j].to(torch.float64) for nm, p in P.items()}
            if confirm is None or confirm(Pk, k):
                fitted[k], fit_step[k], steps[k], leave[j] = True, step - 1, step - 1, True
        if val_loss is not None and (step - 1) % proto.eval_every == 0:
            with torch.no_grad():
                vl = val_loss({nm: p.detach() for nm, p in P.items()}, idx).double().cpu()
            for j, k in enumerate(idx.tolist()):
                if not bool(bad[j]) and vl[j] < best[k]:
                    best[k], val_step[k] = vl[j], step - 1
                    for nm, p in P.items():
                        val_best[nm][k] = p.detach()[j]
        if bool(leave.any()):
            for j in torch.nonzero(leave).flatten().tolist():
                for nm, p in P.items():
                    full[nm][int(idx[j])] = p.detach()[j]
            keep = ~leave
            idx = idx[keep]
            if len(idx) == 0:
                break
            kd = keep.to(next(iter(P.values())).device)
            P = {nm: p.detach()[kd].clone().requires_grad_(True) for nm, p in P.items()}
            m1 = {nm: v[kd] for nm, v in m1.items()}
            m2 = {nm: v[kd] for nm, v in m2.items()}
            if step > proto.steps:
                break
            Wb = Wb[keep] if Wb is not None else None
            loss, _ = losses(P, idx, Wb)  # on the smaller stack
        if step > proto.steps:  # the last weights were checked: done
            for j, k in enumerate(idx.tolist()):
                for nm, p in P.items():
                    full[nm][k] = p.detach()[j]
            break
        # allow_unused: a parameter the output does not depend on (a key bias) gets no gradient
        grads = torch.autograd.grad(loss.sum(), list(P.values()), allow_unused=True)
        lr = proto.lr_at(step)
        with torch.no_grad():
            for (nm, p), g in zip(P.items(), grads):
                if g is None:
                    continue
                m1[nm].mul_(b1).add_(g, alpha=1 - b1)
                m2[nm].mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (m2[nm] / (1 - b2**step)).sqrt_().add_(proto.eps)
                if proto.weight_decay:
                    p.mul_(1 - lr * proto.weight_decay)
                p.addcdiv_(m1[nm], denom, value=-lr / (1 - b1**step))
        if step % 500 == 0 or step == 1:
            history.append(
                {
                    "step": step,
                    "lr": lr,
                    "active": len(idx),
                    "loss": loss.detach().double().cpu().tolist(),
                }
            )
        bar.set_postfix(active=len(idx), refresh=False)
    bar.close()
    if val_best is not None:
        for k in range(K):  # never select past the stop
            if val_step[k] > steps[k]:
                for nm in val_best:
                    val_best[nm][k] = full[nm][k]
                val_step[k] = steps[k]
    return FitOutcome(
        fitted,
        fit_step,
        steps,
        diverged,
        full,
        initial,
        val_best,
        val_step,
        time.perf_counter() - t0,
        history,
    )
