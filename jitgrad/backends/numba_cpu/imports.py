"""The imports a generated kernel needs, and only those: a kernel names the backend's runtime functions
(BLAS products, row copies, fast float32 ``exp``...) its ops' lowerings asked for, and its module
imports exactly the names its code reads."""
from __future__ import annotations

import ast

# The backend's own functions generated code may call, by module.
KERNEL_IMPORTS = {"jitgrad.backends.numba_cpu.blas": ("matmat", "matvec"),
                  "jitgrad.backends.numba_cpu.integer_division": ("floor_divide_int", "remainder_int",
                                                                  "fmod_int", "power_int"),
                  "jitgrad.backends.numba_cpu.intrinsics": ("exp_float32", "exp_float64", "tanh_float32",
                                                           "tanh_float64"),
                  "jitgrad.backends.numba_cpu.row_reductions": ("row_dot", "row_max", "row_sum"),
                  "jitgrad.backends.numba_cpu.rows": ("put_row",),
                  "jitgrad.backends.numba_cpu.sampling": ("fill_normal", "fill_randperm", "fill_uniform")}

_LIBRARIES = (("math", "import math"), ("numba", "import numba"), ("np", "import numpy as np"),
              ("prange", "from numba import prange"))


def import_lines(code: str) -> list[str]:
    """The import statements for the names ``code`` (a module's functions, without imports) reads, in
    groups (the standard library, numba and numpy, the backend), followed by two blank lines."""
    names = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}
    groups = [[line for name, line in _LIBRARIES[:1] if name in names],
              [line for name, line in _LIBRARIES[1:] if name in names],
              [f"from {module} import {', '.join(used)}" for module, functions in KERNEL_IMPORTS.items()
               if (used := [f for f in functions if f in names])]]
    lines: list[str] = []
    for group in (g for g in groups if g):
        lines += [*group, ""]
    return lines + [""] if lines else []


__all__ = ["KERNEL_IMPORTS", "import_lines"]
