"""Results files (issue 18): whole rows, the configuration recorded, resumes that must match it, one reader.

The kill test runs the real command line in a subprocess and kills it with SIGKILL at random moments;
the others edit files the way a kill, a crash or a user would, and check the one-line errors."""

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from genbound import cli
from genbound.errors import GenboundError, ResultsFileError
from genbound.experiments import predict_gap as pg
from genbound.experiments import sparse_majority as sm
from genbound.experiments.runtime.results import (
    MAGIC,
    ResultsFileWarning,
    Schema,
    open_results,
    read_results,
)
from tiny_runs import SPARSE_MAJORITY_TINY

ROOT = Path(__file__).resolve().parents[2]
TINY = SPARSE_MAJORITY_TINY
SEQ_LENS = "11,13,15,17,19,21"


def _sweep_argv(path, *extra, seq_lens=SEQ_LENS, seeds="2"):
    return [
        "experiment",
        "sparse-majority",
        "--seq-lens",
        seq_lens,
        "--seeds",
        seeds,
        *TINY,
        "--csv",
        str(path),
        *extra,
    ]


def _subprocess(argv):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "genbound.cli", *argv],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows_without_seconds(path):
    t = sm.read_sweep(path)
    return {
        tuple(r[k] for k in ("seq_len", "seed")): {c: v for c, v in r.items() if c != "seconds"}
        for r in t.rows
    }, t


