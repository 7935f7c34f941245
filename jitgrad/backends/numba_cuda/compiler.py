"""``lower``: a graph -> its generated module (``codegen.py``) -> ``CudaProgram``, a callable over device
arrays.

Modules are executed once per source in a process (``_MODULES``): the source holds no sizes and no
numbers, so every graph of the same structure (another batch size, an eager op at other shapes) gets
the same ``@cuda.jit`` dispatchers, which compile each kernel once per argument types.
"""
from __future__ import annotations

import hashlib
import itertools
import linecache
from typing import Any

import numba
import numpy as np

from ...fx.graph import Graph
from ..source import without_comments
from .codegen import GeneratedModule, ParamType, generate
from .errors import LoweringError
from .launch import Launcher
from .simulator import install

_MODULES: dict[str, dict[str, Any]] = {}
_ids = itertools.count()


def structural_key(graph: Graph) -> str:
    """Equal for graphs that share one generated module (the code, without its comments, hashed): ops,
    attributes, dtypes, ranks, which dimensions are 1, fusion groups and the memory plan."""
    return hashlib.sha256(without_comments(generate(graph).source).encode()).hexdigest()


def clear_cache() -> None:
    """Forgets every generated module of this process (tests count compiles with it)."""
    _MODULES.clear()


def _module(source: str) -> dict[str, Any]:
    key = without_comments(source)
    namespace = _MODULES.get(key)
    if namespace is None:
        install()
        filename = f"<jitgrad.backends.numba_cuda module {next(_ids)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {}
        exec(compile(source, filename, "exec"), namespace)
        _MODULES[key] = namespace
    return namespace


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
    namespace = _module(generated.source)
    found = [(name, namespace[name].py_func, tuple(parameter_type(t) for t in types)) for name, types in generated.kernels]
    for module in generated.libraries:
        found += _library_kernels(module)
    return found


class CudaProgram:
    """A lowered graph: call it with one device array (or Python number) per placeholder, or a numpy
    array, copied to the device first (a 0-d CPU tensor in a step, as an eager op takes one); it
    returns the outputs, flattened. ``source`` is the generated module, ``launches`` the (kernel, grid, block) of
    the last call, ``kernels`` every kernel it may launch as (name, pyfunc, numba argument types)."""

    def __init__(self, graph: Graph, generated: GeneratedModule) -> None:
        from numba import cuda

        self.source = generated.source
        self.key = hashlib.sha256(without_comments(generated.source).encode()).hexdigest()
        namespace = _module(generated.source)
        self._run = namespace["run"]
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
        return [r if tuple(r.shape) == shape else r.reshape(shape) for r, (shape, _) in zip(results, g.output_arrays)]

    def __repr__(self) -> str:
        return f"<CudaProgram {self.key[:12]}>"


def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None,
          share_views: bool = False) -> CudaProgram:
    """The program for ``graph`` (not modified). ``fastmath``, ``parallel`` and ``cache`` are the CPU
    backend's options, accepted so that ``jitgrad.compile`` calls both alike: kernels follow IEEE
    arithmetic, are parallel by construction, and are cached in memory by source (numba.cuda compiles
    each on its first launch). ``share_views`` returns an output that is a view as that view (eager
    ops) instead of a copy."""
    generated = generate(graph, share_views)
    try:
        return CudaProgram(graph, generated)
    except SyntaxError as error:  # a generated module that does not parse is this backend's bug
        raise LoweringError(f"the generated CUDA module does not parse: {error}\n{generated.source}") from None


__all__ = ["CudaProgram", "LoweringError", "clear_cache", "kernels_of", "lower", "parameter_type", "structural_key"]
