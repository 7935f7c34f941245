"""``lower``: generated source -> numba dispatcher (cached by source) -> a callable over numpy arrays."""
from __future__ import annotations

import hashlib
import itertools
import linecache
import threading
from typing import Any, Callable

import numpy as np

from ...fx.graph import Graph
from ..source import without_comments
from . import blas
from .codegen import GeneratedKernel, generate
from .nodes import LoweringError
from .numba_options import numba_options

_KERNELS: dict[tuple[str, bool], Callable[..., Any]] = {}
_ids = itertools.count()


def code_key(source: str) -> str:
    """A hash of the generated source without its comments, and of the BLAS it links: the key a
    kernel is cached under (on disk too, where another numpy may have another BLAS)."""
    return hashlib.sha256((without_comments(source) + blas.description()).encode()).hexdigest()


def structural_key(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> str:
    """A hash of what the compiled kernel depends on: ops, attributes, dtypes, ranks, which dimensions
    are 1, the fusion groups and the memory plan, the numba flags; not sizes nor the values of numbers.
    It hashes the generated code, which holds exactly these."""
    return code_key(generate(graph, parallel, fastmath).source)


def clear_cache() -> None:
    """Forgets every compiled kernel of this process (tests use it to count compiles)."""
    _KERNELS.clear()


def _compile(source: str, key: str, fastmath: bool, parallel: bool) -> Callable[..., Any]:
    """The kernel for ``key`` (``code_key(source)``) and ``fastmath``, compiled from ``source`` the first
    time. (``parallel`` follows from the source: whether the kernel's own loops use prange.)"""
    kernel = _KERNELS.get((key, fastmath))
    if kernel is None:
        import numba

        filename = f"<jitgrad.backends.numba_cpu kernel {next(_ids)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict[str, Any] = {}
        exec(compile(source, filename, "exec"), namespace)
        kernel = numba.njit(**numba_options(fastmath, parallel))(namespace["kernel"])
        _KERNELS[key, fastmath] = kernel
    return kernel


class CompiledGraph:
    """A lowered graph: call it with one array per placeholder. ``source`` is the kernel's source;
    ``key`` its structural key; ``numba_options`` what it was compiled with."""

    def __init__(self, graph: Graph, generated: GeneratedKernel, key: str, kernel: Callable[..., Any],
                 fastmath: bool, from_disk: bool = False) -> None:
        self.source = generated.source
        self.key = key
        self.kernel = kernel
        self.numba_options = numba_options(fastmath, generated.parallel)
        placeholders = graph.placeholders
        self.names = [p.name for p in placeholders]
        self.expected = [(tuple(p.meta["shape"]), np.dtype(p.meta["dtype"])) for p in placeholders]
        self.numbers_in = [i for i, p in enumerate(placeholders) if p.meta.get("python_number")]
        self.constants = tuple(np.ascontiguousarray(graph.constants[k]._data).reshape(
            graph.constants[k]._data.shape or (1,)) for k in generated.constants) + tuple(generated.index_arrays)
        self.workspace_sizes = generated.workspaces
        self.numbers = (np.asarray(generated.sizes, dtype=np.int64), np.asarray(generated.scalars, dtype=np.float64))
        self.output_arrays = generated.output_arrays
        self._local = threading.local()
        self.from_disk = from_disk   # the kernel's machine code came from the disk cache

    @property
    def parallel(self) -> bool:
        """Whether numba compiles the kernel with ``parallel=True`` (its own loops use prange)."""
        return bool(self.numba_options["parallel"])

    def trailing_arguments(self) -> tuple[np.ndarray, ...]:
        """The kernel's arguments after the placeholders, for this thread: constants, workspaces,
        sizes and numbers. The workspaces are allocated on a thread's first call and reused by every
        later one (a kernel releases the GIL, so two threads running it at once must not share them)."""
        arrays = getattr(self._local, "trailing", None)
        if arrays is None:
            workspaces = tuple(np.empty(n, dtype) for dtype, n in self.workspace_sizes)
            arrays = self._local.trailing = (*self.constants, *workspaces, *self.numbers)
        return arrays

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        if len(arrays) != len(self.expected):
            raise TypeError(f"the compiled graph takes {len(self.expected)} arrays ({', '.join(self.names)}), "
                            f"got {len(arrays)}")
        args = []
        for name, a, (shape, dtype) in zip(self.names, arrays, self.expected):
            if type(a) is not np.ndarray:  # a Python number passed at each call (fx.numbers)
                args.append(a)
                continue
            if a.shape != shape or (a.dtype is not dtype and a.dtype != dtype):  # ``is``: dtypes compare slowly
                raise ValueError(f"argument {name}: expected {dtype}{list(shape)}, got {a.dtype}{list(a.shape)} "
                                 f"(lower the graph traced at these shapes)")
            if not shape:
                a = a.reshape(1)
            elif not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            args.append(a)
        out = [np.empty(shape, dtype) for shape, dtype in self.output_arrays]
        try:
            self.kernel(*args, *self.trailing_arguments(), *out)
        except ZeroDivisionError:  # an integer division (integer_division.py): eager's error
            raise RuntimeError("ZeroDivisionError") from None
        return out

    def __repr__(self) -> str:
        return f"<CompiledGraph {self.key[:12]}>"


def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None) -> CompiledGraph:
    """Compiles ``graph`` (not modified) with numba; see the package docstring. ``cache`` (a
    ``compile.cache.DiskCache``) gives the kernel's machine code from an earlier process, verified,
    and keeps a newly compiled one."""
    generated = generate(graph, parallel, fastmath)
    key = code_key(generated.source)
    options = numba_options(fastmath, generated.parallel)
    kernel = _KERNELS.get((key, fastmath))
    from_disk = fresh = False
    if kernel is None and cache is not None:
        kernel = cache.load_kernel(without_comments(generated.source), key, options)
        from_disk = kernel is not None
        if from_disk:
            _KERNELS[key, fastmath] = kernel
    if kernel is None:
        kernel, fresh = _compile(generated.source, key, fastmath, generated.parallel), True
    compiled = CompiledGraph(graph, generated, key, kernel, fastmath, from_disk)
    if hasattr(kernel, "compile"):  # not under NUMBA_DISABLE_JIT: compile now, so errors surface here
        import numba

        types = [numba.typeof(np.empty(shape or (1,), dtype)) for shape, dtype in compiled.expected]
        for i in compiled.numbers_in:
            types[i] = numba.typeof(compiled.expected[i][1].type(0).item())  # a Python int or float
        types += [numba.typeof(a) for a in compiled.trailing_arguments()]
        types += [numba.typeof(np.empty(shape, dtype)) for shape, dtype in compiled.output_arrays]
        try:
            kernel.compile(tuple(types))
        except Exception as error:  # numba's typing and lowering errors have many classes
            _KERNELS.pop((key, fastmath), None)
            raise LoweringError(f"numba could not compile the generated kernel: {str(error).splitlines()[0]}"
                                f"\n{generated.source}") from error
        if fresh and cache is not None:
            cache.store_kernel(without_comments(generated.source), key, options, kernel)
    return compiled
