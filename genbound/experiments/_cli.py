"""``genbound experiment``: run the book's experiments from the command line.

``genbound experiment sparse-majority --seq-lens 16,32,64 --seeds 2 [--device auto] [--json]`` trains
one model per sequence length and seed (:mod:`genbound.experiments.sparse_majority`) and prints one
record per run: a table, or with ``--json`` a JSON array of objects with at least the keys of
:data:`~genbound.experiments.sparse_majority.RESULT_KEYS`. ``--csv PATH`` writes a results file
(:mod:`genbound.experiments.results`): the full configuration in its header, every stack of runs
appended whole as soon as it finishes; the same command resumes it, and a different configuration is
refused (a partial sweep stays usable), and so is a second process writing the same file. Ctrl-C ends
with one line saying what was saved and how to resume (exit code 130).

Every numeric argument is checked against its range (:data:`RANGES`) before anything is trained or
written: sequence lengths ``s .. MAX_SEQ_LEN``, seeds ``0 .. MAX_SEED`` (at most ``MAX_SEEDS`` of them),
threads ``1 ..`` the cores present (``os.cpu_count()``), sizes and step counts up to
``MAX_EXAMPLES`` and ``MAX_STEPS``, training tokens ``n_train * T`` up to ``MAX_TOKENS``; a value
outside is one ``genbound: error:`` line naming the option, the range and the value (long lists
shown by their first items).

One concept: the command line of the experiments (parsers, argument checks, dispatch).
"""

from __future__ import annotations

import json

from .._validate import check_int_range, max_threads, shown, shown_value
from ..errors import Interrupted, ParameterError
from ..jsonsafe import json_tree

__all__ = [
    "add_parser",
    "parse_int_list",
    "parse_float_list",
    "check_ranges",
    "RANGES",
    "MAX_SEQ_LEN",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_EXAMPLES",
    "MAX_STEPS",
    "MAX_TOKENS",
    "MAX_WIDTH",
    "MAX_DEPTH",
]

#: The longest sequence length T (the saved sweep goes to 1024; memory and time grow with T).
MAX_SEQ_LEN = 8192
#: The largest seed (torch and numpy seeds are 32-bit) and the most seeds one command trains.
MAX_SEED = 2**31 - 1
MAX_SEEDS = 10_000
#: The most examples in a training, validation or test set, and the most optimiser steps or epochs.
MAX_EXAMPLES = 1_000_000
MAX_STEPS = 10_000_000
#: The most training tokens (``n_train * T``) of one full-batch sparse-majority stack (memory: each
#: token carries a few floats per head; the saved sweep's largest is 300 * 1024).
MAX_TOKENS = 2**27
#: The widest and deepest network of the Part V family, and the most bootstrap or null resamples.
MAX_WIDTH = 4096
MAX_DEPTH = 64
MAX_RESAMPLES = 1_000_000

#: ``option -> (lowest, highest, where the limit comes from)`` of every integer option of the
#: ``experiment`` commands (``None`` as highest: the cores present, ``os.cpu_count()``).
RANGES = {
    "--seq-lens": (1, MAX_SEQ_LEN, "MAX_SEQ_LEN"),
    "--s": (1, MAX_SEQ_LEN, "at most MAX_SEQ_LEN"),
    "--seeds": (1, MAX_SEEDS, "MAX_SEEDS"),
    "--first-seed": (0, MAX_SEED, "32-bit seeds"),
    "--verify-seed": (0, MAX_SEED, "32-bit seeds"),
    "--threads": (1, None, "the cores present"),
    "--n-train": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-val": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-test": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--steps": (1, MAX_STEPS, "MAX_STEPS"),
    "--warmup": (0, MAX_STEPS, "MAX_STEPS"),
    "--max-epochs": (1, MAX_STEPS, "MAX_STEPS"),
    "--eval-every": (1, MAX_STEPS, "MAX_STEPS"),
    "--boot": (1, MAX_RESAMPLES, "MAX_RESAMPLES"),
    "--nulls": (1, MAX_RESAMPLES, "MAX_RESAMPLES"),
    "--depths": (1, MAX_DEPTH, "MAX_DEPTH"),
    "--widths": (1, MAX_WIDTH, "MAX_WIDTH"),
    "--batches": (0, MAX_EXAMPLES, "MAX_EXAMPLES; 0 is full batch"),
    "--n-train-sm": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-train-digits": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--post-steps": (1, MAX_STEPS, "MAX_STEPS"),
    "--draws": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--test-draws": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-train-certify": (0, MAX_EXAMPLES, "MAX_EXAMPLES; 0 is the row's"),
}


