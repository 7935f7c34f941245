"""Launch configuration, and the one way every kernel is launched: the generated kernels through a
program's ``Launcher``, the kernel library's through ``launch``, both recorded in the launcher of the
running program (``program.launches``, which ``jitgrad.compile.explain`` shows).

Blocks are 256 threads on a GPU and one warp (32) under the simulator, which runs a Python thread per
CUDA thread and emulates shuffles for one-warp blocks only (``simulator.py``). Grids are capped: the
kernels loop grid-stride, so any grid covers any size, and a capped grid keeps the simulator's thread
count small and a GPU's blocks busy with several elements each. A full reduction splits into at most
``PARTS`` blocks' partial results, a number fixed by the size alone, so its sum is the same at every run.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np
from numba.core.errors import NumbaError

from .errors import LoweringError
from .simulator import install, is_simulator

GPU_THREADS, SIMULATOR_THREADS = 256, 32
GPU_BLOCKS, SIMULATOR_BLOCKS = 4096, 4
GPU_PARTS, SIMULATOR_PARTS = 256, 3
GRID_LIMIT = 65535
"""Blocks along a grid's y and z (the hardware's limit; x goes further)."""

THREADS = SIMULATOR_THREADS if is_simulator() else GPU_THREADS
"""Threads per block, fixed when numba is imported: kernels size their shared memory by it."""
MAX_BLOCKS = SIMULATOR_BLOCKS if is_simulator() else GPU_BLOCKS

install()  # under the simulator: its shuffles and thread-safe shared memory, before any kernel launches here


def blocks_for(elements: int) -> int:
    """Blocks of a grid-stride kernel over ``elements`` (0 for none: nothing to launch)."""
    return min(-(-int(elements) // THREADS), MAX_BLOCKS)


_RUNNING: ContextVar[Launcher | None] = ContextVar("jitgrad_cuda_running_launcher", default=None)


def kernel_name(kernel: Any) -> str:
    """The name of a ``@cuda.jit`` kernel (its Python function's), as ``program.kernels`` lists it."""
    return kernel.py_func.__name__


def launch(kernel: Any, grid: int | tuple[int, ...], block: int | tuple[int, ...], stream: Any, *args: Any) -> None:
    """``kernel[grid, block, stream](*args)``, recorded in the launcher of the program running, if any
    (a kernel library function called by a program's host code; not one called directly)."""
    kernel[grid, block, stream](*args)
    launcher = _RUNNING.get()
    if launcher is not None:
        launcher.records.append((kernel_name(kernel), grid, block))


class Launcher:
    """Launches a program's kernels on one stream and records them (``program.launches``); keeps the
    scratch arrays of its reductions (partial results, a first pass's results) between calls."""

    def __init__(self) -> None:
        self.stream: Any = 0
        self.records: list[tuple[str, Any, Any]] = []  # (kernel, grid, block): ints, or tuples of them
        self._scratch: dict[str, Any] = {}
        self._division_errors: Any = None

    @contextmanager
    def running(self, stream: Any) -> Iterator[Launcher]:
        """A call of the program on ``stream``: its records start empty, and the library's launches
        (``launch``) during it are recorded here."""
        self.stream = stream
        self.records = []
        self._division_errors = None
        token = _RUNNING.set(self)
        try:
            yield self
        finally:
            _RUNNING.reset(token)

    def division_errors(self) -> Any:
        """The flag integer divisions of this call set on a zero divisor (``device_functions.py``), zeroed."""
        from numba import cuda

        self._division_errors = cuda.to_device(np.zeros(1, np.int32), stream=self.stream)
        return self._division_errors

    def raise_division_errors(self) -> None:
        """Raises eager's error if a kernel of this call divided an integer by zero (reads the flag: a
        synchronisation, paid only by programs with integer ``//`` or ``%``)."""
        if self._division_errors is not None and self._division_errors.copy_to_host(stream=self.stream)[0]:
            raise RuntimeError("ZeroDivisionError")

    def __call__(self, kernel: Any, name: str, blocks: int, args: tuple) -> None:
        blocks = min(int(blocks), MAX_BLOCKS)
        if blocks <= 0:
            return
        try:
            kernel[blocks, THREADS, self.stream](*args)
        except NumbaError as error:  # numba.cuda compiles a kernel at its first launch
            raise LoweringError(f"numba could not compile the generated kernel {name} (see program.source; its "
                                f"comments name the IR nodes): {str(error).strip().splitlines()[0]}") from None
        self.records.append((name, blocks, THREADS))

    blocks_for = staticmethod(blocks_for)

    @staticmethod
    def parts(elements: int) -> int:
        """How many blocks fold a full reduction of ``elements`` into partial results."""
        cap = SIMULATOR_PARTS if is_simulator() else GPU_PARTS
        return max(1, min(-(-int(elements) // THREADS), cap))

    def scratch(self, name: str, shape: tuple[int, ...], dtype: str) -> Any:
        """A device array for ``name``, allocated once per shape."""
        array = self._scratch.get(name)
        if array is None or tuple(array.shape) != tuple(shape):
            from numba import cuda

            array = self._scratch[name] = cuda.device_array(shape, np.dtype(dtype), stream=self.stream)
        return array


__all__ = ["GRID_LIMIT", "Launcher", "MAX_BLOCKS", "THREADS", "blocks_for", "kernel_name", "launch"]
