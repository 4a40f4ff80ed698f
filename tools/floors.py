"""The floors of the package, read from every import (top-level and inside functions) and held against
the contract in ``pyproject.toml`` (``[tool.genbound.floors]``).

Findings, one line each:

* ``unplaced``: a module that no floor names;
* ``up``: an import from a floor to one above it;
* ``circle``: modules that import each other in a loop (function-level imports counted);
* ``lazy``: a function-level import of a genbound module that keeps no heavy dependency out of the
  importer (the imported module loads none that the importer does not already load at its top level).

``python tools/floors.py`` prints them and exits 1 if there are any; ``tests/house/test_floors.py`` asserts none.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Module:
    """One module of the package: its imports of genbound modules and of third-party packages."""

    name: str
    path: Path
    top: set[str] = field(default_factory=set)  # genbound modules imported at module level
    inner: list[tuple[str, int]] = field(default_factory=list)  # (module, line) inside functions
    third_party_top: set[str] = field(default_factory=set)


def module_name(path: Path, root: Path = ROOT) -> str:
    """``genbound/a/b.py`` -> ``genbound.a.b``; ``genbound/a/__init__.py`` -> ``genbound.a``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _targets(node, current: str, is_package: bool, known: set[str]) -> list[str]:
    """The genbound modules (or third-party top names, prefixed ``!``) that one import statement names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = current.split(".")
            if not is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
    out = []
    for name in names:
        if name.split(".")[0] != "genbound":
            out.append("!" + name.split(".")[0])
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        out.append(name)
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def read_modules(root: Path = ROOT) -> dict[str, Module]:
    """Every module under ``root/genbound`` with its imports (``if TYPE_CHECKING:`` blocks left out:
    they never run)."""
    paths = sorted((root / "genbound").rglob("*.py"))
    known = {module_name(p, root) for p in paths}
    modules = {}
    for path in paths:
        mod = Module(module_name(path, root), path)
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"

        def visit(node, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    for sub in child.orelse:
                        visit(ast.Module(body=[sub], type_ignores=[]), in_function)
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in _targets(child, mod.name, is_package, known):
                        if t.startswith("!"):
                            if not in_function:
                                mod.third_party_top.add(t[1:])
                        elif t != mod.name:
                            if in_function:
                                mod.inner.append((t, child.lineno))
                            else:
                                mod.top.add(t)
                    continue
                inner = in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
                )
                visit(child, inner)

        visit(tree, False)
        modules[mod.name] = mod
    return modules


def load_contract(root: Path = ROOT) -> dict:
    """``[tool.genbound.floors]`` of ``pyproject.toml``."""
    with open(root / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["genbound"]["floors"]


def floor_of(name: str, contract: dict) -> str | None:
    """The floor whose member is the longest prefix of ``name`` (``None``: the face or unplaced)."""
    best, floor = -1, None
    for fl, members in contract["members"].items():
        for m in members:
            if (name == m or name.startswith(m + ".")) and len(m) > best:
                best, floor = len(m), fl
    return floor


def _package_chain(name: str) -> list[str]:
    """The packages Python imports before ``name`` (``genbound.a.b`` -> ``genbound``, ``genbound.a``)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def heavy_at_top(modules: dict[str, Module], heavy: set[str]) -> dict[str, set[str]]:
    """For each module, the heavy packages that importing it loads (its top-level imports, followed
    through genbound's own top-level imports and the packages above it)."""
    memo: dict[str, set[str]] = {}

    def visit(name: str, stack: set[str]) -> set[str]:
        if name in memo:
            return memo[name]
        if name in stack or name not in modules:
            return set()
        stack = stack | {name}
        mod = modules[name]
        found = mod.third_party_top & heavy
        for dep in mod.top | set(_package_chain(name)):
            found |= visit(dep, stack)
        memo[name] = found
        return found

    return {name: visit(name, set()) for name in modules}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def findings(root: Path = ROOT) -> list[str]:
    """Every breach of the contract, one line each (empty: the house keeps its floors)."""
    contract = load_contract(root)
    order = contract["order"]
    face = set(contract.get("face", []))
    heavy = set(contract["heavy"])
    modules = read_modules(root)
    loads = heavy_at_top(modules, heavy)
    lines = []
    edges: dict[str, set[str]] = {}
    for name, mod in sorted(modules.items()):
        if name in face:
            continue
        floor = floor_of(name, contract)
        if floor is None:
            lines.append(
                f"unplaced: {name} is on no floor (pyproject [tool.genbound.floors.members])"
            )
            continue
        targets = [(t, None) for t in sorted(mod.top)] + mod.inner
        for target, line in targets:
            if target in face:  # always loaded first by Python; it imports only errors at its top
                continue
            edges.setdefault(name, set()).add(target)
            tf = floor_of(target, contract)
            if tf is not None and order.index(tf) > order.index(floor):
                where = f" (line {line})" if line else ""
                lines.append(f"up: {name} [{floor}]{where} imports {target} [{tf}]")
            if line is not None and not (loads.get(target, set()) - loads[name]):
                lines.append(
                    f"lazy: {name} line {line} imports {target} inside a function, which keeps no "
                    f"heavy dependency out of {name}; import it at the top"
                )
    for comp in circles(edges):
        lines.append("circle: " + " <-> ".join(comp))
    return lines


def main() -> int:
    found = findings()
    for line in found:
        print(line)
    print(f"floors: {len(found)} findings")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
