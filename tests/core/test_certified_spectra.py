"""genbound.spectra.certified_singular_values: the Gram route's certificate, its fallback, and its use.

The certificate (see the function's docstring) bounds the error of every singular value from the
Gram matrix's eigenvalues by Weyl's inequality, with a rigorous bound on the Gram matrix's rounding
and a stated backward-error constant for the symmetric eigensolver. The tests check each piece: the
rounding bound against an extended-precision Gram matrix, the eigensolver constant against
50-digit eigenvalues, the whole certificate against backward-stable spectra, the fallback on an
ill-conditioned graded spectrum, and the route taken on MiniLM and on the BERT-base-shaped checkpoint
of the benchmark.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genbound.errors import InputError, ParameterError
from genbound.spectra import (
    DEFAULT_CERT_RTOL,
    EIGH_BACKWARD_FACTOR,
    certified_singular_values,
    gram_certificate,
    gram_error_bound,
    gram_matrix,
)
from genbound.testing import make_bert_checkpoint
from genbound.weights import TransformerWeights, load_weights

EPS = torch.finfo(torch.float64).eps


def known_spectrum(m, n, s, seed):
    """``U diag(s) V^T`` with random orthonormal ``U`` (m x n) and ``V`` (n x n)."""
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(m, n, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return (U * s) @ V.T


def qr_svd(M):
    A = M if M.shape[0] >= M.shape[1] else M.T
    return torch.linalg.svdvals(torch.linalg.qr(A, mode="r").R)


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 40),
    n=st.integers(1, 12),
    chunk=st.integers(1, 16),
    seed=st.integers(0, 2**16),
    log_scale=st.floats(-20, 20),
)
def test_gram_rounding_bound_holds(m, n, chunk, seed, log_scale):
    """|fl(A^T A) - A^T A| entrywise, against an 80-bit extended-precision Gram matrix, is within
    gram_error_bound, which bounds the spectral norm of the error."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(m, n, generator=g, dtype=torch.float64) * 10.0**log_scale
    G = gram_matrix(A, chunk=chunk)
    Al = A.numpy().astype(np.longdouble)
    exact = Al.T @ Al
    E = (G.numpy().astype(np.longdouble) - exact).astype(np.float64)
    assert np.linalg.norm(E, 2) <= gram_error_bound(A, chunk=chunk) * (1 + 1e-6) + 1e-300


