"""No chapter reaches into an underscored name of ``genbound``.

Every piece of Python a chapter runs or shows is read: the ``{code-cell}`` blocks of a MyST chapter
(``book/**/*.md``), the ``>>>`` examples of its ``python``/``pycon`` blocks, the code cells of an ``.ipynb``
chapter and the whole of a ``.py`` (jupytext percent) chapter. Each piece must parse (a cell the scan
cannot read would otherwise pass unseen), and none may use ``from genbound... import _x``, ``import
genbound._x``, ``from genbound._x import y``, ``alias._x`` or ``getattr(alias, "_x")`` where ``alias`` is
bound to a genbound module or name (directly or by a plain assignment from one). A chapter that needs a
helper gives it a public, documented name in its module (CONTRIBUTING, "Add a chapter").
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
_SHOWN = re.compile(r"^```(?:python|pycon|py)[ \t]*\n(.*?)^```", re.S | re.M)
_NOT_PYTHON = re.compile(r"^(:|%|!(?!=))")  # MyST cell options, IPython magics, shell escapes


def chapters(book: Path = BOOK) -> list[Path]:
    """The chapters under ``book``: MyST notebooks (a ``.md`` with a jupytext header), ``.ipynb`` files and
    ``.py`` files (jupytext percent format)."""
    md = [p for p in book.rglob("*.md") if "jupytext" in p.read_text(encoding="utf-8")[:300]]
    other = [
        p
        for p in (*book.rglob("*.ipynb"), *book.rglob("*.py"))
        if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts
    ]
    return sorted(md + other)


def _doctest_source(block: str) -> str:
    """The code of the ``>>>``/``...`` lines of a shown example (empty when it has none)."""
    lines = [
        ln.strip()[4:]
        for ln in block.splitlines()
        if ln.strip().startswith((">>> ", "... ")) or ln.strip() in (">>>", "...")
    ]
    return "\n".join(lines)


def code_pieces(path: Path) -> list[str]:
    """The pieces of Python a chapter runs or shows, one per cell or example."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = [c for c in json.loads(text).get("cells", []) if c.get("cell_type") == "code"]
        raw = [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
        ]
    elif path.suffix == ".py":
        raw = [text]
    else:
        raw = _CELL.findall(text) + [s for s in map(_doctest_source, _SHOWN.findall(text)) if s]
    return ["\n".join(ln for ln in body.splitlines() if not _NOT_PYTHON.match(ln)) for body in raw]


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def underscored_uses(src: str) -> list[str]:
    """Underscored names of ``genbound`` that ``src`` reaches (see the module docstring); raises
    :class:`SyntaxError` when ``src`` does not parse."""
    tree = ast.parse(src)
    aliases, bad = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "genbound":
                    if any(part.startswith("_") for part in a.name.split(".")):
                        bad.append(a.name)
                    aliases.add(a.asname or "genbound")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "genbound":
            if any(part.startswith("_") for part in node.module.split(".")):
                bad.append(node.module)
            for a in node.names:
                if a.name.startswith("_"):
                    bad.append(f"{node.module}.{a.name}")
                aliases.add(a.asname or a.name)
    changed = True
    while changed:  # x = alias.something (or alias.f(...)): x reaches genbound too
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _base_name(node.value) in aliases:
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in aliases:
                            aliases.add(n.id)
                            changed = True
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            base = _base_name(node.value)
            if base in aliases:
                bad.append(f"{base}...{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and not str(node.args[1].value).startswith("__")
            and _base_name(node.args[0]) in aliases
        ):
            bad.append(f"getattr({_base_name(node.args[0])}, {node.args[1].value!r})")
    return bad


def chapter_violations(path: Path) -> list[str]:
    """Every underscored genbound name ``path`` uses, and every piece of it that does not parse."""
    out = []
    for i, src in enumerate(code_pieces(path)):
        try:
            out += underscored_uses(src)
        except SyntaxError as e:
            out.append(
                f"piece {i} does not parse ({e.msg}, line {e.lineno}): the scan cannot read it"
            )
    return out


