"""A grid of small BERT-style models that genbound trains itself. Book: :ref:`ch-sa-trained`.

The BERT Miniatures used by {cite:t}`sakai2026spectrum` are hub-only, so the depth and width scaling of
the two proxies cannot be reproduced offline on them. This module trains its own grid instead: randomly
initialised ``transformers`` BERT encoders (``BertForSequenceClassification``) with ``L`` layers, hidden
width ``N``, heads of width 64 (so ``N / 64`` heads) and an intermediate width ``4 N``, on a seeded
synthetic counting task (:func:`count_task`). Training is brief (AdamW, float32, CPU).

Two steps, so that the slow part runs once and the book only reads a small file:

1. ``train``: train every ``(L, N, seed)`` model and save it (``save_pretrained``) under a work folder,
   skipping models already saved there (resumable per cell and seed; ``--budget-s`` stops between
   models so that a long run goes in chunks);
2. ``extract``: read every saved model with :func:`genbound.weights.load_weights` and store **only**
   what the proxies need (the exact nonzero singular values and the ``(2,1)`` norm of every matrix, as
   :class:`genbound.weights.Spectra` arrays, the training metrics and the machine record) into a small
   compressed ``.npz`` file (:func:`save_spectra`), together with the same arrays at each model's
   initialisation (:func:`initial_model`). ``--merge`` carries over rows of an earlier file whose
   weights were not kept. The chapter recomputes every proxy from that file (:func:`load_spectra`
   returns ``Spectra`` objects, which :func:`genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
   ``edelman_proxy`` accept directly).

Commands used for the stored file: ``genbound/data/bert_grid_spectra.md``.

>>> import torch
>>> ids, y = count_task(4, seq_len=8, generator=torch.Generator().manual_seed(0))
>>> ids.shape, y.shape, bool((ids[:, 0] == CLS).all())
(torch.Size([4, 8]), torch.Size([4]), True)
>>> bool(((y == 1) == ((ids == TOKEN_A).sum(1) > (ids == TOKEN_B).sum(1))).all())
True

One concept: the Part III grid of trained BERT-style models (train, then read their spectra).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from .._validate import check_positive_int
from ..errors import InputError, ParameterError
from .runtime.machine import environment
from .runtime.seeds import bert_point_seed
from ..weights import load_weights
from ..weights import Spectra

__all__ = [
    "PAD",
    "CLS",
    "TOKEN_A",
    "TOKEN_B",
    "DEPTHS",
    "WIDTHS",
    "GridConfig",
    "count_task",
    "bert_config",
    "train_bert",
    "train_grid",
    "model_spectra",
    "spectra_from_arrays",
    "save_spectra",
    "load_spectra",
    "DEFAULT_SPECTRA_FILE",
    "bert_point_seed",
    "point_key",
    "initial_model",
    "STAGES",
]

#: Special token ids of the synthetic task (padding, the classification token, and the two counted tokens).
PAD, CLS, TOKEN_A, TOKEN_B = 0, 1, 2, 3
#: Default depths and widths of the grid.
DEPTHS = (2, 4, 6, 8)
WIDTHS = (64, 128, 256)
#: The stored spectra of the grid (made by the two commands in the module docstring).
DEFAULT_SPECTRA_FILE = Path(__file__).resolve().parents[1] / "data" / "bert_grid_spectra.npz"


@dataclass(frozen=True)
class GridConfig:
    """Hyper-parameters shared by every model of the grid."""

    vocab: int = 24
    seq_len: int = 32
    head_dim: int = 64
    steps: int = 300
    batch: int = 32
    lr: float = 5e-4
    warmup: int = 30
    weight_decay: float = 0.01
    n_test: int = 1024
    seed: int = 0


def count_task(
    n: int, *, seq_len: int = 32, vocab: int = 24, generator: torch.Generator | None = None
):
    """``n`` sequences of a counting task: is token A more frequent than token B?

    Each sequence is ``[CLS]`` followed by ``seq_len - 1`` tokens drawn uniformly from the content ids
    ``2 .. vocab - 1`` (``TOKEN_A = 2`` and ``TOKEN_B = 3`` among them). The label is 1 when A occurs
    more often than B and 0 otherwise; ties are broken by overwriting the last token with A or B at
    random, so the label is always a strict comparison. Solving it needs attention to count tokens.

    Returns ``(input_ids, labels)`` of shapes ``(n, seq_len)`` and ``(n,)`` (int64).
    """
    n = check_positive_int(n, "n")
    seq_len = check_positive_int(seq_len, "seq_len", minimum=3)
    vocab = check_positive_int(vocab, "vocab", minimum=5)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    ids = torch.randint(2, vocab, (n, seq_len), generator=g)
    ids[:, 0] = CLS
    diff = (ids == TOKEN_A).sum(1) - (ids == TOKEN_B).sum(1)
    tie = diff == 0
    coin = torch.randint(0, 2, (n,), generator=g)
    # on a tie the last token decides; replacing it changes the difference by +-1 or +-2
    last = ids[:, -1]
    fix = torch.where(coin == 1, TOKEN_A, TOKEN_B)
    ids[:, -1] = torch.where(tie, fix, last)
    diff = (ids == TOKEN_A).sum(1) - (ids == TOKEN_B).sum(1)
    return ids, (diff > 0).long()


def bert_config(L: int, N: int, cfg: GridConfig = GridConfig()):
    """The ``transformers.BertConfig`` of the grid point ``(L, N)``: ``N / head_dim`` heads, FFN ``4 N``.

    Dropout is off (deterministic, brief training); everything else is BERT's default (GELU, post-LN).
    """
    from transformers import BertConfig

    L = check_positive_int(L, "L")
    N = check_positive_int(N, "N")
    if N % cfg.head_dim:
        raise ParameterError(f"N = {N} must be a multiple of head_dim = {cfg.head_dim}")
    return BertConfig(
        vocab_size=cfg.vocab,
        hidden_size=N,
        num_hidden_layers=L,
        num_attention_heads=N // cfg.head_dim,
        intermediate_size=4 * N,
        max_position_embeddings=cfg.seq_len,
        type_vocab_size=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=2,
    )


def _accuracy(model, ids, y, batch: int = 256) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            logits = model(input_ids=ids[i : i + batch]).logits
            correct += int((logits.argmax(-1) == y[i : i + batch]).sum())
    model.train()
    return correct / len(y)


def initial_model(L: int, N: int, cfg: GridConfig = GridConfig()):
    """The randomly initialised model that :func:`train_bert` starts from, and its torch seed.

    ``torch.manual_seed(bert_point_seed(L, N, cfg.seed))`` then ``BertForSequenceClassification(...)``, in eval
    mode (no dropout anyway). The same call in :func:`train_bert` makes the initialisation column of the
    grid exactly the starting point of each trained model (on the same torch version).
    """
    from transformers import BertForSequenceClassification

    conf = bert_config(L, N, cfg)
    seed = bert_point_seed(L, N, cfg.seed)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(conf).float()
    model.eval()
    return model, seed


def train_bert(L: int, N: int, cfg: GridConfig = GridConfig(), *, log=None):
    """Train one randomly initialised BERT classifier of depth ``L`` and width ``N`` on :func:`count_task`.

    AdamW with a linear warm-up of ``cfg.warmup`` steps, then a constant rate; float32; seeded by
    ``cfg.seed``, ``L`` and ``N``. Returns ``(model, metrics)`` where ``metrics`` holds the final training
    loss (mean of the last 20 steps), train and test accuracy and the wall time in seconds.
    """
    model, seed = initial_model(L, N, cfg)
    model.train()
    g = torch.Generator().manual_seed(seed + 1)
    test_ids, test_y = count_task(
        cfg.n_test,
        seq_len=cfg.seq_len,
        vocab=cfg.vocab,
        generator=torch.Generator().manual_seed(10_000 + cfg.seed),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(cfg.warmup, 1)))
    t0 = time.perf_counter()
    losses = []
    train_ids = []
    train_y = []
    for step in range(cfg.steps):
        ids, y = count_task(cfg.batch, seq_len=cfg.seq_len, vocab=cfg.vocab, generator=g)
        if step >= cfg.steps - 8:
            train_ids.append(ids)
            train_y.append(y)
        loss = model(input_ids=ids, labels=y).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach().item())
        if log is not None and (step + 1) % 50 == 0:
            log(f"L={L} N={N} step {step + 1}/{cfg.steps} loss {np.mean(losses[-50:]):.4f}")
    metrics = {
        "L": L,
        "N": N,
        "heads": N // cfg.head_dim,
        "steps": cfg.steps,
        "final_loss": float(np.mean(losses[-20:])),
        "train_acc": _accuracy(model, torch.cat(train_ids), torch.cat(train_y)),
        "test_acc": _accuracy(model, test_ids, test_y),
        "seconds": time.perf_counter() - t0,
    }
    model.eval()
    return model, metrics


def _point_dir(work: Path, L: int, N: int, seed: int = 0) -> Path:
    return Path(work) / f"s{seed}" / f"L{L}_N{N}"


#: A grid point whose test accuracy ends below this is trained again from scratch with half the learning
#: rate (deep post-LN models can diverge at the default rate); at most ``MAX_RETRIES`` times.
MIN_TEST_ACC = 0.9
MAX_RETRIES = 2


def train_grid(
    work,
    *,
    depths=DEPTHS,
    widths=WIDTHS,
    cfg: GridConfig = GridConfig(),
    seeds=None,
    budget_s: float | None = None,
    expected_s=None,
    log=print,
) -> bool:
    """Train every ``(L, N, seed)`` model not yet saved under ``work`` and save it (``save_pretrained``).

    Resumable per (cell, seed): a model is saved under ``work/s{seed}/L{L}_N{N}`` as soon as it is trained,
    and a later call skips it. ``seeds`` defaults to ``(cfg.seed,)``; the order is seed by seed, then width,
    then depth. With ``budget_s`` a model is not started when the seconds spent in this call plus its
    expected time would exceed the budget, so that a long run goes in chunks (the first model of a call
    always starts). The expected time is ``expected_s(L, N)`` (default 0), rescaled, once a model of this
    call has finished, by the largest ratio of taken to expected seconds so far, times 1.15. Returns ``True`` when every requested model is trained.

    Retry rule: a point whose test accuracy is below ``MIN_TEST_ACC`` is trained again, from the same
    seed, with the learning rate halved, up to ``MAX_RETRIES`` times; ``metrics.json`` records the
    learning rate used and every attempt's accuracy.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    seeds = (cfg.seed,) if seeds is None else tuple(seeds)
    t_start = time.perf_counter()
    complete, trained = True, 0
    speed = []  # seconds taken / seconds expected, this call
    for seed in seeds:
        scfg = replace(cfg, seed=seed)
        (work / f"s{seed}").mkdir(exist_ok=True)
        (work / f"s{seed}" / "grid_config.json").write_text(json.dumps(asdict(scfg), indent=1))
        for N in widths:
            for L in depths:
                d = _point_dir(work, L, N, seed)
                prev = (
                    json.loads((d / "metrics.json").read_text())
                    if (d / "metrics.json").exists()
                    else None
                )
                attempts = prev.get("attempts", [prev["test_acc"]]) if prev else []
                if prev and (prev["test_acc"] >= MIN_TEST_ACC or len(attempts) > MAX_RETRIES):
                    continue
                spent = time.perf_counter() - t_start
                need = float(expected_s(L, N)) if expected_s is not None else 0.0
                if speed:  # rescale by this call's own pace (15 % margin)
                    need *= 1.15 * max(speed)
                if budget_s is not None and trained and spent + need > budget_s:
                    log(
                        f"L={L} N={N} seed {seed}: not started ({spent:.0f} s spent, ~{need:.0f} s needed, "
                        f"budget {budget_s:.0f} s)"
                    )
                    complete = False
                    continue
                lr = cfg.lr * 0.5 ** len(attempts)
                model, metrics = train_bert(L, N, replace(scfg, lr=lr), log=log)
                metrics.update(
                    seed=seed,
                    lr=lr,
                    attempts=attempts + [metrics["test_acc"]],
                    **environment(device="cpu"),
                )
                model.save_pretrained(d)
                (d / "metrics.json").write_text(json.dumps(metrics, indent=1))
                trained += 1
                if expected_s is not None and float(expected_s(L, N)) > 0:
                    speed.append(metrics["seconds"] / float(expected_s(L, N)))
                log(
                    f"L={L} N={N} seed {seed}: done in {metrics['seconds']:.0f} s (lr {lr:g}), "
                    f"test accuracy {metrics['test_acc']:.3f}"
                )
                if metrics["test_acc"] < MIN_TEST_ACC and len(metrics["attempts"]) <= MAX_RETRIES:
                    complete = False  # a retry is due at the next call
    return complete


