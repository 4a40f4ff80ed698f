"""The sparse-majority experiment of Trauger & Tewari, reproduced and extended. Book: :ref:`ch-sparse-majority`.

The task (protocol of the authors' public script, see the digest section 6): a sequence of ``T`` i.i.d.
uniform bits; the label is the majority of ``s = 9`` fixed positions drawn once per run. Token ``b`` is
embedded as ``e_b`` (two random vectors, Gram-Schmidt orthogonalised, each scaled to unit l1 norm), a
``[CLS]`` row ``e_cls`` (orthogonalised against both, unit l1) is appended **last**, and the authors'
sinusoidal encoding ``PE[j, i] = sin(j / 10000^(i/d))`` (even ``i``) or ``cos(...)`` (odd ``i``) is added
to every row ``j = 0..T``. The model is :class:`genbound.nets.ReferenceTransformer` with ``d = 64``, two
heads of width 64, biases, score scale ``1/8``, ReLU, a dense map and a 2-logit readout at the last row,
initialised as Keras initialises the original (:func:`keras_init_`). Training: binary cross-entropy on
one-hot targets, SGD (lr 0.01, momentum 0.9, ``lr <- max(0.001, 0.999 lr)`` at the start of every
epoch), batches of 128, stopping at the end of the first epoch whose (running, Keras-style) training
accuracy is 1.0, or at ``max_epochs``.

What differs from the original, and why, is listed in the chapter. In short: seeds are fixed; the
checkpoint is chosen on a **separate validation split**, never on the test set (the original chose the
lowest test loss); validation is evaluated every ``eval_every`` epochs; the test set is evaluated once
at the end (and, only to show what the original selection would have given, at the same cadence as the
validation set); epochs are capped and capped runs are reported, not dropped.

Speed. Only the ``[CLS]`` row reaches the output and every non-``[CLS]`` row is ``e_{b_t} + PE_t``, so
the forward pass needs neither the ``T x T`` attention matrix nor the embedded sequences:
:func:`cls_logits`, the structured mode of the model class
(:meth:`genbound.nets.ReferenceTransformer.forward_stacked_tokens`), evaluates exactly
``ReferenceTransformer.forward`` (a test compares them) from the bits, in ``O(T d)`` per sequence, and
it can train several seeds at once (a leading model axis ``K``; the seeds do not interact, each has its
own data, initialisation, shuffling and stopping epoch). A sweep (:func:`run_sweep`) trains every run
alone, so that a saved row is reproduced exactly by rerunning it (:func:`verify_rows`, and the CLI's
``--verify-saved``): the stack's size changes the float32 rounding, which Adam amplifies.

Layout. The package follows the experiment's seams: ``task`` (bits, embeddings, encoding,
radius), ``config`` (the protocols), ``model`` (the network, Keras' initialisation, stacks),
``training``, ``evaluation``, ``bounds`` (every call into :mod:`genbound.bounds`),
``runs`` (records, one ``T``, a sweep), ``files`` (the results file, merging and recomputing bound
columns), ``verify`` (rerunning saved rows) and ``summaries`` (per-length intervals, slopes, the
lack-of-fit test, the learning regimes, the capacity floor, the figure). Every public name is importable from the package itself.

>>> task = make_task(12, seed=0)
>>> bits, y = task.sample(4, torch.Generator().manual_seed(1))
>>> bits.shape, task.embed(bits).shape
(torch.Size([4, 12]), torch.Size([4, 13, 64]))
>>> bool((y == (bits[:, task.positions].sum(1) >= 5).long()).all())
True
>>> [round(float(v), 12) for v in task.embeddings.abs().sum(1)]
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import torch

from .bounds import (
    M_STAR_TARGET,
    bound_fields,
    bound_results,
    bounds_for,
    capacity_fields,
    row_bound_fields,
    sample_size_needed,
    saved_norms,
    spectral_measures,
)
from .config import PROTOCOLS, SparseMajorityConfig
from ...positional import (
    D_MODEL,
    chain_sum_sup,
    encoding_norm_sq_by_chains,
    encoding_rows,
    encoding_supremum,
    sinusoidal_encoding,
    uniform_input_radius,
)
from .evaluation import bce_one_hot, evaluate_stack, ramp_risk
from .files import (
    merge_sweeps,
    recompute_bound_columns,
    SAVED_SWEEP,
    OTHER_KIND_SWEEP,
    SCHEMA,
    csv_columns,
    open_sweep,
    read_csv,
    read_sweep,
    write_csv,
)
from .model import (
    _PARAM_NAMES,
    build_model,
    cls_logits,
    keras_init_,
    load_stacked,
    stack_parameters,
)
from .verify import (
    NOT_COMPARED,
    ReproductionCase,
    RowCheck,
    config_of,
    parse_row_keys,
    pick_rows,
    reproduction_case,
    verify_rows,
    compare_draws,
)
from . import runs
from .data import regenerate_data
from .runs import RESULT_KEYS, RunResult, initial_model, run_seq_len, run_sweep
from .summaries import (
    REGIMES,
    capacity_floor,
    gap_slope,
    geometric_means,
    lack_of_fit,
    matched_pairs,
    per_length_means,
    plot_sweep,
    radius_prior_nats,
    rank_correlation,
    regime_label,
    summarize,
    to_frame,
)
from .baselines import (
    expected_test_max_one_bit,
    one_bit_baselines,
    one_bit_expectation,
)
from .task import (
    D_HEAD,
    N_HEADS,
    S_RELEVANT,
    SparseMajorityTask,
    _check_task,
    make_task,
    token_embeddings,
)
from .training import TrainOutcome, tensors_for, train_adam, train_stack

__all__ = [
    "D_MODEL",
    "N_HEADS",
    "D_HEAD",
    "S_RELEVANT",
    "RESULT_KEYS",
    "sinusoidal_encoding",
    "encoding_rows",
    "token_embeddings",
    "uniform_input_radius",
    "PROTOCOLS",
    "SparseMajorityTask",
    "make_task",
    "SparseMajorityConfig",
    "build_model",
    "keras_init_",
    "stack_parameters",
    "load_stacked",
    "cls_logits",
    "bce_one_hot",
    "evaluate_stack",
    "ramp_risk",
    "bound_results",
    "bounds_for",
    "capacity_fields",
    "spectral_measures",
    "bound_fields",
    "gap_slope",
    "sample_size_needed",
    "TrainOutcome",
    "train_stack",
    "RunResult",
    "initial_model",
    "run_seq_len",
    "run_sweep",
    "SCHEMA",
    "csv_columns",
    "open_sweep",
    "write_csv",
    "read_csv",
    "read_sweep",
    "SAVED_SWEEP",
    "to_frame",
    "summarize",
    "plot_sweep",
    "M_STAR_TARGET",
    "saved_norms",
    "row_bound_fields",
    "NOT_COMPARED",
    "RowCheck",
    "ReproductionCase",
    "reproduction_case",
    "config_of",
    "parse_row_keys",
    "pick_rows",
    "verify_rows",
    "compare_draws",
    "OTHER_KIND_SWEEP",
    "per_length_means",
    "lack_of_fit",
    "REGIMES",
    "regime_label",
    "geometric_means",
    "rank_correlation",
    "one_bit_baselines",
    "one_bit_expectation",
    "expected_test_max_one_bit",
    "regenerate_data",
    "capacity_floor",
    "matched_pairs",
    "radius_prior_nats",
    "merge_sweeps",
    "recompute_bound_columns",
    "encoding_supremum",
    "chain_sum_sup",
    "encoding_norm_sq_by_chains",
]
