"""Every number the chapters compute comes from a function that a claim checks.

Each :class:`genbound.claims.Claim` declares in ``covers`` the dotted names of the package functions
its checks call (the functions whose values the claim is about). This test reads every chapter's code
cells, resolves each call of a ``genbound`` function there (``gb.trauger_tewari_bound(...)``,
``se.per_matrix_term(...)``, ``from genbound.norms import stable_rank; stable_rank(...)``) and
requires every such function of the numeric core to be covered by some claim. Aliases count as the
same function (names are compared by the object they resolve to).

The call scan is static: a method called on a result object (``r.samples_needed(...)``) is not seen;
the numeric core below is what the book publishes numbers from.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from genbound import claims

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("part*/*.md"))

#: modules whose functions produce the numbers the book publishes (a prefix matches submodules): the
#: package's own list, the one tools/mutation.py draws from
NUMERIC_CORE = claims.NUMERIC_CORE

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def code_cells(path: Path) -> list[str]:
    """The code cells of a MyST notebook, without their ``:tags:`` option lines and IPython magics."""
    cells = []
    for body in _CELL.findall(path.read_text()):
        lines = [ln for ln in body.splitlines() if not ln.startswith((":", "%", "!"))]
        cells.append("\n".join(lines))
    return cells


def _resolve(dotted: str):
    """The object a dotted name ``pkg.mod.attr.attr`` names, or ``None``."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


def _in_core(obj) -> bool:
    mod = getattr(inspect.unwrap(obj), "__module__", "") or ""
    return callable(obj) and not inspect.isclass(obj) and mod.startswith(NUMERIC_CORE)


EXPERIMENTS = sorted((ROOT / "genbound" / "experiments").rglob("*.py"))


def chapter_calls(path: Path) -> dict[str, object]:
    """``{dotted name as written: function}`` for every call of a numeric-core function in a chapter
    (a ``.md`` notebook) or in a package module (a ``.py`` file, relative imports resolved)."""
    aliases: dict[str, str] = {}
    calls: dict[str, object] = {}
    if path.suffix == ".py":
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        sources = [path.read_text()]
    else:
        package, sources = "", code_cells(path)
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("genbound"):
                        aliases[a.asname or a.name.split(".")[0]] = (
                            a.name if a.asname else a.name.split(".")[0]
                        )
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join([*base, *([mod] if mod else [])])
                if mod.startswith("genbound"):
                    for a in node.names:
                        aliases[a.asname or a.name] = f"{mod}.{a.name}"
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            chain, f = [], node.func
            while isinstance(f, ast.Attribute):
                chain.append(f.attr)
                f = f.value
            if not isinstance(f, ast.Name) or f.id not in aliases:
                continue
            dotted = ".".join([aliases[f.id], *reversed(chain)])
            obj = _resolve(dotted)
            if obj is not None and _in_core(obj):
                calls[dotted] = inspect.unwrap(obj)
    return calls


def covered_functions() -> dict[object, list[str]]:
    """``{function: [labels of the claims that cover it]}``."""
    out: dict[object, list[str]] = {}
    for c in claims.all_claims():
        for name in c.covers:
            obj = _resolve(name)
            if obj is not None:
                out.setdefault(inspect.unwrap(obj), []).append(c.label)
    return out


def test_every_claim_declares_what_it_covers():
    missing = [c.label for c in claims.all_claims() if not c.covers]
    assert not missing, f"claims without `covers`: {missing}"


def test_covers_resolve():
    bad = [(c.label, n) for c in claims.all_claims() for n in c.covers if _resolve(n) is None]
    assert not bad, f"`covers` names that do not resolve: {bad}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_chapter_numbers_come_from_claimed_functions(chapter):
    covered = covered_functions()
    uncovered = sorted(name for name, fn in chapter_calls(chapter).items() if fn not in covered)
    assert not uncovered, (
        f"{chapter.relative_to(ROOT)} calls numeric-core functions that no claim "
        f"covers: {uncovered}"
    )


@pytest.mark.parametrize("module", EXPERIMENTS, ids=lambda p: str(p.relative_to(ROOT / "genbound")))
def test_experiment_numbers_come_from_claimed_functions(module):
    """The experiments (Parts II and V) compute their bound columns by calling the numeric core."""
    covered = covered_functions()
    uncovered = sorted(name for name, fn in chapter_calls(module).items() if fn not in covered)
    assert not uncovered, (
        f"{module.relative_to(ROOT)} calls numeric-core functions that no claim covers: {uncovered}"
    )


def test_scanner_sees_calls(tmp_path):
    """The scanner itself: an import alias, a from-import and a module attribute chain all resolve."""
    import textwrap

    tmp = tmp_path / "probe.md"
    tmp.write_text(
        textwrap.dedent("""\
        ```{code-cell} ipython3
        :tags: [hide-input]
        import genbound as gb
        from genbound import norms
        from genbound.norms import stable_rank as sr
        gb.spectral_norm([1.0]); norms.frobenius_norm([1.0]); sr([1.0])
        ```
        """)
    )
    calls = chapter_calls(tmp)
    assert set(calls) == {
        "genbound.spectral_norm",
        "genbound.norms.frobenius_norm",
        "genbound.norms.stable_rank",
    }


def test_numeric_core_names_modules_that_exist():
    for name in NUMERIC_CORE:
        assert importlib.util.find_spec(name) is not None, (
            f"NUMERIC_CORE names {name}, which is no module"
        )
    files = claims.numeric_core_files()
    assert "genbound/bounds/_result.py" in files and all((ROOT / f).is_file() for f in files)
