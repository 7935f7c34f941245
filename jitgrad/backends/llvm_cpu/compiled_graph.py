"""A lowered graph as a callable (``CompiledGraph``), the kernels this process holds, and the warm state
that rebuilds a ``CompiledGraph`` in another process from the disk cache's object code.

This is all a warm process needs of the backend (the warm-start index, ``jitgrad.compile.warm_index``):
it imports neither the code generator (``codegen.py``, ``statements/``) nor numba, only the object
loader and llvmlite. ``compiler.lower`` builds ``CompiledGraph`` from a generated kernel.
"""
from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..numba_cpu import numpy_blas
from ..output_pool import output_arrays
from . import loader
from .machine_code import OPT_LEVEL

if TYPE_CHECKING:
    from ...fx.graph import Graph
    from .codegen import GeneratedKernel

KERNELS: dict[str, loader.LoadedKernel] = {}   # by code key: graphs differing in sizes or numbers share one
LOCK = threading.Lock()


def code_key(ir: str) -> str:
    """The key a kernel is kept under: its IR without comments, the BLAS it links, the pipeline."""
    code = "\n".join(line for line in ir.splitlines() if not line.lstrip().startswith(";"))
    return hashlib.sha256(f"{code}\n{numpy_blas.description()}\nO{OPT_LEVEL}".encode()).hexdigest()


def clear_cache() -> None:
    """Forgets every kernel of this process (tests use it to count compiles)."""
    KERNELS.clear()


def options(fastmath: bool) -> dict[str, Any]:
    """What an object in the disk cache was compiled with (its entry's key holds it)."""
    return {"backend": "llvm_cpu", "fastmath": fastmath, "opt": OPT_LEVEL}


class CompiledGraph:
    """A lowered graph: call it with one array per placeholder. ``source`` is the kernel's LLVM IR;
    ``key`` its code key; ``from_disk`` whether its object code came from the disk cache."""

    def __init__(self, graph: Graph, generated: GeneratedKernel, key: str, fastmath: bool) -> None:
        self.source = generated.ir
        self.key = key
        self.fastmath = fastmath
        self.from_disk = False
        self.kernel: Any = None
        self.loaded: loader.LoadedKernel | None = None   # holds the engine the kernel's code lives in
        placeholders = graph.placeholders
        self.names = [p.name for p in placeholders]
        self.expected = [(tuple(p.meta["shape"]), np.dtype(p.meta["dtype"])) for p in placeholders]
        self.numbers_in = {i for i, p in enumerate(placeholders) if p.meta.get("python_number")}
        self.constants = tuple(np.ascontiguousarray(graph.constants[k]._data).reshape(
            graph.constants[k]._data.shape or (1,)) for k in generated.constants)
        self.workspace_sizes = generated.workspaces
        self.leading = (np.asarray(generated.sizes, dtype=np.int64).reshape(-1),
                        np.asarray(generated.scalars, dtype=np.float64).reshape(-1))
        if not generated.sizes:
            self.leading = (np.zeros(1, np.int64), self.leading[1])
        if not generated.scalars:
            self.leading = (self.leading[0], np.zeros(1, np.float64))
        self.output_arrays = generated.output_arrays
        self._local = threading.local()

    def workspaces(self) -> tuple[np.ndarray, ...]:
        """This thread's workspaces, allocated on its first call (the kernel releases the GIL: two
        threads running it at once must not share them)."""
        arrays = getattr(self._local, "workspaces", None)
        if arrays is None:
            arrays = self._local.workspaces = tuple(np.empty(n, dtype) for dtype, n in self.workspace_sizes)
        return arrays

    def __call__(self, *arrays: Any) -> list[np.ndarray]:
        if len(arrays) != len(self.expected):
            raise TypeError(f"the compiled graph takes {len(self.expected)} arrays ({', '.join(self.names)}), "
                            f"got {len(arrays)}")
        args = []
        for i, (name, a, (shape, dtype)) in enumerate(zip(self.names, arrays, self.expected)):
            if i in self.numbers_in:  # a Python number passed at each call: a one-element array
                args.append(np.full(1, a, dtype))
                continue
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            if a.shape != shape or (a.dtype is not dtype and a.dtype != dtype):
                raise ValueError(f"argument {name}: expected {dtype}{list(shape)}, got {a.dtype}{list(a.shape)} "
                                 f"(lower the graph traced at these shapes)")
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned):   # the kernel reads C-contiguous, aligned arrays
                a = np.array(a, order="C")
            args.append(a)
        out = output_arrays(self._local, self.output_arrays)
        self.kernel(*self.leading, *out, *args, *self.constants, *self.workspaces())
        return out

    def __repr__(self) -> str:
        return f"<llvm_cpu CompiledGraph {self.key[:12]}>"


