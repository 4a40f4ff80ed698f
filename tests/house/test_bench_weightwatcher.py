"""``benchmarks/bench_weightwatcher.py``: the agreement it reports, and a clean refusal without
WeightWatcher (which is not a genbound requirement; the run against it is skipped when it is missing)."""

from __future__ import annotations

import doctest
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_weightwatcher.py"
TINY = [
    "--layers",
    "2",
    "--heads",
    "2",
    "--hidden",
    "32",
    "--d-ff",
    "64",
    "--repeat",
    "1",
    "--threads",
    "1",
]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_weightwatcher", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _script(*args, pythonpath=None):
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_doctests(bench):
    assert doctest.testmod(bench, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


def _ff_pair(layer=1, smax=3.0, fro=5.0):
    g = {
        "kind": "M_out",
        "layer": layer,
        "head": None,
        "sigma_max": smax,
        "frobenius": fro,
        "stable_rank": fro**2 / smax**2,
        "rank": 7,
    }
    w = {
        "name": f"encoder.layer.{layer}.output.dense",
        "sv_max": smax,
        "lambda_max": smax**2,
        "norm": fro**2,
        "stable_rank": fro**2 / smax**2,
        "matrix_rank": 7.0,
    }
    return g, w


def test_agreement_pairs_the_feed_forward_matrices_by_name(bench):
    g, w = _ff_pair()
    decoy = dict(w, name="encoder.layer.1.attention.output.dense", sv_max=99.0, lambda_max=99.0**2)
    adapter = dict(decoy, name="encoder.layer.1.output.dense.lora_A")
    assert bench.agreement([g], [decoy, adapter, w])["max"] == 0.0
    g2, w2 = _ff_pair(layer=2, smax=4.0)
    assert (
        bench.agreement([g, g2], [w, dict(w2, norm=w2["norm"] * 2)])["max_rel_diff"]["norm"] == 0.5
    )
    off = dict(w, sv_max=3.0 * (1 + 1e-6))
    a = bench.agreement([g], [decoy, off])
    assert (
        a["max_rel_diff"]["sv_max"] == pytest.approx(1e-6 / (1 + 1e-6), rel=1e-9)
        and a["max_rel_diff"]["norm"] == 0.0
    )
    with pytest.raises(bench.BenchError, match="different feed-forward matrices"):
        bench.agreement([g], [decoy])  # attention.output.dense is not M_out
    with pytest.raises(bench.BenchError, match="different feed-forward matrices"):
        bench.agreement([g, _ff_pair(layer=2)[0]], [w])  # a layer only genbound has


def test_refuses_in_one_line_without_weightwatcher(tmp_path):
    if importlib.util.find_spec("weightwatcher") is not None:
        pytest.skip("weightwatcher is importable here")
    out = _script(*TINY)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(
        "bench_weightwatcher: error: weightwatcher is not"
    )


def test_refuses_bad_arguments_in_one_line(tmp_path):
    for args, word in (
        (["--sides", "genbound,nope"], "--sides"),
        (["--repeat", "0"], "--repeat"),
        (["--path", str(tmp_path)], "config.json"),
    ):
        out = _script(*args)
        assert (
            out.returncode == 2
            and out.stderr.startswith("bench_weightwatcher: error:")
            and word in out.stderr
        )
        assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_whole_process_run_at_tiny_size():
    """genbound alone runs without WeightWatcher; with it (when importable) the feed-forward numbers
    agree to rounding."""
    spec = importlib.util.find_spec("weightwatcher")
    sides = "genbound" if spec is None else "genbound,ww-analyze"
    site = None if spec is None else str(Path(spec.origin).parents[1])
    out = _script(*TINY, "--sides", sides, "--json", pythonpath=site)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["medians"]["genbound"]["wall_s"] > 0 and d["medians"]["genbound"]["cpu_s"] > 0
    assert d["shape"]["layers"] == 2 and d["versions"]["torch"]
    if spec is not None:
        a = d["agreement"]["ww-analyze"]
        assert a["n_matrices"] == 2 * 2 and a["max"] <= 1e-12
        assert set(a["max_rel_diff"]) == {
            "sv_max",
            "lambda_max",
            "norm",
            "stable_rank",
            "matrix_rank",
        }
        assert d["ratios"]["ww-analyze"]["wall"] > 0


def test_dense_side_runs_without_weightwatcher_and_agrees():
    """Issue 41: the independent dense float64 pipeline as a whole-process side, no WeightWatcher needed."""
    out = _script(*TINY, "--sides", "genbound,dense", "--json", pythonpath=str(ROOT))
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert set(res["medians"]) == {"genbound", "dense"}
    a = res["agreement"]["dense"]
    assert set(a["max_rel_diff"]) == {"value", "edelman_log"} and a["max"] <= 1e-9
    assert res["ratios"]["dense"]["cpu"] > 0
