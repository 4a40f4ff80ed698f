"""``genbound experiment certify``: bad input is one ``genbound: error:`` line, exit 2, nothing written;
the configuration's checks; the flattening of a parameter stack. (The certificate itself is run by the
saved-data scripts, not here: it trains two networks.)"""

from __future__ import annotations

import pytest
import torch

from genbound.cli import main
from genbound.errors import ParameterError
from genbound.experiments import certify as C


@pytest.mark.parametrize("args, msg", [
    (["--rows", "99:0"], "no row for T=99 seed=0"),
    (["--rows", "xx"], "--rows: 'xx' is not T:seed"),
    (["--prior-fraction", "1.5"], "prior_fraction must lie in (0, 1)"),
    (["--draws", "0"], "n_draws must be a positive integer"),
    (["--sweep", "/nonexistent/sweep.csv"], "no such results file"),
])
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
    like = {"b": torch.randn(1, 3, 2, dtype=torch.float64), "a": torch.randn(1, 4, dtype=torch.float64)}
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
    assert rec["prior_holdout_bound"] == pb.binomial_test_bound(rec["prior_bound_errors"], 20, 0.05).value
    w = C.open_certificates(tmp_path / "c.csv", "tiny", cfg, cc)
    w.append([rec])
    again = C.open_certificates(tmp_path / "c.csv", "tiny", cfg, cc)
    assert (16, 0, 40) in again
    (row,) = C.read_certificates(tmp_path / "c.csv").rows
    assert row["certificate"] == rec["certificate"]
