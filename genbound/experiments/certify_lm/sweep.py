"""The saved sweep: every size of :data:`.config.SIZES` in ``sizes`` at one seed, one results-file row
each, resumable (finished keys are skipped), progress on standard error."""

from __future__ import annotations

import sys

from . import certify_size
from .config import CertifyLMConfig
from .data import corpus_of
from .files import open_sweep

__all__ = ["run_sweep"]


def run_sweep(
    path,
    sizes,
    seeds,
    cfg: CertifyLMConfig,
    *,
    quiet: bool = False,
    on_row=None,
    corpus=None,
    keys=None,
) -> int:
    """Certify every ``(size, seed)`` (``keys``, in that order; default every size of ``sizes`` at
    every seed of ``seeds``) not yet in the results file at ``path`` (``None``: no file);
    ``on_row(row)`` after each; returns the number of models certified."""
    cfg = cfg.validated()
    corpus = corpus or corpus_of(cfg)
    writer = open_sweep(path, cfg.as_dict(), corpus_sha256=corpus.sha256) if path else None
    done = 0
    if keys is None:
        keys = [(size, seed) for size in sizes for seed in seeds]
    for size, seed in keys:
        if True:
            if writer is not None and (size, seed) in writer:
                continue

            def progress(step, bits, sec, size=size):
                if not quiet:
                    print(
                        f"certify-lm: {size} step {step} train {bits:.3f} bits/char {sec:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )

            row = certify_size(size, seed, cfg, corpus, progress=progress)
            if writer is not None:
                writer.append([row])
            done += 1
            if on_row is not None:
                on_row(row)
    return done
