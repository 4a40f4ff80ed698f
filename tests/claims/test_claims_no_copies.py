"""No claims module holds a copy of a production function (``tests/claims/test_claims_no_copies.py``).

A claim checks the function that produces the book's numbers; a copy of that function inside a claims module
would be checked instead, and the published number would go unchecked (DESIGN.md, "One code path per published
number"). The rule, concrete and checkable:

* the *production functions* are the functions, methods and properties named in some ``Claim.covers`` that live
  outside :mod:`genbound.claims`;
* a function defined in a module of ``genbound/claims/`` is a **copy** when, with its docstring removed and every
  local identifier renamed to one placeholder (so that renaming variables does not hide a copy),
  (a) its body equals a production function's body, or
  (b) one of its ``return`` expressions with at least ``MIN_BINOPS`` arithmetic operations equals, identifier for
  identifier, a ``return`` expression of a production function (the formula re-typed inside a longer helper).

An *independent* evaluation (from the sympy derivation, by another quadrature, with the constants read from
:mod:`genbound.symbolic`) is not a copy and passes: it differs in its identifiers or its structure.

Functions of ``genbound.claims`` that are themselves named in ``covers`` (a right side stated in the chapter's
claim, such as ``edelman_chain_bound``) are held to the same rule against the production functions.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

from genbound import claims

ROOT = Path(__file__).resolve().parents[2]
#: a return expression with fewer arithmetic operations (``return x``, ``return a * b``) is too common to be a copy
MIN_BINOPS = 3


class _Rename(ast.NodeTransformer):
    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)

    def visit_arg(self, node):
        node.arg = "_"
        node.annotation = None
        return node


def _norm(node) -> str:
    return ast.dump(_Rename().visit(ast.parse(ast.unparse(node))), annotate_fields=False)


def _body(fn: ast.FunctionDef) -> list:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _returns(fn: ast.FunctionDef):
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            if sum(isinstance(n, ast.BinOp) for n in ast.walk(node.value)) >= MIN_BINOPS:
                yield ast.dump(node.value, annotate_fields=False)


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p, None)
            if obj is None:
                return None
        return obj
    return None


def _production_functions():
    out = {}
    for c in claims.all_claims():
        for name in c.covers:
            if name.startswith("genbound.claims."):
                continue
            obj = _resolve(name)
            obj = obj.fget if isinstance(obj, property) else obj
            if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
                continue
            try:
                src = textwrap.dedent(inspect.getsource(obj))
            except (OSError, TypeError):
                continue
            tree = ast.parse(src).body[0]
            if isinstance(tree, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[name] = tree
    return out


def _claims_functions():
    for path in sorted((ROOT / "genbound" / "claims").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.name, node


def test_rule_sees_the_production_functions():
    prod = _production_functions()
    assert "genbound.bounds.trauger_tewari.sensitivities_raw" in prod
    assert "genbound.bounds.edelman.edelman_sensitivities_raw" in prod
    assert len(prod) > 40


def test_the_rule_catches_a_renamed_copy():
    """A copy of ``sensitivities_raw`` with its variables renamed is caught by (a), and a helper that returns
    Dudley's objective re-typed is caught by (b)."""
    prod = _production_functions()
    src = textwrap.dedent(
        inspect.getsource(_resolve("genbound.bounds.trauger_tewari.sensitivities_raw"))
    )
    copy = ast.parse(src.replace("rho", "coef").replace("Bs", "radii")).body[0]
    bodies = {_norm(ast.Module(body=_body(f), type_ignores=[])) for f in prod.values()}
    assert _norm(ast.Module(body=_body(copy), type_ignores=[])) in bodies
    rets = {r for f in prod.values() for r in _returns(f)}
    helper = ast.parse(
        "def helper(alpha, m, integral):\n    z = 1\n    return DUDLEY_ALPHA_COEF * alpha + "
        "DUDLEY_INTEGRAL_COEF / math.sqrt(m) * integral\n"
    ).body[0]
    assert set(_returns(helper)) & rets


def test_no_claims_module_defines_a_copy():
    prod = _production_functions()
    bodies = {_norm(ast.Module(body=_body(f), type_ignores=[])): n for n, f in prod.items()}
    rets = {r: n for n, f in prod.items() for r in _returns(f)}
    found = []
    for fname, fn in _claims_functions():
        b = _body(fn)
        if len(b) > 0 and not (len(b) == 1 and isinstance(b[0], ast.Pass)):
            key = _norm(ast.Module(body=b, type_ignores=[]))
            if key in bodies:
                found.append(f"{fname}:{fn.name} has the body of {bodies[key]}")
        for r in _returns(fn):
            if r in rets:
                found.append(f"{fname}:{fn.name} returns the formula of {rets[r]}")
    assert not found, "copies of production functions in genbound/claims/:\n" + "\n".join(found)
