"""``genbound.analyze(model)``: model objects, ``n_samples`` and the vacuous verdict, optional packages.

Issue 41. The per-matrix numbers of every route into :func:`genbound.analysis.analyze` (a module, a compiled
or wrapped one, half precision, a state dict with its config) are compared with those of the same weights
read from a checkpoint folder saved by ``transformers`` itself; the verdict and the sample sizes with the
result protocol (``gap_at``, ``samples_needed``); missing packages are simulated in a subprocess
(``sys.modules[name] = None``), nothing is uninstalled.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import genbound
from genbound.cli import main
from genbound.errors import GenboundError, MissingDependencyError, ParameterError
from genbound.testing import make_bert_checkpoint

ROOT = Path(__file__).resolve().parents[2]
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bert():
    cfg = transformers.BertConfig(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        vocab_size=40,
        max_position_embeddings=16,
    )
    torch.manual_seed(3)
    return transformers.BertForSequenceClassification(cfg).eval()


@pytest.fixture(scope="module")
def saved(bert, tmp_path_factory):
    d = tmp_path_factory.mktemp("bert")
    bert.save_pretrained(d)
    return d


def _same_rows(a, b):
    ta, tb = a.matrices(), b.matrices()
    assert list(ta.columns) == list(tb.columns) and len(ta) == len(tb)
    pd.testing.assert_frame_equal(ta, tb, check_exact=True)
    assert a.spectral.value == b.spectral.value and a.edelman.log_value == b.edelman.log_value


def test_analyze_is_the_function_of_the_analysis_package():
    import genbound.analysis as pkg
    from genbound.analysis import MATRIX_FIELDS, analyze

    assert genbound.analyze is analyze and inspect.isfunction(genbound.analyze)
    assert "analyze" in genbound.__all__ and "analyze" in dir(genbound)
    assert pkg.analyze is analyze and "contribution" in MATRIX_FIELDS


def test_module_equals_its_saved_checkpoint(bert, saved):
    _same_rows(genbound.analyze(bert), genbound.analyze(saved))


def test_compiled_and_wrapped_modules(bert, saved):
    ref = genbound.analyze(saved)
    _same_rows(genbound.analyze(torch.compile(bert)), ref)

    class Wrapper(torch.nn.Module):  # no .config: sizes from the tensors and the attention module
        def __init__(self, inner):
            super().__init__()
            self.model = inner

    _same_rows(genbound.analyze(Wrapper(bert)), ref)
    _same_rows(genbound.analyze(Wrapper(bert), config=bert.config), ref)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_the_float64_of_its_values(bert, dtype):
    import copy

    low = copy.deepcopy(bert).to(dtype)
    wide = copy.deepcopy(low).double()  # the same values, exactly
    _same_rows(genbound.analyze(low), genbound.analyze(wide))


def test_state_dict_with_config(bert, saved):
    sd = {k: v.detach().clone() for k, v in bert.state_dict().items()}
    ref = genbound.analyze(saved)
    _same_rows(genbound.analyze(sd, config=bert.config), ref)
    _same_rows(genbound.analyze(sd, config=bert.config.to_dict()), ref)
    with pytest.raises(ParameterError, match="config"):
        genbound.analyze(sd)
    with pytest.raises(ParameterError, match="config.json"):
        genbound.analyze(str(saved), config=bert.config)


def test_bad_n_samples(saved):
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ParameterError, match="n_samples"):
            genbound.analyze(saved, n_samples=bad)


# ---------------------------------------------------------------------------------------------------
# n_samples: the bound at n and the sample size from which it is not vacuous (one meaning: the protocol)


def _json(path, *extra, capsys):
    assert main(["analyze", str(path), "--json", "--device", "cpu", "--quiet", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("std,n", [(0.02, 10**4), (1e-3, 10**12), (1e-3, 10)])
def test_n_samples_fields_follow_the_protocol(tmp_path, capsys, std, n):
    make_bert_checkpoint(tmp_path, layers=2, heads=2, hidden=8, d_ff=16, seed=1, std=std)
    d = _json(tmp_path, "--n-samples", str(n), capsys=capsys)
    a = genbound.analyze(tmp_path, n_samples=n)
    r, e = a.spectral, a.edelman
    assert d["n_samples"] == n
    assert d["spectral_adaptive_gap"] == r.gap_at(n)
    assert math.isclose(d["spectral_adaptive_gap"], r.capacity / math.sqrt(n), rel_tol=1e-12)
    need = d["spectral_adaptive_samples_needed"]
    assert need == r.samples_needed() and r.gap_at(need) <= 1.0
    assert need == 1 or r.gap_at(need - 1) > 1.0
    assert d["spectral_adaptive_trivial"] == (r.gap_at(n) >= 1.0) == (n < need)
    assert d["edelman_trivial"] == (e.gap_at(n) >= 1.0)
    assert d["edelman_gap"] == e.gap_at(n)
    # the verdict is the proved bound's (theorem P); the proxies are labelled as not bounds
    nb = a.network
    assert d["proved_gap"] == nb.gap_at(n) and d["proved_capacity"] == nb.capacity
    assert d["proved_trivial"] == (nb.gap_at(n) >= 1.0)
    pn = d["proved_samples_needed"]
    assert nb.gap_at(pn) <= 1.0 and (pn == 1 or nb.gap_at(pn - 1) > 1.0)
    v = d["verdict"]
    assert "\n" not in v and "book/part3/network.md" in v and "thm-p-network" in v
    assert v.count("(not a bound)") == 2
    assert v.startswith(
        f"vacuous at n = {n}:" if d["proved_trivial"] else f"not vacuous at n = {n}:"
    )


def test_tiny_weights_are_not_vacuous_at_a_large_n_and_vacuous_at_a_small_one(tmp_path, capsys):
    make_bert_checkpoint(tmp_path, layers=2, heads=2, hidden=8, d_ff=16, seed=1, std=1e-3)
    big = _json(tmp_path, "--n-samples", str(10**12), capsys=capsys)
    small = _json(tmp_path, "--n-samples", "10", capsys=capsys)
    assert big["spectral_adaptive_trivial"] is False and small["spectral_adaptive_trivial"] is True
    need = big["spectral_adaptive_samples_needed"]
    assert 10 < need <= 10**12
    at = _json(tmp_path, "--n-samples", str(need), capsys=capsys)
    before = _json(tmp_path, "--n-samples", str(need - 1), capsys=capsys)
    assert at["spectral_adaptive_trivial"] is False and before["spectral_adaptive_trivial"] is True


def test_without_n_samples_the_verdict_is_undecided(saved, capsys):
    d = _json(saved, capsys=capsys)
    assert (
        d["n_samples"] is None and d["spectral_adaptive_gap"] is None and d["edelman_gap"] is None
    )
    assert d["spectral_adaptive_trivial"] is None
    assert d["verdict"].startswith("no sample size given, so undecided whether vacuous")
    assert "--n-samples" in d["verdict"] and "vacuous: undecided" not in d["verdict"]
    a = genbound.analyze(saved)
    assert d["spectral_adaptive_samples_needed"] == a.spectral.samples_needed()
    m = a.spectral.samples_needed()
    shown = f"{m:d}" if m < 10**6 else f"{float(m):.2g}"
    assert f"not vacuous from n = {shown} on" in d["verdict"]


def _console(path, *extra, capsys):
    assert main(["analyze", str(path), "--device", "cpu", "--quiet", *extra]) == 0
    return capsys.readouterr().out.splitlines()


def test_console_prints_the_verdict_on_two_short_lines(tmp_path, capsys):
    """The verdict right under theorem P's headline: vacuous or not at n, then from which n it is not
    (the numbers of the JSON's one-line verdict); and where the book defines it, on a line of its own."""
    make_bert_checkpoint(tmp_path, layers=2, heads=2, hidden=8, d_ff=16, seed=1, std=1e-3)
    need = _json(tmp_path, capsys=capsys)["proved_samples_needed"]
    shown = f"{need:d}" if need < 10**6 else f"{float(need):.2g}"
    for n, first in ((need - 1, "VACUOUS at n = "), (need, "NOT VACUOUS at n = ")):
        lines = _console(tmp_path, "--n-samples", str(n), capsys=capsys)
        head = next(i for i, x in enumerate(lines) if x.startswith("PROVED BOUND (theorem P"))
        assert lines[head + 1].startswith(f"{first}{n}: theorem P's gap bound ")
        assert (
            lines[head + 2] == f"not vacuous from n = {shown} on (theorem P's gap bound <= 1 there)"
        )
        assert all(len(x) <= 80 for x in lines[head + 1 : head + 3])
        assert sum("prop-sa-capacity" in x for x in lines) == 1
        assert not any("vacuous at n" in x and "not a bound" in x for x in lines)
    lines = _console(tmp_path, capsys=capsys)
    assert lines[2] == "no sample size given: --n-samples N says whether the bound is vacuous at N"
    assert not any("vacuous: undecided" in x for x in lines)


def test_edelman_beyond_the_limit_is_null_and_said(tmp_path, capsys):
    make_bert_checkpoint(tmp_path, layers=4, heads=2, hidden=8, d_ff=8, seed=0, std=1e3)
    d = _json(tmp_path, "--n-samples", "100", capsys=capsys)
    assert d["edelman_samples_needed"] is None and d["edelman_trivial"] is True
    assert "Edelman-style proxy (not a bound) value/sqrt(n) = " in d["verdict"]
    assert "vacuous for every n up to 1e40" in d["verdict"]


def test_bad_n_samples_on_the_command_line(saved, capsys):
    assert main(["analyze", str(saved), "--n-samples", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genbound: error:") and "--n-samples" in err and err.count("\n") == 1


def test_defined_in_names_a_statement_of_that_chapter():
    from genbound.analysis import DEFINED_IN

    path, label = re.match(r"(\S+), (\S+)", DEFINED_IN).groups()
    text = (ROOT / path).read_text()
    assert f":label: {label}" in text and "trivial" in text and "samples_needed" in text


# ---------------------------------------------------------------------------------------------------
# optional packages, simulated missing in a subprocess (nothing is uninstalled)


def _without(modules, code_or_args, *, cli=True):
    shim = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    if cli:
        body = shim + "from genbound.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        cmd = [sys.executable, "-c", body, *code_or_args]
    else:
        cmd = [sys.executable, "-c", shim + code_or_args]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )


def _one_line(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert p.stderr.startswith("genbound: error:") and p.stderr.count("\n") == 1, p.stderr
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


def test_plot_without_matplotlib_is_one_line(tmp_path):
    make_bert_checkpoint(tmp_path / "m", layers=1, heads=2, hidden=8, d_ff=16, seed=0)
    png = tmp_path / "f.png"
    p = _without(["matplotlib"], ["analyze", str(tmp_path / "m"), "--plot", str(png)])
    _one_line(p, "matplotlib", "pip install")
    assert not png.exists()
    # without --plot the command works
    p = _without(["matplotlib"], ["analyze", str(tmp_path / "m"), "--json", "--device", "cpu"])
    assert p.returncode == 0 and json.loads(p.stdout)["n_matrices"] == 6


@pytest.mark.parametrize("argv", [["analyze", "."], ["claims", "--check"]])
def test_without_torch_is_one_line(argv):
    _one_line(_without(["torch"], argv), "torch", "pip install torch==")


@pytest.mark.parametrize("missing", ["matplotlib", "torch"])
def test_import_and_help_work_without_optional_packages(missing):
    p = _without(
        [missing],
        "import genbound, io, contextlib\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    help(genbound)\n"
        "print(len(buf.getvalue()))\n"
        "try:\n"
        "    genbound.plotting\n"
        "except AttributeError as exc:\n"
        "    print('AttributeError', exc)\n",
        cli=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    size, *rest = p.stdout.splitlines()
    assert int(size) > 1000
    assert rest and rest[0].startswith("AttributeError genbound.plotting needs")


def test_missing_dependency_error_is_a_genbound_error():
    err = MissingDependencyError.of("torch.nn", "x")
    assert isinstance(err, GenboundError) and isinstance(err, ImportError) and err.name == "torch"
