"""Print the numbers of the data notes of a Part V family (``genbound/data/predict_gap_family.md``):
the recorded environment, counts of fitted, unfitted and diverged models (by task and depth, and by
task, label noise and input corruption), the summed training time,
seconds per stack, and the paired change in gap per axis.

    PYTHONPATH=. python tools/predict_gap_notes.py genbound/data/predict_gap_family.csv
    PYTHONPATH=. python tools/predict_gap_notes.py genbound/data/predict_gap_family.csv --recompute
    PYTHONPATH=. python tools/predict_gap_notes.py OLD_FAMILY.csv --moves OUT.csv

``--moves``: only the paired changes, written to ``OUT.csv`` with the levels of each axis and the number of
models of the file; the file is read as a pilot (``predict_gap.read_pilot``), so a family written before an
axis existed is read with that axis at its default. This keeps an earlier family's table, which the
chapter cites, without shipping its rows.
"""

from __future__ import annotations

import sys

from genbound.experiments import predict_gap as pg
from genbound.experiments.runtime.results import read_results


def recompute_all(path: str) -> int:
    """Every capacity and spectral column of every row, recomputed from its saved norms and spectra."""
    df = pg.read_family(path)
    cfg = pg.family_config(path)
    bad = n = 0
    for r in df[~df["diverged"]].to_dict("records"):
        new = pg.recompute_measures(r, cfg)
        n += len(new)
        bad += sum(not (v == r[k] or (v != v and r[k] != r[k])) for k, v in new.items())
    print(
        f"recomputed {n} values of {int((~df['diverged']).sum())} rows from the saved norms and spectra: "
        f"{bad} differ"
    )
    return 1 if bad else 0


def main(path: str) -> int:
    t = read_results(path, pg.SCHEMA)
    df = pg.read_family(path)
    print("environment:", t.environment)
    print("config:", t.config)
    df["unfitted"] = ~df["fitted"] & ~df["diverged"]
    print(df.groupby(["task", "depth"])[["fitted", "unfitted", "diverged"]].sum().to_string())
    noise = [a for a in ("label_noise", "input_flip") if a in df.columns]
    print(df.groupby(["task", *noise])[["fitted", "unfitted", "diverged"]].sum().to_string())
    print(
        f"total {len(df)}: fitted {int(df['fitted'].sum())}, unfitted {int(df['unfitted'].sum())}, "
        f"diverged {int(df['diverged'].sum())}"
    )
    stacks = df.groupby(["task", *pg.AXES, df["seed"] // t.config["stack"]])["seconds"].sum()
    print(
        f"summed stack time {stacks.sum():.0f} s over {len(stacks)} stacks; per stack: "
        f"mean {stacks.mean():.1f} s, max {stacks.max():.1f} s"
    )
    print(stacks.groupby(["task", "depth"]).agg(["mean", "max", "sum"]).round(1).to_string())
    print(pg.paired_gap_changes(df).round(4).to_string(index=False))
    return 0


def write_moves(path: str, out: str) -> int:
    """The paired changes of the family file ``path`` into the plain CSV ``out``."""
    df = pg.read_pilot(path)
    mv = pg.paired_gap_changes(df)
    mv["levels"] = [" ".join(f"{v:g}" for v in sorted(df[a].unique())) for a in mv["axis"]]
    mv["n_models"] = len(df)
    mv.to_csv(out, index=False)
    print(mv.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    if "--moves" in sys.argv:
        sys.exit(write_moves(sys.argv[1], sys.argv[sys.argv.index("--moves") + 1]))
    if "--recompute" in sys.argv:
        sys.exit(recompute_all(sys.argv[1]))
    sys.exit(main(sys.argv[1]))
