"""Issue 26 (and the record part of issue 29): results files that say what reproduces them, one writer per
results file, interrupts and closed pipes that end in one line, a command line that starts light."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from genbound import cli
from genbound.errors import ResultsFileError
from genbound.experiments.runtime import machine
from genbound.experiments.runtime import results as res

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = res.Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
TINY = [
    "--n-train",
    "40",
    "--n-val",
    "30",
    "--n-test",
    "50",
    "--steps",
    "40",
    "--warmup",
    "5",
    "--eval-every",
    "7",
    "--no-m-star",
]


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop("ATEN_CPU_CAPABILITY", None)
    return env


def _genbound(*args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "genbound.cli", *args],
        cwd=str(ROOT),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


# ------------------------------------------------------------------------------- the recorded environment
def test_environment_records_the_cpu_kind_and_the_libraries():
    import torch

    env = machine.environment()
    for k in (
        "cpu_model",
        "cpu_flags",
        "cpu_capability",
        "blas",
        "lapack",
        "math_library",
        "kernel_env",
        "torch",
        "threads",
        "commit",
    ):
        assert k in env, k
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["threads"] == torch.get_num_threads() and env["torch"] == torch.__version__
    if Path("/proc/cpuinfo").exists():
        text = Path("/proc/cpuinfo").read_text()
        assert env["cpu_model"] and env["cpu_model"] in text
        assert env["cpu_flags"] == sorted(env["cpu_flags"]) and set(env["cpu_flags"]) <= set(
            machine.KERNEL_FLAGS
        )
        assert all(f" {f}" in text for f in env["cpu_flags"])
    json.dumps(env)  # it goes into a JSON header


def test_a_kernel_variable_is_recorded(monkeypatch):
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    assert machine.environment()["kernel_env"] == {"MKL_CBWR": "AVX2"}


def test_the_same_environment_is_the_same_kind_and_each_changed_field_is_named():
    here = machine.environment()
    assert machine.same_machine_kind(dict(here), here) == (True, [])
    for name, value in [
        ("cpu_model", "Simulated CPU"),
        ("cpu_flags", ["avx2", "fma"]),
        ("cpu_capability", "AVX2"),
        ("blas", "openblas"),
        ("threads", 7),
        ("torch", "0.0.0"),
    ]:
        rec = dict(here, **{name: value})
        same, mism = machine.same_machine_kind(rec, here)
        assert not same and [m.field for m in mism] == [name]
        assert str(mism[0]).startswith(f"{name}: recorded ") and " vs here " in str(mism[0])


def test_a_file_without_cpu_fields_is_another_kind():
    here = machine.environment()
    old = {k: here[k] for k in ("genbound", "commit", "torch", "threads", "device")}
    same, mism = machine.same_machine_kind(old, here)
    assert not same
    assert {m.field for m in mism} == {
        "cpu_model",
        "cpu_flags",
        "cpu_capability",
        "blas",
        "lapack",
        "math_library",
        "kernel_env",
    }
    assert all(m.recorded is None and "recorded not recorded" in str(m) for m in mism)


def test_an_old_file_resumes_without_comparing_fields_it_does_not_record(tmp_path):
    path = tmp_path / "old.csv"
    here = machine.environment()
    old = {k: here[k] for k in ("genbound", "commit", "torch", "threads", "device")}
    with res.open_results(path, SCHEMA, {"steps": 1}, environment=old) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    said = []
    with res.open_results(path, SCHEMA, {"steps": 1}, environment=here, report=said.append) as w:
        assert w.done == {(1, 0)}
    assert len(said) == 1 and "does not record cpu_model, cpu_flags" in said[0]
    with pytest.raises(ResultsFileError, match="threads"):  # what it records is still compared
        res.open_results(
            path, SCHEMA, {"steps": 1}, environment=dict(here, threads=here["threads"] + 1)
        )


def test_column_commits_name_the_commit_of_each_column():
    from genbound.experiments import sparse_majority as sm

    # the Intel sweep had its capacity columns recomputed after training: they name their own commit
    table = sm.read_sweep(sm.OTHER_KIND_SWEEP)
    commits = machine.column_commits(table.header, table.columns)
    assert commits["fit_step"] == table.environment["commit"]
    assert commits["tt_capacity"] == commits["edelman_capacity"] != commits["fit_step"]
    assert commits["tt_capacity"].startswith("c516123")
    # the saved sweep was trained with the capacity at the network's own norms: every column is the run's
    saved = sm.read_sweep()
    assert set(machine.column_commits(saved.header, saved.columns).values()) == {
        saved.environment["commit"]
    }
    named = machine.commit_mismatches(table.header, table.columns, here="0" * 40)
    assert [m.field for m in named] == ["commit", "commit of tt_capacity, edelman_capacity"]


@pytest.mark.slow  # over 15 s here (make test-fast leaves it out)
def test_recomputed_columns_record_their_commit(tmp_path, monkeypatch):
    from genbound.experiments import sparse_majority as sm
    from genbound.experiments.sparse_majority import files

    monkeypatch.setattr(files, "git_commit", lambda: "f" * 40)
    # the saved file's header and its first two rows: the bookkeeping is per column, not per row
    lines = sm.OTHER_KIND_SWEEP.read_text().splitlines(keepends=True)
    n_head = next(i for i, ln in enumerate(lines) if not ln.startswith("#")) + 1
    short = tmp_path / "short.csv"
    short.write_text("".join(lines[: n_head + 2]))
    assert len(sm.read_sweep(short).rows) == 2
    out = sm.recompute_bound_columns(
        short, tmp_path / "re.csv", columns=["tt_capacity"], notes="test"
    )
    header = sm.read_sweep(out).header
    assert header["column_commits"]["tt_capacity"] == "f" * 40
    assert header["column_commits"]["edelman_capacity"].startswith("c516123")


# ------------------------------------------------------------------------------- verify names the case
@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    import torch

    from genbound.experiments import sparse_majority as sm

    path = tmp_path_factory.mktemp("any") / "tiny.csv"
    cfg = sm.SparseMajorityConfig(
        n_train=40, n_val=30, n_test=50, steps=40, warmup=5, eval_every=7, m_star=False
    )
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with sm.open_sweep(path, cfg) as w:
            sm.run_sweep([11], [0], cfg, device="cpu", progress=False, on_stack=w.append)
    finally:
        torch.set_num_threads(old)
    return path


def _edit_environment(src: Path, dst: Path, **fields) -> Path:
    """A copy of the results file ``src`` whose recorded environment has ``fields`` changed."""
    lines = src.read_text().splitlines(keepends=True)
    n = next(i for i, ln in enumerate(lines) if not ln.startswith("#"))
    header = json.loads("\n".join(ln[1:] for ln in lines[1:n]))
    header["environment"].update(fields)
    text = "".join(f"# {ln}\n" for ln in json.dumps(header, indent=1).splitlines())
    dst.write_text(lines[0] + text + "".join(lines[n:]))
    return dst


def _change_a_row(src: Path, dst: Path) -> Path:
    text = src.read_text()
    head, _, body = text.rpartition("\n11,0,")
    cells = body.split(",")
    cols = [c for c in text.splitlines() if not c.startswith("#")][0].split(",")
    i = cols.index("test_acc") - 2
    cells[i] = repr(float(cells[i]) + 0.25)
    dst.write_text(head + "\n11,0," + ",".join(cells))
    return dst


def test_verify_on_the_recorded_kind_expects_exact_rows(tiny_file, capsys):
    rc = cli.main(
        [
            "experiment",
            "sparse-majority",
            "--saved-csv",
            str(tiny_file),
            "--verify-saved-rows",
            "11:0",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "same machine kind" in out and "expected to agree exactly" in out
    assert "1 of 1 rows reproduced exactly" in out


def test_verify_names_a_changed_cpu_and_commit_with_both_values(tiny_file, tmp_path, capsys):
    here = machine.environment()
    copy = _edit_environment(
        tiny_file,
        tmp_path / "other.csv",
        cpu_model="Simulated CPU 9000",
        cpu_capability="AVX2",
        commit="1" * 40,
    )
    rc = cli.main(
        ["experiment", "sparse-majority", "--saved-csv", str(copy), "--verify-saved-rows", "11:0"]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "another machine kind" in out and "another draw" in out
    assert f"cpu_model: recorded 'Simulated CPU 9000' vs here {here['cpu_model']!r}" in out
    assert f"cpu_capability: recorded 'AVX2' vs here {here['cpu_capability']!r}" in out
    assert f"commit: recorded '{'1' * 40}' vs here" in out
    rc = cli.main(
        [
            "experiment",
            "sparse-majority",
            "--saved-csv",
            str(copy),
            "--verify-saved-rows",
            "11:0",
            "--json",
        ]
    )
    case = json.loads(capsys.readouterr().out)["case"]
    assert not case["same_kind"]
    assert {
        "field": "cpu_model",
        "recorded": "Simulated CPU 9000",
        "here": here["cpu_model"],
    } in case["mismatches"]


def test_a_differing_row_fails_on_the_recorded_kind_and_is_sized_on_another(
    tiny_file, tmp_path, capsys
):
    bad = _change_a_row(tiny_file, tmp_path / "bad.csv")
    rc = cli.main(
        ["experiment", "sparse-majority", "--saved-csv", str(bad), "--verify-saved-rows", "11:0"]
    )
    out = capsys.readouterr().out
    assert rc == 1 and "DIFFERS: test_acc saved" in out and "(-0.25 (relative" in out
    other = _edit_environment(bad, tmp_path / "bad_other.csv", cpu_model="Simulated CPU 9000")
    rc = cli.main(
        ["experiment", "sparse-majority", "--saved-csv", str(other), "--verify-saved-rows", "11:0"]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "DIFFERS: test_acc saved" in out and "another draw, not a failure" in out


# ------------------------------------------------------------------------------- one writer per file
_WRITER = """
import sys, time
from genbound.experiments.runtime import results as res
schema = res.Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
try:
    w = res.open_results(sys.argv[1], schema, {"steps": 1}, environment={"threads": 1})
