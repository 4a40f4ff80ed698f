"""The guide in step with the tree: every file CONTRIBUTING's recipes name exists, the README's layout
matches ``genbound/``, and the family modules import one way. (That no chapter reaches into an underscored
name of ``genbound`` is ``tests/book/test_chapter_imports.py``.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
RECIPES = ("Add a bound", "Add a checkpoint family", "Add an experiment", "Add a chapter")
_PATHLIKE = re.compile(r"`([\w./<>-]+)`")


def developing_section() -> str:
    start = CONTRIBUTING.index("\n## Developing")
    nxt = CONTRIBUTING.find("\n## ", start + 5)
    return CONTRIBUTING[start : nxt if nxt > 0 else None]


def recipe(title: str) -> str:
    sec = developing_section()
    start = sec.index(f"### {title}")
    nxt = sec.find("\n### ", start + 5)
    return sec[start : nxt if nxt > 0 else None]


def named_paths(text: str) -> list[str]:
    """Backticked tokens that are paths (contain ``/`` or end in a file suffix); ``<placeholder>`` parts stand
    for a new name, so only the folder before the first placeholder must exist."""
    out = []
    for tok in _PATHLIKE.findall(text):
        if "/" in tok or re.search(r"\.(py|md|yml|json|csv)$", tok):
            out.append(tok)
    return out


def _exists(tok: str) -> bool:
    if "<" in tok:
        folder = tok[: tok.index("<")]
        folder = folder[: folder.rfind("/") + 1] if "/" in folder else ""
        return (ROOT / folder).is_dir()
    return (ROOT / tok).exists()


@pytest.mark.parametrize("title", RECIPES)
def test_recipe_names_files_that_exist(title):
    text = recipe(title)
    paths = named_paths(text)
    assert any(re.match(r"tests/(\w+/)?test_", p) for p in paths), (
        f"recipe {title!r} names no test that holds you to it"
    )
    missing = [p for p in paths if not _exists(p)]
    assert not missing, f"recipe {title!r} names files that do not exist: {missing}"


def test_named_paths_reads_placeholders():
    assert named_paths("`genbound/bounds/<paper>.py` and `x` and `_toc.yml`") == [
        "genbound/bounds/<paper>.py",
        "_toc.yml",
    ]
    assert _exists("genbound/bounds/<paper>.py") and not _exists("genbound/nowhere/<paper>.py")


# ---------------------------------------------------------------------------------------------- README layout

_ENTRY = re.compile(r"^( *)((?:[\w.-]+(?:\.py|/)(?: (?=[\w.-]+(?:\.py|/)))?)+)(?:\s|$)")


def readme_layout() -> list[str]:
    """The paths the README's ``genbound/`` block names (``genbound/bounds/_result.py``, ``genbound/weights/``...)."""
    start = README.index("```\ngenbound/\n")
    block = README[start + 4 : README.index("```", start + 4)].splitlines()
    out, stack = [], []  # stack of (indent, folder)
    for line in block:
        m = _ENTRY.match(line)
        if not m:
            continue
        indent, names = len(m.group(1)), m.group(2).split(" ")
        if indent >= 30:  # a continuation of the description column
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        base = "".join(f for _, f in stack)
        for n in names:
            out.append(base + n)
        if len(names) == 1 and names[0].endswith("/"):
            stack.append((indent, names[0]))
    return out


def test_readme_layout_names_what_exists():
    paths = readme_layout()
    assert "genbound/bounds/_result.py" in paths and "genbound/experiments/predict_gap/" in paths
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README layout names paths that do not exist: {missing}"


def test_readme_layout_covers_the_package():
    """Every public module and package of genbound/ and of genbound/experiments/ is in the layout."""
    named = set(readme_layout())
    want = []
    for folder in ("genbound", "genbound/experiments"):
        for p in sorted((ROOT / folder).iterdir()):
            if p.name.startswith(("_", ".")) or p.name == "__pycache__":
                continue
            if p.suffix == ".py":
                want.append(f"{folder}/{p.name}")
            elif p.is_dir() and ((p / "__init__.py").exists() or p.name == "data"):
                want.append(f"{folder}/{p.name}/")
    missing = [w for w in want if w not in named]
    assert not missing, f"README layout misses: {missing}"


# ---------------------------------------------------------------------------------------------- imports
def test_family_modules_import_one_way():
    """A family module takes Family/Role from families/base.py, never from its package (which imports it)."""
    for path in sorted((ROOT / "genbound" / "weights" / "families").glob("*.py")):
        if path.name in ("__init__.py", "base.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module == "base", f"{path.name} imports from its package: a cycle"
