"""One forward pass of the reference transformer (issue 17): the stacked modes of
``ReferenceTransformer`` equal the plain forward on random models of every depth, and the structured
[CLS] mode that trains the sparse-majority experiment is bit-identical to the code it replaced."""

import re

import pytest
import torch

from genbound.experiments import predict_gap as pg
from genbound.experiments import sparse_majority as sm
from genbound.nets import ACTIVATIONS, ReferenceTransformer, row_projection, stack_parameters


def _frozen_cls_logits(
    params: dict[str, torch.Tensor],
    bits: torch.Tensor,
    embeddings: torch.Tensor,
    encoding: torch.Tensor,
    score_scale: float,
) -> torch.Tensor:
    """``sparse_majority.cls_logits`` as it was before it moved into genbound.nets (commit 05fa97e),
    frozen here as the reference of the bitwise check."""
    P = params
    dt = P["W_Q"].dtype
    b = bits.to(dt)
    E = embeddings.to(dt)
    pe = encoding.to(dt)
    K, n, T = b.shape
    x_cls = E[:, 2] + pe[-1]  # (K, d)
    q = torch.einsum("kd,khde->khe", x_cls, P["W_Q"]) + P["b_Q"]  # (K, H, dh)
    u = score_scale * torch.einsum("khe,khde->khd", q, P["W_K"])  # (K, H, d)
    eu = torch.einsum("kjd,khd->khj", E, u)  # (K, H, 3)
    pu = torch.einsum("td,khd->kht", pe, u)  # (K, H, T+1)
    delta = eu[..., 1] - eu[..., 0]  # (K, H)
    dplus = torch.clamp(delta, min=0.0)
    s_cls = eu[..., 2] + pu[..., T]  # (K, H)
    top = pu[..., :T].max(-1).values + eu[..., 0] + dplus
    shift = torch.maximum(top, s_cls).detach()
    w = torch.exp(pu[..., :T] + (eu[..., 0] + dplus - shift)[..., None])  # (K, H, T)
    c = torch.exp(s_cls - shift)  # (K, H)
    a0, a1 = torch.exp(-dplus), torch.exp(delta - dplus)  # (K, H)
    # sum_t w_t alpha_{b_t} x_t = alpha_0 sum_t (1 - b_t) w_t (e_0 + PE_t) + alpha_1 sum_t b_t w_t (e_1 + PE_t):
    # two sums of nonnegative weights, no cancellation (the normaliser rides along as a last column)
    H, d = w.shape[1], pe.shape[1]
    cols = [
        torch.cat([w[..., None] * (E[:, None, j, None, :] + pe[:T]), w[..., None]], dim=-1)
        for j in (0, 1)
    ]  # 2 x (K, H, T, d+1)
    flat = [cj.permute(0, 2, 1, 3).reshape(K, T, H * (d + 1)) for cj in cols]
    s0 = torch.bmm(1 - b, flat[0]).view(K, n, H, d + 1)  # tokens equal to 0
    s1 = torch.bmm(b, flat[1]).view(K, n, H, d + 1)  # tokens equal to 1
    x_cls_h = c[..., None] * (E[:, None, 2] + pe[T])  # (K, H, d)
    num = a0[:, None, :, None] * s0 + a1[:, None, :, None] * s1  # (K, n, H, d+1)
    Z = num[..., d] + c[:, None]  # (K, n, H)
    xbar = (num[..., :d] + x_cls_h[:, None]) / Z[..., None]  # (K, n, H, d)
    v = torch.einsum("knhd,khde->knhe", xbar, P["W_V"]) + P["b_V"][:, None]
    o = torch.einsum("knhe,khef->knf", v, P["W_O"]) + P["b_O"][:, None]
    y = torch.einsum("knf,kfg->kng", torch.relu(o), P["W_C"]) + P["b_C"][:, None]
    return torch.einsum("kng,kgo->kno", y, P["w"]) + P["b_w"][:, None]