# --------------------------------------------------------------------------- spectra file

_FIELDS = ("qk", "v", "m_in", "m_out", "qk_norm21", "v_norm21", "m_in_norm21", "m_out_norm21")


def model_spectra(model, *, device="cpu"):
    """The :class:`genbound.weights.Spectra` of a model, read through :func:`genbound.weights.load_weights`.

    Exact method (thin-QR cores for the heads, so the ``N - 64`` zero singular values of a head are never
    stored), float64, without the ``1/sqrt(d_head)`` score scale (multiply the ``QK`` values by it to get
    the scaled variant: scaling a matrix scales its singular values and ``(2,1)`` norm alike).
    """

    return load_weights(model).spectra(device=device, method="core")


def _spectra_arrays(sp) -> dict:
    out = {f: getattr(sp, f).detach().cpu().numpy() for f in _FIELDS}
    out["dims"] = np.array([sp.hidden, sp.d_ff])
    return out


def spectra_from_arrays(arrays: dict, *, attention_scale: bool = False):
    """Rebuild a :class:`genbound.weights.Spectra` from the arrays of one grid point.

    ``attention_scale=True`` multiplies the ``QK`` singular values and ``(2,1)`` norms by ``1/sqrt(d_head)``
    (``d_head = N / heads``), i.e. the spectra of the score matrices BERT actually uses.
    """

    t = {f: torch.as_tensor(np.asarray(arrays[f]), dtype=torch.float64) for f in _FIELDS}
    hidden, d_ff = (int(x) for x in np.asarray(arrays["dims"]))
    if attention_scale:
        c = 1.0 / math.sqrt(hidden / t["qk"].shape[1])
        t["qk"], t["qk_norm21"] = t["qk"] * c, t["qk_norm21"] * c
    return Spectra(**t, hidden=hidden, d_ff=d_ff, method="core")


