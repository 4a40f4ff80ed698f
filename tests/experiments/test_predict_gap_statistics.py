"""Part V's redesigned statistics and axes (issue 27): the fast ranking index against the published
definitions, the seed view and its bootstrap, the hyperparameter-only baselines, the nulls, Holm, and the
new axes (label noise, initialisation scale, mini-batches) of the family."""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from genbound.errors import GenboundError
from genbound.experiments import predict_gap as pg
from genbound.experiments import ranking as rk
from genbound.experiments.fullbatch import AdamProtocol, minibatch_weights
from genbound.experiments.predict_gap import baselines as bl
from genbound.experiments.predict_gap import nulls
from genbound.experiments.predict_gap import statistics as st


def _family(n_seeds=6, seed=0, missing=0.1):
    """A synthetic family table: two tasks, three axes, gaps that depend on the axes plus noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("x", "y"):
        for L, w, q, n, s in itertools.product(
            (1, 2), (12, 32), (0.0, 0.1), (30, 120), range(n_seeds)
        ):
            g = 0.05 * L - 0.001 * w + 0.5 * q - 0.0005 * n + 0.03 * rng.standard_normal()
            rows.append(
                {
                    "task": task,
                    "depth": L,
                    "width": w,
                    "lr": 0.01,
                    "batch": 0,
                    "weight_decay": 0.0,
                    "init_scale": 1.0,
                    "label_noise": q,
                    "input_flip": 0.0,
                    "n_train": n,
                    "seed": s,
                    "fitted": bool(rng.random() > missing),
                    "gap": round(g, 3),
                    "test_se": 0.01,
                    "mu": g + 0.05 * rng.standard_normal(),
                    "n_params": float(w * w * L),
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_index_equals_the_published_definitions(seed):
    fit = pg.fitted_models(_family(seed=seed)).reset_index(drop=True)
    axes = pg.axes_of(fit)
    index = nulls.RankingIndex(fit, axes=axes)
    rng = np.random.default_rng(seed)
    for mu in (
        fit["mu"].to_numpy(),
        rng.standard_normal(len(fit)),
        np.round(rng.standard_normal(len(fit)), 1),
    ):
        d = fit.assign(m=mu)
        got = index.statistics(mu)
        ps = rk.psi(d, "m", axes=axes)
        se = rk.sign_error(d, "m", axes=axes)["all"]
        want = {
            "tau": rk.tau(d, "m"),
            "psi": ps["psi"],
            "psi_wo": ps["psi_without"],
            "psi_seed": rk.psi_seed(d, "m", axes=axes)["psi_seed"],
            "cmi": rk.cmi(d, "m", axes=axes)["cmi"],
            "se_mean": se["mean"],
            "se_p90": se["p90"],
            "se_max": se["max"],
        }
        for k, v in want.items():
            assert got[k] == pytest.approx(v, abs=1e-12), k


def test_ranking_index_mutant_is_caught():
    """A wrong index (psi_seed grouped without the task) must differ from the definition."""
    fit = pg.fitted_models(_family()).reset_index(drop=True)
    axes = pg.axes_of(fit)
    wrong = nulls.RankingIndex._pairs_in_groups(axes, fit, fit["gap"].to_numpy(float))
    mu = fit["mu"].to_numpy()
    assert nulls.RankingIndex._group_mean(mu, wrong) != pytest.approx(
        rk.psi_seed(fit.assign(m=mu), "m", axes=axes)["psi_seed"], abs=1e-6
    )


def test_psi_seed_by_hand_and_zero_for_setting_constants():
    df = pd.DataFrame(
        {
            "task": ["t"] * 6,
            "seed": [0, 1, 2, 0, 1, 2],
            "a": [1, 1, 1, 2, 2, 2],
            "gap": [0.1, 0.2, 0.3, 0.3, 0.2, 0.1],
            "mu": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
        }
    )
    assert rk.psi_seed(df, "mu", axes=["a"]) == {"psi_seed": 0.0, "n_settings": 2}  # +1 and -1
    assert rk.psi_seed(df.assign(mu=df["a"] * 3.0), "mu", axes=["a"])["psi_seed"] == 0.0
    assert rk.psi_seed(df.iloc[:3], "mu", axes=["a"])["psi_seed"] == 1.0


def test_psi_seed_bootstrap_equals_the_cluster_bootstrap():
    fit = pg.fitted_models(_family()).reset_index(drop=True)
    axes = pg.axes_of(fit)
    fast = pg.psi_bootstrap(fit, ["mu"], axes=axes, n_boot=15, seed=3)["mu"]["psi_seed"]
    rng = np.random.default_rng(3)
    reps = [rk._resample_seeds(fit, rng) for _ in range(15)]
    assert np.allclose(
        fast, [rk.psi_seed(r, "mu", axes=axes)["psi_seed"] for r in reps], atol=1e-12
    )


def test_holm_and_p_values():
    r = rk.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert [r[k]["p_holm"] for k in "abcd"] == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert [r[k]["reject"] for k in "abcd"] == [True, False, False, False]
    assert rk.holm({"a": 0.6, "b": 0.7})["a"]["p_holm"] == 1.0  # capped at 1
    with pytest.raises(Exception, match="p-value"):
        rk.holm({"a": 1.5})
    assert st.bootstrap_p(np.full(999, 0.1)) == 0.002
    assert st.bootstrap_p(np.array([-0.1, 0.2, 0.3, 0.4])) == 0.8
    assert st.null_p(0.9, np.array([0.1, 0.2, 0.3])) == 0.25
    assert st.null_p(0.05, np.array([0.1, 0.2, 0.3]), lower_is_better=True) == 0.25


def test_crossfitted_baselines_never_see_their_own_gap():
    df = _family(missing=0.0)
    base = bl.hp_baselines(df)
    assert {
        "inv_sqrt_m",
        "n_params_sqrtm",
        "hp_depth",
        "hp_width",
        "hp_label_noise",
        "hp_n_train",
        "hp_oracle",
    } == set(base.columns)
    # changing the gaps of one half of the seed indices leaves that half's predictions unchanged
    lower, upper = bl._halves(df["seed"])
    moved = df.assign(gap=np.where(df["seed"].isin(lower), df["gap"] + 1.0, df["gap"]))
    b2 = bl.hp_baselines(moved)
    low = df["seed"].isin(lower).to_numpy()
    assert np.allclose(b2.loc[low, "hp_oracle"], base.loc[low, "hp_oracle"])
    assert not np.allclose(b2.loc[~low, "hp_oracle"], base.loc[~low, "hp_oracle"])
    # within a setting and a half, a baseline is one number
    for _, g in df.assign(h=low, v=base["hp_oracle"]).groupby(["task", *pg.AXES, "h"]):
        assert g["v"].nunique() == 1
    # the oracle of a noiseless linear gap predicts it exactly
    exact = df.assign(gap=0.1 * df["depth"] + 0.3 * df["label_noise"])
    assert np.allclose(bl.hp_baselines(exact)["hp_oracle"], exact["gap"], atol=1e-9)


def test_nulls_are_centred_and_real_signal_beats_them():
    fit = pg.fitted_models(_family(n_seeds=8)).reset_index(drop=True)
    axes = pg.axes_of(fit)
    null = nulls.null_statistics(fit, axes=axes, n_null=60, seed=1)
    assert abs(null["tau"].mean()) < 0.05 and abs(null["psi_seed"].mean()) < 0.08
    pct = nulls.null_percentiles(null)
    good = nulls.RankingIndex(fit, axes=axes).statistics(fit["mu"].to_numpy())
    assert nulls.beyond_null(good["psi"], "psi", pct) and nulls.beyond_null(
        good["se_mean"], "se_mean", pct
    )
    assert not nulls.beyond_null(pct["psi"] - 1e-9, "psi", pct)


def test_measure_table_forms_baselines_and_nulls():
    df = _family()
    df["mu_sqrtm"] = df["mu"] / np.sqrt(df["n_train"])
    tab, ex = pg.measure_table(df, ["mu", "mu_sqrtm", "n_params"], n_boot=20, n_null=20)
    assert math.isnan(tab.loc["mu", "psi"]) and math.isfinite(tab.loc["mu", "psi_wo"])  # m-free
    assert math.isfinite(tab.loc["mu_sqrtm", "psi"])
    assert tab.loc["hp_oracle", "psi_seed"] == 0.0 and tab.loc["n_params", "psi_seed"] == 0.0
    best = tab.loc["mu", "best_psi_wo"]
    assert best in ex["baselines"]
    assert tab.loc["mu", "d_psi_wo"] == pytest.approx(
        tab.loc["mu", "psi_wo"] - tab.loc[best, "psi_wo"]
    )
    assert {"beyond_psi_seed", "beyond_cmi", "beyond_se_max"} <= set(tab.columns)


def test_balanced_models_keep_seeds_fitted_everywhere():
    df = _family()
    bal = pg.balanced_models(df)
    for task, g in bal.groupby("task"):
        full = df[df["task"] == task]
        for s in g["seed"].unique():
            assert full[full["seed"] == s]["fitted"].all()
    assert len(bal) < len(pg.fitted_models(df))


def test_label_noise_is_nested_and_spares_the_test_set():
    a = pg.make_task_data("digits", width=12, n_train=100, seed=1, n_max=400, label_noise=0.0)
    b = pg.make_task_data("digits", width=12, n_train=100, seed=1, n_max=400, label_noise=0.1)
    c = pg.make_task_data("digits", width=12, n_train=400, seed=1, n_max=400, label_noise=0.1)
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_test, b.y_test)
    flipped = b.y_train != a.y_train
    assert 0 < int(flipped.sum()) < 30 and torch.equal(c.y_train[:100], b.y_train)
    assert bool((b.y_train[flipped] != a.y_train[flipped]).all())
    with pytest.raises(Exception, match="label_noise"):
        pg.corrupt_labels(a.y_train, 10, 1.0, seed=0)


def test_init_scale_scales_every_parameter():
    a = pg.build_model(12, 2, depth=2, seed=5)
    b = pg.build_model(12, 2, depth=2, seed=5, init_scale=2.0)
    assert all(torch.equal(2 * p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_minibatch_weights_draw_per_model_streams():
    g = [torch.Generator().manual_seed(s) for s in (1, 2)]
    W = minibatch_weights(g, torch.tensor([0, 1]), 10, 4)
    assert W.sum(1).tolist() == [4.0, 4.0]
    g2 = [torch.Generator().manual_seed(s) for s in (1, 2)]
    assert torch.equal(
        minibatch_weights(g2, torch.tensor([1]), 10, 4)[0],  # model 1 alone
        minibatch_weights([torch.Generator().manual_seed(2)] * 2, torch.tensor([1]), 10, 4)[0],
    )
    assert AdamProtocol(batch_size=0).validated().batch_size == 0
    with pytest.raises(Exception, match="batch_size"):
        AdamProtocol(batch_size=-1).validated()


def test_every_single_axis_baseline_reaches_the_table():
    """Issue 39: the hp_<axis> baselines were read from two rows of the table and silently dropped.
    Every baseline of the table's varying axes must be a row; a table without one is an error."""
    df = _family()
    tab, ex = pg.measure_table(df, ["mu"], n_boot=10, n_null=5)
    expected = {"inv_sqrt_m", "n_params_sqrtm", "hp_oracle"} | {
        f"hp_{a}" for a in ("depth", "width", "label_noise", "n_train")
    }
    assert set(ex["baselines"]) == expected and expected <= set(tab.index)
    assert pg.baseline_names(df.head(2)) != pg.baseline_names(df)  # why a sample cannot name them
    fit = pg.family_frame(df).drop(columns=["hp_width"])
    with pytest.raises(GenboundError, match="hp_width"):
        pg.measure_table(df, ["mu"], n_boot=10, n_null=5, fit=fit)


