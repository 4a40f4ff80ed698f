"""Tests of Part V (genbound.experiments.predict_gap and `genbound experiment predict-gap`)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import kendalltau

from genbound import cli
from genbound.errors import GenboundError, ParameterError
from genbound.experiments import predict_gap as pg

TINY = pg.FamilyConfig(tasks=("digits",), widths=(16,), lrs=(3e-3,), weight_decays=(0.0, 0.1),
                       n_train={"digits": (60, 120)}, seeds=2, steps=400, warmup=20)


@pytest.mark.parametrize("task", pg.TASKS)
def test_stacked_logits_equal_the_module(task):
    """The stacked forward pass used for training is ReferenceTransformer.forward, model by model."""
    datas = [pg.make_task_data(task, width=16, n_train=9, seed=s, n_test=5) for s in (0, 1)]
    nets = [pg._build(16, datas[0].n_classes, s) for s in (3, 4)]
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for net in nets:
            for p in net.parameters():
                p.add_(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    P = {n: torch.stack([dict(net.named_parameters())[n].detach() for net in nets]) for n, _ in
         nets[0].named_parameters()}
    z = pg.stacked_logits(P, torch.stack([d.X_train for d in datas]), nets[0].score_scale)
    for k in range(2):
        ref = nets[k](datas[k].X_train)
        assert torch.allclose(z[k], ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("task", pg.TASKS)
def test_input_radius_bounds_every_row(task):
    d = pg.make_task_data(task, width=24, n_train=200, seed=0, n_test=300)
    for X in (d.X_train, d.X_test):
        assert torch.linalg.vector_norm(X, dim=-1).max().item() <= d.B_X + 1e-12
    assert d.X_train.shape[1:] == d.X_test.shape[1:]


def test_digits_split_is_disjoint_and_seeded():
    a = pg.make_task_data("digits", width=16, n_train=100, seed=1)
    b = pg.make_task_data("digits", width=16, n_train=100, seed=1)
    assert torch.equal(a.X_train, b.X_train) and len(a.y_test) == 1797 - 100
    c = pg.make_task_data("digits", width=16, n_train=100, seed=2)
    assert not torch.equal(a.X_train, c.X_train) and a.n_classes == 10
    # train and test partition the 1,797 images: together they hold every label count exactly
    full = torch.bincount(torch.cat([a.y_train, a.y_test]), minlength=10)
    X, y = pg._digits_inputs(16)
    assert torch.equal(full, torch.bincount(y, minlength=10))


def test_measures_are_finite_and_consistent():
    net = pg._build(16, 2, 0)
    init = pg._build(16, 2, 0)
    m0 = pg.measures_for(net, init, m=100, seq_len=16, B_X=5.0, delta=0.05, margin=1.0)
    assert set(m0) == set(pg.MEASURES)
    assert all(math.isfinite(v) for v in m0.values())
    assert m0["l11_dist_from_init"] == 0 and m0["fro_dist_from_init"] == 0
    assert m0["spectral_p0"] >= m0["spectral_adaptive"] - 1e-9      # the adaptive choice is the minimum
    assert m0["spectral_pmax"] >= m0["spectral_adaptive"] - 1e-9
    assert m0["n_params"] == sum(p.numel() for p in net.parameters())


def test_family_trains_resumes_and_summarises(tmp_path, capsys):
    path = tmp_path / "fam.csv"
    first = pg.run_family(TINY, csv_path=path, progress=False)
    assert len(first) == len(TINY.grid()) * TINY.seeds
    again = pg.run_family(TINY, csv_path=path, progress=False)          # everything done: nothing trained
    assert again == []
    df = pg.read_family(path)
    assert len(df) == len(first) and set(pg.AXES) <= set(df.columns)
    assert (df.loc[df["fitted"], "train_acc"] == 1.0).all()
    fit = df[df["fitted"]]
    assert np.allclose(fit["gap"], 1 - fit["test_acc"])
    # CLI --saved --json on this file: the numbers equal scipy's tau-b on the fitted rows
    assert cli.main(["experiment", "predict-gap", "--saved", "--json", "--csv", str(path), "--boot", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_models"] == len(df) and out["tasks"] == ["digits"] and out["hyperparameters"] == list(pg.AXES)
    for m, v in out["measures"].items():
        ref = kendalltau(fit[m], fit["gap"], variant="b").statistic
        assert (v["kendall_tau"] is None and not math.isfinite(ref)) or abs(v["kendall_tau"] - ref) < 1e-12


def test_granulated_psi_by_hand():
    """Two axes, two seeds; Psi per axis is the mean of the tau of the pairs that differ only there."""
    rows = []
    for seed in (0, 1):
        for a in (0, 1):
            for b in (0, 1):
                rows.append({"task": "t", "seed": seed, "width": a, "lr": b, "weight_decay": 0, "n_train": 1,
                             "m": a + 2 * b + 0.1 * seed, "gap": a - b})
    df = pd.DataFrame(rows)
    psi = pg.granulated_psi(df, "m", axes=("width", "lr"))
    # along width: m and gap both increase -> tau = +1; along lr: m up, gap down -> tau = -1
    assert psi["per_axis"]["width"] == (1.0, 4) and psi["per_axis"]["lr"] == (-1.0, 4)
    assert psi["psi"] == 0.0


def test_conditional_taus_show_simpsons_paradox():
    """Pooled tau positive while tau within every group is negative (the check of Martin & Mahoney)."""
    rows = [{"g": g, "m": g * 10 + i, "gap": g * 10 - i} for g in (0, 1, 2) for i in range(5)]
    tab = pg.conditional_taus(pd.DataFrame(rows), "g", measures=("m",))
    assert tab.loc["m", "pooled"] > 0.4
    assert all(tab.loc["m", f"g={g}"] == pytest.approx(-1.0) for g in (0, 1, 2))


@pytest.mark.parametrize("edit, match", [(lambda df: df.drop(columns=["tt_bound"]), "missing column"),
                                         (lambda df: df.assign(tt_bound=np.inf), "non-finite"),
                                         (lambda df: df.assign(task="imagenet"), "unknown task"),
                                         (lambda df: df.iloc[:0], "empty")])
def test_bad_family_csv(tmp_path, edit, match, capsys):
    path = tmp_path / "fam.csv"
    pg.run_family(pg.FamilyConfig(**{**TINY.__dict__, "weight_decays": (0.0,), "seeds": 1}), csv_path=path,
                  progress=False)
    bad = tmp_path / "bad.csv"
    header = "".join(ln for ln in path.read_text().splitlines(keepends=True) if ln.startswith("#"))
    bad.write_text(header + edit(pd.read_csv(path, comment="#")).to_csv(index=False))
    before = bad.read_bytes()
    with pytest.raises(GenboundError, match=match):
        pg.read_family(bad)
    assert cli.main(["experiment", "predict-gap", "--saved", "--csv", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:") and match in err[0]
    assert bad.read_bytes() == before                         # never truncated or rewritten


@pytest.mark.parametrize("argv, match", [(["--tasks", "imagenet"], "unknown task"),
                                         (["--seeds", "0"], "seeds"), (["--steps", "0"], "steps"),
                                         (["--lrs", "x"], "comma-separated"), (["--widths", "15"], "even"),
                                         ([], "--csv")])
def test_cli_training_errors(argv, match, capsys, tmp_path):
    extra = ["--csv", str(tmp_path / "f.csv")] if argv else []
    rc = cli.main(["experiment", "predict-gap", *extra, *argv])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:") and match in err[0]
    assert not (tmp_path / "f.csv").exists()


def test_saved_family_meets_the_issue():
    """The shipped family: at least 200 models on both tasks, every axis with at least two values, every
    measure finite, and the reported statistics recomputed with scipy."""
    df = pg.read_family()
    assert len(df) >= 200 and set(df["task"]) == set(pg.TASKS)
    assert all(df[a].nunique() >= 2 for a in pg.AXES)
    fit = df[df["fitted"]]
    tab = pg.kendall_table(fit, n_boot=20)
    for m in pg.MEASURES:
        ref = kendalltau(fit[m], fit["gap"], variant="b").statistic
        assert abs(tab.loc[m, "kendall_tau"] - ref) < 1e-6
        # Psi from scratch: per axis, the mean tau over groups that share everything else
        per_axis = []
        for ax in pg.AXES:
            others = ["task", "seed", *[a for a in pg.AXES if a != ax]]
            taus = [kendalltau(g[m], g["gap"], variant="b").statistic
                    for _, g in fit.groupby(others) if len(g) >= 2]
            taus = [t for t in taus if np.isfinite(t)]
            if taus:
                per_axis.append(np.mean(taus))
        assert abs(tab.loc[m, "granulated_psi"] - np.mean(per_axis)) < 1e-6
    assert (pg.SAVED_FAMILY.with_suffix(".md")).exists()
