"""Mutation testing of the numeric core against ``genbound claims --check`` alone.

A *mutant* is the package with one small source-level change in one numeric module: an arithmetic
operator swapped (``+`` <-> ``-``, ``*`` <-> ``/``, ``**`` -> ``*``), a float literal doubled, a call to
``sqrt``/``log``/``exp`` dropped (``math.sqrt(x)`` -> ``x``, ``x.sqrt()`` -> ``x``), ``min`` <-> ``max``
(also ``minimum``/``maximum``, ``amin``/``amax``, ``clamp_min``/``clamp_max``), or a comparison flipped
(``<`` <-> ``<=``, ``>`` <-> ``>=``). The scope is the *numeric core*: validation and messages are left
out (statements that ``raise``, calls of ``check_*``/``_check_*``/``_validate`` helpers, strings,
docstrings, ``__all__``, decorators and default arguments), and so are the conformance fixtures (the
bodies of ``examples()`` and of ``_example*`` helpers, which build the instances
``tests/bounds/test_bound_protocol.py`` draws and from which nothing is published).

Each mutant is written into a fresh copy of the ``genbound`` package in a temporary folder and checked
by a subprocess that runs every claim's check (exactly what ``genbound claims --check`` runs, without
mutants, doctests or unit tests), stopping at the first failing claim. The mutant is **killed** when a
check fails or raises, **survives** when every claim passes, and **timed out** past ``--timeout``
(counted apart). Mutants excluded from the score are listed in ``benchmarks/mutation_equivalent.json`` as
``{key: {"kind": ..., "reason": ...}}``: ``"equivalent"`` (the change cannot alter any result) or
``"validation"`` (the change only alters what happens on input the function refuses), ``"fixture"`` (the
change only alters the ``examples()`` instances a conformance test draws, from which nothing is published)
or ``"tolerance"`` (the result moves by less than the function's documented tolerance, in the direction its
contract allows, so no check of that contract can tell), each with a one-line reason; the summary counts
each kind.

Usage (``make mutation`` runs the default)::

    python tools/mutation.py --n 120 --seed 0 --json benchmarks/mutation_results.json

The claims are ordered so that those whose module imports the mutated module run first (a killed
mutant usually dies in seconds); a survivor costs one full ``claims --check``.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "genbound"


#: the numeric core: every module of :data:`genbound.claims.NUMERIC_CORE` (paths relative to the repo root),
#: so that a module added to the core (a new bound in genbound/bounds/) is drawn from without editing this file
def default_targets() -> tuple[str, ...]:
    sys.path.insert(0, str(ROOT))
    try:
        from genbound.claims import numeric_core_files
    finally:
        sys.path.pop(0)
    return tuple(numeric_core_files())


EQUIVALENT_FILE = ROOT / "benchmarks" / "mutation_equivalent.json"

_SWAP_BIN = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
    ast.FloorDiv: ast.Div,
}
_SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_SWAP_NAME = {
    "min": "max",
    "max": "min",
    "minimum": "maximum",
    "maximum": "minimum",
    "amin": "amax",
    "amax": "amin",
    "clamp_min": "clamp_max",
    "clamp_max": "clamp_min",
    "fmin": "fmax",
    "fmax": "fmin",
    "argmin": "argmax",
    "argmax": "argmin",
}
_DROP_CALL = {"sqrt", "log", "exp", "log1p", "expm1", "log2", "log10"}
_SKIP_CALL_PREFIX = ("check_", "_check", "_validate", "validate")


@dataclass(frozen=True)
class Site:
    """One mutation: ``file``, 1-based ``line`` and ``col`` of the node, ``op`` (what kind), ``before``
    and ``after`` (source snippets), and ``index`` (the node's position in the module's walk order)."""

    file: str
    line: int
    col: int
    op: str
    before: str
    after: str
    index: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}:{self.col}:{self.op}"


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _excluded_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes outside the numeric core (validation, messages, docstrings, defaults, decorators,
    conformance fixtures)."""
    out: set[int] = set()

    def drop(n):
        for sub in ast.walk(n):
            out.add(id(sub))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.JoinedStr, ast.Assert)):
            drop(node)
        elif (
            isinstance(node, ast.If)
            and node.body
            and all(isinstance(s, ast.Raise) for s in node.body)
            and not node.orelse
        ):
            drop(node)  # `if bad: raise ...`: a guard, not a computation
        elif isinstance(node, ast.Call) and _call_name(node).startswith(_SKIP_CALL_PREFIX):
            drop(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.name == "examples" or node.name.startswith("_example")
        ):
            drop(
                node
            )  # a conformance fixture: instances for tests/bounds/test_bound_protocol.py, nothing published
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                drop(d)
            if not isinstance(node, ast.ClassDef):
                for d in [*node.args.defaults, *node.args.kw_defaults]:
                    if d is not None:
                        drop(d)
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                drop(body[0])
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            drop(node)
    if isinstance(tree, ast.Module) and tree.body and isinstance(tree.body[0], ast.Expr):
        drop(tree.body[0])
    return out