def test_radius_fixed_capacities_return_the_saved_columns_at_the_rows_own_radius():
    saved = pg.read_family()
    cfg = pg.family_config()
    rows = saved[~saved["diverged"]].sample(6, random_state=3)
    for i, r in rows.iterrows():
        _, bx = pg.task_shape(r["task"], int(r["width"]))
        got = pg.radius_fixed_capacities(rows.loc[[i]], cfg, B_X={r["task"]: bx}).iloc[0]
        assert got["tt_cap_bx"] == r["tt_cap"]
        assert got["edelman_cap_bx"] == r["edelman_cap"] or (
            math.isnan(got["edelman_cap_bx"]) and math.isnan(r["edelman_cap"])
        )
    fixed = pg.radius_fixed_capacities(rows, cfg)
    wide = rows["width"] > saved["width"].min()
    assert (fixed.loc[wide, "tt_cap_bx"] < rows.loc[wide, "tt_cap"]).all()


def test_merged_norm_products_read_the_bounds_maps():
    saved = pg.read_family().head(4)
    got = pg.merged_norm_products(saved)
    for i, r in saved.iterrows():
        n = json.loads(r["norms_json"])["norms"]
        logs = [
            np.log(np.asarray(n[g]["op"], float)).sum() for g in ("QK", "V", "C", "w") if g in n
        ]
        assert got.loc[i, "log_spec_prod_merged"] == pytest.approx(sum(logs), rel=1e-12)


