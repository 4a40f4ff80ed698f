"""Issue 29: the analyses of the saved sparse-majority sweep, recomputed from the CSV with independent
code (numpy loops, explicit formulas), and the one-bit baseline recomputed from regenerated data."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from genbound.errors import ParameterError
from genbound.experiments import sparse_majority as sm
from genbound import positional as en


@pytest.fixture(scope="module")
def fitted():
    df = sm.read_csv()
    return df[df["fitted"]].reset_index(drop=True)


def test_geometric_means_of_the_saved_capacity(fitted):
    got = sm.geometric_means(fitted, "tt_capacity")
    for T, g in fitted.groupby("seq_len"):
        logs = [math.log10(v) for v in g["tt_capacity"]]
        n = len(logs)
        mean = sum(logs) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (n - 1))
        half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        assert got.loc[T, "mean"] == pytest.approx(10**mean, rel=1e-12)
        assert got.loc[T, "lo"] == pytest.approx(10 ** (mean - half), rel=1e-12)
        assert got.loc[T, "hi"] == pytest.approx(10 ** (mean + half), rel=1e-12)
        assert got.loc[T, "n"] == n
    with pytest.raises(ParameterError):
        sm.geometric_means(fitted.assign(c=-1.0), "c")


def test_lack_of_fit_of_log_capacity_by_dummy_regression(fitted):
    y = np.log10(fitted["tt_capacity"].to_numpy())
    x = np.log2(fitted["seq_len"].to_numpy(dtype=float))
    levels = sorted(fitted["seq_len"].unique())
    line = np.column_stack([np.ones_like(x), x])
    dummies = np.column_stack([(fitted["seq_len"] == t).to_numpy(float) for t in levels])
    rss = [
        float(((y - A @ np.linalg.lstsq(A, y, rcond=None)[0]) ** 2).sum()) for A in (line, dummies)
    ]
    k, n = len(levels), len(y)
    F = ((rss[0] - rss[1]) / (k - 2)) / (rss[1] / (n - k))
    got = sm.lack_of_fit(fitted.assign(lc=y), "lc")
    assert got["F"] == pytest.approx(F, rel=1e-9) and (got["df1"], got["df2"]) == (k - 2, n - k)


def test_long_length_capacity_slope_is_least_squares(fitted):
    long = fitted[fitted["seq_len"] >= 64]
    x = np.log2(long["seq_len"].to_numpy(float))
    y = np.log10(long["tt_capacity"].to_numpy())
    slope = np.polyfit(x, y, 1)[0]
    got = sm.gap_slope(long.assign(lc=y), column="lc")
    assert (
        got["slope"] == pytest.approx(slope, rel=1e-10) and got["lo"] <= got["slope"] <= got["hi"]
    )


def _ranks(v):
    v = list(v)
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


@pytest.mark.parametrize("other", ["fit_step", "l11_dist_from_init", "acc_gap"])
def test_rank_correlation_against_hand_ranks(fitted, other):
    ra, rb = _ranks(fitted["tt_capacity"]), _ranks(fitted[other])
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((a - ma) * (b - mb) for a, b in zip(ra, rb))
    rho = cov / math.sqrt(sum((a - ma) ** 2 for a in ra) * sum((b - mb) ** 2 for b in rb))
    got = sm.rank_correlation(fitted, "tt_capacity", other, n_boot=200)
    assert got["rho"] == pytest.approx(rho, abs=1e-12) and got["lo"] <= got["rho"] <= got["hi"]


def test_capacity_floor_rank_k_brute_force(fitted):
    for k in (1, 2, 3):
        floor = sm.capacity_floor(fitted, rank=k)
        for i in fitted.index:
            gaps = sorted(
                (
                    fitted.at[j, "acc_gap"]
                    for j in fitted.index
                    if fitted.at[j, "tt_capacity"] <= fitted.at[i, "tt_capacity"]
                ),
                reverse=True,
            )
            want = gaps[k - 1] if len(gaps) >= k else float("nan")
            assert floor[i] == want or (math.isnan(want) and math.isnan(floor[i]))
    with pytest.raises(ParameterError):
        sm.capacity_floor(fitted, rank=0)


def test_regenerated_data_reproduce_the_saved_test_max_and_the_train_choice():
    saved = sm.read_csv().set_index(["seq_len", "seed"])
    rows = pd.DataFrame({"seq_len": [16, 256, 1024], "seed": [0, 4, 7]})
    got = sm.one_bit_baselines(rows)
    for r, g in zip(rows.itertuples(), got.itertuples()):
        assert (
            g.one_bit_test_max == saved.loc[(r.seq_len, r.seed), "one_bit_acc"]
        )  # the data are the run's
        task, data = sm.regenerate_data(r.seq_len, r.seed)
        (btr, ytr), (bte, yte) = data["train"], data["test"]
        pos = task.positions.tolist()
        # independent: count agreements bit by bit in numpy
        btr, ytr, bte, yte = (t.numpy().astype(int) for t in (btr, ytr, bte, yte))
        counts = [int((btr[:, p] == ytr).sum()) for p in pos]
        k = counts.index(max(counts))
        assert g.train_bit == k
        assert g.one_bit_train == pytest.approx(float((bte[:, pos[k]] == yte).mean()), abs=1e-15)


def test_one_bit_expectation_by_enumeration():
    for s in (1, 3, 5, 9):
        hits = sum(
            bits[0] == int(2 * sum(bits) >= s) for bits in itertools.product((0, 1), repeat=s)
        )
        assert sm.one_bit_expectation(s) == pytest.approx(hits / 2**s, rel=1e-15)


def test_test_set_maximum_is_biased_upward():
    """The package's simulation against an independent one (torch, other seeds): they agree, and the
    maximum over the relevant bits exceeds one fixed bit's accuracy by many standard errors."""
    got = sm.expected_test_max_one_bit(n_test=2000, reps=400, seed=1)
    g = torch.Generator().manual_seed(5)
    best = []
    for _ in range(400):
        b = torch.randint(0, 2, (2000, 9), generator=g)
        y = (b.sum(1) >= 5).long()
        best.append(float((b == y[:, None]).double().mean(0).max()))
    ref = float(np.mean(best))
    se = math.hypot(got["se"], float(np.std(best, ddof=1)) / math.sqrt(len(best)))
    assert abs(got["mean"] - ref) < 4 * se
    assert got["mean"] - sm.one_bit_expectation(9) > 10 * got["se"]


def test_encoding_supremum_bounds_every_position_and_the_chain_form():
    sup = sm.encoding_supremum(64)
    x = torch.arange(200_000)
    norms = torch.linalg.vector_norm(sm.encoding_rows(x, 64), dim=-1)
    assert float(norms.max()) < sup < math.sqrt(64)
    assert sup == pytest.approx(math.sqrt(32 + 8 * sm.chain_sum_sup()), rel=1e-15)
    xr = np.random.default_rng(0).uniform(0, 1e5, 500)
    direct = (sm.encoding_rows(torch.tensor(xr), 64) ** 2).sum(-1).numpy()
    assert np.allclose(sm.encoding_norm_sq_by_chains(xr, 64), direct, rtol=1e-11, atol=0)
    with pytest.raises(ParameterError):
        en.encoding_norm_sq_by_chains([0.0], 12)


def test_encoding_supremum_claim_passes_and_kills_its_mutants():
    from genbound import claims

    assert claims.check("prop-sm-encoding-sup").passed
    assert all(m.killed for m in claims.get("prop-sm-encoding-sup").check_mutants())
