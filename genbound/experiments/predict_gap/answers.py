"""The four answers of Part V in one table, from the registered tests and the exploratory checks.
Book: :ref:`ch-predict-gap`.

Words: a difference is a **beat** or a **below** when Holm's adjustment rejects it (its sign says
which), else a **tie**; a tie whose raw interval excludes 0 is flagged as borderline.

>>> word(-0.14, -0.17, -0.11, True), word(-0.05, -0.10, -0.005, False), word(0.02, -0.03, 0.07, False)
('below', 'tie (borderline: interval excludes 0)', 'tie')
"""

from __future__ import annotations

import math

import numpy as np

from .report import fmt, fmt_p, interval

__all__ = ["word", "worst_case_over_tasks", "answers_table", "ANSWER_QUESTIONS"]

#: The four questions, as the table's rows name them.
ANSWER_QUESTIONS = (
    "(1) Does a measure of the weights reach the hyperparameter oracle (Psi, m fixed)?",
    "(2) Does a measure of the weights order the seeds of one setting?",
    "(3) Do the bounds rank better than the plain norm products they are built from?",
    "(4) Does the spectrum-adaptive choice of index help?",
)


def word(est: float, lo: float, hi: float, reject: bool) -> str:
    """``beat`` / ``below`` when the test is rejected (by the sign of ``est``), else ``tie``, flagged as
    borderline when the raw interval ``[lo, hi]`` excludes 0."""
    if reject:
        return "beat" if est > 0 else "below"
    return "tie (borderline: interval excludes 0)" if lo > 0 or hi < 0 else "tie"


def _excl(lo, hi) -> bool:
    return bool(lo > 0 or hi < 0)


def worst_case_over_tasks(tabs: dict, measures, stat: str = "psi_wo"):
    """Per measure of ``measures`` finite in every table of ``tabs`` (a task to its
    :func:`~genbound.experiments.predict_gap.measure_table`), the smallest matched margin over the
    oracle (``d_<stat>``) across the tasks; returns ``(best measure, its worst case, Series)``."""
    import pandas as pd

    ok = [m for m in measures if all(np.isfinite(t.loc[m, f"d_{stat}"]) for t in tabs.values())]
    s = pd.Series({m: min(float(t.loc[m, f"d_{stat}"]) for t in tabs.values()) for m in ok})
    return s.idxmax(), float(s.max()), s


def _oracle(tests):
    r = tests[(tests["question"] == "oracle") & tests["test"].str.endswith("(psi_wo)")].iloc[0]
    return r["test"].split(" - ")[0], r


