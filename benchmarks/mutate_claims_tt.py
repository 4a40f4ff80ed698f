"""Random source-level mutants of genbound's numeric core, judged by `genbound claims --check` alone."""
import ast, copy, json, os, random, shutil, subprocess, sys, time

SRC = sys.argv[1]                      # worktree
N = int(sys.argv[2]); SEED = int(sys.argv[3]); SKIP = int(os.environ.get('SKIP', '0'))
FILES = sys.argv[4].split(",")
OUT = sys.argv[5]
SKIP_CALLS = {"check_real", "check_positive_int", "ParameterError", "ShapeError", "ArchitectureError", "as_tensor",
              "_check_dudley_args", "_check_common", "warn", "simplefilter"}

class Collect(ast.NodeVisitor):
    def __init__(self):
        self.sites = []; self.stack = []
    def generic_visit(self, node):
        self.stack.append(node); super().generic_visit(node); self.stack.pop()
    def skip(self):
        for n in self.stack:
            if isinstance(n, ast.Raise): return True
            if isinstance(n, ast.Call):
                f = n.func; name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name in SKIP_CALLS: return True
            if isinstance(n, ast.JoinedStr): return True
        return not any(isinstance(n, (ast.FunctionDef,)) for n in self.stack) and not any(isinstance(n, ast.Assign) for n in self.stack)
    def visit_BinOp(self, node):
        if not self.skip() and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
            self.sites.append(("binop", node.lineno, node.col_offset, node.end_col_offset))
        self.generic_visit(node)
    def visit_Constant(self, node):
        if not self.skip() and isinstance(node.value, float) and node.value != 0.0:
            self.sites.append(("float", node.lineno, node.col_offset, node.end_col_offset))
        self.generic_visit(node)
    def visit_Call(self, node):
        f = node.func; name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
        if not self.skip():
            if name in ("sqrt", "log") and len(node.args) == 1:
                self.sites.append(("drop", node.lineno, node.col_offset, node.end_col_offset))
            if name in ("min", "max"):
                self.sites.append(("minmax", node.lineno, node.col_offset, node.end_col_offset))
        self.generic_visit(node)

SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}

class Apply(ast.NodeTransformer):
    def __init__(self, site): self.site = site; self.done = None
    def _is(self, node, kind): return (kind, getattr(node, "lineno", -1), getattr(node, "col_offset", -1), getattr(node, "end_col_offset", -1)) == self.site
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self._is(node, "binop"):
            old = type(node.op).__name__; node.op = SWAP[type(node.op)](); self.done = f"{old}->{type(node.op).__name__}"
        return node
    def visit_Constant(self, node):
        if self._is(node, "float"):
            self.done = f"{node.value}->{2*node.value}"; return ast.copy_location(ast.Constant(2 * node.value), node)
        return node
    def visit_Call(self, node):
        self.generic_visit(node)
        if self._is(node, "drop"):
            self.done = f"drop {ast.unparse(node.func)}"; return node.args[0]
        if self._is(node, "minmax"):
            f = node.func
            if isinstance(f, ast.Name): f.id = "max" if f.id == "min" else "min"
            else: f.attr = "max" if f.attr == "min" else "min"
            self.done = "min<->max"
        return node

rng = random.Random(SEED)
sites = []
for f in FILES:
    tree = ast.parse(open(os.path.join(SRC, f)).read())
    c = Collect(); c.visit(tree)
    sites += [(f, s) for s in c.sites]
rng.shuffle(sites)
chosen = sites[SKIP:N]
order_code = r'''
import sys
from genbound import claims
cl = claims.all_claims()
first = [c for c in cl if c.chapter.startswith("book/part2")] + [c for c in cl if c.chapter.startswith("book/part1")]
rest = [c for c in cl if c not in first]
for c in first + rest:
    try:
        r = c.check(0)
    except Exception as e:
        print("KILLED-RAISE", c.label, type(e).__name__); sys.exit(1)
    if not r.passed:
        print("KILLED", c.label, r.worst_ratio); sys.exit(1)
print("SURVIVED"); sys.exit(0)
'''
results = []
for i, (f, site) in enumerate(chosen):
    work = f"/tmp/mut/w{SEED}"
    if os.path.exists(work): shutil.rmtree(work)
    shutil.copytree(os.path.join(SRC, "genbound"), os.path.join(work, "genbound"))
    path = os.path.join(work, f)
    tree = ast.parse(open(path).read())
    a = Apply(site); tree = a.visit(tree); ast.fix_missing_locations(tree)
    open(path, "w").write(ast.unparse(tree))
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", order_code], cwd=work, env={**os.environ, "PYTHONPATH": work,
                       "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=900)
    last = (p.stdout.strip().splitlines() or [p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "?"])[-1]
    killed = p.returncode != 0
    res = dict(file=f, line=site[1], kind=site[0], what=a.done, killed=killed, by=last, seconds=round(time.time() - t0, 1))
    results.append(res)
    print(json.dumps(res), flush=True)
    with open(OUT, "a") as fh: fh.write(json.dumps(res) + "\n")
