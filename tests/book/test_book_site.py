"""The book as readers use it: executed notebooks linked, claims index links, the browser check's logic.

The pure parts of ``tools/check_browser.py`` and ``tools/notebooks.py`` are tested on small synthetic
sites; the claims-index links against the book's files. When a built book is present (``make book``
ran), every chapter page is also checked to link its executed notebook (every code cell run) and the claims
index to link every label to its statement; without one those two tests are skipped (CI runs
``make check-browser`` after the build, which checks the same on the real pages).
"""

import json
import os
import pathlib
import re
import sys

import pytest

from genbound import claims
from genbound.claims._links import claims_index_html, implementing_objects, statement_href

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check_browser as cb  # noqa: E402
import notebooks as nbtool  # noqa: E402

SITE = ROOT / "_build" / "html"
BASE = "http://127.0.0.1:8000/"
HEADER = (
    "---\njupytext:\n  text_representation: {extension: .md}\nkernelspec: {name: python3}\n---\n"
)


def _nb(path: pathlib.Path, outputs: int, executed: bool = True, cells: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cell = {
        "cell_type": "code",
        "source": "1",
        "metadata": {},
        "execution_count": 1 if executed else None,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}] * outputs,
    }
    path.write_text(
        json.dumps({"cells": [cell] * cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )


# ---- tools/check_browser.py -----------------------------------------------------------------------


def test_site_pages_skip_theme_and_copies(tmp_path):
    for rel in (
        "index.html",
        "book/a.html",
        "_static/x.html",
        "_sources/book/a.html",
        "_notebooks/x.html",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("<html></html>")
    assert cb.site_pages(tmp_path) == ["book/a.html", "index.html"]


def test_redirect_target_and_screenshot_name(tmp_path):
    page = tmp_path / "index.html"
    page.write_text('<meta http-equiv="Refresh" content="0; url=book/intro.html" />')
    assert cb.redirect_target(page) == "book/intro.html"
    page.write_text("<html><body>no redirect</body></html>")
    assert cb.redirect_target(page) is None
    assert cb.screenshot_name("book/part1/rademacher.html") == "book__part1__rademacher.png"


def _result(links, ids=()):
    return {"links": [{"href": BASE + h, "raw": h, "text": h} for h in links], "ids": list(ids)}


def test_check_links_finds_missing_pages_and_anchors(tmp_path):
    for rel in ("book/a.html", "book/b.html", "_notebooks/book/a.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    results = {
        "book/a.html": _result(
            ["book/b.html#here", "book/b.html#gone", "book/c.html", "_notebooks/book/a.ipynb"],
            ids=["top"],
        ),
        "book/b.html": _result(["book/a.html#top"], ids=["here"]),
    }
    problems = cb.check_links(results, tmp_path, BASE)
    assert set(problems) == {"book/a.html"}
    text = "\n".join(problems["book/a.html"])
    assert "missing anchor: 'book/b.html#gone'" in text and "missing file: 'book/c.html'" in text
    assert "#here" not in text and "a.ipynb" not in text


def test_check_links_ignores_other_hosts(tmp_path):
    results = {
        "book/a.html": {
            "links": [{"href": "https://example.org/x#y", "raw": "x", "text": ""}],
            "ids": [],
        }
    }
    assert cb.check_links(results, tmp_path, BASE) == {}


def test_check_notebook_links(tmp_path):
    """Criterion: executed (every code cell has an execution count), outputs where the page shows them."""
    _nb(tmp_path / "_notebooks/book/part1/good.ipynb", outputs=2)
    _nb(
        tmp_path / "_notebooks/book/part1/silent.ipynb", outputs=0
    )  # executed; its cells print nothing
    _nb(tmp_path / "_notebooks/book/part1/unrun.ipynb", outputs=0, executed=False)
    _nb(tmp_path / "_notebooks/book/part1/lost.ipynb", outputs=0)
    _nb(tmp_path / "_notebooks/book/part1/other.ipynb", outputs=1, cells=3)

    def page(nb, cells=None):
        r = _result([f"_notebooks/book/part1/{nb}.ipynb"])
        if cells is not None:
            r["cells"] = [{"input": True, "output": o} for o in cells]
        return r

    results = {
        "book/part1/good.html": page("good", [True]),
        "book/part1/silent.html": page("silent", [False]),
        "book/part1/unrun.html": page("unrun", [False]),
        "book/part1/lost.html": page("lost", [True]),  # the page shows an output the notebook lacks
        "book/part1/other.html": page(
            "other", [True]
        ),  # one cell on the page, three in the notebook
        "book/part1/none.html": _result(["book/intro.html"]),
        "book/intro.html": _result([]),  # not a chapter: no notebook needed
    }
    problems = cb.check_notebook_links(results, tmp_path, BASE)
    assert set(problems) == {
        "book/part1/unrun.html",
        "book/part1/lost.html",
        "book/part1/other.html",
        "book/part1/none.html",
    }
    assert "not executed" in problems["book/part1/unrun.html"][0]
    assert "show an output on the page but have none" in problems["book/part1/lost.html"][0]
    assert "shows 1 code cells, the notebook has 3" in problems["book/part1/other.html"][0]
    assert "no link" in problems["book/part1/none.html"][0]


def test_notebook_problems_skips_removed_cells(tmp_path):
    nb = tmp_path / "a.ipynb"
    cells = [
        {
            "cell_type": "code",
            "source": "x",
            "metadata": {"tags": ["remove-cell"]},
            "execution_count": 1,
            "outputs": [],
        },
        {"cell_type": "markdown", "source": "text", "metadata": {}},
        {
            "cell_type": "code",
            "source": "y",
            "metadata": {},
            "execution_count": 2,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}],
        },
    ]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert cb.notebook_problems(nb, [{"input": True, "output": True}]) == []
    assert "missing" in cb.notebook_problems(tmp_path / "gone.ipynb")[0]


def test_notebook_outputs_counts_code_cell_outputs(tmp_path):
    _nb(tmp_path / "a.ipynb", outputs=3)
    assert cb.notebook_outputs(tmp_path / "a.ipynb") == 3
    assert cb.notebook_outputs(tmp_path / "missing.ipynb") == 0


# ---- tools/notebooks.py ---------------------------------------------------------------------------


def _mini_book(root: pathlib.Path) -> None:
    (root / "book/part1").mkdir(parents=True)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/part1/a\n"
    )
    (root / "book/intro.md").write_text("# Intro\n")
    (root / "book/part1/a.md").write_text(HEADER + "# A\n")


