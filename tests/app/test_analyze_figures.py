"""``genbound analyze --plot FILE`` and ``--svals FILE.npz``: the figure a practitioner puts in a report
(titled with the model, the family and the verdict's first clause; one row of panels per matrix kind: a
per-layer view and a log-log ESD, each non-empty and legible), drawn for spectra-only families too and
never at the cost of the ``--csv`` of the same command; and every matrix's singular values exported,
equal to an independent float64 SVD of the raw weights."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from genbound.cli import main
from genbound.testing import make_bert_checkpoint

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HID, HEADS, DFF, LAYERS = 16, 2, 32, 3
DH = HID // HEADS


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny-bert"
    make_bert_checkpoint(path, layers=LAYERS, heads=HEADS, hidden=HID, d_ff=DFF, seed=2, std=0.5)
    return path


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from reference_families import make_model

    path = tmp_path_factory.mktemp("ckpt") / "tiny-llama"
    make_model("llama", seed=3).save_pretrained(path)
    return path


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _run(argv, capsys, rc=0):
    capsys.readouterr()
    assert main(["analyze", *map(str, argv), "--device", "cpu", "--quiet"]) == rc
    return capsys.readouterr()


def _check_figure(fig, a, kinds):
    from genbound.plotting import tick_label_problems

    title = fig._suptitle.get_text()
    w = a.weights
    name = "/".join(w.source.split("/")[-2:])  # the folder and its parent
    assert title.startswith(f"{name}: {w.family}, {w.n_layers} layers")
    first = a.verdict().split(";")[0].strip()
    assert " ".join(title.split("\n")[1:]) == first
    axes = fig.axes
    assert len(axes) == 2 * len(kinds)
    for row, kind in enumerate(kinds):
        left, right = axes[2 * row], axes[2 * row + 1]
        assert left.get_title() == f"{kind}: per layer" and left.get_xlabel() == "layer"
        assert right.get_title().startswith(f"{kind}: ESD of ")
        assert right.get_xscale() == "log" and right.get_yscale() == "log"
        assert len(left.collections) >= 1 and len(left.collections[0].get_offsets()) > 0
        assert len(right.patches) >= 1  # the histogram
        assert len(right.lines) == 2  # largest and median sigma_max^2 marked
    assert tick_label_problems(fig) == []


def test_bound_model_figure_is_titled_with_one_row_per_kind(bert, tmp_path, capsys):
    import genbound
    from genbound.analysis.figures import analysis_figure

    png, csv = tmp_path / "f.png", tmp_path / "t.csv"
    _run([bert, "--plot", png, "--csv", csv], capsys)
    img = plt.imread(png)
    assert img.shape[0] > img.shape[1] > 600 and img[..., :3].std() > 0.05  # tall, not blank
    assert len(pd.read_csv(csv)) == LAYERS * (2 * HEADS + 2)
    a = genbound.analyze(bert, device="cpu")
    _check_figure(analysis_figure(a), a, ["QK", "V", "M_in", "M_out"])


def test_spectra_only_figure_and_csv_in_one_command(llama, tmp_path, capsys):
    import genbound
    from genbound.analysis.figures import analysis_figure

    png, csv = tmp_path / "f.png", tmp_path / "t.csv"
    out = _run([llama, "--plot", png, "--csv", csv], capsys).out
    assert "SPECTRA ONLY" in out and png.stat().st_size > 10_000 and csv.stat().st_size > 0
    a = genbound.analyze(llama, device="cpu")
    _check_figure(analysis_figure(a), a, ["QK", "V", "M_gate", "M_in", "M_out"])


def test_plot_or_svals_with_compare_is_refused_first(bert, tmp_path, capsys):
    for opt, name in (("--plot", "f.png"), ("--svals", "s.npz")):
        err = _run([bert, "--compare", bert, opt, tmp_path / name], capsys, rc=2).err
        assert err.startswith(f"genbound: error: {opt} and --compare") and err.count("\n") == 1


# ------------------------------------------------------------------------------------------ --svals
def _raw(path):
    from safetensors.torch import load_file

    return {k: v.double().numpy() for k, v in load_file(str(path / "model.safetensors")).items()}


def test_svals_are_every_matrix_of_an_independent_svd(bert, tmp_path, capsys):
    npz, csv = tmp_path / "s.npz", tmp_path / "t.csv"
    d = json.loads(_run([bert, "--svals", npz, "--csv", csv, "--json"], capsys).out)
    z = np.load(npz)
    heads = [f"L{l}.H{h}.{k}" for l in range(LAYERS) for h in range(HEADS) for k in ("QK", "V")]
    ffn = [f"L{l}.{k}" for l in range(LAYERS) for k in ("M_in", "M_out")]
    assert sorted(z.files) == sorted(heads + ffn) and len(z.files) == d["n_matrices"]
    sd = _raw(bert)
    for l in range(LAYERS):
        g = lambda n: sd[f"encoder.layer.{l}.{n}.weight"]  # noqa: E731
        q, k, v = (g(f"attention.self.{x}") for x in ("query", "key", "value"))
        o = g("attention.output.dense")
        for h in range(HEADS):
            s = slice(h * DH, (h + 1) * DH)
            for kind, M in (("QK", q[s].T @ k[s]), ("V", v[s].T @ o[:, s].T)):
                ref = np.linalg.svd(M, compute_uv=False)
                got = z[f"L{l}.H{h}.{kind}"]
                assert got.dtype == np.float64 and len(got) == DH  # rank <= d_head; the rest are 0
                np.testing.assert_allclose(got, ref[:DH], rtol=1e-9, atol=1e-12 * ref[0])
        for kind, M in (("M_in", g("intermediate.dense").T), ("M_out", g("output.dense").T)):
            np.testing.assert_allclose(
                z[f"L{l}.{kind}"], np.linalg.svd(M, compute_uv=False), rtol=1e-9
            )
    t = pd.read_csv(csv)  # the table's sigma_max is each array's first value
    for r in t.itertuples():
        key = f"L{r.layer}.H{r.head}.{r.kind}" if r.head >= 0 else f"L{r.layer}.{r.kind}"
        assert z[key][0] == pytest.approx(r.sigma_max, rel=1e-12)


def test_svals_of_a_spectra_only_family(llama, tmp_path, capsys):
    npz, csv = tmp_path / "s.npz", tmp_path / "t.csv"
    _run([llama, "--svals", npz, "--csv", csv], capsys)
    z, t = np.load(npz), pd.read_csv(csv)
    assert len(z.files) == len(t) and {"L0.M_gate", "L1.H3.QK"} <= set(z.files)
    for r in t.itertuples():
        key = f"L{r.layer}.H{r.head}.{r.kind}" if r.head >= 0 else f"L{r.layer}.{r.kind}"
        assert z[key][0] == pytest.approx(r.sigma_max, rel=1e-12)
        assert np.linalg.norm(z[key]) == pytest.approx(r.frobenius, rel=1e-9)


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("weights.npz", "is a file of the checkpoint"),  # an input of the command (a link)
        ("same-as-csv", "name one file"),
        ("s.txt", "ending in .npz"),
    ],
)
def test_svals_collisions_are_refused_before_work(bert, tmp_path, capsys, target, needle):
    csv = tmp_path / "t.npz"
    path = tmp_path / target if target != "same-as-csv" else csv
    if target == "weights.npz":
        path.symlink_to(bert / "model.safetensors")
    before = (bert / "model.safetensors").read_bytes()
    err = _run([bert, "--svals", path, "--csv", csv], capsys, rc=2).err
    assert err.startswith("genbound: error: --") and needle in err and err.count("\n") == 1
    assert (bert / "model.safetensors").read_bytes() == before and not csv.exists()
