"""Part V: do the bounds rank trained transformers by their generalization gap? Book: :ref:`ch-predict-gap`.

A **family** of :class:`~genbound.nets.ReferenceTransformer` models (the class on which every bound of
the book is defined) is trained as a full factorial over the axes ``AXES`` (depth, width, peak
learning rate, training-set size), with coupled seed indices, on two tasks (``TASKS``): sparse
majority (Part II) and scikit-learn's bundled 8x8 digits read as a sequence of eight pixel rows. Each
model is scored by the measures of ``MEASURES`` (bound capacities in four forms, the
spectrum-adaptive choice, baselines) and the statistics of :mod:`genbound.experiments.ranking` rank
them against the measured gap (:func:`summary`, :func:`measure_table`).

Layout, along the experiment's seams: ``family`` (configuration, tasks, coupling, model), ``measures``
(what is ranked and what is only reported), ``training`` (the stacks and the results file),
``statistics`` (the tables and the JSON summary), ``report`` (what the chapter shows).

>>> AXES, len(TASKS), "tt_cap" in MEASURES
(('depth', 'width', 'lr', 'n_train'), 2, True)
"""

from .family import AXES, TASKS, FamilyConfig, TaskData, build_model, init_seed, make_task_data
from .measures import (BASELINES, BOUNDS, CAPACITIES, CAPACITY_FORMS, DEPTH1_ONLY, MEASURES, REPORTED, SPECTRAL,
                       magnitude_flatness, measures_for, multiclass_margins)
from .report import (DASH, fmt, interval, noise_table, plot_measures_vs_gap, rank_table, stratified_taus,
                     trivial_shares)
from .statistics import (axes_of, fitted_models, measure_frame, measure_stats, measure_table, paired_gap_changes,
                         psi_bootstrap, summary, REFERENCE)
from .training import (SAVED_FAMILY, SCHEMA, ModelRecord, undefined_allowed, open_family, read_family, run_family,
                       train_setting)

__all__ = ["AXES", "TASKS", "FamilyConfig", "TaskData", "build_model", "init_seed", "make_task_data",
           "BASELINES", "BOUNDS", "CAPACITIES", "CAPACITY_FORMS", "DEPTH1_ONLY", "MEASURES", "REPORTED", "SPECTRAL",
           "magnitude_flatness", "measures_for", "multiclass_margins",
           "axes_of", "fitted_models", "measure_frame", "measure_stats", "measure_table", "paired_gap_changes",
           "psi_bootstrap", "summary", "REFERENCE",
           "DASH", "fmt", "interval", "noise_table", "plot_measures_vs_gap", "rank_table", "stratified_taus",
           "trivial_shares",
           "SAVED_FAMILY", "SCHEMA", "ModelRecord", "undefined_allowed", "open_family", "read_family", "run_family",
           "train_setting"]
