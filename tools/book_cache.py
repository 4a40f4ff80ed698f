"""Keep ``make book``'s incremental build honest (``make book`` calls this before ``jupyter-book build``).

``make book`` builds incrementally: Sphinx re-reads only the chapters whose source changed, and MyST-NB
(``execute_notebooks: cache`` in ``_config.yml``) re-executes only the notebooks whose code changed,
taking the others from the jupyter-cache in ``_build/.jupyter_cache``. Neither notices a change in what a
chapter *imports or reads*: the ``genbound`` package, the requirements, the Sphinx extension in
``tools/``, the config. So this script hashes those inputs (:data:`INPUTS`) and, when the hash differs
from the one stored with the last build (``_build/.genbound-inputs``), removes ``_build`` so that the
build starts from nothing, as ``make book-fresh`` does, and records the new hash (the build that follows
uses these inputs; a failed build keeps its cached notebooks, which were executed with them). Chapter text
and code are not in the hash: those are what the caches track.

``python tools/book_cache.py [--build _build]`` prints what it did; exit status 0.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Inputs of every chapter that the notebook cache does not see (files, or folders taken recursively).
INPUTS = (
    "genbound",
    "tools/genbound_sphinx.py",
    "requirements.txt",
    "requirements-nodeps.txt",
    "pyproject.toml",
    "_config.yml",
)
#: Never hashed: caches and build products.
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", "_build"}
STAMP = ".genbound-inputs"


def input_files(root: Path = ROOT) -> list[Path]:
    """Every file of :data:`INPUTS` under ``root``, sorted, without caches."""
    out = []
    for name in INPUTS:
        p = root / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += [
                f
                for f in p.rglob("*")
                if f.is_file()
                and not (SKIP_PARTS & set(f.relative_to(root).parts))
                and f.suffix not in (".pyc", ".pyo")
            ]
    return sorted(out)


def inputs_hash(root: Path = ROOT) -> str:
    """sha256 over the relative paths and contents of :func:`input_files`."""
    h = hashlib.sha256()
    for f in input_files(root):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT), help="the repository (default: this script's)")
    ap.add_argument("--build", default=None, help="the build folder (default ROOT/_build)")
    a = ap.parse_args(argv)
    root = Path(a.root)
    build = Path(a.build) if a.build else root / "_build"
    now = inputs_hash(root)
    stamp = build / STAMP
    before = stamp.read_text().strip() if stamp.is_file() else None
    if not build.exists():
        print("book: no previous build; building from nothing")
    elif before != now:
        why = (
            "no record of the inputs of the last build"
            if before is None
            else "genbound/, tools/, the requirements or the book config changed since the last build"
        )
        print(f"book: {why}; removing {build} and building from nothing")
        shutil.rmtree(build)
    else:
        print(
            "book: incremental (only chapters whose source changed are re-read; only notebooks whose code "
            "changed are re-executed)"
        )
    build.mkdir(parents=True, exist_ok=True)
    stamp.write_text(now + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
