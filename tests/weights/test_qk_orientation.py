"""One orientation of the query-key matrix everywhere: ``W_Q W_K^T`` in the row-vector convention.

The book (``book/notation.md``) works with row vectors, ``x -> x W``; there a head's query-key matrix is
``W_Q W_K^T`` (``N x N``, rank at most ``d_head``), and ``W_Q^T W_K`` is another matrix
(``d_head x d_head``, another spectrum). No chapter, docstring or help text may name the latter, and the
claim ``prop-sa-qk-orientation`` ties the named product to the computed spectra.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from genbound import claims
from genbound.claims import part3_trained

ROOT = Path(__file__).resolve().parents[2]

#: ``W_Q^T W_K``, ``W_Q^\top W_K``, ``W_Q^{\top} R_\Delta W_K`` ... (the transposed orientation), in
#: LaTeX or plain text, with an optional rotation between the factors, not followed by a transpose of W_K.
TRANSPOSED = re.compile(
    r"W_\{?Q\}?\s*\^\s*(?:\{\s*)?(?:\\top|T|\\intercal)(?:\s*\})?\s*"
    r"(?:R_(?:\{[^}]*\}|\\?\w+)\s*)?W_\{?K\}?(?!\s*\^)"
)


def _pages():
    yield from sorted((ROOT / "book").rglob("*.md"))
    yield from sorted((ROOT / "genbound").rglob("*.py"))


@pytest.mark.parametrize(
    "text",
    [
        r"$W_Q^\top W_K$",
        "W_Q^T W_K",
        r"x_sW_Q^\top R_{t-s}W_Kx_t^\top",
        r"W_Q^{\top} W_K",
        r"W_Q^\top R_\Delta W_K",
    ],
)
def test_pattern_sees_the_transposed_product(text):
    assert TRANSPOSED.search(text)


@pytest.mark.parametrize(
    "text", [r"$W_QW_K^\top$", "W_Q W_K^T", r"x_sW_QR_{t-s}W_K^\top x_t^\top", r"W_Q^\top W_K^\top"]
)
def test_pattern_passes_the_row_vector_product(text):
    assert not TRANSPOSED.search(text)


def test_no_page_or_docstring_names_the_transposed_product():
    hits = []
    for path in _pages():
        if path.name == "test_qk_orientation.py" or "_build" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if TRANSPOSED.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "the transposed query-key product is named:\n" + "\n".join(hits)


def test_notation_and_help_name_the_row_vector_product(capsys):
    from genbound.analysis import KINDS
    from genbound.cli import main

    notation = (ROOT / "book" / "notation.md").read_text()
    assert r"W_{QK}=W_QW_K^\top" in notation and "prop-sa-qk-orientation" in notation
    assert part3_trained.QK_NAME in KINDS["QK"]
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    out = capsys.readouterr().out
    assert "W_Q W_K^T" in " ".join(out.split()) and not TRANSPOSED.search(out)


def test_claim_label_is_in_the_book_and_rejects_its_mutants():
    c = claims.get("prop-sa-qk-orientation")
    assert (
        "{prf:proposition}"
        in (ROOT / c.chapter).read_text().split(":label: prop-sa-qk-orientation")[0][-400:]
    )
    r = c.check(0)
    assert r.passed and r.trials > 100, r
    killed = {m.name: m.killed for m in c.check_mutants(0)}
    assert killed == {"named-transposed": True, "code-transposed": True, "query-key-swapped": True}
