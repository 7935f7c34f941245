"""Which CUDA a test run has, found once: the conftests use it to decide what runs.

CI has no GPU. The CUDA tests run there in a second pytest run under numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, which numba reads when it is first imported, hence a run of its own), and
the PTX tests in the normal run, where numba-cuda's NVVM compiles kernels without a device. Tests that
need real hardware (large sizes, many blocks) are marked ``gpu``.
"""
from __future__ import annotations

import functools
import os

import pytest

SIMULATOR = "simulator"   # NUMBA_ENABLE_CUDASIM is set: numba.cuda runs kernels on the CPU
GPU = "gpu"               # numba.cuda finds a real device
NO_GPU = "no gpu"         # numba-cuda is installed (PTX compiles) but there is no device
MISSING = "missing"       # numba.cuda cannot be imported

SIMULATOR_COMMAND = "NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda"
CUDA_FILES_NOT_RUN = pytest.StashKey[list]()   # test files of tests/cuda this run did not collect


def simulator_requested() -> bool:
    """numba's own reading of the variable: any integer but 0 turns the simulator on."""
    try:
        return int(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") or "0") != 0
    except ValueError:
        return False


@functools.cache
def cuda_mode() -> str:
    """Imports numba.cuda only when asked (a run without CUDA tests never pays for it)."""
    try:
        from numba import cuda
    except ImportError:
        return MISSING
    if simulator_requested():
        return SIMULATOR
    try:
        return GPU if cuda.is_available() else NO_GPU
    except Exception:  # noqa: BLE001 - a broken driver is no GPU, and the gpu tests say so when they skip
        return NO_GPU
