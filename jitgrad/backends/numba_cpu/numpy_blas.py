"""numpy's own CBLAS, found without numba: its ``cblas_?gemm``/``cblas_?gemv`` symbols in numpy's extension
module, registered with LLVM under fixed names (``jitgrad_numpy_cblas_<routine>_<dtype>_i<bits>``).

Kernels compiled by numba name these symbols (``blas.py`` writes the calls); a kernel whose object code
a later process loads with llvmlite alone (``object_loader.py``) needs the same names bound to the same
routines, and the cache key needs ``description()``; neither may import numba, so the search lives
here. ``JITGRAD_KERNEL_BLAS=numba`` (or a numpy without CBLAS symbols) leaves ``BLAS`` None: kernels then
use numba's ``np.dot``.
"""
from __future__ import annotations

import ctypes
import importlib
import os
from dataclasses import dataclass

import llvmlite.binding as llvm
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
    symbols: dict[str, str]   # routine and dtype (``gemm_float64``) -> name registered with LLVM
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
            symbols = {}
            for key, address in addresses.items():
                symbols[key] = f"jitgrad_numpy_cblas_{key}_i{bits}"
                llvm.add_symbol(symbols[key], address)
            names = pattern.format("?{" + ",".join(_ROUTINES) + "}")
            return Blas(bits, symbols, f"{names} (i{bits}) from numpy {np.__version__}")
    return None


BLAS = find_blas()


def description() -> str:
    return BLAS.description if BLAS is not None else "numba np.dot"


__all__ = ["BLAS", "Blas", "description", "find_blas"]