def test_seed_permutation_null_keeps_a_seed_effect_that_the_random_null_ignores():
    df = _family(n_seeds=8, missing=0.0)
    # a measure that is a per-seed constant plus noise, and gaps that share the seed's effect
    eff = {s: np.random.default_rng(s).standard_normal() for s in range(8)}
    df["gap"] = df["gap"] + 0.05 * df["seed"].map(eff)
    df["seedmu"] = df["seed"].map(eff)
    fit = pg.fitted_models(df)
    axes = pg.axes_of(fit)
    perm = pg.seed_permutation_null(fit, "seedmu", axes=axes, n_perm=40, seed=0)
    real = rk.psi_seed(fit, "seedmu", axes=axes)["psi_seed"]
    assert real > np.quantile(perm, 0.95)
    # the identity relabelling is one draw of the null: psi_seed is among its values' range
    assert perm.min() <= real and np.std(perm) > 0.05


def test_paired_differences_compare_on_the_same_models():
    df = _family()
    df["d1"] = np.where(df["depth"] == 1, df["mu"], np.nan)
    fit = pg.fitted_models(df)
    out = pg.paired_differences(fit, [("d1", "mu")], n_boot=20).set_index("stat")
    d1 = fit[fit["depth"] == 1]
    assert out.loc["psi_wo", "n_models"] == len(d1)
    assert out.loc["psi_wo", "value_b"] == pytest.approx(
        rk.psi(d1, "mu", axes=pg.axes_of(d1))["psi_without"]
    )
    assert out.loc["psi_wo", "diff"] == pytest.approx(0.0)


