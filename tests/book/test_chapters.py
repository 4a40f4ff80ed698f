"""Execute every book chapter (MyST notebook) with a real kernel; any cell error fails the test.

A chapter is executed once per change: when ``make book`` has already executed it with the same code
(its jupyter-cache in ``_build/.jupyter_cache`` holds a notebook matching the chapter's code cells) and
the same inputs (the hash of ``genbound/``, the requirements and the config that ``tools/book_cache.py``
records with the build equals the hash now), the test reads that executed notebook and checks that no
cell ended in an error, instead of executing the chapter again. Otherwise it executes the chapter.
"""

import os
import pathlib
import sys
import time

import jupytext
import nbclient
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import book_cache  # noqa: E402

CHAPTERS = sorted(
    p for p in (ROOT / "book").rglob("*.md") if "jupytext" in p.read_text(encoding="utf-8")[:300]
)
BUILD = ROOT / "_build"


def executed_by_the_book(nb, build: pathlib.Path = BUILD):
    """The notebook ``make book`` executed from this code with today's inputs, or ``None``."""
    stamp = build / book_cache.STAMP
    cache_dir = build / ".jupyter_cache"
    if not (stamp.is_file() and cache_dir.is_dir()):
        return None
    if stamp.read_text().strip() != book_cache.inputs_hash(ROOT):
        return None
    from jupyter_cache import get_cache

    try:
        record = get_cache(str(cache_dir)).match_cache_notebook(nb)
    except KeyError:  # no notebook with this code in the cache
        return None
    return get_cache(str(cache_dir)).get_cache_bundle(record.pk).nb


def error_outputs(nb) -> list[str]:
    """The ``ename: evalue`` of every cell output that is an error."""
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


@pytest.mark.chapter
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT / "book")))
def test_chapter_executes(path, record_property):
    if os.environ.get("GENBOUND_SKIP_CHAPTERS"):
        pytest.skip("GENBOUND_SKIP_CHAPTERS is set (CI executes chapters in the -W book build)")
    nb = jupytext.read(path)
    done = executed_by_the_book(nb)
    if done is not None:
        record_property("executed_by", "make book")
        assert error_outputs(done) == []
        return
    t0 = time.perf_counter()
    nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    record_property("seconds", time.perf_counter() - t0)


def test_a_stale_build_is_not_taken_for_an_execution(tmp_path):
    nb = jupytext.read(CHAPTERS[0])
    assert executed_by_the_book(nb, tmp_path) is None  # no build
    (tmp_path / ".jupyter_cache").mkdir()
    (tmp_path / book_cache.STAMP).write_text("another-hash\n")
    assert executed_by_the_book(nb, tmp_path) is None  # inputs changed since the build


def test_error_outputs_are_found():
    nb = jupytext.reads("```{code-cell} ipython3\n1\n```\n", fmt="md:myst")
    nb.cells[0]["outputs"] = [{"output_type": "error", "ename": "ValueError", "evalue": "x"}]
    assert error_outputs(nb) == ["ValueError: x"]