def point_key(L: int, N: int, seed: int, stage: str = "trained") -> str:
    """The key of one model in the spectra file: ``L{L}_N{N}_s{seed}``, prefixed ``init_`` at initialisation.

    >>> point_key(2, 64, 1), point_key(2, 64, 1, "init")
    ('L2_N64_s1', 'init_L2_N64_s1')
    """
    if stage not in STAGES:
        raise ParameterError(f"stage must be one of {STAGES}, got {stage!r}")
    return ("init_" if stage == "init" else "") + f"L{L}_N{N}_s{seed}"


#: The two stages stored per (cell, seed), the trained model and its initialisation.
STAGES = ("trained", "init")


def _proxies(model) -> tuple[float, float]:
    from ..checkpoint_bounds import (
        edelman_proxy,
        spectral_adaptive_bound,
    )  # these accept a torch module

    return spectral_adaptive_bound(model, device="cpu").value, edelman_proxy(
        model, device="cpu"
    ).log_value


def _old_points(path) -> dict:
    """Points of an earlier spectra file, keyed by ``point_key`` (a file without seeds is seed 0)."""
    out = {}
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta_json"]))
        for pt in meta["points"]:
            arrays = {f: z[f"{pt['key']}/{f}"] for f in (*_FIELDS, "dims")}
            pt = {**pt, "seed": pt.get("seed", 0), "stage": pt.get("stage", "trained")}
            if (
                pt["stage"] == "trained"
            ):  # rows of the first file name lr and attempts only when retried
                pt.setdefault("attempts", [pt["test_acc"]])
                pt.setdefault("lr", meta["config"].get("lr"))
            new_key = point_key(pt["L"], pt["N"], pt["seed"], pt["stage"])
            out[new_key] = ({**pt, "key": new_key}, arrays)
    return out


