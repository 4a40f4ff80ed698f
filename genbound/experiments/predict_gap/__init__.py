"""Part V: do the bounds rank trained transformers by their generalization gap? Book: :ref:`ch-predict-gap`.

A **family** of :class:`~genbound.nets.ReferenceTransformer` models (the class on which every bound of
the book is defined) is trained as a full factorial over the axes ``AXES`` (depth, width, peak
learning rate, mini-batch size, weight decay, initialisation scale, label noise, training-set size;
the saved family varies depth, width, initialisation scale, label noise and training-set size), with
coupled seed indices, on two tasks (``TASKS``): sparse
majority (Part II) and scikit-learn's bundled 8x8 digits read as a sequence of eight pixel rows. Each
model is scored by the measures of ``MEASURES`` (bound capacities in four forms, the
spectrum-adaptive choice, baselines) and the statistics of :mod:`genbound.experiments.ranking` rank
them against the measured gap (:func:`summary`, :func:`measure_table`).

Layout, along the experiment's seams: ``family`` (configuration, tasks, coupling, model), ``measures``
(what is ranked and what is only reported), ``training`` (the stacks and the results file),
``statistics`` (the tables and the JSON summary), ``verdict`` (the registered tests, on matched
models), ``baselines`` (measures that know only the
hyperparameters), ``nulls`` (random measures, and the index that evaluates the statistics fast),
``report`` (what the chapter shows).

>>> AXES, len(TASKS), "tt_cap" in MEASURES
(('depth', 'width', 'lr', 'batch', 'weight_decay', 'init_scale', 'label_noise', 'input_flip', 'n_train'), 2, True)
"""

from .baselines import HP_FIXED, baseline_names, hp_baselines, hp_features
from .confounds import (
    MERGED_NORMS,
    RADIUS_FIXED,
    merged_norm_products,
    paired_differences,
    radius_fixed_capacities,
    seed_permutation_null,
)
from .family import (
    AXES,
    TASKS,
    FamilyConfig,
    TaskData,
    batch_seed,
    build_model,
    corrupt_inputs,
    corrupt_labels,
    flip_seed,
    init_seed,
    make_task_data,
    task_shape,
)
from .measures import (
    BASELINES,
    BOUNDS,
    CAPACITIES,
    CAPACITY_FORMS,
    DEPTH1_ONLY,
    MEASURES,
    REPORTED,
    SPECTRAL,
    magnitude_flatness,
    measures_for,
    multiclass_margins,
)
from .report import (
    DASH,
    fmt,
    interval,
    noise_table,
    null_table,
    plot_measures_vs_gap,
    plot_psi_heatmap,
    verdict_table,
    rank_table,
    stratified_taus,
    trivial_shares,
)
from .nulls import NULL_STATS, RankingIndex, beyond_null, null_percentiles, null_statistics
from .statistics import (
    axes_of,
    balanced_models,
    bootstrap_p,
    family_frame,
    fitted_models,
    m_dependent,
    measure_frame,
    measure_stats,
    measure_table,
    normal_p,
    null_p,
    paired_gap_changes,
    psi_bootstrap,
    summary,
    present_baselines,
)
from .verdict import (
    PLAIN_NORMS,
    STEPS,
    VERDICT_BOUNDS,
    matched_difference,
    seed_view,
    verdict_tests,
)
from .training import (
    EARLIER_FAMILY_MOVES,
    PILOTS,
    SAVED_FAMILY,
    SCHEMA,
    ModelRecord,
    family_config,
    merge_family,
    read_pilot,
    recompute_measures,
    undefined_allowed,
    open_family,
    read_family,
    run_family,
    train_setting,
    train_stack,
)

__all__ = [
    "AXES",
    "TASKS",
    "FamilyConfig",
    "TaskData",
    "build_model",
    "init_seed",
    "make_task_data",
    "batch_seed",
    "task_shape",
    "corrupt_labels",
    "corrupt_inputs",
    "flip_seed",
    "HP_FIXED",
    "hp_baselines",
    "baseline_names",
    "MERGED_NORMS",
    "RADIUS_FIXED",
    "merged_norm_products",
    "paired_differences",
    "radius_fixed_capacities",
    "seed_permutation_null",
    "present_baselines",
    "plot_psi_heatmap",
    "verdict_table",
    "hp_features",
    "NULL_STATS",
    "RankingIndex",
    "beyond_null",
    "null_percentiles",
    "null_statistics",
    "balanced_models",
    "bootstrap_p",
    "family_frame",
    "m_dependent",
    "null_p",
    "normal_p",
    "verdict_tests",
    "matched_difference",
    "seed_view",
    "STEPS",
    "PLAIN_NORMS",
    "VERDICT_BOUNDS",
    "merge_family",
    "family_config",
    "read_pilot",
    "recompute_measures",
    "PILOTS",
    "EARLIER_FAMILY_MOVES",
    "BASELINES",
    "BOUNDS",
    "CAPACITIES",
    "CAPACITY_FORMS",
    "DEPTH1_ONLY",
    "MEASURES",
    "REPORTED",
    "SPECTRAL",
    "magnitude_flatness",
    "measures_for",
    "multiclass_margins",
    "axes_of",
    "fitted_models",
    "measure_frame",
    "measure_stats",
    "measure_table",
    "paired_gap_changes",
    "psi_bootstrap",
    "summary",
    "DASH",
    "fmt",
    "interval",
    "noise_table",
    "null_table",
    "plot_measures_vs_gap",
    "rank_table",
    "stratified_taus",
    "trivial_shares",
    "SAVED_FAMILY",
    "SCHEMA",
    "ModelRecord",
    "undefined_allowed",
    "open_family",
    "read_family",
    "run_family",
    "train_setting",
    "train_stack",
]
