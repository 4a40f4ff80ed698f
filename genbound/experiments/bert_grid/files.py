"""The BERT grid's saved data: the compressed spectra file
(:func:`~genbound.experiments.bert_grid.save_spectra`, :func:`~genbound.experiments.bert_grid.load_spectra`,
:data:`DEFAULT_SPECTRA_FILE`), the arrays of one model in it (:func:`model_spectra`,
:func:`spectra_from_arrays`, :func:`point_key`) and the training times it records
(:func:`expected_seconds`).

For every ``(L, N, seed)`` the file holds **only** what the proxies need: the exact nonzero singular
values and the ``(2,1)`` norm of every matrix, as :class:`genbound.weights.Spectra` arrays, the training
metrics and the machine record, together with the same arrays at each model's initialisation
(:func:`~genbound.experiments.bert_grid.initial_model`). Commands used for the stored file:
``genbound/data/bert_grid_spectra.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ...errors import InputError, ParameterError
from ...weights import Spectra, load_weights
from ..runtime.paths import data_path
from .config import DEPTHS, STAGES, WIDTHS, GridConfig
from .model import initial_model
from .train import point_dir

__all__ = [
    "DEFAULT_SPECTRA_FILE",
    "model_spectra",
    "spectra_from_arrays",
    "point_key",
    "save_spectra",
    "load_spectra",
    "expected_seconds",
]

#: The stored spectra of the grid (made by the commands in ``genbound/data/bert_grid_spectra.md``).
DEFAULT_SPECTRA_FILE = data_path("bert_grid_spectra.npz")

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


def _proxies(model) -> tuple[float, float]:
    from ...checkpoint_bounds import (
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
    the spectra of the model's initialisation (:func:`~genbound.experiments.bert_grid.initial_model`, recomputed: it
    needs no training).
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
                d = point_dir(work, L, N, seed)
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
    """Read a spectra file written by :func:`~genbound.experiments.bert_grid.save_spectra`.

    Returns ``{key: {"L", "N", "heads", "seed", "stage", metrics..., "spectra": Spectra}}`` with keys
    :func:`~genbound.experiments.bert_grid.files.point_key` (``"L{L}_N{N}_s{seed}"``, ``"init_L{L}_N{N}_s{seed}"``),
    plus ``"_config"`` (the
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


def expected_seconds(path=None):
    """``(L, N) -> seconds``: 1.3 times the longest training time of that cell stored in the spectra
    file ``path`` (default :data:`~genbound.experiments.bert_grid.files.DEFAULT_SPECTRA_FILE`; 0 when
    none)."""
    path = DEFAULT_SPECTRA_FILE if path is None else Path(path)
    best: dict = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as z:
            for pt in json.loads(str(z["meta_json"]))["points"]:
                if "seconds" not in pt:  # initialisation rows: nothing was trained
                    continue
                cell = (pt["L"], pt["N"])
                best[cell] = max(best.get(cell, 0.0), float(pt["seconds"]))
    return lambda L, N: 1.3 * best.get((L, N), 0.0)
