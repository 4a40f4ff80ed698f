"""Every bound the sparse-majority experiment reports, in one place: the Part II theorems evaluated by
:mod:`genbound.bounds` on a trained network (part of :mod:`genbound.experiments.sparse_majority`;
:mod:`genbound.experiments.predict_gap` uses it too). Nothing here re-assembles a bound: each number
is a field of a result of :mod:`genbound.bounds`, except the two fixed-index sums of
:func:`spectral_measures`, which add up the per-matrix terms of a spectrum-adaptive report.

This is the one module of the experiments that calls :mod:`genbound.bounds`, so that what the
experiments report (``value``, ``trivial``, ``capacity``, ``samples_needed``) changes here."""

from __future__ import annotations

import math

#: The target of every ``m*`` the experiments report: the smallest ``m`` at which a bound reaches 1/2.
M_STAR_TARGET = 0.5

__all__ = ["M_STAR_TARGET", "saved_norms", "row_bound_fields", "bound_results", "bounds_for", "bound_fields",
           "sample_size_needed", "spectral_measures", "capacity_fields"]


def bound_results(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
                  radius_grid: bool = True):
    """The two Part II bound results of ``net`` (float64), as :mod:`genbound.bounds` returns them:
    :func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound_from_model` and
    :func:`~genbound.bounds.edelman.edelman_bound_from_model` (the latter for ``seq_len + 1`` rows,
    the ``[CLS]`` row included), with ``m`` training sequences, input radius ``B_X``, confidence
    ``delta``, ramp ``margin`` and, with ``radius_grid`` (default), the union over a grid of radii of
    :prf:ref:`thm-radius-union` (valid at norms read off a trained network)."""
    from ...bounds.edelman import edelman_bound_from_model
    from ...bounds.trauger_tewari import trauger_tewari_bound_from_model

    tt = trauger_tewari_bound_from_model(net, m=m, delta=delta, B_X=B_X, margin=margin,
                                         radius_grid=radius_grid)
    ed = edelman_bound_from_model(net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin,
                                  radius_grid=radius_grid)
    return tt, ed


def bounds_for(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
               radius_grid: bool = True) -> tuple[float, float]:
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
    tt, ed = bound_results(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin,
                           radius_grid=radius_grid)
    return tt.value, ed.value


def sample_size_needed(net, *, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
                       target: float = 0.5, max_log10: float = 40.0, tol: float = 0.05,
                       radius_grid: bool = True) -> tuple[float, float]:
    """``m*``: the smallest sample size at which each bound (Trauger-Tewari, Edelman-type), evaluated
    with ``net``'s norms **held fixed**, falls to ``target``; bisection on ``log10 m`` to ``tol`` decades
    (the returned ``m*`` satisfies the target; ``m* / 10**tol`` does not): the results'
    ``samples_needed``.

    With ``radius_grid`` (default) the bounds are those of :prf:ref:`thm-radius-union`, so that a
    network trained on ``m*`` samples with these norms would carry the guarantee. Returns two floats
    (``inf`` when not reached by ``10**max_log10``).
    """
    results = bound_results(net, m=2, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin,
                            radius_grid=radius_grid)
    tt, ed = (r.samples_needed(target, tol=tol, limit=int(10**max_log10)) for r in results)
    return float(tt), float(ed)


def bound_fields(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
                 radius_grid: bool = True, m_star_target: float | None = None) -> dict:
    """What each Part II bound says at ``m``, flat for a results row: ``{tt,edelman}_bound`` (the
    certified value, with the union over the grid of radii when ``radius_grid``), ``_trivial`` (that
    value is the trivial cap), ``_capacity`` and, with ``m_star_target``, ``_m_star`` (``samples_needed``
    of the certified bound, exact).

    ``_capacity`` is the m-free complexity **at the network's own norms** (the ``capacity`` of the
    result without the radius grid): the grid rounds every radius up to a power of 2, so networks with
    different norms would share the capacity of one grid point; the capacity is free of ``delta``, so
    the grid's prior does not enter it, and the rounding changes it by less than a factor 2 per radius."""
    out = {}
    certified = bound_results(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin,
                              radius_grid=radius_grid)
    own = (certified if not radius_grid else
           bound_results(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin, radius_grid=False))
    for name, r, r_own in zip(("tt", "edelman"), certified, own):
        out[f"{name}_bound"], out[f"{name}_trivial"], out[f"{name}_capacity"] = r.value, r.trivial, r_own.capacity
        if m_star_target is not None:
            out[f"{name}_m_star"] = float(r.samples_needed(m_star_target))
    return out


