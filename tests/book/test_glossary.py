"""The API page's glossary (one name per quantity) in step with the public signatures.

Each row of the glossary in ``book/api.md`` gives a quantity's name, where other names are still allowed,
and names that must not appear. This test reads the table and every public function, method and dataclass
field of the numeric core (``genbound.claims.NUMERIC_CORE``), ``genbound.checkpoint_bounds``,
``genbound.analysis`` and the experiments' configurations: every chosen name is used somewhere, no forbidden
name is used anywhere, and the sample size is called ``m`` in exactly the functions listed below (a
ratchet: renaming one to ``n_samples`` means deleting it here; a new function with ``m`` fails).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

from genbound.claims import NUMERIC_CORE

ROOT = Path(__file__).resolve().parents[2]
API = (ROOT / "book" / "api.md").read_text(encoding="utf-8")
EXTRA = (
    "genbound.checkpoint_bounds",
    "genbound.analysis",
    "genbound.experiments.fullbatch",
    "genbound.experiments.bert_grid",
    "genbound.experiments.sparse_majority.config",
    "genbound.experiments.predict_gap.family",
)

#: The functions whose sample size is still the chapters' symbol ``m`` (Parts I-II).
SAMPLE_SIZE_M = {
    "genbound.rademacher.generalization_gap_bound",
    "genbound.rademacher.dudley_objective",
    "genbound.rademacher.dudley_bound",
    "genbound.rademacher.dudley_inverse_square",
    "genbound.rademacher.inverse_square_log_factor",
    "genbound.rademacher.dudley_parametric",
    "genbound.bounds.edelman.edelman_log_cover",
    "genbound.bounds.edelman.EdelmanBound.at",
    "genbound.bounds.edelman.edelman_bound",
    "genbound.bounds.edelman.edelman_bound_from_model",
    "genbound.bounds.trauger_tewari.TTBound.at",
    "genbound.bounds.trauger_tewari.trauger_tewari_bound",
    "genbound.bounds.trauger_tewari.trauger_tewari_bound_from_model",
    "genbound.bounds.trauger_tewari.TTBound",
    "genbound.bounds.edelman.EdelmanBound",  # the field m (n_samples: a property)
    "genbound.rademacher.DudleyResult",
    # moved down from genbound.experiments.bound_measures (Part II's rows, in the chapters' m)
    "genbound.bounds.rows.bound_results",
    "genbound.bounds.rows.bound_fields",
}


def glossary() -> list[dict]:
    start = API.index("## Glossary: one name per quantity")
    rows = []
    for line in API[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| Quantity"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        quantity, name, also, never = cells
        rows.append(
            {
                "quantity": quantity,
                "name": re.findall(r"`([\w*]+)`", name),
                "never": re.findall(r"`([\w*]+)`", never),
            }
        )
    return rows


def _modules():
    names = list(NUMERIC_CORE) + list(EXTRA)
    out = []
    for name in names:
        mod = importlib.import_module(name)
        out.append(mod)
        if hasattr(mod, "__path__"):
            out += [
                importlib.import_module(i.name)
                for i in pkgutil.iter_modules(mod.__path__, name + ".")
            ]
    return out


def public_parameters() -> dict[str, set[str]]:
    """``{qualified name: its parameter and dataclass-field names}`` of every public function, method and class."""
    out = {}
    for mod in _modules():
        for nm, obj in vars(mod).items():
            if nm.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                out[f"{mod.__name__}.{nm}"] = set(inspect.signature(obj).parameters)
            elif inspect.isclass(obj):
                out[f"{mod.__name__}.{nm}"] = set(getattr(obj, "__dataclass_fields__", {}))
                for k, v in vars(obj).items():
                    if inspect.isfunction(v) and not k.startswith("_"):
                        out[f"{mod.__name__}.{nm}.{k}"] = set(inspect.signature(v).parameters) - {
                            "self",
                            "cls",
                        }
    return out


PARAMS = public_parameters()


def test_glossary_has_the_four_quantities():
    qs = [r["quantity"].split(" (")[0] for r in glossary()]
    assert qs == ["sample size", "grid resolution", "radius", "budget"]


def test_every_chosen_name_is_used():
    used = set().union(*PARAMS.values())
    for row in glossary():
        assert row["name"] and all(n in used for n in row["name"]), row


def test_no_forbidden_name_is_used():
    for row in glossary():
        bad = {
            q: sorted(ps & set(row["never"])) for q, ps in PARAMS.items() if ps & set(row["never"])
        }
        assert not bad, f"{row['quantity']}: {bad}"


def test_sample_size_m_only_where_listed():
    with_m = {q for q, ps in PARAMS.items() if "m" in ps}
    assert with_m - SAMPLE_SIZE_M == set(), (
        "new public signatures call the sample size m: use n_samples"
    )
    assert SAMPLE_SIZE_M - with_m == set(), "renamed to n_samples? delete them from SAMPLE_SIZE_M"
