"""``genbound analyze A --compare B``: two checkpoints of one architecture, matrix by matrix.

B is a copy of A with two weights changed (layer 0's feed-forward input matrix scaled by 1.5, and
the query rows of head 0 in layer 1 perturbed): exactly the matrices built from them differ, by the
ratios an independent float64 SVD gives; every other matrix has ratio exactly 1."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch

from genbound.cli import main

pytest.importorskip("safetensors")

HID, HEADS, DFF, LAYERS = 8, 2, 16, 2
DH = HID // HEADS


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from safetensors.torch import load_file, save_file

    from genbound.testing import make_bert_checkpoint

    a = tmp_path_factory.mktemp("base")
    make_bert_checkpoint(a, layers=LAYERS, heads=HEADS, hidden=HID, d_ff=DFF, seed=0)
    b = tmp_path_factory.mktemp("tuned")
    shutil.copytree(a, b, dirs_exist_ok=True)
    sd = load_file(str(b / "model.safetensors"))
    sd["encoder.layer.0.intermediate.dense.weight"] = (
        sd["encoder.layer.0.intermediate.dense.weight"] * 1.5
    )
    q = sd["encoder.layer.1.attention.self.query.weight"].clone()
    g = torch.Generator().manual_seed(1)
    q[:DH] += 0.1 * torch.randn(DH, HID, generator=g, dtype=q.dtype)  # head 0's rows
    sd["encoder.layer.1.attention.self.query.weight"] = q
    save_file(sd, str(b / "model.safetensors"), metadata={"format": "pt"})
    return a, b


def _sigma_max(path):
    """Independent float64 largest singular values per (kind, layer, head), from the raw file."""
    from safetensors.torch import load_file

    sd = {k: v.double().numpy() for k, v in load_file(str(path / "model.safetensors")).items()}
    out = {}
    for l in range(LAYERS):
        g = lambda n: sd[f"encoder.layer.{l}.{n}.weight"]  # noqa: E731
        q, k, v = (g(f"attention.self.{x}") for x in ("query", "key", "value"))
        o = g("attention.output.dense")
        for h in range(HEADS):
            s = slice(h * DH, (h + 1) * DH)
            out["QK", l, h] = np.linalg.norm(q[s].T @ k[s], 2)
            out["V", l, h] = np.linalg.norm(v[s].T @ o[:, s].T, 2)
        out["M_in", l, -1] = np.linalg.norm(g("intermediate.dense").T, 2)
        out["M_out", l, -1] = np.linalg.norm(g("output.dense").T, 2)
    return out


CHANGED = {("M_in", 0, -1), ("QK", 1, 0)}


def _run(args, capsys, rc=0):
    capsys.readouterr()
    assert main(["analyze", *map(str, args), "--device", "cpu", "--quiet"]) == rc
    return capsys.readouterr()


def test_changed_matrices_and_only_they_differ(pair, tmp_path, capsys):
    a, b = pair
    csv = tmp_path / "cmp.csv"
    d = json.loads(_run([a, "--compare", b, "--json", "--csv", csv], capsys).out)
    t = pd.read_csv(csv)
    rows = pd.DataFrame(d["matrices"])
    assert len(t) == len(rows) == LAYERS * (2 * HEADS + 2)
    ra, rb = _sigma_max(a), _sigma_max(b)
    for _, r in t.iterrows():
        key = (r["kind"], int(r["layer"]), int(r["head"]))
        assert r["sigma_max_a"] == pytest.approx(ra[key], rel=1e-9)
        assert r["sigma_max_b"] == pytest.approx(rb[key], rel=1e-9)
        spectral = ["sigma_max_ratio", "frobenius_ratio", "stable_rank_ratio"]
        if key in CHANGED:
            assert r["sigma_max_ratio"] != 1.0
            assert r["sigma_max_ratio"] == pytest.approx(rb[key] / ra[key], rel=1e-9)
        else:
            assert (r[spectral] == 1.0).all(), key
            assert r["rank_diff"] == 0
    m_in0 = t[(t["kind"] == "M_in") & (t["layer"] == 0)].iloc[0]
    # 1.5 up to the float32 rounding of the stored product (the exact ratio is checked above)
    assert m_in0["sigma_max_ratio"] == pytest.approx(1.5, rel=1e-6)
    assert m_in0["frobenius_ratio"] == pytest.approx(1.5, rel=1e-6)
    assert m_in0["stable_rank_ratio"] == pytest.approx(1.0, rel=1e-6)
    # JSON rows are the CSV rows
    assert list(rows["sigma_max_ratio"]) == list(t["sigma_max_ratio"])
    # the bounds side by side are each model's own analysis
    import genbound

    ga, gb = genbound.analyze(a, device="cpu"), genbound.analyze(b, device="cpu")
    sa = d["bound"]["spectral_adaptive"]
    assert (sa["a"], sa["b"]) == (ga.spectral.value, gb.spectral.value)
    assert sa["ratio"] == pytest.approx(gb.spectral.value / ga.spectral.value, rel=1e-12)
    keys = ["kind", "layer", "head"]
    back = t.sort_values(keys).reset_index(drop=True)  # the table is sorted by change
    for g, col in ((ga, "contribution_a"), (gb, "contribution_b")):
        own = g.matrices().sort_values(keys).reset_index(drop=True)
        assert list(back[col]) == pytest.approx(list(own["contribution"]), 1e-12)
    assert d["spectra_only"] is False and d["n_changed"] >= len(CHANGED)


def test_a_checkpoint_against_itself_is_all_ones(pair, capsys):
    a, _ = pair
    d = json.loads(_run([a, "--compare", a, "--json"], capsys).out)
    assert d["n_changed"] == 0 and d["bound"]["spectral_adaptive"]["ratio"] == 1.0
    t = pd.DataFrame(d["matrices"])
    assert (t[[c for c in t.columns if c.endswith("_ratio")]] == 1.0).all().all()


def test_console_shows_both_bounds_and_the_table(pair, capsys):
    a, b = pair
    out = _run([a, "--compare", b], capsys).out
    lines = out.splitlines()
    assert lines[0].startswith(f"compare A = {a} with B = {b}")
    assert lines[1].startswith(f"changed: {len(CHANGED)} of {LAYERS * (2 * HEADS + 2)} matrices")
    assert lines[2].startswith("proved capacity (theorem P): A ") and " B " in lines[2]
    assert lines[3].startswith("spectral-adaptive proxy (not a bound): A ")
    assert "sigma_max_ratio" in out and "contribution_ratio" in out


@pytest.mark.parametrize(
    "other, needles",
    [
        (dict(hidden=16), ["hidden size 8 vs 16", "d_ff"]),
        (dict(layers=3), ["layers 2 vs 3"]),
    ],
)
def test_mismatched_architectures_are_one_line(pair, tmp_path, capsys, other, needles):
    from genbound.testing import make_bert_checkpoint

    a, _ = pair
    kw = dict(layers=LAYERS, heads=HEADS, hidden=HID, d_ff=DFF, seed=0) | other
    if "hidden" in other:
        kw["d_ff"] = 32
    make_bert_checkpoint(tmp_path, **kw)
    csv = tmp_path / "out.csv"
    err = _run([a, "--compare", tmp_path, "--csv", csv], capsys, rc=2).err
    assert err.startswith("genbound: error: --compare:") and err.count("\n") == 1
    assert "not the same architecture" in err
    for n in needles:
        assert n in err, (n, err)
    assert not csv.exists()


def test_spectra_only_pair_compares_spectra_without_a_bound(tmp_path, capsys):
    from reference_families import make_model

    p, q = tmp_path / "a", tmp_path / "b"
    make_model("llama", seed=0).save_pretrained(p)
    make_model("llama", seed=1).save_pretrained(q)
    d = json.loads(_run([p, "--compare", q, "--json"], capsys).out)
    assert d["spectra_only"] is True and d["bound"] is None
    assert not any(k.startswith("contribution") for k in d["matrices"][0])
    out = _run([p, "--compare", q], capsys).out
    assert out.splitlines()[2].startswith("SPECTRA ONLY, NO BOUND")
    assert "proxy: A" not in out


def test_plot_with_compare_is_refused_first(pair, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a, b = pair
    err = _run([a, "--compare", b, "--plot", tmp_path / "f.png"], capsys, rc=2).err
    assert err.startswith("genbound: error: --plot and --compare") and err.count("\n") == 1
    assert not (tmp_path / "f.png").exists()


def test_what_moved_leads_sorted_by_change_with_a_layer_summary(pair, tmp_path, capsys):
    a, b = pair
    csv = tmp_path / "cmp.csv"
    d = json.loads(_run([a, "--compare", b, "--json", "--csv", csv], capsys).out)
    t = pd.read_csv(csv)
    # rows sorted by the largest |log ratio|, largest first: the changed matrices lead
    own = ["sigma_max_ratio", "frobenius_ratio", "stable_rank_ratio", "rank_ratio"]
    ratios = t[own].to_numpy(dtype=float)
    assert np.allclose(t["change"], np.abs(np.log(ratios)).max(axis=1), rtol=1e-12, atol=0)
    assert (np.diff(t["change"]) <= 0).all()
    lead = {(r.kind, int(r.layer), int(r.head)) for r in t.head(len(CHANGED)).itertuples()}
    assert lead == CHANGED and (t["change"].iloc[len(CHANGED) :] == 0).all()
    assert d["n_changed"] == len(CHANGED)
    # the JSON's floats bit for bit (Python's float of the CSV text: some pandas parsers round the last bit)
    assert [r["change"] for r in d["matrices"]] == list(
        pd.read_csv(csv, dtype=str)["change"].map(float)
    )
    # per layer and kind: the median ratio over the group's matrices (independent SVDs)
    ra, rb = _sigma_max(a), _sigma_max(b)
    summary = {(r["layer"], r["kind"]): r for r in d["summary"]}
    assert len(summary) == LAYERS * 4 and summary[0, "M_in"]["changed"] == 1
    assert summary[0, "M_in"]["sigma_max_ratio"] == pytest.approx(
        rb["M_in", 0, -1] / ra["M_in", 0, -1], rel=1e-9
    )
    heads = [rb["QK", 1, h] / ra["QK", 1, h] for h in range(HEADS)]
    assert summary[1, "QK"]["sigma_max_ratio"] == pytest.approx(np.median(heads), rel=1e-9)
    assert summary[1, "QK"]["changed"] == 1 and summary[1, "V"]["changed"] == 0
    assert d["bound"]["proved_capacity"]["ratio"] != 1.0  # the proved bound sees the change

    out = _run([a, "--compare", b], capsys).out
    n = LAYERS * (2 * HEADS + 2)
    assert "the largest change: " in out.splitlines()[1]
    assert "per layer and kind (groups with a change)" in out
    assert f"{n - len(CHANGED)} unchanged matrices not listed" in out and "--all" in out
    listed = out.split("stable rank and rank):")[1].splitlines()
    assert len([x for x in listed if x.strip()]) == 1 + len(CHANGED) + 1  # header, rows, count
    full = _run([a, "--compare", b, "--all"], capsys).out
    listed = full.split("stable rank and rank):")[1].splitlines()
    assert len([x for x in listed if x.strip()]) == 1 + n and "not listed" not in full
    assert out.index("per layer and kind") < out.index("largest |log ratio| first")
    assert "contribution_ratio" in out  # shown, although a contribution moves with the others


def test_all_without_compare_is_refused(pair, capsys):
    a, _ = pair
    err = _run([a, "--all"], capsys, rc=2).err
    assert err.startswith("genbound: error: --all") and "--compare" in err


def test_a_checkpoint_against_itself_lists_nothing(pair, capsys):
    a, _ = pair
    out = _run([a, "--compare", a], capsys).out
    assert "A and B have the same spectra" in out and "largest |log ratio|" not in out
    assert "12 unchanged matrices not listed" in out