def check_ranges(values: dict) -> None:
    """Check ``{option: value or list of values}`` against :data:`RANGES` (``None`` values skipped);
    raises :class:`~genbound.errors.ParameterError` naming the option, its range and the value."""
    for option, value in values.items():
        if value is None:
            continue
        lo, hi, why = RANGES[option]
        if hi is None:
            hi, why = max_threads(), "the cores present, os.cpu_count()"
        name = option.replace("-certify", "")
        for v in value if isinstance(value, (list, tuple)) else [value]:
            check_int_range(v, name, lo, hi, why=why)


def _parse_list(text: str, name: str, conv, kind: str) -> list:
    items = [t for t in str(text).split(",") if t.strip()]
    try:
        out = [conv(t) for t in items]
    except ValueError:
        bad = next(t for t in items if not _converts(conv, t))
        raise ParameterError(
            f"{name} must be a comma-separated list of {kind}, got {shown(items) if len(items) > 5 else shown_value(str(text))} "
            f"({shown_value(bad.strip())} is not one)"
        ) from None
    if not out:
        raise ParameterError(f"{name} is empty")
    return out


def _converts(conv, text: str) -> bool:
    try:
        conv(text)
    except ValueError:
        return False
    return True


def parse_int_list(text: str, name: str) -> list[int]:
    """``"16,32,64"`` -> ``[16, 32, 64]``; raises :class:`~genbound.errors.ParameterError` on bad input.

    >>> parse_int_list("16, 64", "--seq-lens")
    [16, 64]
    """
    return _parse_list(text, name, int, "integers")


def parse_float_list(text: str, name: str) -> list[float]:
    """``"1e-3,3e-3"`` -> ``[0.001, 0.003]``; raises :class:`~genbound.errors.ParameterError` on bad input.

    >>> parse_float_list("0, 0.1", "--weight-decays")
    [0.0, 0.1]
    """
    return _parse_list(text, name, float, "numbers")


def add_parser(sub) -> None:
    """Register ``experiment`` (sub-subcommands ``sparse-majority``, ``predict-gap`` and ``certify``)."""
    p = sub.add_parser(
        "experiment",
        help="run an experiment of the book",
        description="Run an experiment of the book.",
    )
    psub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])

    from .sparse_majority import SparseMajorityConfig

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
    _add_predict_gap(psub)
    from .certify._cli import add_certify

    add_certify(psub)
    from .certify_lm._cli import add_certify_lm

    add_certify_lm(psub)


