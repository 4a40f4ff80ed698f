"""PAC-Bayes-kl certificates of the book's trained transformers (Part VI, :ref:`ch-certificates`).

For one row of a sparse-majority results file (``seq_len``, ``seed`` and the recorded configuration):

1. **Data** exactly as the row's run drew it (task, training, validation and test sets).
2. **The full model**: the row retrained from its configuration on the whole training set
   (:func:`~genbound.experiments.sparse_majority.run_seq_len`, the verify path), with its norm bounds.
3. **The prior's model**: the same protocol and initialisation on the first ``prior_fraction`` of the
   training set (fixed in advance); the rest, the **bound set** of ``n`` examples, is never seen by it.
4. **The posterior** ``Q = N(mu, diag s^2)``, ``mu`` started at the prior's weights (``post_init``;
   or at the full model's), ``s`` at
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
from . import gibbs
from .gibbs import flat, unflat
from ..runtime.results import Schema
from ..sparse_majority import cls_logits
from ..sparse_majority import initial_model, regenerate_data, run_seq_len, stack_parameters
from ..sparse_majority.training import tensors_for, train_adam
from ..runtime.results import environment, open_results
from ..runtime.results import read_results

__all__ = [
    "CertifyConfig",
    "SCHEMA",
    "certify_sparse_majority",
    "open_certificates",
    "read_certificates",
    "flat",
    "unflat",
    "recompute_bounds",
    "RECOMPUTED",
    "certify_config_of",
]


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
    sigma_init: float = 0.01  # the largest initial posterior scale tried (a grid point)
    post_scale_count: int = 7  # scales tried: sigma_init / 2^k, k < post_scale_count
    post_scale_tol: float = 0.01  # allowed rise of the noisy prior's error on its own examples
    post_init: str = "prior"  # the posterior's mean starts at the prior's weights, or "full"
    post_steps: int = 300
    post_lr: float = 1e-3
    # the prior scale inside the training objective: "grid", held at the posterior's initial scale (a
    # point of the certificate's grid); "free", learned beside the posterior (files written before this
    # field existed), which lets it drift off the grid, so that the certificate pays for the drift
    post_prior_scale: str = "grid"
    p_min: float = 1e-4
    n_draws: int = 1000
    test_draws: int = 20
    seed: int = 0
    n_train: int = 0  # 0: the row's own training-set size; else a larger-m override

    def validated(self) -> "CertifyConfig":
        if not 0.0 < self.prior_fraction < 1.0:
            raise ParameterError(f"prior_fraction must lie in (0, 1), got {self.prior_fraction}")
        for name in ("delta", "delta_mc"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ParameterError(f"{name} must lie in (0, 1), got {v}")
        if self.post_init not in ("prior", "full"):
            raise ParameterError(f"post_init must be 'prior' or 'full', got {self.post_init!r}")
        if self.post_prior_scale not in ("grid", "free"):
            raise ParameterError(
                f"post_prior_scale must be 'grid' or 'free', got {self.post_prior_scale!r}"
            )
        if self.delta + self.delta_mc >= 1.0:
            raise ParameterError("delta + delta_mc must be < 1")
        for name in ("grid_count", "post_steps", "n_draws", "test_draws", "post_scale_count"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int)
                or v < (0 if name == "post_steps" else 1)
            ):
                raise ParameterError(f"{name} must be a positive integer, got {v!r}")
        for name in ("grid_center", "sigma_init", "post_lr", "p_min", "post_scale_tol"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ParameterError(f"{name} must be a positive number, got {v!r}")
        if not self.grid_ratio > 1.0:
            raise ParameterError(f"grid_ratio must be > 1, got {self.grid_ratio}")
        if isinstance(self.n_train, bool) or not isinstance(self.n_train, int) or self.n_train < 0:
            raise ParameterError(
                f"n_train must be 0 (the row's) or a positive integer, got {self.n_train!r}"
            )
        return self

    def post_scales(self) -> tuple[float, ...]:
        """The initial posterior scales tried, largest first: ``sigma_init / 2^k``
        (:func:`~genbound.experiments.certify.gibbs.posterior_scale`)."""
        return tuple(self.sigma_init / 2**k for k in range(self.post_scale_count))

    def grid(self) -> tuple[float, ...]:
        """The prior standard deviations (:func:`genbound.bounds.pac_bayes.prior_scale_grid`)."""
        return pb.prior_scale_grid(self.grid_center, self.grid_ratio, self.grid_count)


_COLUMNS = (
    ("seq_len", int),
    ("seed", int),
    ("n_train", int),
    ("n_prior", int),
    ("n_bound", int),
    ("train_acc", float),
    ("test_acc", float),
    ("saved_test_acc", float),
    ("fitted", bool),
    ("prior_fitted", bool),
    ("prior_bound_errors", int),
    ("prior_holdout_bound", float),
    ("test_errors", int),
    ("n_test", int),
    ("test_set_bound", float),
    ("q_bound_error_mc", float),
    ("q_emp_upper", float),
    ("q_train_error", float),
    ("q_test_error", float),
    ("certificate", float),
    ("kl", float),
    ("kl_per_n", float),
    ("grid_sigma", float),
    ("grid_index", int),
    ("post_sigma_mean", float),
    ("mu_shift", float),
    ("prior_shift", float),
    ("post_sigma_init", float),
    ("tt_bound", float),
    ("tt_trivial", bool),
    ("edelman_bound", float),
    ("edelman_trivial", bool),
    ("n_params", int),
    ("seconds", float),
)


def _schema():

    return Schema("certify", _COLUMNS, key=("seq_len", "seed", "n_train"))


#: The certificate file's columns, keyed by ``(seq_len, seed, n_train)``.
SCHEMA = _schema()


def _sm_logits(bits: dict, E, pe, scale, chunk: int = 2000):
    """The task half of a sparse-majority certificate: logits of ``K`` stacked models on a split's bit
    sequences (float64 embeddings ``E``, positions ``pe``), in chunks of ``chunk`` sequences."""

    def logits(params, split, K):
        b = bits[split]
        return torch.cat(
            [
                cls_logits(
                    params,
                    b[st : st + chunk].unsqueeze(0).expand(K, -1, -1),
                    E.expand(K, -1, -1),
                    pe,
                    scale,
                )
                for st in range(0, b.shape[0], chunk)
            ],
            1,
        )

    return logits


def certify_sparse_majority(
    seq_len: int,
    seed: int,
    sm_config,
    config: CertifyConfig | None = None,
    *,
    saved_test_acc: float = math.nan,
) -> dict:
    """Certify the row ``(seq_len, seed)`` trained with the sparse-majority configuration ``sm_config``
    (its ``n_train`` replaced by ``config.n_train`` when that is positive); returns one row of
    :data:`SCHEMA`. See the module docstring for the steps."""

    cc = (config or CertifyConfig()).validated()
    cfg = sm_config
    if cc.n_train:
        from dataclasses import replace

        cfg = replace(cfg, n_train=cc.n_train)
    cfg = cfg.validated()
    if cfg.protocol != "adam":
        raise ParameterError(
            f"certify supports the sparse-majority 'adam' protocol, got {cfg.protocol!r}"
        )
    t0 = time.perf_counter()
    m = cfg.n_train
    m0 = int(round(cc.prior_fraction * m))
    if not 1 <= m0 < m:
        raise ParameterError(
            f"prior_fraction {cc.prior_fraction} leaves no prior or no bound set at m = {m}"
        )
    # 1. the data, as the row's run drew them
    task, data = regenerate_data(seq_len, seed, cfg)
    # 2. the full model (the verify path)
    (res,), (net,) = run_seq_len(
        seq_len, [seed], cfg, device="cpu", progress=False, return_models=True
    )
    P_full = {k: v.detach() for k, v in stack_parameters([net], dtype=torch.float64).items()}
    # 3. the prior's model: same protocol and initialisation, first m0 training examples
    init = initial_model(seq_len, seed, cfg)
    params = stack_parameters([init], dtype=cfg.dtype)
    sub = {
        "train": tuple(x[:m0].unsqueeze(0) for x in data["train"]),
        "val": tuple(x.unsqueeze(0) for x in data["val"]),
        "test": tuple(x.unsqueeze(0) for x in data["test"]),
    }
    E, pe = tensors_for([task], sub, "cpu")
    E, pe = E.to(params["W_Q"].dtype), pe.to(params["W_Q"].dtype)
    scale = 1.0 / math.sqrt(cfg.d_head)
    stop, _, fitted0, *_ = train_adam(params, [task], sub, cfg, E, pe, scale, False, "prior")
    P_prior = {k: v.detach().double() for k, v in stop.items()}
    (bits_tr, y_tr), (bits_te, y_te) = data["train"], data["test"]
    logits = _sm_logits(
        {"train": bits_tr, "prior": bits_tr[:m0], "bound": bits_tr[m0:], "test": bits_te},
        E.double(),
        pe.double(),
        scale,
    )
    splits = gibbs.Splits(y_tr, y_tr[m0:], y_te, y_tr[:m0])
    row = _deterministic_columns(logits, splits, P_prior, P_full, cc)
    row.update(
        _posterior_columns(
            logits, splits, P_prior, P_full, cc, seed=int(cc.seed) * 7919 + seq_len * 31 + seed
        )
    )
    row.update(
        {
            "seq_len": seq_len,
            "seed": seed,
            "n_train": m,
            "n_prior": m0,
            "n_bound": m - m0,
            "train_acc": res.train_acc,
            "test_acc": res.test_acc,
            "saved_test_acc": float(saved_test_acc),
            "fitted": bool(res.fitted),
            "prior_fitted": bool(fitted0[0]),
            "tt_bound": res.tt_bound,
            "tt_trivial": bool(res.tt_trivial),
            "edelman_bound": res.edelman_bound,
            "edelman_trivial": bool(res.edelman_trivial),
            "seconds": time.perf_counter() - t0,
        }
    )
    return row


def _deterministic_columns(logits, splits, P_prior, P_full, cc) -> dict:
    """The deterministic models' bounds: the prior's hold-out bound on the bound set and the full
    model's binomial test-set bound, both at ``delta + delta_mc`` (the certificate's total confidence)."""
    with torch.no_grad():
        n, n_test = int(splits.y_bound.shape[0]), int(splits.y_test.shape[0])
        prior_err = int(
            round(float(gibbs.error_rates(logits, P_prior, "bound", splits.y_bound)[0]) * n)
        )
        test_err = int(
            round(float(gibbs.error_rates(logits, P_full, "test", splits.y_test)[0]) * n_test)
        )
    conf = cc.delta + cc.delta_mc
    return {
        "prior_bound_errors": prior_err,
        "prior_holdout_bound": pb.binomial_test_bound(prior_err, n, conf).value,
        "test_errors": test_err,
        "n_test": n_test,
        "test_set_bound": pb.binomial_test_bound(test_err, n_test, conf).value,
    }


def _posterior_columns(logits, splits, P_prior, P_full, cc, *, seed: int) -> dict:
    """Optimise the posterior (started at the prior's or the full model's weights, ``cc.post_init``)
    and certify it from fresh draws (a second generator, never used in the optimisation)."""
    w_prior, w_full = gibbs.flat(P_prior), gibbs.flat(P_full)
    start = w_prior if cc.post_init == "prior" else w_full
    n = int(splits.y_bound.shape[0])
    s0 = gibbs.posterior_scale(
        logits, splits.y_prior, P_full, w_prior, cc, torch.Generator().manual_seed(2 * 10**9 + seed)
    )
    mu, s, _ = gibbs.optimise_posterior(
        logits,
        splits.y_train,
        P_full,
        w_prior,
        start,
        cc,
        n,
        torch.Generator().manual_seed(seed),
        sigma0=s0,
    )
    out = gibbs.certificate_columns(
        logits, splits, P_full, w_prior, mu, s, cc, torch.Generator().manual_seed(10**9 + seed)
    )
    out.update(
        {
            "mu_shift": float((mu - w_full).norm()),
            "prior_shift": float((w_full - w_prior).norm()),
            "post_sigma_init": s0,
            "n_params": int(w_full.numel()),
        }
    )
    return out


def open_certificates(path, source: str, sm_config, config: CertifyConfig, *, report=None):
    """Open (create or resume) a certificate file: the header records the source results file, the
    sparse-majority configuration and every field of ``config``."""

    rec = {"source": str(source), "sparse_majority": asdict(sm_config), "certify": asdict(config)}
    return open_results(path, SCHEMA, rec, environment=environment(device="cpu"), report=report)


def read_certificates(path):
    """A certificate file as a :class:`~genbound.experiments.runtime.results.ResultsTable`."""

    return read_results(path, SCHEMA)


def config_fields() -> list[str]:
    """The names of :class:`CertifyConfig`'s fields."""
    return [f.name for f in fields(CertifyConfig)]