def save_spectra(
    work,
    out,
    *,
    depths=DEPTHS,
    widths=WIDTHS,
    seeds=(0,),
    merge=(),
    init: bool = True,
    reuse: bool = False,
    skip_missing: bool = False,
    log=print,
) -> Path:
    """Read every trained model under ``work`` and write the compressed spectra file ``out``.

    For every ``(L, N, seed)`` the file holds the exact :class:`~genbound.weights.Spectra` arrays
    (singular values and ``(2,1)`` norms of every QK, V, M_in, M_out matrix), the proxies computed from
    the model itself (so a reader can check that the stored spectra reproduce them), and the training
    metrics with the machine record. A model missing under ``work`` is taken from the spectra files
    ``merge`` (a path or a sequence of paths; the first that has it) when one has it, so rows whose
    weights were not kept carry over unchanged; otherwise it is an :class:`~genbound.errors.InputError`,
    or, with ``skip_missing``, left out (logged), together with the rest of that seed at that width, so
    that every seed kept at a width has all its depths. With ``init`` the file also holds, per ``(L, N, seed)``,
    the spectra of the model's initialisation (:func:`initial_model`, recomputed: it needs no training).
    ``reuse``: a row (trained or initial) present in a merged file is taken from there even when its
    model is under ``work`` (the same code computed it; this saves recomputing every row).
    """
    from transformers import BertForSequenceClassification

    work, out = Path(work), Path(out)
    merge = [merge] if isinstance(merge, (str, Path)) else list(merge or ())
    old, merged_cfg = {}, None
    for path in reversed(merge):  # the first file listed wins
        old.update(_old_points(path))
        with np.load(path, allow_pickle=False) as z:
            merged_cfg = json.loads(str(z["meta_json"]))["config"]
    payload = {}
    configs = {}
    meta = {"points": []}
    for seed in seeds:
        cfg_file = work / f"s{seed}" / "grid_config.json"
        if cfg_file.exists():
            configs[seed] = json.loads(cfg_file.read_text())
        for N in widths:
            for L in depths:
                d = _point_dir(work, L, N, seed)
                key = point_key(L, N, seed)
                if reuse and key in old:
                    pt, arrays = old[key]
                elif (d / "metrics.json").exists():
                    model = BertForSequenceClassification.from_pretrained(
                        d, local_files_only=True
                    ).eval()
                    arrays = _spectra_arrays(model_spectra(model))
                    metrics = json.loads((d / "metrics.json").read_text())
                    ours, ed = _proxies(model)
                    pt = {
                        "key": key,
                        **metrics,
                        "seed": seed,
                        "stage": "trained",
                        "ours_from_model": ours,
                        "log_edelman_from_model": ed,
                        "source": "trained under --work",
                    }
                elif key in old:
                    pt, arrays = old[key]
                    pt = {**pt, "source": pt.get("source", "carried over from an earlier file")}
                elif skip_missing:
                    log(f"{key}: not trained, left out")
                    continue
                else:
                    raise InputError(
                        f"grid point L={L}, N={N}, seed {seed} is not trained yet ({d} has no "
                        f"metrics.json) and no merged file holds it"
                    )
                for name, v in arrays.items():
                    payload[f"{key}/{name}"] = v
                meta["points"].append(pt)
                log(
                    f"{key}: ours {pt['ours_from_model']:.6g}, log Edelman {pt['log_edelman_from_model']:.6g}"
                )
                ikey = point_key(L, N, seed, "init")
                if init and reuse and ikey in old:
                    ipt, iarrays = old[ikey]
                    for name, v in iarrays.items():
                        payload[f"{ikey}/{name}"] = v
                    meta["points"].append(ipt)
                elif init:
                    base = configs.get(seed, merged_cfg or {})
                    cfg = GridConfig(**{**asdict(GridConfig()), **base, "seed": seed})
                    model, tseed = initial_model(L, N, cfg)
                    for name, v in _spectra_arrays(model_spectra(model)).items():
                        payload[f"{ikey}/{name}"] = v
                    ours, ed = _proxies(model)
                    meta["points"].append(
                        {
                            "key": ikey,
                            "L": L,
                            "N": N,
                            "heads": N // cfg.head_dim,
                            "seed": seed,
                            "stage": "init",
                            "torch_seed": tseed,
                            "ours_from_model": ours,
                            "log_edelman_from_model": ed,
                        }
                    )
    if (
        skip_missing
    ):  # keep a seed at a width only when every depth of it is there (no ragged curves)
        have: dict = {}
        for pt in meta["points"]:
            if pt["stage"] == "trained":
                have.setdefault((pt["N"], pt["seed"]), set()).add(pt["L"])
        partial = {k for k, v in have.items() if v != set(depths)}
        for N, seed in sorted(partial):
            log(f"N={N}, seed {seed}: depths {sorted(have[(N, seed)])} only, left out")
        keys = {pt["key"] for pt in meta["points"] if (pt["N"], pt["seed"]) in partial}
        meta["points"] = [pt for pt in meta["points"] if pt["key"] not in keys]
        payload = {k: v for k, v in payload.items() if k.split("/")[0] not in keys}
    cfgs = [
        {k: v for k, v in c.items() if k != "seed"} for c in (*configs.values(), merged_cfg) if c
    ]
    if any(c != cfgs[0] for c in cfgs):
        raise InputError(f"the seeds were trained with different configurations: {cfgs}")
    cfg0 = cfgs[0] if cfgs else None
    meta["config"] = {k: v for k, v in (cfg0 or asdict(GridConfig())).items() if k != "seed"}
    meta["seeds"] = list(seeds)
    payload["meta_json"] = np.array(json.dumps(meta))
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **payload)
    return out


