"""The floors of the house (DESIGN.md, ``[tool.genbound.floors]`` in pyproject.toml), checked over every
import of the package, top-level and inside functions, by ``tools/floors.py``; and the module-length
ratchet (``[tool.genbound.module-lines]``).

Each check is also run on a small planted tree where it must find what was planted: an upward import, a
circle made only of function-level imports, a lazy import that keeps no heavy dependency out, a module
on no floor, a module grown past its line.
"""

from __future__ import annotations

import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import floors  # noqa: E402

CONTRACT = """
[tool.genbound.floors]
heavy = ["torch"]
order = ["core", "bounds", "app"]
face = ["genbound"]
[tool.genbound.floors.members]
core = ["genbound.norms", "genbound.errors"]
bounds = ["genbound.bounds"]
app = ["genbound.cli"]
"""


def _tree(tmp_path: Path, files: dict[str, str], contract: str = CONTRACT) -> Path:
    (tmp_path / "pyproject.toml").write_text(contract)
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


GOOD = {
    "genbound/__init__.py": "from .errors import E\n",
    "genbound/errors.py": "class E(Exception):\n    pass\n",
    "genbound/norms.py": "import torch\nfrom .errors import E\n",
    "genbound/bounds/__init__.py": "",
    "genbound/bounds/a.py": "from ..norms import E\n",
    "genbound/cli.py": "def main():\n    from .bounds import a\n    return a\n",
}


def test_the_package_keeps_its_floors():
    found = floors.findings(ROOT)
    assert found == [], "\n".join(found)


def test_a_clean_planted_tree_has_no_findings(tmp_path):
    # cli.py imports bounds.a in a function: allowed, it keeps torch out of cli
    assert floors.findings(_tree(tmp_path, GOOD)) == []


def test_an_upward_import_is_found(tmp_path):
    files = dict(GOOD, **{"genbound/norms.py": "import torch\nfrom .bounds import a\n"})
    found = floors.findings(_tree(tmp_path, files))
    assert any(
        f.startswith("up: genbound.norms [core]") and "genbound.bounds.a [bounds]" in f
        for f in found
    )


def test_a_circle_of_function_level_imports_is_found(tmp_path):
    files = dict(
        GOOD,
        **{
            "genbound/bounds/a.py": "import torch\ndef f():\n    from . import b\n",
            "genbound/bounds/b.py": "import torch\ndef g():\n    from . import a\n",
        },
    )
    found = floors.findings(_tree(tmp_path, files))
    assert "circle: genbound.bounds.a <-> genbound.bounds.b" in found


def test_a_lazy_import_that_keeps_nothing_out_is_found(tmp_path):
    # norms already loads torch; importing errors inside a function hides nothing
    files = dict(
        GOOD, **{"genbound/norms.py": "import torch\ndef f():\n    from .errors import E\n"}
    )
    found = floors.findings(_tree(tmp_path, files))
    assert any(f.startswith("lazy: genbound.norms line 3 imports genbound.errors") for f in found)


def test_a_type_checking_import_is_not_an_arrow(tmp_path):
    files = dict(
        GOOD,
        **{
            "genbound/norms.py": (
                "import torch\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .bounds import a\n"
            )
        },
    )
    assert floors.findings(_tree(tmp_path, files)) == []


def test_a_module_on_no_floor_is_found(tmp_path):
    files = dict(GOOD, **{"genbound/stray.py": "x = 1\n"})
    assert "unplaced: genbound.stray" in floors.findings(_tree(tmp_path, files))[0]


# ------------------------------------------------------------------------------ module-length ratchet
def module_lines(root: Path = ROOT) -> dict[str, int]:
    """Every module of ``genbound`` with its line count."""
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8").count("\n")
        for p in sorted((root / "genbound").rglob("*.py"))
    }


def ratchet_breaches(root: Path = ROOT) -> list[str]:
    """Modules over the limit and longer than recorded, and recorded lines that must come down."""
    with open(root / "pyproject.toml", "rb") as f:
        table = dict(tomllib.load(f)["tool"]["genbound"]["module-lines"])
    limit = table.pop("limit")
    lines = module_lines(root)
    out = []
    for path, n in lines.items():
        if n > limit and n > table.get(path, limit):
            out.append(f"{path}: {n} lines, over its line {table.get(path, limit)}: split it")
    for path, recorded in table.items():
        n = lines.get(path, 0)
        if n < recorded:
            out.append(
                f"{path}: {n} lines, under its recorded {recorded}: lower the line (or drop it)"
            )
    return out


def test_no_module_grows_past_its_line():
    assert ratchet_breaches() == []


@pytest.mark.parametrize(
    ("body", "recorded", "expect"),
    [
        ("x = 1\n" * 12, None, "over its line 10"),  # a new long module
        ("x = 1\n" * 12, 11, "over its line 11"),  # a recorded one that grew
        ("x = 1\n" * 11, 12, "under its recorded 12"),  # one that shrank keeps no slack
        ("x = 1\n" * 12, 12, None),
    ],
)
def test_the_ratchet_sees_growth_and_slack(tmp_path, body, recorded, expect):
    extra = f'"genbound/big.py" = {recorded}\n' if recorded else ""
    (tmp_path / "pyproject.toml").write_text(f"[tool.genbound.module-lines]\nlimit = 10\n{extra}")
    (tmp_path / "genbound").mkdir()
    (tmp_path / "genbound" / "big.py").write_text(body)
    found = ratchet_breaches(tmp_path)
    assert (expect is None and found == []) or (expect is not None and expect in found[0])
