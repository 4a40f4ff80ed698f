"""Issue 19: rows anyone can reproduce. Runs are trained alone (a row depends on (T, seed) and the
configuration only), the saved norms recompute every bound column, and ``--verify-saved`` reruns rows."""

import json
import math
from math import comb

import pytest
import torch

from genbound import cli
from genbound.errors import ParameterError
from genbound.experiments import sparse_majority as sm
from genbound.nets import ModelNorms, ReferenceTransformer

TINY = dict(n_train=40, n_val=30, n_test=50, steps=40, warmup=5, eval_every=7, m_star=True)
BOUND_COLUMNS = (
    "tt_bound",
    "tt_trivial",
    "tt_capacity",
    "tt_m_star",
    "edelman_bound",
    "edelman_trivial",
    "edelman_capacity",
    "edelman_m_star",
)


def _same(a, b):
    return a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    # module-scoped fixtures run before conftest's one-thread fixture: set it here (rows depend on it)
    path = tmp_path_factory.mktemp("sweep") / "tiny.csv"
    cfg = sm.SparseMajorityConfig(**TINY)
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        w = sm.open_sweep(path, cfg)
        sm.run_sweep([11, 13], [0, 1], cfg, device="cpu", progress=False, on_stack=w.append)
    finally:
        torch.set_num_threads(old)
    return path


# ------------------------------------------------------------------------------- saved norms
def test_model_norms_round_trip_exactly_and_reject_garbage():
    net = ReferenceTransformer(6, n_layers=2, seed=3, bias=True, dense=True)
    saved = ModelNorms.from_json(ModelNorms.of(net).to_json())
    a, b = net.weight_norms(), saved.weight_norms()
    assert a.keys() == b.keys() and a["raw"] == b["raw"]
    for g in ("QK", "V", "C", "w"):
        for k in a[g]:
            assert torch.equal(a[g][k].double(), b[g][k])
    for bad in ("", "{}", "[1, 2]", '{"d": 1}'):
        with pytest.raises(ParameterError):
            ModelNorms.from_json(bad)
    with pytest.raises(Exception, match="ReferenceTransformer"):
        ModelNorms.of(torch.nn.Linear(2, 2))


def test_bounds_from_saved_norms_equal_bounds_from_the_model():
    from genbound.bounds.edelman import edelman_bound_from_model
    from genbound.bounds.trauger_tewari import trauger_tewari_bound_from_model

    for seed, scale in ((0, 1.0), (1, 0.01), (2, 30.0)):
        net = ReferenceTransformer(5, seed=seed, bias=True, dense=True)
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(scale)
        saved = ModelNorms.from_json(ModelNorms.of(net).to_json())
        for fn, kw in ((trauger_tewari_bound_from_model, {}), (edelman_bound_from_model, {"T": 9})):
            a = fn(net, m=500, delta=0.05, B_X=2.0, radius_grid=True, **kw)
            b = fn(saved, m=500, delta=0.05, B_X=2.0, radius_grid=True, **kw)
            assert (a.value, a.capacity, a.trivial) == (b.value, b.capacity, b.trivial)


def test_one_bit_baseline_brute_force_and_expectation():
    task = sm.make_task(15, seed=2)
    bits, y = task.sample(4000, torch.Generator().manual_seed(1))
    brute = max(
        float(sum(int(b[p]) == int(t) for b, t in zip(bits, y))) / len(y)
        for p in task.positions.tolist()
    )
    assert task.one_bit_accuracy(bits, y) == brute
    expect = 0.5 + comb(task.s - 1, (task.s - 1) // 2) / 2**task.s  # 0.637 for s = 9
    assert (
        abs(brute - expect) < 4 * math.sqrt(0.25 / len(y)) + 0.02
    )  # max of 9 draws: small upward bias


# --------------------------------------------------------------------------- reproducible rows
def test_a_row_does_not_depend_on_the_other_runs_of_the_sweep(tiny_sweep):
    cfg = sm.SparseMajorityConfig(**TINY)
    alone = {
        (r.seq_len, r.seed): r.to_dict()
        for r in sm.run_sweep([13], [1], cfg, device="cpu", progress=False)
    }
    saved = {(r["seq_len"], r["seed"]): r for r in sm.read_sweep(tiny_sweep).rows}
    row = saved[(13, 1)]
    same = [_same(row[c], alone[(13, 1)][c]) for c in sm.SCHEMA.names if c != "seconds"]
    assert all(same) and len(same) == len(sm.SCHEMA.names) - 1


def test_verify_rows_reproduces_every_column_but_seconds(tiny_sweep):
    table = sm.read_sweep(tiny_sweep)
    (chk,) = sm.verify_rows(table, [(11, 1)])
    assert chk.exact, {k: v for k, v in chk.differences.items() if k != "norms_json"}
    assert "norms_json" in chk.compared and "seconds" not in chk.compared
    assert (chk.rerun["seq_len"], chk.rerun["seed"]) == (11, 1) and list(chk.rerun) == list(
        table.columns
    )


def test_verify_rows_detects_a_changed_row(tiny_sweep, tmp_path):
    lines = tiny_sweep.read_text().splitlines(keepends=True)
    head = [l for l in lines if l.startswith("#")]
    table = sm.read_sweep(tiny_sweep)
    cols = table.columns
    rows = [l for l in lines if not l.startswith("#")]
    i = cols.index("test_acc")
    import csv, io

    body = list(csv.reader(io.StringIO("".join(rows[1:]))))
    k = next(j for j, r in enumerate(body) if (r[0], r[1]) == ("11", "0"))
    body[k][i] = repr(float(body[k][i]) + 1e-12)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(body)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(head) + rows[0] + buf.getvalue())
    (chk,) = sm.verify_rows(sm.read_sweep(bad), [(11, 0)])
    assert not chk.exact and set(chk.differences) == {"test_acc"}


