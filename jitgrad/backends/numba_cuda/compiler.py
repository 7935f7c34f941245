"""``lower``: a graph -> its generated module (``codegen.py``) -> ``CudaProgram``, a callable over device
arrays.

Modules are executed once per source in a process (``_MODULES``): the source holds no sizes and no
numbers, so every graph of the same structure (another batch size, an eager op at other shapes) gets
the same ``@cuda.jit`` dispatchers, which compile each kernel once per argument types.

Given a disk cache (``jitgrad.compile.cache.DiskCache``; its ``cuda`` kind), a module is executed from
the cache's verified file of its source (without comments) instead, and its kernels keep their
machine code there: numba-cuda's ``cache=True`` (``enable_caching``), whose files the cache hashes
after a launch compiled (``_Stored``) and checks before a later process runs anything of the module.
Eager ops and compiled functions lower through here with the same cache, so they share every entry.
Under the simulator the sources are cached, and numba-cuda keeps no machine code.
"""
from __future__ import annotations

import hashlib
import itertools
import linecache
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ...fx.graph import Graph
from ..source import without_comments
from .codegen import GeneratedModule, ParamType, generate
from .errors import LoweringError
from .launch import THREADS, Launcher
from .simulator import install, is_simulator

_ids = itertools.count()


def cache_options() -> dict[str, Any]:
    """What a cached module's machine code depends on besides its source (the cache's key adds the
    versions of jitgrad and numba): the target, numba-cuda's version, and the simulator's block size,
    which kernels read as a global (numba's own index keys by compute capability)."""
    import numba_cuda

    return {"target": "cuda", "numba_cuda": numba_cuda.__version__, "simulator": is_simulator(), "threads": THREADS}


class _Stored:
    """A module kept in the disk cache: after a call in which numba compiled a kernel of it (a new
    signature, or a compute capability its files lacked), the entry is written again, so that it
    records the hashes of numba's files as they are now."""

    def __init__(self, cache: Any, code: str, options: dict[str, Any], kernels: list[Any], recorded: bool) -> None:
        self.cache, self.code, self.options, self.kernels = cache, code, options, kernels
        self.key = hashlib.sha256(code.encode()).hexdigest()
        self.recorded = recorded
        self.overloads = 0 if recorded else -1
        self.misses = 0

    def after_call(self) -> None:
        overloads = sum(len(k.overloads) for k in self.kernels)  # a dict's length: cheap on every call
        if overloads == self.overloads:
            return
        self.overloads = overloads
        misses = sum(sum(k.stats.cache_misses.values()) for k in self.kernels)  # compiled, not loaded
        if misses != self.misses or not self.recorded:
            self.misses = misses
            self.recorded = self.cache.record(self.code, self.key, self.options)


@dataclass
class _Module:
    namespace: dict[str, Any]
    stored: _Stored | None = None


_MODULES: dict[str, _Module] = {}


def structural_key(graph: Graph) -> str:
    """Equal for graphs that share one generated module (the code, without its comments, hashed): ops,
    attributes, dtypes, ranks, which dimensions are 1, fusion groups and the memory plan."""
    return hashlib.sha256(without_comments(generate(graph).source).encode()).hexdigest()


def clear_cache() -> None:
    """Forgets every generated module of this process (tests count compiles with it)."""
    _MODULES.clear()


def _module(generated: GeneratedModule, cache: Any = None) -> tuple[_Module, bool]:
    """The executed module of ``generated`` and whether it came from the disk cache (this call)."""
    code = without_comments(generated.source)
    module = _MODULES.get(code)
    from_disk = False
    if module is None:
        install()
        if cache is not None:
            module, from_disk = _disk_module(generated, code, cache.of_kind("cuda"))
        if module is None:
            source = generated.source
            filename = f"<jitgrad.backends.numba_cuda module {next(_ids)}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            namespace: dict[str, Any] = {}
            exec(compile(source, filename, "exec"), namespace)
            module = _Module(namespace)
        _MODULES[code] = module
    return module, from_disk


def _disk_module(generated: GeneratedModule, code: str, cache: Any) -> tuple[_Module | None, bool]:
    """The module from ``cache``'s verified entry, else stored there now; None where the cache is not
    used. Its kernels are made to keep their machine code beside it (not under the simulator)."""
    key, options = hashlib.sha256(code.encode()).hexdigest(), cache_options()
    loaded = cache.load_module(code, key, options)
    executed = loaded if loaded is not None else cache.write_module(code, key, options)
    if executed is None:
        return None, False
    namespace = vars(executed)
    kernels = []
    if not is_simulator():  # the simulator's kernels have no machine code to keep
        for name, _ in generated.kernels:
            kernel = namespace[name]
            kernel.enable_caching()
            if not cache.numba_cache_path_is_ours(kernel):  # numba would keep it elsewhere, unchecked
                return None, False
            kernels.append(kernel)
    return _Module(namespace, _Stored(cache, code, options, kernels, loaded is not None)), loaded is not None


def parameter_type(param: ParamType) -> Any:
    """A kernel parameter's numba type, as ``compile_ptx`` wants it (any layout for arrays)."""
    if param[0] == "array":
        return numba.types.Array(numba.from_dtype(param[1]), param[2], "A")
    return numba.int64 if param[0] == "int64" else numba.float64


