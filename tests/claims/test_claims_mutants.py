"""Checks that can fail: every claim has a provenance and mutants, and its check rejects every mutant.

A mutant is a deliberately wrong version of a claim (a constant halved or doubled, a term dropped, the
right side scaled by 1/2, a Lipschitz constant replaced by a smaller one), made by patching the genbound
function or constant the check uses. The fast suite runs a sample of mutants; with
``GENBOUND_ALL_MUTANTS=1`` (CI sets it) every mutant of every claim runs, and the tightness rule is
checked on every claim: at least 85% of the claims have worst ratio >= 0.5, every other one says why
(``loose_reason``).
"""

from __future__ import annotations

import math
import os

import pytest

from genbound import claims
from genbound.claims import LOOSE_THRESHOLD, PROVENANCES

ALL = os.environ.get("GENBOUND_ALL_MUTANTS") == "1"
LABELS = claims.labels()
#: One cheap claim per module and kind of mutant (constant, function of the package, right side of the
#: claim module, a mutant that patches sympy's constant), run in the fast suite.
SAMPLE = [
    "lem-mcdiarmid",
    "lem-softmax-linf-l1",
    "lem-tt-cover-extreme",
    "thm-tt-single-layer",
    "lem-sa-matrix-sensitivity",
    "lem-spectral-counting",
    "lem-zhang-cover",
    "thm-edelman-type",
]


def test_every_claim_has_a_provenance_and_mutants():
    for c in claims.all_claims():
        assert c.provenance in PROVENANCES, c.label
        assert len(c.mutants) >= 1, f"{c.label} has no mutant"
        for m in c.mutants:
            assert m.name and m.what and m.patches, (c.label, m.name)


def test_recalled_claims_say_so():
    assert claims.get("lem-zhang-cover").provenance == "recalled"


def test_mutant_restores_the_package():
    """A mutant patches only while it runs; afterwards the constant is the derived one again."""
    from genbound import rademacher as rad

    before = rad.MCDIARMID_EXPONENT_COEF
    (m,) = claims.get("lem-mcdiarmid").mutants
    with m.applied():
        assert rad.MCDIARMID_EXPONENT_COEF == 2 * before
    assert rad.MCDIARMID_EXPONENT_COEF == before


def test_a_surviving_mutant_is_reported():
    """The machinery itself: a mutant that changes nothing survives, and an exception is not a kill."""
    import dataclasses

    from genbound import rademacher as rad
    from genbound.claims import Mutant, scaled

    c = claims.get("lem-mcdiarmid")
    harmless = scaled(rad, "MCDIARMID_EXPONENT_COEF", 1.0, name="identity", what="nothing changes")

    def boom(old):
        def f(*a, **k):
            raise RuntimeError("boom")

        return f

    crash = Mutant("crash", "raises", ((rad, "mcdiarmid_tail", boom),))
    c2 = dataclasses.replace(c, mutants=(harmless, crash))
    res = {r.name: r for r in c2.check_mutants(0)}
    assert res["identity"].killed is False
    assert res["crash"].killed is False and "RuntimeError" in res["crash"].note


@pytest.mark.slow  # over 15 s here (make test-fast leaves it out)
@pytest.mark.parametrize("label", SAMPLE)
def test_sample_of_mutants_is_killed(label):
    for r in claims.check_mutants(label):
        assert r.killed, (
            f"{label}: mutant {r.name} ({r.what}) survived, worst ratio {r.worst_ratio}"
        )


@pytest.mark.skipif(not ALL, reason="set GENBOUND_ALL_MUTANTS=1 to run every mutant (CI does)")
@pytest.mark.parametrize("label", LABELS)
def test_every_mutant_is_killed(label):
    r = claims.check(label)
    assert r.passed, r
    for m in claims.check_mutants(label):
        assert m.killed, (
            f"{label}: mutant {m.name} ({m.what}) survived, worst ratio {m.worst_ratio}: {m.note}"
        )


@pytest.mark.skipif(not ALL, reason="set GENBOUND_ALL_MUTANTS=1 to run every claim (CI does)")
def test_tightness_rule():
    results = {label: claims.check(label) for label in LABELS}
    tight = [k for k, r in results.items() if r.worst_ratio >= LOOSE_THRESHOLD]
    for k, r in results.items():
        c = claims.get(k)
        if r.worst_ratio < LOOSE_THRESHOLD:
            assert c.loose_reason and c.loose_reason.strip(), (
                f"{k}: worst ratio {r.worst_ratio:.3f}, no loose_reason"
            )
    assert len(tight) >= math.ceil(0.85 * len(results)), (
        f"only {len(tight)} of {len(results)} claims are tight"
    )
    assert results["thm-rademacher-generalization"].worst_ratio >= LOOSE_THRESHOLD


