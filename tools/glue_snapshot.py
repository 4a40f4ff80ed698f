"""Every value the book glues, read from the executed notebooks of a build, and a comparison of two builds.

A restructure of the package must leave every number the book prints unchanged. ``make book`` leaves the
executed notebooks in ``_build/jupyter_execute``, each with its glued values beside it
(``NAME.glue.json``, MyST-NB's record of every ``glue`` call, shown or not) and the shown ones also among
the notebook's outputs (metadata ``scrapbook.name``); this script reads both and writes
``name -> {mime type: text}`` per chapter as one JSON file. Figures are
kept as the SHA-256 of their image bytes (a figure may differ by its renderer's metadata; the comparison
reports them apart from the text values).

    python tools/glue_snapshot.py snapshot _build glue_before.json
    python tools/glue_snapshot.py compare glue_before.json glue_after.json

``compare`` exits 1 when any text value differs, is missing or is new, and prints each difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys

IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg")


def glued_values(notebook: dict) -> dict[str, dict[str, str]]:
    """``name -> {mime: text or image hash}`` for every glued output of one executed notebook."""
    values: dict[str, dict[str, str]] = {}
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []) or []:
            name = (out.get("metadata") or {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            entry = {}
            for mime, data in (out.get("data") or {}).items():
                text = "".join(data) if isinstance(data, list) else str(data)
                if mime in IMAGE_TYPES:
                    entry[mime] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
                else:
                    entry[mime] = text
            values[name] = entry
    return values


def snapshot(build: pathlib.Path) -> dict[str, dict]:
    """Every executed notebook under ``build/jupyter_execute`` -> its glued values."""
    root = build / "jupyter_execute"
    found = sorted(root.rglob("*.ipynb"))
    if not found:
        sys.exit(f"glue_snapshot: no executed notebooks under {root}")
    out = {}
    for p in found:
        values = glued_values(json.loads(p.read_text()))
        record = p.with_suffix(".glue.json")
        if record.exists():
            outputs = list(json.loads(record.read_text()).values())
            values.update(glued_values({"cells": [{"outputs": outputs}]}))
        out[str(p.relative_to(root))] = values
    return out


def compare(before: dict, after: dict) -> list[str]:
    """The differences between two snapshots, one line each (figures reported as such)."""
    lines = []
    for chapter in sorted(set(before) | set(after)):
        a, b = before.get(chapter), after.get(chapter)
        if a is None or b is None:
            lines.append(f"{chapter}: only in {'after' if a is None else 'before'}")
            continue
        for name in sorted(set(a) | set(b)):
            va, vb = a.get(name), b.get(name)
            if va == vb:
                continue
            if va is None or vb is None:
                lines.append(f"{chapter}: {name} only in {'after' if va is None else 'before'}")
                continue
            for mime in sorted(set(va) | set(vb)):
                if va.get(mime) != vb.get(mime):
                    kind = "figure" if mime in IMAGE_TYPES else "value"
                    lines.append(
                        f"{chapter}: {name} [{mime}] {kind} differs: "
                        f"{str(va.get(mime))[:120]!r} -> {str(vb.get(mime))[:120]!r}"
                    )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("build", type=pathlib.Path)
    s.add_argument("out", type=pathlib.Path)
    c = sub.add_parser("compare")
    c.add_argument("before", type=pathlib.Path)
    c.add_argument("after", type=pathlib.Path)
    args = ap.parse_args(argv)
    if args.cmd == "snapshot":
        snap = snapshot(args.build)
        args.out.write_text(json.dumps(snap, indent=1, sort_keys=True))
        n = sum(len(v) for v in snap.values())
        print(f"glue_snapshot: {n} glued values in {len(snap)} chapters -> {args.out}")
        return 0
    diffs = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    for line in diffs:
        print(line)
    values = [d for d in diffs if "figure differs" not in d]
    print(f"glue_snapshot: {len(diffs)} differences ({len(values)} not figures)")
    return 1 if values else 0


if __name__ == "__main__":
    raise SystemExit(main())
