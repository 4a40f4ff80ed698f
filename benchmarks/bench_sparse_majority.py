"""Training-step speed of the sparse-majority forward pass: the structured ``cls_logits`` against the
previous implementation (softmax over the full ``(K, n, H, T+1)`` score tensor), timed in the same run.

A step is one forward and backward pass of ``K`` stacked one-layer nets on ``n`` full-batch training
sequences, float32, one torch thread. Both implementations are checked to agree (float64, relative
1e-10) before timing. Prints a table, or ``--json`` one object per ``T`` with ``ratio`` = baseline
seconds per step / new seconds per step. Results go to ``RESULTS.md``.

    python benchmarks/bench_sparse_majority.py [--seq-lens 64,256,1024] [--models 5] [--n 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from genbound.experiments import sparse_majority as sm


def baseline_cls_logits(
    params: dict[str, torch.Tensor],
    bits: torch.Tensor,
    embeddings: torch.Tensor,
    encoding: torch.Tensor,
    score_scale: float,
) -> torch.Tensor:
    """Logits ``(K, n, 2)`` of ``K`` stacked one-layer nets on their own bit sequences, exactly.

    ``bits`` ``(K, n, T)`` (0/1), ``embeddings`` ``(K, 3, d)``, ``encoding`` ``(T + 1, d)``. Equals
    ``ReferenceTransformer.forward(task.embed(bits))`` for each model, computed from the structure
    of the input: the ``[CLS]`` query ``q`` is the same for every sequence, the score of row ``t`` is
    ``u . x_t`` with ``u = s W_K q`` (the key bias adds a constant that softmax ignores), ``u . x_t =
    u . e_{b_t} + u . PE_t``, and the attention-weighted input is ``m_0 e_0 + m_1 e_1 + a_T e_cls + a PE``.
    """
    P = params
    dt = P["W_Q"].dtype
    b = bits.to(dt)
    E = embeddings.to(dt)
    pe = encoding.to(dt)
    T = b.shape[-1]
    x_cls = E[:, 2] + pe[-1]  # (K, d)
    q = torch.einsum("kd,khde->khe", x_cls, P["W_Q"]) + P["b_Q"]  # (K, H, dh)
    u = score_scale * torch.einsum("khe,khde->khd", q, P["W_K"])  # (K, H, d)
    eu = torch.einsum("kjd,khd->khj", E, u)  # (K, H, 3)
    pu = torch.einsum("td,khd->kht", pe, u)  # (K, H, T+1)
    s_tok = (
        eu[:, None, :, 0, None]
        + b[:, :, None, :] * (eu[:, :, 1] - eu[:, :, 0])[:, None, :, None]
        + pu[:, None, :, :T]
    )  # (K, n, H, T)
    s_cls = (eu[:, :, 2] + pu[:, :, T])[:, None, :, None].expand(-1, b.shape[1], -1, -1)
    A = torch.softmax(torch.cat([s_tok, s_cls], dim=-1), dim=-1)  # (K, n, H, T+1)
    a_tok = A[..., :T]
    m1 = torch.einsum("knht,knt->knh", a_tok, b)
    m0 = a_tok.sum(-1) - m1
    xbar = (
        m0[..., None] * E[:, None, None, 0]
        + m1[..., None] * E[:, None, None, 1]
        + A[..., T, None] * E[:, None, None, 2]
        + torch.einsum("knht,td->knhd", A, pe)
    )
    v = torch.einsum("knhd,khde->knhe", xbar, P["W_V"]) + P["b_V"][:, None]
    o = torch.einsum("knhe,khef->knf", v, P["W_O"]) + P["b_O"][:, None]
    y = torch.einsum("knf,kfg->kng", torch.relu(o), P["W_C"]) + P["b_C"][:, None]
    return torch.einsum("kng,kgo->kno", y, P["w"]) + P["b_w"][:, None]


def _setup(T, K, n, dtype):
    tasks = [sm.make_task(T, seed=s) for s in range(K)]
    g = torch.Generator().manual_seed(0)
    bits = torch.stack([t.sample(n, g)[0] for t in tasks])
    labels = torch.stack([t.label(b) for t, b in zip(tasks, bits)])
    E = torch.stack([t.embeddings for t in tasks])
    nets = [sm.build_model(seed=s) for s in range(K)]
    with torch.no_grad():  # away from init: nonzero biases
        for net in nets:
            for p in net.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    P = sm.stack_parameters(nets, dtype=dtype)
    return P, bits, labels, E, tasks[0].encoding


def _step_seconds(fn, P, bits, labels, E, pe, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        loss = sm.bce_one_hot(fn(P, bits, E, pe, 0.125), labels).sum()
        torch.autograd.grad(loss, list(P.values()), allow_unused=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(T: int, K: int, n: int, reps: int) -> dict:
    P64, bits, labels, E, pe = _setup(T, K, n, torch.float64)
    with torch.no_grad():
        new, old = (
            sm.cls_logits(P64, bits, E, pe, 0.125),
            baseline_cls_logits(P64, bits, E, pe, 0.125),
        )
    rel = float((new - old).abs().max() / old.abs().max())
    if rel > 1e-10:
        raise SystemExit(f"implementations disagree at T={T}: relative difference {rel:.2e}")
    P = {k: v.detach().float().requires_grad_(True) for k, v in P64.items()}
    _step_seconds(sm.cls_logits, P, bits, labels, E, pe, 2)  # warm-up
    _step_seconds(baseline_cls_logits, P, bits, labels, E, pe, 2)
    t_new, t_old = [], []
    for _ in range(3):  # interleave against drift
        t_old.append(_step_seconds(baseline_cls_logits, P, bits, labels, E, pe, reps))
        t_new.append(_step_seconds(sm.cls_logits, P, bits, labels, E, pe, reps))
    so, sn = statistics.median(t_old), statistics.median(t_new)
    return {
        "seq_len": T,
        "models": K,
        "n": n,
        "baseline_ms": 1e3 * so,
        "new_ms": 1e3 * sn,
        "ratio": so / sn,
        "max_rel_diff_float64": rel,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq-lens", default="64,256,1024")
    ap.add_argument("--models", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = [bench(int(t), a.models, a.n, a.reps) for t in a.seq_lens.split(",")]
    if a.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(f"{'T':>6} {'K':>3} {'n':>5} {'baseline ms':>12} {'new ms':>8} {'ratio':>6}")
        for r in rows:
            print(
                f"{r['seq_len']:>6} {r['models']:>3} {r['n']:>5} {r['baseline_ms']:>12.2f} "
                f"{r['new_ms']:>8.2f} {r['ratio']:>6.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
