"""The claim machinery: a :class:`Claim` pairs a book lemma with executable checks.

A claim's numeric check draws random instances, computes ``ratio = left side / right side`` of the
inequality on each, then runs an **adversarial search**: gradient ascent (torch autograd, Adam) on the
ratio, starting from the worst random instances, projected back into the claim's domain after every
step. The largest ratio seen anywhere is ``worst_ratio``; the claim passes when it is at most
``1 + rtol`` (and its symbolic check, if any, succeeds). A ratio near 1 means the inequality is tight
on some instance; a ratio far below 1 means the bound has slack everywhere we looked.

A claim also carries **mutants** (:class:`Mutant`): deliberately wrong versions of what it states (a
constant halved or doubled, a term dropped, the right side scaled by 1/2, a Lipschitz constant replaced
by a smaller one), each made by patching the ``genbound`` function or constant the check uses.
:meth:`Claim.check_mutants` re-runs the check under each; a mutant is *killed* when the check fails. A
check that passes under a mutant could not tell the true statement from the wrong one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import torch

from ..errors import ParameterError
from ..jsonsafe import json_float

__all__ = [
    "two_sided",
    "ClaimResult",
    "Claim",
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
    "call_with_time_limit",
    "timed_check",
]


def two_sided(got: float, ref: float) -> float:
    """The two-sided ratio ``max(got / ref, ref / got)`` of an equality check: 1 when equal (also both 0),
    ``inf`` when either is non-finite (NaN included) or not positive."""
    if got == ref:
        return 1.0
    if not (math.isfinite(got) and math.isfinite(ref)) or got <= 0 or ref <= 0:
        return math.inf
    return max(got / ref, ref / got)


Params = dict[str, torch.Tensor]

#: Where a statement comes from: a cited paper, the authors' public code, our own derivation, a textbook
#: fact, or recalled from memory and not verified against the source.
PROVENANCES = ("paper", "authors-code", "reconstructed", "standard", "recalled")
#: A claim whose worst ratio is below this needs a ``loose_reason``: the search did not come within a
#: factor of two of the bound, so a check against it would not notice a factor-two error.
LOOSE_THRESHOLD = 0.5

_CACHES: list = []


def register_cache(fn):
    """Register a ``functools.lru_cache``-wrapped function; every cache is cleared around a mutant run, so
    that a result computed with the true constants is never reused under a mutant (or the reverse)."""
    _CACHES.append(fn)
    return fn


def _clear_caches() -> None:
    for fn in _CACHES:
        fn.cache_clear()


def call_with_time_limit(fn, seconds: float):
    """``fn()``, or ``TimeoutError`` after ``seconds`` (SIGALRM; without a limit outside the main thread, or when a
    limit is already running). For checks of functions whose wrong versions may never return (a loop walking the
    wrong way): the check must fail, not hang."""
    import signal
    import threading

    if (
        threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        return fn()

    def _raise(signum, frame):
        raise TimeoutError(f"no result within {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def timed_check(fn, seconds: float) -> tuple[float, int]:
    """A check's ``(worst ratio, trials)`` from ``fn()`` under :func:`call_with_time_limit`, or
    ``(inf, 0)`` when it does not return in ``seconds``: a wrong version that never returns fails."""
    try:
        return call_with_time_limit(fn, seconds)
    except TimeoutError:
        return math.inf, 0


@dataclass(frozen=True)
class Mutant:
    """A deliberately wrong version of a claim: ``patches`` is a tuple of ``(owner, attribute, make)``;
    under :meth:`applied` every ``owner.attribute`` is replaced by ``make(old value)``.

    ``name`` is a short id (``"rhs-halved"``), ``what`` says in words what is wrong.
    """

    name: str
    what: str
    patches: tuple

    @contextmanager
    def applied(self):
        """Patch every attribute, clear the registered caches; undo both on exit."""
        saved = []
        try:
            for owner, attr, make in self.patches:
                old = getattr(owner, attr)
                saved.append((owner, attr, old))
                setattr(owner, attr, make(old))
            _clear_caches()
            yield self
        finally:
            for owner, attr, old in reversed(saved):
                setattr(owner, attr, old)
            _clear_caches()


def _times(value: Any, factor: float) -> Any:
    """``value * factor`` for numbers and tensors; for a callable, a wrapper scaling its result."""
    if callable(value):

        def wrapped(*args, **kwargs):
            return value(*args, **kwargs) * factor

        wrapped.__wrapped__ = value
        return wrapped
    return value * factor


def scaled(owner, attr: str, factor: float, *, name: str, what: str) -> Mutant:
    """A mutant that multiplies the constant ``owner.attr`` (or the result of the function) by ``factor``."""
    return Mutant(name, what, ((owner, attr, lambda old: _times(old, factor)),))


def replaced(owner, attr: str, make: Callable[[Any], Any], *, name: str, what: str) -> Mutant:
    """A mutant that replaces ``owner.attr`` by ``make(old)``."""
    return Mutant(name, what, ((owner, attr, make),))


@dataclass(frozen=True)
class MutantResult:
    """Outcome of one mutant: ``killed`` when the check failed under it; ``worst_ratio`` found under it."""

    name: str
    what: str
    killed: bool
    worst_ratio: float
    seconds: float
    note: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict (a non-finite ``worst_ratio`` becomes ``None``: :mod:`genbound.jsonsafe`)."""
        return {**asdict(self), "worst_ratio": _json_float(self.worst_ratio)}


