"""What the experiments report of every bound, in one neutral place (both experiments use it: Part II's
sparse-majority sweep and Part V's family). Nothing here re-assembles a bound: each number is a field
of a result of :mod:`genbound.bounds`, except the two fixed-index sums of :func:`spectral_measures`,
which add up the per-matrix terms of a spectrum-adaptive report.

This is the one module of the experiments that calls :mod:`genbound.bounds`, so that what the
experiments report (``value``, ``trivial``, ``capacity``, ``samples_needed``) changes here; a row's Part II
bound columns are assembled by :func:`genbound.bounds.rows.bound_fields` (re-exported here), which a claim
checks (:prf:ref:`prop-sm-row-bounds`).
Capacities are the m-free complexities **at the network's own norms** (the result without the radius
grid); certified values are those of the union over the grid of radii."""

from __future__ import annotations

import math

from ..weights import TransformerWeights
from ..bounds.rows import bound_fields, bound_results
from ..weights import Spectra
from ..errors import InputError

#: The target of every ``m*`` the experiments report: the smallest ``m`` at which a bound reaches 1/2.
M_STAR_TARGET = 0.5

__all__ = [
    "M_STAR_TARGET",
    "bound_results",
    "bounds_for",
    "bound_fields",
    "sample_size_needed",
    "spectral_measures",
    "capacity_fields",
    "spectra_to_json",
    "spectra_from_json",
]


def bounds_for(
    net,
    *,
    m: int,
    seq_len: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    radius_grid: bool = True,
) -> tuple[float, float]:
    """The certified values (``.value``) of the Trauger-Tewari and the Edelman-type bound of ``net``
    (:func:`bound_results`); returns two floats.

    Each bounds ``P[error] - (empirical ramp risk at margin)`` with probability ``1 - delta``: it is
    ``2 R + 3 sqrt(log(2/delta') / (2m))`` with ``R`` Dudley's bound on the Rademacher complexity of the
    ramp-loss class, capped at the trivial ``R <= 1/2`` as :mod:`genbound.bounds` computes it (so two
    bounds that both reach the cap read the same trivial value, up to their ``delta'``). With
    ``radius_grid`` (default) every radius is rounded up to a power of 2 and ``delta' = delta prod
    pi(i_j)`` (:prf:ref:`thm-radius-union`); without it, ``delta' = delta`` and the radii are the
    network's own norms (valid only for radii fixed in advance). Anything above 1 is vacuous.
    """
    tt, ed = bound_results(
        net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin, radius_grid=radius_grid
    )
    return tt.value, ed.value


def sample_size_needed(
    net,
    *,
    seq_len: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    target: float = 0.5,
    max_log10: float = 40.0,
    tol: float = 0.05,
    radius_grid: bool = True,
) -> tuple[float, float]:
    """``m*``: the smallest sample size at which each bound (Trauger-Tewari, Edelman-type), evaluated
    with ``net``'s norms **held fixed**, falls to ``target``; bisection on ``log10 m`` to ``tol`` decades
    (the returned ``m*`` satisfies the target; ``m* / 10**tol`` does not): the results'
    ``samples_needed``.

    With ``radius_grid`` (default) the bounds are those of :prf:ref:`thm-radius-union`, so that a
    network trained on ``m*`` samples with these norms would carry the guarantee. Returns two floats
    (``inf`` when not reached by ``10**max_log10``).
    """
    results = bound_results(
        net, m=2, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin, radius_grid=radius_grid
    )
    tt, ed = (r.samples_needed(target, tol=tol, limit=int(10**max_log10)) for r in results)
    return float(tt), float(ed)


def spectral_measures(net_or_spectra, *, L_phi: float | None = None) -> dict:
    """The Part III proxies of a network on its four-matrix form
    (:meth:`~genbound.weights.TransformerWeights.of_reference`), or of its saved
    :class:`~genbound.weights.Spectra` (then ``L_phi`` is required), each from the report that
    :mod:`genbound.bounds.sakai_imaizumi` returns:

    * ``spectral_adaptive``: ``value`` of :func:`~genbound.bounds.sakai_imaizumi.spectral_adaptive_bound`
      (the Schatten index chosen per matrix);
    * ``spectral_p0``, ``spectral_pmax``: the same report's per-matrix terms ``exp(log_terms)`` at the
      smallest (rank) and the largest index of its grid, summed, plus ``sqrt(L)`` (the sum that
      ``value`` minimises per matrix, read at one fixed index);
    * ``edelman_proxy``: ``value`` of :func:`~genbound.bounds.sakai_imaizumi.edelman_proxy`.
    """
    from ..bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound

    sp, L_phi = _spectra_of(net_or_spectra, L_phi)
    sa = spectral_adaptive_bound(sp, L_phi=L_phi)
    lt = sa.log_terms

    def at(j):  # the fixed-index sum of the report (a candidate for a report method in bounds/)
        return float(lt[:, j].exp().sum()) + math.sqrt(sa.n_layers)

    return {
        "spectral_adaptive": sa.value,
        "spectral_p0": at(0),
        "spectral_pmax": at(lt.shape[1] - 1),
        "edelman_proxy": edelman_proxy(sp, L_phi=L_phi).value,
    }