CHAPTERS = chapters()


def test_every_chapter_is_scanned():
    """The scan sees the book (an empty glob or a changed cell syntax would make the test below vacuous)."""
    names = {p.relative_to(BOOK).as_posix() for p in CHAPTERS}
    assert {"part1/softmax_attention.md", "part3/deep.md", "part2/multilayer_masked.md"} <= names
    assert len(CHAPTERS) >= 19
    assert all(code_pieces(p) for p in CHAPTERS), [p.name for p in CHAPTERS if not code_pieces(p)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.relative_to(BOOK).as_posix())
def test_chapter_imports_public_names_only(chapter):
    bad = chapter_violations(chapter)
    assert not bad, f"{chapter.relative_to(ROOT)} uses underscored genbound names: {bad}"


_PLANTED_MD = """---
jupytext:
  text_representation:
    format_name: myst
---
# A planted chapter

```{code-cell} ipython3
:tags: [remove-cell]
%matplotlib inline
import genbound as gb
from genbound.claims import part1_softmax_attention as cl
from genbound.claims.part1_rademacher import _signs
import genbound._validate
from genbound.bounds._result import json_float
x = cl._TINY + gb.norms._private(1)
mod = gb.claims
y = mod._REGISTRY
z = getattr(cl, "_rel_ratio")
ok = cl.att_make(8), gb.norms.stable_rank, cl.__name__
flag = (ok
!= x)
```

Shown, not run:

```python
>>> from genbound.claims.part3_deep import _ball
>>> import math; math._private_looking_but_not_genbound = 1

```
"""


def _planted(tmp_path: Path) -> Path:
    book = tmp_path / "book" / "part9"
    book.mkdir(parents=True)
    (book / "planted.md").write_text(_PLANTED_MD, encoding="utf-8")
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["from genbound import _x"]},
            {
                "cell_type": "code",
                "source": ["from genbound.claims import part3_deep as cl\n", "s = cl._ball\n"],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (book / "planted.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    (book / "planted.py").write_text(
        "# %%\nimport genbound.claims._core as core\n", encoding="utf-8"
    )
    (book / "broken.md").write_text(
        _PLANTED_MD.replace("ok = cl.att_make(8)", "ok = (cl.att_make(8"), encoding="utf-8"
    )
    (book / "prose.md").write_text(
        "# Not a chapter\n\n`from genbound import _x` in prose\n", encoding="utf-8"
    )
    return tmp_path / "book"


def test_the_scan_fails_on_planted_chapters(tmp_path):
    """The check can fail: each form planted in a chapter (MyST, ipynb, py) is reported, public uses are
    not, and a cell that does not parse fails instead of passing unseen."""
    book = _planted(tmp_path)
    found = {p.name: p for p in chapters(book)}
    assert sorted(found) == ["broken.md", "planted.ipynb", "planted.md", "planted.py"]
    assert sorted(chapter_violations(found["planted.md"])) == sorted(
        [
            "genbound.claims.part1_rademacher._signs",
            "genbound._validate",
            "genbound.bounds._result",
            "cl..._TINY",
            "gb..._private",
            "mod..._REGISTRY",
            "getattr(cl, '_rel_ratio')",
            "genbound.claims.part3_deep._ball",
        ]
    )
    assert chapter_violations(found["planted.ipynb"]) == ["cl..._ball"]
    assert chapter_violations(found["planted.py"]) == ["genbound.claims._core"]
    assert any("does not parse" in v for v in chapter_violations(found["broken.md"]))


def test_public_uses_pass():
    src = (
        "import genbound as gb\nfrom genbound.claims import part1_rademacher as cl\nimport math\n"
        "a = cl.M_MAX + gb.norms.stable_rank(1) + math._x\nb = cl.__doc__\n"
    )
    assert underscored_uses(src) == []