def test_verdict_table_and_heatmap_show_every_label():
    import matplotlib

    matplotlib.use("Agg")
    from genbound import plotting

    df = _family()
    df["mu_sqrtm"] = df["mu"] / np.sqrt(df["n_train"])
    fit = pg.family_frame(df)
    tab, ex = pg.measure_table(df, ["mu", "mu_sqrtm"], n_boot=10, n_null=5, fit=fit)
    tests = pd.DataFrame(
        [
            {
                "question": "oracle",
                "test": "mu - hp_oracle (psi_wo)",
                "estimate": -0.1,
                "lo": -0.2,
                "hi": 0.0,
                "p": 0.04,
                "p_holm": 0.08,
                "reject": False,
            },
            {
                "question": "seed",
                "test": "mu psi_seed vs null",
                "estimate": 0.2,
                "lo": 0.1,
                "hi": 0.3,
                "p": 0.001,
                "p_holm": 0.002,
                "reject": True,
            },
        ]
    )
    other = tests.assign(test=["mu_sqrtm - hp_oracle (psi_wo)", "mu psi_seed vs null"])
    vt = pg.verdict_table({"a": tests, "b": other})
    assert list(vt.columns) == ["a", "b"] and len(vt) == 2  # oracle rows keyed by statistic
    assert vt.iloc[1, 0].endswith("(r)") and vt.iloc[0, 1].startswith("mu_sqrtm - hp_oracle")
    axes = [a for a in pg.axes_of(fit) if a != "n_train"]
    fig = pg.plot_psi_heatmap({"x": tab, "y": tab}, ["mu", "hp_oracle"], axes)
    assert plotting.tick_label_problems(fig) == [] and len(fig.axes) == 2


