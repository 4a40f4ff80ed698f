"""tools/book_cache.py: an incremental ``make book`` starts from nothing when what chapters import changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("book_cache", ROOT / "tools" / "book_cache.py")
bc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bc)


def _tree(tmp_path):
    (tmp_path / "genbound" / "__pycache__").mkdir(parents=True)
    (tmp_path / "genbound" / "a.py").write_text("x = 1\n")
    (tmp_path / "genbound" / "__pycache__" / "a.pyc").write_bytes(b"junk")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "ch.md").write_text("# chapter\n")
    (tmp_path / "requirements.txt").write_text("numpy\n")
    return tmp_path


def _run(root, capsys):
    assert bc.main(["--root", str(root)]) == 0
    return capsys.readouterr().out


def test_hash_follows_package_not_chapters_or_caches(tmp_path):
    root = _tree(tmp_path)
    h0 = bc.inputs_hash(root)
    (root / "book" / "ch.md").write_text("# chapter, edited\n")
    (root / "genbound" / "__pycache__" / "a.pyc").write_bytes(b"other junk")
    assert bc.inputs_hash(root) == h0
    (root / "genbound" / "a.py").write_text("x = 2\n")
    assert bc.inputs_hash(root) != h0
    (root / "genbound" / "a.py").write_text("x = 1\n")
    assert bc.inputs_hash(root) == h0
    (root / "genbound" / "b.py").write_text("")  # a new module counts too
    assert bc.inputs_hash(root) != h0


def test_build_kept_for_chapter_edits_removed_for_package_edits(tmp_path, capsys):
    root = _tree(tmp_path)
    assert "no previous build" in _run(root, capsys)
    marker = root / "_build" / ".jupyter_cache" / "kept"
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    (root / "book" / "ch.md").write_text("# edited\n")
    assert "incremental" in _run(root, capsys) and marker.exists()
    (root / "genbound" / "a.py").write_text("x = 3\n")
    assert "removing" in _run(root, capsys) and not marker.exists()
    assert (root / "_build" / bc.STAMP).read_text().strip() == bc.inputs_hash(root)
    assert "incremental" in _run(root, capsys)
