"""``genbound experiment sparse-majority``: train the authors' transformer for every sequence length and
seed, or verify saved rows (:mod:`genbound.experiments.sparse_majority`).

``genbound experiment sparse-majority --seq-lens 16,32,64 --seeds 2 [--device auto] [--json]`` trains
one model per sequence length and seed and prints one record per run: a table, or with ``--json`` a JSON
array of objects with at least the keys of :data:`~genbound.experiments.sparse_majority.RESULT_KEYS`.
``--csv PATH`` writes a results file (:mod:`genbound.experiments.runtime.results`): the full configuration in its
header, every stack of runs appended whole as soon as it finishes; the same command resumes it, and a
different configuration is refused (a partial sweep stays usable), and so is a second process writing
the same file. Ctrl-C ends with one line saying what was saved and how to resume (exit code 130).

One concept: the sparse-majority subcommand (its options, the run and the verification of saved rows).
"""

from __future__ import annotations

import json

from ...errors import Interrupted, ParameterError
from ...jsonsafe import json_tree
from ..runtime.cli import MAX_SEED, MAX_TOKENS, check_ranges, parse_int_list, saved_note, warn
from ..runtime.outputs import check_apart, standard_output
from . import SparseMajorityConfig
from . import (
    parse_row_keys,
    pick_rows,
    read_sweep,
    reproduction_case,
    verify_rows,
)
from ...device import resolve_device
from . import (
    RESULT_KEYS,
    SAVED_SWEEP,
    _check_task,
    open_sweep,
    run_sweep,
)

__all__ = ["add_sparse_majority"]


def add_sparse_majority(psub) -> None:
    """Register ``experiment sparse-majority`` (Part II)."""

    dflt = SparseMajorityConfig()
    sm = psub.add_parser(
        "sparse-majority",
        help="the sparse-majority experiment (Trauger & Tewari): gap, norms, bounds vs T",
        description="Train the authors' one-layer, two-head transformer on sparse majority for every "
        "sequence length and seed; report accuracies, losses, gaps, summed l1 norms, the "
        "Trauger-Tewari and Edelman-type bounds, epochs and seconds.",
    )
    sm.add_argument(
        "--seq-lens", default="16,32,64", help="comma-separated sequence lengths T (each >= s)"
    )
    sm.add_argument("--seeds", type=int, default=2, help="number of seeds per T (seeds 0..n-1)")
    sm.add_argument("--first-seed", type=int, default=0, help="first seed (seeds first..first+n-1)")
    sm.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    sm.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    sm.add_argument(
        "--csv",
        default=None,
        help="a results file: created with the full configuration in "
        "its header, every stack of runs appended whole as it finishes; rerun with the same "
        "file to resume (finished (seq_len, seed) rows are skipped; a different configuration "
        "is refused, naming the fields)",
    )
    sm.add_argument(
        "--protocol",
        default=dflt.protocol,
        help="'adam' (default: full-batch Adam with warm-up and cosine decay, stops at the "
        "first step that fits the training set; fits on a CPU) or 'original' (the "
        "authors' SGD schedule; use --max-epochs up to 200000 on a GPU)",
    )
    sm.add_argument(
        "--steps", type=int, default=dflt.steps, help=f"adam: step budget (default {dflt.steps})"
    )
    sm.add_argument(
        "--adam-lr",
        type=float,
        default=dflt.adam_lr,
        help=f"adam: peak learning rate (default {dflt.adam_lr})",
    )
    sm.add_argument(
        "--warmup",
        type=int,
        default=dflt.warmup,
        help=f"adam: linear warm-up steps (default {dflt.warmup})",
    )
    sm.add_argument(
        "--max-epochs",
        type=int,
        default=dflt.max_epochs,
        help=f"original: epoch cap (default {dflt.max_epochs})",
    )
    sm.add_argument(
        "--eval-every",
        type=int,
        default=None,
        help="steps (adam, default 250) or epochs "
        "(original, default 10) between validation evaluations",
    )
    sm.add_argument(
        "--track-test-selection",
        action="store_true",
        help="original: also report the checkpoint of lowest test loss (the original's choice)",
    )
    sm.add_argument(
        "--lr",
        type=float,
        default=dflt.lr,
        help=f"original: initial SGD learning rate (default {dflt.lr})",
    )
    sm.add_argument(
        "--lr-decay",
        type=float,
        default=dflt.lr_decay,
        help=f"per-epoch factor of the learning rate (default {dflt.lr_decay}; 1 = constant)",
    )
    sm.add_argument(
        "--lr-floor",
        type=float,
        default=dflt.lr_floor,
        help=f"lower limit of the learning rate (default {dflt.lr_floor})",
    )
    sm.add_argument(
        "--no-m-star",
        action="store_true",
        help="skip the sample size m* at which each bound would reach 0.5 (saves ~1 s per run)",
    )
    sm.add_argument("--n-train", type=int, default=dflt.n_train)
    sm.add_argument("--n-val", type=int, default=dflt.n_val)
    sm.add_argument("--n-test", type=int, default=dflt.n_test)
    sm.add_argument("--s", type=int, default=dflt.s, help="number of relevant positions (odd)")
    sm.add_argument("--dtype", default=dflt.dtype, help="training precision (bounds are float64)")
    sm.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: the steps are small, and more threads are much "
        "slower on a shared machine)",
    )
    sm.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not a terminal"
    )
    sm.add_argument(
        "--verify-saved",
        type=int,
        default=None,
        metavar="K",
        help="rerun K rows of the saved sweep (or --saved-csv), drawn at random, with the recorded "
        "configuration, and compare every column but the wall time; say first whether this is the recorded "
        "machine kind (exact agreement expected; exit 1 if a row differs) or another (a rerun is "
        "another draw: differences reported with their size, exit 0), naming every differing "
        "field (CPU, library, threads, commit) with both values",
    )
    sm.add_argument(
        "--verify-saved-rows",
        default=None,
        metavar="T:SEED,...",
        help="rerun the given saved rows, e.g. 64:3,16:1, and compare them",
    )
    sm.add_argument(
        "--verify-seed", type=int, default=0, help="seed of the random choice of --verify-saved"
    )
    sm.add_argument(
        "--saved-csv", default=None, help="the results file to verify (default: the saved sweep)"
    )
    sm.set_defaults(func=_run_sparse_majority)


