"""Theorem P's function, `network_bound`, beyond its claims: it moves with the weights where the proxy does
not, it is vacuous where it must be, its inputs are checked, and `genbound analyze` headlines it."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

import genbound
from genbound.bounds import network as net
from genbound.bounds.sakai_imaizumi import spectral_adaptive_bound
from genbound.errors import InputError, ParameterError
from genbound.weights import TransformerWeights


def _orth(g, n, scale):
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return q * scale


def _one_layer(scale, n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TransformerWeights.from_proxy_matrices(
        [[_orth(g, n, scale)]], [[_orth(g, n, scale)]], [_orth(g, n, scale)], [_orth(g, n, scale)]
    )


def test_capacity_moves_with_the_weights_and_the_proxy_does_not():
    caps, proxies = [], []
    for c in (0.5, 1.0, 2.0, 8.0):
        w = _one_layer(c)
        caps.append(net.network_bound(w).capacity)
        proxies.append(spectral_adaptive_bound(w).value)
    assert all(a < b for a, b in zip(caps, caps[1:]))  # larger norms, larger proved capacity
    # from scale 1 on p = 0 wins everywhere and the proxy reads only ranks: 4 sqrt(16 * 16) + 1
    assert [round(v, 9) for v in proxies[1:]] == [65.0] * 3


def test_the_norms_1e4_example_is_vacuous_at_6_6e6_and_not_at_a_large_n():
    g = torch.Generator().manual_seed(0)
    mats = [_orth(g, 64, 1e4) for _ in range(4)]
    w = TransformerWeights.from_proxy_matrices([[mats[0]]], [[mats[1]]], [mats[2]], [mats[3]])
    r = net.network_bound(w, n_samples=6_600_000)
    assert r.trivial and r.value > 1.0
    need = r.samples_needed()
    assert math.isfinite(need) and r.gap_at(need) <= 1.0 < r.gap_at(need - 1)
    assert need > 6_600_000


def test_more_depth_more_capacity_and_k_counts_every_matrix():
    g = torch.Generator().manual_seed(1)
    one = net.network_bound(_one_layer(1.0, seed=2))
    two = TransformerWeights.from_proxy_matrices(
        [[_orth(g, 16, 1.0)] * 2] * 2,
        [[_orth(g, 16, 1.0)] * 2] * 2,
        [_orth(g, 16, 1.0)] * 2,
        [_orth(g, 16, 1.0)] * 2,
    )
    r2 = net.network_bound(two)
    assert r2.capacity > one.capacity and len(r2.table) == net.matrix_count(2, 2) == 12


def test_gap_formula_and_margin_delta_move_it():
    w = _one_layer(1.0)
    r = net.network_bound(w, n_samples=10**8)
    want = 2 * r.capacity / 1e4 + 3 * math.sqrt((math.log(2 / 0.05) + r.union_cost) / (2e8))
    assert math.isclose(r.value, want, rel_tol=1e-12)
    assert net.network_bound(w, margin=0.1).capacity > r.capacity
    assert net.network_bound(w, n_samples=10**8, delta=1e-6).value > r.value
    assert net.network_bound(w, input_radius=3.0).capacity > r.capacity


def test_seq_len_enables_the_grid_and_never_hurts_the_integral_by_much():
    w = _one_layer(1.0)
    r0, rT = net.network_bound(w), net.network_bound(w, seq_len=64)
    assert r0.grid_m == rT.grid_m and r0.seq_len is None and rT.seq_len == 64
    assert rT.union_cost > r0.union_cost  # the grid's index is paid for
    assert set(r0.table["p"]) == {0.0}


def test_bad_inputs_are_refused_by_name():
    w = _one_layer(1.0)
    for kw, name in (
        ({"delta": 0.0}, "delta"),
        ({"margin": -1.0}, "margin"),
        ({"input_radius": 0.0}, "input_radius"),
        ({"seq_len": 0}, "seq_len"),
        ({"levels_per_efold": 0}, "levels_per_efold"),
    ):
        with pytest.raises(ParameterError, match=name):
            net.network_bound(w, **kw)
    with pytest.raises(InputError, match="exact spectra"):
        net.network_bound(w.spectra(method="dense"))
    with pytest.raises(InputError, match="TransformerWeights or Spectra"):
        net.network_bound([1, 2, 3])


def test_scaled_spectra_equal_scaled_weights():
    w = _one_layer(1.0)
    sp = w.spectra(method="core")
    sp2 = dataclasses.replace(sp, qk=2 * sp.qk, v=2 * sp.v, m_in=2 * sp.m_in, m_out=2 * sp.m_out)
    a, b = net.network_bound(sp2), net.network_bound(_one_layer(2.0))
    assert math.isclose(a.capacity, b.capacity, rel_tol=1e-9)


def test_package_face_and_json():
    w = _one_layer(1.0)
    r = genbound.network_bound(w, 1000)
    d = r.to_dict(target=1.0)
    assert d["bound"] == "NetworkBound" and d["premises"].startswith("reference architecture")
    assert d["samples_needed"] == r.samples_needed()


def test_the_integral_at_p_above_0_is_an_upper_sum_above_every_finer_one():
    """The integrand sqrt(sum_a H_a(eps)) is non-increasing in eps, so the lower and upper Riemann sums on any
    grid bracket the integral. The production value (p > 0 matrices, min over ranks, kinks) is the upper sum
    of its grid: at least the upper sum of every refinement (here 8 times finer), hence at least the
    integral, and above it by little."""
    g = torch.Generator().manual_seed(3)
    for _ in range(4):
        kw = []
        for _ in range(3):
            rows, cols = (int(x) for x in torch.randint(3, 20, (2,), generator=g))
            p = float(torch.empty(1).uniform_(0.1, 2.0, generator=g))
            s = float(torch.empty(1).uniform_(0.2, 5.0, generator=g))
            kw.append(
                dict(
                    p=p,
                    level=0.5 * min(rows, cols) * s**p,
                    s=s,
                    rows=rows,
                    cols=cols,
                    log_scale=float(torch.empty(1).uniform_(-6, 8, generator=g)),
                    seq_len=32,
                )
            )
        covers = [lambda e, k=k: net.matrix_log_cover(e, **k) for k in kw]
        tail_P = [(k["rows"] + k["cols"] + 1) * min(k["rows"], k["cols"]) for k in kw]
        tail_lb = [
            math.log(9 * k["s"] * math.sqrt(min(k["rows"], k["cols"]))) + k["log_scale"] for k in kw
        ]
        q = net.quadrature_dudley_integral(covers, tail_P, tail_lb)
        top = net.dudley_top()
        u = torch.linspace(0, 60, 8 * net.UPPER_SUM_CELLS + 1, dtype=torch.float64)
        eps = top * torch.exp(-u)  # decreasing; every production edge is an edge here
        f = sum(c(eps) for c in covers).clamp(min=0).sqrt()
        widths = eps[:-1] - eps[1:]
        upper = float((f[1:] * widths).sum())  # each cell at its smaller radius: the larger value
        lower = float((f[:-1] * widths).sum())
        tail = net.p0_dudley_integral(tail_P, tail_lb, float(eps[-1]))
        assert lower + tail <= upper + tail <= q * (1 + 1e-12)
        assert (q - lower - tail) / q < 5e-3


@pytest.fixture(scope="module")
def bert_checkpoint(tmp_path_factory):
    """A small BERT-architecture checkpoint on disk (the GPU machine has no MiniLM package)."""
    from genbound.testing import make_bert_checkpoint

    folder = tmp_path_factory.mktemp("bert")
    make_bert_checkpoint(folder, layers=2, heads=4, hidden=64, d_ff=256, seed=5, std=0.2)
    return folder


@pytest.mark.gpu
def test_cpu_and_cuda_agree_on_theorem_p(bert_checkpoint):
    """The spectra behind theorem P computed on CUDA give the CPU's capacity, union cost and per-matrix table,
    with and without a sequence length (the grid at p > 0 reads every singular value)."""
    from genbound.weights import load_weights

    w = load_weights(bert_checkpoint)
    for seq_len in (None, 128):
        a = net.network_bound(w, 10**6, seq_len=seq_len, device="cpu")
        b = net.network_bound(w, 10**6, seq_len=seq_len, device="cuda")
        assert math.isclose(a.capacity, b.capacity, rel_tol=1e-9), seq_len
        assert math.isclose(a.union_cost, b.union_cost, rel_tol=1e-9), seq_len
        assert (a.table["p"] == b.table["p"]).all() and (a.table["level"] == b.table["level"]).all()


@pytest.mark.gpu
def test_analyze_on_cuda_gives_the_cpu_headline(bert_checkpoint):
    """`genbound analyze --device cuda` prints the proved bound the CPU prints."""
    a = genbound.analyze(bert_checkpoint, device="cpu")
    b = genbound.analyze(bert_checkpoint, device="cuda")
    assert math.isclose(a.network.capacity, b.network.capacity, rel_tol=1e-9)
    assert math.isclose(a.spectral.value, b.spectral.value, rel_tol=1e-9)