def _planted(n_seeds=6, seed=0):
    """A family where raw Psi misleads: at depth 1 the gap is a function of the hyperparameters (the
    oracle ranks those models perfectly), at depth 2 it is mostly seed noise. ``d1only`` (defined at
    depth 1 only) has the larger raw Psi with m fixed but trails the oracle on its models; ``broad``
    (defined everywhere) has a smaller raw Psi but beats the oracle on every model."""
    rng = np.random.default_rng(seed)
    df = _family(n_seeds=n_seeds, seed=seed, missing=0.0)
    hp = 0.5 * df["width"] / 32 + 0.5 * df["label_noise"] - 0.001 * df["n_train"]
    noise = rng.standard_normal(len(df))
    df["gap"] = hp + np.where(df["depth"] == 2, 0.3 * noise, 0.0)
    df["broad"] = df["gap"] + 0.2 * rng.standard_normal(len(df))
    d1 = df["gap"] + 0.1 * rng.standard_normal(len(df))
    df["d1only"] = np.where(df["depth"] == 1, d1, np.nan)
    for c in (
        *pg.VERDICT_BOUNDS,
        *pg.PLAIN_NORMS,
        "spectral_adaptive",
        "spectral_p0",
        "spectral_pmax",
    ):
        df[c] = df["gap"] + rng.standard_normal(len(df))
    df["edelman_cap"] = np.where(df["depth"] == 1, df["edelman_cap"], np.nan)
    df["fit_step"] = rng.integers(10, 100, len(df)).astype(float)
    return df


PLANTED = [
    "broad",
    "d1only",
    *pg.VERDICT_BOUNDS,
    *pg.PLAIN_NORMS,
    "spectral_adaptive",
    "spectral_p0",
    "spectral_pmax",
]


def test_best_measure_and_baseline_column_compare_matched_models():
    """The mismatched-set bug of issue 47: the best measure was picked by raw Psi across different
    model sets, and a depth-1-only row was compared with the oracle scored on every model."""
    df = _planted()
    fit = pg.family_frame(df)
    tab, ex = pg.measure_table(df, PLANTED, n_boot=40, n_null=10, fit=fit)
    # the trap: raw Psi with m fixed favours the depth-1-only measure
    assert tab.loc["d1only", "psi_wo"] > tab.loc["broad", "psi_wo"]
    d1 = fit[fit["depth"] == 1]
    ax = pg.axes_of(d1)
    base_d1 = {b: rk.psi(d1, b, axes=ax)["psi_without"] for b in ex["baselines"]}
    best = max(base_d1, key=base_d1.get)
    assert tab.loc["d1only", "best_psi_wo"] == best
    assert tab.loc["d1only", "d_psi_wo"] == pytest.approx(
        tab.loc["d1only", "psi_wo"] - base_d1[best]
    )
    assert tab.loc["d1only", "d_psi_wo"] < 0 < tab.loc["broad", "d_psi_wo"]
    tests = pg.verdict_tests(fit, tab, ex, n_boot=40, measures=PLANTED)
    oracle = tests[tests["question"] == "oracle"].set_index("test")
    row = oracle.loc[[t for t in oracle.index if t.endswith("(psi_wo)")][0]]
    assert row.name.startswith("broad - ")
    assert row["estimate"] == pytest.approx(tab.loc["broad", "d_psi_wo"]) and row["estimate"] > 0


def test_matched_difference_uses_the_intersection_and_one_set_of_draws():
    df = _planted()
    fit = pg.family_frame(df)
    md = pg.matched_difference(fit, "d1only", "broad", "psi_seed", n_boot=30)
    d1 = fit[fit["depth"] == 1]
    assert md["n_models"] == len(d1)
    ax = pg.axes_of(d1)
    want = (
        rk.psi_seed(d1, "d1only", axes=ax)["psi_seed"]
        - rk.psi_seed(d1, "broad", axes=ax)["psi_seed"]
    )
    assert md["estimate"] == pytest.approx(want)
    same = pg.matched_difference(fit, "broad", "broad", "psi_wo", n_boot=30)
    assert same["estimate"] == 0 and np.all(same["reps"] == 0)