def test_cli_verify_saved_rows(tiny_sweep, capsys):
    rc = cli.main(
        [
            "experiment",
            "sparse-majority",
            "--saved-csv",
            str(tiny_sweep),
            "--verify-saved-rows",
            "13:0",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert (
        rc == 0
        and out["n_exact"] == 1
        and out["rows"][0]["exact"]
        and out["rows"][0]["seq_len"] == 13
    )


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--verify-saved", "0"], "in [1, 4]"),
        (["--verify-saved", "5"], "in [1, 4]"),
        (["--verify-saved-rows", "64:3"], "no saved row for T=64 seed=3"),
        (["--verify-saved-rows", "11:0,13"], "'13' is not T:seed"),
        (["--verify-saved-rows", "11:x"], "is not T:seed"),
        (["--verify-saved-rows", ""], "T:seed pairs"),
        (["--verify-saved-rows", "11:0,11:0"], "twice"),
        (["--verify-saved", "1", "--verify-saved-rows", "11:0"], "not both"),
    ],
)
def test_cli_verify_bad_input_trains_nothing(argv, match, tiny_sweep, capsys, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("trained")

    monkeypatch.setattr(sm.runs, "run_seq_len", boom)
    rc = cli.main(["experiment", "sparse-majority", "--saved-csv", str(tiny_sweep), *argv])
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert (
        rc == 2 and len(err) == 1 and err[0].startswith("genbound: error:") and match in err[0]
    ), out.err


def test_pick_rows_is_seeded_and_distinct(tiny_sweep):
    table = sm.read_sweep(tiny_sweep)
    a, b = sm.pick_rows(table, 3, seed=4), sm.pick_rows(table, 3, seed=4)
    assert a == b and len(set(a)) == 3 and set(a) <= table.keys


# ------------------------------------------------------------------------------ the saved sweep
def _saved():
    table = sm.read_sweep()
    if "norms_json" not in table.columns:
        pytest.skip("the saved sweep predates saved norms (issue 19 regenerates it)")
    return table


@pytest.mark.slow  # over 15 s here (make test-fast leaves it out)
def test_every_bound_column_of_the_saved_sweep_recomputes_from_its_saved_norms():
    table = _saved()
    cfg = sm.config_of(table)
    for row in table.rows:
        got = sm.row_bound_fields(row, cfg)
        assert {c: got[c] for c in BOUND_COLUMNS} == {c: row[c] for c in BOUND_COLUMNS}, (
            row["seq_len"],
            row["seed"],
        )


def test_saved_sweep_trivial_flags_and_capacities_see_the_norms():
    from genbound.experiments.sparse_majority.bounds import bound_results

    table = _saved()
    cfg = sm.config_of(table)
    rows = table.rows
    for row in rows:  # trivial exactly where the value is the cap (the Rademacher term at 1/2)
        tt, ed = bound_results(
            sm.saved_norms(row),
            m=row["n_train"],
            seq_len=row["seq_len"],
            delta=cfg.delta,
            B_X=row["input_radius"],
            margin=cfg.margin,
        )
        assert row["tt_trivial"] == (tt.rademacher == 0.5) and row["edelman_trivial"] == (
            ed.rademacher == 0.5
        )
    by_norms = {}
    for row in rows:
        by_norms.setdefault(row["norms_json"], set()).add(
            (row["tt_capacity"], row["edelman_capacity"])
        )
    assert len(by_norms) == len(rows)
    caps = [c for s in by_norms.values() for c in s]
    assert len({c[0] for c in caps}) == len(rows) and len({c[1] for c in caps}) == len(rows)


def test_saved_sweep_has_eight_seeds_per_length_trained_alone_on_one_thread():
    table = _saved()
    seeds = {}
    for row in table.rows:
        seeds.setdefault(row["seq_len"], set()).add(row["seed"])
    assert set(seeds) == {16, 32, 64, 128, 256, 512, 1024} and all(
        len(s) >= 8 for s in seeds.values()
    )
    assert table.environment["threads"] == 1 and table.environment["commit"]


# ------------------------------------------------------------------------------------ summaries
def _frame(seed=0, k=5, per=4):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    T = np.repeat(2 ** np.arange(4, 4 + k), per)
    return pd.DataFrame(
        {
            "seq_len": T,
            "seed": np.tile(np.arange(per), k),
            "n_train": 300,
            "acc_gap": rng.normal(0.1 * np.log2(T) ** 0.5, 0.05),
            "tt_capacity": 10 ** rng.uniform(3, 6, len(T)),
        }
    )


def test_per_length_means_are_t_intervals():
    from scipy import stats

    df = _frame()
    out = sm.per_length_means(df)
    for T, g in df.groupby("seq_len"):
        lo, hi = stats.t.interval(
            0.95, len(g) - 1, loc=g["acc_gap"].mean(), scale=stats.sem(g["acc_gap"])
        )
        assert out.loc[T, "lo"] == pytest.approx(lo, abs=1e-12) and out.loc[
            T, "hi"
        ] == pytest.approx(hi, abs=1e-12)


def test_lack_of_fit_equals_the_nested_regression_f_test():
    import numpy as np
    from scipy import stats

    for seed in range(3):
        df = _frame(seed)
        x, y = np.log2(df["seq_len"].to_numpy(float)), df["acc_gap"].to_numpy(float)
        line = np.column_stack([np.ones_like(x), x])
        dummies = (df["seq_len"].to_numpy()[:, None] == np.unique(df["seq_len"])[None, :]).astype(
            float
        )
        rss = [
            float(((y - A @ np.linalg.lstsq(A, y, rcond=None)[0]) ** 2).sum())
            for A in (line, dummies)
        ]
        k, n = dummies.shape[1], len(y)
        F = ((rss[0] - rss[1]) / (k - 2)) / (rss[1] / (n - k))
        got = sm.lack_of_fit(df)
        assert got["F"] == pytest.approx(F, rel=1e-9) and (got["df1"], got["df2"]) == (k - 2, n - k)
        assert got["p"] == pytest.approx(stats.f.sf(F, k - 2, n - k), rel=1e-9)
    with pytest.raises(ParameterError):
        sm.lack_of_fit(_frame(k=2))


def test_capacity_floor_and_matched_pairs_brute_force():
    df = _frame(1)
    floor = sm.capacity_floor(df)
    for i in df.index:
        assert floor[i] == max(
            df.at[j, "acc_gap"]
            for j in df.index
            if df.at[j, "tt_capacity"] <= df.at[i, "tt_capacity"]
        )
    pairs = sm.matched_pairs(df, within_log10=0.2)
    import numpy as np

    lc = np.log10(df["tt_capacity"].to_numpy())
    brute = sum(
        1
        for i in range(len(df))
        for j in range(i + 1, len(df))
        if df["seq_len"].iat[i] != df["seq_len"].iat[j] and abs(lc[i] - lc[j]) <= 0.2
    )
    assert (
        len(pairs) == brute
        and (pairs["gap_diff"] >= 0).all()
        and pairs["gap_diff"].is_monotonic_decreasing
    )
    assert (pairs["T_a"] != pairs["T_b"]).all()


def test_regime_label_thresholds():
    assert sm.regime_label(0.97, 0.637, 10_000) == "rule"
    assert sm.regime_label(0.70, 0.637, 10_000) == "between"
    assert (
        sm.regime_label(0.630, 0.637, 10_000) == "between"
    )  # within 2 SE (0.0136) of the baseline
    assert sm.regime_label(0.620, 0.637, 10_000) == "below one-bit"
    assert sm.regime_label(0.509, 0.637, 10_000) == "chance"  # 0.5 + 2 SE = 0.51
    assert sm.regime_label(0.512, 0.637, 10_000) == "below one-bit"
    assert sm.regime_label(0.40, 0.637, 10_000) == "chance"


def test_radius_prior_nats_add_up_to_the_confidence_the_bound_pays():
    from genbound.experiments.sparse_majority.bounds import bound_results

    for seed, scale in ((0, 1.0), (1, 1e-3), (2, 50.0)):
        net = sm.initial_model(16, seed)
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(scale)
        tt, _ = bound_results(net, m=300, seq_len=16, delta=0.05, B_X=9.0)
        nats = sm.radius_prior_nats(net)
        assert sum(nats) == pytest.approx(math.log(0.05 / tt.delta), rel=1e-12)
        assert all(n >= math.log(3.0) - 1e-12 for n in nats)  # pi(0) = 1/3 is the largest share


def test_merge_sweeps_of_parallel_processes(tmp_path, tiny_sweep):
    from genbound.errors import ResultsFileError

    cfg = sm.SparseMajorityConfig(**TINY)
    rows = sm.read_sweep(tiny_sweep).rows
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    sm.open_sweep(a, cfg).append([r for r in rows if r["seq_len"] == 13])
    sm.open_sweep(b, cfg).append([r for r in rows if r["seq_len"] == 11])
    out = sm.merge_sweeps([a, b], tmp_path / "m.csv")
    merged = sm.read_sweep(out)
    assert [(r["seq_len"], r["seed"]) for r in merged.rows] == [(11, 0), (11, 1), (13, 0), (13, 1)]
    assert merged.rows == sorted(rows, key=lambda r: (r["seq_len"], r["seed"])) or all(
        all(_same(x[c], y[c]) for c in merged.columns)
        for x, y in zip(merged.rows, sorted(rows, key=lambda r: (r["seq_len"], r["seed"])))
    )
    with pytest.raises(ResultsFileError, match="exists"):
        sm.merge_sweeps([a, b], out)
    with pytest.raises(ResultsFileError, match="in two files"):
        sm.merge_sweeps([a, a], tmp_path / "m2.csv")
    other = tmp_path / "c.csv"
    sm.open_sweep(other, sm.SparseMajorityConfig(**{**TINY, "steps": 41})).append([])
    with pytest.raises(ResultsFileError, match="header"):
        sm.merge_sweeps([a, other], tmp_path / "m3.csv")
    assert not (tmp_path / "m2.csv").exists() and not (tmp_path / "m3.csv").exists()


def test_recompute_bound_columns_changes_only_those_columns(tmp_path, tiny_sweep):
    from genbound.errors import ResultsFileError

    out = sm.recompute_bound_columns(
        tiny_sweep, tmp_path / "r.csv", columns=["tt_capacity"], notes="why"
    )
    a, b = sm.read_sweep(tiny_sweep), sm.read_sweep(out)
    assert b.header["notes"] == "why" and b.config == a.config and b.environment == a.environment
    for x, y in zip(a.rows, b.rows):
        assert all(
            _same(x[c], y[c]) for c in a.columns
        )  # the tiny sweep already has own-norm capacities
    with pytest.raises(ResultsFileError, match="does not compute"):
        sm.recompute_bound_columns(tiny_sweep, tmp_path / "s.csv", columns=["test_acc"], notes="no")
    with pytest.raises(ResultsFileError, match="exists"):
        sm.recompute_bound_columns(tiny_sweep, out, columns=["tt_capacity"], notes="again")


# -------------------------------------------------------------------------- another machine kind
def test_other_kind_sweep_is_the_same_experiment_on_another_cpu():
    """The Intel sweep kept beside the saved one: same configuration and rows, recorded elsewhere (it does
    not record the CPU kind, so it can never be taken for this file's kind)."""
    saved, other = _saved(), sm.read_sweep(sm.OTHER_KIND_SWEEP)
    assert other.config == saved.config and other.keys == saved.keys
    assert saved.environment.get("cpu_model") and saved.environment.get(
        "cpu_model"
    ) != other.environment.get("cpu_model")
    assert not sm.reproduction_case(other).same_kind


def test_compare_draws_counts_and_differences():
    a = sm.read_csv(sm.OTHER_KIND_SWEEP)
    same = sm.compare_draws(a, a)
    assert same == {
        "rows": len(a),
        "same_fit_step": len(a),
        "same_fitted": len(a),
        "test_acc_mean_abs": 0.0,
        "test_acc_max_abs": 0.0,
        "mean_gap_max_abs": 0.0,
    }
    # one row moved: the counts and differences see exactly that row
    b = a.copy()
    i = b.index[0]
    b.loc[i, "fit_step"] += 1
    b.loc[i, "test_acc"] -= 0.01
    b.loc[i, "acc_gap"] += 0.08
    d = sm.compare_draws(a, b)
    n_T = int((a["seq_len"] == a.loc[i, "seq_len"]).sum())
    assert d["same_fit_step"] == len(a) - 1 and d["same_fitted"] == len(a)
    assert d["test_acc_max_abs"] == pytest.approx(0.01) and d["test_acc_mean_abs"] == pytest.approx(
        0.01 / len(a)
    )
    assert d["mean_gap_max_abs"] == pytest.approx(0.08 / n_T)
    with pytest.raises(ParameterError, match="lacks the columns"):
        sm.compare_draws(a.drop(columns=["fit_step"]), a)
    with pytest.raises(ParameterError, match="share no"):
        sm.compare_draws(a, a.assign(seed=a["seed"] + 100))
