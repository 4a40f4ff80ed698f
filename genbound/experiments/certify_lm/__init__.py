"""Part VII: a compression (Occam) certificate of character-level transformers trained here on the
complete works of Shakespeare (:ref:`ch-compression`).

For one model size and seed (:func:`certify_size`):

1. **Data**: the corpus (``certify_lm.data``) read with the vocabulary of ``cfg.vocab`` (the 128 ASCII
   codes, fixed before the text), cut into documents of ``doc_len`` characters, split by a seeded
   permutation fixed before training into pilot (set aside), training and held-out documents.
2. **Training** (``certify_lm.train``): a ``CharTransformer`` (``genbound.char_lm``) of the size's width
   and depth, quantization-aware at ``cfg.qat_bits`` bits over the last steps.
3. **Choice** of the quantization level ``bits`` and the smoothing weight ``alpha`` on the first
   ``select_docs`` training documents: the pair with the least token-level empirical-Bernstein bound
   estimate (each pair is named by the code, so the choice is paid for whatever it looks at; the first
   run used the Azuma bound's estimate).
4. **Certificate** (:mod:`genbound.bounds.compression`): the code length of the quantized model, its
   smoothed log-loss (sum and sum of squares) and top-1 errors on all training documents, the
   document-level and token-level (Azuma) bounds on both at ``delta / N_CERTIFICATES``; beside them
   the unquantized model's losses on the first ``unquant_docs`` training documents (for the smoothing
   and quantization costs) and the held-out documents' losses. The chapter computes the other
   certificates from these sums (:func:`genbound.bounds.compression.lm_certificates`).
"""

from __future__ import annotations

import math
import time

from ...errors import ParameterError
from ...bounds import compression as cb
from .config import N_CERTIFICATES, SIZE_STEPS, SIZES, CertifyLMConfig
from .data import Corpus, corpus_of, load_corpus, split_documents
from ...char_lm import document_losses, n_params, quantize, symbol_counts
from .train import train_model

__all__ = ["CertifyLMConfig", "SIZES", "SIZE_STEPS", "certify_size", "load_corpus"]


def _choose(model, select, cfg, grid_sizes, m, M):
    """``(bits, alpha)`` with the least token-level empirical-Bernstein bound estimate: the bound at the
    selection documents' mean and second moment, as if over ``M`` characters (every pair is named by
    the code, so the choice is paid for whatever it looks at)."""
    best = None
    for bits in cfg.bits_grid:
        q, syms, _ = quantize(model, int(bits))
        code = cb.code_length(symbol_counts(syms, int(bits)), len(syms), grid_sizes).total
        ev = document_losses(q, select, cfg.alpha_grid, batch=int(cfg.eval_batch))
        for a, s in ev["smoothed"].items():
            lo, w = cb.smoothed_range(model.V, a)
            mean = min(max(s / ev["chars"], lo), lo + w)
            sq = ev["smoothed_sq"][a] / ev["chars"] * M
            est = cb.token_bound_bernstein(mean, sq, lo, w, M, code, cfg.delta)
            if best is None or est < best[0]:
                best = (est, int(bits), float(a))
    return best[1], best[2]


def certify_size(
    size: str, seed: int, cfg: CertifyLMConfig, corpus: Corpus | None = None, progress=None
) -> dict:
    """Train, quantize and certify one model; the row of ``certify_lm.files.SCHEMA``."""
    cfg = cfg.validated()
    corpus = corpus or corpus_of(cfg)
    if cfg.vocab == "ascii" and corpus.V != 128:
        raise ParameterError(
            f"vocab 'ascii' needs a corpus read with the 128 ASCII codes, got V={corpus.V}"
        )
    train, held = split_documents(
        corpus, cfg.doc_len, cfg.train_fraction, cfg.split_seed, cfg.pilot_docs
    )
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
        log_every=max(1, steps // 10),
        qat_bits=int(cfg.qat_bits),
        qat_start=float(cfg.qat_start),
    )
    t0 = time.perf_counter()
    grid_sizes = (len(SIZES), len(cfg.bits_grid), len(cfg.alpha_grid))
    m, M = train.shape[0], int(train.size)
    bits, alpha = _choose(model, train[: cfg.select_docs], cfg, grid_sizes, m, M)
    q, syms, _ = quantize(model, bits)
    counts = symbol_counts(syms, bits)
    code = cb.code_length(counts, len(syms), grid_sizes)
    eb = int(cfg.eval_batch)
    sub = train[: int(cfg.unquant_docs)] if cfg.unquant_docs else train
    full_tr = document_losses(model, sub, [alpha], batch=eb)
    q_sub = document_losses(q, sub, [alpha], batch=eb)
    q_tr = document_losses(q, train, [alpha], batch=eb)
    full_ho = document_losses(model, held, [alpha], batch=eb)
    q_ho = document_losses(q, held, [alpha], batch=eb)
    emp = q_tr["smoothed"][alpha] / M
    delta_each = cfg.delta / N_CERTIFICATES
    b = cb.lm_certificates(
        emp,
        q_tr["smoothed_sq"][alpha],
        q_tr["errors"],
        corpus.V,
        alpha,
        m,
        M,
        code.total,
        delta_each,
    )
    n_sub = int(sub.size)
    raw, smooth = full_tr["raw"] / n_sub, full_tr["smoothed"][alpha] / n_sub
    curve = info["curve"]
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
        "quant_cost": q_sub["smoothed"][alpha] / n_sub - smooth,
        "chance_bits": math.log2(corpus.V),
        "token_bound_bits": b["token"].bound,
        "doc_bound_bits": b["document"].bound,
        "token_error_bound": b["token_err_azuma"].bound,
        "doc_error_bound": b["doc_err"].bound,
        "delta": cfg.delta,
        "vocab": cfg.vocab,
        "pilot_docs": int(cfg.pilot_docs),
        "qat_bits": int(cfg.qat_bits),
        "unquant_chars": n_sub,
        "train_last_bits": float(curve[-1][1]) if curve else float("nan"),
        "train_quant_sumsq": q_tr["smoothed_sq"][alpha],
        "heldout_quant_sum": q_ho["smoothed"][alpha],
        "heldout_quant_sumsq": q_ho["smoothed_sq"][alpha],
        "heldout_docs": int(held.shape[0]),
        "delta_each": delta_each,
    }