def warm_state(compiled: CompiledGraph) -> tuple[dict[str, Any], list[np.ndarray]] | None:
    """What ``from_warm_state`` needs to run ``compiled`` in another process without its graph (the
    warm-start index, ``jitgrad.compile.warm_index``): plain data, and the constants' arrays."""
    state = {"backend": "llvm_cpu", "source": compiled.source, "key": compiled.key, "fastmath": compiled.fastmath,
             "names": compiled.names, "expected": [[list(shape), dtype.str] for shape, dtype in compiled.expected],
             "numbers_in": sorted(compiled.numbers_in),
             "workspaces": [[np.dtype(dtype).str, int(n)] for dtype, n in compiled.workspace_sizes],
             "sizes": [int(n) for n in compiled.leading[0]], "scalars": [float(x) for x in compiled.leading[1]],
             "outputs": [[list(shape), np.dtype(dtype).str] for shape, dtype in compiled.output_arrays]}
    return state, list(compiled.constants)


def from_warm_state(state: dict[str, Any], constants: list[np.ndarray], cache: Any) -> CompiledGraph | None:
    """The ``CompiledGraph`` ``warm_state`` described, its kernel from this process or from its object
    code in ``cache`` (verified there), never compiled: None when neither has it (the caller traces
    and compiles as usual)."""
    key, fastmath = state["key"], bool(state["fastmath"])
    with LOCK:
        kernel = KERNELS.get(key)
        from_disk = kernel is None
        if kernel is None and cache is not None:
            kernel = load_from_disk(cache, key, fastmath)
        if kernel is None:
            return None
        KERNELS[key] = kernel
    compiled = CompiledGraph.__new__(CompiledGraph)
    compiled.source, compiled.key, compiled.fastmath, compiled.from_disk = state["source"], key, fastmath, from_disk
    compiled.names = list(state["names"])
    compiled.expected = [(tuple(shape), np.dtype(dtype)) for shape, dtype in state["expected"]]
    compiled.numbers_in = set(state["numbers_in"])
    compiled.constants = tuple(constants)
    compiled.workspace_sizes = [(np.dtype(dtype), int(n)) for dtype, n in state["workspaces"]]
    compiled.leading = (np.asarray(state["sizes"], dtype=np.int64), np.asarray(state["scalars"], dtype=np.float64))
    compiled.output_arrays = [(tuple(shape), np.dtype(dtype)) for shape, dtype in state["outputs"]]
    compiled._local = threading.local()
    compiled.loaded, compiled.kernel = kernel, kernel.function
    return compiled


def load_from_disk(cache: Any, key: str, fastmath: bool) -> loader.LoadedKernel | None:
    """The kernel whose object code ``cache`` holds under ``key``, loaded; None where there is none or
    it does not load here (the cache logs and forgets that object, and the caller compiles)."""
    objects = cache.of_kind("objects")
    found = objects.load_object(key, options(fastmath))
    if found is None:
        return None
    name, code, _ = found
    if code is None:
        return None
    try:
        kernel = loader.load(code)
    except Exception as error:  # noqa: BLE001 - LoadFailure, LLVM refusing the object: compile it afresh
        objects.object_failed(name, str(error) or type(error).__name__)
        return None
    if kernel.note:
        objects.log(f"{name}: {kernel.note}")
    return kernel


__all__ = ["KERNELS", "LOCK", "CompiledGraph", "clear_cache", "code_key", "from_warm_state", "load_from_disk",
           "options", "warm_state"]