def test_seed_view_reports_both_nulls_and_steps_to_fit():
    df = _planted()
    fit = pg.family_frame(df)
    tab, ex = pg.measure_table(df, PLANTED, n_boot=30, n_null=10, fit=fit)
    sv = pg.seed_view(fit, tab, ex, measures=PLANTED, n_perm=20, n_boot=30)
    assert pg.STEPS in sv.index and "broad" in sv.index
    assert sv.loc["broad", "psi_seed"] == pytest.approx(tab.loc["broad", "psi_seed"])
    md = pg.matched_difference(fit, "broad", pg.STEPS, "psi_seed", n_boot=30)
    assert sv.loc["broad", "d_steps"] == pytest.approx(md["estimate"])
    assert 0 < sv.loc["broad", "p_perm"] <= 1 and 0 < sv.loc["broad", "p_iid"] <= 1
    iid = pg.verdict_tests(
        fit, tab, ex, n_boot=30, measures=PLANTED, seeds_view=sv, seed_null="iid"
    )
    perm = pg.verdict_tests(fit, tab, ex, n_boot=30, measures=PLANTED, seeds_view=sv)
    s_i, s_p = (t[t["question"] == "seed"].set_index("test")["p"] for t in (iid, perm))
    assert s_p["broad psi_seed vs null"] == pytest.approx(sv.loc["broad", "p_perm"])
    assert s_i["broad psi_seed vs null"] == pytest.approx(sv.loc["broad", "p_iid"])
    with pytest.raises(ValueError):
        pg.verdict_tests(fit, tab, ex, measures=PLANTED, seeds_view=sv, seed_null="other")


def test_answers_table_words_and_p_values():
    assert pg.fmt_p(4.97e-11) == "< 1e-6" and pg.fmt_p(0.0) == "< 1e-6"
    assert pg.word(0.1, 0.05, 0.2, True) == "beat" and pg.word(-0.1, -0.2, -0.05, True) == "below"
    assert pg.word(-0.05, -0.1, -0.01, False).startswith("tie (borderline")
    df = _planted()
    fit = pg.family_frame(df)
    parts = {}
    for lab, f in (("x", fit[fit["task"] == "x"]), ("pooled", fit)):
        tab, ex = pg.measure_table(df, PLANTED, n_boot=20, n_null=10, fit=f)
        sv = pg.seed_view(f, tab, ex, measures=PLANTED, n_perm=10, n_boot=20)
        kw = dict(n_boot=20, measures=PLANTED, seeds_view=sv)
        pairs = [(b, n) for b in pg.VERDICT_BOUNDS for n in pg.PLAIN_NORMS]
        parts[lab] = {
            "tab": tab,
            "seeds": sv,
            "tests": pg.verdict_tests(f, tab, ex, **kw),
            "tests_iid": pg.verdict_tests(f, tab, ex, seed_null="iid", **kw),
            "radius": pg.norm_comparisons(f, pairs, n_boot=20),
            "axes": pg.norm_comparisons(f, pairs, stats=("psi_wo",), per_axis=True, n_boot=20),
        }
    worst = pg.worst_case_over_tasks({"x": parts["x"]["tab"]}, ["broad", "d1only"])
    assert worst[1] == pytest.approx(max(parts["x"]["tab"].loc[["broad", "d1only"], "d_psi_wo"]))
    out = pg.answers_table(parts, worst=worst[:2], p0_share=0.5)
    assert list(out.index) == list(pg.ANSWER_QUESTIONS) and {"x", "pooled", "reading"} <= set(
        out.columns
    )
    text = " ".join(out.to_numpy().ravel())
    assert "e-1" not in text and "p 0 " not in text and "p 0;" not in text
    assert out.loc[pg.ANSWER_QUESTIONS[0], "pooled"].startswith(("beat", "tie", "below"))
