"""``genbound experiment certify``: bad input is one ``genbound: error:`` line, exit 2, nothing written;
the configuration's checks; the flattening of a parameter stack. (The certificate itself is run by the
saved-data scripts, not here: it trains two networks.)"""

from __future__ import annotations

import pytest
import torch

from genbound.cli import main
from genbound.errors import ParameterError
from genbound.experiments import certify as C


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--rows", "99:0"], "no row for T=99 seed=0"),
        (["--rows", "xx"], "--rows: 'xx' is not T:seed"),
        (["--prior-fraction", "1.5"], "prior_fraction must lie in (0, 1)"),
        (["--draws", "0"], "n_draws must be a positive integer"),
        (["--sweep", "/nonexistent/sweep.csv"], "no such results file"),
    ],
)
def test_bad_input_is_one_error_line_and_nothing_written(tmp_path, capsys, args, msg):
    out = tmp_path / "certs.csv"
    assert main(["experiment", "certify", *args, "--csv", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:") and msg in err[0]
    assert not out.exists()


def test_config_checks():
    with pytest.raises(ParameterError):
        C.CertifyConfig(delta=0.6, delta_mc=0.5).validated()
    with pytest.raises(ParameterError):
        C.CertifyConfig(grid_ratio=1.0).validated()
    g = C.CertifyConfig(grid_center=0.01, grid_ratio=2.0, grid_count=3).grid()
    assert g == (0.005, 0.01, 0.02)


def test_flat_unflat_roundtrip():
    like = {
        "b": torch.randn(1, 3, 2, dtype=torch.float64),
        "a": torch.randn(1, 4, dtype=torch.float64),
    }
    v = C.flat(like)
    assert v.shape == (10,)
    back = C.unflat(torch.stack([v, 2 * v]), like)
    assert torch.equal(back["a"][0], like["a"][0]) and torch.equal(back["b"][1], 2 * like["b"][0])


def test_a_tiny_certificate_end_to_end(tmp_path):
    """A deliberately tiny run (40 examples, 150 training steps, 5 posterior steps, 20 draws; a few
    seconds): the record's internal relations, and one whole row in a results file that a resume sees."""
    from genbound.bounds import pac_bayes as pb
    from genbound.experiments.sparse_majority import SparseMajorityConfig

    torch.set_num_threads(1)
    cfg = SparseMajorityConfig(n_train=40, n_val=50, n_test=100, steps=150, warmup=10, m_star=False)
    cc = C.CertifyConfig(post_steps=5, n_draws=20, test_draws=2)
    rec = C.certify_sparse_majority(16, 0, cfg, cc)
    assert set(rec) == set(C.SCHEMA.names)
    assert rec["n_prior"] == 20 and rec["n_bound"] == 20 and rec["n_train"] == 40
    assert rec["q_bound_error_mc"] <= rec["q_emp_upper"] <= rec["certificate"] <= 1.0
    assert rec["q_emp_upper"] == pb.monte_carlo_upper(rec["q_bound_error_mc"], 20, cc.delta_mc)
    assert rec["kl_per_n"] == rec["kl"] / 20
    assert rec["test_set_bound"] == pb.binomial_test_bound(rec["test_errors"], 100, 0.05).value
    assert (
        rec["prior_holdout_bound"]
        == pb.binomial_test_bound(rec["prior_bound_errors"], 20, 0.05).value
    )
    w = C.open_certificates(tmp_path / "c.csv", "tiny", cfg, cc)
    w.append([rec])
    again = C.open_certificates(tmp_path / "c.csv", "tiny", cfg, cc)
    assert (16, 0, 40) in again
    (row,) = C.read_certificates(tmp_path / "c.csv").rows
    assert row["certificate"] == rec["certificate"]


# ----------------------------------------------------------------------------- the Part V family
@pytest.mark.parametrize(
    "args, msg",
    [
        (["--family", "--n-trains", "7"], "the family's training-set sizes are"),
        (["--family", "--n-trains", "a,b"], "--n-trains must be integers"),
        (["--family", "--seeds", "0"], "--seeds must lie in 1 .."),
        (["--family", "--shard", "3/2"], "--shard I/K needs 0 <= I < K"),
        (["--family", "--n-train", "500"], "--n-train applies to the sparse-majority sweep"),
        (["--family", "/nonexistent/family.csv"], "no such results file"),
    ],
)
def test_family_bad_input_is_one_error_line_and_nothing_written(tmp_path, capsys, args, msg):
    out = tmp_path / "certs.csv"
    assert main(["experiment", "certify", *args, "--csv", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:") and msg in err[0], err
    assert not out.exists()


def test_family_settings_are_the_noise_free_ones_at_the_named_sizes():
    from genbound.experiments.certify._cli import family_settings
    from genbound.experiments.predict_gap import FamilyConfig

    fc = FamilyConfig()
    largest = family_settings(fc)
    assert largest and all(s["label_noise"] == 0.0 for s in largest)
    assert {(s["task"], s["n_train"]) for s in largest} == {
        ("sparse-majority", 120),
        ("digits", 400),
    }
    assert all(s["input_flip"] == 0.0 for s in largest)
    assert len(largest) == 2 * 2 * 2 * len(
        fc.init_scales
    )  # tasks x depth x width x init scales (clean inputs)
    small = family_settings(fc, [30, 100])
    assert {s["n_train"] for s in small} == {30, 100} and len(small) == len(largest)


def test_family_certificate_refuses_label_noise():
    from genbound.experiments.certify.family import certify_family_setting
    from genbound.experiments.predict_gap import FamilyConfig

    st = dict(
        task="digits",
        depth=1,
        width=12,
        lr=0.01,
        batch=0,
        weight_decay=0.0,
        init_scale=1.0,
        label_noise=0.1,
        n_train=100,
    )
    with pytest.raises(ParameterError, match="label noise"):
        certify_family_setting(st, [0], FamilyConfig(), C.CertifyConfig())


def test_family_certificate_refuses_corrupted_inputs():
    from genbound.experiments.certify.family import certify_family_setting
    from genbound.experiments.predict_gap import FamilyConfig

    st = dict(
        task="digits",
        depth=1,
        width=12,
        lr=0.01,
        batch=0,
        weight_decay=0.0,
        init_scale=1.0,
        label_noise=0.0,
        input_flip=0.05,
        n_train=100,
    )
    with pytest.raises(ParameterError, match="corrupted training inputs"):
        certify_family_setting(st, [0], FamilyConfig(), C.CertifyConfig())


def test_a_family_setting_finds_its_saved_certificate_by_key():
    """The resume check of ``certify --family``: a setting of the family (which has axes the certificate
    file does not, such as ``input_flip``) keyed by the certificate file's own key finds the saved row."""
    from genbound.experiments.certify import report as R
    from genbound.experiments.certify._cli import family_settings
    from genbound.experiments.certify.family import FAMILY_SCHEMA, read_family_certificates
    from genbound.experiments.predict_gap import FamilyConfig

    table = read_family_certificates(R.DATA / R.FAMILY_FILES[0])
    saved = {FAMILY_SCHEMA.key_of(r) for r in table.rows}
    settings = family_settings(FamilyConfig())
    found = [FAMILY_SCHEMA.key_of(dict(st, seed=0)) in saved for st in settings]
    assert all(found) and len(found) == 8
    assert FAMILY_SCHEMA.key_of(dict(settings[0], seed=99)) not in saved
    # and the family file's own rows (whose test accuracy the certificate rows carry) by the family's key
    from genbound.experiments.predict_gap import read_family
    from genbound.experiments.predict_gap.training import family_key

    family = {family_key(r) for r in read_family().to_dict("records")}
    assert all(family_key(dict(st, seed=s)) in family for st in settings for s in (0, 23))


def test_a_tiny_family_certificate_end_to_end(tmp_path):
    """One digits setting at m = 40, two seed indices, 200 training steps, 3 posterior steps, 20 draws:
    the row's relations, the prior's data being the first half of the full model's, and a results file
    whose rows recompute (and a changed certificate is caught)."""
    from dataclasses import replace

    import pandas as pd

    from genbound.bounds import pac_bayes as pb
    from genbound.experiments.certify import family as F
    from genbound.experiments.certify import report as R
    from genbound.experiments.predict_gap import FamilyConfig

    torch.set_num_threads(1)
    fc = FamilyConfig(
        n_train={"sparse-majority": (30, 120), "digits": (20, 40)}, steps=200, seeds=2, stack=2
    )
    cc = C.CertifyConfig(post_steps=3, n_draws=20, test_draws=2)
    st = dict(
        task="digits",
        depth=1,
        width=12,
        lr=0.01,
        batch=0,
        weight_decay=0.0,
        init_scale=1.0,
        label_noise=0.0,
        n_train=40,
    )
    rows = F.certify_family_setting(st, [0, 1], fc, cc, saved_test_acc={0: 0.5})
    assert [r["seed"] for r in rows] == [0, 1]
    for r in rows:
        assert set(r) == set(F.FAMILY_SCHEMA.names)
        assert r["n_prior"] == 20 and r["n_bound"] == 20 and r["n_classes"] == 10
        assert r["q_bound_error_mc"] <= r["q_emp_upper"] <= r["certificate"] <= 1.0
        assert r["kl"] >= 0.0 and r["kl_per_n"] == r["kl"] / 20
        assert (
            r["test_set_bound"] == pb.binomial_test_bound(r["test_errors"], r["n_test"], 0.05).value
        )
    assert (
        rows[0]["saved_test_acc"] == 0.5 and rows[1]["saved_test_acc"] != rows[1]["saved_test_acc"]
    )
    path = tmp_path / "f.csv"
    w = F.open_family_certificates(path, "tiny", fc, cc)
    w.append(rows)
    w.close()
    assert R.recompute_files([path], family=True) == (2, 0)
    df = R.load_certificates([path], family=True)
    assert R.recompute_all(df, cc) == 0
    df.loc[0, "certificate"] = float(df.loc[0, "certificate"]) * (1 + 1e-15) + 1e-15
    assert R.recompute_all(df, cc) == 1
    # a different certification setting (another file's header) is recomputed to different bounds
    assert R.recompute_all(pd.DataFrame(rows), replace(cc, delta=0.02)) == 2


def test_median_interval_coverage_is_the_binomial_one():
    import math

    from genbound.experiments.certify.report import median_interval

    for n in (6, 10, 24, 37):
        x = list(range(n))
        med, lo, hi = median_interval(x)
        j = int(lo) + 1  # lo = x_(j), 1-based
        assert hi == x[n - j]
        cover = sum(math.comb(n, k) for k in range(j, n - j + 1)) / 2**n
        assert cover >= 0.95
        wider = sum(math.comb(n, k) for k in range(j + 1, n - j)) / 2**n
        assert wider < 0.95  # the tightest such interval
    assert all(math.isnan(v) for v in median_interval(range(5))[1:])


def test_coverage_and_targets_count_what_they_say():
    import pandas as pd

    from genbound.experiments.certify import report as R

    df = pd.DataFrame({"q_test_error": [0.1, 0.3, 0.2, 0.5], "certificate": [0.2, 0.2, 0.3, 0.4]})
    cov = R.coverage(df, 0.05)
    assert (cov["exceed"], cov["models"], cov["share"]) == (2, 4, 0.5) and cov["upper"] > 0.5
    fam = pd.DataFrame(
        {
            "task": ["digits"] * 7 + ["sparse-majority"] * 7,
            "n_train": [400] * 6 + [100] + [120] * 6 + [30],
            "certificate": [0.5] * 6 + [0.99] + [0.6] * 6 + [0.1],
        }
    )
    t = R.target_table(
        fam, pd.DataFrame({"n_train": [2000] * 6, "certificate": [0.2] * 6})
    ).set_index("where")
    assert t.loc["digits, m = 400", "met"] and not t.loc["sparse-majority, m = 120", "met"]
    assert abs(t.loc["sparse-majority, m = 120", "margin"] + 0.1) < 1e-12
    assert (
        t.loc["sparse-majority, m = 2000", "met"]
        and t.loc["sparse-majority, m = 2000", "kind"] == "large-m"
    )


def test_saved_certificate_files_recompute_float_for_float():
    """Every saved certificate row: its bounds recompute exactly from its counts and its file's settings,
    the files of one kind share their settings and no key, and a Q never certified above 1."""
    from genbound.experiments.certify import report as R

    fam_paths = [R.DATA / f for f in R.FAMILY_FILES]
    sm_paths = [R.DATA / R.SWEEP_FILE, R.DATA / R.LARGE_M_FILE]
    rows, bad = R.recompute_files(fam_paths, family=True)
    assert rows == 96 and bad == 0  # 2 tasks x 2 depths x 2 widths x 2 sizes x 6 seed indices
    rows, bad = R.recompute_files(sm_paths, family=False)
    assert rows == 36 and bad == 0
    # the second run's files (kept) recompute as well
    rows, bad = R.recompute_files([R.SECOND_RUN / f for f in R.FAMILY_FILES], family=True)
    assert rows == 192 and bad == 0
    rows, bad = R.recompute_files(
        [*(R.SECOND_RUN / f for f in R.SECOND_RUN_SWEEP_FILES), R.SECOND_RUN / R.LARGE_M_FILE],
        family=False,
    )
    assert rows == 36 and bad == 0
    swp = R.load_certificates([R.DATA / R.SWEEP_FILE], family=False)
    # the sequence-length view: seed indices 0-7 at each of four lengths, at the sweep's own m
    assert swp.groupby("seq_len")["seed"].apply(sorted).to_dict() == {
        T: list(range(8)) for T in (16, 64, 256, 1024)
    }
    assert (swp["n_train"] == 300).all()
    fam = R.load_certificates(fam_paths, family=True)
    assert (fam["label_noise"] == 0).all() and fam["certificate"].between(0, 1).all()
    # every certified family model is a clean model of the saved family, with its test accuracy there
    from genbound.experiments import predict_gap as pg

    saved = pg.read_family()
    key = ["task", *pg.AXES, "seed"]
    assert len(fam.merge(saved[key], on=key)) == len(fam)
    assert (fam["q_bound_error_mc"] <= fam["q_emp_upper"]).all()
    assert (fam["q_emp_upper"] <= fam["certificate"]).all()
    big = R.load_certificates([R.DATA / R.LARGE_M_FILE], family=False)
    assert (big["n_train"] >= 2000).all()


def _toy_posterior(mode, n_params=2000, steps=300):
    """A linear 3-class model on 64 random examples, its posterior trained by ``optimise_posterior`` from
    the prior's weights at scale 1e-3 (a grid point) with the prior scale held (``"grid"``) or learned."""
    from genbound.bounds import pac_bayes as pb
    from genbound.experiments.certify import gibbs

    g = torch.Generator().manual_seed(0)
    d = n_params // 3
    X = torch.randn(64, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (64,), generator=g)
    like = {"W": torch.zeros(1, d, 3, dtype=torch.float64)}
    w_prior = 0.05 * torch.randn(d * 3, generator=g, dtype=torch.float64)

    def logits(P, split, k):
        return torch.einsum("nd,kdc->knc", X, P["W"])

    cc = C.CertifyConfig(post_steps=steps, post_prior_scale=mode)
    mu, s, sp = gibbs.optimise_posterior(
        logits, y, like, w_prior, w_prior, cc, 32, torch.Generator().manual_seed(1), sigma0=1e-3
    )
    return mu, s, sp, float(pb.kl_diag_gaussians(mu, s, w_prior, 1e-3))


def test_the_objective_holds_the_prior_scale_at_its_grid_point():
    """The second run's defect, on a toy model: with the prior's scale learned in the objective, the
    scale and every posterior scale drift together and the KL at the fixed grid point (what the
    certificate pays) grows far beyond the one the objective saw; held at the grid point, it does not."""
    mu, s, sp, kl_grid = _toy_posterior("grid")
    assert abs(sp - 1e-3) < 1e-15  # exp(log(1e-3)): not learned
    _, s_free, sp_free, kl_free = _toy_posterior("free")
    assert abs(sp_free - 1e-3) > 1e-6  # learned, it moved
    assert kl_free > 100 * kl_grid, (kl_free, kl_grid)
    # the drift is a uniform inflation of the posterior's scales, with the learned prior scale beside them
    assert float(s_free.mean()) > 1.01e-3 and abs(float(s_free.mean()) - sp_free) < 1e-6 * sp_free
    assert abs(float(s.mean()) - 1e-3) < 1e-3 * 1e-3


def test_post_prior_scale_is_validated_and_old_headers_read_as_free():
    with pytest.raises(ParameterError, match="post_prior_scale must be 'grid' or 'free'"):
        C.CertifyConfig(post_prior_scale="learned").validated()
    from genbound.experiments.certify import report as R
    from genbound.experiments.certify.family import read_family_certificates

    assert (
        C.certify_config_of(
            read_family_certificates(R.SECOND_RUN / R.FAMILY_FILES[0])
        ).post_prior_scale
        == "free"
    )
    assert (
        C.certify_config_of(read_family_certificates(R.DATA / R.FAMILY_FILES[0])).post_prior_scale
        == "grid"
    )
