"""Null distributions of the ranking statistics. Book: :ref:`ch-predict-gap`.

A score means something only beyond what a measure that knows nothing would get. A **random measure**
gives every fitted model an independent standard normal value (numpy's ``default_rng(seed)``, one
draw per replicate); :func:`~genbound.experiments.predict_gap.null_statistics` computes every statistic of
:func:`~genbound.experiments.predict_gap.measure_stats` for ``n_null`` such measures on the same
models, and :func:`~genbound.experiments.predict_gap.null_percentiles` summarises them: for the statistics where larger is better
(``tau``, ``psi``, ``psi_wo``, ``psi_seed``, the conditional mutual information ``cmi``) the 95th
percentile, for the sign errors (smaller is better) the 5th. A real measure's value beyond that
percentile is beyond the null at the 5 % level (one-sided, one statistic at a time).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "NULL_STATS",
    "LOWER_IS_BETTER",
    "RankingIndex",
    "null_statistics",
    "null_percentiles",
    "beyond_null",
]

#: The statistics that get a null, in table order.
NULL_STATS = ("tau", "psi", "psi_wo", "psi_seed", "cmi", "se_mean", "se_p90", "se_max")
#: Those where a smaller value is the better one.
LOWER_IS_BETTER = ("se_mean", "se_p90", "se_max")


class RankingIndex:
    """Everything about a family table that the ranking statistics need except the measure: the pairs
    of models each statistic compares, their gap signs and the codes of the conditioning sets. Built
    once, it evaluates the statistics of many measures fast (the null's random measures); the values
    equal those of :mod:`genbound.experiments.ranking` (a test checks it to 1e-12): ``tau`` (tau-a per
    task, mean over tasks), ``psi`` and ``psi_wo`` (Jiang et al.'s granulated coefficient with and
    without the training-set axis), ``psi_seed``, ``cmi`` (``K``, sets of at most two axes) and the sign
    error over environments (mean, 90th percentile, maximum)."""

    def __init__(self, fit, *, axes, gap: str = "gap", max_set: int = 2):
        import itertools

        self.n = len(fit)
        self.axes = list(axes)
        g = fit[gap].to_numpy(float)
        task = fit["task"].to_numpy()
        seed = fit["seed"].to_numpy()
        A = fit[self.axes].to_numpy(float) if self.axes else np.zeros((self.n, 0))
        self._tau = []  # per task: (i, j) ordered pairs, sign(dg)
        self._cmi_pairs = []
        for t in np.unique(task):
            r = np.flatnonzero(task == t)
            i, j = np.where(~np.eye(len(r), dtype=bool))
            self._tau.append((r[i], r[j], np.sign(g[r[i]] - g[r[j]]), len(r)))
        self._groups = {
            a: self._pairs_in_groups(["task", "seed", *[b for b in self.axes if b != a]], fit, g)
            for a in self.axes
        }
        self._seed_groups = self._pairs_in_groups(["task", *self.axes], fit, g)
        # cmi: ordered pairs within a task with g_i != g_j, and the code of U_S for every set S
        I, J, VG, T = [], [], [], []
        for k, (i, j, dg, _) in enumerate(self._tau):
            keep = dg != 0
            I.append(i[keep])
            J.append(j[keep])
            VG.append(dg[keep])
            T.append(np.full(int(keep.sum()), k))
        cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
        self._ci, self._cj = cat(I).astype(np.int64), cat(J).astype(np.int64)
        self._vg = cat(VG).astype(np.int64) + 1
        tcode = cat(T).astype(np.int64)
        lev = {}
        for a in self.axes:
            _, lv = np.unique(A[:, self.axes.index(a)], return_inverse=True)
            lev[a] = lv
        self._codes = []
        for size in range(0, max_set + 1):
            for S in itertools.combinations(self.axes, size):
                code = tcode.copy()
                for a in S:
                    k = int(lev[a].max()) + 1
                    code = (code * k + lev[a][self._ci]) * k + lev[a][self._cj]
                _, code = np.unique(code, return_inverse=True)
                self._codes.append(code.astype(np.int64))
        # sign error: coupled pairs of settings that differ in exactly one axis
        self._env = self._environments(task, seed, A, g)

    @staticmethod
    def _pairs_in_groups(keys, fit, g):
        """Ordered pairs of distinct models within each group of ``keys`` (groups of >= 2 models):
        arrays ``i, j``, ``sign(g_i - g_j)``, the group id of each pair, and the number of groups."""
        I, J, G = [], [], []
        n_groups = 0
        pos = np.arange(len(fit))
        for _, idx in fit.assign(_pos=pos).groupby(keys, sort=True)["_pos"]:
            r = idx.to_numpy()
            if len(r) < 2:
                continue
            i, j = np.where(~np.eye(len(r), dtype=bool))
            I.append(r[i])
            J.append(r[j])
            G.append(np.full(len(i), n_groups))
            n_groups += 1
        if not n_groups:
            return None
        I, J = np.concatenate(I), np.concatenate(J)
        return I, J, np.sign(g[I] - g[J]), np.concatenate(G), n_groups

    def _environments(self, task, seed, A, g):
        I, J, E = [], [], []
        n_env = 0
        for t in np.unique(task):
            r = np.flatnonzero(task == t)
            sett, row = np.unique(A[r], axis=0, return_inverse=True)
            row = row.reshape(-1)
            for a in range(len(sett)):
                for b in range(a + 1, len(sett)):
                    if int((sett[a] != sett[b]).sum()) != 1:
                        continue
                    ra, rb = r[row == a], r[row == b]
                    sa, sb = seed[ra], seed[rb]
                    common, ia, ib = np.intersect1d(sa, sb, return_indices=True)
                    if not len(common):
                        continue
                    I.append(ra[ia])
                    J.append(rb[ib])
                    E.append(np.full(len(common), n_env))
                    n_env += 1
        if not n_env:
            return None
        I, J = np.concatenate(I), np.concatenate(J)
        return I, J, np.sign(g[I] - g[J]), np.concatenate(E), n_env

    def environment_sizes(self) -> np.ndarray:
        """The number of coupled pairs (seed indices fitted in both settings) of each environment of
        the sign error (empty when there is none)."""
        if self._env is None:
            return np.zeros(0, np.int64)
        return np.bincount(self._env[3], minlength=self._env[4])

    @staticmethod
    def _group_mean(mu, grp):
        if grp is None:
            return np.nan
        I, J, sg, gid, n = grp
        prod = np.sign(mu[I] - mu[J]) * sg
        return float(np.mean(np.bincount(gid, prod, minlength=n) / np.bincount(gid, minlength=n)))

    def statistics(self, mu) -> dict:
        """Every statistic of ``NULL_STATS`` for the measure values ``mu`` (one per row of the table)."""
        mu = np.asarray(mu, float)
        taus = [float(np.mean(np.sign(mu[i] - mu[j]) * dg)) for i, j, dg, n in self._tau if n >= 2]
        per = {a: self._group_mean(mu, self._groups[a]) for a in self.axes}
        vals = [v for v in per.values() if np.isfinite(v)]
        rest = [v for a, v in per.items() if np.isfinite(v) and a != "n_train"]
        out = {
            "tau": float(np.mean(taus)) if taus else np.nan,
            "psi": float(np.mean(vals)) if vals else np.nan,
            "psi_wo": float(np.mean(rest)) if rest else np.nan,
            "psi_seed": self._group_mean(mu, self._seed_groups),
            "cmi": self._cmi(mu),
        }
        out.update(self._sign_error(mu))
        return out

    def _cmi(self, mu) -> float:
        if not len(self._vg):
            return np.nan
        vm = np.sign(mu[self._ci] - mu[self._cj]).astype(np.int64) + 1
        n = len(vm)

        def plogp(codes):
            c = np.bincount(codes)
            c = c[c > 0].astype(float)
            return float((c / n * np.log(c / n)).sum())

        best = np.inf
        for u in self._codes:
            h_u, h_um = -plogp(u), -plogp(u * 3 + vm)
            h_ug, h_umg = -plogp(u * 3 + self._vg), -plogp((u * 3 + vm) * 3 + self._vg)
            h = h_ug - h_u
            if h > 1e-15:
                best = min(best, (h_um + h_ug - h_umg - h_u) / h)
        return float(best) if np.isfinite(best) else np.nan

    def _sign_error(self, mu) -> dict:
        if self._env is None:
            return {"se_mean": np.nan, "se_p90": np.nan, "se_max": np.nan}
        I, J, sg, eid, n = self._env
        dm = np.sign(mu[I] - mu[J])
        wrong = np.where((dm == 0) | (sg == 0), 0.5, (dm != sg).astype(float))
        e = np.bincount(eid, wrong, minlength=n) / np.bincount(eid, minlength=n)
        return {
            "se_mean": float(e.mean()),
            "se_p90": float(np.percentile(e, 90)),
            "se_max": float(e.max()),
        }


def null_statistics(fit, *, axes, n_null: int = 200, seed: int = 0):
    """``n_null`` rows, one per random measure, with the columns ``NULL_STATS``, on the fitted models
    ``fit`` (evaluated through one :class:`RankingIndex`)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    index = RankingIndex(fit, axes=axes)
    rows = [index.statistics(rng.standard_normal(len(fit))) for _ in range(int(n_null))]
    return pd.DataFrame(rows, columns=list(NULL_STATS))


def null_percentiles(null) -> dict:
    """Per statistic of ``NULL_STATS``: the 95th percentile of the null (the 5th for the sign errors)."""
    out = {}
    for k in NULL_STATS:
        v = np.asarray(null[k], float)
        v = v[np.isfinite(v)]
        out[k] = (
            float(np.percentile(v, 5 if k in LOWER_IS_BETTER else 95)) if len(v) else float("nan")
        )
    return out


def beyond_null(value: float, stat: str, percentiles: dict) -> bool:
    """Whether ``value`` of statistic ``stat`` lies beyond the null's percentile (strictly)."""
    cut = percentiles[stat]
    return bool(value < cut) if stat in LOWER_IS_BETTER else bool(value > cut)