#: The columns of a certificate row that :func:`recompute_bounds` recomputes from the row's counts.
RECOMPUTED = (
    "certificate",
    "q_emp_upper",
    "kl_per_n",
    "grid_sigma",
    "test_set_bound",
    "prior_holdout_bound",
)


def recompute_bounds(row: dict, config: CertifyConfig) -> dict:
    """The bounds of a certificate row (:data:`RECOMPUTED`) recomputed from what the row stores (the Monte
    Carlo mean, the chosen grid point's KL and index, the error counts) and the file's ``config``:
    the certificate at the chosen grid point at ``delta / K``
    (:func:`~genbound.bounds.pac_bayes.pac_bayes_kl_certificate`), the Monte Carlo upper estimate, and
    both binomial bounds at ``delta + delta_mc``. Equal, float for float, to the stored columns of a row
    the experiment wrote (a test checks every saved row)."""
    cc = config.validated()
    n = int(row["n_bound"])
    conf = cc.delta + cc.delta_mc
    dj = pb.grid_delta(cc.delta, cc.grid_count)
    return {
        "certificate": pb.pac_bayes_kl_certificate(
            row["q_bound_error_mc"], cc.n_draws, row["kl"], n, dj, cc.delta_mc
        ),
        "q_emp_upper": pb.monte_carlo_upper(row["q_bound_error_mc"], cc.n_draws, cc.delta_mc),
        "kl_per_n": row["kl"] / n,
        "grid_sigma": cc.grid()[int(row["grid_index"])],
        "test_set_bound": pb.binomial_test_bound(
            int(row["test_errors"]), int(row["n_test"]), conf
        ).value,
        "prior_holdout_bound": pb.binomial_test_bound(
            int(row["prior_bound_errors"]), n, conf
        ).value,
    }


def certify_config_of(table) -> CertifyConfig:
    """The :class:`CertifyConfig` recorded in the header of a certificate file (either kind). A header
    written before ``post_prior_scale`` existed records a run whose prior scale was learned: ``"free"``."""
    return CertifyConfig(
        **{"post_prior_scale": "free", **table.header["config"]["certify"]}
    ).validated()
