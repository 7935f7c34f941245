"""numpy's own CBLAS, found without numba or llvmlite: its ``cblas_?gemm``/``cblas_?gemv`` symbols in
numpy's extension module, under fixed names (``jitgrad_numpy_cblas_<routine>_<dtype>_i<bits>``).

Kernels name these symbols (numba's through ``blas.py``, the LLVM generator's through
``llvm_cpu/statements/linalg.py``); a process that links such code with LLVM registers the names with
``register_with_llvm``, and one that loads cached object code by itself (``backends/elf_loader.py``)
binds them from ``BLAS.addresses``. The cache key needs ``description()``. A warm process may import
neither numba nor llvmlite (0.03 s and 0.01 s at exit for llvmlite's library alone), so the search lives
here and imports neither. ``JITGRAD_KERNEL_BLAS=numba`` (or a numpy without CBLAS symbols) leaves ``BLAS`` None: kernels then
use numba's ``np.dot``.
"""
from __future__ import annotations

import ctypes
import importlib
import os
from dataclasses import dataclass

import numpy as np

# (symbol pattern, bits of the BLAS integer): numpy's wheels (OpenBLAS, ILP64 with a suffix), macOS
# Accelerate (ILP64), then plain LP64 CBLAS; ``{}`` is the routine (``dgemm``...)
_CANDIDATES = (("scipy_cblas_{}64_", 64), ("cblas_{}64_", 64), ("cblas_{}$NEWLAPACK$ILP64", 64),
               ("scipy_cblas_{}", 32), ("cblas_{}", 32))
_ROUTINES = ("gemm", "gemv")


@dataclass(frozen=True)
class Blas:
    """numpy's CBLAS as the kernels link it: ``description`` goes into cache keys, so machine code built
    against one BLAS is never loaded where another is."""
    integer_bits: int
    symbols: dict[str, str]   # routine and dtype (``gemm_float64``) -> the name kernels call it by
    addresses: dict[str, int]  # that name -> the routine's address in numpy's library
    description: str


def find_blas() -> Blas | None:
    choice = os.environ.get("JITGRAD_KERNEL_BLAS", "numpy")
    if choice not in ("numpy", "numba"):
        raise ValueError(f"JITGRAD_KERNEL_BLAS={choice!r}: expected 'numpy' (numpy's BLAS, the default) or "
                         "'numba' (numba's np.dot, on SciPy's BLAS)")
    if choice == "numba":
        return None
    try:
        module = importlib.import_module("numpy._core._multiarray_umath" if int(np.__version__.split(".")[0]) >= 2
                                         else "numpy.core._multiarray_umath")  # numpy 1.x's name
        library = ctypes.CDLL(module.__file__)
    except (ImportError, OSError):
        return None
    wanted = [(routine, prefix, dtype) for routine in _ROUTINES for prefix, dtype in (("s", "float32"),
                                                                                      ("d", "float64"))]
    for pattern, bits in _CANDIDATES:
        addresses = {}
        for routine, prefix, dtype in wanted:
            try:
                function = getattr(library, pattern.format(prefix + routine))
            except AttributeError:
                break
            addresses[f"{routine}_{dtype}"] = ctypes.cast(function, ctypes.c_void_p).value
        if len(addresses) == len(wanted):
            symbols = {key: f"jitgrad_numpy_cblas_{key}_i{bits}" for key in addresses}
            names = pattern.format("?{" + ",".join(_ROUTINES) + "}")
            return Blas(bits, symbols, {symbols[key]: address for key, address in addresses.items()},
                        f"{names} (i{bits}) from numpy {np.__version__}")
    return None


BLAS = find_blas()


def register_with_llvm() -> None:
    """Makes LLVM's linker resolve the names kernels call (numba's JIT, an MCJIT engine); idempotent."""
    if BLAS is not None:
        import llvmlite.binding as llvm

        for name, address in BLAS.addresses.items():
            llvm.add_symbol(name, address)


def description() -> str:
    return BLAS.description if BLAS is not None else "numba np.dot"


__all__ = ["BLAS", "Blas", "description", "find_blas", "register_with_llvm"]
