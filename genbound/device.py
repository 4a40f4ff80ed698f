"""Choice of compute device and precision.

genbound computes in float64 by default (small singular values, ranks and Schatten quasi-norms with
``p < 1`` are not reliable in float32) and on the GPU when one is present.

Where a result lives (one rule for every function with a ``device`` argument):

* ``device`` says where the arithmetic runs; ``None`` and ``"auto"`` pick CUDA when it is present.
* With ``None``/``"auto"`` a tensor result comes back where the input lives (:func:`home_device`):
  the input tensor's device, and the CPU for arrays, lists, files and loaded weights. Code written on
  a laptop therefore runs unchanged on a GPU machine, only faster.
* A named device (``"cpu"``, ``"cuda"``, ``"cuda:1"``) is where the result stays.
* Modules (:class:`genbound.nets.ReferenceTransformer`) are built on the CPU unless a device is
  named, as every ``torch.nn`` module is.

>>> from genbound.device import home_device, resolve_device
>>> resolve_device("cpu").type
'cpu'
>>> resolve_device("auto").type in {"cpu", "cuda"}
True
>>> home_device(None, [[1.0]]).type, home_device("auto", torch.zeros(1)).type
('cpu', 'cpu')
"""

from __future__ import annotations

import torch

from .errors import DeviceError, ParameterError

__all__ = ["DEFAULT_DTYPE", "resolve_device", "home_device", "resolve_dtype", "cuda_available"]

#: Default floating-point type of every computation.
DEFAULT_DTYPE = torch.float64

_DTYPES = {
    "float64": torch.float64,
    "double": torch.float64,
    "float32": torch.float32,
    "float": torch.float32,
}


def cuda_available() -> bool:
    """Whether a CUDA device can be used."""
    return bool(torch.cuda.is_available())


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """Turn ``None``/``"auto"``/``"cpu"``/``"cuda"``/``"cuda:1"``/a ``torch.device`` into a device.

    ``None`` and ``"auto"`` pick ``cuda`` when it is available, otherwise the CPU. Asking for CUDA on a
    machine without it raises :class:`~genbound.errors.DeviceError` instead of failing later deep
    inside torch.
    """
    if _is_auto(device):
        return torch.device("cuda" if cuda_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise DeviceError(
            f"unknown device {device!r}; expected 'auto', 'cpu', 'cuda' or 'cuda:N'"
        ) from exc
    if dev.type == "cuda" and not cuda_available():
        raise DeviceError(
            f"device {device!r} was requested but CUDA is not available on this machine"
        )
    if dev.type not in {"cpu", "cuda"}:
        raise DeviceError(f"device type {dev.type!r} is not supported; use 'cpu' or 'cuda'")
    return dev


def _is_auto(device) -> bool:
    return device is None or (isinstance(device, str) and device.strip().lower() == "auto")


def home_device(device, *inputs) -> torch.device:
    """Where a result goes back to: the named ``device`` when one is named; for ``None``/``"auto"``
    the device of the first tensor among ``inputs``, else the CPU (arrays, lists, files, weights read
    from disk). The arithmetic itself runs on :func:`resolve_device` of ``device``.
    """
    if not _is_auto(device):
        return resolve_device(device)
    for x in inputs:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")


def resolve_dtype(dtype: str | torch.dtype | None = None) -> torch.dtype:
    """Turn ``None`` (float64), ``"float64"``, ``"float32"`` or a floating ``torch.dtype`` into a dtype.

    >>> resolve_dtype("float32")
    torch.float32
    """
    if dtype is None:
        return DEFAULT_DTYPE
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise ParameterError(
                f"dtype {dtype} is not supported; use torch.float64 or torch.float32"
            )
        return dtype
    key = str(dtype).lower().replace("torch.", "")
    if key not in _DTYPES:
        raise ParameterError(f"unknown dtype {dtype!r}; expected 'float64' or 'float32'")
    return _DTYPES[key]
