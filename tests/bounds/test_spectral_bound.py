"""genbound.bounds.sakai_imaizumi against an independent float64 reference that follows the authors'
definitions literally (dense matrices, numpy SVD, Python loops), plus property tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

import genbound as gb
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genbound.bounds import sakai_imaizumi as si
from genbound.errors import DeviceError, GenboundError, ParameterError
from genbound.weights import TransformerWeights, bert_weights_from_state_dict
from reference_proxies import (
    COLUMNS,
    RTOL,
    assert_matches,
    random_state_dict,
    reference_matrices,
    reference_proxies,
    rel,
    torch_svdvals,
)


# --------------------------------------------------------------------------------------------------
# the reference: the authors' extraction and formulas, literally


# --------------------------------------------------------------------------------------------------
# against the reference


@pytest.mark.parametrize(
    "std, L, H, dh, F",
    [(0.3, 2, 3, 4, 20), (0.05, 3, 2, 3, 7), (1.0, 1, 1, 5, 9), (0.02, 2, 2, 8, 64)],
)
def test_matches_reference_on_toy_models(std, L, H, dh, F):
    sd, cfg = random_state_dict(L, H, dh, F, seed=L * 100 + H, std=std)
    w = bert_weights_from_state_dict(sd, cfg)
    r = si.spectral_adaptive_bound(w, device="cpu")
    e = si.edelman_proxy(w, device="cpu")
    ref = reference_proxies(reference_matrices(sd, H, list(range(L))), H * dh)
    assert_matches(r, e, ref)
    # the whole p-grid, not only the minima
    assert rel(r.log_terms.exp().numpy(), ref["terms"]) <= RTOL


def test_interior_and_boundary_p_opt_are_exercised():
    """Small weights give p_opt > 0 (scale < 1), large ones p_opt = 0: both branches are tested."""
    small = random_state_dict(2, 2, 4, 16, seed=1, std=0.02)
    big = random_state_dict(2, 2, 4, 16, seed=1, std=3.0)
    p_small = si.spectral_adaptive_bound(bert_weights_from_state_dict(*small)).table["p_opt"]
    p_big = si.spectral_adaptive_bound(bert_weights_from_state_dict(*big)).table["p_opt"]
    assert (p_small > 0).all() and (p_big == 0).all()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    L=st.integers(1, 3),
    H=st.integers(1, 3),
    dh=st.integers(1, 4),
    F=st.integers(1, 12),
    log_std=st.floats(-3, 1),
    seed=st.integers(0, 2**16),
    grid_m=st.one_of(st.none(), st.integers(1, 6)),
)
def test_matches_reference_hypothesis(L, H, dh, F, log_std, seed, grid_m):
    sd, cfg = random_state_dict(L, H, dh, F, seed=seed, std=10.0**log_std)
    w = bert_weights_from_state_dict(sd, cfg)
    r = si.spectral_adaptive_bound(w, grid_m=grid_m)
    e = si.edelman_proxy(w)
    ref = reference_proxies(reference_matrices(sd, H, list(range(L))), H * dh, grid_m=grid_m)
    # p_opt may legitimately differ at a floating-point tie of two grid points; the minimum may not
    assert_matches(r, e, ref, columns=[c for c in COLUMNS if c != "p_opt"])


def test_minilm_matches_reference(minilm_path):
    """The real MiniLM checkpoint (two of its six layers, as a two-layer network) against the reference."""
    from safetensors.numpy import load_file

    from genbound.weights import load_weights

    sel = [0, 5]
    w = load_weights(minilm_path, layers=sel)
    r = si.spectral_adaptive_bound(w)
    e = si.edelman_proxy(w)
    sd = load_file(str(minilm_path / "model.safetensors"))
    # numpy's OpenBLAS threads are not ours to limit: the dense SVDs of the 384 x 384 products use torch
    ref = reference_proxies(reference_matrices(sd, 12, sel), 384, svd=torch_svdvals)
    assert_matches(r, e, ref)


def test_minilm_full_closed_form(minilm_path):
    """On the trained weights every p_opt is 0, so B_ours = sum sqrt(rank N) + sqrt(L) exactly."""
    from genbound.weights import load_weights

    r = si.spectral_adaptive_bound(load_weights(minilm_path))
    t = r.table
    assert (t["p_opt"] == 0).all()
    assert set(t.loc[t.kind.isin(["QK", "V"]), "rank"]) == {32}
    assert set(t.loc[t.kind.isin(["M_in", "M_out"]), "rank"]) == {384}
    closed = 6 * (24 * math.sqrt(32 * 384) + 2 * 384) + math.sqrt(6)
    assert rel(r.value, closed) <= 1e-12
    assert r.table["log_alpha"].iloc[0] > 40  # alpha is astronomically large (digest 3.7)


def test_authors_mode_noise_floor(minilm_path):
    """Dense SVD + threshold only at p = 0: same ranks and norms, larger Schatten sums for small p > 0
    (the round-off floor of rank-32 products), identical value because p_opt = 0."""
    from genbound.weights import load_weights

    w = load_weights(minilm_path, layers=[0])
    ex = si.spectral_adaptive_bound(w)
    au = si.spectral_adaptive_bound(w, mode="authors")
    assert (ex.table["rank"] == au.table["rank"]).all()
    assert rel(ex.table["spectral_norm"], au.table["spectral_norm"]) <= 1e-12
    assert rel(ex.value, au.value) <= 1e-12
    heads = torch.tensor(ex.table["kind"].isin(["QK", "V"]).to_numpy())
    gap = (au.log_terms - ex.log_terms)[heads][:, 1]  # log T(1/m): authors minus exact
    assert bool(
        (gap > 0.01).all()
    )  # the noise floor inflates T(1/m) of every head (measured: ~0.024)
    assert bool((au.log_terms - ex.log_terms)[~heads].abs().max() < 1e-9)  # full-rank MLP: no floor


# --------------------------------------------------------------------------------------------------
# properties


def _permute_heads(sd, H, dh, perm, i=0):
    sd = dict(sd)
    idx = torch.cat([torch.arange(h * dh, (h + 1) * dh) for h in perm])
    for n in ("attention.self.query", "attention.self.key", "attention.self.value"):
        key = f"encoder.layer.{i}.{n}.weight"
        sd[key] = sd[key][idx]
    key = f"encoder.layer.{i}.attention.output.dense.weight"
    sd[key] = sd[key][:, idx]
    return sd


def test_permuting_heads_permutes_rows():
    sd, cfg = random_state_dict(2, 3, 4, 10, seed=3, std=0.4)
    perm = [2, 0, 1]
    a = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg))
    b = si.spectral_adaptive_bound(
        bert_weights_from_state_dict(_permute_heads(sd, 3, 4, perm), cfg)
    )
    assert rel(a.value, b.value) <= 1e-12
    ta = a.table[a.table.layer == 0].set_index(["kind", "head"])
    tb = b.table[b.table.layer == 0].set_index(["kind", "head"])
    for new, old in enumerate(perm):
        for kind in ("QK", "V"):
            assert (
                rel(tb.loc[(kind, new), "contribution"], ta.loc[(kind, old), "contribution"])
                <= 1e-12
            )
    ea = si.edelman_proxy(bert_weights_from_state_dict(sd, cfg))
    eb = si.edelman_proxy(bert_weights_from_state_dict(_permute_heads(sd, 3, 4, perm), cfg))
    assert rel(ea.log_value, eb.log_value) <= 1e-12


def test_transposed_convention_swapping_query_and_key():
    """Swapping W_Q and W_K transposes every QK: spectra (hence B_ours) are unchanged, the column
    (2,1) norm of QK becomes the row norm (Edelman changes, and matches the reference)."""
    sd, cfg = random_state_dict(2, 2, 3, 8, seed=5, std=0.5)
    sw = dict(sd)
    for i in range(2):
        q, k = (
            f"encoder.layer.{i}.attention.self.query.weight",
            f"encoder.layer.{i}.attention.self.key.weight",
        )
        sw[q], sw[k] = sd[k], sd[q]
    a = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg))
    b = si.spectral_adaptive_bound(bert_weights_from_state_dict(sw, cfg))
    assert rel(a.value, b.value) <= 1e-12
    qk = a.table.kind == "QK"
    row_norms = [
        np.linalg.norm(W, axis=1).sum()
        for (_, _, kind, W) in reference_matrices(sd, 2, [0, 1])
        if kind == "QK"
    ]
    assert rel(b.table.loc[qk, "norm_21"], row_norms) <= 1e-12
    eb = si.edelman_proxy(bert_weights_from_state_dict(sw, cfg))
    ref = reference_proxies(reference_matrices(sw, 2, [0, 1]), 6)
    assert rel(eb.log_value, ref["edelman_log"]) <= RTOL


def test_factor_and_dense_proxy_inputs_agree():
    """The same network given as thin factors or as dense proxy matrices gives the same numbers."""
    sd, cfg = random_state_dict(2, 2, 4, 12, seed=7, std=0.3)
    w = bert_weights_from_state_dict(sd, cfg)
    qk = [[w.matrix("QK", l, h) for h in range(2)] for l in range(2)]
    v = [[w.matrix("V", l, h) for h in range(2)] for l in range(2)]
    d = TransformerWeights.from_proxy_matrices(
        qk, v, [w.matrix("M_in", l) for l in range(2)], [w.matrix("M_out", l) for l in range(2)]
    )
    a, b = si.spectral_adaptive_bound(w), si.spectral_adaptive_bound(d)
    assert rel(a.value, b.value) <= 1e-12
    for c in COLUMNS:
        assert rel(a.table[c], b.table[c]) <= 1e-10, c
    assert rel(si.edelman_proxy(w).log_value, si.edelman_proxy(d).log_value) <= 1e-12


def test_scaling_a_layer_shifts_alpha_and_gamma():
    """M_out of layer 1 times c: log alpha of layer 0 moves by log c, the gammas of layer 1's QK, V and
    M_in by the factor c, and its own spectral norm by c; nothing else changes."""
    c = 7.0
    sd, cfg = random_state_dict(3, 2, 3, 9, seed=11, std=0.4)
    sc = dict(sd)
    sc["encoder.layer.1.output.dense.weight"] = sd["encoder.layer.1.output.dense.weight"] * c
    a = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg)).table
    b = si.spectral_adaptive_bound(bert_weights_from_state_dict(sc, cfg)).table
    d_log_alpha = (b.log_alpha - a.log_alpha).groupby(a.layer).max()
    assert (
        abs(d_log_alpha[0] - math.log(c)) < 1e-12
        and abs(d_log_alpha[1]) < 1e-12
        and abs(d_log_alpha[2]) < 1e-12
    )
    l1 = (a.layer == 1).to_numpy()
    for kind, factor in (("QK", c), ("V", c), ("M_in", c), ("M_out", 1.0)):
        sel = l1 & (a.kind == kind).to_numpy()
        assert rel(b.gamma[sel], a.gamma[sel] * factor) <= 1e-12
    out1 = l1 & (a.kind == "M_out").to_numpy()
    assert rel(b.spectral_norm[out1], a.spectral_norm[out1] * c) <= 1e-12
    rest = ~l1
    assert rel(b.gamma[rest], a.gamma[rest]) <= 1e-12


def test_attention_scale_divides_qk_spectrum():
    sd, cfg = random_state_dict(1, 2, 4, 8, seed=2, std=0.5)
    a = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg)).table
    b = si.spectral_adaptive_bound(
        bert_weights_from_state_dict(sd, cfg, attention_scale=True)
    ).table
    qk = (a.kind == "QK").to_numpy()
    assert rel(b.spectral_norm[qk], a.spectral_norm[qk] / 2.0) <= 1e-12  # 1/sqrt(d_head = 4)
    assert rel(b.spectral_norm[~qk], a.spectral_norm[~qk]) <= 1e-12


def test_rank_deficient_products():
    """Zero rows in a head's query make QK rank-deficient: the rank drops to the true rank, T(0) is
    sqrt(rank N), and in exact mode nothing below the threshold leaks into p > 0."""
    sd, cfg = random_state_dict(1, 2, 4, 8, seed=4, std=5.0)
    sd = dict(sd)
    q = sd["encoder.layer.0.attention.self.query.weight"].clone()
    q[1:4] = 0.0  # head 0 keeps one query row: rank(QK_0) = 1
    q[4:6] = q[6:8]  # head 1: rows 4, 5 repeat rows 6, 7: rank 2
    sd["encoder.layer.0.attention.self.query.weight"] = q
    r = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg))
    t = r.table.set_index(["kind", "head"])
    assert t.loc[("QK", 0), "rank"] == 1 and t.loc[("QK", 1), "rank"] == 2
    assert rel(math.exp(r.log_terms[0, 0].item()), math.sqrt(1 * 8)) <= 1e-12
    ref = reference_proxies(reference_matrices(sd, 2, [0]), 8)
    assert rel(r.log_terms.exp().numpy(), ref["terms"]) <= RTOL
    # the dense SVD's round-off values sit below the threshold; the authors' mode keeps them for p > 0
    au = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg), mode="authors")
    assert au.table["rank"].tolist() == r.table["rank"].tolist()
    assert au.log_terms[0, 1] > r.log_terms[0, 1]  # p = 1/m: the floor counts
    assert bool(
        (au.log_terms[0, 1:] >= r.log_terms[0, 1:] - 1e-12).all()
    )  # and never lowers a term


def test_zero_layer_gives_finite_numbers():
    """A layer of zeros: alpha of earlier layers is 0, ranks 0, no NaN anywhere."""
    sd, cfg = random_state_dict(2, 1, 2, 3, seed=0)
    sd = {k: (v * 0 if ".1." in k else v) for k, v in sd.items()}
    r = si.spectral_adaptive_bound(bert_weights_from_state_dict(sd, cfg))
    e = si.edelman_proxy(bert_weights_from_state_dict(sd, cfg))
    assert math.isfinite(r.value) and math.isfinite(e.log_value)
    assert not r.table.drop(columns=["kind"]).isna().any().any()
    assert (r.table.loc[r.table.layer == 1, "rank"] == 0).all()


def test_edelman_overflow_is_inf_not_nan():
    sd, cfg = random_state_dict(3, 2, 2, 4, seed=0, std=1e30)
    e = si.edelman_proxy(bert_weights_from_state_dict(sd, cfg))
    assert e.value == math.inf and math.isfinite(e.log_value) and e.log_value > 709
    ref = reference_proxies(reference_matrices(sd, 2, [0, 1, 2]), 4)
    assert rel(e.log_value, ref["edelman_log"]) <= RTOL


def test_report_grid_and_layer_table():
    sd, cfg = random_state_dict(2, 2, 2, 5, seed=9, std=0.2)
    w = bert_weights_from_state_dict(sd, cfg)
    r = si.spectral_adaptive_bound(w, grid_m=3)
    g = r.grid
    assert len(g) == len(r.table) * 7 and set(g.p.round(12)) == {round(j / 3, 12) for j in range(7)}
    assert np.allclose(g.loc[g.p == 0, "ratio_to_p0"], 1.0)
    mins = g.groupby(["layer", "head", "kind"], sort=False)["term"].min().to_numpy()
    assert rel(mins, r.table["contribution"]) <= 1e-12
    lt = si.layer_table(w)
    assert rel(lt["log_alpha"], r.table.groupby("layer")["log_alpha"].first()) <= 1e-12
    assert "p_opt" in r.summary() or "p_opt = 0" in r.summary()


def test_spectra_are_cached_and_reused():
    sd, cfg = random_state_dict(1, 1, 2, 3, seed=0)
    w = bert_weights_from_state_dict(sd, cfg)
    r = si.spectral_adaptive_bound(w)
    assert w.spectra() is r.spectra
    assert si.edelman_proxy(r.spectra).log_value == si.edelman_proxy(w).log_value


# --------------------------------------------------------------------------------------------------
# bad input


def test_bad_parameters_raise():
    sd, cfg = random_state_dict(1, 1, 2, 3, seed=0)
    w = bert_weights_from_state_dict(sd, cfg)
    with pytest.raises(ParameterError, match="mode"):
        si.spectral_adaptive_bound(w, mode="fast")
    with pytest.raises(ParameterError, match="L_phi"):
        si.spectral_adaptive_bound(w, L_phi=0.0)
    with pytest.raises(ParameterError, match="grid_m"):
        si.spectral_adaptive_bound(w, grid_m=0)
    with pytest.raises(ParameterError, match="rank_tol"):
        si.spectral_adaptive_bound(w, rank_tol=-1.0)
    with pytest.raises(ParameterError, match="L_phi"):
        si.edelman_proxy(w, L_phi=float("nan"))
    with pytest.raises(GenboundError, match="BERT"):
        gb.spectral_adaptive_bound(object())  # the loading convenience names what it reads
    with pytest.raises(GenboundError, match="weights must be TransformerWeights or Spectra"):
        si.spectral_adaptive_bound(object())  # bounds/ never loads
    with pytest.raises(GenboundError, match="weights must be TransformerWeights or Spectra"):
        si.edelman_proxy("some/folder")
    with pytest.raises(ParameterError, match="n_samples"):
        si.spectral_adaptive_bound(w, n_samples=0)
    with pytest.raises(ParameterError, match="n_samples"):
        si.edelman_proxy(w, n_samples=1.5)
    r = si.spectral_adaptive_bound(w)
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ParameterError, match="target"):
            r.samples_needed(bad)
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError):
            si.spectral_adaptive_bound(w, device="cuda")


# --------------------------------------------------------------------------------------------------
# GPU


@pytest.mark.gpu
def test_cpu_and_cuda_agree(minilm_path):
    from genbound.weights import load_weights

    w = load_weights(minilm_path)
    a, b = si.spectral_adaptive_bound(w, device="cpu"), si.spectral_adaptive_bound(w, device="cuda")
    assert rel(a.value, b.value) <= 1e-9
    for c in COLUMNS:
        assert rel(a.table[c], b.table[c]) <= 1e-9, c
    assert (
        rel(
            si.edelman_proxy(w, device="cpu").log_value,
            si.edelman_proxy(w, device="cuda").log_value,
        )
        <= 1e-9
    )


# --------------------------------------------------------------------------------------------------
# what the reports say they are: capacity, trivial, samples_needed, to_dict


def _toy(scale=2.0, L=1):
    A = scale * torch.eye(4, dtype=torch.float64)
    return TransformerWeights.from_proxy_matrices([[A]] * L, [[A]] * L, [A] * L, [A] * L)


def test_capacity_trivial_and_samples_needed():
    import json

    w = _toy()
    r = si.spectral_adaptive_bound(w, n_samples=100_000)
    # every matrix at p = 0 (kappa_0 = 1): capacity = 12 * 4 sqrt(4 * 4) + sqrt(1) = 193; B = 17
    assert r.value == pytest.approx(17.0, rel=1e-12) and r.capacity == pytest.approx(
        193.0, rel=1e-12
    )
    assert r.trivial is False  # 193 / sqrt(10^5) < 1
    assert si.spectral_adaptive_bound(w, n_samples=10_000).trivial is True  # 193 / 100 >= 1
    assert si.spectral_adaptive_bound(w).trivial is None
    for t in (1.0, 0.5, 0.1, 0.0137):
        n = r.samples_needed(t)
        assert r.capacity / math.sqrt(n) <= t * (1 + 1e-12) and (
            n == 1 or r.capacity / math.sqrt(n - 1) > t
        )
    assert r.samples_needed(1.0) == 193**2
    d = r.to_dict(target=1.0)
    assert json.loads(json.dumps(d)) == d and d["trivial"] is False and d["n_samples"] == 100_000
    assert d["capacity"] == pytest.approx(193.0) and d["samples_needed"] == 193**2
    assert r.samples_needed() == 193**2 and r.samples_needed(1.0, limit=193**2 - 1) == math.inf
    e = si.edelman_proxy(w, n_samples=100_000)
    assert e.capacity == e.value and e.log_capacity == e.log_value
    assert e.trivial == (e.value >= math.sqrt(1e5)) and e.samples_needed(1.0) >= e.value**2 * (
        1 - 1e-12
    )
    assert json.loads(json.dumps(e.to_dict()))["value"] == e.value


def test_capacity_beyond_float64_stays_json_ready():
    import json

    r = si.spectral_adaptive_bound(_toy(1e60, L=3), n_samples=10)
    e = si.edelman_proxy(_toy(1e60, L=3), n_samples=10)
    assert math.isfinite(r.log_capacity) and r.trivial is True
    assert e.value == math.inf and e.to_dict()["value"] is None and e.trivial is True
    assert e.samples_needed(1.0) == math.inf and e.to_dict(target=1.0)["samples_needed"] is None
    json.dumps(r.to_dict()), json.dumps(e.to_dict())


def test_checkpoint_convenience_is_the_package_function(tmp_path):
    from genbound import checkpoint_bounds
    from genbound.testing import make_bert_checkpoint

    assert gb.spectral_adaptive_bound is checkpoint_bounds.spectral_adaptive_bound
    assert gb.edelman_proxy is checkpoint_bounds.edelman_proxy
    make_bert_checkpoint(tmp_path, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
    w = gb.load_weights(tmp_path)
    a, b = (
        gb.spectral_adaptive_bound(str(tmp_path), device="cpu", n_samples=50),
        si.spectral_adaptive_bound(w, device="cpu"),
    )
    assert a.value == b.value and a.n_samples == 50
    assert gb.edelman_proxy(tmp_path).log_value == si.edelman_proxy(w).log_value