def test_cli_json_fields(capsys):
    import json

    from genbound.cli import main

    assert main(["claims", "--check", "--mutants", "--json", "--select", "lem-stable-rank"]) == 0
    d = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert d["provenance"] == "standard" and d["loose_reason"] is None
    assert d["mutants"] and all({"name", "what", "killed"} <= set(m) for m in d["mutants"])
    assert all(m["killed"] for m in d["mutants"])


def test_cli_mutants_needs_check(capsys):
    from genbound.cli import main

    assert main(["claims", "--mutants"]) == 2
    assert "--mutants needs --check" in capsys.readouterr().err


def test_timed_check_fails_a_check_that_does_not_return():
    """The time limit of the checks whose mutants may loop: ``(inf, 0)`` after the limit, the check's own
    value otherwise."""
    import math
    import time

    from genbound.claims._core import timed_check

    assert timed_check(lambda: (0.5, 3), 1.0) == (0.5, 3)
    t0 = time.perf_counter()
    assert timed_check(lambda: time.sleep(5) or (0.5, 3), 0.2) == (math.inf, 0)
    assert time.perf_counter() - t0 < 2.0


def test_function_check_stops_above():
    """A FunctionCheck whose function yields its parts stops at the first part above ``stop_above`` (as the
    other checks do); without it every part runs, and the worst ratio and trials are those of the whole."""
    from genbound.claims import AllOf, FunctionCheck

    seen = []

    def parts(seed):
        for i in range(1000):
            seen.append(i)
            yield (2.0 if i in (5, 700) else 0.5), 3

    whole = FunctionCheck(parts).run(0)
    assert whole == (2.0, 3000, 0, "") and len(seen) == 1000
    seen.clear()
    assert FunctionCheck(parts).run(0, stop_above=1.0) == (2.0, 18, 0, "") and len(seen) == 6
    seen.clear()
    assert AllOf((FunctionCheck(parts),)).run(0, 1.0)[:2] == (2.0, 18) and len(seen) == 6
    seen.clear()
    assert FunctionCheck(parts).run(0, stop_above=5.0) == (2.0, 3000, 0, "") and len(seen) == 1000
    # a function that returns (worst, trials) runs whole, as before; a NaN part is a failed check
    assert FunctionCheck(lambda s: (0.75, 4)).run(0, stop_above=0.5) == (0.75, 4, 0, "")
    nan = FunctionCheck(lambda s: iter([(0.5, 1), (math.nan, 1), (0.5, 1)])).run(0)
    assert nan == (math.inf, 3, 0, "1 NaN ratio(s)")


def test_a_function_check_mutant_run_stops_at_the_first_violation():
    """Claim.check_mutants passes ``stop_above`` down to a FunctionCheck: a killed mutant stops early."""
    from genbound import rademacher as rad
    from genbound.claims import Claim, FunctionCheck, scaled

    seen = []

    def parts(seed):
        for i in range(500):
            seen.append(i)
            yield rad.MCDIARMID_EXPONENT_COEF / 2.0, 1

    c = Claim(
        label="x",
        statement="s",
        chapter="c",
        provenance="standard",
        numeric=FunctionCheck(parts),
        mutants=(scaled(rad, "MCDIARMID_EXPONENT_COEF", 3.0, name="big", what="w"),),
    )
    r = c.check(0)
    assert r.passed and r.trials == 500 and len(seen) == 500
    seen.clear()
    (m,) = c.check_mutants(0)
    assert m.killed and m.worst_ratio == 3.0 and len(seen) == 1


def test_no_confidence_split_reaches_the_from_model_bounds():
    """thm-radius-union's ``no-confidence-split`` (every grid point at the full delta) patches
    ``radius_grid.union_delta``; the bounds at a model's norms must see it, so the from-model part of the
    check fails under it (and passes without it)."""
    from genbound.claims import FunctionCheck
    from genbound.claims._part2_rows import from_model_agreement

    (mut,) = [m for m in claims.get("thm-radius-union").mutants if m.name == "no-confidence-split"]
    check = FunctionCheck(from_model_agreement)
    with mut.applied():
        worst, trials, _, _ = check.run(2000, stop_above=1.0 + 1e-9)
    assert worst > 1.01 and trials < 48
    worst, trials, _, _ = check.run(2000)
    assert worst <= 1.0 + 1e-9 and trials == 48
