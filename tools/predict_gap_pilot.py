"""Pilot of the Part V family: which axes move the gap, and how long a stack takes.

Trains a small factorial (two levels of every candidate axis, a few seed indices) into a results file,
then prints, per axis and task, the paired change in gap between coupled fitted models (higher level
minus lower level; :func:`genbound.experiments.predict_gap.paired_gap_changes`) against the mean
test-set standard error, and the wall time per stack. Resumable (a results file).

    PYTHONPATH=. python tools/predict_gap_pilot.py PATH.csv {pilot,pilot2,pilot3,pilot4,pilot5,pilot6,pilot7,corner} TASKS [LEVELS]

The saved pilots of the family are in ``genbound/data/predict_gap_pilots/`` (``lr_noise_*``: ``pilot``;
``batch_wd_noise_*``: ``pilot2``; ``init_noise_*``: ``pilot4``, stopped after the scales 1 and 2; ``init_wide``: ``pilot5``, both tasks in
one file, stopped before digits at depth 2; ``minibatch_arch``: ``pilot6``, both tasks), one
file per task; ``pilot3`` (weight decay up to 3, digits) and ``corner`` were stopped early and not kept.
"""

from __future__ import annotations

import sys
import time

import torch

from genbound.experiments import predict_gap as pg

#: The pilot of the redesigned family (issue 27): the candidate axes that are not architecture or
#: sample size, at one architecture and one training-set size per task: the peak learning rate over a
#: 30x range and label noise on the training set; 4 seed indices, the family's budget and protocol.
PILOT = pg.FamilyConfig(
    depths=(1,),
    widths=(20,),
    lrs=(1e-3, 1e-2, 3e-2),
    label_noises=(0.0, 0.2),
    batches=(0,),
    weight_decays=(0.0,),
    init_scales=(1.0,),
    n_train={"sparse-majority": (60,), "digits": (200,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The second pilot: mini-batch against full batch and decoupled weight decay, at lr 1e-2, no noise.
PILOT2 = pg.FamilyConfig(
    depths=(1,),
    widths=(20,),
    lrs=(1e-2,),
    batches=(0, 16),
    weight_decays=(0.0, 0.3),
    label_noises=(0.0, 0.1),
    init_scales=(1.0,),
    n_train={"sparse-majority": (60,), "digits": (200,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The third pilot: decoupled weight decay over a wider range (lr 1e-2, full batch, no noise).
PILOT3 = pg.FamilyConfig(
    depths=(1,),
    widths=(20,),
    lrs=(1e-2,),
    weight_decays=(0.0, 0.3, 1.0, 3.0),
    batches=(0,),
    init_scales=(1.0,),
    label_noises=(0.0,),
    n_train={"sparse-majority": (60,), "digits": (200,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The fourth pilot: the scale of the initialisation (every parameter times 1, 2 or 4), lr 1e-2, full batch.
PILOT4 = pg.FamilyConfig(
    depths=(1,),
    widths=(20,),
    lrs=(1e-2,),
    init_scales=(1.0, 2.0, 4.0),
    batches=(0,),
    weight_decays=(0.0,),
    label_noises=(0.0, 0.1),
    n_train={"sparse-majority": (60,), "digits": (200,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The fifth pilot (second session of issue 27): the initialisation scale over a wider range (0.5, 1, 4)
#: at the family's own architectures and largest training sets, lr 1e-2, full batch, no noise.
PILOT5 = pg.FamilyConfig(
    depths=(1, 2),
    widths=(12, 32),
    lrs=(1e-2,),
    init_scales=(0.5, 1.0, 4.0),
    batches=(0,),
    weight_decays=(0.0,),
    label_noises=(0.0,),
    n_train={"sparse-majority": (120,), "digits": (400,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The sixth pilot (third session of issue 27): mini-batches of 16 against full batch at the family's own
#: architectures and largest training sets (the second pilot had them at width 20 and 60/200 examples
#: only), lr 1e-2, no noise, initialisation scale 1.
PILOT6 = pg.FamilyConfig(
    depths=(1, 2),
    widths=(12, 32),
    lrs=(1e-2,),
    init_scales=(1.0,),
    batches=(0, 16),
    weight_decays=(0.0,),
    label_noises=(0.0,),
    n_train={"sparse-majority": (120,), "digits": (400,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
#: The seventh pilot (third session of issue 27): corrupted training inputs (each sparse-majority bit, or each
#: digits pixel intensity v, replaced by 1 - v with probability rho at every step, labels kept; the fit
#: checked on the clean training set; ``predict_gap.corrupt_inputs``) at the family's own architectures and
#: largest training sets, lr 1e-2, full batch, no label noise. Not yet an axis of ``FamilyConfig`` when it ran: the
#: level is passed in the setting (``input_flip``) and written as an extra column by :func:`run_flip_pilot`.
PILOT7 = pg.FamilyConfig(
    depths=(1, 2),
    widths=(12, 32),
    lrs=(1e-2,),
    init_scales=(1.0,),
    batches=(0,),
    weight_decays=(0.0,),
    label_noises=(0.0,),
    input_flips=(0.0,),
    n_train={"sparse-majority": (120,), "digits": (400,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)
FLIP_LEVELS = (0.0, 0.1)


def run_flip_pilot(path: str, levels=FLIP_LEVELS, cfg=PILOT7) -> "object":
    """Train :data:`PILOT7` at every corruption level in ``levels`` into a plain CSV (the family's columns;
    a file written before ``input_flip`` was a record field has it last, and appended rows follow the file), one stack per (setting, level), skipping stacks the file already holds; returns
    the DataFrame. Resumable at stack granularity."""
    import os

    import pandas as pd

    done = pd.read_csv(path) if os.path.exists(path) else None
    for setting in cfg.settings():
        for rho in levels:
            key = {**setting, "input_flip": float(rho)}
            if done is not None and ((done[list(key)] == pd.Series(key)).all(axis=1)).any():
                continue
            recs = pg.train_setting(key, list(range(cfg.seeds)), cfg)
            rows = pd.DataFrame([r.row() for r in recs])  # input_flip is a record field now
            if done is not None:
                rows = rows[list(done.columns)]  # the file's column order (input_flip last)
            for r in recs:
                print(
                    f"{r.task:>15} L={r.depth} w={r.width:>2} rho={rho:g} seed={r.seed} fitted={int(r.fitted)} "
                    f"step={r.steps:>4} gap={r.gap:+.3f} s={r.seconds:.1f}",
                    flush=True,
                )
            rows.to_csv(path, mode="a", header=not os.path.exists(path), index=False)
            done = pd.read_csv(path)
    return pd.read_csv(path)


#: The slowest corner of the planned family (depth 2, width 32, the largest sets, lr 1e-3, noise 0.2),
#: for the time per stack.
CORNER = pg.FamilyConfig(
    depths=(2,),
    widths=(32,),
    lrs=(1e-3,),
    label_noises=(0.2,),
    batches=(0,),
    weight_decays=(0.0,),
    init_scales=(1.0,),
    n_train={"sparse-majority": (120,), "digits": (400,)},
    seeds=4,
    stack=4,
    steps=3000,
    warmup=50,
)


def main(
    path: str, which: str = "pilot", tasks: str = "sparse-majority,digits", levels: str = ""
) -> int:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    import dataclasses

    if which == "pilot7":
        lv = tuple(float(x) for x in levels.split(",")) if levels else FLIP_LEVELS
        df = run_flip_pilot(path, lv, dataclasses.replace(PILOT7, tasks=tuple(tasks.split(","))))
        print(f"wall {time.perf_counter() - t0:.0f} s (this call)")
        print(f"{len(df)} models, {int(df['fitted'].sum())} fitted")
        print(
            df.groupby(["task", "input_flip"])[["fitted", "steps", "seconds"]]
            .mean()
            .round(2)
            .to_string()
        )
        print(pg.paired_gap_changes(df, axes=["depth", "width", "input_flip"]).round(4).to_string())
        return 0

    cfg = dataclasses.replace(
        {
            "pilot": PILOT,
            "pilot2": PILOT2,
            "pilot3": PILOT3,
            "pilot4": PILOT4,
            "pilot5": PILOT5,
            "pilot6": PILOT6,
            "corner": CORNER,
        }[which],
        tasks=tuple(tasks.split(",")),
    )
    pg.run_family(
        cfg,
        csv_path=path,
        progress=False,
        on_record=lambda r: print(
            f"{r.task:>15} L={r.depth} w={r.width:>2} lr={r.lr:g} b={r.batch} wd={r.weight_decay:g} a={r.init_scale:g} q={r.label_noise:g} n={r.n_train:>3} "
            f"seed={r.seed} fitted={int(r.fitted)} step={r.steps:>4} "
            f"gap={r.gap:+.3f} s={r.seconds:.1f}",
            flush=True,
        ),
    )
    print(f"wall {time.perf_counter() - t0:.0f} s (this call)")
    df = pg.read_family(path)
    stacks = df.groupby(["task", *pg.AXES])["seconds"].sum()
    print(
        f"{len(df)} models, {int(df['fitted'].sum())} fitted, {int(df['diverged'].sum())} diverged"
    )
    print("seconds per stack of", cfg.stack, "by task and depth:")
    print(stacks.groupby(["task", "depth"]).describe()[["mean", "min", "max"]].round(1).to_string())
    print("fitted share by task, depth, lr, n_train:")
    print(
        df.groupby(["task", *[a for a in pg.AXES if df[a].nunique() > 1]])["fitted"]
        .mean()
        .round(2)
        .to_string()
    )
    print(pg.paired_gap_changes(df).round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
