"""The compute capabilities every CUDA kernel must compile to PTX for (issue 14: sm_80 and sm_90), and
how the PTX tests make it with one typing and lowering per kernel.

``numba.cuda.compile_ptx`` types and lowers a kernel, then NVVM makes the PTX for one capability; the
lowering is about three quarters of its time. ``ptx_of`` does what ``compile_ptx`` does for a kernel
(numba-cuda's ``compile_cuda`` then ``kernel_fixup``, as its own launches lower a kernel too) once, at
the first capability, and asks NVVM for each capability's PTX from that one library
(``get_asm_str(cc=...)``). The lowering is the same for both: numba-cuda 0.30.4 lowers differently by
capability only below 7.5 (float64 atomics, fast tanh). tests/backends/test_cuda_ptx.py checks on a
sample of kernels that the result is ``compile_ptx``'s for each capability (``unnamed``).
Needs numba-cuda with NVVM, not under the simulator.
"""
from __future__ import annotations

import re
from typing import Any

CCS = ((8, 0), (9, 0))


def ptx_of(pyfunc: Any, argument_types: tuple) -> dict[tuple[int, int], str]:
    """The kernel's PTX for each capability of ``CCS``, from one typing and lowering."""
    from numba.cuda.compiler import compile_cuda, kernel_fixup

    result = compile_cuda(pyfunc, None, tuple(argument_types), debug=False, lineinfo=False, fastmath=False,
                          nvvm_options={"fastmath": False, "opt": 3}, cc=CCS[0])
    library = result.library
    kernel_fixup(library.get_function(result.fndesc.llvm_func_name), False)
    return {cc: library.get_asm_str(cc=cc) for cc in CCS}


def unnamed(ptx: str) -> str:
    """``ptx`` with its kernel's mangled name replaced (numba makes it of the compilation's unique number
    and of the target's flags, the capability the kernel was lowered at among them) and its shared
    arrays renumbered (``_cudapy_smem_<n>``: n counts the shared arrays the process has lowered)."""
    name = re.search(r"\.entry (_ZN\w+)\(", ptx)
    ptx = ptx.replace(name.group(1)[len("_ZN"):], "KERNEL") if name else ptx
    shared = {}
    return re.sub(r"_cudapy_smem_\d+", lambda m: shared.setdefault(m.group(0), f"_cudapy_smem_S{len(shared)}"), ptx)


__all__ = ["CCS", "ptx_of", "unnamed"]
