"""``genbound claims``: list the executable claims, or check them."""

from __future__ import annotations

import json
from ..errors import ParameterError
from . import all_claims, check
from .._validate import check_int_range


def add_parser(sub) -> None:
    p = sub.add_parser(
        "claims",
        help="list the book's executable claims, or check them",
        description="List every claim (label, source, statement); with --check run "
        "their symbolic and numeric checks.",
    )
    p.add_argument("--check", action="store_true", help="run the checks")
    p.add_argument(
        "--mutants",
        action="store_true",
        help="with --check: also run every claim's mutants (deliberately wrong versions of the "
        "statement); each must make the check fail",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per claim, one per line")
    p.add_argument("--select", metavar="TEXT", help="only labels containing TEXT")
    p.add_argument("--only", metavar="LABEL,...", help="only these labels (comma-separated, exact)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the checks (default 0)")
    p.set_defaults(func=run)


def run(args) -> int:
    """Exit code 0 when every chosen claim passed (and, with ``--mutants``, every claim has a mutant and
    every mutant was killed); 1 otherwise."""
    from dataclasses import replace

    check_int_range(args.seed, "--seed", 0, 2**32 - 1, why="numpy and torch seeds are 32-bit")
    if args.mutants and not args.check:
        raise ParameterError("--mutants needs --check")
    chosen = [c for c in all_claims() if not args.select or args.select in c.label]
    if args.select and not chosen:
        raise ParameterError(f"no claim label contains {args.select!r}")
    only = getattr(args, "only", None)
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        known = {c.label for c in chosen}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise ParameterError(f"--only: no claim with label {', '.join(map(repr, missing))}")
        chosen = [c for c in chosen if c.label in set(wanted)]
    failed = 0
    for c in chosen:
        if args.check:
            r = check(c.label, args.seed)
            if args.mutants:
                r = replace(r, mutants=c.check_mutants(args.seed))
                failed += (not r.mutants) or r.mutants_killed < len(r.mutants)
            failed += not r.passed
            if args.json:
                print(
                    json.dumps({**r.to_dict(), "statement": c.statement, "chapter": c.chapter}),
                    flush=True,
                )
            else:
                status = "PASS" if r.passed else "FAIL"
                line = f"{status}  {c.label:32s} {r.summary()} ({r.seconds:.2f} s)"
                if args.mutants:
                    survived = [m.name for m in r.mutants if not m.killed]
                    line += f"; mutants killed {r.mutants_killed}/{len(r.mutants)}"
                    line += f" (survived: {', '.join(survived)})" if survived else ""
                print(line, flush=True)
        elif args.json:
            print(json.dumps(dict(c.describe())))
        else:
            print(f"{c.label:32s} [{c.provenance}] {c.statement}")
    return 1 if failed else 0
