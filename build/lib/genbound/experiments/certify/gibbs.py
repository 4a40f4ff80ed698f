"""The model-free half of a certificate (Part VI, :ref:`ch-certificates`): the Gaussian posterior
``Q = N(mu, diag s^2)`` optimised with Pérez-Ortiz et al.'s ``f_quad``, its error rates from fresh draws,
and the PAC-Bayes-kl certificate over the grid of prior scales.

A task enters through one function, ``logits(params, split, k)``: the logits ``(k, n, C)`` of a stack
of ``k`` models (``params``, keyed like the model's parameters, leading axis ``k``) on every example of
``split`` (``"train"``, ``"bound"`` or ``"test"``); the labels come beside it. The sparse-majority sweep
and the Part V family use the same functions below, so one code path produces every certificate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from ...bounds import pac_bayes as pb

__all__ = [
    "SCALE_DRAWS",
    "Splits",
    "flat",
    "unflat",
    "draws",
    "gibbs_error_rates",
    "posterior_scale",
    "optimise_posterior",
    "certificate_columns",
]

#: How many draws of the noisy prior :func:`posterior_scale` averages at each candidate scale.
SCALE_DRAWS = 20

#: ``logits(params, split, k)``: logits ``(k, n_split, C)`` of ``k`` stacked models on a split.
Logits = Callable[[dict, str, int], torch.Tensor]


@dataclass(frozen=True)
class Splits:
    """The labels of the splits a certificate reads: the whole training set, the bound set (the part of
    the training set the prior never saw), the test set, and the prior's own training examples."""

    y_train: torch.Tensor
    y_bound: torch.Tensor
    y_test: torch.Tensor
    y_prior: torch.Tensor

    def labels(self, split: str) -> torch.Tensor:
        return {
            "train": self.y_train,
            "bound": self.y_bound,
            "test": self.y_test,
            "prior": self.y_prior,
        }[split]


