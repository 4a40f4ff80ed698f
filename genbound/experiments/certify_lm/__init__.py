"""Part VII: a compression (Occam) certificate of character-level transformers trained here on the
complete works of Shakespeare (:ref:`ch-compression`).

For one model size and seed (:func:`certify_size`):

1. **Data**: the corpus (``certify_lm.data``), cut into documents of ``doc_len`` characters, split by a
   seeded permutation fixed before training into training and held-out documents.
2. **Training** (``certify_lm.train``): a ``CharTransformer`` (``certify_lm.model``) of the size's width and depth.
3. **Choice** of the quantization level ``bits`` and the smoothing weight ``alpha`` on the first
   ``select_docs`` training documents: the pair with the least token-level bound estimate (each pair is
   named by the code, so the choice is paid for whatever it looks at).
4. **Certificate** (:mod:`genbound.bounds.compression`): the code length of the quantized model, its
   smoothed log-loss and top-1 errors on all training documents, the document-level and token-level
   bounds on both; beside them the unquantized model's losses (for the smoothing and quantization
   costs) and the held-out documents' losses.
"""

from __future__ import annotations

import math
import time


from ...bounds import compression as cb
from .config import SIZE_STEPS, SIZES, CertifyLMConfig
from .data import Corpus, load_corpus, split_documents
from ...char_lm import document_losses, n_params, quantize, symbol_counts
from .train import train_model

__all__ = ["CertifyLMConfig", "SIZES", "SIZE_STEPS", "certify_size", "load_corpus"]


def _choose(model, select, cfg, grid_sizes, m, M):
    """``(bits, alpha)`` with the least token-level bound estimate on the selection documents."""
    best = None
    for bits in cfg.bits_grid:
        q, syms, _ = quantize(model, int(bits))
        code = cb.code_length(symbol_counts(syms, int(bits)), len(syms), grid_sizes).total
        ev = document_losses(q, select, cfg.alpha_grid)
        for a, s in ev["smoothed"].items():
            lo, w = cb.smoothed_range(model.V, a)
            est = s / ev["chars"] + w * math.sqrt(code * math.log(2) / (2 * M))
            if best is None or est < best[0]:
                best = (est, int(bits), float(a))
    return best[1], best[2]


def certify_size(
    size: str, seed: int, cfg: CertifyLMConfig, corpus: Corpus | None = None, progress=None
) -> dict:
    """Train, quantize and certify one model; the row of ``certify_lm.files.SCHEMA``."""
    cfg = cfg.validated()
    corpus = corpus or load_corpus(cfg.corpus)
    train, held = split_documents(corpus, cfg.doc_len, cfg.train_fraction, cfg.split_seed)
    d, layers = SIZES[size]
    steps = cfg.steps_of(size)
    model, info = train_model(
        train,
        corpus.V,
        d,
        layers,
        steps=steps,
        batch=cfg.batch,
        lr=cfg.lr,
        seed=seed,
        progress=progress,
        log_every=max(1, steps // 10) if progress else 0,
    )
    t0 = time.perf_counter()
    grid_sizes = (len(SIZES), len(cfg.bits_grid), len(cfg.alpha_grid))
    m, M = train.shape[0], int(train.size)
    bits, alpha = _choose(model, train[: cfg.select_docs], cfg, grid_sizes, m, M)
    q, syms, _ = quantize(model, bits)
    counts = symbol_counts(syms, bits)
    code = cb.code_length(counts, len(syms), grid_sizes)
    full_tr = document_losses(model, train, [alpha])
    q_tr = document_losses(q, train, [alpha])
    full_ho = document_losses(model, held, [alpha])
    q_ho = document_losses(q, held, [alpha])
    emp = q_tr["smoothed"][alpha] / M
    b = cb.lm_certificates(emp, q_tr["errors"], corpus.V, alpha, m, M, code.total, cfg.delta)
    raw, smooth = full_tr["raw"] / M, full_tr["smoothed"][alpha] / M
    return {
        "size": size,
        "seed": int(seed),
        "d": d,
        "layers": layers,
        "n_params": n_params(model),
        "n_tensors": len(syms),
        "steps": steps,
        "train_seconds": info["seconds"],
        "eval_seconds": time.perf_counter() - t0,
        "V": corpus.V,
        "doc_len": cfg.doc_len,
        "m_docs": m,
        "M_chars": M,
        "heldout_chars": int(held.size),
        "bits": bits,
        "alpha": alpha,
        "grid_sizes": ";".join(str(g) for g in grid_sizes),
        "symbol_counts": ";".join(str(int(c)) for c in counts),
        "header_bits": code.header,
        "scale_bits": code.scales,
        "counts_bits": code.counts,
        "symbol_bits": code.symbols,
        "code_bits": code.total,
        "lo": b["lo"],
        "width": b["width"],
        "train_raw_bits": raw,
        "train_smooth_bits": smooth,
        "train_quant_sum": q_tr["smoothed"][alpha],
        "train_quant_bits": emp,
        "train_errors": q_tr["errors"],
        "heldout_raw_bits": full_ho["raw"] / held.size,
        "heldout_quant_bits": q_ho["smoothed"][alpha] / held.size,
        "heldout_errors": q_ho["errors"],
        "smoothing_cost": smooth - raw,
        "quant_cost": emp - smooth,
        "chance_bits": math.log2(corpus.V),
        "token_bound_bits": b["token"].bound,
        "doc_bound_bits": b["doc"].bound,
        "token_error_bound": b["token_err"].bound,
        "doc_error_bound": b["doc_err"].bound,
        "delta": cfg.delta,
    }
