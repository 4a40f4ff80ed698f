"""The package as a whole: import weight, CLI, errors, claims."""

import json
import subprocess
import sys

import pytest

import genbound
from genbound import claims
from genbound.cli import main


def test_import_does_not_pull_jupyter_or_matplotlib():
    code = (
        "import sys, genbound; genbound.schatten_power([1.0], 1); "
        "bad = [m for m in ('matplotlib', 'jupyter_client', 'IPython', 'myst_nb') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cli_help_lists_claims(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "claims" in capsys.readouterr().out


def test_console_script_runs():
    out = subprocess.run(
        [sys.executable, "-m", "genbound.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and genbound.__version__ in out.stdout


def test_cli_claims_check_json(capsys):
    assert main(["claims", "--check", "--json", "--select", "lem-spectral"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["passed"] and r["worst_ratio"] <= 1 + 1e-9 for r in rows)
    assert {"label", "passed", "worst_ratio", "trials"} <= set(rows[0])


def test_unknown_claim_is_a_genbound_error():
    with pytest.raises(genbound.ParameterError, match="no claim with label"):
        claims.get("lem-does-not-exist")


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        genbound.not_a_thing  # noqa: B018


@pytest.mark.parametrize("claim", claims.all_claims(), ids=lambda c: c.label)
def test_claim_passes(claim):
    r = claims.check(claim.label)
    assert r.passed, f"{claim.label}: {r}"
    assert r.trials > 0 or claim.numeric is None


def test_a_false_inequality_is_caught():
    """The adversarial harness must be able to fail: ||W||_F <= ||W||_2 is false for rank >= 2."""
    import torch

    from genbound.claims import Claim, InequalityCheck

    def sample(g, n):
        return {"s": torch.rand(n, 4, generator=g, dtype=torch.float64) + 0.1}

    bad = Claim(
        "lem-false",
        "||W||_F <= ||W||_2",
        "none",
        "standard",
        numeric=InequalityCheck(
            sample,
            lambda s: (s**2).sum(-1).sqrt() / s.max(-1).values,
            lambda x: {"s": x["s"].abs()},
        ),
    )
    r = bad.check()
    assert not r.passed and r.worst_ratio > 1.5


def test_digits_without_scikit_learn_is_one_named_error(monkeypatch):
    """Part V's digits task needs scikit-learn (declared as the 'experiments' extra): without it the
    error names the package and how to install it."""
    from genbound.errors import MissingDependencyError
    from genbound.experiments.predict_gap import family

    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    digits = getattr(family._digits_inputs, "__wrapped__", family._digits_inputs)
    with pytest.raises(MissingDependencyError, match="scikit-learn"):
        digits(16)
