"""``genbound analyze`` on a model whose blocks the papers' bound does not cover: a spectra-only
report, labelled as such, with no bound value anywhere, and every matrix equal to an independent
float64 SVD of the raw state dict (the reference of ``test_families_decoders``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from genbound.cli import main
from reference_families import RTOL, make_model, reference_matrices
from reference_proxies import rel

transformers = pytest.importorskip("transformers")

#: Words of a bound report: none may appear in a spectra-only console report.
BOUND_WORDS = ("proxy", "Edelman", "capacity", "p_opt", "contribution", "vacuous at", "gap =")


@pytest.fixture(scope="module", params=["llama", "mixtral"])
def saved(request, tmp_path_factory):
    arch = request.param
    path = tmp_path_factory.mktemp(arch)
    make_model(arch, seed=3).save_pretrained(path)
    return arch, path


def _reference_rows(arch, path):
    rows = []
    for kind, l, h, e, M in reference_matrices(arch, path):
        s = np.linalg.svd(M, compute_uv=False)
        rows.append(
            dict(
                kind=kind,
                layer=l,
                head=h,
                expert=e,
                rows=M.shape[0],
                cols=M.shape[1],
                rank=int((s > 1e-10 * min(M.shape) * max(s[0], 1)).sum()),
                sigma_max=s[0],
                frobenius=np.linalg.norm(M),
                nuclear=s.sum(),
                stable_rank=(np.linalg.norm(M) / s[0]) ** 2,
                norm_21=np.linalg.norm(M, axis=0).sum(),
            )
        )
    return pd.DataFrame(rows)


def _check_rows(got: pd.DataFrame, ref: pd.DataFrame):
    assert len(got) == len(ref)
    for c in ("kind", "layer", "head", "expert", "rows", "cols", "rank"):
        assert list(got[c]) == list(ref[c]), c
    for c in ("sigma_max", "frobenius", "nuclear", "stable_rank", "norm_21"):
        for a, b in zip(got[c], ref[c]):
            assert rel(a, b) <= RTOL, (c, a, b)


def _run(args, capsys):
    capsys.readouterr()
    rc = main(["analyze", *map(str, args), "--device", "cpu", "--quiet"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert out.err == ""
    return out.out


def test_json_is_spectra_only_with_every_matrix(saved, capsys):
    arch, path = saved
    d = json.loads(_run([path, "--json"], capsys))
    assert d["spectra_only"] is True and d["bound"] is None
    for k in ("spectral_adaptive", "edelman", "edelman_log", "spectral_adaptive_capacity"):
        assert d[k] is None, k
    want = {"QK", "M_gate", "M_in", "M_out"} | ({"router"} if arch == "mixtral" else set())
    assert set(d["uncovered"]) == want
    assert "rotary" in d["uncovered"]["QK"] and "bounded inputs" in d["uncovered"]["M_gate"]
    got = pd.DataFrame(d["matrices"])
    got["rows"], got["cols"] = got["shape"].str[0], got["shape"].str[1]
    _check_rows(got, _reference_rows(arch, path))
    assert set(got.loc[~got["covered"], "kind"]) == want
    assert d["n_matrices"] == len(got) and d["kv_heads"] == 2
    assert d["experts"] == (3 if arch == "mixtral" else None)


def test_console_is_labelled_and_has_no_bound(saved, capsys):
    arch, path = saved
    out = _run([path], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("SPECTRA ONLY, NO BOUND:") and "does not cover" in lines[0]
    kinds = ["QK", "M_gate", "M_in", "M_out"] + (["router"] if arch == "mixtral" else [])
    for i, kind in enumerate(kinds, start=1):  # one short line per uncovered kind, right after
        assert lines[i].split()[0] == kind and len(lines[i]) <= 120
    assert "rotary" in lines[1] and "grouped-query" not in lines[1]
    for w in BOUND_WORDS:
        assert w not in out, w
    # the table's numbers are the reference's (printed to 5 significant digits)
    start = next(i for i, s in enumerate(lines) if s.split()[:3] == ["kind", "layer", "head"])
    cols = lines[start].split()
    body = [s.split() for s in lines[start + 1 :]]
    ref = _reference_rows(arch, path)
    assert len(body) == len(ref)
    for r, (_, want) in zip(body, ref.iterrows()):
        row = dict(zip(cols, r))
        assert row["kind"] == want["kind"] and int(row["rank"]) == want["rank"]
        for c in ("sigma_max", "frobenius", "stable_rank"):
            assert abs(float(row[c]) / want[c] - 1) < 1e-4, (c, row[c], want[c])


def test_csv_and_n_samples(saved, tmp_path, capsys):
    arch, path = saved
    csv = tmp_path / "m.csv"
    out = _run([path, "--csv", csv, "--n-samples", 1000], capsys)
    assert "--n-samples 1000: no bound exists" in out
    for w in BOUND_WORDS:
        assert w not in out, w
    t = pd.read_csv(csv)
    assert "contribution" not in t.columns and "note" in t.columns
    _check_rows(t, _reference_rows(arch, path))
    d = json.loads(_run([path, "--json", "--n-samples", 1000], capsys))
    assert d["n_samples"] == 1000 and d["spectral_adaptive_gap"] is None
    assert d["spectral_adaptive_samples_needed"] is None and "no bound exists" in d["verdict"]


def test_plot_draws_the_spectra_figure_and_keeps_the_csv(saved, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    arch, path = saved
    png, csv = tmp_path / "f.png", tmp_path / "t.csv"
    capsys.readouterr()
    argv = ["analyze", str(path), "--plot", str(png), "--csv", str(csv), "--device", "cpu"]
    assert main(argv) == 0
    assert "SPECTRA ONLY, NO BOUND" in capsys.readouterr().out
    assert png.stat().st_size > 10_000
    _check_rows(pd.read_csv(csv), _reference_rows(arch, path))


def test_api_says_there_is_no_bound(saved):
    import genbound
    from genbound.analysis import NoBoundError

    arch, path = saved
    a = genbound.analyze(path, device="cpu")
    assert a.spectra_only is True and a.bound is None
    with pytest.raises(NoBoundError, match="no bound"):
        a.spectral
    with pytest.raises(NoBoundError, match="spectra-only"):
        a.edelman
    assert getattr(a, "spectral", None) is None
    _check_rows(a.matrices(), _reference_rows(arch, path))
    assert "no bound exists" in a.verdict()


def test_covered_analysis_is_not_spectra_only(tmp_path):
    import genbound
    from genbound.testing import make_bert_checkpoint

    make_bert_checkpoint(tmp_path, layers=1, heads=2, hidden=8, d_ff=16, seed=0)
    a = genbound.analyze(tmp_path, device="cpu")
    assert a.spectra_only is False and a.spectral.value > 0


def test_routes_device_and_time_only_with_verbose(saved, capsys):
    """The spectrum route of each matrix and the run's device and time are the implementation's:
    printed with --verbose, not by default (the numbers of the table are the same)."""
    arch, path = saved
    plain, verbose = (
        _run([path], capsys).splitlines(),
        _run([path, "--verbose"], capsys).splitlines(),
    )

    def header(lines):
        return next(s.split() for s in lines if s.split()[:3] == ["kind", "layer", "head"])

    assert "route" not in header(plain) and "route" in header(verbose)
    assert not any("device cpu" in s for s in plain)
    assert any("device cpu" in s for s in verbose)
