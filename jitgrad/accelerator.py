"""``jitgrad.accelerator``: the device-agnostic view of the accelerator that PyTorch's ``torch.accelerator``
gives, which PyTorch's tutorials use to choose a device
(``torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"``).

jitgrad's one accelerator is CUDA (``jitgrad.cuda``), one GPU at most; like ``jitgrad.cuda``, nothing
here imports numba until it is called.
"""
from __future__ import annotations

from typing import Any

from . import cuda
from .device import device


def is_available() -> bool:
    """Whether a CUDA GPU (or numba's simulator) is there to use."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:  # noqa: ARG001 - always checked
    """``device("cuda")`` when CUDA is available, else None. PyTorch names the accelerator it was built
    for even when none is present unless ``check_available=True``; jitgrad is not built for one, so it
    always checks."""
    return device("cuda") if is_available() else None


def device_count() -> int:
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the accelerator in use: 0 (one GPU at most); PyTorch's error without one."""
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return 0


def synchronize(device: Any = None) -> None:  # noqa: ARG001 - one GPU
    """Waits for the work queued on the accelerator (nothing to wait for without one)."""
    if is_available():
        cuda.synchronize()


__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available", "synchronize"]
