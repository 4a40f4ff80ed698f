"""Claims of :ref:`ch-compression` (Part VII): the smoothed log-loss's range and the smoothing's cost,
the quantization's rounding, the code length, the token-level (Azuma, kl form, empirical Bernstein) and
document-level (Maurer-kl) Occam bounds, the test-set bound, the n-gram table's code and the top-1 error
bound.

Every check evaluates the functions that produce the chapter's numbers (looked up on their modules at
call time, so that a mutant's patch is seen) against references computed here independently: sympy's
derived expressions (:mod:`genbound.symbolic.compression`), explicit Elias-delta code words, numpy's
float64 log-probabilities and scipy's root finder for the kl inverse. Equalities are checked from both
sides (``max(a/b, b/a)``).

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import functools
import math
import random

import mpmath
import numpy as np
import sympy as sp
import torch

from . import register
from ._core import AllOf, Claim, FunctionCheck, replaced
from ..bounds import compression as cb
from ..bounds import ngram as ng
from ..char_lm import evaluate as ev
from ..char_lm.model import CharTransformer, inputs_of
from ..symbolic import compression as sc
from ._part7 import DOC_SHARED_MUTANT, TOKEN_SHARED_MUTANTS, azuma_coverage, kraft_coverage
from ._part7 import azuma_error_width as _azuma_error_width, ngram_cert_check
from ._part7 import doc_mutant as _doc_mutant, kl_inv as _kl_inv, swap_range as _swap_range
from ._part7 import token_mutant as _token_mutant, two_sided as _two_sided
from ._part7_maurer import maurer_coverage

CH = "book/part7/compression.md"
_COV = "genbound.bounds.compression."
_EV = "genbound.char_lm.evaluate."


def _sym(fn, *names):
    return sp.lambdify([getattr(sc, n) for n in names], fn, "mpmath")


# ---------------------------------------------------------------------------------------------------
# lem-lm-smoothed-range
# ---------------------------------------------------------------------------------------------------
def _range_check(seed: int) -> tuple[float, int]:
    """``smoothed_range(V, alpha)`` against sympy's ``(lo, width)`` (two-sided), and the smoothed loss of
    random and extreme probabilities inside ``[lo, lo + width]``."""
    rng = random.Random(seed)
    lo_s, w_s = sc.smoothed_range()
    lo_f, w_f = _sym(lo_s, "alpha", "V"), _sym(w_s, "alpha", "V")
    worst, trials = 0.0, 0
    for _ in range(200):
        V, a = rng.randint(2, 5000), rng.choice([10 ** rng.uniform(-6, -0.01), rng.uniform(0, 1)])
        a = min(max(a, 1e-9), 1 - 1e-9)
        lo, width = cb.smoothed_range(V, a)
        worst = max(worst, _two_sided(width, float(w_f(a, V))))
        worst = max(worst, _two_sided(lo + 1.0, float(lo_f(a, V)) + 1.0))
        for pr in (0.0, 1.0, rng.random()):
            loss = -math.log2((1 - a) * pr + a / V)
            worst = max(worst, (lo - loss) / 1e-9 if loss < lo else 0.0)
            worst = max(worst, (loss - lo - width) / 1e-9 if loss > lo + width else 0.0)
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-lm-smoothed-range",
        statement="-log2((1 - alpha) p + alpha/V) lies in [lo, lo + width] with lo = -log2(1 - alpha + "
        "alpha/V) and width = log2(1 + (1 - alpha) V / alpha)",
        chapter=CH,
        provenance="paper",
        numeric=FunctionCheck(_range_check),
        symbolic=lambda: sc.verify_smoothed_loss_decreasing() and sc.verify_smoothed_width(),
        covers=(_COV + "smoothed_range",),
        mutants=(
            replaced(
                cb,
                "smoothed_range",
                lambda old: lambda V, a: (old(V, a)[0], math.log2(1 + V / a)),
                name="width-without-1-alpha",
                what="width log2(1 + V / alpha): the factor 1 - alpha dropped",
            ),
            replaced(
                cb,
                "smoothed_range",
                lambda old: lambda V, a: (0.0, math.log2(V / a)),
                name="lo-zero",
                what="the range [0, log2(V / alpha)] (valid, but not the stated one)",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-lm-smoothing-cost
# ---------------------------------------------------------------------------------------------------
def _small_model(seed: int, V: int = 7, d: int = 16, L: int = 6) -> CharTransformer:
    torch.manual_seed(seed)
    model = CharTransformer(V, d, 1, L)
    with torch.no_grad():
        for prm in model.parameters():
            prm.add_(torch.randn_like(prm) * 0.5)
    return model.eval()


def _cost_check(seed: int) -> tuple[float, int]:
    """``document_losses``'s sums against float64 numpy from the model's logits (two-sided), the
    smoothing's cost ``smoothed - raw`` at most ``-log2(1 - alpha)`` per character, errors counted."""
    rng = np.random.default_rng(seed)
    worst, trials = 0.0, 0
    for k in range(6):
        V, L = int(rng.integers(2, 12)), int(rng.integers(2, 9))
        model = _small_model(seed * 10 + k, V=V, L=L)
        docs = rng.integers(0, V, size=(int(rng.integers(1, 20)), L)).astype(np.uint8)
        alphas = [float(10 ** rng.uniform(-4, -0.1)) for _ in range(3)]
        out = ev.document_losses(model, docs, alphas, batch=int(rng.integers(1, 8)))
        with torch.no_grad():
            logits = model(inputs_of(torch.from_numpy(docs.astype(np.int64)), V)).double().numpy()
        z = logits - logits.max(-1, keepdims=True)
        prob = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
        py = np.take_along_axis(prob, docs[..., None].astype(np.int64), -1)[..., 0]
        raw = float(-np.log2(py).sum())
        worst = max(worst, _two_sided(out["raw"], raw))
        errs = int((logits.argmax(-1) != docs).sum())
        worst = max(worst, _two_sided(out["errors"] + 1, errs + 1))
        for a in alphas:
            sm = float(-np.log2((1 - a) * py + a / V).sum())
            worst = max(worst, _two_sided(out["smoothed"][a], sm))
            cost_cap = -math.log2(1 - a) * docs.size
            worst = max(worst, (out["smoothed"][a] - out["raw"]) / cost_cap)
        trials += 1
    return worst, trials


