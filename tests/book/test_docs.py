"""Backlinks from code to book: every chapter or lemma a docstring names must exist in the book."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOOK_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").rglob("*.md"))
ANCHORS = set(re.findall(r"^\(([\w-]+)\)=", BOOK_TEXT, flags=re.M))
PRF_LABELS = set(re.findall(r"^:label:\s*(\S+)", BOOK_TEXT, flags=re.M))
SOURCES = sorted((ROOT / "genbound").rglob("*.py"))


def _refs(pattern):
    for path in SOURCES:
        for ref in re.findall(pattern, path.read_text(encoding="utf-8")):
            yield path.relative_to(ROOT).as_posix(), ref


@pytest.mark.parametrize("where,ref", sorted(set(_refs(r"(?<!prf):ref:`(?:[^`<]*<)?([\w-]+)>?`"))))
def test_ref_targets_exist(where, ref):
    assert ref in ANCHORS, (
        f"{where} refers to :ref:`{ref}`, which is not a section anchor in book/"
        + (" (a prf label: use :prf:ref:)" if ref in PRF_LABELS else "")
    )


@pytest.mark.parametrize("where,ref", sorted(set(_refs(r":prf:ref:`([\w-]+)`"))))
def test_prf_ref_targets_exist(where, ref):
    assert ref in PRF_LABELS, f"{where} refers to :prf:ref:`{ref}`, which is no prf label in book/"
