"""The registry of executable claims: every lemma and theorem of the book, checked.

Each ``{prf:lemma}``, ``{prf:theorem}``, ``{prf:corollary}`` or ``{prf:proposition}`` block in the book
has a :class:`Claim` here with the **same label**, and every claim has such a block (a test enforces
both directions). Claims live in the submodules of this package, one per chapter and named after it
(``book/part2/tt_covers.md`` -> ``genbound.claims.part2_tt_covers``; what the modules of a part share is in
an underscored ``_part<N>`` module); they are discovered automatically, so adding a module is enough.

>>> from genbound import claims
>>> c = claims.get("lem-spectral-counting")
>>> c.chapter
'book/part3/schatten.md'
>>> r = claims.check("lem-spectral-counting")
>>> r.passed, r.worst_ratio <= 1, r.provenance
(True, True, 'standard')
>>> [m.killed for m in claims.check_mutants("lem-spectral-counting")]
[True]
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ..errors import ParameterError
from ._core import (
    LOOSE_THRESHOLD,
    PROVENANCES,
    AllOf,
    Claim,
    ClaimResult,
    FunctionCheck,
    InequalityCheck,
    Mutant,
    MutantResult,
    NumericCheck,
    register_cache,
    replaced,
    scaled,
)
from ._links import claims_index_html

__all__ = [
    "Claim",
    "ClaimResult",
    "InequalityCheck",
    "FunctionCheck",
    "AllOf",
    "NumericCheck",
    "Mutant",
    "MutantResult",
    "PROVENANCES",
    "LOOSE_THRESHOLD",
    "register_cache",
    "scaled",
    "replaced",
    "register",
    "get",
    "all_claims",
    "labels",
    "check",
    "check_all",
    "check_mutants",
    "NUMERIC_CORE",
    "numeric_core_files",
    "claims_index_html",
]

#: The numeric core, the modules (a package stands for all its modules) whose functions produce the numbers
#: the book publishes. ``tests/claims/test_claims_cover.py`` requires every core function a chapter or experiment
#: calls to be covered by a claim, and ``tools/mutation.py`` draws its mutants from every module of it
#: (:func:`numeric_core_files`).
NUMERIC_CORE = (
    "genbound.spectra",
    "genbound.norms",
    "genbound.rademacher",
    "genbound.covering",
    "genbound.schatten_entropy",
    "genbound.example_spectra",
    "genbound.bounds",
)

_REGISTRY: dict[str, Claim] = {}


def numeric_core_files() -> list[str]:
    """Every ``.py`` file of :data:`NUMERIC_CORE`, relative to the repository root (sorted; a package's
    ``__init__.py`` included)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = []
    for name in NUMERIC_CORE:
        mod = importlib.import_module(name)
        path = Path(mod.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        out += [f.relative_to(root).as_posix() for f in files]
    return sorted(out)


_LOADED = False


def register(claim: Claim) -> Claim:
    """Add ``claim`` to the registry (labels are unique)."""
    if claim.label in _REGISTRY and _REGISTRY[claim.label] is not claim:
        raise ParameterError(f"duplicate claim label {claim.label!r}")
    _REGISTRY[claim.label] = claim
    return claim


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def all_claims() -> list[Claim]:
    """Every registered claim, sorted by label."""
    _load_all()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def labels() -> list[str]:
    """Sorted labels of every claim."""
    return [c.label for c in all_claims()]


def get(label: str) -> Claim:
    """The claim with this label, or a :class:`~genbound.errors.ParameterError` listing close labels."""
    _load_all()
    if label not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(label, list(_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ParameterError(f"no claim with label {label!r}{hint}")
    return _REGISTRY[label]


@lru_cache(maxsize=None)
def check(label: str, seed: int = 0) -> ClaimResult:
    """Run the checks of one claim (cached per ``(label, seed)``)."""
    return get(label).check(seed)


def check_all(seed: int = 0, *, select: str | None = None) -> list[ClaimResult]:
    """Check every claim whose label contains ``select`` (all when ``None``)."""
    return [check(c.label, seed) for c in all_claims() if select is None or select in c.label]


def check_mutants(label: str, seed: int = 0) -> tuple[MutantResult, ...]:
    """Run every mutant of one claim (not cached: each run patches and restores the package)."""
    return get(label).check_mutants(seed)