def _no_uniform(old):
    def f(model, docs, alphas, *, batch=256):
        out = old(model, docs, [a * 1e-9 for a in alphas], batch=batch)
        out["smoothed"] = dict(zip([float(a) for a in alphas], out["smoothed"].values()))
        return out

    return f


def _scaled_smoothed(old):
    def f(model, docs, alphas, *, batch=256):
        out = old(model, docs, alphas, batch=batch)
        out["smoothed"] = {a: 0.98 * s for a, s in out["smoothed"].items()}
        return out

    return f


register(
    Claim(
        label="lem-lm-smoothing-cost",
        statement="-log2((1 - alpha) p + alpha/V) <= -log2 p - log2(1 - alpha): smoothing costs at most "
        "-log2(1 - alpha) bits per character",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_cost_check),
        rtol=1e-6,  # float32 logits of different batchings
        symbolic=sc.verify_smoothing_cost,
        covers=(_EV + "document_losses",),
        mutants=(
            replaced(
                ev,
                "document_losses",
                _no_uniform,
                name="uniform-part-dropped",
                what="the mixture weight applied to p only (alpha / V left out)",
            ),
            replaced(
                ev,
                "document_losses",
                _scaled_smoothed,
                name="smoothed-two-percent-low",
                what="smoothed sums two per cent low",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-lm-quantization
# ---------------------------------------------------------------------------------------------------
def _quant_check(seed: int) -> tuple[float, int]:
    """``quantize(model, b)``: every weight within half a step ``s = max|w| / (2**(b-1) - 1)`` of its
    level (ratio ``|w - q| / (s / 2)``), the levels ``s k`` with integer ``|k| <= 2**(b-1) - 1``, the
    symbols' counts adding to the number of weights."""
    worst, trials = 0.0, 0
    for k in range(4):
        model = _small_model(seed * 7 + k, V=5, d=16, L=4)
        for bits in range(2, 9):
            q, syms, scales = ev.quantize(model, bits)
            top = 2 ** (bits - 1) - 1
            for pw, pq, sy, s in zip(model.parameters(), q.parameters(), syms, scales):
                w = pw.detach().double().numpy().ravel()
                qv = pq.detach().double().numpy().ravel()
                s = float(s)
                # float32 rounding of w / s and of s k: a few float32 ulps of the largest weight
                slack = 4 * np.finfo(np.float32).eps * float(np.max(np.abs(w)))
                worst = max(worst, float(np.max(np.abs(w - qv))) / (s / 2 + slack))
                worst = max(worst, float(np.max(np.abs(sy))) / top)
                worst = max(worst, float(np.max(np.abs(qv - s * sy))) / slack)
            if worst > 1.0 + 1e-9:  # symbols out of range: no counts to take
                return worst, trials + 1
            counts = ev.symbol_counts(syms, bits)
            worst = max(
                worst, _two_sided(int(counts.sum()), sum(p.numel() for p in model.parameters()))
            )
            trials += 1
    return worst, trials


def _floor_quantize(old):
    def f(model, bits):
        q, syms, scales = old(model, bits)
        with torch.no_grad():
            for pw, pq, s in zip(model.parameters(), q.parameters(), scales):
                pq.copy_(torch.floor(pw / float(s)) * float(s))
        return q, syms, scales

    return f


def _wide_levels(old):
    return lambda model, bits: old(model, bits + 1)


register(
    Claim(
        label="lem-lm-quantization",
        statement="rounding to the 2^b - 1 levels s k, s = max|w| / (2^(b-1) - 1), moves every weight by at "
        "most s / 2 and uses symbols |k| <= 2^(b-1) - 1",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_quant_check),
        covers=(_EV + "quantize", _EV + "symbol_counts"),
        mutants=(
            replaced(ev, "quantize", _floor_quantize, name="floor", what="floor in place of round"),
            replaced(
                ev, "quantize", _wide_levels, name="one-bit-more", what="levels of b + 1 bits"
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-lm-code-length
# ---------------------------------------------------------------------------------------------------
def _elias_delta_word(n: int) -> str:
    """Elias's delta code word of ``n >= 1``: the gamma code of ``len(bin(n))``, then ``bin(n)`` without
    its leading 1."""
    b = bin(n)[2:]
    ln = bin(len(b))[2:]
    return "0" * (len(ln) - 1) + ln + b[1:]


def _code_check(seed: int) -> tuple[float, int]:
    """``elias_delta_bits(n)`` against the length of the explicit word (whose set is prefix-free, checked
    on 1..300), and ``code_length(...).total`` against ``sum log2 g + 32 T + sum |delta(c + 1)| +
    sum c log2(n / c)`` in 50-digit mpmath (two-sided, and the total at or above it)."""
    rng = random.Random(seed)
    words = [_elias_delta_word(n) for n in range(1, 301)]
    prefix_ok = not any(a != b and b.startswith(a) for a in words for b in words)
    worst, trials = (1.0 if prefix_ok else math.inf), 0
    for n in list(range(1, 300)) + [rng.randint(1, 10**12) for _ in range(50)]:
        worst = max(worst, _two_sided(cb.elias_delta_bits(n), len(_elias_delta_word(n))))
        trials += 1
    for _ in range(60):
        levels = rng.choice([3, 7, 15, 31, 255])
        counts = [rng.choice([0, rng.randint(1, 10 ** rng.randint(1, 6))]) for _ in range(levels)]
        counts[rng.randrange(levels)] += 1
        T, grids = rng.randint(1, 40), [rng.randint(1, 9) for _ in range(3)]
        code = cb.code_length(counts, T, grids)
        n = sum(counts)
        mpmath.mp.dps = 50  # float64 sums of c log2(n / c) are off by up to 1e-10 here
        H = float(sum(mpmath.mpf(c) * mpmath.log(mpmath.mpf(n) / c, 2) for c in counts if c))
        want = (
            sum(math.log2(g) for g in grids)
            + 32 * T
            + sum(len(_elias_delta_word(c + 1)) for c in counts)
            + H
        )
        worst = max(worst, _two_sided(code.total + 1, want + 1))
        worst = max(worst, 1.0 if code.total >= want * (1 - 4e-16) else math.inf)
        trials += 1
    return worst, trials


def _gamma_bits(old):
    return lambda n: 2 * (int(n).bit_length() - 1) + 1


register(
    Claim(
        label="lem-lm-code-length",
        statement="the quantized model has a prefix-free code of C = sum log2 |grid| + 32 T + "
        "sum_i |delta(c_i + 1)| + sum_i c_i log2(n / c_i) bits (Kraft: sum_h 2^-C(h) <= 1)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_code_check),
        symbolic=lambda: sc.verify_entropy_code_bits() and sc.verify_kraft_union(),
        covers=(_COV + "elias_delta_bits", _COV + "entropy_bits_upper", _COV + "code_length"),
        mutants=(
            replaced(cb, "elias_delta_bits", _gamma_bits, name="gamma", what="Elias gamma lengths"),
            replaced(
                cb,
                "entropy_bits_upper",
                lambda old: lambda c: old(c) * math.log(2),
                name="nats",
                what="the symbols' entropy in nats",
            ),
            replaced(cb, "SCALE_BITS", lambda old: 16, name="half-scales", what="16-bit scales"),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-lm-token-bound
# ---------------------------------------------------------------------------------------------------
def _token_check(seed: int) -> tuple[float, int]:
    """``token_bound`` against ``emp + w sqrt((C ln 2 + ln(1/delta)) / (2M))`` from sympy's solution of
    Azuma's tail (two-sided; 40-digit mpmath)."""
    mpmath.mp.dps = 40
    dev = _sym(sc.azuma_occam_deviation(), "w", "C", "delta", "M")
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(300):
        w, lo = 10 ** rng.uniform(-1, 1.5), rng.uniform(0, 0.5)
        emp = lo + rng.choice([0.0, w, rng.uniform(0, w)])
        M, C, d = rng.randint(1, 10**8), 10 ** rng.uniform(0, 7), 10 ** rng.uniform(-6, -0.1)
        got = cb.token_bound(emp, lo, w, M, C, d)
        want = float(emp + dev(w, C, d, M))
        worst = max(worst, _two_sided(got, want), 1.0 if got >= want else math.inf)
        trials += 1
    return worst, trials


register(
    Claim(
        label="thm-lm-token-bound",
        statement="with probability >= 1 - delta, for every model h: (1/M) sum_k E[l_h(X_k) | X_<k] <= "
        "(1/M) sum_k l_h(x_k) + w sqrt((C(h) ln 2 + ln(1/delta)) / (2M))",
        chapter=CH,
        provenance="paper",
        numeric=AllOf(
            (
                FunctionCheck(_token_check),
                FunctionCheck(azuma_coverage),
                FunctionCheck(kraft_coverage),
            )
        ),
        symbolic=lambda: sc.azuma_occam_deviation().has(sc.C),
        covers=(_COV + "token_bound", _COV + "CompressionBound.of"),
        mutants=(
            replaced(
                cb,
                "token_bound",
                _token_mutant(lambda old, e, lo, w, M, C, d: old(e, lo, w, 2 * M, C, d)),
                name="two-M",
                what="2M in place of M (the factor 2 of Azuma's exponent counted twice)",
            ),
            replaced(
                cb,
                "token_bound",
                _token_mutant(lambda old, e, lo, w, M, C, d: old(e, lo, w, M, C, 0.999999)),
                name="no-delta",
                what="ln(1/delta) dropped",
            ),
            replaced(
                cb,
                "token_bound",
                _token_mutant(lambda old, e, lo, w, M, C, d: e + (old(e, lo, w, M, C, d) - e) / w),
                name="unit-width",
                what="the deviation of a [0, 1]-valued loss",
            ),
            *TOKEN_SHARED_MUTANTS,
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-lm-document-bound
# ---------------------------------------------------------------------------------------------------
def _doc_check(seed: int) -> tuple[float, int]:
    """``document_bound`` against ``lo + w kl^-1((emp - lo)/w, eps)`` with ``eps`` sympy's solution of
    Maurer's tail and the kl inverse by scipy's brentq (two-sided, and at or above it)."""
    rhs = _sym(sc.maurer_occam_rhs(), "C", "m", "delta")
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(200):
        w, lo = 10 ** rng.uniform(-1, 1.5), rng.uniform(0, 0.5)
        emp = lo + w * rng.choice([0.0, rng.uniform(0, 0.9)])
        m, C, d = rng.randint(8, 10**7), 10 ** rng.uniform(0, 6), 10 ** rng.uniform(-6, -0.1)
        got = cb.document_bound(emp, lo, w, m, C, d)
        want = lo + w * _kl_inv((emp - lo) / w, float(rhs(C, m, d)))
        worst = max(worst, _two_sided(got, want), 1.0 if got >= want * (1 - 1e-12) else math.inf)
        trials += 1
    return worst, trials


register(
    Claim(
        label="thm-lm-document-bound",
        statement="for m i.i.d. documents, with probability >= 1 - delta, for every model h: "
        "kl(r_S(h) || r(h)) <= (C(h) ln 2 + ln(2 sqrt(m) / delta)) / m, r the loss rescaled to [0, 1]",
        chapter=CH,
        provenance="standard",
        numeric=AllOf(
            (FunctionCheck(_doc_check), FunctionCheck(lambda s: kraft_coverage(s, "document")))
        ),
        symbolic=lambda: sc.maurer_occam_rhs().has(sc.m),
        covers=(
            _COV + "document_bound",
            _COV + "kl_inverse_certified",
            _COV + "CompressionBound.of",
        ),
        mutants=(
            replaced(
                cb,
                "document_bound",
                _doc_mutant(
                    lambda old, e, lo, w, m, C, d: old(
                        e, lo, w, m, C, min(0.99, 2 * math.sqrt(m) * d)
                    )
                ),
                name="no-maurer-xi",
                what="ln(1/delta) in place of ln(2 sqrt(m)/delta)",
            ),
            replaced(
                cb,
                "kl_inverse_certified",
                lambda old: lambda q, c: old(q, c / 2),
                name="kl-half",
                what="the kl level halved",
            ),
            DOC_SHARED_MUTANT,
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# cor-lm-top1
# ---------------------------------------------------------------------------------------------------
def _top1_check(seed: int) -> tuple[float, int]:
    """``lm_certificates``: the top-1 error bounds are the kl-form and the Azuma token bound and the document
    bound with the 0-1 loss (``lo = 0, w = 1``), the log-loss bounds with the smoothed range; against the
    references of this module (two-sided)."""
    rng = random.Random(seed)
    dev = _sym(sc.azuma_occam_deviation(), "w", "C", "delta", "M")
    rhs = _sym(sc.maurer_occam_rhs(), "C", "m", "delta")
    worst, trials = 0.0, 0
    for _ in range(40):
        V, a = rng.randint(2, 300), 10 ** rng.uniform(-3, -0.3)
        m, L = rng.randint(8, 10**5), rng.randint(1, 128)
        M, C, d = m * L, 10 ** rng.uniform(1, 6), 10 ** rng.uniform(-4, -0.5)
        lo, w = cb.smoothed_range(V, a)
        emp = rng.uniform(lo, lo + 0.5 * w)
        errors = rng.randint(0, M)
        b = cb.lm_certificates(emp, M * (emp * emp + 0.1), errors, V, a, m, M, C, d)
        e = errors / M
        worst = max(worst, _two_sided(b["token_err"].bound, min(1.0, _kl_grid_ref(e, M, C, d))))
        worst = max(worst, _two_sided(b["doc_err"].bound, _kl_inv(e, float(rhs(C, m, d)))))
        worst = max(worst, _two_sided(b["token_err_azuma"].bound, e + float(dev(1.0, C, d, M))))
        worst = max(worst, _two_sided(b["token"].bound, emp + float(dev(w, C, d, M))))
        worst = max(
            worst,
            _two_sided(b["document"].bound, lo + w * _kl_inv((emp - lo) / w, float(rhs(C, m, d)))),
        )
        trials += 1
    return worst, trials


register(
    Claim(
        label="cor-lm-top1",
        statement="the top-1 error of every model h obeys the token-level (kl form and Azuma form) and "
        "document-level theorems with the 0-1 loss (lo = 0, width = 1)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_top1_check),
        covers=(_COV + "lm_certificates",),
        mutants=(
            replaced(
                cb,
                "lm_certificates",
                _swap_range,
                name="error-with-log-loss-width",
                what="the error bound with the smoothed log-loss's width",
            ),
            replaced(
                cb,
                "lm_certificates",
                _azuma_error_width,
                name="azuma-error-with-log-loss-width",
                what="the Azuma error bound (the Part VII sweep's saved column) with the smoothed log-loss's width",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-lm-token-kl
# ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _lambdified(which: str):
    """sympy's solutions as 40-digit mpmath functions (derived once)."""
    if which == "cramer":
        return _sym(sc.cramer_bernoulli_bound(), "lam", "q", "eps")
    return _sym(sc.bernstein_occam_bound(), "q", "v", "lam", "C", "M", "K", "delta")


def _kl_grid_ref(q: float, M: int, C: float, d: float) -> float:
    """The rescaled kl-form bound: the least over the grid ``2**(k/8)``, ``k = -64 .. 32`` (97 points,
    written out here), of sympy's solution, in 40-digit mpmath."""
    mpmath.mp.dps = 40
    f = _lambdified("cramer")
    lams = [mpmath.mpf(2) ** (mpmath.mpf(k) / 8) for k in range(-64, 33)]
    e = (mpmath.mpf(C) * mpmath.log(2) + mpmath.log(mpmath.mpf(len(lams)) / mpmath.mpf(d))) / M
    return float(min(f(a, mpmath.mpf(q), e) for a in lams))


def _token_kl_check(seed: int) -> tuple[float, int]:
    """``token_bound_kl`` against ``lo + w min_lambda r(lambda)`` (``_kl_grid_ref``, two-sided), and at or
    above ``lo + w kl^-1(q, (C ln 2 + ln(K / delta)) / M)`` (the supremum over every ``lambda``)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(60):
        w, lo = 10 ** rng.uniform(-1, 1.5), rng.uniform(0, 0.5)
        q = rng.choice([0.0, rng.uniform(0, 0.95)])
        emp = lo + w * q
        M, C, d = rng.randint(100, 10**8), 10 ** rng.uniform(0, 6.5), 10 ** rng.uniform(-6, -0.1)
        got = cb.token_bound_kl(emp, lo, w, M, C, d)
        r = min(1.0, _kl_grid_ref(q, M, C, d))
        want = lo + w * r
        eps = (C * math.log(2) + math.log(97 / d)) / M
        floor = lo + w * _kl_inv(q, eps)
        worst = max(worst, _two_sided(got, want), 1.0 if got >= floor * (1 - 1e-9) else math.inf)
        trials += 1
    return worst, trials


register(
    Claim(
        label="thm-lm-token-kl",
        statement="with probability >= 1 - delta, for every model h and every lambda of a grid of K: "
        "-ln(1 - r + r e^-lambda) <= lambda q + (C(h) ln 2 + ln(K/delta)) / M, r the mean conditional "
        "risk and q the empirical mean rescaled to [0, 1]",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_token_kl_check),
        symbolic=sc.verify_cramer_sup_is_kl,
        covers=(_COV + "token_bound_kl",),
        mutants=(
            replaced(
                cb,
                "token_bound_kl",
                _token_mutant(
                    lambda old, e, lo, w, M, C, d: old(e, lo, w, M, C, min(0.999, d * 97))
                ),
                name="grid-unpaid",
                what="the union over the lambda grid not paid (ln(1/delta) for ln(K/delta))",
            ),
            replaced(
                cb,
                "token_bound_kl",
                _token_mutant(lambda old, e, lo, w, M, C, d: old(e, lo, w, 2 * M, C, d)),
                name="two-M",
                what="2M in place of M",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-lm-token-bernstein
# ---------------------------------------------------------------------------------------------------
def _eb_ref(emp, sumsq, lo, w, M, C, d) -> float:
    """The empirical-Bernstein bound in the loss's units: the least over the grids (written out here:
    ``lambda = k/64``, ``k = 1..63``; ``c = j/32``, ``j = 0..32``) of sympy's solution, 40-digit mpmath."""
    mpmath.mp.dps = 40
    f = _lambdified("bernstein")
    mp = mpmath.mpf
    q = (mp(emp) - mp(lo)) / mp(w)
    q2 = (mp(sumsq) / M - 2 * mp(lo) * mp(emp) + mp(lo) ** 2) / mp(w) ** 2
    best = None
    for k in range(1, 64):
        for j in range(33):
            c = mp(j) / 32
            val = f(q, q2 - 2 * c * q + c * c, mp(k) / 64, mp(C), mp(M), mp(63 * 33), mp(d))
            best = val if best is None or val < best else best
    return float(mp(lo) + mp(w) * min(best, mp(1)))


def _token_eb_check(seed: int) -> tuple[float, int]:
    """``token_bound_bernstein`` against ``_eb_ref`` (two-sided) on random means and second moments
    (every second moment between the mean's square and the loss range allows)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(12):
        w, lo = 10 ** rng.uniform(-0.5, 1.5), rng.uniform(0, 0.5)
        q = rng.uniform(0.01, 0.9)
        s2 = rng.uniform(q * q, q)  # the rescaled second moment of a [0, 1]-valued loss
        emp = lo + w * q
        M, C, d = rng.randint(10**4, 10**8), 10 ** rng.uniform(0, 6), 10 ** rng.uniform(-6, -0.1)
        sumsq = M * (w * w * s2 + 2 * lo * emp - lo * lo)
        got = cb.token_bound_bernstein(emp, sumsq, lo, w, M, C, d)
        worst = max(worst, _two_sided(got, _eb_ref(emp, sumsq, lo, w, M, C, d)))
        trials += 1
    return worst, trials


def _eb_mutant(fn):
    return lambda old: lambda emp, s2, lo, w, M, C, d: fn(old, emp, s2, lo, w, M, C, d)


register(
    Claim(
        label="thm-lm-token-bernstein",
        statement="with probability >= 1 - delta, for every model h, lambda of a grid in (0, 1) and centre "
        "c of a grid (K pairs): r <= q + [psi(lambda) sum_k (x_k - c)^2 / M + (C(h) ln 2 + ln(K/delta)) "
        "/ M] / lambda, psi(lambda) = -ln(1 - lambda) - lambda, x_k the rescaled losses",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_token_eb_check),
        symbolic=sc.verify_fan_inequality,
        covers=(_COV + "token_bound_bernstein", _COV + "rescaled_moments"),
        mutants=(
            replaced(
                cb,
                "token_bound_bernstein",
                _eb_mutant(
                    lambda old, e, s2, lo, w, M, C, d: old(
                        e, s2, lo, w, M, C, min(0.999, d * 63 * 33)
                    )
                ),
                name="grid-unpaid",
                what="the union over the (lambda, c) grid not paid",
            ),
            replaced(
                cb,
                "token_bound_bernstein",
                _eb_mutant(
                    lambda old, e, s2, lo, w, M, C, d: old(
                        e, max(0.0, s2 - M * (e - lo) ** 2 / 2), lo, w, M, C, d
                    )
                ),
                name="variance-halved",
                what="part of the spread left out of the variance term",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-lm-test-set
# ---------------------------------------------------------------------------------------------------
def _test_check(seed: int) -> tuple[float, int]:
    """``test_set_bound`` against ``lo + w kl^-1(q, ln(2 sqrt(n)/delta) / n)`` (scipy's brentq; two-sided)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(200):
        w, lo = 10 ** rng.uniform(-1, 1.5), rng.uniform(0, 0.5)
        q = rng.choice([0.0, rng.uniform(0, 0.95)])
        n, d = rng.randint(8, 10**6), 10 ** rng.uniform(-6, -0.1)
        got = cb.test_set_bound(lo + w * q, lo, w, n, d)
        want = lo + w * _kl_inv(q, math.log(2 * math.sqrt(n) / d) / n)
        worst = max(worst, _two_sided(got, want), 1.0 if got >= want * (1 - 1e-12) else math.inf)
        trials += 1
    return worst, trials


register(
    Claim(
        label="thm-lm-test-set",
        statement="for one model fixed before n i.i.d. held-out documents, with probability >= 1 - delta: "
        "kl(q || r) <= ln(2 sqrt(n) / delta) / n, q and r the held-out and expected mean loss rescaled",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_test_check),
        covers=(_COV + "test_set_bound",),
        mutants=(
            replaced(
                cb,
                "test_set_bound",
                lambda old: (
                    lambda e, lo, w, n, d: old(e, lo, w, n, min(0.99, 2 * math.sqrt(n) * d))
                ),
                name="no-maurer-xi",
                what="ln(1/delta) in place of ln(2 sqrt(n)/delta)",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-lm-maurer-moment (the exact checks in ._part7_maurer)
# ---------------------------------------------------------------------------------------------------
def _no_xi(o):
    return lambda e, lo, w, n, d: o(e, lo, w, n, min(0.99, 2 * math.sqrt(n) * d))


_TS = (cb, "test_set_bound")
_SQ = {"name": "sqrt-n", "what": "ln(sqrt(n)/delta) in place of ln(2 sqrt(n)/delta)"}
_NX = {"name": "no-maurer-xi", "what": "ln(1/delta) in place of ln(2 sqrt(n)/delta)"}
_N1 = {"name": "n-minus-one", "what": "n - 1 documents in place of n"}
register(
    Claim(
        label="lem-lm-maurer-moment",
        statement="for n i.i.d. losses in [0, 1] of mean r: E exp(n kl(r_S || r)) <= xi(n) <= 2 sqrt(n), "
        "with equality to xi(n) for 0/1 losses at every r; the test-set bound, which spends "
        "ln(2 sqrt(n) / delta), fails with probability at most delta",
        chapter=CH,
        provenance="recalled",
        numeric=FunctionCheck(maurer_coverage),
        covers=(_COV + "test_set_bound", _COV + "document_bound"),
        mutants=(
            replaced(*_TS, lambda o: lambda e, lo, w, n, d: o(e, lo, w, n, 2 * d), **_SQ),
            replaced(*_TS, _no_xi, **_NX),
            replaced(*_TS, lambda o: lambda e, lo, w, n, d: o(e, lo, w, max(1, n - 1), d), **_N1),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-lm-ngram-code
# ---------------------------------------------------------------------------------------------------
def _ngram_code_check(seed: int) -> tuple[float, int]:
    """``table_code_bits`` against the length of the explicit code word: the family flag, the grid bits,
    then Elias-delta words of ``K``, of every gap and of every count, concatenated and decoded back
    (the decoder recovers the table: the code is uniquely decodable, and prefix-free as a
    concatenation of prefix-free words), on count tables of random documents (two-sided)."""
    rng = np.random.default_rng(seed)
    worst, trials = 0.0, 0
    for _ in range(20):
        V, order = int(rng.integers(2, 12)), int(rng.integers(1, 4))
        docs = rng.integers(0, V, size=(int(rng.integers(1, 30)), int(rng.integers(1, 20))))
        t = ng.ngram_table(docs, order, V)
        grids = tuple(int(g) for g in rng.integers(1, 9, size=3))
        gaps = np.diff(np.concatenate([[-1], t.keys])).tolist()
        bits = "".join(
            _elias_delta_word(int(x)) for x in [t.n_cells + 1] + gaps + t.counts.tolist()
        )
        # decode: K, then K gaps, then K counts
        pos, vals = 0, []
        while pos < len(bits):
            z = 0
            while bits[pos + z] == "0":
                z += 1
            ln = int(bits[pos + z : pos + 2 * z + 1], 2)
            pos += 2 * z + 1
            vals.append(int("1" + bits[pos : pos + ln - 1], 2))
            pos += ln - 1
        K = vals[0] - 1
        keys = np.cumsum(vals[1 : 1 + K]) - 1
        ok = K == t.n_cells and keys.tolist() == t.keys.tolist()
        ok = ok and vals[1 + K :] == t.counts.tolist()
        want = 1 + sum(math.log2(g) for g in grids) + len(bits)
        got = ng.table_code_bits(t, grids)
        worst = max(worst, _two_sided(got, want) if ok else math.inf)
        # the counts are those of the documents
        n_pos = int(docs.size)
        worst = max(worst, 1.0 if int(t.counts.sum()) == n_pos else math.inf)
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-lm-ngram-code",
        statement="the family flag, the grid indices, Elias-delta codes of the number of cells, of each "
        "cell's index gap and of its count describe every n-gram count table in "
        "1 + sum_g log2|g| + |delta(K + 1)| + sum_i |delta(gap_i)| + sum_i |delta(N_i)| bits",
        chapter=CH,
        provenance="standard",
        numeric=AllOf((FunctionCheck(_ngram_code_check), FunctionCheck(ngram_cert_check))),
        covers=(
            "genbound.bounds.ngram.table_code_bits",
            "genbound.bounds.ngram.ngram_table",
            "genbound.bounds.ngram.ngram_losses",
            "genbound.bounds.ngram.ngram_certificate",
        ),
        mutants=(
            replaced(
                ng,
                "elias_delta_bits_array",
                lambda old: lambda n: 2 * (np.frexp(np.asarray(n, dtype=np.float64))[1] - 1) + 1,
                name="gamma-lengths",
                what="Elias-gamma lengths for the gaps and counts",
            ),
            replaced(
                ng,
                "FAMILY_BITS",
                lambda old: 0,
                name="no-family-flag",
                what="the family flag not paid",
            ),
            replaced(
                ng,
                "ngram_losses",
                lambda old: (
                    lambda t, docs, a, b: {
                        **old(t, docs, a, b),
                        "smoothed": {
                            k: (0.98 * x, y) for k, (x, y) in old(t, docs, a, b)["smoothed"].items()
                        },
                    }
                ),
                name="losses-low",
                what="the table's smoothed loss sums two per cent low",
            ),
        ),
    )
)
