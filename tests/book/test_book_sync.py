"""Text and code in sync: book labels <-> claims, toc <-> files, glue keys, no hand-typed numbers in prose."""

import pathlib
import re

import yaml

from genbound import claims

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CLAIM_DIRECTIVES = ("lemma", "theorem", "corollary", "proposition")
LABEL_RE = re.compile(r"```\{prf:(\w+)\}[^\n]*\n((?::[^\n]*\n)*)")


def _book_blocks():
    out = {}
    for path in BOOK.rglob("*.md"):
        for kind, opts in LABEL_RE.findall(path.read_text(encoding="utf-8")):
            m = re.search(r":label:\s*(\S+)", opts)
            if kind in CLAIM_DIRECTIVES:
                assert m, f"{path}: a prf:{kind} block has no :label:"
                assert m.group(1) not in out, f"label {m.group(1)} used twice"
                out[m.group(1)] = path.relative_to(ROOT).as_posix()
    return out


def test_every_book_lemma_has_a_claim():
    missing = sorted(set(_book_blocks()) - set(claims.labels()))
    assert not missing, f"book blocks without a claim in genbound.claims: {missing}"


def test_every_claim_has_a_book_lemma():
    orphans = sorted(set(claims.labels()) - set(_book_blocks()))
    assert not orphans, f"claims without a prf block in the book: {orphans}"


def test_claim_chapter_matches_book_file():
    blocks = _book_blocks()
    wrong = {
        c.label: (c.chapter, blocks[c.label])
        for c in claims.all_claims()
        if c.label in blocks and c.chapter != blocks[c.label]
    }
    assert not wrong, f"claim.chapter differs from the file that states it: {wrong}"


def _toc_files(node):
    if isinstance(node, dict):
        if "file" in node:
            yield node["file"]
        for v in node.values():
            yield from _toc_files(v)
    elif isinstance(node, list):
        for v in node:
            yield from _toc_files(v)


def test_toc_lists_every_chapter_and_only_existing_ones():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {toc["root"], *_toc_files(toc)}
    for f in files:
        assert (ROOT / f"{f}.md").exists(), f"_toc.yml lists {f} but {f}.md does not exist"
    on_disk = {p.relative_to(ROOT).with_suffix("").as_posix() for p in BOOK.rglob("*.md")}
    assert on_disk <= files, f"chapters not in _toc.yml: {sorted(on_disk - files)}"


def test_glue_roles_refer_to_glued_keys():
    for path in BOOK.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        glued = set(re.findall(r"glue(?:_figure)?\(\s*f?[\"']([^\"'{]+)", text))
        glued |= {
            k.split("{")[0] for k in re.findall(r"glue(?:_figure)?\(\s*f[\"']([^\"']+)", text)
        }
        # genbound.chapter.show_claim (imported as show) glues {label}-summary and {label}-ratio
        for label in re.findall(r"\bshow(?:_claim)?\(\s*[\"']([^\"']+)[\"']", text):
            glued |= {f"{label}-summary", f"{label}-ratio"}
        used = re.findall(r"\{glue(?::\w+)?\}`([^`:]+)", text)
        used += re.findall(r"```\{glue(?::\w+)?\}\s+(\S+)", text)
        for key in used:
            if "::" in key or ".md" in key:
                continue  # cross-page glue, checked by the -W build
            assert any(key == g or key.startswith(g) for g in glued), (
                f"{path.name}: glue key {key!r} never glued"
            )


def test_no_glue_inside_math():
    for path in BOOK.rglob("*.md"):
        for span in re.findall(r"\$[^$\n]+\$", path.read_text(encoding="utf-8")):
            assert "{glue" not in span, (
                f"{path.name}: glue role inside math is not expanded: {span}"
            )


CITE_RE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def _bib_keys():
    return re.findall(
        r"^@\w+\{([^,\s]+),", (BOOK / "references.bib").read_text(encoding="utf-8"), re.M
    )


def _cited_keys():
    keys = set()
    for path in BOOK.rglob("*.md"):
        for group in CITE_RE.findall(path.read_text(encoding="utf-8")):
            keys.update(k.strip() for k in group.split(","))
    return keys


def test_every_citation_has_a_bib_entry_and_every_entry_is_cited():
    bib, cited = _bib_keys(), _cited_keys()
    assert len(bib) == len(set(bib)), "a bib key is defined twice"
    assert not sorted(cited - set(bib)), (
        f"cited but not in references.bib: {sorted(cited - set(bib))}"
    )
    assert not sorted(set(bib) - cited), (
        f"in references.bib but never cited: {sorted(set(bib) - cited)}"
    )
