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
