"""``genbound experiment certify``: PAC-Bayes-kl certificates of the rows of a sparse-majority results file.

``genbound experiment certify --rows 16:0,32:1 --csv certs.csv`` retrains each named row of the sweep
(default: the saved sweep) from its recorded configuration, certifies it
(:func:`genbound.experiments.certify.certify_sparse_majority`) and appends one row per model to a
results file keyed by ``(seq_len, seed, n_train)`` (resumable: finished keys are skipped).
``--n-train N`` retrains the row's configuration with ``N`` training examples (the larger-m point).

``genbound experiment certify --family [PATH] --n-trains 120,400 --seeds 6 --csv certs.csv`` certifies
the Part V family instead (default: the saved family): every setting without label noise at the named
training-set sizes (default: each task's largest), seed indices ``0 .. seeds - 1``, one stack per
setting (:func:`genbound.experiments.certify.family.certify_family_setting`); ``--shard I/K`` takes
the settings ``I, I + K, ...``.
Every argument and every row is checked before anything is trained or written.
"""

from __future__ import annotations

import json
import math

from ...errors import ParameterError
from ..runtime.cli import check_ranges, parse_shard
from ..runtime.outputs import check_apart
from . import CertifyConfig
from . import certify_sparse_majority, open_certificates
from ..sparse_majority import config_of, parse_row_keys, read_sweep
from .family import FAMILY_SCHEMA, certify_family_setting, open_family_certificates
from ..predict_gap import family_config, read_family
from ..predict_gap.training import family_key
from ...jsonsafe import json_tree

__all__ = ["add_certify"]


