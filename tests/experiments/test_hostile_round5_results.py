"""Issue 48 (reliability, round 5), the results files: sidecar locks that never follow a symlink nor
truncate, lock names that fit any legal results name, resumes bound to the content of their inputs and
to the format version."""

from __future__ import annotations

import os
import threading

import pytest

from genbound.errors import ResultsFileError
from genbound.experiments.runtime import results as res
from genbound.experiments.runtime.locks import lock_path

SCHEMA = res.Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
ENV = {"threads": 1}


def _open(path, **kw):
    return res.open_results(path, SCHEMA, {"steps": 1}, environment=ENV, **kw)


def _in_thread(fn, timeout=10.0):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked"
    return box


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
    box = _in_thread(lambda: _open(path))
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
