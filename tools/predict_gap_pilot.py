"""Pilot of the Part V family: which axes move the gap, and how long a stack takes.

Trains a small factorial (two levels of every candidate axis, a few seed indices) into a results file,
then prints, per axis and task, the paired change in gap between coupled fitted models (higher level
minus lower level; :func:`genbound.experiments.predict_gap.paired_gap_changes`) against the mean
test-set standard error, and the wall time per stack. Resumable (a results file).

    PYTHONPATH=. python tools/predict_gap_pilot.py genbound/data/predict_gap_pilot.csv
"""

from __future__ import annotations

import sys
import time

import torch

from genbound.experiments import predict_gap as pg

PILOT = pg.FamilyConfig(depths=(1, 2), widths=(12, 32), lrs=(1e-3, 1e-2),
                        n_train={"sparse-majority": (40, 160), "digits": (100, 400)},
                        seeds=3, stack=3, steps=1500, warmup=50)


def main(path: str) -> int:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    pg.run_family(PILOT, csv_path=path, progress=False,
                  on_record=lambda r: print(f"{r.task:>15} L={r.depth} w={r.width:>2} lr={r.lr:g} n={r.n_train:>3} "
                                            f"seed={r.seed} fitted={int(r.fitted)} step={r.steps:>4} "
                                            f"gap={r.gap:+.3f} s={r.seconds:.1f}", flush=True))
    print(f"wall {time.perf_counter() - t0:.0f} s (this call)")
    df = pg.read_family(path)
    stacks = df.groupby(["task", *pg.AXES])["seconds"].sum()
    print(f"{len(df)} models, {int(df['fitted'].sum())} fitted, {int(df['diverged'].sum())} diverged")
    print("seconds per stack of", PILOT.stack, "by task and depth:")
    print(stacks.groupby(["task", "depth"]).describe()[["mean", "min", "max"]].round(1).to_string())
    print("fitted share by task, depth, lr, n_train:")
    print(df.groupby(["task", "depth", "lr", "n_train"])["fitted"].mean().round(2).to_string())
    print(pg.paired_gap_changes(df).round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