except res.ResultsFileError as exc:
    print(f"genbound: error: {exc}", file=sys.stderr)
    sys.exit(2)
print("open", flush=True)
if sys.argv[3:] == ["gate"]:
    sys.stdin.readline()                           # hold the open file until the test says go
for n in range(6):
    if (n, 0) not in w:
        time.sleep(float(sys.argv[2]))
        w.append([{"n": n, "seed": 0, "loss": n / 10}])
print("done", flush=True)
if sys.argv[3:] == ["hold"]:
    time.sleep(60)
"""


def _writer(path, pause, *extra):
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(pause), *extra],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_writers_on_one_file_write_every_key_once(tmp_path):
    path = tmp_path / "one.csv"
    # the first writer opens the file and waits at a gate, so the second surely starts while it holds
    # the file, however slowly either process starts on a loaded machine
    a = _writer(path, 0.1, "gate")
    assert a.stdout.readline().strip() == "open"
    b = _writer(path, 0.1)
    ob, eb = b.communicate(timeout=120)
    oa, ea = a.communicate("go\n", timeout=120)
    assert (a.returncode, b.returncode) == (0, 2), (ea, eb)
    assert len(eb.strip().splitlines()) == 1 and eb.startswith("genbound: error: ")
    assert f"another process (pid {a.pid}) is writing this results file" in eb
    # the refused writer reruns once the first has ended, finds every key done and writes nothing
    c = _writer(path, 0.1)
    oc, ec = c.communicate(timeout=120)
    assert c.returncode == 0 and ec == ""
    table = res.read_results(path, SCHEMA)
    assert sorted(table.keys) == [(n, 0) for n in range(6)] and len(table.rows) == 6


def test_a_killed_writer_never_blocks_a_resume(tmp_path):
    path = tmp_path / "stale.csv"
    p = _writer(path, 0.0, "hold")
    assert p.stdout.readline().strip() == "open" and p.stdout.readline().strip() == "done"
    with pytest.raises(ResultsFileError, match=rf"pid {p.pid}\)"):
        res.open_results(path, SCHEMA, {"steps": 1}, environment={"threads": 1})
    p.kill()
    p.wait(timeout=30)
    assert res.lock_path(path).read_text().strip() == str(
        p.pid
    )  # the stale lock file is still there
    with res.open_results(path, SCHEMA, {"steps": 1}, environment={"threads": 1}) as w:
        assert len(w.done) == 6
    # released on close: another process may write again
    q = _writer(path, 0.0)
    assert q.communicate(timeout=60)[1] == "" and q.returncode == 0


def test_shards_of_one_sweep_still_merge(tiny_file, tmp_path):
    import shutil

    from genbound.experiments import sparse_majority as sm

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    shutil.copy(tiny_file, a)
    with sm.open_sweep(b, sm.config_of(sm.read_sweep(tiny_file))) as w:
        assert not w.done  # another file, another lock
        with sm.open_sweep(a, sm.config_of(sm.read_sweep(tiny_file))) as w2:
            assert w2.done == {(11, 0)}
    out = sm.merge_sweeps([a], tmp_path / "m.csv")
    assert sm.read_sweep(out).keys == {(11, 0)}


# ------------------------------------------------------------------------------- interrupts and pipes
def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # over 15 s here (make test-fast leaves it out)
def test_ctrl_c_during_a_sweep_ends_in_one_line_and_the_file_resumes(tmp_path):
    path = tmp_path / "int.csv"
    # 20 seeds: enough runs that a loaded machine cannot finish them all between the first row and the signal
    args = [
        "experiment",
        "sparse-majority",
        "--seq-lens",
        "11,13",
        "--seeds",
        "20",
        "--device",
        "cpu",
        "--csv",
        str(path),
        *TINY,
    ]
    # a shell's background job (make test &) starts with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: the child gets the terminal's default, as under a user's Ctrl-C
    p = _genbound(*args, preexec_fn=_default_sigint)
    p.stdout.readline()  # the table's header
    assert p.stdout.readline().split()[:2] == ["11", "0"]  # a first run is finished and saved
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genbound: interrupted: ")
    assert str(path) in lines[0] and "rerun the same command to resume" in lines[0]
    from genbound.experiments import sparse_majority as sm

    saved = sm.read_sweep(path).keys
    assert 1 <= len(saved) < 40
    q = _genbound(*args)
    out, err = q.communicate(timeout=300)
    assert q.returncode == 0, err
    table = sm.read_sweep(path)
    assert table.keys == {(t, s) for t in (11, 13) for s in range(20)} and len(table.rows) == 40


def test_a_closed_pipe_ends_quietly():
    p = _genbound("claims")
    p.stdout.close()  # like `genbound claims | head -0`
    err = p.stderr.read()
    p.wait(timeout=120)
    assert err == "" and p.returncode in (0, cli.EXIT_BROKEN_PIPE)


def test_a_pipe_closed_after_one_line_ends_quietly():
    p = _genbound("claims")
    first = p.stdout.readline()  # like `genbound claims | head -1`
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=120)
    assert first and err == "" and p.returncode in (0, cli.EXIT_BROKEN_PIPE)


# ------------------------------------------------------------------------------- start-up
def test_help_and_the_cli_module_do_not_import_torch():
    code = (
        "import sys, io, contextlib\nimport genbound.cli as c\nassert 'torch' not in sys.modules\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n        c.main(['--help'])\n    except SystemExit:\n        pass\n"
        "assert 'experiment' in buf.getvalue() and 'claims' in buf.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'scipy', 'sympy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_subcommand_is_listed_and_builds():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.COMMANDS)
    light = cli.build_parser(None)
    sub = next(a for a in light._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.COMMANDS)


def test_the_analyze_pipeline_does_not_import_sympy():
    """``torch.broadcast_shapes`` imports ``torch._refs`` and sympy on first use (about 0.5 s of CPU, the
    regression of the whole-process benchmark since 05fa97e); the pipeline uses ``broadcast_shape``."""
    code = (
        "import sys, tempfile, genbound\nfrom genbound.testing import make_bert_checkpoint\n"
        "d = tempfile.mkdtemp()\nmake_bert_checkpoint(d, layers=1, heads=2, hidden=8, d_ff=16, seed=0)\n"
        "w = genbound.load_weights(d)\ngenbound.spectral_adaptive_bound(w, device='cpu')\n"
        "genbound.edelman_proxy(w, device='cpu')\nprint('sympy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_refusal_names_a_holder_that_has_not_yet_written_its_pid(tmp_path):
    """The race CI met once: the second writer read the lock file between the first one's flock and its
    pid write, and named "another process". The refusal now waits briefly for the pid."""
    import fcntl
    import threading

    path = tmp_path / "race.csv"
    lock = res.lock_path(path)
    fd = os.open(str(lock), os.O_RDWR | os.O_CREAT, 0o644)
    late = threading.Timer(0.2, lambda: os.write(fd, b"424242\n"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, the lock file still empty
        late.start()
        with pytest.raises(
            res.ResultsFileError, match=r"another process \(pid 424242\) is writing"
        ):
            res._acquire(path)
    finally:
        late.cancel()
        late.join()
        os.close(fd)