def test_make_notebooks_copies_executed_chapters(tmp_path):
    _mini_book(tmp_path)
    site = tmp_path / "_build/html"
    assert nbtool.executed_chapters(tmp_path) == ["book/part1/a"]
    assert nbtool.stale(site, tmp_path) == ["book/part1/a"]  # not built yet
    _nb(site / "_notebooks/book/part1/a.ipynb", outputs=1)
    assert nbtool.stale(site, tmp_path) == []
    written = nbtool.copy_notebooks(site, tmp_path / "notebooks", tmp_path)
    assert written == [tmp_path / "notebooks/part1/a.ipynb"]
    assert cb.notebook_outputs(written[0]) == 1


def test_is_notebook_reads_the_front_matter_only():
    assert nbtool.is_notebook(HEADER + "# A")
    assert not nbtool.is_notebook("# Intro\n\nChapters are jupytext notebooks with a kernelspec.")
    assert not nbtool.is_notebook("---\ntitle: x\n---\nkernelspec: {name: python3}")


def test_make_notebooks_refuses_unexecuted_notebooks(tmp_path):
    _mini_book(tmp_path)
    site = tmp_path / "_build/html"
    _nb(site / "_notebooks/book/part1/a.ipynb", outputs=0, executed=False)
    with pytest.raises(SystemExit, match="not executed"):
        nbtool.copy_notebooks(site, tmp_path / "notebooks", tmp_path)


# ---- the claims index -----------------------------------------------------------------------------

API_MODULES = set(
    re.findall(r"automodule:: (\S+)", (ROOT / "book/api.md").read_text(encoding="utf-8"))
)


@pytest.mark.parametrize("claim", claims.all_claims(), ids=lambda c: c.label)
def test_claim_links_point_to_existing_targets(claim):
    href = statement_href(claim.label, claim.chapter)
    page, anchor = href.split("#")
    source = ROOT / "book" / page.replace(".html", ".md")
    assert source.is_file() and anchor == claim.label
    assert re.search(
        rf"^:label:\s*{re.escape(claim.label)}\s*$", source.read_text(encoding="utf-8"), re.M
    )
    for qualname, is_module in implementing_objects(claim.label):
        module = qualname if is_module else qualname.rsplit(".", 1)[0]
        assert module in API_MODULES, (
            f"{qualname} is linked from the index but {module} is not in book/api.md"
        )


