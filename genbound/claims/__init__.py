"""The registry of executable claims: every lemma and theorem of the book, checked.

Each ``{prf:lemma}``, ``{prf:theorem}``, ``{prf:corollary}`` or ``{prf:proposition}`` block in the book
has a :class:`Claim` here with the **same label**, and every claim has such a block (a test enforces
both directions). Claims live in the submodules of this package, one per book part; they are
discovered automatically, so adding a module is enough.

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
from ._core import (LOOSE_THRESHOLD, PROVENANCES, AllOf, Claim, ClaimResult, FunctionCheck, InequalityCheck,
                    Mutant, MutantResult, NumericCheck, register_cache, replaced, scaled)

__all__ = ["Claim", "ClaimResult", "InequalityCheck", "FunctionCheck", "AllOf", "NumericCheck", "Mutant",
           "MutantResult", "PROVENANCES", "LOOSE_THRESHOLD", "register_cache", "scaled", "replaced",
           "register", "get", "all_claims", "labels", "check", "check_all", "check_mutants"]

_REGISTRY: dict[str, Claim] = {}
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