def _add_predict_gap(psub) -> None:
    """Register ``experiment predict-gap`` (Part V)."""
    from .predict_gap import SAVED_FAMILY, FamilyConfig

    dflt = FamilyConfig()
    pg = psub.add_parser(
        "predict-gap",
        help="Part V: train a family of transformers and rank the bounds' capacities by their gaps",
        description="Train the Part V family (a full factorial over depth, width, learning rate and "
        "training-set size, with coupled seed indices, on sparse majority and the bundled digits), "
        "appending every finished stack to a CSV and skipping models already in it; or, with "
        "--saved, summarise a saved family: per measure Kendall's tau (ties 0) per task and its "
        "mean with a seed-cluster bootstrap interval, Jiang et al.'s granulated Psi (with and "
        "without the training-set size), their conditional mutual information K, and Dziugaite "
        "et al.'s sign error over environments.",
    )
    pg.add_argument(
        "--saved",
        action="store_true",
        help=f"summarise a saved family (default {SAVED_FAMILY.name}) instead of training",
    )
    pg.add_argument(
        "--csv",
        default=None,
        help="the family's results file (train: created with the full "
        "configuration, or resumed when it records the same; --saved: read this file; "
        "default: the saved family shipped with genbound)",
    )
    pg.add_argument("--json", action="store_true", help="print one JSON object")
    pg.add_argument("--tasks", default=",".join(dflt.tasks), help="comma-separated tasks")
    pg.add_argument(
        "--seeds",
        type=int,
        default=dflt.seeds,
        help=f"seed indices per setting (default {dflt.seeds})",
    )
    pg.add_argument(
        "--steps", type=int, default=dflt.steps, help=f"Adam step budget (default {dflt.steps})"
    )
    pg.add_argument("--depths", default=",".join(map(str, dflt.depths)))
    pg.add_argument("--widths", default=",".join(map(str, dflt.widths)))
    pg.add_argument("--lrs", default=",".join(map(str, dflt.lrs)))
    pg.add_argument(
        "--batches",
        default=",".join(map(str, dflt.batches)),
        help="mini-batch sizes (0: full batch)",
    )
    pg.add_argument("--weight-decays", default=",".join(map(str, dflt.weight_decays)))
    pg.add_argument(
        "--label-noises",
        default=",".join(map(str, dflt.label_noises)),
        help="shares of corrupted training labels",
    )
    pg.add_argument(
        "--input-flips",
        default=",".join(map(str, dflt.input_flips)),
        help="probabilities with which each training input unit is corrupted at every step",
    )
    pg.add_argument(
        "--init-scales",
        default=",".join(map(str, dflt.init_scales)),
        help="factors on every parameter of the seeded initialisation",
    )
    pg.add_argument(
        "--shard",
        default="0/1",
        help="train only the stacks i, i+k, ... of the family's order "
        "(I/K; one results file per shard, merged afterwards)",
    )
    pg.add_argument(
        "--n-train-sm",
        default=",".join(map(str, dflt.n_train["sparse-majority"])),
        help="training-set sizes of sparse majority",
    )
    pg.add_argument(
        "--n-train-digits",
        default=",".join(map(str, dflt.n_train["digits"])),
        help="training-set sizes of digits",
    )
    pg.add_argument(
        "--boot", type=int, default=1000, help="bootstrap resamples of the seed indices"
    )
    pg.add_argument(
        "--nulls", type=int, default=200, help="random measures of the null distributions"
    )
    pg.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    pg.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not a terminal"
    )
    pg.set_defaults(func=_run_predict_gap)


def _run_predict_gap(args) -> int:
    import torch

    from . import predict_gap as pg

    check_ranges({"--boot": args.boot, "--nulls": args.nulls, "--threads": args.threads})
    if args.saved:
        df = pg.read_family(args.csv, report=_warn)
        out = pg.summary(
            df, csv_path=args.csv or pg.SAVED_FAMILY, n_boot=args.boot, n_null=args.nulls
        )
        if args.json:
            print(json.dumps(_jsonable_tree(out)))
        else:
            f = lambda v: "   —  " if v is None else f"{v:+.3f}"  # noqa: E731
            print(
                f"{out['n_models']} models ({out['n_fitted']} fitted) on {', '.join(out['tasks'])}; "
                f"axes {', '.join(out['hyperparameters'])}"
            )
            print(
                f"{'measure':>24} {'Psi':>7} {'95% CI':>17} {'Psi n fixed':>11} {'95% CI':>17} "
                f"{'psi_seed':>8} {'95% CI':>17} {'K':>7} {'signerr':>7}"
            )
            for name, m in out["measures"].items():
                ci = lambda k: f"[{f(m[k][0])}, {f(m[k][1])}]"  # noqa: E731
                print(
                    f"{name:>24} {f(m['psi'])} {ci('psi_ci')} {f(m['psi_without_n_train']):>11} "
                    f"{ci('psi_without_n_train_ci')} {f(m['psi_seed']):>8} {ci('psi_seed_ci')} {f(m['cmi'])} "
                    f"{f(m['sign_error_mean'])}"
                )
        return 0
    if args.csv is None:
        raise ParameterError("training needs --csv PATH (the file to append to and resume from)")
    lists = {
        opt: parse_int_list(getattr(args, opt[2:].replace("-", "_")), opt)
        for opt in ("--depths", "--widths", "--batches", "--n-train-sm", "--n-train-digits")
    }
    check_ranges({"--seeds": args.seeds, "--steps": args.steps, **lists})
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    cfg = pg.FamilyConfig(
        tasks=tasks,
        seeds=args.seeds,
        steps=args.steps,
        depths=tuple(lists["--depths"]),
        widths=tuple(lists["--widths"]),
        lrs=tuple(parse_float_list(args.lrs, "--lrs")),
        batches=tuple(lists["--batches"]),
        weight_decays=tuple(parse_float_list(args.weight_decays, "--weight-decays")),
        label_noises=tuple(parse_float_list(args.label_noises, "--label-noises")),
        input_flips=tuple(parse_float_list(args.input_flips, "--input-flips")),
        init_scales=tuple(parse_float_list(args.init_scales, "--init-scales")),
        n_train={
            "sparse-majority": tuple(lists["--n-train-sm"]),
            "digits": tuple(lists["--n-train-digits"]),
        },
    ).validated()
    torch.set_num_threads(args.threads)
    try:
        recs = pg.run_family(
            cfg,
            csv_path=args.csv,
            progress=True if args.progress else None,
            report=_warn,
            shard=_parse_shard(args.shard),
        )
    except KeyboardInterrupt:
        raise Interrupted(_saved_note(args.csv, None, None, "models")) from None
    if args.json:
        print(json.dumps([_jsonable(r.row()) for r in recs]))
    else:
        print(
            f"trained {len(recs)} models ({sum(r.fitted for r in recs)} fitted); appended to {args.csv}"
        )
    return 0