def load_spectra(path=None, *, attention_scale: bool = False) -> dict:
    """Read a spectra file written by :func:`save_spectra`.

    Returns ``{key: {"L", "N", "heads", "seed", "stage", metrics..., "spectra": Spectra}}`` with keys
    :func:`point_key` (``"L{L}_N{N}_s{seed}"``, ``"init_L{L}_N{N}_s{seed}"``), plus ``"_config"`` (the
    training configuration shared by every seed). A file written before seeds were stored reads as
    seed 0, trained.
    """
    path = DEFAULT_SPECTRA_FILE if path is None else Path(path)
    if not path.exists():
        raise InputError(f"no spectra file at {path}")
    out = {}
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta_json"]))
        for pt in meta["points"]:
            arrays = {f: z[f"{pt['key']}/{f}"] for f in (*_FIELDS, "dims")}
            seed, stage = pt.get("seed", 0), pt.get("stage", "trained")
            key = point_key(pt["L"], pt["N"], seed, stage)
            out[key] = {
                **pt,
                "key": key,
                "seed": seed,
                "stage": stage,
                "spectra": spectra_from_arrays(arrays, attention_scale=attention_scale),
            }
    out["_config"] = {k: v for k, v in meta["config"].items() if k != "seed"}
    return out


# --------------------------------------------------------------------------- command line


