"""``genbound claims``: list the executable claims, or check them."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("claims", help="list the book's executable claims, or check them",
                       description="List every claim (label, source, statement); with --check run "
                                   "their symbolic and numeric checks.")
    p.add_argument("--check", action="store_true", help="run the checks")
    p.add_argument("--json", action="store_true", help="one JSON object per claim, one per line")
    p.add_argument("--select", metavar="TEXT", help="only labels containing TEXT")
    p.add_argument("--seed", type=int, default=0, help="random seed of the checks (default 0)")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import all_claims, check

    chosen = [c for c in all_claims() if not args.select or args.select in c.label]
    failed = 0
    for c in chosen:
        if args.check:
            r = check(c.label, args.seed)
            failed += not r.passed
            if args.json:
                print(json.dumps({**r.to_dict(), "statement": c.statement, "chapter": c.chapter}))
            else:
                status = "PASS" if r.passed else "FAIL"
                print(f"{status}  {c.label:32s} {r.summary()} ({r.seconds:.2f} s)")
        elif args.json:
            print(json.dumps(dict(c.describe())))
        else:
            print(f"{c.label:32s} [{c.source}] {c.statement}")
    return 1 if failed else 0
