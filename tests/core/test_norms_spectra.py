"""Unit and property-based tests of genbound.spectra and genbound.norms."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import genbound as gb
from genbound.errors import NonFiniteError, ParameterError, ShapeError, InputError

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)
shapes = st.tuples(st.integers(1, 7), st.integers(1, 7))


@st.composite
def matrices(draw):
    return torch.from_numpy(draw(arrays(np.float64, draw(shapes), elements=finite)))


def orthogonal(n, seed):
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


# --- spectra -------------------------------------------------------------------------------------


def test_singular_values_descending_and_batched():
    g = torch.Generator().manual_seed(1)
    W = torch.randn(5, 6, 4, generator=g, dtype=torch.float64)
    s = gb.singular_values(W)
    assert s.shape == (5, 4) and s.dtype == torch.float64
    assert bool((s[:, :-1] >= s[:, 1:]).all())
    for i in range(5):
        ref = np.linalg.svd(W[i].numpy(), compute_uv=False)
        np.testing.assert_allclose(s[i].numpy(), ref, rtol=1e-12)


def test_float32_option():
    assert gb.singular_values(torch.eye(3), dtype="float32").dtype == torch.float32


@pytest.mark.parametrize("rows,r,cols", [(40, 3, 30), (30, 5, 60), (8, 8, 8), (6, 10, 5)])
def test_product_singular_values_matches_dense(rows, r, cols):
    g = torch.Generator().manual_seed(rows + r)
    A = torch.randn(2, rows, r, generator=g, dtype=torch.float64)
    B = torch.randn(2, r, cols, generator=g, dtype=torch.float64)
    thin = gb.product_singular_values(A, B)
    dense = gb.singular_values(A @ B)
    k = min(rows, cols, r)
    assert thin.shape == dense.shape
    torch.testing.assert_close(thin[..., :k], dense[..., :k], rtol=1e-11, atol=1e-12)
    assert bool((thin[..., k:] == 0).all())  # exact zeros, no round-off floor


def test_product_shape_mismatch():
    with pytest.raises(ShapeError, match="inner sizes differ"):
        gb.product_singular_values(torch.ones(4, 2), torch.ones(3, 4))


def test_numerical_rank_threshold_rule():
    s = torch.tensor([2.0, 1e-9, 1e-11], dtype=torch.float64)
    # threshold = 1e-10 * 3 * max(2, 1) = 6e-10
    assert int(gb.numerical_rank(s)) == 2
    assert int(gb.numerical_rank(s, rank_tol=1e-8)) == 1
    small = torch.tensor(
        [1e-3, 1e-12], dtype=torch.float64
    )  # max(sigma_1, 1) = 1 keeps the threshold absolute
    assert int(gb.numerical_rank(small)) == 1


def test_rank_threshold_uses_the_dtype_epsilon():
    """A float32 spectrum's round-off floor (about eps32 * sigma_1) must not count as rank."""
    from genbound.spectra import effective_rank_tol

    g = torch.Generator().manual_seed(0)
    A = torch.randn(40, 4, generator=g, dtype=torch.float64) @ torch.randn(
        4, 40, generator=g, dtype=torch.float64
    )
    s32 = gb.singular_values(A.float(), dtype="float32")  # rank 4, then float32 round-off
    s64 = gb.singular_values(A)
    assert float(s32[4:].max()) > 1e-10 * 40 * float(
        s32[0]
    )  # the floor sits above the float64 tolerance
    assert int(gb.numerical_rank(s32)) == 4 and int(gb.numerical_rank(s64)) == 4
    assert (
        int(gb.numerical_rank(s32.double())) > 4
    )  # the same numbers, read as float64, would inflate the rank
    assert effective_rank_tol(1e-10, torch.float32) == torch.finfo(torch.float32).eps
    assert effective_rank_tol(1e-3, torch.float32) == 1e-3  # a larger tolerance is kept
    assert float(gb.rank_threshold(s32, rank_tol=0.0)) == 0.0  # rank_tol = 0: no threshold at all
    t = gb.threshold_spectrum(s32)
    assert bool((t[4:] == 0).all()) and bool((t[:4] > 0).all())


def test_negative_tolerance_rejected():
    with pytest.raises(ParameterError, match="rank_tol"):
        gb.numerical_rank(torch.ones(3), rank_tol=-1)


@pytest.mark.parametrize(
    "bad,err,msg",
    [
        (torch.tensor([[1.0, float("nan")]]), NonFiniteError, "non-finite"),
        (torch.tensor([[1.0, float("inf")]]), NonFiniteError, "non-finite"),
        (torch.ones(3), ShapeError, "at least 2 dimensions"),
        (torch.ones(0, 3), ShapeError, "empty"),
        ([["a", "b"]], InputError, "numeric"),
    ],
)
def test_bad_matrices(bad, err, msg):
    with pytest.raises(err, match=msg):
        gb.singular_values(bad)