def _spectra_of(net_or_spectra, L_phi):
    """The exact-mode spectra of a network's four-matrix form (and its ``L_sigma``), or saved spectra."""

    if isinstance(net_or_spectra, Spectra):
        if L_phi is None:
            raise TypeError(
                "saved spectra need L_phi (the network's activation Lipschitz constant)"
            )
        return net_or_spectra, float(L_phi)
    return TransformerWeights.of_reference(net_or_spectra).spectra(method="core"), float(
        net_or_spectra.L_sigma
    )


def capacity_fields(
    net,
    *,
    m: int,
    seq_len: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    spectra=None,
    L_phi: float | None = None,
) -> dict:
    """What Part V ranks and reports of each bound of ``net`` (a ``ReferenceTransformer`` of any depth,
    or its saved :class:`~genbound.nets.ModelNorms` together with its saved ``spectra`` and ``L_phi``),
    flat for a results row; every number is a field of a result of :mod:`genbound.bounds`:

    * ``tt_capacity``: the ``capacity`` of the Trauger-Tewari bound (:prf:ref:`thm-tt-multilayer`) **at
      the network's own norms** (the result without the radius grid: the grid rounds every radius up to
      a power of 2, so networks with different norms would share one capacity); ``tt_bound``,
      ``tt_trivial``: the certified ``value`` and ``trivial`` (radius grid, at ``m``, ``delta``, ``margin``);
    * ``edelman_capacity``, ``edelman_bound``, ``edelman_trivial``: the same of the Edelman-type bound,
      defined for one layer only: ``nan`` for deeper networks (``edelman_trivial`` is then ``nan`` too,
      else ``1.0``/``0.0``);
    * ``sa_capacity``, ``sa_trivial``: the spectrum-adaptive proxy's ``capacity`` and ``trivial`` at
      ``n_samples = m``; ``sa_all_p0``: the chosen Schatten index is 0 (the rank) for every matrix;
    * ``edproxy_capacity``, ``edproxy_trivial``: the Edelman proxy's;
    * ``spectral_adaptive``, ``spectral_p0``, ``spectral_pmax``: :func:`spectral_measures`.

    The spectrum-adaptive numbers read the exact-mode :class:`~genbound.weights.Spectra` of the
    network's four-matrix form, computed once (or the saved ones): a file that stores them and the
    :class:`~genbound.nets.ModelNorms` recomputes every column here without the weights.
    """
    from ..bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound

    bf = bound_fields(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin)
    out = {
        "tt_capacity": bf["tt_capacity"],
        "tt_bound": bf["tt_bound"],
        "tt_trivial": bool(bf["tt_trivial"]),
        "edelman_capacity": bf["edelman_capacity"],
        "edelman_bound": bf["edelman_bound"],
        "edelman_trivial": float(bf["edelman_trivial"]),
    }
    sp, L_phi = _spectra_of(net if spectra is None else spectra, L_phi)
    sa = spectral_adaptive_bound(sp, L_phi=L_phi, n_samples=m)
    ep = edelman_proxy(sp, L_phi=L_phi, n_samples=m)
    out.update(
        sa_capacity=sa.capacity,
        sa_trivial=bool(sa.trivial),
        sa_all_p0=bool((sa.table["p_opt"] == 0).all()),
        edproxy_capacity=ep.capacity,
        edproxy_trivial=bool(ep.trivial),
    )
    out.update(spectral_measures(sp, L_phi=L_phi))
    return out


_SPECTRA_TENSORS = (
    "qk",
    "v",
    "m_in",
    "m_out",
    "qk_norm21",
    "v_norm21",
    "m_in_norm21",
    "m_out_norm21",
)


def spectra_to_json(sp) -> str:
    """A :class:`~genbound.weights.Spectra` as one JSON line (float64 values written with ``repr``, so
    :func:`spectra_from_json` gives back the same numbers bit for bit; the routes are not kept).

    >>> import torch
    >>> from genbound.nets import ReferenceTransformer
    >>> sp = TransformerWeights.of_reference(ReferenceTransformer(4, seed=0)).spectra(method="core")
    >>> back = spectra_from_json(spectra_to_json(sp))
    >>> all(bool(torch.equal(getattr(back, f), getattr(sp, f).double())) for f in _SPECTRA_TENSORS)
    True
    """
    import json

    import torch

    d = {
        f: getattr(sp, f).detach().to("cpu", dtype=torch.float64).tolist() for f in _SPECTRA_TENSORS
    }
    d.update(hidden=int(sp.hidden), d_ff=int(sp.d_ff), method=str(sp.method))
    return json.dumps(d, separators=(",", ":"))


def spectra_from_json(text: str):
    """The :class:`~genbound.weights.Spectra` written by :func:`spectra_to_json` (float64, CPU)."""
    import json

    import torch

    try:
        d = json.loads(text)
        kw = {f: torch.tensor(d[f], dtype=torch.float64) for f in _SPECTRA_TENSORS}
        return Spectra(**kw, hidden=int(d["hidden"]), d_ff=int(d["d_ff"]), method=str(d["method"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"saved spectra are not readable: {exc}") from None
