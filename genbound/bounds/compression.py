"""Occam (prefix-free compression) bounds for a language model's smoothed log-loss and top-1 error
(Part VII, :ref:`ch-compression`).

A model ``h`` is described by a prefix-free code of ``C(h)`` bits (equivalently a prior
``P(h) = 2**-C(h)`` with ``sum_h P(h) <= 1``, Kraft). The code here (:func:`code_length`) names the
architecture, the quantization level and the smoothing weight in their grids (``log2`` of each grid's
size), the per-tensor float32 scales (32 bits each), the count of every quantization level
(Elias-delta codes) and the symbols themselves under the empirical distribution of those counts
(``n H`` bits, ``H`` the empirical entropy: an arithmetic coder reaches it within 2 bits).

**Smoothing** makes the log-loss bounded: ``-log2((1 - alpha) p + alpha / V)`` lies in ``[lo, lo + width]``
with ``lo = -log2(1 - alpha + alpha / V)`` and ``width = log2(1 + (1 - alpha) V / alpha)``
(:func:`smoothed_range`).

Two versions (each with probability at least ``1 - delta``, simultaneously over every model ``h``):

* **document** (i.i.d. documents; sampling without replacement from a finite set of documents is
  covered by Hoeffding's 1963 comparison, since the bound is a Chernoff bound): with ``m`` documents
  and the per-document mean loss rescaled to ``[0, 1]``, ``kl(r_S || r) <= [C ln 2 + ln(2 sqrt(m) /
  delta)] / m`` (Maurer's moment, Langford-Seeger's Occam form); :func:`document_bound`.
* **token** (a martingale over the ``M`` training characters, Azuma-Hoeffding; Lotfi et al. 2024):
  the mean over the training positions of the *conditional* expected loss given the past is at most
  the empirical mean plus ``width sqrt([C ln 2 + ln(1 / delta)] / (2 M))``; :func:`token_bound`. It
  bounds a risk conditional on the training text itself, not the loss on a new document.
* **token, kl form** (the same martingale, Cramér-Chernoff for ``[0, 1]``-valued increments): for each
  ``lambda`` of :data:`KL_LAMBDAS`, ``-ln(1 - r + r e^-lambda) <= lambda q + [C ln 2 + ln(K / delta)] / M``
  for the mean conditional risk ``r`` (rescaled), ``q`` the rescaled empirical mean, ``K`` the grid's size;
  solved for ``r`` and the least over the grid taken (:func:`token_bound_kl`). Its supremum over
  ``lambda`` is ``kl(q || r)``.
* **token, empirical Bernstein** (a variance-adaptive supermartingale, Howard et al. 2021 with Fan et
  al.'s 2015 inequality): for ``lambda`` in :data:`EB_LAMBDAS` and a centre ``c`` of :data:`EB_CENTRES`
  (both fixed before the text), ``r <= q + [psi(lambda) V_c / M + (C ln 2 + ln(K_l K_c / delta)) / M]
  / lambda`` with ``psi(lambda) = -ln(1 - lambda) - lambda`` and ``V_c = sum_k (x_k - c)^2`` over the
  rescaled losses (:func:`token_bound_bernstein`; it needs the sum of the squared losses).
* **test set**: Maurer's kl bound for one model fixed before ``n`` held-out documents,
  ``kl(q || r) <= ln(2 sqrt(n) / delta) / n`` (:func:`test_set_bound`).

Every bound is evaluated from its inputs (the loss sums, the code length) in interval arithmetic
(mpmath ``iv``, 80-bit mantissa) and the upper end of the interval is returned, so that rounding in
the formula cannot make it smaller; the kl inverse is a bisection whose returned point is certified by
an interval evaluation of ``kl``. The inputs themselves are float64 sums of losses computed from
float32 logits: the interval arithmetic does not cover their rounding (it is part of the hypothesis:
the function the evaluation code computes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpmath import iv, mpf

from .._validate import check_positive_int, check_real
from ..errors import ParameterError
from ._result import LOSS_RANGE, BoundResult

__all__ = [
    "lm_certificates",
    "IV_PREC",
    "elias_delta_bits",
    "entropy_bits_upper",
    "CodeLength",
    "code_length",
    "smoothed_range",
    "kl_inverse_certified",
    "document_bound",
    "token_bound",
    "token_bound_kl",
    "token_bound_bernstein",
    "test_set_bound",
    "rescaled_moments",
    "KL_LAMBDAS",
    "EB_LAMBDAS",
    "EB_CENTRES",
    "CompressionBound",
    "FAMILY_BITS",
    "lm_certificates",
]

#: The bits of the flag that names a model's family (quantized transformer or n-gram count table) in the
#: one prefix code that covers both, so that the certificates of both families hold together.
FAMILY_BITS = 1

#: The ``lambda`` grid of the kl form of the martingale bound: ``2**(k/8)``, ``k = -64 .. 32``.
KL_LAMBDAS = tuple(2.0 ** (k / 8) for k in range(-64, 33))
#: The ``lambda`` grid of the empirical-Bernstein bound: ``k / 64``, ``k = 1 .. 63``.
EB_LAMBDAS = tuple(k / 64 for k in range(1, 64))
#: The centres ``c`` (rescaled loss) of the empirical-Bernstein bound: ``k / 32``, ``k = 0 .. 32``.
EB_CENTRES = tuple(k / 32 for k in range(33))

#: The mantissa bits of the interval arithmetic.
IV_PREC = 80
#: The bits of one stored per-tensor scale (a float32).
SCALE_BITS = 32


def _iv(x):
    iv.prec = IV_PREC
    return iv.mpf(x)


def _up(x) -> float:
    """The upper end of an interval, rounded up to a float."""
    b = mpf(x.b)
    f = float(b)
    return f if f >= b else math.nextafter(f, math.inf)


def elias_delta_bits(n: int) -> int:
    """The length of Elias's delta code of the integer ``n >= 1``:
    ``floor(log2 n) + 2 floor(log2(floor(log2 n) + 1)) + 1`` (it codes the counts of a quantized model
    and the cells of an n-gram table, :mod:`genbound.bounds.ngram`).

    Book: :prf:ref:`lem-lm-ngram-code`.
    """
    n = check_positive_int(n, "n")
    L = n.bit_length() - 1
    return L + 2 * ((L + 1).bit_length() - 1) + 1


def entropy_bits_upper(counts) -> float:
    """An upper end of ``sum_i c_i log2(n / c_i)`` (``n = sum c_i``; zero counts contribute nothing): the
    bits of the symbols under their empirical distribution."""
    cs = [int(c) for c in counts]
    if any(c < 0 for c in cs) or sum(cs) == 0:
        raise ParameterError(f"counts must be non-negative with a positive total, got {cs[:8]}...")
    n = _iv(sum(cs))
    tot = _iv(0)
    for c in cs:
        if c:
            tot += _iv(c) * iv.log(n / _iv(c))
    return _up(tot / iv.log(_iv(2)))


@dataclass(frozen=True)
class CodeLength:
    """The parts of a model's code, in bits: ``header`` (grid indices), ``scales``, ``counts``,
    ``symbols`` (``n H``); ``total`` their sum, rounded up."""

    header: float
    scales: int
    counts: int
    symbols: float

    @property
    def total(self) -> float:
        return _up(_iv(self.header) + _iv(self.scales) + _iv(self.counts) + _iv(self.symbols))


def code_length(counts, n_tensors: int, grid_sizes) -> CodeLength:
    """The code of a quantized model whose symbols occur ``counts`` times (one entry per level), with
    ``n_tensors`` float32 scales, chosen from grids of the sizes ``grid_sizes`` (architecture,
    quantization level, smoothing weight: ``log2`` of each).

    Book: :prf:ref:`lem-lm-code-length`.
    """
    n_tensors = check_positive_int(n_tensors, "n_tensors")
    sizes = [check_positive_int(g, "grid size") for g in grid_sizes]
    header = _up(sum((iv.log(_iv(g)) for g in sizes), _iv(0)) / iv.log(_iv(2)))
    counts_bits = sum(elias_delta_bits(int(c) + 1) for c in counts)
    return CodeLength(header, SCALE_BITS * n_tensors, counts_bits, entropy_bits_upper(counts))


def smoothed_range(V: int, alpha: float) -> tuple[float, float]:
    """``(lo, width)`` of the smoothed log-loss in bits: ``lo = -log2(1 - alpha + alpha / V)`` rounded
    down and ``width = log2(V / alpha) - lo`` rounded up (``= log2(1 + (1 - alpha) V / alpha)`` up to
    the rounding of ``lo``), so that ``[lo, lo + width]`` holds every smoothed loss.

    Book: :prf:ref:`lem-lm-smoothed-range`.
    """
    V = check_positive_int(V, "V", minimum=2)
    alpha = check_real(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    a, v, two = _iv(alpha), _iv(V), iv.log(_iv(2))
    lo = -_up(iv.log(1 - a + a / v) / two)  # rounded down
    hi = -iv.log(a / v) / two  # the loss at p = 0
    # the width from the rounded-down lo, so that [lo, lo + width] holds every loss
    return lo, _up(hi - _iv(lo))


def _kl_iv(q, p):
    """``kl(q || p)`` of Bernoulli means as an interval (``0 < p < 1``)."""
    q, p = _iv(q), _iv(p)
    out = _iv(0)
    if q.a > 0:
        out += q * iv.log(q / p)
    if q.b < 1:
        out += (1 - q) * iv.log((1 - q) / (1 - p))
    return out


def kl_inverse_certified(q: float, c: float) -> float:
    """The least ``p`` (up to 2**-50) in ``[q, 1]`` with ``kl(q || p) >= c``, returned so that
    ``kl(q || p) >= c`` holds in interval arithmetic at the returned point (1 when ``kl(q || 1) ... <= c``)."""
    q = check_real(q, "q", lo=0.0, hi=1.0)
    c = check_real(c, "c", lo=0.0)
    lo, hi = q, 1.0
    for _ in range(200):
        if hi - lo <= 2.0**-50:
            break
        mid = (lo + hi) / 2
        if mid >= 1.0:
            break
        if _kl_iv(q, mid).a >= c:  # certified: kl at mid is at least c
            hi = mid
        else:
            lo = mid
    return hi


def _check_emp(emp, lo, width):
    emp = check_real(emp, "empirical loss")
    if not lo - 1e-12 <= emp <= lo + width + 1e-12:
        raise ParameterError(
            f"empirical loss {emp} lies outside the loss range [{lo}, {lo + width}]"
        )
    return emp


def document_bound(
    emp: float, lo: float, width: float, n_samples: int, code_bits: float, delta: float
):
    """The document-level Occam-kl bound on the mean loss of a new document, from ``n_samples``
    training documents (see the module).

    Book: :prf:ref:`thm-lm-document-bound`.
    """
    emp = _check_emp(emp, lo, width)
    m = check_positive_int(n_samples, "n_samples")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    rhs = (_iv(code_bits) * iv.log(_iv(2)) + iv.log(2 * iv.sqrt(_iv(m)) / _iv(delta))) / _iv(m)
    q = _up((_iv(emp) - _iv(lo)) / _iv(width)) if emp > lo else 0.0
    r = kl_inverse_certified(min(q, 1.0), _up(rhs))
    return _up(_iv(lo) + _iv(width) * _iv(r))


def token_bound(emp: float, lo: float, width: float, M: int, code_bits: float, delta: float):
    """The token-level (Azuma) Occam bound on the mean conditional loss over the training positions.

    Book: :prf:ref:`thm-lm-token-bound`.
    """
    emp = _check_emp(emp, lo, width)
    M = check_positive_int(M, "M")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    pen = _iv(width) * iv.sqrt(
        (_iv(code_bits) * iv.log(_iv(2)) + iv.log(1 / _iv(delta))) / (2 * _iv(M))
    )
    return _up(_iv(emp) + pen)


def _rescaled(emp, lo, width):
    return (_iv(emp) - _iv(lo)) / _iv(width)


def token_bound_kl(emp: float, lo: float, width: float, M: int, code_bits: float, delta: float):
    """The kl form of the token-level martingale Occam bound (see the module), in the loss's units.

    Book: :prf:ref:`thm-lm-token-kl`.
    """
    emp = _check_emp(emp, lo, width)
    M = check_positive_int(M, "M")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    q = max(0.0, min(1.0, (emp - lo) / width))
    L = (code_bits * math.log(2) + math.log(len(KL_LAMBDAS) / delta)) / M

    def r_of(lam):
        return -math.expm1(-(lam * q + L)) / -math.expm1(-lam)

    lam = min(KL_LAMBDAS, key=r_of)
    a = _iv(lam)
    Li = (_iv(code_bits) * iv.log(_iv(2)) + iv.log(_iv(len(KL_LAMBDAS)) / _iv(delta))) / _iv(M)
    r = (1 - iv.exp(-(a * _rescaled(emp, lo, width) + Li))) / (1 - iv.exp(-a))
    r_up = min(1.0, _up(r))
    return _up(_iv(lo) + _iv(width) * _iv(r_up))


def rescaled_moments(total: float, sumsq: float, lo: float, width: float, M: int):
    """``(sum x_k, sum x_k^2)`` of the rescaled losses ``x = (l - lo) / width`` from the sums of ``l``
    and ``l^2`` over ``M`` positions, as intervals."""
    t, s2, lo_, w = _iv(total), _iv(sumsq), _iv(lo), _iv(width)
    return (t - M * lo_) / w, (s2 - 2 * lo_ * t + M * lo_ * lo_) / (w * w)


def token_bound_bernstein(
    emp: float, sumsq: float, lo: float, width: float, M: int, code_bits: float, delta: float
):
    """The empirical-Bernstein token-level Occam bound (see the module) from the mean loss ``emp`` and
    the sum of the squared losses ``sumsq`` over the ``M`` training positions, in the loss's units.

    Book: :prf:ref:`thm-lm-token-bernstein`.
    """
    emp = _check_emp(emp, lo, width)
    M = check_positive_int(M, "M")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    sumsq = check_real(sumsq, "sumsq", lo=0.0)
    K = len(EB_LAMBDAS) * len(EB_CENTRES)
    q = (emp - lo) / width
    q2 = (sumsq / M - 2 * lo * emp + lo * lo) / (width * width)
    L = (code_bits * math.log(2) + math.log(K / delta)) / M

    def b_of(lc):
        lam, c = lc
        v = max(0.0, q2 - 2 * c * q + c * c)
        return (-math.log1p(-lam) - lam) * v / lam + L / lam

    lam, c = min(((a, c) for a in EB_LAMBDAS for c in EB_CENTRES), key=b_of)
    s1, s2 = rescaled_moments(_iv(emp) * M, sumsq, lo, width, M)
    a, ci = _iv(lam), _iv(c)
    V = s2 - 2 * ci * s1 + M * ci * ci
    Li = _iv(code_bits) * iv.log(_iv(2)) + iv.log(_iv(K) / _iv(delta))
    psi = -iv.log(1 - a) - a
    r = s1 / M + (psi * V + Li) / (a * M)
    r_up = min(1.0, _up(r))
    return _up(_iv(lo) + _iv(width) * _iv(r_up))


def test_set_bound(emp: float, lo: float, width: float, n_docs: int, delta: float):
    """Maurer's kl test-set bound on the mean loss of a new document, for one model fixed before the
    ``n_docs`` held-out documents were looked at: the document bound with a code of 0 bits.

    Book: :prf:ref:`thm-lm-test-set`, :prf:ref:`lem-lm-maurer-moment`.
    """
    return document_bound(emp, lo, width, n_docs, 0.0, delta)


test_set_bound.__test__ = False  # type: ignore[attr-defined]  # a bound, not a pytest test


@dataclass(frozen=True)
class CompressionBound(BoundResult):
    """An Occam bound of one model: ``version`` ``"document"`` (``n`` documents) or ``"token"`` (``n``
    characters); ``emp`` the empirical mean loss, in ``[lo, lo + width]`` (bits per character for the
    smoothed log-loss, ``lo = 0, width = 1`` for the top-1 error); ``code_bits`` the model's code length;
    ``bound`` the bound in the loss's own units; ``value`` the bound rescaled to ``[0, 1]``;
    ``chance``: the loss of random guessing (``log2 V``, or ``1 - 1/V``).

    >>> r = CompressionBound.examples()[0]
    >>> r.trivial, r.gap_at(r.n) == r.value
    (False, True)
    """

    version: str
    emp: float
    lo: float
    width: float
    n: int
    code_bits: float
    delta: float
    chance: float
    bound: float
    value: float
    sumsq: float | None = None

    VERSIONS = ("document", "token", "token-kl", "token-eb", "test")

    @classmethod
    def of(
        cls, version, emp, lo, width, n, code_bits, delta, chance, sumsq=None
    ) -> "CompressionBound":
        """``sumsq``: the sum of the squared losses over the ``n`` positions (``"token-eb"`` only)."""
        if version not in cls.VERSIONS:
            raise ParameterError(f"version must be one of {cls.VERSIONS}, got {version!r}")
        if version == "token-eb":
            if sumsq is None:
                raise ParameterError("the empirical-Bernstein bound needs sumsq")
            b = token_bound_bernstein(emp, sumsq, lo, width, n, code_bits, delta)
        elif version == "test":
            b = test_set_bound(emp, lo, width, n, delta)
        else:
            f = {"document": document_bound, "token": token_bound, "token-kl": token_bound_kl}
            b = f[version](emp, lo, width, n, code_bits, delta)
        v = _up((_iv(b) - _iv(lo)) / _iv(width))
        return cls(version, emp, lo, width, int(n), code_bits, delta, chance, b, v, sumsq)

    @property
    def n_samples(self) -> int:
        return self.n

    @property
    def capacity(self) -> float:
        """``sqrt(C ln 2 / 2)``: the gap is at most that times ``sqrt(1 + ln(...)/ (C ln 2)) / sqrt(n)``
        (``nan`` for the test-set bound, which has no capacity)."""
        if self.version == "test":
            return math.nan
        return math.sqrt(self.code_bits * math.log(2) / 2)

    def gap_at(self, n: int) -> float:
        n = check_positive_int(n, "n")
        if n == self.n:
            return self.value
        return (
            type(self)
            .of(
                self.version,
                self.emp,
                self.lo,
                self.width,
                n,
                self.code_bits,
                self.delta,
                self.chance,
                None if self.sumsq is None else self.sumsq * n / self.n,
            )
            .value
        )

    @property
    def trivial_reason(self) -> str:
        if self.value >= LOSS_RANGE:
            return f"the bound {self.value:.6g} is at or above the loss range {LOSS_RANGE:g}"
        if self.bound >= self.chance:
            return f"the bound {self.bound:.6g} is at or above random guessing {self.chance:.6g}"
        return ""

    def _dict_fields(self) -> dict:
        return {
            "version": self.version,
            "emp": self.emp,
            "lo": self.lo,
            "width": self.width,
            "code_bits": self.code_bits,
            "delta": self.delta,
            "chance": self.chance,
            "bound_units": self.bound,
            "sumsq": self.sumsq,
        }

    @classmethod
    def examples(cls) -> list:
        lo, w = smoothed_range(84, 0.05)
        return [
            cls.of("token", 2.3, lo, w, 4_000_000, 2.0e5, 0.05, math.log2(84)),
            cls.of("document", 2.3, lo, w, 60_000, 2.0e5, 0.05, math.log2(84)),
            cls.of("document", 0.3, 0.0, 1.0, 50_000, 1.0e3, 0.05, 1 - 1 / 84),
            cls.of("token-kl", 2.3, lo, w, 4_000_000, 2.0e5, 0.05, math.log2(84)),
            cls.of("token-eb", 2.3, lo, w, 4_000_000, 2.0e5, 0.05, math.log2(84), 4_000_000 * 9.0),
            cls.of("test", 2.3, lo, w, 8_000, 0.0, 0.05, math.log2(84)),
        ]


def lm_certificates(
    emp,
    sumsq,
    errors,
    V,
    alpha,
    n_samples,
    M,
    code_bits,
    delta,
    *,
    heldout=None,
    n_held=None,
    heldout_errors=None,
) -> dict:
    """The certificates of one language model reported together, each at ``delta`` (split a total
    confidence over them before calling): the smoothed log-loss (mean ``emp`` bits per character, sum of
    squares ``sumsq``, over ``M`` training characters in ``n_samples`` documents) at the token level (Azuma
    ``"token"``, kl form ``"token-kl"``, empirical Bernstein ``"token-eb"``) and the document level
    (``"document"``); the top-1 error rate ``errors / M`` at the token level (kl form, ``"token_err"``;
    Azuma, ``"token_err_azuma"``, the column the Part VII sweep saved) and the document level (``"doc_err"``); with ``heldout`` (the held-out mean loss over ``n_held``
    documents) the test-set bound ``"test"`` (and ``"test_err"`` from ``heldout_errors``, a rate).
    ``code_bits``: the model's whole code (the family flag included, :data:`FAMILY_BITS`).

    Book: :prf:ref:`cor-lm-top1`.
    """
    lo, width = smoothed_range(V, alpha)
    chance, err_chance = math.log2(V), 1 - 1 / V
    err = errors / M
    out = {
        "lo": lo,
        "width": width,
        "token": CompressionBound.of("token", emp, lo, width, M, code_bits, delta, chance),
        "token-kl": CompressionBound.of("token-kl", emp, lo, width, M, code_bits, delta, chance),
        "token-eb": CompressionBound.of(
            "token-eb", emp, lo, width, M, code_bits, delta, chance, sumsq
        ),
        "document": CompressionBound.of(
            "document", emp, lo, width, n_samples, code_bits, delta, chance
        ),
        "token_err": CompressionBound.of(
            "token-kl", err, 0.0, 1.0, M, code_bits, delta, err_chance
        ),
        "token_err_azuma": CompressionBound.of(
            "token", err, 0.0, 1.0, M, code_bits, delta, err_chance
        ),
        "doc_err": CompressionBound.of(
            "document", err, 0.0, 1.0, n_samples, code_bits, delta, err_chance
        ),
    }
    if heldout is not None:
        out["test"] = CompressionBound.of("test", heldout, lo, width, n_held, 0.0, delta, chance)
        if heldout_errors is not None:
            out["test_err"] = CompressionBound.of(
                "test", heldout_errors, 0.0, 1.0, n_held, 0.0, delta, err_chance
            )
    return out