def test_unknown_device():
    with pytest.raises(gb.DeviceError):
        gb.singular_values(torch.eye(2), device="tpu")


@pytest.mark.gpu
def test_cpu_and_gpu_agree():
    g = torch.Generator().manual_seed(3)
    W = torch.randn(8, 64, 48, generator=g, dtype=torch.float64)
    torch.testing.assert_close(
        gb.singular_values(W, device="cuda").cpu(),
        gb.singular_values(W, device="cpu"),
        rtol=1e-9,
        atol=1e-12,
    )


def test_home_device_is_the_inputs_unless_one_is_named():
    from genbound.device import home_device

    assert home_device(None, [[1.0]]).type == "cpu"
    assert home_device("auto", np.ones((2, 2)), torch.zeros(1)).type == "cpu"
    assert home_device(" AUTO ").type == "cpu"
    assert home_device("cpu", torch.zeros(1)).type == "cpu"
    with pytest.raises(gb.DeviceError):
        home_device("tpu", torch.zeros(1))


@pytest.mark.gpu
def test_results_come_back_where_the_input_lives(tmp_path):
    """The device contract (genbound.device) on a machine with CUDA: computed there, handed back where
    the input lives unless a device is named; modules are built on the CPU."""
    from genbound.nets import ReferenceTransformer
    from genbound.testing import make_bert_checkpoint

    W = torch.randn(3, 6, 5, dtype=torch.float64)
    assert gb.singular_values(W).device.type == "cpu"
    assert gb.singular_values(W.cuda()).device.type == "cuda"
    assert gb.singular_values(W, device="cuda").device.type == "cuda"
    assert gb.product_singular_values(W[0], W[0].T).device.type == "cpu"
    assert gb.empirical_rademacher_linear(W[0], n_draws=64).value.device.type == "cpu"
    make_bert_checkpoint(tmp_path, layers=1, heads=2, hidden=8, d_ff=16, seed=0)
    w = gb.load_weights(tmp_path)
    assert w.matrix("QK", 0, 0).device.type == "cpu" and w.matrix("M_in", 0).device.type == "cpu"
    assert w.spectra().m_in.device.type == "cpu" and w.spectra(device="cuda").m_in.is_cuda
    assert all(m.svals.device.type == "cpu" for m in w.matrix_spectra())
    assert {t.device.type for t in w.head_factors("V", 0)} == {"cpu"}
    assert gb.spectral_adaptive_bound(w).log_terms.device.type == "cpu"
    assert ReferenceTransformer(4).w.device.type == "cpu"
    assert ReferenceTransformer(4, device="auto").w.is_cuda


# --- norms ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [-0.1, 2.5, float("nan"), float("inf")])
def test_p_out_of_range(p):
    with pytest.raises(ParameterError, match=r"\[0, 2\]"):
        gb.schatten_power(torch.ones(3), p)


def test_negative_singular_values_rejected():
    with pytest.raises(InputError, match="nonnegative"):
        gb.schatten_power(torch.tensor([1.0, -1.0]), 1)


def test_grid_matches_scalar_calls():
    s = torch.tensor([[3.0, 2.0, 0.5], [1.0, 0.0, 0.0]], dtype=torch.float64)
    grid = torch.linspace(0, 2, 9, dtype=torch.float64)
    out = gb.schatten_power(s, grid)
    assert out.shape == (2, 9)
    for j, p in enumerate(grid):
        torch.testing.assert_close(out[:, j], gb.schatten_power(s, float(p)))


def test_log_space_does_not_overflow():
    s = torch.tensor([1e300, 1e300], dtype=torch.float64)
    assert math.isclose(
        gb.log_schatten_power(s, 2).item(), math.log(2) + 600 * math.log(10), rel_tol=1e-12
    )


def test_zero_matrix():
    s = torch.zeros(4, dtype=torch.float64)
    assert gb.schatten_power(s, 0).item() == 0 and gb.schatten_power(s, 1.5).item() == 0
    assert gb.log_schatten_power(s, 1).item() == -math.inf


def test_group_norm_column_convention():
    W = torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.0, -2.0]])
    assert gb.norm_21(W).item() == pytest.approx(math.sqrt(10) + math.sqrt(24))
    assert gb.norm_11(W).item() == 12
    assert gb.group_norm(W, 2, 2).item() == pytest.approx(torch.linalg.norm(W).item())
    assert gb.group_norm(W, "inf", 1).item() == 3 + 4
    with pytest.raises(ParameterError):
        gb.group_norm(W, 0.5, 1)


