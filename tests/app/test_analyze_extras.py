"""``genbound analyze --extras``: embedding and head rows in the CSV, the JSON and the console, as
spectra only, and the bound exactly as without the option."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from genbound.cli import main
from genbound.testing import make_bert_checkpoint
from reference_families import make_model, tiny_llama

NOTE = "not in any bound: the papers' bounds cover the blocks only"
ARGS = ["--device", "cpu", "--quiet"]


@pytest.fixture()
def ckpt(tmp_path):
    make_bert_checkpoint(tmp_path / "m", layers=2, heads=2, hidden=8, d_ff=16, seed=4, std=0.5)
    return tmp_path / "m"


def _json(path, capsys, *extra) -> dict:
    assert main(["analyze", str(path), "--json", *ARGS, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_csv_rows_with_the_flag_only(ckpt, tmp_path, capsys):
    plain, extras = tmp_path / "plain.csv", tmp_path / "extras.csv"
    assert main(["analyze", str(ckpt), "--csv", str(plain), *ARGS]) == 0
    assert main(["analyze", str(ckpt), "--csv", str(extras), "--extras", *ARGS]) == 0
    text = capsys.readouterr().out
    p, e = pd.read_csv(plain), pd.read_csv(extras, keep_default_na=False)
    assert (p["layer"] >= 0).all() and "note" not in p  # without the flag: as before
    tail = e[e["layer"] == -1]
    assert list(tail["kind"]) == ["embed_tokens", "embed_positions"]
    assert tail[["rows", "cols"]].values.tolist() == [[64, 8], [64, 8]]
    assert (tail["covered"].astype(str) == "False").all() and (tail["note"] == NOTE).all()
    blocks = e[e["layer"] >= 0]
    assert (blocks["covered"].astype(str) == "True").all() and len(blocks) == len(p)
    for col in ("sigma_max", "p_opt", "contribution"):  # the bound's rows are unchanged
        assert blocks[col].astype(float).tolist() == p[col].tolist()
    assert (tail["contribution"] == "").all()  # no bound term for them
    assert NOTE in text and "embed_tokens" in text and "64 x 8" in text


def test_json_bound_identical_with_and_without(ckpt, capsys):
    a = _json(ckpt, capsys)
    b = _json(ckpt, capsys, "--extras")
    assert "extra_matrices" not in a
    rows = b.pop("extra_matrices")
    for d in (a, b):
        d.pop("seconds")
        d["checkpoint"].pop("seconds")  # the time the hashing took
    assert a == b  # every number of the bounds, every block row and the digests, exactly the same
    assert [(r["kind"], r["layer"], r["shape"]) for r in rows] == [
        ("embed_tokens", -1, [64, 8]),
        ("embed_positions", -1, [64, 8]),
    ]
    assert all(r["covered"] is False and r["note"] == NOTE for r in rows)
    assert rows[0]["sigma_max"] > 0 and rows[0]["rank"] == 8


def test_spectra_only_family_with_an_untied_head(tmp_path, capsys):
    tiny_llama(tie=False).save_pretrained(tmp_path / "l")
    csv = tmp_path / "l.csv"
    out = _json(tmp_path / "l", capsys, "--extras", "--csv", str(csv))
    assert out["spectra_only"] is True
    assert [r["kind"] for r in out["extra_matrices"]] == ["embed_tokens", "lm_head"]
    t = pd.read_csv(csv)
    assert list(t["kind"][-2:]) == ["embed_tokens", "lm_head"] and len(t) == out["n_matrices"] + 2


def test_no_rows_said_and_compare_refused(ckpt, tmp_path, capsys):
    vit = make_model("vit", seed=1)  # the ViT of the family tests
    vit.save_pretrained(tmp_path / "v")
    assert main(["analyze", str(tmp_path / "v"), "--extras", *ARGS]) == 0
    assert "holds no embedding or head matrix that genbound names" in capsys.readouterr().out
    assert main(["analyze", str(ckpt), "--compare", str(ckpt), "--extras", *ARGS]) == 2
    assert "--extras is for one checkpoint" in capsys.readouterr().err