_json_float = json_float  # the package's one non-finite policy (genbound.jsonsafe): None


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of :meth:`Claim.check`."""

    label: str
    passed: bool
    worst_ratio: float
    trials: int
    adversarial_steps: int
    symbolic: bool | None
    seconds: float
    note: str = ""
    provenance: str = ""
    loose_reason: str | None = None
    mutants: tuple = ()

    def to_dict(self) -> dict:
        """A JSON-ready dict (the format of ``genbound claims --check --json``); ``mutants`` is a list of
        ``{name, what, killed, worst_ratio, seconds, note}``."""
        d = asdict(self)
        d["worst_ratio"] = _json_float(self.worst_ratio)
        d["mutants"] = [
            m.to_dict() if isinstance(m, MutantResult) else dict(m) for m in self.mutants
        ]
        return d

    @property
    def mutants_killed(self) -> int:
        return sum(bool(m.killed) for m in self.mutants)

    def summary(self) -> str:
        """One line for the book: worst ratio, trials, symbolic status.

        >>> ClaimResult("x", True, 0.5, 10, 3, True, 0.1).summary()
        'worst ratio 0.5000 over 10 random and 3 adversarial trials; symbolic check passed'
        """
        sym = {
            None: "no symbolic step",
            True: "symbolic check passed",
            False: "symbolic check FAILED",
        }
        if self.trials == 0:
            return f"symbolic only; {sym[self.symbolic]}"
        how = (
            f"{self.trials:,} random and {self.adversarial_steps:,} adversarial trials"
            if self.adversarial_steps
            else f"{self.trials:,} trials"
        )
        return f"worst ratio {self.worst_ratio:.4f} over {how}; {sym[self.symbolic]}"


class NumericCheck:
    """Interface: ``run(seed, stop_above=None) -> (worst_ratio, trials, adversarial_steps, note)``.

    ``stop_above``: the search may stop as soon as a ratio above this value is found (a mutant run
    only needs one violation); ``None`` runs the whole search."""

    def run(
        self, seed: int, stop_above: float | None = None
    ) -> tuple[float, int, int, str]:  # pragma: no cover
        raise NotImplementedError


def _finite_max(r: torch.Tensor) -> tuple[float, str]:
    """Max of a ratio tensor; a NaN counts as an infinite ratio (a failed check), with a note."""
    r = r.detach().reshape(-1)
    if bool(torch.isnan(r).any()):
        return float("inf"), f"{int(torch.isnan(r).sum())} NaN ratio(s)"
    return float(r.max()), ""


@dataclass
class InequalityCheck(NumericCheck):
    """Random instances plus projected gradient ascent on ``ratio``.

    Parameters
    ----------
    sample : ``(generator, n) -> dict of tensors`` with leading batch size ``n``.
    ratio : ``(**params) -> tensor (n,)``, left side over right side, differentiable in the tensors
        named in ``search`` (default: every floating tensor).
    project : maps a parameter dict back into the domain (called after each ascent step, no grad).
    trials : number of random instances; ``starts``: how many of the worst seed the ascent;
    steps, lr : Adam steps and learning rate (on the raw parameters).
    """

    sample: Callable[[torch.Generator, int], Params]
    ratio: Callable[..., torch.Tensor]
    project: Callable[[Params], Params] | None = None
    trials: int = 2000
    starts: int = 16
    steps: int = 150
    lr: float = 0.02
    search: tuple[str, ...] | None = None

    def run(self, seed: int, stop_above: float | None = None) -> tuple[float, int, int, str]:
        gen = torch.Generator().manual_seed(int(seed))
        params = self.sample(gen, self.trials)
        if self.project is not None:
            params = self.project(params)
        with torch.no_grad():
            r = self.ratio(**params)
        worst, note = _finite_max(r)
        stop = math.inf if stop_above is None else stop_above
        if self.steps <= 0 or self.starts <= 0 or not math.isfinite(worst) or worst > stop:
            return worst, self.trials, 0, note
        k = min(self.starts, r.numel())
        idx = torch.topk(torch.nan_to_num(r.detach(), nan=-1.0), k).indices
        names = self.search or tuple(n for n, v in params.items() if v.is_floating_point())
        x = {n: v[idx].clone() for n, v in params.items()}
        leaves = {n: x[n].detach().clone().requires_grad_(True) for n in names}
        opt = torch.optim.Adam(list(leaves.values()), lr=self.lr, maximize=True)
        steps_done = 0
        for _ in range(self.steps):
            opt.zero_grad()
            cur = {**x, **leaves}
            val = self.ratio(**cur)
            w, n2 = _finite_max(val)
            if w > worst or n2:
                worst, note = max(worst, w), (n2 or note)
            if n2 or worst > stop:
                break
            val.sum().backward()
            opt.step()
            steps_done += k
            with torch.no_grad():
                if self.project is not None:
                    proj = self.project({**x, **{n: v.detach() for n, v in leaves.items()}})
                    for n in names:
                        leaves[n].copy_(proj[n])
        with torch.no_grad():
            w, n2 = _finite_max(self.ratio(**{**x, **leaves}))
            worst, note = max(worst, w), (n2 or note)
        return worst, self.trials, steps_done, note


@dataclass
class FunctionCheck(NumericCheck):
    """A numeric check given as a function of the seed (e.g. a Monte Carlo study) that returns either
    ``(worst_ratio, trials)`` or an iterator (a generator) of parts ``(ratio, trials)``, one per instance.

    The parts' largest ratio is the worst ratio and their trials add up. With ``stop_above`` the run stops
    at the first part that takes the worst ratio above it (as :class:`InequalityCheck` and :class:`AllOf`
    do), so a mutant run ends at its first violation; without it every part runs. A NaN part counts as an
    infinite ratio (a failed check), with a note. A function that returns a tuple always runs whole.
    """

    fn: Callable[[int], tuple[float, int] | Iterator[tuple[float, int]]]

    def run(self, seed: int, stop_above: float | None = None) -> tuple[float, int, int, str]:
        parts = self.fn(seed)
        if not isinstance(parts, Iterator):
            worst, trials = parts
            return float(worst), int(trials), 0, ""
        stop = math.inf if stop_above is None else stop_above
        worst, trials, nans = -math.inf, 0, 0
        try:
            for ratio, t in parts:
                ratio, trials = float(ratio), trials + int(t)
                if math.isnan(ratio):
                    ratio, nans = math.inf, nans + 1
                worst = max(worst, ratio)
                if worst > stop:
                    break
        finally:
            # a generator stopped early runs its cleanup now, not at garbage collection
            close = getattr(parts, "close", None)
            if close is not None:
                close()
        return worst, trials, 0, (f"{nans} NaN ratio(s)" if nans else "")


@dataclass
class AllOf(NumericCheck):
    """Several numeric checks as one: the worst ratio is the largest, trials and steps add up.

    Check ``i`` runs with seed ``seed + seed_stride * i`` so that the parts draw different instances.
    """

    checks: tuple
    seed_stride: int = 1000

    def run(self, seed: int, stop_above: float | None = None) -> tuple[float, int, int, str]:
        worst, trials, steps, notes = -math.inf, 0, 0, []
        for i, c in enumerate(self.checks):
            w, t, s, n = c.run(seed + self.seed_stride * i, stop_above)
            worst, trials, steps = max(worst, w), trials + t, steps + s
            if n:
                notes.append(n)
            if stop_above is not None and worst > stop_above:
                break
        return worst, trials, steps, "; ".join(notes)


@dataclass(frozen=True)
class Claim:
    """An executable statement of the book.

    ``label`` is the label of the ``{prf:lemma}``/``{prf:theorem}``/... block in the book; ``chapter`` the
    book file that states it; ``provenance`` one of ``PROVENANCES``. ``loose_reason`` says why the
    search cannot come within a factor of two of the bound (required when the worst ratio is below
    ``LOOSE_THRESHOLD``; ``None`` otherwise). ``mutants``: wrong versions the check must reject.
    ``source`` is the older name of ``provenance`` and is accepted as an alias (both end up equal).
    ``covers``: dotted names of the package functions whose published numbers the checks evaluate
    (``"genbound.bounds.trauger_tewari.tt_log_cover"``).
    """

    label: str
    statement: str
    chapter: str
    provenance: str = ""
    numeric: NumericCheck | None = None
    symbolic: Callable[[], bool] | None = None
    rtol: float = 1e-9
    tags: tuple[str, ...] = field(default_factory=tuple)
    loose_reason: str | None = None
    mutants: tuple[Mutant, ...] = ()
    source: str = ""
    covers: tuple[str, ...] = ()

    def __post_init__(self):
        if self.source and self.provenance and self.source != self.provenance:
            raise ParameterError(
                f"claim {self.label!r}: source {self.source!r} and provenance "
                f"{self.provenance!r} disagree (source is the older name)"
            )
        object.__setattr__(self, "provenance", self.provenance or self.source)
        object.__setattr__(self, "source", self.provenance)
        if self.provenance not in PROVENANCES:
            raise ParameterError(
                f"claim {self.label!r}: provenance must be one of {PROVENANCES}, "
                f"got {self.provenance!r}"
            )
        if self.numeric is None and self.symbolic is None:
            raise ParameterError(f"claim {self.label!r} has neither a numeric nor a symbolic check")
        if self.loose_reason is not None and not self.loose_reason.strip():
            raise ParameterError(
                f"claim {self.label!r}: loose_reason must be None or a non-empty string"
            )
        names = [m.name for m in self.mutants]
        if len(set(names)) != len(names):
            raise ParameterError(f"claim {self.label!r}: mutant names must be unique, got {names}")

    def check(self, seed: int = 0, *, stop_on_fail: bool = False) -> ClaimResult:
        """Run the symbolic and numeric checks; see :class:`ClaimResult`.

        The checks run on one torch thread (the instances are small; more threads only add overhead
        and make timings depend on the machine's load); the previous setting is restored.
        ``stop_on_fail``: stop the search at the first violation (used for mutants).
        """
        t0 = time.perf_counter()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            sym = None if self.symbolic is None else bool(self.symbolic())
            if self.numeric is not None and not (stop_on_fail and sym is False):
                worst, trials, adv, note = self.numeric.run(
                    seed, 1.0 + self.rtol if stop_on_fail else None
                )
            elif self.numeric is not None:
                worst, trials, adv, note = (
                    math.nan,
                    0,
                    0,
                    "symbolic check failed; numeric check skipped",
                )
            else:
                worst, trials, adv, note = 0.0, 0, 0, "symbolic only"
        finally:
            torch.set_num_threads(threads)
        passed = (worst <= 1.0 + self.rtol) and (sym is not False)
        return ClaimResult(
            self.label,
            passed,
            worst,
            trials,
            adv,
            sym,
            time.perf_counter() - t0,
            note,
            self.provenance,
            self.loose_reason,
        )

    def check_mutants(self, seed: int = 0) -> tuple[MutantResult, ...]:
        """Re-run the check under every mutant (stopping at the first violation); killed = failed.

        An exception inside a mutant run is *not* a kill: it is reported in ``note`` with
        ``killed = False`` (a check must reject a wrong statement, not crash on it).
        """
        out = []
        for mut in self.mutants:
            t0 = time.perf_counter()
            try:
                with mut.applied():
                    r = self.check(seed, stop_on_fail=True)
                killed, worst, note = not r.passed, r.worst_ratio, r.note
                if r.symbolic is False:
                    note = "symbolic check failed" + (f"; {note}" if note else "")
            except Exception as exc:  # noqa: BLE001 - reported, never a kill
                killed, worst, note = False, math.nan, f"raised {type(exc).__name__}: {exc}"
            out.append(
                MutantResult(
                    mut.name, mut.what, killed, float(worst), time.perf_counter() - t0, note
                )
            )
        return tuple(out)

    def describe(self) -> Mapping[str, Any]:
        """Label, statement, chapter, provenance, loose reason and mutant names as a dict."""
        return {
            "label": self.label,
            "statement": self.statement,
            "chapter": self.chapter,
            "provenance": self.provenance,
            "loose_reason": self.loose_reason,
            "mutants": [{"name": m.name, "what": m.what} for m in self.mutants],
        }