def spectral_measures(net) -> dict:
    """The Part III proxies of ``net`` on its four-matrix form
    (:meth:`~genbound.nets.ReferenceTransformer.proxy_weights`), each from the report that
    :mod:`genbound.bounds.sakai_imaizumi` returns:

    * ``spectral_adaptive``: ``value`` of :func:`~genbound.bounds.sakai_imaizumi.spectral_adaptive_bound`
      (the Schatten index chosen per matrix);
    * ``spectral_p0``, ``spectral_pmax``: the same report's per-matrix terms ``exp(log_terms)`` at the
      smallest (rank) and the largest index of its grid, summed, plus ``sqrt(L)`` (the sum that
      ``value`` minimises per matrix, read at one fixed index);
    * ``edelman_proxy``: ``value`` of :func:`~genbound.bounds.sakai_imaizumi.edelman_proxy`.
    """
    from ...bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound

    W = net.proxy_weights()
    sa = spectral_adaptive_bound(W, L_phi=net.L_sigma)
    lt = sa.log_terms

    def at(j):      # the fixed-index sum of the report (a candidate for a report method in bounds/)
        return float(lt[:, j].exp().sum()) + math.sqrt(sa.n_layers)

    return {"spectral_adaptive": sa.value, "spectral_p0": at(0), "spectral_pmax": at(lt.shape[1] - 1),
            "edelman_proxy": edelman_proxy(W, L_phi=net.L_sigma).value}


def saved_norms(row: dict):
    """The :class:`~genbound.nets.ModelNorms` of a saved run (its ``norms_json`` column)."""
    from ...nets import ModelNorms

    return ModelNorms.from_json(row["norms_json"])


def row_bound_fields(row: dict, config) -> dict:
    """Every bound column of a saved run recomputed from its saved norms alone (no weights, no
    training): :func:`bound_fields` of :func:`saved_norms` with the run's ``m``, ``T`` and input radius
    and the configuration's ``delta``, margin and ``m*`` target: the same code that produced the
    columns from the trained network."""
    return bound_fields(saved_norms(row), m=int(row["n_train"]), seq_len=int(row["seq_len"]),
                        delta=config.delta, B_X=float(row["input_radius"]), margin=config.margin,
                        m_star_target=M_STAR_TARGET if config.m_star else None)


def capacity_fields(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0) -> dict:
    """What Part V ranks and reports of each bound of ``net`` (a ``ReferenceTransformer`` of any depth),
    flat for a results row; every number is a field of a result of :mod:`genbound.bounds`:

    * ``tt_capacity``, ``tt_bound``, ``tt_trivial``: ``capacity``, ``value`` and ``trivial`` of the
      Trauger-Tewari bound (:prf:ref:`thm-tt-multilayer`, radius grid, at ``m``, ``delta``, ``margin``).
      These capacities are those of the certified result, **at the grid radii** (every radius rounded
      up to a power of 2), so models whose norms round to one grid point share a capacity (a tie, which
      counts 0 in Kendall's tau); :func:`bound_fields` (Part II) reports the capacity at the network's
      own norms instead. The saved Part V family was measured with this definition;
    * ``edelman_capacity``, ``edelman_bound``, ``edelman_trivial``: the same of the Edelman-type bound,
      defined for one layer only: ``nan`` for deeper networks (``edelman_trivial`` is then ``nan`` too,
      else ``1.0``/``0.0``);
    * ``sa_capacity``, ``sa_trivial``: the spectrum-adaptive proxy's ``capacity`` and ``trivial`` at
      ``n_samples = m``; ``sa_all_p0``: the chosen Schatten index is 0 (the rank) for every matrix;
    * ``edproxy_capacity``, ``edproxy_trivial``: the Edelman proxy's;
    * ``spectral_adaptive``, ``spectral_p0``, ``spectral_pmax``: :func:`spectral_measures` (the proxy's
      value with the index chosen per matrix and the two fixed-index sums).
    """
    from ...bounds.edelman import edelman_bound_from_model
    from ...bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound
    from ...bounds.trauger_tewari import trauger_tewari_bound_from_model

    tt = trauger_tewari_bound_from_model(net, m=m, delta=delta, B_X=B_X, margin=margin, radius_grid=True)
    out = {"tt_capacity": tt.capacity, "tt_bound": tt.value, "tt_trivial": bool(tt.trivial)}
    if net.n_layers == 1:
        ed = edelman_bound_from_model(net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin,
                                      radius_grid=True)
        out.update(edelman_capacity=ed.capacity, edelman_bound=ed.value, edelman_trivial=float(ed.trivial))
    else:
        out.update(edelman_capacity=math.nan, edelman_bound=math.nan, edelman_trivial=math.nan)
    W = net.proxy_weights()
    sa = spectral_adaptive_bound(W, L_phi=net.L_sigma, n_samples=m)
    ep = edelman_proxy(W, L_phi=net.L_sigma, n_samples=m)
    out.update(sa_capacity=sa.capacity, sa_trivial=bool(sa.trivial),
               sa_all_p0=bool((sa.table["p_opt"] == 0).all()),
               edproxy_capacity=ep.capacity, edproxy_trivial=bool(ep.trivial))
    out.update(spectral_measures(net))
    return out
