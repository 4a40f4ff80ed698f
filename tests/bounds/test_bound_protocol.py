"""Conformance of every bound result class to the protocol of :mod:`genbound.bounds._result`.

In the spirit of scikit-learn's ``check_estimator``: the classes are *discovered* (every public class of
every module of :mod:`genbound.bounds`), not listed, so a new bound that does not follow the protocol
fails this file. Each class is checked on the instances of its ``examples()``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil

import pytest

import genbound.bounds
from genbound.bounds._result import LOSS_RANGE, SAMPLES_LIMIT, BoundResult, smallest_m
from genbound.errors import GenboundError
from genbound.jsonsafe import json_float

#: A public class of genbound.bounds with one of these name endings is a bound result and must conform.
RESULT_SUFFIXES = ("Bound", "Report", "Result")
#: What the protocol implements once; a result class may not redefine it.
IMPLEMENTED_ONCE = ("trivial", "samples_needed", "to_dict")
SHARED_KEYS = ("bound", "value", "trivial", "trivial_reason", "capacity", "n_samples")


def public_classes(package=genbound.bounds):
    """Every class defined in a module of ``package`` whose name does not start with ``_``."""
    out = []
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__ and not name.startswith("_"):
                out.append(obj)
    return out


def result_classes(classes):
    """The bound results among ``classes``: subclasses of BoundResult and every ``*Bound``/``*Report``/``*Result``."""
    return [
        c
        for c in classes
        if c is not BoundResult
        and (issubclass(c, BoundResult) or c.__name__.endswith(RESULT_SUFFIXES))
    ]


def class_violations(cls) -> list[str]:
    """What is wrong with ``cls`` as a bound result class, without instances."""
    bad = []
    if not issubclass(cls, BoundResult):
        return [f"{cls.__name__} does not subclass genbound.bounds._result.BoundResult"]
    for name in IMPLEMENTED_ONCE:
        if getattr(cls, name) is not getattr(BoundResult, name):
            bad.append(f"{cls.__name__} redefines {name} (the protocol implements it once)")
    for name in ("gap_at", "trivial_reason", "examples"):
        if getattr(cls, name) is getattr(BoundResult, name):
            bad.append(f"{cls.__name__} lacks the hook {name}")
    return bad


RESULTS = result_classes(public_classes())
_EXAMPLES: dict = {}


def examples(cls):
    if cls not in _EXAMPLES:
        _EXAMPLES[cls] = cls.examples()
    return _EXAMPLES[cls]


def test_discovery_finds_the_known_results():
    names = {c.__name__ for c in RESULTS}
    assert {"TTBound", "EdelmanBound", "SpectralBoundReport", "EdelmanProxyReport"} <= names


def test_discovery_catches_a_class_off_the_protocol():
    class FakeBound:  # a new bound written without the protocol
        value = 0.5

    class HalfBound(BoundResult):  # on the protocol but redefining samples_needed and without hooks
        def samples_needed(self, target=0.5):
            return 1

    assert result_classes([FakeBound, HalfBound, int]) == [FakeBound, HalfBound]
    assert class_violations(FakeBound) and "subclass" in class_violations(FakeBound)[0]
    msgs = " ".join(class_violations(HalfBound))
    assert "redefines samples_needed" in msgs and "lacks the hook gap_at" in msgs


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_class_conforms(cls):
    assert class_violations(cls) == []
    ex = examples(cls)
    assert len(ex) >= 2 and all(isinstance(r, cls) for r in ex)
    decided = [r.trivial for r in ex if r.trivial is not None]
    assert True in decided and False in decided, (
        "examples() must include a trivial and a non-trivial instance"
    )


def _check_fields(r):
    assert isinstance(r.value, float) and not math.isnan(r.value)
    assert r.n_samples is None or (type(r.n_samples) is int and r.n_samples >= 1)
    assert isinstance(r.capacity, float) and (math.isnan(r.capacity) or r.capacity >= 0)
    reason = r.trivial_reason
    assert reason is None or isinstance(reason, str)
    assert (reason is None) == (r.n_samples is None) == (r.trivial is None)
    if reason is not None:
        assert r.trivial == (reason != "")
        if r.gap_at(r.n_samples) >= LOSS_RANGE:
            assert r.trivial, "a gap at or above the loss range is trivial"


def _check_gap_monotone(r):
    ns = [1, 2, 3, 10, 77, 10**3, 10**5, 10**8, 10**12, 10**20, SAMPLES_LIMIT]
    gaps = [r.gap_at(n) for n in ns]
    assert all(isinstance(g, float) and not math.isnan(g) and g >= 0 for g in gaps)
    assert all(a >= b for a, b in zip(gaps, gaps[1:])), gaps


def _meets(r, target, tol, M, limit=SAMPLES_LIMIT):
    if M == math.inf:
        return r.gap_at(limit) > target
    if not (type(M) is int and 1 <= M <= limit and r.gap_at(M) <= target):
        return False
    below = M - 1 if tol == 0 else math.floor(M / 10**tol)
    return below < 1 or r.gap_at(below) > target


def _check_samples_needed(r):
    assert r.samples_needed() == r.samples_needed(LOSS_RANGE)  # one default: the loss range
    for t, tol in (
        (LOSS_RANGE, 0.3),
        (0.5, 0.0),
        (0.1, 0.5),
    ):  # exact once (bisection steps cost a bound each)
        M = r.samples_needed(t, tol=tol)
        assert _meets(r, t, tol, M), (t, tol, M)
        if tol == 0 and M != math.inf and M > 2:
            assert r.samples_needed(t, limit=M - 1) == math.inf
            assert (
                r.samples_needed(t, tol=1.0, limit=M) == M
            )  # every point below M fails: hi stays M
    for bad in (0.0, -1.0, 1.5, float("nan"), float("inf")):
        with pytest.raises(GenboundError):
            r.samples_needed(bad)


def _leaves(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _leaves(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v)
    else:
        yield obj


def _check_to_dict(r):
    d = r.to_dict()
    json.dumps(d, allow_nan=False)  # strict JSON
    assert all(k in d for k in SHARED_KEYS) and d["bound"] == type(r).__name__
    for leaf in _leaves(d):  # one non-finite policy: None
        assert not (isinstance(leaf, float) and not math.isfinite(leaf))
        assert leaf not in ("inf", "-inf", "nan")
    assert d["value"] == json_float(r.value) and d["capacity"] == json_float(r.capacity)
    assert (
        d["trivial"] == r.trivial
        and d["trivial_reason"] == r.trivial_reason
        and d["n_samples"] == r.n_samples
    )
    assert "samples_needed" not in d
    d = r.to_dict(target=0.5, tol=0.3)
    json.dumps(d, allow_nan=False)
    assert d["target"] == 0.5 and d["samples_needed"] == json_float(r.samples_needed(0.5, tol=0.3))


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_instances_conform(cls):
    for r in examples(cls):
        _check_fields(r)
        _check_gap_monotone(r)
        _check_samples_needed(r)
        _check_to_dict(r)


def _closed_form_agrees(r, t, limit):
    """An overridden ``_smallest_n`` equals the shared bisection of ``gap_at``, up to the one disagreement
    round-off allows: the two differ by one and the bisection's predicate and the closed form's disagree
    at the smaller of the two (checked by evaluating ``gap_at`` there)."""
    closed = r.samples_needed(t, limit=limit)
    bisect = smallest_m(r.gap_at, t, max_m=limit)
    if closed == bisect:
        return True
    if math.inf in (closed, bisect):
        return False
    lo = min(closed, bisect)
    return abs(closed - bisect) == 1 and ((r.gap_at(lo) <= t) == (lo == bisect))


@pytest.mark.parametrize(
    "cls",
    [c for c in RESULTS if c._smallest_n is not BoundResult._smallest_n],
    ids=lambda c: c.__name__,
)
def test_closed_form_override_matches_the_bisection(cls):
    import random

    rng = random.Random(0)
    for r in examples(cls):
        for _ in range(40):
            t = rng.uniform(0.01, 1.0)
            assert _closed_form_agrees(r, t, SAMPLES_LIMIT), (r.capacity, t)
        M = r.samples_needed(0.2)
        if M != math.inf and M > 3:
            for limit in (M - 1, M, M + 1, 2 * M):
                assert _closed_form_agrees(r, 0.2, limit)
