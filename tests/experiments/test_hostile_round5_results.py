"""Issue 48 (reliability, round 5), the results files: sidecar locks that never follow a symlink nor
truncate, lock names that fit any legal results name, resumes bound to the content of their inputs and
to the format version."""

from __future__ import annotations

import os

import pytest

from blocking import in_thread
from genbound.errors import ResultsFileError
from genbound.experiments.runtime import results as res
from genbound.experiments.runtime.locks import lock_path

SCHEMA = res.Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
ENV = {"threads": 1}


def _open(path, **kw):
    return res.open_results(path, SCHEMA, {"steps": 1}, environment=ENV, **kw)


# ---------------------------------------------------------------------------------------------- locks
def test_a_planted_symlink_lock_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"a file the user never named\n")
    path = tmp_path / "r.csv"
    lock_path(path).symlink_to(victim)
    with pytest.raises(ResultsFileError, match="symlink"):
        _open(path)
    assert victim.read_bytes() == b"a file the user never named\n"
    assert not path.exists()


def test_a_dangling_symlink_lock_creates_nothing(tmp_path):
    target = tmp_path / "created-through-the-link"
    path = tmp_path / "r.csv"
    lock_path(path).symlink_to(target)
    with pytest.raises(ResultsFileError, match="symlink"):
        _open(path)
    assert not target.exists()


def test_a_hard_linked_lock_is_refused_and_its_other_name_kept(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"12\n")  # looks like a pid, but is another file's content
    path = tmp_path / "r.csv"
    os.link(victim, lock_path(path))
    with pytest.raises(ResultsFileError, match="2 links"):
        _open(path)
    assert victim.read_bytes() == b"12\n"


def test_a_lock_file_with_other_content_is_left_untouched(tmp_path):
    path = tmp_path / "r.csv"
    lock_path(path).write_bytes(b"my notes, not a pid\n")
    with pytest.raises(ResultsFileError, match="other than a genbound writer's pid"):
        _open(path)
    assert lock_path(path).read_bytes() == b"my notes, not a pid\n"


def test_a_fifo_lock_is_refused_without_blocking(tmp_path):
    path = tmp_path / "r.csv"
    os.mkfifo(lock_path(path))
    box = in_thread(lambda: _open(path))
    assert isinstance(box.get("error"), ResultsFileError) and "not a regular file" in str(
        box["error"]
    )


def test_a_lock_file_is_reused_and_never_truncated(tmp_path):
    path = tmp_path / "r.csv"
    with _open(path) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
        assert lock_path(path).read_text().strip() == str(os.getpid())
    size = lock_path(path).stat().st_size
    assert lock_path(path).read_text().strip() == ""  # released: the pid blanked, not cut
    with _open(path) as w:  # the lock file of an earlier run (or an older genbound) is taken again
        assert len(w.done) == 1
    assert lock_path(path).stat().st_size == size
    lock_path(path).write_bytes(b"4242\n")  # what an older genbound left
    with _open(path) as w:
        assert len(w.done) == 1


@pytest.mark.parametrize("length", [249, 250, 254, 255])
def test_a_legal_long_results_name_has_a_lock(tmp_path, length):
    path = tmp_path / ("r" * (length - 4) + ".csv")
    with _open(path) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    assert res.read_results(path, SCHEMA).keys == {(1, 0)}
    assert len(lock_path(path).name.encode()) <= 255 and lock_path(path).exists()
    with _open(path) as w:  # a resume finds the same lock
        assert len(w.done) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# ---------------------------------------------------------------------------------------------- resumes
def test_a_header_of_another_format_version_is_refused(tmp_path):
    path = tmp_path / "r.csv"
    with _open(path) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    data = path.read_bytes().replace(b"(format 1)", b"(format 2)", 1)
    path.write_bytes(data)
    for fn in (lambda: res.read_results(path, SCHEMA), lambda: _open(path)):
        with pytest.raises(ResultsFileError, match="format 2.*format 1 only"):
            fn()
    assert path.read_bytes() == data


def test_a_resume_on_other_inputs_is_refused(tmp_path):
    path = tmp_path / "r.csv"
    with _open(path, inputs={"corpus_sha256": "aa"}) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    before = path.read_bytes()
    with pytest.raises(
        ResultsFileError, match=r"inputs differ .* corpus_sha256 \(file aa, this run bb\)"
    ):
        _open(path, inputs={"corpus_sha256": "bb"})
    assert path.read_bytes() == before
    with _open(path, inputs={"corpus_sha256": "aa"}) as w:  # the same input resumes
        assert len(w.done) == 1


def test_a_file_without_recorded_inputs_resumes_with_a_report(tmp_path):
    path = tmp_path / "r.csv"
    with _open(path) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    said = []
    with _open(path, inputs={"corpus_sha256": "aa"}, report=said.append) as w:
        assert len(w.done) == 1
    assert any("does not record the content of its inputs" in m for m in said)


# ---------------------------------------------------------------------------------------------- the corpus
def _corpus(folder, text):
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text(text, encoding="ascii")
    return folder


def test_certify_lm_refuses_a_resume_after_the_corpus_changed(tmp_path):
    from genbound.experiments.certify_lm import CertifyLMConfig, load_corpus
    from genbound.experiments.certify_lm.files import open_sweep
    from genbound.experiments.certify_lm.sweep import run_sweep

    folder = _corpus(tmp_path / "corpus", "to be or not to be, that is the question\n" * 40)
    cfg = CertifyLMConfig(corpus=str(folder), doc_len=8, pilot_docs=0)
    path = tmp_path / "lm.csv"
    open_sweep(path, cfg.as_dict(), corpus_sha256=load_corpus(folder).sha256).close()
    before = path.read_bytes()
    # the same characters, another text: the rows of the two must never share a file
    _corpus(folder, "that is the question: to be or not to be\n" * 40)
    with pytest.raises(ResultsFileError, match="corpus_sha256"):
        run_sweep(path, ["xs"], [0], cfg, quiet=True)
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_corpus_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    from genbound.errors import InputError
    from genbound.experiments.certify_lm import load_corpus

    folder = tmp_path / "corpus"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / "a.txt")
    else:
        (folder / "a.txt").symlink_to("/dev/zero")
    box = in_thread(lambda: load_corpus(folder))
    err = box.get("error")
    assert isinstance(err, InputError), box
    assert ("FIFO" if kind == "fifo" else "character device") in str(err)


def test_a_corpus_larger_than_its_limit_is_refused_before_it_is_read(tmp_path):
    from genbound.errors import InputError
    from genbound.experiments.certify_lm import data

    folder = tmp_path / "corpus"
    folder.mkdir()
    with open(folder / "a.txt", "wb") as fh:  # sparse: the size is what is checked
        fh.truncate(data.MAX_CORPUS_BYTES + 1)
    with pytest.raises(InputError, match="MAX_CORPUS_BYTES"):
        data.load_corpus(folder)