def test_eigensolver_backward_constant_is_conservative():
    """The one assumption: eigvalsh's eigenvalues are within c n eps ||G|| of the exact eigenvalues of
    the matrix it was given. Measured against 50-digit eigenvalues (mpmath) on graded and random Gram
    matrices: at most about 4 eps ||G|| (LAPACK's own estimate is eps ||G||), so the assumed
    2 n eps ||G|| holds with a margin of at least 4 here and grows with n."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    worst = 0.0
    for seed, n in ((0, 16), (1, 24)):
        graded = known_spectrum(3 * n, n, torch.logspace(0, -3, n, dtype=torch.float64), seed)
        rand = torch.randn(
            3 * n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
        )
        for A in (graded, rand):
            G = A.T @ A
            lam = torch.linalg.eigvalsh(G).numpy()
            exact = np.array(
                sorted(float(x) for x in mpmath.eigsy(mpmath.matrix(G.tolist()), eigvals_only=True))
            )
            err = np.abs(lam - exact).max() / (
                EPS * float(np.abs(exact).max())
            )  # in units of eps ||G||
            worst = max(worst, err / (EIGH_BACKWARD_FACTOR * n))
    assert 0 < worst <= 0.25


@settings(max_examples=30, deadline=None)
@given(
    m=st.integers(2, 60),
    n=st.integers(1, 30),
    log_kappa=st.floats(0, 12),
    seed=st.integers(0, 2**16),
)
def test_certificate_is_an_upper_bound(m, n, log_kappa, seed):
    """Whenever the Gram route certifies, its error against the backward-stable route is within the bound
    (plus the backward-stable route's own error, eps kappa)."""
    m = max(m, n)
    s = torch.logspace(0, -log_kappa, n, dtype=torch.float64)
    M = known_spectrum(m, n, s, seed)
    c = certified_singular_values(M, route="gram")
    ref = qr_svd(M)
    rel = float(((c.svals - ref).abs() / ref).max())
    if math.isfinite(c.rel_err_bound):
        assert rel <= c.rel_err_bound + 10 * n * EPS * float(ref[0] / ref[-1])
    auto = certified_singular_values(M)
    assert auto.route == (
        "gram" if c.rel_err_bound <= DEFAULT_CERT_RTOL else "qr-svd" if m > n else "svd"
    )


def test_graded_spectrum_falls_back():
    """Singular values from 1 down to 1e-12: the Gram route would lose everything below about 1e-8, so
    the certificate fails and QR + SVD gives every value to high relative accuracy."""
    s = torch.logspace(0, -12, 60, dtype=torch.float64)
    M = known_spectrum(240, 60, s, 3)
    gram = certified_singular_values(M, route="gram")
    assert gram.rel_err_bound == math.inf and float(((gram.svals - s).abs() / s).max()) > 1.0
    c = certified_singular_values(M)
    assert c.route == "qr-svd" and float(((c.svals - s).abs() / s).max()) < 1e-3
    assert certified_singular_values(M.T).route == "qr-svd"  # the wide orientation too


def test_well_conditioned_takes_the_gram_route_and_is_accurate():
    s = torch.linspace(3.0, 1.0, 50, dtype=torch.float64)
    M = known_spectrum(300, 50, s, 4)
    c = certified_singular_values(M)
    assert c.route == "gram" and c.rel_err_bound <= DEFAULT_CERT_RTOL
    assert float(((c.svals - qr_svd(M)).abs() / s).max()) <= c.rel_err_bound
    assert bool((c.svals[:-1] >= c.svals[1:]).all())


def test_gram_certificate_formula_and_arguments():
    lam = torch.tensor([4.0, 1.0], dtype=torch.float64)
    assert gram_certificate(lam, 1.0) == math.inf  # lam_min <= delta: nothing certified
    assert gram_certificate(lam, 0.5) == pytest.approx(1 / math.sqrt(0.5) - 1, rel=1e-12)
    with pytest.raises(ParameterError, match="route"):
        certified_singular_values(torch.eye(2, dtype=torch.float64), route="fast")
    with pytest.raises(ParameterError, match="rtol"):
        certified_singular_values(torch.eye(2, dtype=torch.float64), rtol=0)
    with pytest.raises(InputError, match="float64"):
        certified_singular_values(torch.eye(2))
    z = certified_singular_values(torch.zeros(5, 3, dtype=torch.float64))
    assert z.route == "qr-svd" and z.svals.tolist() == [0.0, 0.0, 0.0]


def test_minilm_routes(minilm_path):
    """MiniLM's trained feed-forward matrices: each route is recorded, and every spectrum agrees with
    QR + SVD to its certified bound (or exactly, on the fallback)."""
    w = load_weights(minilm_path)
    sp = w.spectra()
    routes = {k: sp.routes[k] for k in ("M_in", "M_out")}
    assert set(routes["M_in"]) | set(routes["M_out"]) <= {"gram", "qr-svd"}
    assert sp.routes["QK"] == ("qr-core",) * 6
    for kind in ("M_in", "M_out"):
        for layer in (0, 5):
            M = w.matrix(kind, layer)
            c = certified_singular_values(M)
            assert c.route == routes[kind][layer]
            ref = qr_svd(M)
            rel = float(((c.svals - ref).abs() / ref).max())
            assert rel <= (c.rel_err_bound if c.route == "gram" else 0.0) + 1e-13
    assert "gram" in routes["M_in"] + routes["M_out"]  # the fast route is taken on real weights


def test_bert_base_shaped_checkpoint(tmp_path):
    """Layer 0 of the benchmark's checkpoint (same seed and shape): both feed-forward matrices take the
    certified Gram route, and agree with QR + SVD far inside the bound."""
    make_bert_checkpoint(tmp_path, layers=1, heads=12, hidden=768, d_ff=3072, seed=0)
    w = load_weights(tmp_path)
    auto = w.spectra()
    assert auto.routes["M_in"] == ("gram",) and auto.routes["M_out"] == ("gram",)
    for kind in ("M_in", "M_out"):
        M = w.matrix(kind, 0)
        c = certified_singular_values(M)
        assert c.route == "gram" and c.rel_err_bound <= DEFAULT_CERT_RTOL
        ref = qr_svd(M)
        rel = float(((auto.svals(kind)[0] - ref).abs() / ref).max())
        assert rel <= c.rel_err_bound and rel <= 1e-12


def test_routes_in_the_table():
    """The per-matrix table records the route; proxies given directly take dense SVDs for heads."""
    from genbound.bounds.sakai_imaizumi import spectral_adaptive_bound

    s = torch.logspace(0, -12, 6, dtype=torch.float64)
    graded = known_spectrum(10, 6, s, 5)  # d_ff x N: M_out
    w = TransformerWeights.from_proxy_matrices(
        torch.eye(6, dtype=torch.float64).expand(1, 1, 6, 6),
        torch.eye(6, dtype=torch.float64).expand(1, 1, 6, 6),
        torch.randn(1, 6, 10, dtype=torch.float64),
        graded.unsqueeze(0),
    )
    t = spectral_adaptive_bound(w).table
    assert t["route"].tolist() == ["dense-svd", "dense-svd", "gram", "qr-svd"]
