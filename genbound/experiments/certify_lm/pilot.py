"""The pilot that sized the rerun (genbound/data/certify_lm.md): on the pilot documents only.

``python -m genbound.experiments.certify_lm.pilot SIZE STEPS QAT_BITS QAT_START`` trains one model on
the first 3,200 of the ``pilot_docs`` documents set aside by the split, evaluates it quantized at 3, 4
and 6 bits on the other pilot documents, and prints one JSON line: seconds per step, the training
curve, and per bits the code length, the mean and standard deviation of the smoothed loss (alpha 0.05)
and an estimate of the Azuma and empirical-Bernstein certificates as if over the full training set.
The training documents are never read.
"""

from __future__ import annotations

import json
import math
import sys

import torch

from ...bounds import compression as cb
from .config import SIZES, CertifyLMConfig
from .data import corpus_of, pilot_documents
from ...char_lm import document_losses, n_params, quantize, symbol_counts
from .train import train_model

__all__ = ["run_pilot"]

#: The number of characters the estimates pretend to have (about the rerun's training set).
M_ESTIMATE = 4_300_000


def run_pilot(size: str, steps: int, qat_bits: int, qat_start: float, bits=(3, 4, 6)) -> dict:
    """One pilot model (see the module)."""
    torch.set_num_threads(1)
    cfg = CertifyLMConfig()
    corpus = corpus_of(cfg)
    pil = pilot_documents(corpus, cfg.doc_len, cfg.split_seed, cfg.pilot_docs)
    tr, ev = pil[:3200], pil[3200:]
    d, layers = SIZES[size]
    model, info = train_model(
        tr,
        corpus.V,
        d,
        layers,
        steps=steps,
        batch=cfg.batch,
        lr=cfg.lr,
        seed=0,
        log_every=max(1, steps // 5),
        qat_bits=qat_bits,
        qat_start=qat_start,
    )
    out = {
        "size": size,
        "steps": steps,
        "qat": qat_bits,
        "qat_start": qat_start,
        "n": n_params(model),
        "s_per_step": info["seconds"] / steps,
        "curve": info["curve"],
    }
    a = 0.05
    lo, w = cb.smoothed_range(corpus.V, a)
    for b in bits:
        q, syms, _ = quantize(model, b)
        C = cb.code_length(symbol_counts(syms, b), len(syms), (len(SIZES), 4, 5)).total
        r = document_losses(q, ev, [a])
        mu = r["smoothed"][a] / r["chars"]
        var = r["smoothed_sq"][a] / r["chars"] - mu * mu
        L = C * math.log(2) + 5
        out[f"bits{b}"] = {
            "C": round(C),
            "mu": round(mu, 3),
            "sd": round(math.sqrt(max(var, 0)), 3),
            "azuma": round(mu + w * math.sqrt(L / (2 * M_ESTIMATE)), 3),
            "eb": round(mu + math.sqrt(2 * var * L / M_ESTIMATE) + w * L / M_ESTIMATE, 3),
        }
    return out


if __name__ == "__main__":  # pragma: no cover
    s, n, qb, qs = sys.argv[1:5]
    print(json.dumps(run_pilot(s, int(n), int(qb), float(qs))), flush=True)