def _parse_shard(text: str) -> tuple[int, int]:
    """``"I/K"`` -> ``(I, K)`` with ``0 <= I < K``."""
    try:
        i, k = (int(v) for v in text.split("/"))
    except ValueError:
        raise ParameterError(f"--shard must be I/K (two integers), got {text!r}") from None
    if not (k >= 1 and 0 <= i < k):
        raise ParameterError(f"--shard I/K needs 0 <= I < K, got {text!r}")
    return i, k


_jsonable_tree = json_tree  # the package's one non-finite policy (genbound.jsonsafe)


def _saved_note(csv, writer, n_before, what: str) -> str:
    """What an interrupted training command saved and how to resume it (one line)."""
    if csv is None:
        return f"nothing saved (no --csv); the {what} printed above are all there is"
    if writer is not None:
        new = len(writer.done) - n_before
        return (
            f"{new} finished {what} appended to {csv} in this run ({len(writer.done)} in the file); "
            f"the unfinished ones are not in it; rerun the same command to resume"
        )
    return (
        f"every finished stack of {what} is in {csv}, the unfinished one is not; rerun the same command "
        f"to resume"
    )


def _warn(msg: str) -> None:
    import sys

    print(f"genbound: warning: {msg}", file=sys.stderr, flush=True)


def _verify_sparse_majority(args) -> int:
    """``--verify-saved`` / ``--verify-saved-rows``: every key is checked before anything is trained."""
    import torch

    from .sparse_majority import (
        parse_row_keys,
        pick_rows,
        read_sweep,
        reproduction_case,
        verify_rows,
    )

    if args.verify_saved is not None and args.verify_saved_rows is not None:
        raise ParameterError("give --verify-saved or --verify-saved-rows, not both")
    check_ranges({"--verify-seed": args.verify_seed})  # --verify-saved: pick_rows names the rows
    table = read_sweep(args.saved_csv, report=_warn)
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

    from ..device import resolve_device
    from .sparse_majority import (
        RESULT_KEYS,
        SparseMajorityConfig,
        _check_task,
        open_sweep,
        run_sweep,
    )

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
    # the results file: created with the full configuration, or resumed only when it records the same
    writer = open_sweep(args.csv, cfg, device=device, report=_warn) if args.csv else None
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
        raise Interrupted(_saved_note(args.csv, writer, n_before, "runs")) from None
    if args.json:
        recs = [r.to_dict(with_norms=True) for r in results]
        for rec in recs:
            assert all(k in rec for k in RESULT_KEYS)
        print(json.dumps([_jsonable(r) for r in recs], indent=1))
    return 0


_jsonable = json_tree


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