@settings(max_examples=60, deadline=None)
@given(matrices())
def test_s2_is_frobenius_and_s1_is_nuclear(W):
    s = gb.singular_values(W)
    np.testing.assert_allclose(
        gb.schatten_norm(s, 2).item(), torch.linalg.norm(W).item(), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(
        gb.schatten_power(s, 1, rank_tol=0).item(),
        torch.linalg.matrix_norm(W, "nuc").item(),
        rtol=1e-9,
        atol=1e-9,
    )


@settings(max_examples=60, deadline=None)
@given(matrices(), st.floats(0, 2), st.floats(0, 2))
def test_schatten_power_monotone_for_contractions(W, p, q):
    s = gb.singular_values(W)
    s = s / max(1.0, s.max().item())  # ||W||_2 <= 1
    lo, hi = min(p, q), max(p, q)
    assert gb.schatten_power(s, hi).item() <= gb.schatten_power(s, lo).item() * (1 + 1e-12) + 1e-12


@settings(max_examples=60, deadline=None)
@given(matrices())
def test_rank_at_least_stable_rank(W):
    s = gb.singular_values(W)
    assert gb.stable_rank(s).item() <= gb.numerical_rank(s).item() + 1e-9


@settings(max_examples=40, deadline=None)
@given(matrices(), st.integers(0, 10_000), st.floats(0, 2))
def test_unitary_invariance(W, seed, p):
    a, b = W.shape
    U, V = orthogonal(a, seed), orthogonal(b, seed + 1)
    s1, s2 = gb.singular_values(W), gb.singular_values(U @ W @ V)
    np.testing.assert_allclose(
        gb.schatten_power(s2, p).item(), gb.schatten_power(s1, p).item(), rtol=1e-8, atol=1e-8
    )


@settings(max_examples=40, deadline=None)
@given(matrices(), st.floats(0.1, 10))
def test_homogeneity(W, c):
    # rank_tol=0: the numerical-rank threshold is absolute below sigma_1 = 1, so not scale invariant
    s = gb.singular_values(W)
    for p in (0.5, 1.0, 2.0):
        np.testing.assert_allclose(
            gb.schatten_power(c * s, p, rank_tol=0).item(),
            c**p * gb.schatten_power(s, p, rank_tol=0).item(),
            rtol=1e-9,
            atol=1e-9,
        )


# --------------------------------------------------------------------------- one index per matrix


def test_per_matrix_index_equals_the_grid_diagonal():
    from genbound import norms

    g = torch.Generator().manual_seed(3)
    s = torch.rand(5, 7, generator=g, dtype=torch.float64).sort(-1, descending=True).values
    p = torch.tensor([0.0, 0.3, 1.0, 1.7, 2.0], dtype=torch.float64)
    grid = norms.log_schatten_power(s, p)  # (5, 5): every matrix at every index
    at = norms.log_schatten_power_at(s, p)  # (5,): matrix i at index i
    assert torch.allclose(at, grid.diagonal(), rtol=0, atol=1e-14)
    assert torch.allclose(norms.schatten_power_at(s, p), grid.diagonal().exp(), rtol=1e-14)
    assert torch.allclose(
        norms.schatten_norm_at(s, p), norms.schatten_norm(s, p).diagonal(), rtol=1e-14
    )


def test_size_enters_the_rank_threshold():
    from genbound import norms

    s = torch.tensor([1.0, 5e-10], dtype=torch.float64)
    assert gb.schatten_power(s, 0).item() == 2.0  # threshold 2e-10
    assert norms.schatten_power(s, 0, size=10).item() == 1.0  # threshold 1e-9


def test_per_matrix_index_bad_input():
    from genbound import norms

    with pytest.raises(ParameterError, match="p"):
        norms.log_schatten_power_at(
            torch.ones(2, 3, dtype=torch.float64), torch.tensor([0.5, 2.5], dtype=torch.float64)
        )
    with pytest.raises(ParameterError, match="p"):
        norms.schatten_norm_at(
            torch.ones(1, 3, dtype=torch.float64), torch.tensor([float("nan")], dtype=torch.float64)
        )
    with pytest.raises(InputError, match="svals"):
        norms.log_schatten_power_at(torch.tensor([[1.0, -1.0]]), torch.tensor([1.0]))
    with pytest.raises(ParameterError, match="rank_tol"):
        norms.log_schatten_power_at(torch.ones(1, 2), torch.tensor([1.0]), rank_tol=-1.0)
