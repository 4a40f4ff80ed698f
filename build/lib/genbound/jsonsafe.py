"""The one non-finite-float policy of every JSON the package writes: ``inf``, ``-inf`` and ``nan`` become ``null``.

Strict JSON has no infinities. Every ``to_dict``/``--json`` in the package (bound results, claims results,
experiment records) passes its floats through :func:`json_float` or whole trees through :func:`json_tree`,
so a reader meets one rule: a number, or ``null`` where the float was not finite. Where the size of an
overflowing value matters, the record carries its finite logarithm beside it (``log_capacity``,
``edelman_log``).

>>> json_float(1.5), json_float(float("inf")), json_float(float("nan")), json_float(3)
(1.5, None, None, 3)
>>> json_tree({"a": [1.0, float("-inf")], "b": (float("nan"), "x"), "c": None, "d": True})
{'a': [1.0, None], 'b': [None, 'x'], 'c': None, 'd': True}
"""

from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = ["json_float", "json_tree"]


def json_float(x):
    """``x`` when it is a finite real (a ``bool`` or integer stays one, a numpy/torch float scalar becomes a
    Python ``float``), ``None`` when it is ``inf``, ``-inf`` or ``nan``; ``None``, strings and other objects
    are returned unchanged.

    >>> import numpy as np
    >>> json_float(np.float32(0.5)), json_float(np.int64(7)), json_float(np.bool_(True)), json_float("inf")
    (0.5, 7, True, 'inf')
    """
    if x is None or isinstance(x, bool):
        return x
    if getattr(getattr(x, "dtype", None), "kind", None) == "b":  # a numpy boolean
        return bool(x)
    if isinstance(x, Integral):
        return int(x)
    if isinstance(x, Real) or hasattr(x, "__float__"):
        f = float(x)
        return f if math.isfinite(f) else None
    return x


def json_tree(obj):
    """:func:`json_float` applied to every number of nested dicts, lists and tuples (tuples become lists);
    strings and other leaves are returned unchanged."""
    if isinstance(obj, dict):
        return {k: json_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_tree(v) for v in obj]
    if isinstance(obj, str):
        return obj
    return json_float(obj)