def answers_table(parts: dict, *, worst, balanced_flips=(), p0_share: float = math.nan):
    """The answers table: one row per question of ``ANSWER_QUESTIONS``; columns ``status``
    (registered or exploratory), one per label of ``parts`` (``digits``, ``sparse majority``,
    ``pooled``) and ``reading``. ``parts[label]`` holds ``tests`` (:func:`verdict_tests`, the
    seed-permutation null), ``tests_iid`` (the same with the random-measure null), ``seeds``
    (:func:`seed_view`) and ``radius`` (:func:`norm_comparisons` with the input radius held fixed) and
    ``axes`` (:func:`norm_comparisons` per axis); ``worst`` is :func:`worst_case_over_tasks`'s
    ``(measure, value)``; ``balanced_flips`` the registered tests whose verdict changes on the balanced
    sub-family (counted per question in the reading, with the largest pooled effect among them). A
    DataFrame of strings."""
    import pandas as pd

    cols: dict = {lab: {} for lab in parts}
    for lab, p in parts.items():
        t, s = p["tests"], p["seeds"]
        m, r = _oracle(t)
        cols[lab][0] = (
            f"{word(r['estimate'], r['lo'], r['hi'], r['reject'])}: {m} "
            f"{interval(r['estimate'], r['lo'], r['hi'], digits=3)}"
        )
        seed_rows = t[t["question"] == "seed"]
        iid = p["tests_iid"]
        n_iid = int(iid[iid["question"] == "seed"]["reject"].sum())
        st = s.loc["fit_step"]
        lsp = s.loc["log_spec_prod"]
        cols[lab][1] = (
            f"{int(seed_rows['reject'].sum())} of {len(seed_rows)} beyond the seed-permutation null "
            f"(random-measure null: {n_iid}); steps to fit "
            f"{interval(st['psi_seed'], st['lo'], st['hi'])}, p {fmt_p(st['p_perm'])}; "
            f"log_spec_prod − steps {interval(lsp['d_steps'], lsp['d_steps_lo'], lsp['d_steps_hi'])}"
        )
        q3 = t[t["question"] == "norms"]
        fav = int((q3["reject"] & (q3["estimate"] > 0)).sum())
        aga = int((q3["reject"] & (q3["estimate"] < 0)).sum())
        rad = p["radius"]
        rsep = [_excl(a, b) for a, b in zip(rad["lo"], rad["hi"])]
        rfav = sum(x and e > 0 for x, e in zip(rsep, rad["estimate"]))
        raga = sum(x and e < 0 for x, e in zip(rsep, rad["estimate"]))
        sep = q3[q3["reject"] & q3["test"].str.endswith("(psi_wo)")]
        ax = p["axes"].set_index(["a", "b", "stat"])
        on_w = sum(
            _excl(*ax.loc[(a, b, "psi_width"), ["lo", "hi"]])
            for a, b in (x.split(" (")[0].split(" - ") for x in sep["test"])
            if (a, b, "psi_width") in ax.index
        )
        bounds = sorted({x.split(" - ")[0] for x in q3[q3["reject"]]["test"]})
        cols[lab][2] = (
            f"{fav} favour a bound, {aga} the norm (of {len(q3)}); radius fixed: {rfav} / {raga}; "
            f"width separates {on_w} of the {len(sep)} with m fixed; bounds involved: "
            f"{', '.join(bounds) or 'none'}"
        )
        q4 = t[t["question"] == "index"].set_index("test")
        bits = []
        for f in ("spectral_p0", "spectral_pmax"):
            r = q4.loc[f"spectral_adaptive - {f} (psi_wo)"]
            w = word(r["estimate"], r["lo"], r["hi"], r["reject"])
            bits.append(f"vs {f.split('_')[1]} {w} {interval(r['estimate'], r['lo'], r['hi'])}")
        cols[lab][3] = "; ".join(bits)
    tie_names = ", ".join(
        f"{lab} {_oracle(p['tests'])[0]}" for lab, p in parts.items() if lab != "pooled"
    )
    words1 = {
        lab: word(*_oracle(p["tests"])[1][["estimate", "lo", "hi", "reject"]])
        for lab, p in parts.items()
    }
    beat = [lab for lab, w in words1.items() if w == "beat"]
    r1 = (
        f"A measure beats the oracle on {', '.join(beat)}"
        if beat
        else "No measure beats the oracle"
    )
    r1 += (
        f"; each task's best is picked after the fact ({tie_names}); best worst case over the "
        f"tasks: {worst[0]} {fmt(worst[1])}."
    )
    steps_ok = [lab for lab, p in parts.items() if p["seeds"].loc["fit_step", "lo"] > 0]
    lsp_ok = [lab for lab, p in parts.items() if p["seeds"].loc["log_spec_prod", "d_steps_lo"] > 0]
    r2 = (
        "The steps to fit, which read no weights, order the seeds too "
        f"(interval above 0: {', '.join(steps_ok) or 'nowhere'}); the spectral product beats them "
        f"on {', '.join(lsp_ok) or 'no label'}."
    )
    pooled = parts.get("pooled", next(iter(parts.values())))
    ed = pooled["radius"].set_index(["a", "b", "stat"])
    key = ("edelman_cap_bx", "log_spec_prod", "psi_wo")
    r3 = "The separations with m fixed are mostly on the width axis, where the bounds also carry the input radius"
    if key in ed.index:
        e = ed.loc[key]
        r3 += (
            f"; with the radius fixed the Edelman-type bound minus the spectral product is "
            f"{interval(e['estimate'], e['lo'], e['hi'])} pooled."
        )
    q4 = pooled["tests"].set_index("test")
    up = q4.loc["spectral_adaptive - spectral_p0 (psi_wo)", "estimate"]
    down = q4.loc["spectral_adaptive - spectral_pmax (psi_wo)", "estimate"]
    r4 = (
        f"Pooled, {fmt(up)} over p = 0 and {fmt(down)} against the largest index; "
        f"p = 0 for every matrix in {100 * p0_share:.0f}% of the models."
    )
    reading = [r1, r2, r3, r4]
    out = pd.DataFrame({lab: [cols[lab][i] for i in range(4)] for lab in parts})
    out.insert(0, "status", ["registered (pooled); per task exploratory"] * 4)
    out.insert(0, "question", list(ANSWER_QUESTIONS))
    out["reading"] = reading
    out.loc[2, "status"] = "registered (pooled); radius and axis split exploratory"
    out.loc[1, "status"] = "registered (pooled), seed-permutation null adopted after the first look"
    tests = pooled["tests"].set_index("test")
    for i, q in enumerate(("oracle", "seed", "norms", "index")):
        names = tests.index[tests["question"] == q]
        flips = [t for t in balanced_flips if t in names]
        if flips:
            big = max(abs(float(tests.loc[t, "estimate"])) for t in flips)
            out.loc[i, "reading"] += (
                f" On the balanced sub-family {len(flips)} of these {len(names)} registered verdicts "
                f"change (largest effect among them {big:.2f})."
            )
    return out.set_index("question")
