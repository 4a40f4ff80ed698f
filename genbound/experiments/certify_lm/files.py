"""The results file of ``genbound experiment certify-lm`` (one row per model size and seed)."""

from __future__ import annotations

from ..runtime.results import Schema, open_results, read_results
from ..runtime.machine import environment
from ..runtime.paths import data_path

__all__ = [
    "SCHEMA",
    "SWEEP_FILE",
    "LONG_FILE",
    "SAVED_FILES",
    "FIRST_RUN_FILES",
    "open_sweep",
    "read_sweep",
    "saved_rows",
]

_F, _I, _S = float, int, str
SCHEMA = Schema(
    "certify-lm",
    (
        ("size", _S),
        ("seed", _I),
        ("d", _I),
        ("layers", _I),
        ("n_params", _I),
        ("n_tensors", _I),
        ("steps", _I),
        ("train_seconds", _F),
        ("eval_seconds", _F),
        ("V", _I),
        ("doc_len", _I),
        ("m_docs", _I),
        ("M_chars", _I),
        ("heldout_chars", _I),
        ("bits", _I),
        ("alpha", _F),
        ("grid_sizes", _S),
        ("symbol_counts", _S),
        ("header_bits", _F),
        ("scale_bits", _I),
        ("counts_bits", _I),
        ("symbol_bits", _F),
        ("code_bits", _F),
        ("lo", _F),
        ("width", _F),
        ("train_raw_bits", _F),
        ("train_smooth_bits", _F),
        ("train_quant_sum", _F),
        ("train_quant_bits", _F),
        ("train_errors", _I),
        ("heldout_raw_bits", _F),
        ("heldout_quant_bits", _F),
        ("heldout_errors", _I),
        ("smoothing_cost", _F),
        ("quant_cost", _F),
        ("chance_bits", _F),
        ("token_bound_bits", _F),
        ("doc_bound_bits", _F),
        ("token_error_bound", _F),
        ("doc_error_bound", _F),
        ("delta", _F),
        ("vocab", _S),
        ("pilot_docs", _I),
        ("qat_bits", _I),
        ("unquant_chars", _I),
        ("train_last_bits", _F),
        ("train_quant_sumsq", _F),
        ("heldout_quant_sum", _F),
        ("heldout_quant_sumsq", _F),
        ("heldout_docs", _I),
        ("delta_each", _F),
    ),
    key=("size", "seed"),
    optional=frozenset(
        {
            "vocab",
            "pilot_docs",
            "qat_bits",
            "unquant_chars",
            "train_last_bits",
            "train_quant_sumsq",
            "heldout_quant_sum",
            "heldout_quant_sumsq",
            "heldout_docs",
            "delta_each",
        }
    ),
)

#: The saved sweep (relative to genbound/data): the rerun with the vocabulary fixed a priori.
SWEEP_FILE = "certify_lm_ascii.csv"
#: A longer training of the best size of the sweep (the same configuration but ``steps``), a file of
#: its own.
LONG_FILE = "certify_lm_ascii_long.csv"
#: Every saved run the chapter reads.
SAVED_FILES = (SWEEP_FILE, LONG_FILE)
#: The first run (vocabulary read off the text; superseded, kept for comparison): the sweep and the
#: largest size, run afterwards at a later commit, each a results file of its own.
FIRST_RUN_FILES = ("certify_lm.csv", "certify_lm_xxl.csv")


def saved_rows(files=SAVED_FILES) -> list[dict]:
    """The rows of every file of ``files`` (default :data:`SAVED_FILES`; a missing file has none),
    in that order."""
    return [
        r
        for name in files
        if data_path(name).exists()
        for r in read_results(data_path(name), SCHEMA).rows
    ]


def open_sweep(path, config: dict, notes: str | None = None, corpus_sha256: str | None = None):
    """Create or resume the results file at ``path`` for the run configuration ``config``; with
    ``corpus_sha256`` (the text's hash, :attr:`.data.Corpus.sha256`) the header records it and a
    resume on another text is refused."""
    import torch

    torch.set_num_threads(1)
    inputs = {"corpus_sha256": corpus_sha256} if corpus_sha256 else None
    return open_results(path, SCHEMA, config, environment=environment(), notes=notes, inputs=inputs)


def read_sweep(path=None):
    """Read a certify-lm results file (default: the saved sweep)."""
    if path is None:
        path = data_path(SWEEP_FILE)
    return read_results(path, SCHEMA)
