"""The rank statistics of Part V against brute-force evaluations of their written definitions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from genbound.errors import ParameterError
from genbound.experiments import ranking as rk


def _family(seed=0, n_seeds=3, tie_measure=False):
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("x", "y"):
        for a, b, s in itertools.product((1, 2, 3), (10, 20), range(n_seeds)):
            g = 0.05 * a + 0.01 * b * rng.random() + 0.02 * rng.standard_normal()
            rows.append(
                {
                    "task": task,
                    "a": a,
                    "b": b,
                    "seed": s,
                    "gap": round(g, 3),
                    "mu": 1.0 if tie_measure else a + rng.standard_normal(),
                    "test_err": 0.2 + 0.1 * rng.random(),
                }
            )
    df = pd.DataFrame(rows)
    df["se"] = rk.gap_standard_error(df["test_err"], 1000)
    return df


def _sgn(x):
    return int(x > 0) - int(x < 0)


def _tau_loops(mu, g):
    n = len(mu)
    return sum(
        _sgn(mu[i] - mu[j]) * _sgn(g[i] - g[j]) for i in range(n) for j in range(n) if i != j
    ) / (n * (n - 1))


def test_tau_is_tau_a_and_equals_scipy_without_ties():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(30), rng.standard_normal(30)
    assert rk.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    xt = np.round(x, 0)
    assert rk.kendall_tau(xt, y) == pytest.approx(_tau_loops(list(xt), list(y)), abs=1e-12)
    assert abs(rk.kendall_tau(xt, y)) < abs(kendalltau(xt, y, variant="b").statistic) + 1e-12


def test_tau_per_task_and_mean():
    df = _family()
    per = rk.tau_per_task(df, "mu")
    for t, g in df.groupby("task"):
        assert per[t] == pytest.approx(_tau_loops(list(g["mu"]), list(g["gap"])), abs=1e-12)
    assert rk.tau(df, "mu") == pytest.approx(np.mean(list(per.values())))


def test_psi_counts_tied_groups_as_zero():
    df = _family(tie_measure=True)
    out = rk.psi(df, "mu", axes=["a", "b"])
    assert out["psi"] == 0.0 and out["n_groups"] == {"a": 2 * 2 * 3, "b": 2 * 3 * 3}


def test_psi_brute_force():
    df = _family(seed=3)
    out = rk.psi(df, "mu", axes=["a", "b"])
    for ax, other in (("a", "b"), ("b", "a")):
        taus = []
        for task, s, o in itertools.product(("x", "y"), range(3), sorted(df[other].unique())):
            g = df[(df.task == task) & (df.seed == s) & (df[other] == o)]
            taus.append(_tau_loops(list(g["mu"]), list(g["gap"])))
        assert out["per_axis"][ax] == pytest.approx(np.mean(taus), abs=1e-12)
    assert out["psi"] == pytest.approx(np.mean(list(out["per_axis"].values())))
    # leaving an axis out averages the other axes' psi_a, each still holding the left-out axis fixed
    assert rk.psi(df, "mu", axes=["a", "b"], leave_out="b")["psi_without"] == pytest.approx(
        out["per_axis"]["a"]
    )


def _cmi_loops(df, S):
    """I(V_mu; V_g | U_S) / H(V_g | U_S) by counting, independently of the module."""
    from collections import Counter

    rows = []
    for task, g in df.groupby("task"):
        r = g.to_dict("records")
        for i, j in itertools.permutations(range(len(r)), 2):
            dg = _sgn(r[i]["gap"] - r[j]["gap"])
            if dg == 0:
                continue
            u = (task, *[(r[i][a], r[j][a]) for a in S])
            rows.append((u, _sgn(r[i]["mu"] - r[j]["mu"]), dg))
    n = len(rows)
    cu = Counter(u for u, _, _ in rows)
    cum = Counter((u, m) for u, m, _ in rows)
    cug = Counter((u, g) for u, _, g in rows)
    cumg = Counter(rows)
    mi = sum(
        c / n * math.log(c * cu[u] / (cum[(u, m)] * cug[(u, g)])) for (u, m, g), c in cumg.items()
    )
    h = -sum(c / n * math.log(c / cu[u]) for (u, g), c in cug.items())
    return mi / h


def test_cmi_matches_counting_and_its_extremes():
    df = _family(seed=5)
    out = rk.cmi(df, "mu", axes=["a", "b"])
    for S, r in out["per_set"].items():
        assert r == pytest.approx(_cmi_loops(df, S), abs=1e-12)
    assert out["cmi"] == pytest.approx(min(out["per_set"].values()))
    assert rk.cmi(df.assign(mu=df["gap"]), "mu", axes=["a", "b"])["cmi"] == pytest.approx(1.0)
    assert rk.cmi(df.assign(mu=1.0), "mu", axes=["a", "b"])["cmi"] == pytest.approx(0.0, abs=1e-12)


def test_sign_error_brute_force_and_ties():
    df = _family(seed=7)
    out = rk.sign_error(df, "mu", axes=["a", "b"], se="se")
    errs, big_errs = [], []
    for task, g in df.groupby("task"):
        sett = sorted({(r.a, r.b) for r in g.itertuples()})
        for p, q in itertools.combinations(sett, 2):
            if (p[0] != q[0]) + (p[1] != q[1]) != 1:
                continue
            w, wb = [], []
            for s in range(3):
                x = g[(g.a == p[0]) & (g.b == p[1]) & (g.seed == s)].iloc[0]
                y = g[(g.a == q[0]) & (g.b == q[1]) & (g.seed == s)].iloc[0]
                dm, dg = _sgn(x.mu - y.mu), _sgn(x.gap - y.gap)
                e = 0.5 if dm == 0 or dg == 0 else float(dm != dg)
                w.append(e)
                if abs(x.gap - y.gap) > 2 * math.hypot(x.se, y.se):
                    wb.append(e)
            errs.append(np.mean(w))
            if wb:
                big_errs.append(np.mean(wb))
    assert out["all"]["mean"] == pytest.approx(np.mean(errs))
    assert out["all"]["p90"] == pytest.approx(np.percentile(errs, 90))
    assert out["all"]["max"] == pytest.approx(max(errs))
    assert out["beyond_noise"]["n_environments"] == len(big_errs)
    tied = rk.sign_error(df.assign(mu=0.0), "mu", axes=["a", "b"])
    assert tied["all"]["mean"] == 0.5


def test_cluster_bootstrap_resamples_seeds():
    df = _family(seed=9, n_seeds=6)
    out = rk.cluster_bootstrap(df, lambda d: rk.psi(d, "mu", axes=["a", "b"])["psi"], n_boot=50)
    assert out["lo"] <= out["estimate"] <= out["hi"]
    rep = rk._resample_seeds(df, np.random.default_rng(0))
    assert len(rep) == len(df) and rep.groupby("seed").size().eq(len(df) // 6).all()
    with pytest.raises(ParameterError, match="n_boot"):
        rk.cluster_bootstrap(df, lambda d: 0.0, n_boot=0)


def test_simpson_flags_a_reversal_in_every_level():
    # within each level of b the measure orders the gap; pooled, the levels' offsets reverse it
    rows = []
    for b, off in ((0, 0.0), (1, 1.0), (2, 2.0)):
        for k in range(4):
            rows.append(
                {"task": "x", "seed": k, "a": k, "b": b, "mu": k - 10 * b, "gap": off + 0.1 * k}
            )
    df = pd.DataFrame(rows)
    out = rk.simpson_check(df, "mu", by=["b", "a"])
    assert out["pooled"] < 0 and out["by"]["b"]["reversed"] and not out["by"]["a"]["reversed"]


def test_bad_input():
    with pytest.raises(ParameterError, match="no column"):
        rk.psi(_family(), "nope", axes=["a"])
    with pytest.raises(ParameterError, match="1-d"):
        rk.kendall_tau([1, 2], [1, 2, 3])