def flat(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """The parameters of a one-model stack (``K = 1``) as one float64 vector (sorted names)."""
    return torch.cat([params[k][0].reshape(-1).double() for k in sorted(params)])


def unflat(vec: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``vec`` of shape ``(K, P)`` back into a stack of ``K`` models shaped like ``like`` (a ``K = 1``
    stack); differentiable.

    >>> like = {"a": torch.zeros(1, 2), "b": torch.zeros(1, 3)}
    >>> v = torch.arange(10.).reshape(2, 5)
    >>> bool(flat(unflat(v[:1], like)).equal(v[0].double())), unflat(v, like)["b"].shape
    (True, torch.Size([2, 3]))
    """
    out, i = {}, 0
    K = vec.shape[0]
    for k in sorted(like):
        shp = like[k].shape[1:]
        n = int(math.prod(shp))
        out[k] = vec[:, i : i + n].reshape(K, *shp)
        i += n
    return out


def draws(mu: torch.Tensor, s: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """``k`` draws ``(k, P)`` of ``N(mu, diag s^2)`` from ``gen``."""
    return mu.unsqueeze(0) + s.unsqueeze(0) * torch.randn(
        k, mu.numel(), generator=gen, dtype=mu.dtype
    )


def error_rates(logits: Logits, params: dict, split: str, labels: torch.Tensor) -> torch.Tensor:
    """The 0-1 error rate ``(K,)`` of each of a stack of ``K`` models on ``split``."""
    K = next(iter(params.values())).shape[0]
    z = logits(params, split, K)
    return (z.argmax(-1) != labels.unsqueeze(0)).double().mean(1)


def gibbs_error_rates(
    logits: Logits, mu, s, like, split: str, labels, k: int, gen, *, chunk: int = 50
):
    """The error rates ``(k,)`` of ``k`` fresh draws of ``Q`` on ``split`` (in chunks of ``chunk`` draws)."""
    out = []
    with torch.no_grad():
        for st in range(0, k, chunk):
            kk = min(chunk, k - st)
            out.append(error_rates(logits, unflat(draws(mu, s, kk, gen), like), split, labels))
    return torch.cat(out)


def posterior_scale(logits: Logits, y_prior, like, w_prior, cc, gen) -> float:
    """The posterior's initial noise scale, chosen on the **prior's own training examples** (split
    ``"prior"``; never the bound set): the largest of ``cc.post_scales()`` (grid points, from
    ``sigma_init`` down by halves) at which the mean error of :data:`SCALE_DRAWS` draws of ``N(w_prior, s^2 I)`` on those
    examples exceeds the prior network's own error there by at most ``cc.post_scale_tol``; the smallest
    when none does. A PAC-Bayes bound holds for every posterior at once, so the choice spends no
    confidence; the grid of prior scales is not touched."""
    with torch.no_grad():
        base = float(error_rates(logits, unflat(w_prior.unsqueeze(0), like), "prior", y_prior)[0])
        scales = cc.post_scales()
        for sc in scales:
            noisy = gibbs_error_rates(
                logits,
                w_prior,
                torch.full_like(w_prior, sc),
                like,
                "prior",
                y_prior,
                SCALE_DRAWS,
                gen,
                chunk=SCALE_DRAWS,
            )
            if float(noisy.mean()) <= base + cc.post_scale_tol:
                return float(sc)
    return float(scales[-1])


def optimise_posterior(
    logits: Logits,
    y_train,
    like,
    w_prior,
    w_start,
    cc,
    n_bound: int,
    gen,
    *,
    sigma0: float | None = None,
):
    """``(mu, s, sigma_p)``: the posterior's mean and standard deviations after ``cc.post_steps`` Adam
    steps (learning rate ``cc.post_lr``, one draw of ``Q`` per step) on Pérez-Ortiz et al.'s ``f_quad``
    of the bounded cross-entropy surrogate (log-probabilities clamped at ``log p_min``, divided by
    ``log(1/p_min)``) on the whole training set and the KL to ``N(w_prior, sigma_p^2 I)`` at the bound
    set's size ``n_bound``. ``mu`` starts at ``w_start``, ``s`` and ``sigma_p`` at ``sigma0`` (default
    ``cc.sigma_init``, a point of the certificate's grid). ``sigma_p`` stays there
    (``cc.post_prior_scale == "grid"``), so the KL the objective trades against the risk is the one the
    certificate pays at that grid point; with ``"free"`` it is learned too, and a posterior whose scales
    drift with it pays the drift in the certificate (on the sweep's 37,506 parameters a uniform 1.8 %
    inflation of every scale cost about 12 nats). A training objective only: the certificate is
    :func:`certificate_columns` on fresh draws."""
    s0 = cc.sigma_init if sigma0 is None else float(sigma0)
    mu = w_start.clone().double().requires_grad_(True)
    rho = torch.full_like(mu, math.log(math.expm1(s0))).requires_grad_(True)
    free = cc.post_prior_scale == "free"
    log_sp = torch.tensor(math.log(s0), dtype=torch.float64, requires_grad=free)
    opt = torch.optim.Adam([mu, rho, log_sp] if free else [mu, rho], lr=cc.post_lr)
    lnp = math.log(1.0 / cc.p_min)
    for _ in range(cc.post_steps):
        s = torch.nn.functional.softplus(rho)
        w = mu + s * torch.randn(mu.shape, generator=gen, dtype=mu.dtype)
        z = logits(unflat(w.unsqueeze(0), like), "train", 1)[0]
        logp = z.gather(-1, y_train.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(
            z, -1
        )  # log p(y | x)
        surrogate = (-logp.clamp(min=math.log(cc.p_min))).mean() / lnp
        kl = pb.kl_diag_gaussians(mu, s, w_prior, torch.exp(log_sp))
        loss = pb.f_quad(surrogate, kl, n_bound, cc.delta)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (
        mu.detach(),
        torch.nn.functional.softplus(rho.detach()),
        float(torch.exp(log_sp.detach())),
    )


def certificate_columns(logits: Logits, splits: Splits, like, w_prior, mu, s, cc, gen) -> dict:
    """The certificate of ``Q = N(mu, diag s^2)`` and what is reported beside it, from draws of ``gen``
    never used in the optimisation: the Monte Carlo mean of ``cc.n_draws`` draws on the bound set, the
    PAC-Bayes-kl bound at the best prior scale of the grid (:func:`genbound.bounds.pac_bayes.pac_bayes_grid_certificate`),
    ``Q``'s training error (20 draws) and test error (``cc.test_draws`` draws)."""
    n = int(splits.y_bound.shape[0])
    mc = float(
        gibbs_error_rates(logits, mu, s, like, "bound", splits.y_bound, cc.n_draws, gen).mean()
    )
    tr = float(gibbs_error_rates(logits, mu, s, like, "train", splits.y_train, 20, gen).mean())
    te = float(
        gibbs_error_rates(logits, mu, s, like, "test", splits.y_test, cc.test_draws, gen).mean()
    )
    grid = cc.grid()
    kls = [float(pb.kl_diag_gaussians(mu, s, w_prior, sg)) for sg in grid]
    cert = pb.pac_bayes_grid_certificate(mc, cc.n_draws, kls, n, cc.delta, cc.delta_mc)
    return {
        "q_bound_error_mc": mc,
        "q_emp_upper": cert.emp_upper,
        "q_train_error": tr,
        "q_test_error": te,
        "certificate": cert.value,
        "kl": cert.kl,
        "kl_per_n": cert.kl / n,
        "grid_sigma": grid[cert.grid_index],
        "grid_index": cert.grid_index,
        "post_sigma_mean": float(s.mean()),
    }
