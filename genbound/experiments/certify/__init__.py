"""PAC-Bayes-kl certificates of the book's trained transformers (Part VI, :ref:`ch-certificates`).

For one row of a sparse-majority results file (``seq_len``, ``seed`` and the recorded configuration):

1. **Data** exactly as the row's run drew it (task, training, validation and test sets).
2. **The full model**: the row retrained from its configuration on the whole training set
   (:func:`~genbound.experiments.sparse_majority.run_seq_len`, the verify path), with its norm bounds.
3. **The prior's model**: the same protocol and initialisation on the first ``prior_fraction`` of the
   training set (fixed in advance); the rest, the **bound set** of ``n`` examples, is never seen by it.
4. **The posterior** ``Q = N(mu, diag s^2)``, ``mu`` started at the full model's weights, ``s`` at
   ``sigma_init``, optimised with Pérez-Ortiz et al.'s ``f_quad`` (a bounded cross-entropy surrogate on
   the whole training set, the KL to ``N(w_prior, sigma^2 I)`` with a free ``sigma``) for ``post_steps``
   Adam steps, one draw per step.
5. **The certificate**: ``n_draws`` *fresh* draws of ``Q`` on the bound set, the Monte Carlo bound at
   ``delta_mc``, the PAC-Bayes-kl bound at each of the grid's prior scales at ``delta / K``, the least
   (:func:`genbound.bounds.pac_bayes.pac_bayes_grid_certificate`): a bound on the error of the Gibbs
   classifier ``Q`` with probability ``>= 1 - delta - delta_mc``. Beside it, ``Q``'s test error
   (``test_draws`` draws on the whole test set), the full model's **binomial test-set bound** on the
   test set, and the prior model's **hold-out bound** on the bound set.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields

import torch

from ...bounds import pac_bayes as pb
from ...errors import ParameterError

__all__ = ["CertifyConfig", "SCHEMA", "certify_sparse_majority", "open_certificates", "read_certificates",
           "flat", "unflat"]


@dataclass(frozen=True)
class CertifyConfig:
    """Everything a certificate depends on besides the row: the split, the confidences, the grid of
    prior scales (fixed before any data), the posterior's optimisation and the numbers of draws."""

    prior_fraction: float = 0.5
    delta: float = 0.04
    delta_mc: float = 0.01
    grid_center: float = 0.01
    grid_ratio: float = 2.0
    grid_count: int = 13
    sigma_init: float = 0.01
    post_steps: int = 300
    post_lr: float = 1e-3
    p_min: float = 1e-4
    n_draws: int = 1000
    test_draws: int = 20
    seed: int = 0
    n_train: int = 0                  # 0: the row's own training-set size; else a larger-m override

    def validated(self) -> "CertifyConfig":
        if not 0.0 < self.prior_fraction < 1.0:
            raise ParameterError(f"prior_fraction must lie in (0, 1), got {self.prior_fraction}")
        for name in ("delta", "delta_mc"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ParameterError(f"{name} must lie in (0, 1), got {v}")
        if self.delta + self.delta_mc >= 1.0:
            raise ParameterError("delta + delta_mc must be < 1")
        for name in ("grid_count", "post_steps", "n_draws", "test_draws"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "post_steps" else 1):
                raise ParameterError(f"{name} must be a positive integer, got {v!r}")
        for name in ("grid_center", "sigma_init", "post_lr", "p_min"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ParameterError(f"{name} must be a positive number, got {v!r}")
        if not self.grid_ratio > 1.0:
            raise ParameterError(f"grid_ratio must be > 1, got {self.grid_ratio}")
        if isinstance(self.n_train, bool) or not isinstance(self.n_train, int) or self.n_train < 0:
            raise ParameterError(f"n_train must be 0 (the row's) or a positive integer, got {self.n_train!r}")
        return self

    def grid(self) -> tuple[float, ...]:
        """The prior standard deviations (:func:`genbound.bounds.pac_bayes.prior_scale_grid`)."""
        return pb.prior_scale_grid(self.grid_center, self.grid_ratio, self.grid_count)


_COLUMNS = (("seq_len", int), ("seed", int), ("n_train", int), ("n_prior", int), ("n_bound", int),
            ("train_acc", float), ("test_acc", float), ("saved_test_acc", float), ("fitted", bool),
            ("prior_fitted", bool), ("prior_bound_errors", int), ("prior_holdout_bound", float),
            ("test_errors", int), ("n_test", int), ("test_set_bound", float),
            ("q_bound_error_mc", float), ("q_emp_upper", float), ("q_train_error", float),
            ("q_test_error", float), ("certificate", float), ("kl", float), ("kl_per_n", float),
            ("grid_sigma", float), ("grid_index", int), ("post_sigma_mean", float), ("mu_shift", float),
            ("tt_bound", float), ("tt_trivial", bool), ("edelman_bound", float), ("edelman_trivial", bool),
            ("n_params", int), ("seconds", float))


def _schema():
    from ..results import Schema

    return Schema("certify", _COLUMNS, key=("seq_len", "seed", "n_train"))


#: The certificate file's columns, keyed by ``(seq_len, seed, n_train)``.
SCHEMA = _schema()


def flat(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """The parameters of a one-model stack (``K = 1``) as one float64 vector (sorted names)."""
    return torch.cat([params[k][0].reshape(-1).double() for k in sorted(params)])


def unflat(vec: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``vec`` of shape ``(K, P)`` back into a stack of ``K`` models shaped like ``like`` (a ``K = 1``
    stack); differentiable."""
    out, i = {}, 0
    K = vec.shape[0]
    for k in sorted(like):
        shp = like[k].shape[1:]
        n = int(math.prod(shp))
        out[k] = vec[:, i:i + n].reshape(K, *shp)
        i += n
    return out


def _errors(params, bits, labels, E, pe, scale, chunk=2000) -> torch.Tensor:
    """0-1 errors ``(K,)`` of a stack of ``K`` models on shared data ``bits (n, T)``, ``labels (n,)``."""
    from ..sparse_majority import cls_logits

    K = next(iter(params.values())).shape[0]
    out = torch.zeros(K, dtype=torch.float64)
    for st in range(0, bits.shape[0], chunk):
        bb = bits[st:st + chunk].unsqueeze(0).expand(K, -1, -1)
        yy = labels[st:st + chunk]
        z = cls_logits(params, bb, E.expand(K, -1, -1), pe, scale)
        out += (z.argmax(-1) != yy.unsqueeze(0)).double().sum(1)
    return out


def _draws(mu, s, k, gen):
    return mu.unsqueeze(0) + s.unsqueeze(0) * torch.randn(k, mu.numel(), generator=gen, dtype=mu.dtype)


def certify_sparse_majority(seq_len: int, seed: int, sm_config, config: CertifyConfig | None = None, *,
                            saved_test_acc: float = math.nan) -> dict:
    """Certify the row ``(seq_len, seed)`` trained with the sparse-majority configuration ``sm_config``
    (its ``n_train`` replaced by ``config.n_train`` when that is positive); returns one row of
    :data:`SCHEMA`. See the module docstring for the steps."""
    from ..sparse_majority import (_seed_for, initial_model, make_task, run_seq_len, stack_parameters)
    from ..sparse_majority.training import _tensors_for, _train_adam

    cc = (config or CertifyConfig()).validated()
    cfg = sm_config
    if cc.n_train:
        from dataclasses import replace

        cfg = replace(cfg, n_train=cc.n_train)
    cfg = cfg.validated()
    if cfg.protocol != "adam":
        raise ParameterError(f"certify supports the sparse-majority 'adam' protocol, got {cfg.protocol!r}")
    t0 = time.perf_counter()
    m = cfg.n_train
    m0 = int(round(cc.prior_fraction * m))
    if not 1 <= m0 < m:
        raise ParameterError(f"prior_fraction {cc.prior_fraction} leaves no prior or no bound set at m = {m}")
    # 1. the data, as the row's run drew them
    task = make_task(seq_len, s=cfg.s, d=cfg.d, seed=_seed_for(seq_len, seed, 0))
    g = torch.Generator().manual_seed(_seed_for(seq_len, seed, 1))
    data = {split: task.sample(n, g) for split, n in (("train", cfg.n_train), ("val", cfg.n_val),
                                                      ("test", cfg.n_test))}
    # 2. the full model (the verify path)
    (res,), (net,) = run_seq_len(seq_len, [seed], cfg, device="cpu", progress=False, return_models=True)
    P_full = stack_parameters([net], dtype=torch.float64)
    # 3. the prior's model: same protocol and initialisation, first m0 training examples
    init = initial_model(seq_len, seed, cfg)
    params = stack_parameters([init], dtype=cfg.dtype)
    sub = {"train": tuple(x[:m0].unsqueeze(0) for x in data["train"]),
           "val": tuple(x.unsqueeze(0) for x in data["val"]),
           "test": tuple(x.unsqueeze(0) for x in data["test"])}
    E, pe = _tensors_for([task], sub, "cpu")
    E, pe = E.to(params["W_Q"].dtype), pe.to(params["W_Q"].dtype)
    scale = 1.0 / math.sqrt(cfg.d_head)
    stop, _, fitted0, *_ = _train_adam(params, [task], sub, cfg, E, pe, scale, False, "prior")
    P_prior = {k: v.detach().double() for k, v in stop.items()}
    E64, pe64 = E.double(), pe.double()
    bits_b, y_b = data["train"][0][m0:], data["train"][1][m0:]
    n = int(bits_b.shape[0])
    prior_err = int(_errors(P_prior, bits_b, y_b, E64, pe64, scale)[0])
    prior_hold = pb.binomial_test_bound(prior_err, n, cc.delta + cc.delta_mc).value
    test_err = int(_errors(P_full, *data["test"], E64, pe64, scale)[0])
    n_test = int(data["test"][0].shape[0])
    test_bound = pb.binomial_test_bound(test_err, n_test, cc.delta + cc.delta_mc).value
    # 4. the posterior, optimised with f_quad
    w_prior, w_full = flat(P_prior).detach(), flat(P_full).detach()
    P_full = {k: v.detach() for k, v in P_full.items()}
    mu = w_full.clone().requires_grad_(True)
    rho = torch.full_like(w_full, math.log(math.expm1(cc.sigma_init))).requires_grad_(True)
    log_sp = torch.tensor(math.log(cc.grid_center), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([mu, rho, log_sp], lr=cc.post_lr)
    gen = torch.Generator().manual_seed(int(cc.seed) * 7919 + seq_len * 31 + seed)
    from ..sparse_majority import cls_logits

    bits_tr, y_tr = data["train"]
    lnp = math.log(1.0 / cc.p_min)
    for _ in range(cc.post_steps):
        s = torch.nn.functional.softplus(rho)
        w = mu + s * torch.randn(mu.shape, generator=gen, dtype=mu.dtype)
        z = cls_logits(unflat(w.unsqueeze(0), P_full), bits_tr.unsqueeze(0), E64, pe64, scale)[0]
        logp = z.gather(-1, y_tr.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(z, -1)   # log p(y | x)
        surrogate = (-logp.clamp(min=math.log(cc.p_min))).mean() / lnp
        kl = pb.kl_diag_gaussians(mu, s, w_prior, torch.exp(log_sp))
        loss = pb.f_quad(surrogate, kl, n, cc.delta)
        opt.zero_grad()
        loss.backward()
        opt.step()
    mu, s = mu.detach(), torch.nn.functional.softplus(rho.detach())
    # 5. the certificate, from fresh draws on the bound set
    gen_eval = torch.Generator().manual_seed(10**9 + int(cc.seed) * 7919 + seq_len * 31 + seed)
    errs = []
    with torch.no_grad():
        for st in range(0, cc.n_draws, 50):
            k = min(50, cc.n_draws - st)
            errs.append(_errors(unflat(_draws(mu, s, k, gen_eval), P_full), bits_b, y_b, E64, pe64, scale) / n)
        mc = float(torch.cat(errs).mean())
        tr = float((_errors(unflat(_draws(mu, s, 20, gen_eval), P_full), bits_tr, y_tr, E64, pe64, scale)
                    / m).mean())
        te = float(torch.cat([_errors(unflat(_draws(mu, s, 1, gen_eval), P_full), *data["test"], E64, pe64,
                                      scale) for _ in range(cc.test_draws)]).mean() / n_test)
    grid = cc.grid()
    kls = [float(pb.kl_diag_gaussians(mu, s, w_prior, sg)) for sg in grid]
    cert = pb.pac_bayes_grid_certificate(mc, cc.n_draws, kls, n, cc.delta, cc.delta_mc)
    return {"seq_len": seq_len, "seed": seed, "n_train": m, "n_prior": m0, "n_bound": n,
            "train_acc": res.train_acc, "test_acc": res.test_acc, "saved_test_acc": float(saved_test_acc),
            "fitted": bool(res.fitted), "prior_fitted": bool(fitted0[0]), "prior_bound_errors": prior_err,
            "prior_holdout_bound": prior_hold, "test_errors": test_err, "n_test": n_test,
            "test_set_bound": test_bound, "q_bound_error_mc": mc, "q_emp_upper": cert.emp_upper,
            "q_train_error": tr, "q_test_error": te, "certificate": cert.value, "kl": cert.kl,
            "kl_per_n": cert.kl / n, "grid_sigma": grid[cert.grid_index], "grid_index": cert.grid_index,
            "post_sigma_mean": float(s.mean()), "mu_shift": float((mu - w_full).norm()),
            "tt_bound": res.tt_bound, "tt_trivial": bool(res.tt_trivial), "edelman_bound": res.edelman_bound,
            "edelman_trivial": bool(res.edelman_trivial), "n_params": int(w_full.numel()),
            "seconds": time.perf_counter() - t0}


def open_certificates(path, source: str, sm_config, config: CertifyConfig, *, report=None):
    """Open (create or resume) a certificate file: the header records the source results file, the
    sparse-majority configuration and every field of ``config``."""
    from ..results import environment, open_results

    rec = {"source": str(source), "sparse_majority": asdict(sm_config), "certify": asdict(config)}
    return open_results(path, SCHEMA, rec, environment=environment(device="cpu"), report=report)


def read_certificates(path):
    """A certificate file as a :class:`~genbound.experiments.results.ResultsTable`."""
    from ..results import read_results

    return read_results(path, SCHEMA)


def config_fields() -> list[str]:
    """The names of :class:`CertifyConfig`'s fields."""
    return [f.name for f in fields(CertifyConfig)]