def _mutations(node: ast.AST) -> list[tuple[str, callable]]:
    """The mutations applicable to one node: ``(op, apply)``, ``apply`` edits the node in place."""
    out = []
    if isinstance(node, ast.BinOp) and type(node.op) in _SWAP_BIN:
        new = _SWAP_BIN[type(node.op)]
        out.append(
            (
                f"binop:{type(node.op).__name__}->{new.__name__}",
                lambda n=node, t=new: setattr(n, "op", t()),
            )
        )
    elif isinstance(node, ast.AugAssign) and type(node.op) in _SWAP_BIN:
        new = _SWAP_BIN[type(node.op)]
        out.append(
            (
                f"augop:{type(node.op).__name__}->{new.__name__}",
                lambda n=node, t=new: setattr(n, "op", t()),
            )
        )
    elif (
        isinstance(node, ast.Constant)
        and isinstance(node.value, float)
        and not isinstance(node.value, bool)
    ):
        out.append(
            ("float*2", lambda n=node: setattr(n, "value", n.value * 2 if n.value != 0 else 1.0))
        )
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SWAP_CMP:
        new = _SWAP_CMP[type(node.ops[0])]
        out.append(
            (
                f"cmp:{type(node.ops[0]).__name__}->{new.__name__}",
                lambda n=node, t=new: n.ops.__setitem__(0, t()),
            )
        )
    elif isinstance(node, ast.Call):
        name = _call_name(node)
        if name in _SWAP_NAME:
            new = _SWAP_NAME[name]
            if isinstance(node.func, ast.Name):
                out.append((f"name:{name}->{new}", lambda n=node, s=new: setattr(n.func, "id", s)))
            else:
                out.append(
                    (f"name:{name}->{new}", lambda n=node, s=new: setattr(n.func, "attr", s))
                )
        if name in _DROP_CALL:
            out.append((f"drop:{name}", None))  # handled by the transformer (node replaced)
    return out


class _Dropper(ast.NodeTransformer):
    """Replace the call with id ``target`` by its argument (``f(x)`` -> ``x``; ``x.f()`` -> ``x``)."""

    def __init__(self, target: int):
        self.target = target

    def visit_Call(self, node):
        self.generic_visit(node)
        if id(node) != self.target:
            return node
        if node.args:
            return node.args[0]
        if isinstance(node.func, ast.Attribute):
            return node.func.value
        return node


def enumerate_sites(path: Path) -> list[Site]:
    """Every mutation site of one module, in a fixed order."""
    src = path.read_text()
    tree = ast.parse(src)
    skip = _excluded_nodes(tree)
    rel = str(path.relative_to(ROOT))
    sites = []
    for i, node in enumerate(ast.walk(tree)):
        if id(node) in skip or not hasattr(node, "lineno"):
            continue
        for op, _ in _mutations(node):
            before = ast.get_source_segment(src, node) or ast.unparse(node)
            out = mutate_source(src, i, op, snippet=True)
            if out is None:
                continue
            sites.append(Site(rel, node.lineno, node.col_offset + 1, op, before[:80], out[:80], i))
    return sites


