"""``genbound experiment predict-gap``: train the Part V family, or read the saved one, and rank the
bounds' capacities by the models' gaps (:mod:`genbound.experiments.predict_gap`).

One concept: the predict-gap subcommand (its options and its run).
"""

from __future__ import annotations

import json

from ...errors import Interrupted, ParameterError
from ...jsonsafe import json_tree
from ..runtime.cli import (
    check_ranges,
    parse_float_list,
    parse_int_list,
    parse_shard,
    saved_note,
    warn,
)
from ..runtime.outputs import check_apart, standard_output
from . import SAVED_FAMILY, FamilyConfig
from .. import predict_gap as pg

__all__ = ["add_predict_gap"]


def add_predict_gap(psub) -> None:
    """Register ``experiment predict-gap`` (Part V)."""
    dflt = FamilyConfig()
    parser = psub.add_parser(
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
    parser.add_argument(
        "--saved",
        action="store_true",
        help=f"summarise a saved family (default {SAVED_FAMILY.name}) instead of training",
    )
    parser.add_argument(
        "--csv",
        default=None,
        help="the family's results file (train: created with the full "
        "configuration, or resumed when it records the same; --saved: read this file; "
        "default: the saved family shipped with genbound)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--tasks", default=",".join(dflt.tasks), help="comma-separated tasks")
    parser.add_argument(
        "--seeds",
        type=int,
        default=dflt.seeds,
        help=f"seed indices per setting (default {dflt.seeds})",
    )
    parser.add_argument(
        "--steps", type=int, default=dflt.steps, help=f"Adam step budget (default {dflt.steps})"
    )
    parser.add_argument("--depths", default=",".join(map(str, dflt.depths)))
    parser.add_argument("--widths", default=",".join(map(str, dflt.widths)))
    parser.add_argument("--lrs", default=",".join(map(str, dflt.lrs)))
    parser.add_argument(
        "--batches",
        default=",".join(map(str, dflt.batches)),
        help="mini-batch sizes (0: full batch)",
    )
    parser.add_argument("--weight-decays", default=",".join(map(str, dflt.weight_decays)))
    parser.add_argument(
        "--label-noises",
        default=",".join(map(str, dflt.label_noises)),
        help="shares of corrupted training labels",
    )
    parser.add_argument(
        "--input-flips",
        default=",".join(map(str, dflt.input_flips)),
        help="probabilities with which each training input unit is corrupted at every step",
    )
    parser.add_argument(
        "--init-scales",
        default=",".join(map(str, dflt.init_scales)),
        help="factors on every parameter of the seeded initialisation",
    )
    parser.add_argument(
        "--shard",
        default="0/1",
        help="train only the stacks i, i+k, ... of the family's order "
        "(I/K; one results file per shard, merged afterwards)",
    )
    parser.add_argument(
        "--n-train-sm",
        default=",".join(map(str, dflt.n_train["sparse-majority"])),
        help="training-set sizes of sparse majority",
    )
    parser.add_argument(
        "--n-train-digits",
        default=",".join(map(str, dflt.n_train["digits"])),
        help="training-set sizes of digits",
    )
    parser.add_argument(
        "--boot", type=int, default=1000, help="bootstrap resamples of the seed indices"
    )
    parser.add_argument(
        "--nulls", type=int, default=200, help="random measures of the null distributions"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not a terminal"
    )
    parser.set_defaults(func=_run_predict_gap)


def _run_predict_gap(args) -> int:
    import torch

    check_ranges({"--boot": args.boot, "--nulls": args.nulls, "--threads": args.threads})
    if args.saved:
        # --saved writes only to standard output: never into the family it reads (>> FAMILY)
        check_apart(
            {"standard output": standard_output()},
            {"the family it reads (--csv)": [args.csv or SAVED_FAMILY]},
        )
        df = pg.read_family(args.csv, report=warn)
        out = pg.summary(
            df, csv_path=args.csv or pg.SAVED_FAMILY, n_boot=args.boot, n_null=args.nulls
        )
        if args.json:
            print(json.dumps(json_tree(out)))
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
    # the results file is resumed in place; what is printed never goes into it (--csv F >> F)
    check_apart({"--csv": args.csv, "standard output": standard_output()}, {})
    torch.set_num_threads(args.threads)
    try:
        recs = pg.run_family(
            cfg,
            csv_path=args.csv,
            progress=True if args.progress else None,
            report=warn,
            shard=parse_shard(args.shard),
        )
    except KeyboardInterrupt:
        raise Interrupted(saved_note(args.csv, None, None, "models")) from None
    if args.json:
        print(json.dumps([json_tree(r.row()) for r in recs]))
    else:
        print(
            f"trained {len(recs)} models ({sum(r.fitted for r in recs)} fitted); appended to {args.csv}"
        )
    return 0
