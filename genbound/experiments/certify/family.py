"""PAC-Bayes-kl certificates of the Part V family (:ref:`ch-certificates`).

For one setting of a family results file and a list of seed indices:

1. **The full models**: the setting retrained for those seed indices in one stack with the family's
   protocol (:func:`genbound.experiments.predict_gap.train_stack`: the family's data, labels,
   initialisation and stopping rule).
2. **The priors' models**: the same protocol and initialisations on the first ``prior_fraction`` of
   each training set (training sets of the family are nested, so this is the setting at the smaller
   ``n_train``, with the same test set); the rest, the **bound set**, is never seen by them.
3. **The posterior and the certificate** as for the sparse-majority sweep
   (:mod:`genbound.experiments.certify.gibbs`).

Only settings without label noise are certified: with noisy training labels the bound set's labels are
noisy, so the certificate would bound the error against the noisy labels, not the clean test error it is
set beside.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict

import torch

from ...errors import ParameterError
from . import CertifyConfig, _deterministic_columns, _posterior_columns, gibbs
from ..runtime.results import Schema
from ..predict_gap.family import build_model
from ..predict_gap.training import train_stack
from ..runtime.results import environment, open_results
from ..runtime.results import read_results

__all__ = [
    "FAMILY_SCHEMA",
    "certify_family_setting",
    "open_family_certificates",
    "read_family_certificates",
]

_KEY = (
    "task",
    "depth",
    "width",
    "lr",
    "batch",
    "weight_decay",
    "init_scale",
    "label_noise",
    "n_train",
    "seed",
)

_COLUMNS = (
    ("task", str),
    ("depth", int),
    ("width", int),
    ("lr", float),
    ("batch", int),
    ("weight_decay", float),
    ("init_scale", float),
    ("label_noise", float),
    ("n_train", int),
    ("seed", int),
    ("n_prior", int),
    ("n_bound", int),
    ("n_classes", int),
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
    ("n_params", int),
    ("seconds", float),
)


def _schema():

    return Schema("certify-family", _COLUMNS, key=_KEY)


#: The family certificate file's columns, keyed by the family's own key (setting and seed index).
FAMILY_SCHEMA = _schema()


def _family_logits(arch, X: dict):
    """The task half of a family certificate: logits of ``K`` stacked models on a split's inputs."""

    def logits(params, split, K):
        x = X[split]
        return arch.forward_stacked(params, x.unsqueeze(0).expand(K, *x.shape))

    return logits


def certify_family_setting(
    setting: dict,
    seeds,
    family_config,
    config: CertifyConfig | None = None,
    *,
    saved_test_acc: dict | None = None,
) -> list[dict]:
    """Certify the models of ``setting`` (a task and one value per axis of ``family_config``) at the seed
    indices ``seeds``; one row of :data:`FAMILY_SCHEMA` per seed index. ``saved_test_acc``: the family
    file's test accuracy per seed index, reported beside the retrained model's."""

    cc = (config or CertifyConfig()).validated()
    if float(setting.get("label_noise", 0.0)) != 0.0:
        raise ParameterError(
            "certify: settings with label noise are not certified (the bound set's labels "
            "are noisy, so the certificate would not bound the clean test error)"
        )
    if float(setting.get("input_flip", 0.0)) != 0.0:
        raise ParameterError(
            "certify: settings with corrupted training inputs are not certified yet (the "
            "certificate file has no input_flip column)"
        )
    seeds = [int(s) for s in seeds]
    m = int(setting["n_train"])
    m0 = int(round(cc.prior_fraction * m))
    if not 1 <= m0 < m:
        raise ParameterError(
            f"prior_fraction {cc.prior_fraction} leaves no prior or no bound set at m = {m}"
        )
    t0 = time.perf_counter()
    datas, out = train_stack(setting, seeds, family_config)
    datas0, out0 = train_stack(dict(setting, n_train=m0), seeds, family_config)
    arch = build_model(int(setting["width"]), datas[0].n_classes, depth=int(setting["depth"]))
    rows = []
    for k, s in enumerate(seeds):
        d = datas[k]
        if not bool(datas0[k].X_train.equal(d.X_train[:m0])):
            raise ParameterError(
                "certify: the prior's training set is not the first part of the full one"
            )
        P_full = {nm: v[k : k + 1].detach().double() for nm, v in out.stop.items()}
        P_prior = {nm: v[k : k + 1].detach().double() for nm, v in out0.stop.items()}
        logits = _family_logits(
            arch,
            {
                "train": d.X_train,
                "prior": d.X_train[:m0],
                "bound": d.X_train[m0:],
                "test": d.X_test,
            },
        )
        splits = gibbs.Splits(d.y_train, d.y_train[m0:], d.y_test, d.y_train[:m0])
        with torch.no_grad():
            tr_acc = 1.0 - float(gibbs.error_rates(logits, P_full, "train", d.y_train)[0])
            te_acc = 1.0 - float(gibbs.error_rates(logits, P_full, "test", d.y_test)[0])
            prior_tr = float(gibbs.error_rates(logits, P_prior, "prior", d.y_train[:m0])[0])
        row = {key: setting[key] for key in _KEY if key != "seed"}
        row.update(_deterministic_columns(logits, splits, P_prior, P_full, cc))
        row.update(
            _posterior_columns(
                logits, splits, P_prior, P_full, cc, seed=int(cc.seed) * 7919 + 104729 * k + s
            )
        )
        row.update(
            {
                "seed": s,
                "n_prior": m0,
                "n_bound": m - m0,
                "n_classes": d.n_classes,
                "train_acc": tr_acc,
                "test_acc": te_acc,
                "saved_test_acc": float((saved_test_acc or {}).get(s, math.nan)),
                "fitted": tr_acc == 1.0 and not bool(out.diverged[k]),
                "prior_fitted": prior_tr == 0.0 and not bool(out0.diverged[k]),
                "seconds": (time.perf_counter() - t0) / len(seeds),
            }
        )
        rows.append(row)
    return rows


def open_family_certificates(
    path, source: str, family_config, config: CertifyConfig, *, report=None
):
    """Open (create or resume) a family certificate file: the header records the source family file, the
    family's configuration and every field of ``config``."""

    rec = {"source": str(source), "family": asdict(family_config), "certify": asdict(config)}
    return open_results(
        path, FAMILY_SCHEMA, rec, environment=environment(device="cpu"), report=report
    )


def read_family_certificates(path):
    """A family certificate file as a :class:`~genbound.experiments.runtime.results.ResultsTable`."""

    return read_results(path, FAMILY_SCHEMA)
