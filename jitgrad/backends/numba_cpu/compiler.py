"""``lower``: generated source -> numba dispatcher (cached by source) -> a callable over numpy arrays.

With a disk cache, a kernel compiled before (in any process, on this CPU and these versions) is first
looked for as object code, which ``object_loader`` runs without importing numba; then in numba's own
cache; then numba compiles it, and both are stored. numba is imported only on the last two paths."""
from __future__ import annotations

import hashlib
import itertools
import linecache
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from ...fx.graph import Graph
from ..output_pool import output_arrays
from ..source import without_comments
from . import numpy_blas, object_loader
from .codegen import GeneratedKernel, generate
from .nodes import LoweringError
from .numba_options import numba_options, optimisation_level, optimised_at

_KERNELS: dict[tuple[str, bool], Callable[..., Any]] = {}   # numba dispatchers, by code key
_LOADED: dict[str, Callable[..., Any]] = {}   # kernels run from cached object code, by object key
_ids = itertools.count()

def code_key(source: str) -> str:
    """A hash of the generated source without its comments, and of the BLAS it links: the key a
    kernel is cached under (on disk too, where another numpy may have another BLAS)."""
    return _key_of(without_comments(source))


def _key_of(code: str) -> str:
    return hashlib.sha256((code + numpy_blas.description()).encode()).hexdigest()