def _library_kernels(module: str) -> list[tuple[str, Any, tuple]]:
    import importlib

    return list(importlib.import_module(f"jitgrad.backends.numba_cuda.{module}").KERNELS)


def kernels_of(generated: GeneratedModule) -> list[tuple[str, Any, tuple]]:
    """Every kernel a generated module may launch, as (name, pyfunc, numba argument types): its own,
    those of the library modules its host code calls (statements, and copies of outputs). Needs no GPU
    (the PTX check compiles these with ``numba.cuda.compile_ptx``)."""
    namespace = _module(generated)[0].namespace
    found = [(name, namespace[name].py_func, tuple(parameter_type(t) for t in types)) for name, types in generated.kernels]
    for module in generated.libraries:
        found += _library_kernels(module)
    return found


class CudaProgram:
    """A lowered graph: call it with one device array (or Python number) per placeholder, or a numpy
    array, copied to the device first (a 0-d CPU tensor in a step, as an eager op takes one); it
    returns the outputs, flattened. ``source`` is the generated module, ``launches`` the (kernel, grid,
    block) of the last call, ``kernels`` every kernel it may launch as (name, pyfunc, numba argument
    types), ``from_disk`` whether its module came from the disk cache."""

    def __init__(self, graph: Graph, generated: GeneratedModule, cache: Any = None) -> None:
        from numba import cuda

        self.source = generated.source
        self.key = hashlib.sha256(without_comments(generated.source).encode()).hexdigest()
        module, self.from_disk = _module(generated, cache)
        self._run = module.namespace["run"]
        self._stored = module.stored
        self._generated = generated
        placeholders = graph.placeholders
        self.names = [p.name for p in placeholders]
        self.expected = [(tuple(p.meta["shape"]), np.dtype(p.meta["dtype"])) for p in placeholders]
        self.numbers_in = {i for i, p in enumerate(placeholders) if p.meta.get("python_number")}
        self._constants = tuple(cuda.to_device(np.ascontiguousarray(graph.constants[k]._data).reshape(
            graph.constants[k]._data.shape or (1,))) for k in generated.constants) + \
            tuple(cuda.to_device(a) for a in generated.index_arrays)
        self._buffers = tuple(cuda.device_array(n, dtype) for dtype, n in generated.buffers)
        self._launcher = Launcher()

    @property
    def launches(self) -> list[tuple[str, Any, Any]]:
        return list(self._launcher.records)

    @property
    def kernels(self) -> list[tuple[str, Any, tuple]]:
        return kernels_of(self._generated)

    def __call__(self, *arrays: Any, stream: Any = None) -> list[Any]:
        from numba import cuda

        if len(arrays) != len(self.expected):
            raise TypeError(f"the CUDA program takes {len(self.expected)} arguments ({', '.join(self.names)}), "
                            f"got {len(arrays)}")
        stream = cuda.default_stream() if stream is None else stream
        args = []
        for i, (name, a, (shape, dtype)) in enumerate(zip(self.names, arrays, self.expected)):
            if i in self.numbers_in:
                args.append(a)
                continue
            if tuple(a.shape) != shape or a.dtype != dtype:
                raise ValueError(f"argument {name}: expected {dtype}{list(shape)}, got {a.dtype}{list(a.shape)} "
                                 f"(lower the graph traced at these shapes)")
            if isinstance(a, np.ndarray):  # a host array (a 0-d CPU tensor joining, as eager ops let it)
                a = cuda.to_device(np.ascontiguousarray(a), stream=stream)
            args.append(a if shape else a.reshape(1))
        out = [cuda.device_array(shape or (1,), dtype, stream=stream) for shape, dtype in
               self._generated.output_arrays]
        g = self._generated
        with self._launcher.running(stream):
            results = self._run(*args, *self._constants, self._buffers, g.sizes, g.scalars, *out, stream,
                                self._launcher)
        self._launcher.raise_division_errors()
        if self._stored is not None:
            self._stored.after_call()
        return [r if tuple(r.shape) == shape else r.reshape(shape) for r, (shape, _) in zip(results, g.output_arrays)]

    def __repr__(self) -> str:
        return f"<CudaProgram {self.key[:12]}>"


def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None,
          share_views: bool = False) -> CudaProgram:
    """The program for ``graph`` (not modified). ``fastmath`` and ``parallel`` are the CPU backend's
    options, accepted so that ``jitgrad.compile`` calls both alike: kernels follow IEEE arithmetic and
    are parallel by construction. Modules are cached in memory by source (numba.cuda compiles each
    kernel on its first launch) and, given ``cache`` (a ``jitgrad.compile.cache.DiskCache``), on disk
    with their kernels' machine code. ``share_views`` returns an output that is a view as that view
    (eager ops) instead of a copy."""
    generated = generate(graph, share_views)
    try:
        return CudaProgram(graph, generated, cache)
    except SyntaxError as error:  # a generated module that does not parse is this backend's bug
        raise LoweringError(f"the generated CUDA module does not parse: {error}\n{generated.source}") from None


__all__ = ["CudaProgram", "LoweringError", "cache_options", "clear_cache", "kernels_of", "lower", "parameter_type",
           "structural_key"]