def _verify_sparse_majority(args) -> int:
    """``--verify-saved`` / ``--verify-saved-rows``: every key is checked before anything is trained."""
    import torch

    if args.verify_saved is not None and args.verify_saved_rows is not None:
        raise ParameterError("give --verify-saved or --verify-saved-rows, not both")
    check_ranges({"--verify-seed": args.verify_seed})  # --verify-saved: pick_rows names the rows
    # a verification writes only to standard output: never into the sweep it reads (>> SWEEP)
    check_apart(
        {"standard output": standard_output()},
        {"the sweep it verifies (--saved-csv)": [args.saved_csv or SAVED_SWEEP]},
    )
    table = read_sweep(args.saved_csv, report=warn)
    if args.verify_saved is not None:
        keys = pick_rows(table, args.verify_saved, seed=args.verify_seed)
    else:
        keys = parse_row_keys(args.verify_saved_rows)
        missing = [k for k in keys if k not in table.keys]
        if missing:
            raise ParameterError(
                f"{table.path}: no saved row for "
                + ", ".join(f"T={t} seed={s}" for t, s in missing)
            )
    torch.set_num_threads(1)
    case = reproduction_case(table, device="cpu")
    if not args.json:
        print(f"{table.path}: {case.expectation()}", flush=True)
        for line in case.lines():
            print(f"  {line}", flush=True)

    def show(chk):
        if args.json:
            return
        sizes = chk.sizes()
        state = (
            "exact"
            if chk.exact
            else "DIFFERS: "
            + ", ".join(
                f"{c} saved {a!r} rerun {b!r} ({sizes[c]})"
                if c != "norms_json"
                else f"{c} ({sizes[c]})"
                for c, (a, b) in chk.differences.items()
            )
        )
        print(
            f"T={chk.key[0]} seed={chk.key[1]}: {len(chk.compared)} columns, {state} "
            f"({chk.seconds:.1f} s; saved run {chk.saved_seconds:.1f} s)",
            flush=True,
        )

    try:
        checks = verify_rows(table, keys, device="cpu", on_check=show)
    except KeyboardInterrupt:
        raise Interrupted(
            "a verification writes nothing; the rows checked so far are printed above"
        ) from None
    n_exact = sum(c.exact for c in checks)
    if args.json:
        print(
            json.dumps(
                {
                    "csv": str(table.path),
                    "case": case.to_dict(),
                    "rows": [c.to_dict() for c in checks],
                    "n_exact": n_exact,
                },
                indent=1,
            )
        )
    else:
        tail = (
            ""
            if case.same_kind or n_exact == len(checks)
            else "; on another machine kind a difference is another draw, not a failure (sizes above)"
        )
        print(f"{n_exact} of {len(checks)} rows reproduced exactly{tail}", flush=True)
    return 0 if n_exact == len(checks) or not case.same_kind else 1