def structural_key(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> str:
    """A hash of what the compiled kernel depends on: ops, attributes, dtypes, ranks, which dimensions
    are 1, the fusion groups and the memory plan, the numba flags; not sizes nor the values of numbers.
    It hashes the generated code, which holds exactly these."""
    return code_key(generate(graph, parallel, fastmath).source)


def clear_cache() -> None:
    """Forgets every compiled kernel of this process (tests use it to count compiles)."""
    _KERNELS.clear()
    _LOADED.clear()


def numba_runtime() -> None:
    """Imports the backend's numba functions kernels call, before numba compiles or loads a kernel:
    they are decorated at import, and must be while ``numba.config.DISABLE_JIT`` is as numba starts
    (tests turn it on for a while); a process running cached object code never needs them."""
    from . import blas, intrinsics, sampling  # noqa: F401


def _compile(source: str, key: str, fastmath: bool, parallel: bool) -> Callable[..., Any]:
    """The kernel for ``key`` (``code_key(source)``) and ``fastmath``, compiled from ``source`` the first
    time. (``parallel`` follows from the source: whether the kernel's own loops use prange.)"""
    kernel = _KERNELS.get((key, fastmath))
    if kernel is None:
        import numba

        numba_runtime()
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

    def __init__(self, graph: Graph, generated: GeneratedKernel, key: str, fastmath: bool) -> None:
        self.source = generated.source
        self.key = key
        self.kernel: Callable[..., Any] | None = None   # set by ``use``
        self.loaded = False   # the kernel runs from cached object code: numba's wrapper, no dispatcher
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
        self.from_disk = False   # the kernel's machine code came from the disk cache
        self._number_types = {i: type(self.expected[i][1].type(0).item()) for i in self.numbers_in}

    def use(self, kernel: Callable[..., Any], loaded: bool = False) -> None:
        """Runs ``kernel``: a numba dispatcher (or, with numba's JIT off, the plain function), or with
        ``loaded`` one overload's entry point from cached object code, which converts a Python number
        to the type it was compiled for (a dispatcher would pick or compile an overload for it)."""
        self.kernel = kernel
        self.loaded = loaded

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
        numbers = self._number_types if self.loaded else {}  # the entry point unboxes exactly the types it
        for name, a, (shape, dtype) in zip(self.names, arrays, self.expected):  # was compiled for
            if numbers and len(args) in numbers:
                args.append(numbers[len(args)](a))
                continue
            if type(a) is not np.ndarray:  # a Python number passed at each call (fx.numbers)
                if not self.loaded:
                    args.append(a)
                    continue
                a = np.asarray(a)
            if a.shape != shape or (a.dtype is not dtype and a.dtype != dtype):  # ``is``: dtypes compare slowly
                raise ValueError(f"argument {name}: expected {dtype}{list(shape)}, got {a.dtype}{list(a.shape)} "
                                 f"(lower the graph traced at these shapes)")
            if not shape:
                a = a.reshape(1)
            else:
                flags = a.flags
                if not (flags.c_contiguous and flags.aligned):  # the kernel was compiled for C-contiguous,
                    a = np.array(a, order="C")                   # aligned arrays
            args.append(a)
        out = output_arrays(self._local, self.output_arrays)
        try:
            self.kernel(*args, *self.trailing_arguments(), *out)
        except ZeroDivisionError:  # an integer division (integer_division.py): eager's error
            raise RuntimeError("ZeroDivisionError") from None
        return out

    def __repr__(self) -> str:
        return f"<CompiledGraph {self.key[:12]}>"


def _jit_disabled() -> bool:
    """Whether numba runs kernels as plain Python (``NUMBA_DISABLE_JIT``): then no machine code runs,
    cached or not."""
    numba = sys.modules.get("numba")
    return bool(numba.config.DISABLE_JIT) if numba is not None else os.environ.get("NUMBA_DISABLE_JIT", "0") != "0"


def _argument_types(compiled: CompiledGraph) -> list[tuple[str, str, int]]:
    """The kernel's argument types as numba sees them, without numba: ("array", dtype, rank) or
    ("number", Python type, 0), in call order."""
    types = [("array", dtype.str, max(len(shape), 1)) for shape, dtype in compiled.expected]
    for i in compiled.numbers_in:
        types[i] = ("number", type(compiled.expected[i][1].type(0).item()).__name__, 0)
    types += [("array", a.dtype.str, a.ndim) for a in compiled.trailing_arguments()]
    return types + [("array", np.dtype(dtype).str, len(shape)) for shape, dtype in compiled.output_arrays]


def _object_key(key: str, compiled: CompiledGraph) -> str:
    """The key of a kernel's object code: its code and its argument types (one object per overload)."""
    return hashlib.sha256(repr((key, _argument_types(compiled))).encode()).hexdigest()


def _load_object(cache: Any, key: str, options: dict[str, Any]) -> Callable[..., Any] | bool:
    """The kernel from its object code in the disk cache, run without numba; False where there is
    none; True where there was one that failed a check or could not be loaded here (said in the log):
    the kernel is then compiled afresh, and stored again."""
    objects = cache.of_kind("objects")
    found = objects.load_object(key, options)
    if found is None:
        return False
    name, code, loader = found
    if code is None:
        return True
    try:
        entry, exceptions = loader["entry"], loader["exceptions"]
        if not isinstance(entry, str) or not isinstance(exceptions, list):
            raise object_loader.LoadFailure("the entry's loader data is malformed")
        return object_loader.load(object_loader.KernelObject(code, entry, exceptions), name,
                                  lambda line: objects.log(f"{name}: {line}"))
    except Exception as error:  # noqa: BLE001 - LoadFailure, malformed loader data, LLVM refusing the object:
        objects.object_failed(name, str(error) or type(error).__name__)  # any of them compiles the kernel
        return True


def _store_object(cache: Any, key: str, options: dict[str, Any], kernel: Any, signature: tuple) -> None:
    from .object_code import kernel_object

    objects = cache.of_kind("objects")
    try:
        found = kernel_object(kernel, signature)
    except Exception as error:  # noqa: BLE001 - NotStorable, or numba's library without its object: the
        # object code is an optimisation of the next process's start
        objects.log(f"object code for kernel {key[:12]} not kept (numba's cache has it): {error}")
        return
    objects.store_object(key, options, found.code, {"entry": found.entry, "exceptions": found.exceptions})


def warm_state(compiled: CompiledGraph) -> tuple[dict[str, Any], list[np.ndarray]] | None:
    """What ``from_warm_state`` needs to run ``compiled`` in another process without its graph (the
    warm-start index, ``jitgrad.compile.warm_index``): data and arrays; None under ``NUMBA_DISABLE_JIT``."""
    if _jit_disabled():
        return None
    state = {"source": compiled.source, "key": compiled.key, "object_key": _object_key(compiled.key, compiled),
             "options": sorted(compiled.numba_options.items()), "names": compiled.names,
             "expected": [[list(shape), dtype.str] for shape, dtype in compiled.expected],
             "numbers_in": compiled.numbers_in,
             "workspaces": [[np.dtype(dtype).str, int(n)] for dtype, n in compiled.workspace_sizes],
             "sizes": [int(n) for n in compiled.numbers[0]], "scalars": [float(x) for x in compiled.numbers[1]],
             "outputs": [[list(shape), np.dtype(dtype).str] for shape, dtype in compiled.output_arrays]}
    return state, list(compiled.constants)


def from_warm_state(state: dict[str, Any], constants: list[np.ndarray], cache: Any) -> CompiledGraph | None:
    """The ``CompiledGraph`` ``warm_state`` described, its kernel loaded from its object code in
    ``cache`` (verified there), never compiled: None when the object code is not there or cannot be
    loaded (the caller traces and compiles as usual)."""
    if _jit_disabled():
        return None
    object_key, options = state["object_key"], dict((k, v) for k, v in state["options"])
    kernel = _LOADED.get(object_key)
    if kernel is None:
        found = _load_object(cache, object_key, options)
        if not callable(found):
            return None
        kernel = _LOADED[object_key] = found
    compiled = CompiledGraph.__new__(CompiledGraph)
    compiled.source, compiled.key, compiled.numba_options = state["source"], state["key"], options
    compiled.names = list(state["names"])
    compiled.expected = [(tuple(shape), np.dtype(dtype)) for shape, dtype in state["expected"]]
    compiled.numbers_in = list(state["numbers_in"])
    compiled.constants = tuple(constants)
    compiled.workspace_sizes = [(np.dtype(dtype), n) for dtype, n in state["workspaces"]]
    compiled.numbers = (np.asarray(state["sizes"], dtype=np.int64), np.asarray(state["scalars"], dtype=np.float64))
    compiled.output_arrays = [(tuple(shape), np.dtype(dtype)) for shape, dtype in state["outputs"]]
    compiled._local = threading.local()
    compiled.from_disk = True
    compiled._number_types = {i: type(compiled.expected[i][1].type(0).item()) for i in compiled.numbers_in}
    compiled.use(kernel, loaded=True)
    return compiled


def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None) -> CompiledGraph:
    """Compiles ``graph`` (not modified) with numba; see the package docstring. ``cache`` (a
    ``compile.cache.DiskCache``) gives the kernel's machine code from an earlier process, verified,
    and keeps a newly compiled one."""
    generated = generate(graph, parallel, fastmath)
    code = without_comments(generated.source)
    key = _key_of(code)
    options = numba_options(fastmath, generated.parallel)
    compiled = CompiledGraph(graph, generated, key, fastmath)
    object_key = _object_key(key, compiled)
    plain = _jit_disabled()
    kernel = (None if plain else _LOADED.get(object_key)) or _KERNELS.get((key, fastmath))
    fresh = False
    if kernel is None and cache is not None:
        found = False if plain else _load_object(cache, object_key, options)
        if callable(found):
            kernel = _LOADED[object_key] = found
        elif not found:  # no object code (a kernel that needs numba at run time): numba's cache
            numba_runtime()
            kernel = cache.load_kernel(code, key, options)
            if kernel is not None:
                _KERNELS[key, fastmath] = kernel
        compiled.from_disk = kernel is not None
    if kernel is None:
        kernel, fresh = _compile(generated.source, key, fastmath, generated.parallel), True
    compiled.use(kernel, loaded=object_key in _LOADED)
    if hasattr(kernel, "compile"):  # a dispatcher, not under NUMBA_DISABLE_JIT: compile now, so errors surface here
        import numba

        types = [numba.typeof(np.empty(shape or (1,), dtype)) for shape, dtype in compiled.expected]
        for i in compiled.numbers_in:
            types[i] = numba.typeof(compiled.expected[i][1].type(0).item())  # a Python int or float
        types += [numba.typeof(a) for a in compiled.trailing_arguments()]
        types += [numba.typeof(np.empty(shape, dtype)) for shape, dtype in compiled.output_arrays]
        try:
            with optimised_at(optimisation_level(code)):
                kernel.compile(tuple(types))
        except Exception as error:  # numba's typing and lowering errors have many classes
            _KERNELS.pop((key, fastmath), None)
            raise LoweringError(f"numba could not compile the generated kernel: {str(error).splitlines()[0]}"
                                f"\n{generated.source}") from error
        if fresh and cache is not None:
            cache.store_kernel(code, key, options, kernel)
            _store_object(cache, object_key, options, kernel, tuple(types))
    return compiled