def _expected_seconds():
    """``(L, N) -> seconds``: 1.3 times the longest stored training time of that cell (0 when none)."""
    best: dict = {}
    if DEFAULT_SPECTRA_FILE.exists():
        with np.load(DEFAULT_SPECTRA_FILE, allow_pickle=False) as z:
            for pt in json.loads(str(z["meta_json"]))["points"]:
                if "seconds" not in pt:  # initialisation rows: nothing was trained
                    continue
                cell = (pt["L"], pt["N"])
                best[cell] = max(best.get(cell, 0.0), float(pt["seconds"]))
    return lambda L, N: 1.3 * best.get((L, N), 0.0)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m genbound.experiments.bert_grid",
        description="Train the BERT grid of Part III and store its spectra.",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train every grid point not yet saved under --work")
    t.add_argument("--work", required=True)
    t.add_argument("--steps", type=int, default=GridConfig.steps)
    t.add_argument("--seed", type=int, default=GridConfig.seed)
    t.add_argument(
        "--seeds", type=int, nargs="+", default=None, help="seeds to train (default: --seed alone)"
    )
    t.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="start no model that would end after this many seconds (expected time: 1.3 x the "
        "stored file's time for that cell); exit status 3 when models are left",
    )
    t.add_argument("--threads", type=int, default=1)
    e = sub.add_parser("extract", help="write the spectra file from the trained models")
    e.add_argument("--work", required=True)
    e.add_argument("--out", default=str(DEFAULT_SPECTRA_FILE))
    e.add_argument("--seeds", type=int, nargs="+", default=[0])
    e.add_argument(
        "--merge",
        nargs="*",
        default=[],
        help="earlier spectra files: models not under --work are carried over from them",
    )
    e.add_argument(
        "--reuse",
        action="store_true",
        help="take every row a merged file has from it instead of recomputing it",
    )
    e.add_argument(
        "--skip-missing",
        action="store_true",
        help="leave out (cell, seed) models that are neither trained nor merged",
    )
    for p in (t, e):
        p.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
        p.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    args = ap.parse_args(argv)

    def log(msg):
        print(time.strftime("%H:%M:%S"), msg, flush=True)

    if args.cmd == "train":
        torch.set_num_threads(max(1, args.threads))
        cfg = GridConfig(steps=check_positive_int(args.steps, "steps"), seed=args.seed)
        log(
            f"python {sys.version.split()[0]}, torch {torch.__version__}, {platform.machine()}, "
            f"{torch.get_num_threads()} thread(s)"
        )
        done = train_grid(
            args.work,
            depths=args.depths,
            widths=args.widths,
            cfg=cfg,
            seeds=args.seeds,
            budget_s=args.budget_s,
            expected_s=_expected_seconds(),
            log=log,
        )
        return 0 if done else 3
    else:
        save_spectra(
            args.work,
            args.out,
            depths=args.depths,
            widths=args.widths,
            seeds=args.seeds,
            merge=args.merge,
            reuse=args.reuse,
            skip_missing=args.skip_missing,
            log=log,
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