def _same_values(a: dict, b: dict) -> bool:
    """Equal row dicts, NaN equal to NaN."""

    def eq(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)

    return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """The command line sets torch's threads (--threads); put them back after every test."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


# ------------------------------------------------------------------------------------------ kills
def _finished_rows(path) -> int:
    """Rows in a results file (lines after the header and the column line), 0 while it is absent."""
    try:
        lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    except (FileNotFoundError, UnicodeDecodeError):
        return 0
    return max(len(lines) - 1, 0)


@pytest.mark.slow  # over 15 s here (make test-fast leaves it out)
def test_sweep_killed_at_random_moments_resumes_to_the_clean_rows(tmp_path, record_property):
    """A sweep (6 lengths x 2 seeds, each stack well under a second of training) killed with SIGKILL
    at random moments and resumed each time ends with exactly the rows of an uninterrupted run: the
    same keys, none twice, every row complete, and every value but the wall time equal."""
    t_start = time.perf_counter()
    clean = tmp_path / "clean.csv"
    t0 = time.perf_counter()
    p = _subprocess(_sweep_argv(clean))
    while p.poll() is None and not clean.exists():  # the file appears once the run has started
        time.sleep(0.02)
    startup = time.perf_counter() - t0
    assert p.wait(timeout=600) == 0, p.stderr.read()
    work = time.perf_counter() - t0 - startup  # training, evaluation, bounds, writing
    want, _ = _rows_without_seconds(clean)
    assert len(want) == 12

    path = tmp_path / "killed.csv"
    rng = random.Random(18)
    kills = 0
    progress = []
    done = 0
    per_stack = work / 6  # one sequence length (two seeds) per stack
    for attempt in range(8):
        # a random moment: once the file holds a target number of finished rows (rising over the
        # attempts, so that kills land at several stages whatever the machine's load), a random part
        # of one stack's time later; attempt 0 kills during start-up
        target = (0, 2, 2, 4, 6, 8, 10, 10)[attempt]
        p = _subprocess(_sweep_argv(path))
        rc = None
        if attempt == 0:
            time.sleep(rng.uniform(0.3, 0.9) * startup)
        else:
            while p.poll() is None and _finished_rows(path) < target:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.0) * per_stack)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        rc = p.wait(timeout=60)
        kills += rc == -signal.SIGKILL
        if path.exists():  # after every kill the file is a readable results file
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResultsFileWarning)
                t = sm.read_sweep(path)
            assert len(t.keys) == len(t.rows)
            done = len(t.rows)
        progress.append(done)
        if rc == 0:
            break
    p = _subprocess(_sweep_argv(path))  # the final resume runs to the end
    assert p.wait(timeout=600) == 0, p.stderr.read()
    got, table = _rows_without_seconds(path)
    assert table.incomplete is None and len(table.rows) == len(table.keys) == 12
    assert got.keys() == want.keys()
    for key in want:
        assert _same_values(got[key], want[key]), key
    assert table.config == sm.read_sweep(clean).config
    assert kills >= 3, (kills, progress)  # the runs really were killed, at several points
    assert len(set(progress) - {0, 12}) >= 2, progress
    assert progress == sorted(progress)  # a resume never loses a finished row
    record_property("seconds", time.perf_counter() - t_start)
    record_property("kills", kills)
    record_property("rows_after_each_attempt", progress)


# ------------------------------------------------------------------------------------------ resumes
@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """A finished one-row sweep file (T = 11, seed 0) and its bytes."""
    path = tmp_path_factory.mktemp("one") / "sweep.csv"
    assert cli.main(_sweep_argv(path, seq_lens="11", seeds="1")) == 0
    return path, path.read_bytes()


def _copy(one_run, tmp_path):
    path = tmp_path / "sweep.csv"
    path.write_bytes(one_run[1])
    return path


def _one_error(capsys, *needles):
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("genbound: error:"), out.err
    for n in needles:
        assert n in err[0], err[0]
    return err[0]


@pytest.mark.parametrize(
    "extra, fields",
    [
        (["--steps", "50"], ["steps (file 40, this run 50)"]),
        (["--adam-lr", "0.002"], ["adam_lr (file 0.001, this run 0.002)"]),
        (["--lr", "0.05"], ["lr (file 0.01, this run 0.05)"]),
        (["--n-train", "41"], ["n_train (file 40, this run 41)"]),
        (["--protocol", "original"], ["protocol (file adam, this run original)"]),
        (["--steps", "50", "--n-train", "41"], ["2 fields", "steps", "n_train"]),
        (["--threads", "2"], ["threads (file 1, this run 2)"]),
    ],
)
def test_resume_with_another_configuration_is_refused(one_run, tmp_path, capsys, extra, fields):
    path = _copy(one_run, tmp_path)
    capsys.readouterr()
    argv = _sweep_argv(path, seq_lens="11,13", seeds="1")
    # later options override the earlier ones of TINY
    assert cli.main([*argv, *extra]) == 2
    _one_error(capsys, str(path), *fields)
    assert path.read_bytes() == one_run[1]  # untouched


def test_resume_with_the_same_configuration_appends(one_run, tmp_path, capsys):
    path = _copy(one_run, tmp_path)
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 0
    t = sm.read_sweep(path)
    assert sorted(t.keys) == [(11, 0), (13, 0)]
    assert path.read_bytes().startswith(one_run[1])  # the first row is kept byte for byte


def test_truncated_mid_row_is_reported_and_rerun(one_run, tmp_path, capsys):
    """A file cut in the middle of its last row: the reader reports it and leaves it out; a resume
    re-runs that row (and only that one) and ends with the uninterrupted file's rows."""
    path = tmp_path / "sweep.csv"
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 0
    full = path.read_bytes()
    want, _ = _rows_without_seconds(path)
    cut = full[: len(full) - 200]  # mid-way through the row of T = 13
    assert not cut.endswith(b"\n") and cut.count(b"\n") == full.count(b"\n") - 1
    path.write_bytes(cut)
    with pytest.warns(ResultsFileWarning, match="unfinished last row"):
        t = sm.read_sweep(path)
    cut_line = cut.count(b"\n") + 1
    assert t.keys == {(11, 0)} and t.incomplete and f"line {cut_line}:" in t.incomplete
    assert len(_quiet(sm.read_csv, path)) == 1  # the DataFrame of the book: 1 row
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 0
    err = capsys.readouterr().err
    assert "genbound: warning:" in err and "unfinished last row" in err and str(path) in err
    got, t = _rows_without_seconds(path)
    assert t.incomplete is None and got.keys() == want.keys()
    assert all(_same_values(got[k], want[k]) for k in want)


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsFileWarning)
        return fn(*args)


def _lines(path):
    return path.read_text().splitlines(keepends=True)


