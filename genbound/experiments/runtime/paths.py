"""Where the saved data of the experiments live: ``genbound/data/`` inside the installed package, found
through ``importlib.resources`` (so a wheel, an editable install and a source checkout all answer the
same way, never by counting parent folders from a module's file).

One concept: the path of a saved data file.

>>> data_path("bert_grid_spectra.npz").name
'bert_grid_spectra.npz'
>>> data_path("bert_grid_spectra.npz").parent == data_path()
True
>>> data_path().name
'data'
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["data_path"]


def data_path(name: str | None = None) -> Path:
    """The path of the saved data file (or subfolder) ``name`` under ``genbound/data/``; with no
    ``name``, the folder itself.

    The path is built through ``importlib.resources.files("genbound")``; the file need not exist (a
    caller that writes one, or checks for it, gets the path it would have).
    """
    root = Path(str(files("genbound") / "data"))
    return root if name is None else root / name
