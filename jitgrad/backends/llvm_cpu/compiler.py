"""``lower``: graph -> LLVM IR (``codegen``) -> object code (``machine_code``, or the disk cache) ->
a callable over numpy arrays (``compiled_graph.CompiledGraph``, calling what ``loader`` loaded).

Kernels are kept in this process by their code key (a hash of the IR and of the BLAS it links), so
graphs differing only in sizes or numbers compile once; with a disk cache (``objects`` kind, verified
by the cache before it is handed over) the object code of an earlier process is loaded instead of
compiled, and a newly compiled one is stored. Nothing here imports numba.
"""
from __future__ import annotations

from typing import Any

from ...fx.graph import Graph
from . import loader
from .codegen import generate
from .compiled_graph import (KERNELS, LOCK, CompiledGraph, clear_cache, code_key, from_warm_state, load_from_disk,
                             options, warm_state)
from .fused_loops import NotCovered
from .machine_code import compile_ir


def structural_key(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> str:
    return code_key(generate(graph, parallel, fastmath).ir)


def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None) -> CompiledGraph:
    """Compiles ``graph`` (not modified) to machine code through LLVM IR; ``NotCovered`` (before any
    compile) where the generator has no code for one of its ops or uses."""
    why = loader.check_layout()
    if why is not None:
        raise NotCovered(why)
    generated = generate(graph, parallel, fastmath)
    key = code_key(generated.ir)
    compiled = CompiledGraph(graph, generated, key, fastmath)
    with LOCK:
        kernel = KERNELS.get(key)
        if kernel is None and cache is not None:
            kernel = load_from_disk(cache, key, fastmath)
            compiled.from_disk = kernel is not None
        if kernel is None:
            code = compile_ir(generated.ir)
            kernel = loader.load(code)
            if cache is not None:
                if kernel.note:
                    cache.log(f"kernel {key[:12]}: {kernel.note}")
                cache.of_kind("objects").store_object(key, options(fastmath), code, {"entry": "llvm_cpu"})
        KERNELS[key] = kernel
    compiled.loaded, compiled.kernel = kernel, kernel.function
    return compiled


__all__ = ["CompiledGraph", "clear_cache", "code_key", "from_warm_state", "lower", "options", "structural_key",
           "warm_state"]