def _run_sparse_majority(args) -> int:
    import torch

    if args.verify_saved is not None or args.verify_saved_rows is not None:
        return _verify_sparse_majority(args)

    seq_lens = parse_int_list(args.seq_lens, "--seq-lens")
    check_ranges(
        {
            "--seq-lens": seq_lens,
            "--seeds": args.seeds,
            "--first-seed": args.first_seed,
            "--threads": args.threads,
            "--n-train": args.n_train,
            "--n-val": args.n_val,
            "--n-test": args.n_test,
            "--s": args.s,
            "--steps": args.steps,
            "--warmup": args.warmup,
            "--max-epochs": args.max_epochs,
            "--eval-every": args.eval_every,
        }
    )
    if args.n_train * max(seq_lens) > MAX_TOKENS:
        raise ParameterError(
            f"--n-train {args.n_train} with sequence length {max(seq_lens)} is "
            f"{args.n_train * max(seq_lens)} training tokens, more than MAX_TOKENS = {MAX_TOKENS} "
            f"(a full batch must fit in memory)"
        )
    if args.first_seed + args.seeds - 1 > MAX_SEED:
        raise ParameterError(
            f"--first-seed {args.first_seed} with --seeds {args.seeds} passes the largest seed "
            f"{MAX_SEED}"
        )
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    cfg = SparseMajorityConfig(
        s=args.s,
        n_train=args.n_train,
        n_val=args.n_val,
        n_test=args.n_test,
        protocol=args.protocol,
        steps=args.steps,
        adam_lr=args.adam_lr,
        warmup=args.warmup,
        max_epochs=args.max_epochs,
        eval_every=args.eval_every,
        track_test_selection=args.track_test_selection,
        dtype=args.dtype,
        lr=args.lr,
        lr_decay=args.lr_decay,
        lr_floor=args.lr_floor,
        m_star=not args.no_m_star,
    ).validated()

    for T in seq_lens:  # fail before printing or writing anything
        _check_task(T, cfg.s)
    # the results file is resumed in place; what is printed never goes into it (--csv F >> F)
    check_apart({"--csv": args.csv, "standard output": standard_output()}, {})
    # the results file: created with the full configuration, or resumed only when it records the same
    writer = open_sweep(args.csv, cfg, device=device, report=warn) if args.csv else None
    done = writer.done if writer is not None else set()

    def on_result(r):
        if not args.json:
            print(_row(r), flush=True)

    if not args.json:
        print(_header(), flush=True)
    n_before = len(done)
    try:
        results = run_sweep(
            seq_lens,
            seeds,
            cfg,
            device=device,
            progress=True if args.progress else None,
            on_result=on_result,
            skip=lambda T, sd: (T, sd) in done,
            on_stack=writer.append if writer is not None else None,
        )
    except KeyboardInterrupt:
        raise Interrupted(saved_note(args.csv, writer, n_before, "runs")) from None
    if args.json:
        recs = [r.to_dict(with_norms=True) for r in results]
        for rec in recs:
            assert all(k in rec for k in RESULT_KEYS)
        print(json.dumps([json_tree(r) for r in recs], indent=1))
    return 0


_COLS = (
    ("seq_len", 7, "d"),
    ("seed", 4, "d"),
    ("fitted", 6, ""),
    ("fit_step", 8, "d"),
    ("train_acc", 9, ".3f"),
    ("test_acc", 8, ".3f"),
    ("acc_gap", 7, ".3f"),
    ("l11_norm_sum", 12, ".1f"),
    ("l11_dist_from_init", 18, ".1f"),
    ("tt_bound", 9, ".3g"),
    ("edelman_bound", 13, ".3g"),
    ("seconds", 7, ".1f"),
)


def _header() -> str:
    return " ".join(f"{name:>{w}}" for name, w, _ in _COLS)


def _row(r) -> str:
    d = r.to_dict()
    return " ".join(
        format(d[name] if spec else str(d[name]), f">{w}{spec}") for name, w, spec in _COLS
    )
