"""genbound.nets: the reference transformer is exactly the function class of Part II."""

import math

import pytest
import torch

from genbound.errors import ArchitectureError, NonFiniteError, ParameterError, ShapeError
from genbound.nets import ReferenceTransformer, forward_effective, matrix_norms, row_projection

CONFIGS = [
    dict(),
    dict(bias=True),
    dict(n_layers=3, n_heads=2, row_norm=True, bias=True, out_dim=2),
    dict(dense=False, n_heads=3, d_head=2, activation="tanh"),
    dict(n_layers=2, activation="leaky_relu", score_scale=0.3, cls_index=0),
]


def _perturbed(seed=0, **kw):
    net = ReferenceTransformer(5, seed=seed, device="cpu", **kw)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return net


@pytest.mark.parametrize("kw", CONFIGS)
def test_module_equals_effective_formula(kw):
    net = _perturbed(**kw)
    X = torch.randn(4, 9, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    E = net.effective_weights()
    B = X.shape[0]
    ex = lambda t: None if t is None else t.expand(B, *t.shape)
    f = forward_effective(
        ex(E.QK),
        ex(E.V),
        ex(E.C),
        ex(E.w),
        X,
        bias=E.bias,
        activation=net.activation,
        row_norm=net.row_norm,
        positions=net.cls_index,
    )
    assert torch.allclose(f, net(X), atol=1e-12)


def test_forward_matches_hand_computation_single_head():
    net = _perturbed(dense=False, bias=False)
    X = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    lay = net.layers[0]
    q, k, v = X @ lay.W_Q[0], X @ lay.W_K[0], X @ lay.W_V[0]
    a = torch.softmax(q[-1] @ k.T / math.sqrt(net.d_head), dim=0)
    expected = torch.relu((a @ v) @ lay.W_O[0]) @ net.w
    assert torch.allclose(net(X), expected, atol=1e-12)


def test_row_norm_bounds_rows_and_batch_is_consistent():
    net = _perturbed(n_layers=2, row_norm=True)
    X = 5 * torch.randn(3, 11, 5, dtype=torch.float64)
    with torch.no_grad():
        Z = net.forward_rows(X)
    assert float(torch.linalg.vector_norm(Z, dim=-1).max()) <= 1 + 1e-12
    assert torch.allclose(net(X)[1], net(X[1]).reshape(-1), atol=1e-12)


def test_predict_at_reads_the_given_rows():
    net = _perturbed(n_layers=2, row_norm=True, out_dim=3)
    X = torch.randn(3, 7, 5, dtype=torch.float64)
    Z = net.forward_rows(X)
    out = net.predict_at(X, [0, 3, -1])
    assert torch.allclose(out[1], Z[1, 3] @ net.w, atol=1e-12)
    assert torch.allclose(out[2], net(X)[2], atol=1e-12)


def test_weight_norms_and_bias_absorption():
    net = _perturbed(bias=True, n_heads=2)
    n = net.weight_norms()
    E = net.effective_weights()
    assert E.QK.shape == (1, 2, 6, 6) and E.V.shape == (1, 2, 6, 5) and E.w.shape == (6, 1)
    assert torch.allclose(n["QK"]["l11"], E.QK.abs().sum((-1, -2)))
    assert n["raw"]["w"] == pytest.approx(float(net.w.detach().abs().sum()))
    # chain ||.||_op <= ||.||_F <= ||.||_{2,1} <= ||.||_{1,1} <= sqrt(d_in) ||.||_{2,1}
    for key in ("QK", "V", "C"):
        m = n[key]
        assert bool((m["op"] <= m["fro"] + 1e-12).all() and (m["fro"] <= m["l21"] + 1e-12).all())
        assert bool(
            (m["l21"] <= m["l11"] + 1e-12).all()
            and (m["l11"] <= m["sqrt_din"] * m["l21"] + 1e-12).all()
        )


def test_matrix_norms_exact():
    n = matrix_norms(torch.tensor([[1.0, -2.0], [0.0, 2.0]]))
    assert n["l11"].item() == 5.0 and n["l21"].item() == pytest.approx(1 + math.sqrt(8))
    assert row_projection(torch.tensor([[0.0, 2.0]])).tolist() == [[0.0, 1.0]]


def test_bad_inputs_raise():
    with pytest.raises(ArchitectureError, match="activation"):
        ReferenceTransformer(4, activation="swish")
    with pytest.raises(ParameterError, match="n_layers"):
        ReferenceTransformer(4, n_layers=0)
    with pytest.raises(ParameterError, match="score_scale"):
        ReferenceTransformer(4, score_scale=-1.0)
    net = ReferenceTransformer(4, cls_index=5)
    with pytest.raises(ShapeError, match="X must have shape"):
        net(torch.zeros(2, 3, 5))
    with pytest.raises(ShapeError, match="cls_index"):
        net(torch.zeros(2, 3, 4))
    with pytest.raises(NonFiniteError, match="X"):
        ReferenceTransformer(4)(torch.full((1, 3, 4), float("nan")))
    with pytest.raises(ShapeError, match="positions"):
        ReferenceTransformer(4).predict_at(torch.zeros(2, 3, 4), [0, 9])


@pytest.mark.gpu
def test_cuda_matches_cpu():
    cpu = _perturbed(n_layers=2, n_heads=2, bias=True, row_norm=True)
    gpu = ReferenceTransformer(5, n_layers=2, n_heads=2, bias=True, row_norm=True, device="cuda")
    gpu.load_state_dict(cpu.state_dict())
    X = torch.randn(3, 17, 5, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(gpu(X.cuda()).cpu(), cpu(X), atol=1e-10)
    n_cpu, n_gpu = cpu.weight_norms(), gpu.weight_norms()
    assert torch.allclose(n_gpu["QK"]["l11"].cpu(), n_cpu["QK"]["l11"])