def mutate_source(src: str, index: int, op: str, *, snippet: bool = False) -> str | None:
    """The source with mutation ``op`` applied to the ``index``-th node of ``ast.walk`` (``snippet``:
    only the mutated expression, for the report); ``None`` when ``op`` does not apply there."""
    tree = ast.parse(src)
    node = list(ast.walk(tree))[index]
    if op.startswith("drop:"):
        holder = ast.Expression(body=node)
        holder = _Dropper(id(node)).visit(holder)
        replacement = holder.body
        if replacement is node:
            return None
        tree = _Dropper(id(node)).visit(tree)
        if snippet:
            return ast.unparse(replacement)
    else:
        for o, apply in _mutations(node):
            if o == op:
                apply()
                break
        else:
            return None
        if snippet:
            return ast.unparse(node)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


RUNNER = r"""
import importlib, pkgutil, sys
mod = sys.argv[1]
short = mod.rsplit(".", 1)[-1]
import genbound.claims as C
prio = {}
for info in pkgutil.iter_modules(C.__path__):
    if info.name.startswith("_"):
        continue
    before = set(C._REGISTRY)
    M = importlib.import_module("genbound.claims." + info.name)
    mentions = short in open(M.__file__).read()
    for label in set(C._REGISTRY) - before:
        prio[label] = 1 if mentions else 2
C._LOADED = True
cs = C.all_claims()
for c in cs:
    if any(str(f).startswith(mod) for f in getattr(c, "covers", ()) or ()):
        prio[c.label] = 0
for c in sorted(cs, key=lambda c: (prio.get(c.label, 2), c.label)):
    try:
        r = C.check(c.label, 0)
    except Exception as e:
        print("KILLED-RAISE", c.label, type(e).__name__, str(e)[:200].replace(chr(10), " "))
        sys.exit(1)
    if not r.passed:
        print("KILLED", c.label, r.summary().replace(chr(10), " ")[:200])
        sys.exit(1)
print("SURVIVED", len(cs))
"""


def _runner_source() -> str:
    return RUNNER


