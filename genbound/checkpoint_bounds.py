"""The Part III proxies of a checkpoint: load, then call the pure functions of :mod:`genbound.bounds`.

:func:`genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
:func:`~genbound.bounds.sakai_imaizumi.edelman_proxy` are pure functions of
:class:`~genbound.weights.TransformerWeights` or :class:`~genbound.weights.Spectra` and never read a file.
The functions here, exported as ``genbound.network_bound`` (theorem P, the proved bound),
``genbound.spectral_adaptive_bound`` and ``genbound.edelman_proxy``, also
accept anything :func:`genbound.weights.load_weights` reads (a checkpoint folder, a ``torch.nn.Module``),
load it, and pass it on with the same keyword arguments. ``genbound analyze`` (:mod:`genbound.analysis`) is
the command-line form.

>>> import tempfile
>>> from genbound.testing import make_bert_checkpoint
>>> with tempfile.TemporaryDirectory() as d:
...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
...     r = spectral_adaptive_bound(d, device="cpu")
>>> len(r.table), r.trivial is None
(12, True)
"""

from __future__ import annotations

from .bounds import network as _net
from .bounds import sakai_imaizumi as _si
from .weights import Spectra, TransformerWeights, load_weights

__all__ = ["network_bound", "spectral_adaptive_bound", "edelman_proxy", "as_weights"]


def as_weights(source):
    """``source`` itself when it is :class:`~genbound.weights.TransformerWeights` or
    :class:`~genbound.weights.Spectra`, else :func:`genbound.weights.load_weights` of it."""

    if isinstance(source, (TransformerWeights, Spectra)):
        return source
    return load_weights(source)


def network_bound(weights, n_samples=None, **kwargs) -> _net.NetworkBound:
    """:func:`genbound.bounds.network.network_bound` (theorem P, the proved bound) of
    :func:`as_weights` ``(weights)`` (same arguments)."""
    return _net.network_bound(as_weights(weights), n_samples, **kwargs)


def spectral_adaptive_bound(weights, **kwargs) -> _si.SpectralBoundReport:
    """:func:`genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` of :func:`as_weights` ``(weights)``
    (same keyword arguments)."""
    return _si.spectral_adaptive_bound(as_weights(weights), **kwargs)


def edelman_proxy(weights, **kwargs) -> _si.EdelmanProxyReport:
    """:func:`genbound.bounds.sakai_imaizumi.edelman_proxy` of :func:`as_weights` ``(weights)`` (same keywords)."""
    return _si.edelman_proxy(as_weights(weights), **kwargs)