def test_most_claims_link_an_implementing_function():
    """Statements no function computes are textbook facts used in proofs; keep that list short."""
    check_only = sorted(c.label for c in claims.all_claims() if not implementing_objects(c.label))
    assert len(check_only) <= 5, check_only


def test_claims_index_html_escapes_and_keeps_extra_columns():
    import pandas as pd

    t = pd.DataFrame(
        [
            {
                "label": "lem-massart",
                "chapter": "book/part1/rademacher.md",
                "note": "a<b",
                "worst_ratio": 0.25,
            }
        ]
    )
    out = claims_index_html(t, formats={"worst_ratio": "{:.3f}"}, numeric=("worst_ratio",))
    assert "<th>note</th>" in out and "a&lt;b" in out and '<td class="num">0.250</td>' in out
    assert (
        "<th>chapter</th>" not in out and 'href="api.html#genbound.rademacher.massart_bound"' in out
    )


# ---- the built book (skipped without one) ----------------------------------------------------------


def needs_build(test):
    """Marks a test of the built site: ``built_book``, and skipped without a build unless
    ``GENBOUND_REQUIRE_BUILT_BOOK`` is set (CI sets it when it runs these tests after ``make book-fresh``,
    so there a missing build fails instead of skipping)."""
    missing = not (SITE / "book" / "claims_index.html").is_file()
    required = bool(os.environ.get("GENBOUND_REQUIRE_BUILT_BOOK"))
    skip = pytest.mark.skipif(
        missing and not required, reason="no built book in _build/html (run make book)"
    )
    return pytest.mark.built_book(skip(test))


@needs_build
def test_every_chapter_page_links_its_executed_notebook():
    chapters = sorted((ROOT / "book").glob("part*/*.md"))
    assert chapters
    for md in chapters:
        doc = md.relative_to(ROOT).with_suffix("").as_posix()
        html = (SITE / f"{doc}.html").read_text(encoding="utf-8")
        href = f"../../_notebooks/{doc}.ipynb"
        assert f'href="{href}"' in html, f"{doc}.html does not link {href}"
        assert cb.notebook_problems(SITE / "_notebooks" / f"{doc}.ipynb") == [], doc


@needs_build
def test_claims_index_links_every_label_to_its_statement():
    html = (SITE / "book" / "claims_index.html").read_text(encoding="utf-8")
    for c in claims.all_claims():
        assert f'href="{statement_href(c.label, c.chapter)}"' in html, c.label
        assert f'id="claim-{c.label}"' in html, c.label


# ---- tools/genbound_sphinx.py: notebooks served from the jupyter-cache ------------------------------


def test_executed_copy_takes_outputs_from_the_cache(tmp_path):
    """MyST-NB writes a cache hit's notebook without outputs; the copy the pages link gets them back."""
    nbformat = pytest.importorskip("nbformat")
    jc = pytest.importorskip("jupyter_cache")
    import genbound_sphinx as gs

    def nb(executed: bool):
        n = nbformat.v4.new_notebook()
        n.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        cell = nbformat.v4.new_code_cell("print(1)", metadata={"tags": ["hide-input"]})
        if executed:
            cell.execution_count = 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        n.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
        return n

    done, bare = tmp_path / "done.ipynb", tmp_path / "bare.ipynb"
    nbformat.write(nb(True), str(done))
    nbformat.write(nb(False), str(bare))
    cache = jc.get_cache(str(tmp_path / "cache"))
    cache.cache_notebook_file(str(done), check_validity=False)
    out = tmp_path / "out.ipynb"
    assert gs.executed_copy(bare, out, tmp_path / "cache") == "cache"
    code = [c for c in nbformat.read(str(out), as_version=4).cells if c.cell_type == "code"]
    assert code[0].execution_count == 1 and code[0].outputs[0]["text"] == "1\n"
    assert code[0].metadata["tags"] == ["hide-input"]
    assert cb.notebook_problems(out, [{"input": True, "output": True}]) == []
    assert gs.executed_copy(done, tmp_path / "same.ipynb", None) == "executed"
    other = nb(False)
    other.cells[1].source = "print(2)"  # code the cache has never seen
    nbformat.write(other, str(bare))
    with pytest.raises(RuntimeError, match="no record"):
        gs.executed_copy(bare, out, tmp_path / "cache")
    with pytest.raises(RuntimeError, match="no jupyter-cache"):
        gs.executed_copy(bare, out, None)
