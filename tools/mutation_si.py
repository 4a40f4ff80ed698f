"""Random source-level mutants of the Part III numeric core, judged by the claims alone.

``python tools/mutation_si.py [--n 100] [--seed 0] [--out FILE]`` draws mutants uniformly from every
mutation site of ``genbound/spectra.py``, ``genbound/norms.py``, ``genbound/schatten_entropy.py`` and
``genbound/bounds/sakai_imaizumi.py``: an arithmetic operator swapped (+ -, * /), a nonzero float literal doubled (``0.0`` doubled is the same program),
a ``sqrt``/``log``/``log1p`` call dropped (replaced by its argument), ``min``/``max`` swapped (``minimum``/
``maximum``, ``.min()``/``.max()``, ``min()``/``max()``, ``clamp(min=)``/``clamp(max=)``). For each it
writes the mutated file, runs the Part III claims (``genbound.claims`` checks, no doctests, no tests) in a
fresh process, stops at the first failing claim (killed) and restores the file. A subset of the claims can
only kill fewer mutants than ``genbound claims --check``, so the score is a lower bound for it.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ["genbound/spectra.py", "genbound/norms.py", "genbound/schatten_entropy.py",
         "genbound/bounds/sakai_imaizumi.py"]
SWAP_OP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
SWAP_NAME = {"minimum": "maximum", "maximum": "minimum", "min": "max", "max": "min"}
DROP = {"sqrt", "log", "log1p"}

RUNNER = r"""
import sys
from genbound import claims
first = ["prop-computed-spectra", "prop-computed-norms", "prop-sa-lemma-values", "prop-sa-proxy-value",
         "prop-sa-capacity"]
labels = [c.label for c in claims.all_claims() if c.chapter.startswith("book/part3/")]
for lab in first + [l for l in labels if l not in first]:
    r = claims.get(lab).check(0, stop_on_fail=True)
    if not r.passed:
        print("KILLED-BY", lab)
        sys.exit(1)
print("SURVIVED")
"""


def sites(tree):
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in SWAP_OP:
            out.append(("op", node))
        elif isinstance(node, ast.Constant) and type(node.value) is float and node.value != 0.0:  # 0 * 2 = 0
            out.append(("float", node))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else None)
            if name in DROP and len(node.args) == 1 and not node.keywords:
                out.append(("drop", node))
            if name in SWAP_NAME:
                out.append(("minmax", node))
            for kw in node.keywords:
                if name == "clamp" and kw.arg in ("min", "max"):
                    out.append(("clamp", kw))
    return out


def _docstring_ids(tree):
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body:
            b = node.body[0]
            if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant):
                ids.add(id(b.value))
    return ids


def mutate(src: str, k: int):
    tree = ast.parse(src)
    s = sites(tree)
    kind, node = s[k]
    if kind == "op":
        node.op = SWAP_OP[type(node.op)]()
        desc = f"operator -> {type(node.op).__name__}"
    elif kind == "float":
        desc = f"float {node.value!r} doubled"
        node.value = node.value * 2
    elif kind == "drop":
        parent = next(p for p in ast.walk(tree) for c in ast.iter_child_nodes(p) if c is node)
        for field, val in ast.iter_fields(parent):
            if val is node:
                setattr(parent, field, node.args[0])
            elif isinstance(val, list):
                for i, v in enumerate(val):
                    if v is node:
                        val[i] = node.args[0]
        desc = "call dropped"
    elif kind == "minmax":
        f = node.func
        if isinstance(f, ast.Attribute):
            f.attr = SWAP_NAME[f.attr]
        else:
            f.id = SWAP_NAME[f.id]
        desc = "min/max swapped"
    else:
        node.arg = "max" if node.arg == "min" else "min"
        desc = "clamp bound swapped"
    return ast.unparse(tree), f"{kind} line {getattr(node, 'lineno', '?')}: {desc}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args(argv)
    all_sites = []
    for f in FILES:
        tree = ast.parse((ROOT / f).read_text())
        doc = _docstring_ids(tree)
        for k, (kind, node) in enumerate(sites(tree)):
            if id(node) not in doc:
                all_sites.append((f, k))
    rng = random.Random(a.seed)
    chosen = rng.sample(all_sites, min(a.n, len(all_sites)))
    results = []
    for i, (f, k) in enumerate(chosen):
        path = ROOT / f
        orig = path.read_text()
        try:
            new, desc = mutate(orig, k)
            path.write_text(new)
            t0 = time.time()
            try:
                r = subprocess.run([sys.executable, "-W", "ignore", "-c", RUNNER], cwd=ROOT, capture_output=True,
                                   text=True, timeout=a.timeout, env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                                                                        "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
                out = (r.stdout + r.stderr).strip().splitlines()
                status = "survived" if r.returncode == 0 else "killed"
                why = out[-1][:160] if out else ""
            except subprocess.TimeoutExpired:
                status, why = "killed", "timeout (the claims run does not finish)"
        finally:
            path.write_text(orig)
        results.append({"file": f, "site": k, "mutant": desc, "status": status, "why": why,
                        "seconds": round(time.time() - t0, 1)})
        print(json.dumps(results[-1]), flush=True)
    killed = sum(r["status"] == "killed" for r in results)
    print(f"killed {killed} of {len(results)}", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
