"""Copy the executed notebooks of the last book build to ``notebooks/`` (``make notebooks``).

The notebooks are the ones the site serves and every page links: ``_build/html/_notebooks/book/...``,
executed by MyST-NB during ``make book``, with their outputs. They land as ``notebooks/<path under
book/>.ipynb``, e.g. ``notebooks/part1/rademacher.ipynb``.

``--fresh`` only checks: exit status 0 if every chapter of ``_toc.yml`` has an executed notebook newer
than its source, 1 otherwise (the Makefile then runs ``make book`` first).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files(node) -> list[str]:
    """Every ``file:`` entry of ``_toc.yml`` (and its ``root``), in order."""
    out = []
    if isinstance(node, dict):
        for key in ("root", "file"):
            if key in node:
                out.append(node[key])
        for v in node.values():
            if isinstance(v, (dict, list)):
                out += toc_files(v)
    elif isinstance(node, list):
        for v in node:
            out += toc_files(v)
    return out


def executed_chapters(root: Path = ROOT) -> list[str]:
    """Docnames (``book/part1/rademacher``) of the toc's pages that execute (a jupytext header)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [
        f
        for f in dict.fromkeys(toc_files(toc))
        if is_notebook((root / f"{f}.md").read_text(encoding="utf-8"))
    ]


def is_notebook(text: str) -> bool:
    r"""A MyST notebook: front matter with a ``kernelspec`` (jupytext header).

    >>> is_notebook("---\nkernelspec: {name: python3}\n---\n# A")
    True
    >>> is_notebook("# Intro\n\nWe use jupytext.")
    False
    """
    if not text.startswith("---\n"):
        return False
    end = text.find("\n---", 4)
    return end > 0 and "kernelspec" in text[4:end]


def stale(site: Path, root: Path = ROOT) -> list[str]:
    """Chapters whose executed notebook is missing from ``site`` or older than their source."""
    out = []
    for doc in executed_chapters(root):
        nb = site / "_notebooks" / f"{doc}.ipynb"
        if not nb.is_file() or nb.stat().st_mtime < (root / f"{doc}.md").stat().st_mtime:
            out.append(doc)
    return out


def copy_notebooks(site: Path, dest: Path, root: Path = ROOT) -> list[Path]:
    """Copy each chapter's executed notebook to ``dest``; refuse one with a code cell that was not executed."""
    written = []
    for doc in executed_chapters(root):
        src = site / "_notebooks" / f"{doc}.ipynb"
        nb = json.loads(src.read_text(encoding="utf-8"))
        unrun = [
            i
            for i, c in enumerate(c for c in nb["cells"] if c["cell_type"] == "code")
            if c.get("execution_count") is None
        ]
        if unrun:  # executed = every code cell has an execution count (a cell may print nothing)
            raise SystemExit(
                f"notebooks: {src}: code cells {unrun[:5]} were not executed (no execution count)"
            )
        out = dest / f"{Path(doc).relative_to('book')}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
        written.append(out)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--dest", type=Path, default=ROOT / "notebooks")
    ap.add_argument("--fresh", action="store_true", help="only check that the build is up to date")
    args = ap.parse_args(argv)
    old = stale(args.site)
    if args.fresh:
        if old:
            print(
                f"notebooks: {len(old)} chapter(s) not built or changed since the build "
                f"(e.g. {old[0]}); building the book first"
            )
        return 1 if old else 0
    if old:
        print(
            f"notebooks: not built or out of date: {', '.join(old)}; run `make book`",
            file=sys.stderr,
        )
        return 1
    written = copy_notebooks(args.site, args.dest)
    where = os.path.relpath(args.dest)
    print(
        f"notebooks: {len(written)} executed notebooks in {where}/ "
        f"(open them with: .venv/bin/jupyter lab {where}/)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