def test_garbled_last_row_is_rerun_but_a_garbled_middle_row_is_an_error(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 0
    lines = _lines(path)
    n = len(lines)
    # last row garbled but complete (newline-terminated): reported, left out, re-run
    bad = lines[:-1] + [lines[-1].replace(",adam,", ',ad"am,', 1)[:40] + "\n"]
    path.write_text("".join(bad))
    with pytest.warns(ResultsFileWarning, match=f"line {n}: last row does not parse"):
        assert sm.read_sweep(path).keys == {(11, 0)}
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 0
    assert sm.read_sweep(path).keys == {(11, 0), (13, 0)}
    # a garbled row that is not last: an error naming the line, for the reader and the resume
    lines = _lines(path)
    lines[-2] = lines[-2].replace(",False,", ",maybe,", 1).replace(",True,", ",maybe,", 1)
    path.write_text("".join(lines))
    before = path.read_bytes()
    with pytest.raises(
        ResultsFileError, match=f"line {len(lines) - 1}: row does not match the columns"
    ):
        sm.read_sweep(path)
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11,13", seeds="1")) == 2
    _one_error(capsys, str(path), f"line {len(lines) - 1}")
    assert path.read_bytes() == before
    # a row with a field too many, not last: the same
    lines = _lines(tmp_path.joinpath("sweep.csv"))
    lines[-2] = lines[-2].rstrip("\n").replace("maybe", "True") + ",1\n"
    path.write_text("".join(lines))
    with pytest.raises(ResultsFileError, match="fields, the columns"):
        sm.read_sweep(path)


def test_duplicate_key_is_an_error_naming_both_lines(one_run, tmp_path, capsys):
    path = _copy(one_run, tmp_path)
    lines = _lines(path)
    path.write_text("".join(lines + [lines[-1]]))
    before = path.read_bytes()
    with pytest.raises(
        ResultsFileError,
        match=rf"line {len(lines) + 1}: duplicate key \(seq_len=11, "
        rf"seed=0\), first at line {len(lines)}",
    ):
        sm.read_sweep(path)
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11", seeds="1")) == 2
    _one_error(capsys, str(path), "duplicate key")
    assert path.read_bytes() == before


# ------------------------------------------------------------------------------------------ not results files
def _family_file(tmp_path):
    cfg = pg.FamilyConfig(
        tasks=("digits",),
        depths=(1,),
        widths=(16,),
        lrs=(3e-3,),
        n_train={"digits": (60,)},
        seeds=1,
        steps=60,
        warmup=5,
        flat_steps=3,
        flat_draws=2,
    )
    path = tmp_path / "family.csv"
    pg.run_family(cfg, csv_path=path, progress=False)
    return path


@pytest.mark.parametrize(
    "kind",
    ["random", "plain-csv", "empty", "other-experiment", "binary-zeros", "header-cut", "directory"],
)
def test_a_file_that_is_not_a_results_file(tmp_path, capsys, kind):
    path = tmp_path / "x.csv"
    if kind == "random":
        path.write_bytes(random.Random(0).randbytes(3000))
        needle = "not a genbound results file"
    elif kind == "plain-csv":
        path.write_text("seq_len,seed,fitted\n16,0,True\n")  # a sweep CSV of before results files
        needle = "not a genbound results file"
    elif kind == "empty":
        path.write_bytes(b"")
        needle = "empty file"
    elif kind == "other-experiment":
        path = _family_file(tmp_path)
        needle = "holds results of experiment 'predict-gap', not 'sparse-majority'"
    elif kind == "binary-zeros":
        path.write_bytes(b"\x00" * 512)
        needle = "not a genbound results file"
    elif kind == "header-cut":
        path.write_text(MAGIC + ' (format 1)\n# {"experiment": ')
        needle = "cut off"
    else:
        path.mkdir()
        needle = "is a directory"
    before = path.read_bytes() if path.is_file() else None
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11", seeds="1")) == 2
    _one_error(capsys, str(path), needle)
    if before is not None:
        assert path.read_bytes() == before
        with pytest.raises(ResultsFileError, match="x.csv|family.csv"):
            sm.read_csv(path)  # the book's reader: the same verdict
        if kind != "other-experiment":  # (a family file is a valid family)
            assert cli.main(["experiment", "predict-gap", "--saved", "--csv", str(path)]) == 2
            _one_error(capsys, str(path), needle)
        assert path.read_bytes() == before


@pytest.mark.parametrize("where", ["missing-dir", "under-a-file"])
def test_unwritable_path(tmp_path, capsys, where):
    if where == "missing-dir":
        path = tmp_path / "no" / "such" / "dir" / "x.csv"
    else:
        (tmp_path / "plain").write_text("a file")
        path = tmp_path / "plain" / "x.csv"
    capsys.readouterr()
    assert cli.main(_sweep_argv(path, seq_lens="11", seeds="1")) == 2
    _one_error(capsys, str(path), "cannot create")
    assert (
        cli.main(
            [
                "experiment",
                "predict-gap",
                "--csv",
                str(path),
                "--tasks",
                "digits",
                "--seeds",
                "1",
                "--steps",
                "200",
                "--widths",
                "16",
                "--lrs",
                "0.003",
                "--depths",
                "1",
            ]
        )
        == 2
    )
    _one_error(capsys, str(path), "cannot create")
    assert not path.exists() and (
        where != "under-a-file" or (tmp_path / "plain").read_text() == "a file"
    )
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind


def test_family_resume_is_refused_on_another_configuration(one_run, tmp_path, capsys):
    sweep = _copy(one_run, tmp_path)  # a sweep's file is not a family
    capsys.readouterr()
    assert cli.main(["experiment", "predict-gap", "--saved", "--csv", str(sweep)]) == 2
    _one_error(
        capsys, str(sweep), "holds results of experiment 'sparse-majority', not 'predict-gap'"
    )
    path = _family_file(tmp_path)
    before = path.read_bytes()
    capsys.readouterr()
    assert (
        cli.main(
            [
                "experiment",
                "predict-gap",
                "--csv",
                str(path),
                "--tasks",
                "digits",
                "--seeds",
                "1",
                "--steps",
                "200",
                "--widths",
                "16",
                "--lrs",
                "0.003",
                "--depths",
                "1",
                "--n-train-digits",
                "100",
            ]
        )
        == 2
    )
    _one_error(
        capsys,
        str(path),
        "steps (file 60, this run 200)",
        "flat_steps (file 3, this run ",
        "n_train.digits (file [60], this run [100])",
    )
    assert path.read_bytes() == before
    cfg = pg.FamilyConfig(
        tasks=("digits",),
        depths=(1,),
        widths=(16,),
        lrs=(3e-3,),
        n_train={"digits": (60,)},
        seeds=1,
        steps=60,
        warmup=5,
        flat_steps=3,
        flat_draws=2,
    )
    with pytest.raises(
        ResultsFileError, match=r"1 field: lrs \(file \[0.003\], this run \[0.001\]\)"
    ):
        pg.run_family(dataclasses.replace(cfg, lrs=(1e-3,)), csv_path=path, progress=False)
    assert pg.run_family(cfg, csv_path=path, progress=False) == []  # the same: nothing to train
    assert path.read_bytes() == before


# ------------------------------------------------------------------------------------------ writer, saved files
def test_writer_checks_every_row_before_writing(tmp_path):
    schema = Schema("demo", (("n", int), ("ok", bool), ("x", float), ("name", str)), key=("n",))
    path = tmp_path / "d.csv"
    w = open_results(path, schema, {"a": 1}, environment={"threads": 1})
    w.append([{"n": 1, "ok": True, "x": float("nan"), "name": 'a,b "q"'}])
    before = path.read_bytes()
    for bad in (
        {"n": 2, "ok": "yes", "x": 1.0, "name": "c"},
        {"n": 2, "ok": True, "x": 1.0},
        {"n": 1, "ok": True, "x": 1.0, "name": "c"},
        {"n": 2.5, "ok": True, "x": 1.0, "name": "c"},
    ):
        with pytest.raises(ResultsFileError):
            w.append([{"n": 3, "ok": False, "x": 0.0, "name": "z"}, bad])
        assert path.read_bytes() == before  # nothing of the batch was written
    t = read_results(path, schema)
    assert t.rows[0]["name"] == 'a,b "q"' and t.rows[0]["x"] != t.rows[0]["x"]
    assert t.frame()["ok"].dtype == bool and t.frame()["n"].dtype == "int64"
    # the environment is part of what must match
    with pytest.raises(ResultsFileError, match=r"threads \(file 1, this run 4\)"):
        open_results(path, schema, {"a": 1}, environment={"threads": 4})
    with pytest.raises(ResultsFileError, match=r"unknown column\(s\) \['x', 'name'\]"):
        read_results(path, Schema("demo", (("n", int), ("ok", bool)), key=("n",)))


def test_saved_data_sets_carry_their_configuration():
    sweep = sm.read_sweep(sm.SAVED_SWEEP)
    assert sweep.incomplete is None and sweep.config == dataclasses.asdict(
        sm.SparseMajorityConfig()
    )
    assert sweep.environment["torch"] == "2.13.0+cpu" and sweep.environment["threads"] == 1
    assert len(sweep.environment["commit"]) == 40  # written by the sweep itself
    # trained with the capacity at the network's own norms: no column was recomputed after training
    assert "column_commits" not in sweep.header and sweep.environment["cpu_model"]
    md = sm.SAVED_SWEEP.with_suffix(".md").read_text()
    assert sweep.environment["commit"][:7] in md and sweep.environment["torch"] in md
    other = sm.read_sweep(sm.OTHER_KIND_SWEEP)  # the Intel draw
    assert "recomputed from norms_json" in other.header["notes"]  # its capacity columns
    assert len(sm.read_csv()) == len(sweep.rows) >= 56
    # the family was written by the results-file writer itself: its header is the run's own
    f = read_results(pg.SAVED_FAMILY, pg.SCHEMA)
    assert f.incomplete is None and f.config == json.loads(
        json.dumps(dataclasses.asdict(pg.FamilyConfig()))
    )
    assert f.environment["threads"] == 1 and f.environment["commit"]
    md = pg.SAVED_FAMILY.with_suffix(".md").read_text()
    assert f.environment["commit"][:7] in md and f.environment["torch"] in md
    assert len(pg.read_family()) == len(f.rows)
    # the saved files are results files, so a resume with another configuration is refused
    with pytest.raises(GenboundError, match="steps"):
        sm.open_sweep(sm.SAVED_SWEEP, sm.SparseMajorityConfig(steps=10))
