"""The ESD power-law fit (:mod:`genbound.analysis.esd_alpha`): WeightWatcher's ``alpha``, a diagnostic.

The estimator is checked against samples of known Pareto laws (exponent within 3 standard errors, the
start of the tail found where a different body ends), against a brute-force recomputation of the KS
choice of ``xmin``, and on a small synthetic checkpoint, matrix by matrix.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

import genbound
from genbound.analysis.esd import named_spectra
from genbound.analysis.esd_alpha import (
    DEFAULT_MIN_TAIL,
    ESD_ALPHA_FIELDS,
    PowerLawFit,
    check_esd_alpha_path,
    esd_alpha_table,
    power_law_alpha,
    write_esd_alpha,
)
from genbound.errors import GenboundError, InputError, NonFiniteError, ParameterError, ShapeError
from genbound.testing import make_bert_checkpoint


def pareto_eigenvalues(alpha: float, size: int, *, xmin: float = 1.0, seed: int = 0) -> np.ndarray:
    """``size`` draws of the continuous power law ``p(x) ~ x^(-alpha)``, ``x >= xmin`` (inverse CDF)."""
    u = np.random.default_rng(seed).random(size)
    return xmin * (1.0 - u) ** (-1.0 / (alpha - 1.0))


# ---------------------------------------------------------------------------------- known laws
@pytest.mark.parametrize("alpha", [2.5, 4.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_exponent_of_a_pareto_sample_is_recovered(alpha, seed):
    lam = pareto_eigenvalues(alpha, 5000, xmin=1.0, seed=seed)
    fit = power_law_alpha(np.sqrt(lam))
    assert fit.fitted and fit.note == ""
    assert abs(fit.alpha - alpha) <= 3 * fit.stderr
    assert fit.stderr == pytest.approx((fit.alpha - 1) / math.sqrt(fit.n_tail), rel=1e-12)
    assert fit.n_eigenvalues == 5000 and DEFAULT_MIN_TAIL <= fit.n_tail <= 5000
    assert np.min(np.abs(lam - fit.xmin)) <= 1e-14 * fit.xmin  # an observed eigenvalue
    assert 0.0 < fit.ks_distance < 0.05


def test_the_fit_of_the_whole_sample_matches_the_closed_form():
    # with xmin the smallest value the MLE is 1 + n / sum log(x / x_min): checked on a pure sample
    lam = pareto_eigenvalues(3.0, 2000, seed=3)
    fit = power_law_alpha(np.sqrt(lam), min_tail=2000)  # only the whole sample is allowed
    expect = 1 + lam.size / np.sum(np.log(lam / lam.min()))
    assert fit.n_tail == 2000 and fit.xmin == pytest.approx(lam.min(), rel=1e-12)
    assert fit.alpha == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_start_of_the_tail_is_found_above_a_different_body(seed):
    rng = np.random.default_rng(seed)
    body = rng.uniform(0.05, 1.0, 3000)  # not a power law: flat below the tail
    tail = pareto_eigenvalues(3.0, 2000, xmin=1.0, seed=100 + seed)
    lam = np.concatenate([body, tail])
    fit = power_law_alpha(np.sqrt(lam))
    assert 0.9 <= fit.xmin <= 1.35
    assert abs(fit.alpha - 3.0) <= 3 * fit.stderr
    assert 1100 <= fit.n_tail <= 2300
    # the KS choice matters: fitting from the smallest eigenvalue gives a far smaller exponent
    naive = power_law_alpha(np.sqrt(lam), min_tail=lam.size)
    assert naive.alpha < 1.6 and naive.ks_distance > 3 * fit.ks_distance


def test_alpha_does_not_change_when_the_matrix_is_scaled():
    s = np.sqrt(pareto_eigenvalues(2.5, 800, seed=4))
    a, b = power_law_alpha(s), power_law_alpha(7.5 * s)
    assert b.alpha == pytest.approx(a.alpha, rel=1e-9)
    assert b.xmin == pytest.approx(7.5**2 * a.xmin, rel=1e-12)
    assert b.n_tail == a.n_tail and b.ks_distance == pytest.approx(a.ks_distance, abs=1e-12)


def test_order_and_input_type_do_not_matter():
    s = np.sqrt(pareto_eigenvalues(3.5, 300, seed=5))
    ref = power_law_alpha(s)
    shuffled = np.random.default_rng(0).permutation(s)
    assert power_law_alpha(shuffled) == ref
    assert power_law_alpha(list(s)) == ref
    assert power_law_alpha(torch.from_numpy(s)) == ref


# ------------------------------------------------------------------------- the KS choice, brute force
def brute_force(lam, min_tail):
    """Every distinct observed xmin with >= min_tail points above, its MLE and KS distance by counting;
    the smallest D (the smallest xmin on a tie)."""
    lam = sorted(float(v) for v in lam if v > 0)
    best = None
    for xmin in sorted(set(lam)):
        tail = [v for v in lam if v >= xmin]
        n = len(tail)
        total = sum(math.log(v / xmin) for v in tail)
        if n < min_tail or total <= 0:
            continue
        alpha = 1 + n / total
        d = 0.0
        for t in tail:
            f = 1 - (t / xmin) ** (1 - alpha)
            at = sum(v <= t for v in tail) / n  # the empirical CDF at t
            below = sum(v < t for v in tail) / n  # and just below t
            d = max(d, abs(at - f), abs(below - f))
        if best is None or d < best[2]:
            best = (alpha, xmin, d, n)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ks_choice_matches_a_brute_force_recomputation(seed):
    rng = np.random.default_rng(seed)
    lam = np.concatenate([rng.uniform(0.2, 1.0, 15), pareto_eigenvalues(2.8, 30, seed=seed + 10)])
    lam = np.round(lam, 2)  # ties, so that repeated values are exercised
    alpha, xmin, d, n = brute_force(lam, 5)
    fit = power_law_alpha(np.sqrt(lam), min_tail=5)
    assert fit.xmin == pytest.approx(xmin, rel=1e-12)
    assert fit.n_tail == n
    assert fit.alpha == pytest.approx(alpha, rel=1e-10)
    assert fit.ks_distance == pytest.approx(d, abs=1e-12)
    # and every other xmin allowed fits worse or equally
    assert (
        fit.ks_distance
        <= min(
            power_law_alpha(np.sqrt(lam[lam >= v]), min_tail=int((lam >= v).sum())).ks_distance
            for v in np.unique(lam)
            if (lam >= v).sum() >= 5
        )
        + 1e-12
    )


# ------------------------------------------------------------------------------- not fitted
def test_too_few_nonzero_eigenvalues_are_not_fitted_and_say_why():
    s = np.concatenate([np.linspace(1.0, 3.0, DEFAULT_MIN_TAIL - 1), np.zeros(50)])
    fit = power_law_alpha(s)
    assert not fit.fitted
    assert (fit.alpha, fit.xmin, fit.ks_distance, fit.n_tail, fit.stderr) == (None,) * 5
    assert fit.n_eigenvalues == DEFAULT_MIN_TAIL - 1
    assert "fewer than min_tail = 10" in fit.note
    d = fit.to_dict()
    assert d["fitted"] is False and d["alpha"] is None
    json.dumps(d, allow_nan=False)  # no NaN anywhere
    # one more distinct eigenvalue and it is fitted, with the whole sample as its tail
    more = power_law_alpha(np.linspace(1.0, 3.0, DEFAULT_MIN_TAIL))
    assert more.fitted and more.n_tail == DEFAULT_MIN_TAIL and math.isfinite(more.alpha)


def test_equal_eigenvalues_are_not_fitted():
    fit = power_law_alpha(np.ones(40))
    assert not fit.fitted and fit.n_eigenvalues == 40 and "distinct" in fit.note


def test_a_smaller_min_tail_fits_a_short_spectrum():
    s = np.sqrt(pareto_eigenvalues(3.0, 8, seed=2))
    assert not power_law_alpha(s).fitted
    assert power_law_alpha(s, min_tail=4).fitted


# ---------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("svals", "error", "words"),
    [
        ([], InputError, "empty"),
        (np.array([1.0, np.nan, 2.0]), NonFiniteError, "not finite (first at index 1"),
        ([1.0, math.inf], NonFiniteError, "not finite"),
        ([1.0, -0.5, 2.0], InputError, "-0.5 at index 1"),
        (np.ones((3, 4)), ShapeError, "1-D"),
        (["a", "b"], InputError, "real numbers"),
        ([1 + 2j, 3], InputError, "real numbers"),
        ([True, False], InputError, "real numbers"),
        ([1e200, 1.0], InputError, "float64 range"),
    ],
)
def test_bad_singular_values_are_refused_by_name(svals, error, words):
    with pytest.raises(error, match="svals") as info:
        power_law_alpha(svals)
    assert isinstance(info.value, GenboundError)
    assert words in str(info.value)


@pytest.mark.parametrize("min_tail", [1, 0, -3, 2.5, True, "10"])
def test_a_bad_min_tail_is_refused(min_tail):
    with pytest.raises(ParameterError, match="min_tail"):
        power_law_alpha(np.arange(1.0, 30.0), min_tail=min_tail)


def test_a_fit_is_frozen():
    fit = power_law_alpha(np.arange(1.0, 30.0))
    assert isinstance(fit, PowerLawFit)
    with pytest.raises(AttributeError):
        fit.alpha = 2.0


# ------------------------------------------------------------------------ a checkpoint's table
@pytest.fixture(scope="module")
def small_analysis(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    # d_head = 32 / 4 = 8 < 10: every head's QK and V is too short to fit; M_in, M_out have 32 values
    make_bert_checkpoint(folder, layers=2, heads=4, hidden=32, d_ff=64, seed=3)
    return genbound.analyze(folder)


def test_the_table_has_one_row_per_matrix_fitted_where_it_can_be(small_analysis):
    spectra = named_spectra(small_analysis)
    table = esd_alpha_table(small_analysis)
    assert list(table.columns) == list(ESD_ALPHA_FIELDS)
    assert list(table["key"]) == [m.key for m in spectra]
    assert len(table) == 2 * (4 * 2 + 2)
    fitted = table[table["fitted"]]
    assert set(fitted["kind"]) == {"M_in", "M_out"} and len(fitted) == 4
    for m, row in zip(spectra, table.itertuples(index=False)):
        fit = power_law_alpha(m.svals)
        assert (row.kind, row.layer, row.head) == (m.kind, m.layer, m.head)
        assert row.n_eigenvalues == fit.n_eigenvalues == int((m.svals > 0).sum())
        if fit.fitted:
            assert row.alpha == fit.alpha and row.xmin == fit.xmin and row.n_tail == fit.n_tail
            assert row.note == ""
        else:
            assert row.alpha is pd.NA and row.n_tail is pd.NA and row.stderr is pd.NA
            assert "fewer than min_tail" in row.note
    # missing numbers are <NA> in nullable columns, never a float NaN
    assert str(table["alpha"].dtype) == "Float64" and str(table["n_tail"].dtype) == "Int64"
    assert not np.isnan(table["alpha"].dropna().to_numpy(dtype=float)).any()
    # a smaller min_tail fits the heads too
    assert esd_alpha_table(small_analysis, min_tail=4)["fitted"].all()


def test_the_table_is_written_as_csv_with_empty_cells_for_the_unfitted(small_analysis, tmp_path):
    path = tmp_path / "alpha.csv"
    assert write_esd_alpha(small_analysis, path) == 4
    text = path.read_text()
    assert "nan" not in text.lower()
    back = pd.read_csv(path)
    assert list(back.columns) == list(ESD_ALPHA_FIELDS) and len(back) == 20
    table = esd_alpha_table(small_analysis)
    ok = table["fitted"].to_numpy()
    assert np.allclose(back["alpha"][ok], table["alpha"][ok].astype(float), rtol=1e-12)
    assert back["alpha"][~ok].isna().all()


@pytest.mark.parametrize("name", ["alpha.txt", "alpha", "alpha.csv.npz"])
def test_an_output_not_ending_in_csv_is_refused(small_analysis, tmp_path, name):
    with pytest.raises(ParameterError, match=r"--esd-alpha .*\.csv"):
        check_esd_alpha_path(tmp_path / name)
    with pytest.raises(ParameterError):
        write_esd_alpha(small_analysis, tmp_path / name)
    assert not (tmp_path / name).exists()


def test_a_spectra_only_model_has_its_experts_and_gates_in_the_table():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MixtralConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_local_experts=2,
        num_experts_per_tok=1,
        vocab_size=40,
    )
    torch.manual_seed(0)
    s = genbound.analyze(transformers.MixtralForCausalLM(cfg))
    assert s.spectra_only
    table = esd_alpha_table(s)
    assert list(table["key"]) == [m.key for m in named_spectra(s)]
    experts = table[table["expert"] >= 0]
    assert sorted(set(experts["expert"])) == [0, 1]
    assert {"M_gate", "M_in", "M_out"} <= set(experts["kind"])
    # d_head = 16 and 32 feed-forward values fit; the router (2 experts: 2 values) does not
    router = table["kind"] == "router"
    assert router.sum() == 1 and not table.loc[router, "fitted"].any()
    assert "2 nonzero eigenvalues" in table.loc[router, "note"].iloc[0]
    fitted = table[~router]
    assert fitted["fitted"].all()
    assert (fitted["alpha"] > 1).all() and (fitted["stderr"] > 0).all()


def test_analyze_esd_alpha_option_writes_the_table_and_refuses_bad_paths(tmp_path, capsys):
    """`genbound analyze PATH --esd-alpha FILE.csv`: the library's table, in the CSV; a name not ending in
    .csv, or the option with --compare, ends in one error line before any spectrum."""
    from genbound.cli import main

    folder = tmp_path / "m"
    make_bert_checkpoint(folder, layers=2, heads=4, hidden=32, d_ff=64, seed=3)
    out = tmp_path / "alpha.csv"
    assert main(["analyze", str(folder), "--esd-alpha", str(out), "--json", "--device", "cpu"]) == 0
    capsys.readouterr()
    got = pd.read_csv(out)
    want = esd_alpha_table(genbound.analyze(folder, device="cpu"))
    assert list(got["key"]) == list(want["key"]) and len(got) == 2 * (2 * 4 + 2)
    fitted = want["fitted"].to_numpy(dtype=bool)
    assert np.allclose(got["alpha"].to_numpy()[fitted], want["alpha"].to_numpy(dtype=float)[fitted])
    for bad in (
        ["--esd-alpha", str(tmp_path / "alpha.txt")],
        ["--esd-alpha", str(out), "--compare", str(folder)],
    ):
        assert main(["analyze", str(folder), *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("genbound: error: --esd-alpha") and err.count("\n") == 1