def _package_copy(workdir: Path) -> None:
    """A fresh copy of the package in ``workdir`` to mutate (its saved data linked, not copied)."""
    dest = workdir / "genbound"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(PKG, dest, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (dest / "data").symlink_to(PKG / "data")


def _claims_verdict(workdir: Path, modname: str, timeout: float) -> tuple[str, str, float]:
    """Run the claims against the mutated copy in ``workdir`` (one thread, no bytecode written):
    ``(status, why, seconds)`` with status ``survived``, ``killed`` (a failing check or a crash) or
    ``timeout``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(workdir),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, "-c", _runner_source(), modname],
            env=env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out = (p.stdout.strip().splitlines() or [""])[-1]
        if p.returncode == 0 and out.startswith("SURVIVED"):
            status, why = "survived", ""
        elif out.startswith("KILLED"):
            status, why = "killed", out
        else:
            status, why = "killed", "crash: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    except subprocess.TimeoutExpired:
        status, why = "timeout", f"no verdict within {timeout:.0f} s"
    return status, why, round(time.perf_counter() - t0, 2)


def run_mutant(site: Site, *, timeout: float, workdir: Path) -> dict:
    """Copy the package, apply ``site``, run every claim in a subprocess; the outcome as a dict."""
    _package_copy(workdir)
    target = workdir / site.file
    src = (ROOT / site.file).read_text()
    target.write_text(mutate_source(src, site.index, site.op))
    modname = site.file[:-3].replace("/", ".")
    status, why, seconds = _claims_verdict(workdir, modname, timeout)
    return {
        **asdict(site),
        "key": site.key,
        "status": status,
        "why": why,
        "seconds": seconds,
    }


#: Targeted mutants: each named constant or sensitivity of a bound, scaled in the numeric code **and** in its
#: sympy source together (so that a symbolic equality cannot tell), by each of :data:`TARGETED_FACTORS`.
#: Entries: ``(name, ((file, exact text, scaled text with {f} for the factor), ...))``; the text must occur
#: exactly once in its file (a test holds the table to the sources).
TARGETED_FACTORS = (0.25, 0.5, 2.0, 4.0)
TARGETED = (
    (
        "tt-rho-QK",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                "= B_w * P * c * L_sigma * S_V[h] * kappa * Bt**3",
                "= {f} * B_w * P * c * L_sigma * S_V[h] * kappa * Bt**3",
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "= B_w * P * c * L_sigma * sv[h] * kappa * Bt**3",
                "= sp.nsimplify({f}) * B_w * P * c * L_sigma * sv[h] * kappa * Bt**3",
            ),
        ),
    ),
    (
        "tt-rho-V",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                '"] = B_w * P * c * L_sigma * Bt',
                '"] = {f} * B_w * P * c * L_sigma * Bt',
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "rho[ev[h]] = B_w * P * c * L_sigma * Bt",
                "rho[ev[h]] = sp.nsimplify({f}) * B_w * P * c * L_sigma * Bt",
            ),
        ),
    ),
    (
        "edelman-rho-QK",
        (
            (
                "genbound/bounds/edelman.py",
                ": S_w * c * L_sigma * sv * kappa * Bt for h, sv in enumerate(S_V)}",
                ": {f} * S_w * c * L_sigma * sv * kappa * Bt for h, sv in enumerate(S_V)}",
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                ": S_w * c * L_sigma * sv[h] * kappa * Bt for h in range(H)}",
                ": sp.nsimplify({f}) * S_w * c * L_sigma * sv[h] * kappa * Bt for h in range(H)}",
            ),
        ),
    ),
    (
        "head-qk-factor",
        (
            (
                "genbound/schatten_entropy.py",
                "ATTENTION_QK_FACTOR = 4.0",
                "ATTENTION_QK_FACTOR = 4.0 * {f}",
            ),
        ),
    ),
    (
        "dudley-integral-coef",
        (
            (
                "genbound/rademacher.py",
                "DUDLEY_INTEGRAL_COEF = 12.0",
                "DUDLEY_INTEGRAL_COEF = 12.0 * {f}",
            ),
            (
                "genbound/symbolic/dudley.py",
                "return sp.simplify(remainder / alpha), sp.simplify(integral_coef)",
                "return sp.simplify(remainder / alpha), sp.simplify(sp.nsimplify({f}) * integral_coef)",
            ),
        ),
    ),
    (
        "zhang-36",
        (
            ("genbound/covering.py", "ZHANG_CONSTANT = 36.0", "ZHANG_CONSTANT = 36.0 * {f}"),
            (
                "genbound/symbolic/trauger_tewari.py",
                "ZHANG_LEADING = sp.Integer(36)",
                "ZHANG_LEADING = sp.Integer(36) * sp.nsimplify({f})",
            ),
        ),
    ),
    (
        "proper-cover-2",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                '"] = 2.0 if needs else 1.0',
                '"] = 2.0 * {f} if needs else 1.0',
            ),
            (
                "genbound/bounds/trauger_tewari.py",
                '"] = 2.0 if lay.S_C < lay.B_C else 1.0',
                '"] = 2.0 * {f} if lay.S_C < lay.B_C else 1.0',
            ),
            (
                "genbound/bounds/edelman.py",
                "2.0 if sv < b21 else 1.0",
                "2.0 * {f} if sv < b21 else 1.0",
            ),
            (
                "genbound/bounds/edelman.py",
                "2.0 if layer.S_C < layer.B_C21 else 1.0",
                "2.0 * {f} if layer.S_C < layer.B_C21 else 1.0",
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "PROPER_FACTOR = sp.Integer(2)",
                "PROPER_FACTOR = sp.Integer(2) * sp.nsimplify({f})",
            ),
        ),
    ),
    (
        "margin-2",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                '"out_dim") == 1 else 2.0) / g',
                '"out_dim") == 1 else 2.0 * {f}) / g',
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "MARGIN_LIPSCHITZ_MULTICLASS = sp.Integer(2)",
                "MARGIN_LIPSCHITZ_MULTICLASS = sp.Integer(2) * sp.nsimplify({f})",
            ),
        ),
    ),
    (
        "confidence-3",
        (
            (
                "genbound/rademacher.py",
                "GAP_CONFIDENCE_COEF = 3.0",
                "GAP_CONFIDENCE_COEF = 3.0 * {f}",
            ),
            (
                "genbound/symbolic/rademacher.py",
                "gap = mcdiarmid_deviation(d1) + SYMMETRIZATION_SUMS * (R + mcdiarmid_deviation(d2))",
                "gap = sp.nsimplify({f}) * mcdiarmid_deviation(d1) + SYMMETRIZATION_SUMS * "
                "(R + sp.nsimplify({f}) * mcdiarmid_deviation(d2))",
            ),
        ),
    ),
    (
        "grid-base",
        (
            ("genbound/bounds/radius_grid.py", "GRID_BASE = 2.0", "GRID_BASE = 2.0 * {f}"),
            (
                "genbound/symbolic/radius_grid.py",
                "def rounding_range(base=2):",
                "def rounding_range(base=2 * sp.nsimplify({f})):",
            ),
        ),
    ),
    (
        "grid-prior-normaliser",
        (
            (
                "genbound/bounds/radius_grid.py",
                "PRIOR_NORMALISER = 2.0 / 3.0",
                "PRIOR_NORMALISER = 2.0 / 3.0 * {f}",
            ),
            (
                "genbound/symbolic/radius_grid.py",
                "return sp.nsimplify(1 / total)",
                "return sp.nsimplify({f} / total)",
            ),
        ),
    ),
    (
        "tt-rho-C",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                "] = B_w * P * _aug(L_sigma * sum(S_V) * Bt, bias)",
                "] = {f} * B_w * P * _aug(L_sigma * sum(S_V) * Bt, bias)",
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "rho[ec] = B_w * P * aug(L_sigma * sum(sv) * Bt, bias)",
                "rho[ec] = sp.nsimplify({f}) * B_w * P * aug(L_sigma * sum(sv) * Bt, bias)",
            ),
        ),
    ),
    (
        "tt-rho-w",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                'rho["w"] = _aug(Bs[-1], bias)',
                'rho["w"] = {f} * _aug(Bs[-1], bias)',
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                'rho["eta_w"] = aug(Bs[-1], bias)',
                'rho["eta_w"] = sp.nsimplify({f}) * aug(Bs[-1], bias)',
            ),
        ),
    ),
    (
        "tt-lipschitz-2",
        (
            (
                "genbound/bounds/trauger_tewari.py",
                "(1 + 2 * kappa * B * B * sq)",
                "(1 + 2 * {f} * kappa * B * B * sq)",
            ),
            (
                "genbound/symbolic/trauger_tewari.py",
                "(1 + 2 * kappa * B**2 * sq)",
                "(1 + 2 * sp.nsimplify({f}) * kappa * B**2 * sq)",
            ),
        ),
    ),
    (
        "edelman-rho-C",
        (
            ("genbound/bounds/edelman.py", 'rho["C"] = S_w', 'rho["C"] = {f} * S_w'),
            (
                "genbound/symbolic/trauger_tewari.py",
                '        rho["C"] = S_w\n    rho["w"] = sp.Integer(1)\n    return rho\n\n\n'
                "def edelman_chain",
                '        rho["C"] = sp.nsimplify({f}) * S_w\n    rho["w"] = sp.Integer(1)\n'
                "    return rho\n\n\ndef edelman_chain",
            ),
        ),
    ),
    (
        "edelman-rho-w",
        (
            ("genbound/bounds/edelman.py", 'rho["w"] = 1.0', 'rho["w"] = 1.0 * {f}'),
            (
                "genbound/symbolic/trauger_tewari.py",
                '    rho["w"] = sp.Integer(1)\n    return rho\n\n\ndef edelman_chain',
                '    rho["w"] = sp.nsimplify({f})\n    return rho\n\n\ndef edelman_chain',
            ),
        ),
    ),
)


def targeted_sites() -> list[tuple[str, float, tuple]]:
    """``(key, factor, edits)`` for every entry of :data:`TARGETED` and every factor."""
    return [(f"{name}*{f:g}", f, edits) for name, edits in TARGETED for f in TARGETED_FACTORS]


def run_targeted(key: str, factor: float, edits, *, timeout: float, workdir: Path) -> dict:
    """Copy the package, apply every edit of one targeted mutant, run every claim (as :func:`run_mutant`)."""
    _package_copy(workdir)
    for file, old, new in edits:
        if (ROOT / file).read_text().count(old) != 1:
            raise SystemExit(f"targeted mutant {key}: {old!r} does not occur once in {file}")
        src = (workdir / file).read_text()  # the copy: several edits may touch one file
        (workdir / file).write_text(src.replace(old, new.replace("{f}", repr(factor))))
    modname = edits[0][0][:-3].replace("/", ".")
    status, why, seconds = _claims_verdict(workdir, modname, timeout)
    return {"key": key, "status": status, "why": why, "seconds": seconds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--targets",
        nargs="*",
        default=None,
        help="modules to mutate (default: every module of genbound.claims.NUMERIC_CORE)",
    )
    ap.add_argument(
        "--n", type=int, default=120, help="number of mutants drawn at random (default 120)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant")
    ap.add_argument(
        "--json", type=Path, help="write every outcome here (JSON lines, appended; resumes)"
    )
    ap.add_argument("--list", action="store_true", help="only count the sites per module")
    ap.add_argument(
        "--reverse",
        action="store_true",
        help="run the drawn mutants last to first (a second worker on the same --json file; "
        "each worker skips what the file already holds)",
    )
    ap.add_argument(
        "--targeted",
        action="store_true",
        help="run the targeted set instead (every named constant x 1/4, 1/2, 2, 4, code and sympy together)",
    )
    args = ap.parse_args(argv)
    if args.targeted:
        res = []
        with tempfile.TemporaryDirectory(prefix="gb-tmut-") as tmp:
            done = set()
            if args.json and args.json.exists():
                done = {
                    json.loads(x)["key"] for x in args.json.read_text().splitlines() if x.strip()
                }
            for key, f, edits in targeted_sites():
                if key in done:
                    continue
                r = run_targeted(key, f, edits, timeout=args.timeout, workdir=Path(tmp))
                res.append(r)
                print(f"{r['status']:8s} {key} ({r['seconds']} s) {r['why'][:100]}", flush=True)
                if args.json:
                    with open(args.json, "a") as fh:
                        fh.write(json.dumps(r) + "\n")
        killed = sum(r["status"] == "killed" for r in res)
        print(f"targeted: killed {killed} of {len(res)}")
        return 0

    targets = args.targets if args.targets else default_targets()
    sites = [s for t in targets for s in enumerate_sites(ROOT / t)]
    if args.list:
        from collections import Counter

        for f, k in sorted(Counter(s.file for s in sites).items()):
            print(f"{k:5d}  {f}")
        print(f"{len(sites):5d}  in all")
        return 0
    rng = random.Random(args.seed)
    drawn = rng.sample(sites, min(args.n, len(sites)))
    order = list(reversed(drawn)) if args.reverse else drawn
    equivalent = json.loads(EQUIVALENT_FILE.read_text()) if EQUIVALENT_FILE.exists() else {}
    done = {}
    if args.json and args.json.exists():
        for line in args.json.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["key"]] = r
    results = []
    with tempfile.TemporaryDirectory(prefix="gb-mut-") as tmp:
        for k, s in enumerate(order, 1):
            if args.json and args.json.exists():  # another worker may have run it meanwhile
                for line in args.json.read_text().splitlines():
                    if line.strip():
                        r = json.loads(line)
                        done.setdefault(r["key"], r)
            if s.key in done:
                results.append(done[s.key])
                continue
            r = run_mutant(s, timeout=args.timeout, workdir=Path(tmp))
            results.append(r)
            print(
                f"[{k}/{len(drawn)}] {r['status']:8s} {s.key}  {s.before!r} -> {s.after!r}  "
                f"({r['seconds']} s) {r['why'][:90]}",
                flush=True,
            )
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
    excluded = {r["key"]: equivalent[r["key"]] for r in results if r["key"] in equivalent}
    counted = [r for r in results if r["key"] not in excluded]
    killed = sum(r["status"] == "killed" for r in counted)
    timeouts = sum(r["status"] == "timeout" for r in counted)
    surv = [r for r in counted if r["status"] == "survived"]
    print(
        f"\nmutants: {len(results)} drawn from {len(sites)} sites; excluded {len(excluded)} "
        f"({', '.join(f'{k} {n}' for k, n in sorted(collections.Counter(v['kind'] for v in excluded.values()).items()))}); "
        f"killed {killed}, "
        f"survived {len(surv)}, timed out {timeouts}"
    )
    if counted:
        print(f"score: {killed / len(counted):.1%} killed of {len(counted)} counted")
    for r in surv:
        print(f"  survived: {r['key']}  {r['before']!r} -> {r['after']!r}")
    for k, v in excluded.items():
        print(f"  excluded ({v['kind']}): {k}: {v['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
