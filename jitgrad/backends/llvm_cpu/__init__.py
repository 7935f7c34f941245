"""The LLVM CPU backend: lowers a ``jitgrad.fx.Graph`` (after the same pass pipeline as numba_cpu:
fusion, memory plan) straight to LLVM IR, compiled with llvmlite, without numba's Python front end
(typing and lowering: most of a first call's time). One kernel per graph, called from Python as a
builtin function.

Interface (the numba CPU backend's, ``jitgrad.backends.numba_cpu``)::

    from jitgrad.backends.llvm_cpu import lower, NotCovered, structural_key
    compiled = lower(graph, *, fastmath=False, parallel=None, cache=None)
    compiled(*arrays) -> list[np.ndarray]       # one array per placeholder; the outputs, flattened
    compiled.source -> str                      # the LLVM IR

It covers elementwise ops (their scalar expressions, ``jitgrad.ops.scalar``, written as IR by
``expressions.py``/``scalar_functions.py``), one-pass reductions in fusion groups, and the statement
intrinsics in ``statements/`` (matrix products on numpy's CBLAS, views, stack and concatenate,
softmax), and ``loop`` nodes (a rolled RNN, ``loops.py``) whose bodies it covers; ``lower`` raises
``NotCovered`` (a ``LoweringError``-like ``NotImplementedError``) naming the op or use it does not
cover, before compiling anything: ``jitgrad.compile`` then gives the graph to numba_cpu. Object code
goes into the disk cache's ``objects`` kind. docs/backends.md describes it.
"""
import importlib
from typing import Any

from .compiled_graph import CompiledGraph, clear_cache, from_warm_state, warm_state

# The code generator (compiler, codegen, statements/...) is imported when a graph is lowered, not by a
# warm process, which needs ``from_warm_state`` alone (docs/compile.md, "The warm start").
_WHERE = {"lower": "compiler", "structural_key": "compiler", "NotCovered": "fused_loops"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["CompiledGraph", "NotCovered", "clear_cache", "from_warm_state", "lower", "structural_key", "warm_state"]
