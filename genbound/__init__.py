"""genbound: generalization bounds for transformers, evaluated on real weights.

The package behind the genbound book. Data flows one way::

    checkpoint / nn.Module -> weights -> spectra -> norms -> bounds -> report

Submodules are imported on first use, so ``import genbound`` stays light (it never imports jupyter or
matplotlib) and works without them; a name whose module needs a package that is not installed raises
``AttributeError`` naming the package and how to install it (so ``help(genbound)`` lists the rest).
Every error genbound raises on purpose is a :class:`GenboundError`.

``genbound.network_bound(model)`` evaluates theorem P, the bound Part III proves;
``genbound.analyze(model)`` headlines it beside both Part III proxies of a model (a checkpoint folder, a
``torch.nn.Module``, a state dict with its config): :func:`genbound.analysis.api.analyze`.

>>> import genbound
>>> genbound.schatten_power([3.0, 4.0], 2).item()
25.0
"""

from __future__ import annotations

import importlib

from .errors import (
    ArchitectureError,
    CheckpointError,
    DeviceError,
    GenboundError,
    InputError,
    NonFiniteError,
    ParameterError,
    ShapeError,
)

__version__ = "0.1.0"

# public name -> module that defines it (imported lazily, PEP 562)
_LAZY = {
    # spectra and norms
    "singular_values": "genbound.spectra",
    "product_singular_values": "genbound.spectra",
    "numerical_rank": "genbound.spectra",
    "rank_threshold": "genbound.spectra",
    "threshold_spectrum": "genbound.spectra",
    "schatten_power": "genbound.norms",
    "log_schatten_power": "genbound.norms",
    "schatten_norm": "genbound.norms",
    "spectral_norm": "genbound.norms",
    "frobenius_norm": "genbound.norms",
    "nuclear_norm": "genbound.norms",
    "stable_rank": "genbound.norms",
    "group_norm": "genbound.norms",
    "norm_21": "genbound.norms",
    "norm_11": "genbound.norms",
    "resolve_device": "genbound.device",
    # Part II: the reference transformer and the sequence-length-independent bounds
    "ReferenceTransformer": "genbound.nets",
    "trauger_tewari_bound": "genbound.bounds.trauger_tewari",
    "trauger_tewari_bound_from_model": "genbound.bounds.trauger_tewari",
    "edelman_bound": "genbound.bounds.edelman",
    "edelman_bound_from_model": "genbound.bounds.edelman",
    "LayerRadii": "genbound.bounds.trauger_tewari",
    "TTBound": "genbound.bounds.trauger_tewari",
    "EdelmanLayerRadii": "genbound.bounds.edelman",
    "EdelmanBound": "genbound.bounds.edelman",
    # Part I: the learning-theory toolkit
    "generalization_gap_bound": "genbound.rademacher",
    "dudley_bound": "genbound.rademacher",
    "dudley_inverse_square": "genbound.rademacher",
    "dudley_parametric": "genbound.rademacher",
    "DudleyResult": "genbound.rademacher",
    "empirical_rademacher_linear": "genbound.rademacher",
    "allocate_scales": "genbound.covering",
    "maurey_log_cover": "genbound.covering",
    "zhang_log_cover": "genbound.covering",
    # Part III: weights and the spectrum-adaptive bound
    "TransformerWeights": "genbound.weights",
    "load_weights": "genbound.weights",
    "network_bound": "genbound.checkpoint_bounds",
    "spectral_adaptive_bound": "genbound.checkpoint_bounds",
    "edelman_proxy": "genbound.checkpoint_bounds",
    "Spectra": "genbound.weights",
    "make_bert_checkpoint": "genbound.testing",
    "per_matrix_term": "genbound.schatten_entropy",
    "spectral_count_minimum": "genbound.schatten_entropy",
    # the app floor: a model's two Part III proxies (the ``genbound analyze`` command's library entry)
    "analyze": "genbound.analysis.api",
}

_SUBMODULES = {
    "spectra",
    "norms",
    "device",
    "claims",
    "symbolic",
    "rademacher",
    "covering",
    "bounds",
    "nets",
    "weights",
    "experiments",
    "plotting",
    "cli",
    "analysis",
}

__all__ = [
    "GenboundError",
    "InputError",
    "ShapeError",
    "NonFiniteError",
    "ParameterError",
    "ArchitectureError",
    "CheckpointError",
    "DeviceError",
    "__version__",
    *_LAZY,
]


def _import(module: str, name: str):
    """``importlib.import_module(module)``; a missing third-party package becomes ``AttributeError``
    naming it (so that ``help(genbound)`` and ``dir`` walks skip the name instead of failing)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] == "genbound":
            raise
        from .errors import MissingDependencyError

        err = MissingDependencyError.of(exc.name, f"genbound.{name}")
        raise AttributeError(str(err), name=name, obj=None) from exc


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import(_LAZY[name], name), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return _import(f"genbound.{name}", name)
    raise AttributeError(f"module 'genbound' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)
