"""The numba CPU backend: lowers a ``jitgrad.fx.Graph`` (after the pass pipeline) to one ``numba.njit``
kernel, one numba call per graph; the kernel calls one function per distinct fusion group.

Interface (what ``jitgrad.compile`` calls)::

    from jitgrad.backends.numba_cpu import lower, LoweringError, structural_key
    compiled = lower(graph, *, fastmath=False, parallel=None, cache=None)   # the graph is not modified
    compiled(*arrays) -> list[np.ndarray]         # one array per placeholder, in graph.placeholders order;
                                                  # returns the tensors of the output, flattened
                                                  # depth-first through tuples, lists and dict values
    compiled.source -> str                        # the generated Python source
    structural_key(graph) -> str                  # equal for graphs that share one compiled kernel

``lower`` raises ``LoweringError`` (a ``RuntimeError``) naming the op and the IR node when an op has no
lowering, before anything is compiled, and when numba refuses the generated code. ``parallel=None``
uses parallel loops for fusion groups of at least ``PARALLEL_ELEMENTS`` elements, ``True`` for every
group that can have one, ``False`` never; ``fastmath`` is passed to numba.

Sizes and Python numbers are arguments of the generated function, not part of its source; compiled
kernels are cached in memory by their code without comments (which is what ``structural_key``
hashes), so graphs that differ only in sizes (a new batch size, retraced) or constants compile once
per process. Each value's array comes from the memory plan (``plan_memory``, taken as it is):
outputs are allocated by the ``CompiledGraph`` at each call and filled by the kernel, intermediates
live in per-thread workspaces it keeps between calls.
``cache`` (a ``jitgrad.compile.cache.DiskCache``) gives a kernel's machine code from an earlier
process, verified first, and keeps each newly compiled one: as object code that ``object_loader``
runs without importing numba (``object_code.py`` says which kernels), and in numba's own cache.
Importing this package does not import numba, nor the code generator until a name of it is used;
compiling a kernel imports numba (``numba_runtime``). With
``NUMBA_DISABLE_JIT=1`` the same source runs as plain Python. How lowering works, how to add an op's
lowering and how to read the generated code: docs/backends.md.
"""
import importlib
from typing import Any

LOWERS_LOOPS = True  # a loop node (fx.loop, rolled by roll_loops) is written as a loop: loops.py

# Each public name and the module holding it, imported on first use: a warm process (docs/compile.md,
# "The warm start") reads numpy_blas and object_loader only, and the code generator behind ``lower``
# (codegen, statements, loop_nest...: 50 modules with llvm_cpu's) is imported when a graph is compiled.
_WHERE = {"CompiledGraph": "compiler", "clear_cache": "compiler", "from_warm_state": "compiler", "lower": "compiler",
          "numba_runtime": "compiler", "structural_key": "compiler", "warm_state": "compiler",
          "PARALLEL_ELEMENTS": "loop_nest", "LoweringError": "errors", "blas_description": "numpy_blas"}
_NAME_THERE = {"blas_description": "description"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), _NAME_THERE.get(name, name))
    globals()[name] = value
    return value


__all__ = ["LOWERS_LOOPS", "PARALLEL_ELEMENTS", "CompiledGraph", "LoweringError", "blas_description", "clear_cache",
           "from_warm_state", "lower", "numba_runtime", "structural_key", "warm_state"]