def add_certify(psub) -> None:
    """Register ``experiment certify``."""

    d = CertifyConfig()
    p = psub.add_parser(
        "certify",
        help="Part VI: PAC-Bayes-kl certificates of sparse-majority rows",
        description="Retrain rows of a sparse-majority results file, train a prior on the first part of "
        "each training set, optimise a Gaussian posterior with f_quad and certify it on the "
        "rest with fresh draws; the deterministic model gets the binomial test-set bound.",
    )
    p.add_argument(
        "--sweep", default=None, help="the sparse-majority results file (default: the saved sweep)"
    )
    p.add_argument("--rows", default=None, help="T:seed pairs, e.g. 16:0,32:1 (default: every row)")
    p.add_argument("--csv", default=None, help="the certificate results file to create or resume")
    p.add_argument(
        "--n-train",
        type=int,
        default=0,
        help="retrain with this many training examples (0: the row's)",
    )
    p.add_argument("--prior-fraction", type=float, default=d.prior_fraction)
    p.add_argument("--post-steps", type=int, default=d.post_steps)
    p.add_argument(
        "--draws", type=int, default=d.n_draws, help="fresh posterior draws on the bound set"
    )
    p.add_argument("--test-draws", type=int, default=d.test_draws)
    p.add_argument("--post-lr", type=float, default=d.post_lr)
    p.add_argument("--json", action="store_true", help="print each record as one JSON line")
    p.add_argument(
        "--family",
        nargs="?",
        const="",
        default=None,
        help="certify the Part V family (PATH, default: the saved family) instead of the sweep",
    )
    p.add_argument(
        "--n-trains",
        default=None,
        help="with --family: training-set sizes, e.g. 120,400 (default: each task's largest)",
    )
    p.add_argument(
        "--seeds", type=int, default=6, help="with --family: seed indices 0 .. SEEDS - 1"
    )
    p.add_argument("--shard", default="0/1", help="with --family: the settings I, I + K, ... (I/K)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    import torch

    cc = CertifyConfig(
        prior_fraction=args.prior_fraction,
        post_steps=args.post_steps,
        n_draws=args.draws,
        test_draws=args.test_draws,
        n_train=args.n_train,
        post_lr=args.post_lr,
    ).validated()
    check_ranges(  # after the config's own checks, whose lines say more; these add upper limits
        {
            "--n-train-certify": args.n_train,
            "--post-steps": args.post_steps,
            "--draws": args.draws,
            "--test-draws": args.test_draws,
            "--seeds": args.seeds,
        }
    )
    if args.family is not None:
        return _run_family(args, cc)
    table = read_sweep(args.sweep)
    check_apart({"--csv": args.csv}, {"the sweep it reads (--sweep)": [table.path]})
    cfg = config_of(table)
    try:
        keys = sorted(table.keys) if args.rows is None else parse_row_keys(args.rows)
    except ParameterError as exc:
        raise ParameterError(str(exc).replace("--verify-saved-rows", "--rows")) from None
    missing = [k for k in keys if k not in table.keys]
    if missing:
        raise ParameterError(
            f"{table.path}: no row for " + ", ".join(f"T={t} seed={s}" for t, s in missing)
        )
    m = cc.n_train or cfg.n_train
    m0 = int(round(cc.prior_fraction * m))
    if not 1 <= m0 < m:
        raise ParameterError(
            f"--prior-fraction {cc.prior_fraction} leaves no prior or no bound set at m = {m}"
        )
    saved = {(r["seq_len"], r["seed"]): r for r in table.rows}
    writer = open_certificates(args.csv, table.path, cfg, cc) if args.csv else None
    torch.set_num_threads(1)
    for T, sd in keys:
        if writer is not None and (T, sd, m) in writer:
            continue
        rec = certify_sparse_majority(T, sd, cfg, cc, saved_test_acc=saved[(T, sd)]["test_acc"])
        if writer is not None:
            writer.append([rec])
        _report(rec, f"T={T} seed={sd} m={m}", args.json)
    return 0


def family_settings(fc, n_trains=None) -> list[dict]:
    """The settings of the family ``fc`` that are certified: no label noise, clean inputs, ``n_train`` in ``n_trains``
    (default: each task's largest), in the family's order."""
    keep = [] if n_trains is None else list(n_trains)
    out = []
    for st in fc.settings():
        if st["label_noise"] != 0.0 or st.get("input_flip", 0.0) != 0.0:
            continue
        if (st["n_train"] in keep) if keep else st["n_train"] == max(fc.n_train[st["task"]]):
            out.append(st)
    return out


def _run_family(args, cc) -> int:
    import torch

    if args.n_train:
        raise ParameterError("--n-train applies to the sparse-majority sweep, not to --family")
    path = args.family or None
    df = read_family(path)
    check_apart({"--csv": args.csv}, {"the family it reads (--family)": [path] if path else []})
    fc = family_config(path)
    try:
        sizes = (
            None
            if args.n_trains is None
            else [int(x) for x in args.n_trains.split(",") if x.strip()]
        )
    except ValueError:
        raise ParameterError(
            f"--n-trains must be integers separated by commas, got {args.n_trains!r}"
        ) from None
    known = {n for ns in fc.n_train.values() for n in ns}
    if sizes is not None and (not sizes or any(n not in known for n in sizes)):
        raise ParameterError(
            f"--n-trains {args.n_trains!r}: the family's training-set sizes are {sorted(known)}"
        )
    if not 1 <= args.seeds <= fc.seeds:
        raise ParameterError(
            f"--seeds must lie in 1 .. {fc.seeds} (the family's seed indices), got {args.seeds}"
        )
    i, k = parse_shard(args.shard)
    settings = family_settings(fc, sizes)[i::k]
    seeds = list(range(args.seeds))
    for st in settings:
        m = st["n_train"]
        if not 1 <= int(round(cc.prior_fraction * m)) < m:
            raise ParameterError(
                f"--prior-fraction {cc.prior_fraction} leaves no prior or no bound set at m = {m}"
            )
    saved = {family_key(r): float(r["test_acc"]) for r in df.to_dict("records")}
    source = path or "the saved family"
    writer = open_family_certificates(args.csv, source, fc, cc) if args.csv else None
    torch.set_num_threads(1)
    for st in settings:
        todo = [
            s
            for s in seeds
            if writer is None or FAMILY_SCHEMA.key_of(dict(st, seed=s)) not in writer
        ]
        if not todo:
            continue
        acc = {s: saved.get(family_key(dict(st, seed=s)), math.nan) for s in todo}
        rows = certify_family_setting(st, todo, fc, cc, saved_test_acc=acc)
        if writer is not None:
            writer.append(rows)
        for rec in rows:
            _report(
                rec,
                f"{rec['task']} L={rec['depth']} w={rec['width']} a={rec['init_scale']:g} "
                f"m={rec['n_train']} seed={rec['seed']}",
                args.json,
            )
    return 0


def _report(rec: dict, label: str, as_json: bool) -> None:
    """One certified model on stdout: a JSON line (the project's one non-finite policy) or a summary."""

    if as_json:
        print(json.dumps(json_tree(rec)), flush=True)
        return
    print(
        f"{label}: certificate {rec['certificate']:.4f} (Q test error {rec['q_test_error']:.4f}, KL/n "
        f"{rec['kl_per_n']:.3f}); test-set bound {rec['test_set_bound']:.4f}; prior hold-out "
        f"{rec['prior_holdout_bound']:.4f}; {rec['seconds']:.0f} s",
        flush=True,
    )