def _random_model(seed, **kw):
    net = ReferenceTransformer(kw.pop("d", 6), seed=seed, **kw)
    g = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():  # off the init: nonzero biases, larger maps
        for p in net.parameters():
            p.add_(0.4 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return net


def _naive_forward(net, X):
    """The module docstring's formula, row by row and head by head (float64, no einsum, no stacking)."""
    sigma = ACTIVATIONS[net.activation][0]
    outs = []
    for x in X:
        Z = x
        for lay in net.layers:
            rows = []
            for i in range(Z.shape[0]):
                u = torch.zeros(net.d, dtype=Z.dtype)
                for h in range(net.n_heads):
                    q, K, V = Z[i] @ lay.W_Q[h], Z @ lay.W_K[h], Z @ lay.W_V[h]
                    if net.bias:
                        q, K, V = q + lay.b_Q[h], K + lay.b_K[h], V + lay.b_V[h]
                    a = torch.softmax(net.score_scale * (K @ q), dim=0)
                    u = u + (a @ V) @ lay.W_O[h]
                if net.bias:
                    u = u + lay.b_O
                y = sigma(u)
                if net.dense:
                    y = y @ lay.W_C + (lay.b_C if net.bias else 0)
                rows.append(row_projection(y) if net.row_norm else y)
            Z = torch.stack(rows)
        z = Z[net.cls_index]
        outs.append(z @ net.w + (net.b_w if net.bias else 0))
    return torch.stack(outs)


ARCHS = [
    dict(n_layers=1, n_heads=2, bias=True),
    dict(n_layers=2, n_heads=2, bias=True, row_norm=True, out_dim=2),
    dict(n_layers=3, n_heads=3, d_head=2, bias=False, activation="tanh"),
    dict(n_layers=2, n_heads=1, dense=False, bias=True, activation="leaky_relu", cls_index=0),
    dict(n_layers=4, n_heads=2, bias=True, out_dim=3, score_scale=0.7),
]


def _rel(a, b):
    return float((a - b).abs().max()) / max(float(b.abs().max()), 1e-300)


@pytest.mark.parametrize("kw", ARCHS)
def test_plain_forward_is_the_formula(kw):
    net = _random_model(0, **dict(kw))
    X = torch.randn(3, 7, net.d, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert _rel(net(X), _naive_forward(net, X)) < 1e-12


@pytest.mark.parametrize("kw", ARCHS)
def test_stacked_mode_equals_forward_model_by_model(kw):
    nets = [_random_model(s, **dict(kw)) for s in (1, 2, 3)]
    g = torch.Generator().manual_seed(5)
    X = torch.randn(3, 4, 9, nets[0].d, dtype=torch.float64, generator=g)
    P = stack_parameters(nets)
    with torch.no_grad():
        z = nets[0].forward_stacked(P, X)
        rows = nets[0].forward_stacked(P, X, all_rows=True)
        for k in range(3):
            assert _rel(z[k], nets[k](X[k])) < 1e-12
            assert _rel(rows[k], nets[k].forward_rows(X[k])) < 1e-12


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize(
    "variant",
    [
        dict(bias=True),
        dict(bias=False, activation="tanh"),
        dict(bias=True, row_norm=True, out_dim=2),
    ],
)
def test_structured_token_mode_equals_forward_at_every_depth(depth, variant):
    """Inputs e_{b_t} + PE_t with [CLS] last: the structured mode equals the plain forward (float64,
    relative 1e-12) on random models of depth 1-3."""
    d, T = 8, 13
    g = torch.Generator().manual_seed(depth)
    nets = [
        _random_model(10 * depth + s, d=d, n_layers=depth, n_heads=2, **dict(variant))
        for s in (0, 1)
    ]
    tokens = torch.randn(2, 3, d, dtype=torch.float64, generator=g)
    enc = sm.sinusoidal_encoding(T + 1, d)
    bits = torch.randint(0, 2, (2, 6, T), generator=g, dtype=torch.uint8)
    P = stack_parameters(nets)
    with torch.no_grad():
        z = nets[0].forward_stacked_tokens(P, bits, tokens, enc)
        for k in range(2):
            X = torch.cat([tokens[k][bits[k].long()], tokens[k][2].expand(6, 1, d)], dim=1) + enc
            assert _rel(z[k], nets[k](X)) < 1e-12


def _sm_stack(dtype, K=3, T=23, n=17, scale=0.3, seed=0):
    g = torch.Generator().manual_seed(seed)
    tasks = [sm.make_task(T, seed=s) for s in range(K)]
    nets = [sm.build_model(seed=s) for s in range(K)]
    with torch.no_grad():
        for net in nets:
            for p in net.parameters():
                p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
    bits = torch.stack([t.sample(n, g)[0] for t in tasks])
    P = sm.stack_parameters(nets, dtype=dtype)
    E = torch.stack([t.embeddings for t in tasks]).to(dtype)
    return P, bits, E, tasks[0].encoding.to(dtype), nets


@pytest.mark.parametrize("seed, scale", [(0, 0.05), (1, 0.3), (2, 1.0)])
def test_structured_mode_is_bit_identical_to_the_old_cls_logits(seed, scale):
    """float32 stacked parameters, as in training: logits and gradients equal bit for bit."""
    P, bits, E, pe, _ = _sm_stack(torch.float32, seed=seed, scale=scale)
    y = torch.randint(0, 2, bits.shape[:2], generator=torch.Generator().manual_seed(seed))
    new = sm.cls_logits(P, bits, E, pe, 0.125)
    old = _frozen_cls_logits(P, bits, E, pe, 0.125)
    assert new.dtype == torch.float32 and torch.equal(new, old)
    g_new = torch.autograd.grad(sm.bce_one_hot(new, y).sum(), list(P.values()), allow_unused=True)
    g_old = torch.autograd.grad(sm.bce_one_hot(old, y).sum(), list(P.values()), allow_unused=True)
    assert [a is None for a in g_new] == [b is None for b in g_old]  # the key bias b_K: unused
    assert sum(a is not None for a in g_new) == 11
    assert all(a is None or torch.equal(a, b) for a, b in zip(g_new, g_old))


def test_structured_mode_on_the_experiments_models_equals_forward():
    P, bits, E, pe, nets = _sm_stack(torch.float64)
    z = sm.cls_logits(P, bits, E, pe, nets[0].score_scale)
    for k, net in enumerate(nets):
        X = torch.cat([E[k][bits[k].long()], E[k][2].expand(bits.shape[1], 1, -1)], dim=1) + pe
        with torch.no_grad():
            assert _rel(z[k], net(X)) < 1e-12


def test_predict_gap_trains_with_the_stacked_mode():
    """Part V's models are ReferenceTransformer modules; its stacks run their forward_stacked."""
    import inspect

    from genbound.experiments.predict_gap import training

    nets = [pg.build_model(16, 10, depth=2, seed=s) for s in (0, 1)]
    X = torch.randn(2, 5, 9, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    P = stack_parameters(nets)
    with torch.no_grad():
        z = nets[0].forward_stacked(P, X)
        assert all(torch.allclose(z[k], nets[k](X[k]), rtol=1e-12, atol=1e-12) for k in range(2))
    assert "arch.forward_stacked" in inspect.getsource(
        training.train_stack
    )  # train_setting trains through it
    assert "train_stack(" in inspect.getsource(training.train_setting)


#: Experiments allowed attention code of their own, each with the reason (also in its docstring). None:
#: Part VII's language model (token embedding, causal mask, a prediction at every position, which the
#: reference forward pass does not provide) is a reference net of the ground floor, genbound/char_lm/.
OWN_ATTENTION: set[str] = set()
#: Attention code: a softmax (the log-softmax of output log-probabilities is not attention) or torch's
#: fused attention.
ATTENTION = re.compile(r"(?<!log_)softmax|scaled_dot_product_attention")


def test_no_other_forward_pass_in_the_experiments():
    """The experiments hold no attention code of their own (a softmax or torch's fused attention under
    genbound/experiments/), except the modules of :data:`OWN_ATTENTION`."""
    import pathlib

    root = pathlib.Path(sm.__file__).resolve().parents[1]
    hits = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if ATTENTION.search(p.read_text())
    ]
    assert sorted(hits) == sorted(OWN_ATTENTION)
    assert ATTENTION.search("a = torch.softmax(s, -1)") and not ATTENTION.search("F.log_softmax(z)")
    assert ATTENTION.search("F.scaled_dot_product_attention(q, k, v)")


def test_no_dudley_call_in_the_experiments():
    """The experiments read bound results; they never call Dudley's integral nor read its result."""
    import pathlib
    import re

    root = pathlib.Path(sm.__file__).resolve().parents[1]
    pattern = re.compile(r"\.dudley\b|\bdudley\w*\s*\(|import[^\n]*\bdudley", re.IGNORECASE)
    hits = [str(p.relative_to(root)) for p in root.rglob("*.py") if pattern.search(p.read_text())]
    assert hits == []
    assert pattern.search("x = r.dudley.value") and pattern.search("dudley_bound(c, m=3)")
