"""Writes a graph as one Python module: a ``@cuda.jit`` kernel per fusion group and ``run``, the host
function that launches them.

``run`` takes the placeholders' device arrays (a Python number as itself), the graph's constants and
the index arrays statements asked for (device arrays the program copied once), ``buffers`` (one device
array per buffer of the memory plan that is not an output, allocated once by the program and kept
between calls, as the CPU's workspaces), ``sizes`` and ``scalars`` (the sizes no input's ``.shape``
gives, the graph's Python numbers), one array per output (allocated by the program at each call and
filled), the stream and the launcher. It reads sizes from the inputs' shapes, binds each value to its
buffer, and runs the units in the plan's order: a fusion group is a launch of its kernel(s)
(``elementwise.py``, ``reduction.py``), any other op is its statement's host lines (``statements/``:
a view binds a device-array view, a library call launches its kernels). It returns the outputs.

No size and no number is written into the source (they are arguments of ``run`` and of each
kernel), so graphs that differ in them share the module and every kernel. Each node's IR line is its
comment, with the kernel's own sizes (as on the CPU: ``backends/nodes.kernel_comment``). Every value
has rank at least 1 (a 0-d tensor is a 1-element array), as on the CPU.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fx.graph import Graph
from ...fx.node import Node, NodeKind, Opcode, iter_nodes
from ...fx.passes.memory import is_planned, output_buffer
from ...fx.passes.schedule import units
from ..nodes import check_lowerings, inexact_integer, kernel_shape, node_dtype
from ..source import product, shape_tuple
from ..source_writer import SourceWriter
from .context import OpContext
from .dialect import DIVISION_ERRORS, numba_type
from .elementwise import GroupKernel
from .errors import LoweringError
from .reduction import ReductionKernels
from .statements import STATEMENTS

# Names kernels and the host function take from their module or from builtins, never from a variable.
_DEVICE_FUNCTIONS = ("floor_divide_int", "fmod_int", "power_int", "remainder_int", "sign_of")
GLOBALS = frozenset({"cuda", "numba", "math", "range", "abs", "max", "min", "bool", "float", "int", "True",
                     "False", "None", "launch", *_DEVICE_FUNCTIONS})
_RESERVED = GLOBALS | {"run", "buffers", "sizes", "scalars", "stream", "permuted", "with_shape",
                       DIVISION_ERRORS}

# A kernel parameter's type, for ``compile_ptx``: ("array", dtype, ndim) or ("int64",) or ("float64",).
ParamType = tuple


@dataclass
class GeneratedModule:
    """The source and what the program passes to ``run`` besides the placeholders' arrays."""

    source: str
    kernels: list[tuple[str, list[ParamType]]]   # every generated kernel: name, parameter types
    libraries: list[str]                         # modules (relative to the backend) whose KERNELS it launches
    constants: list[str]                         # graph.constants keys, in argument order
    index_arrays: list[np.ndarray]
    buffers: list[tuple[np.dtype, int]]          # the plan's buffers that are not outputs: dtype, elements
    sizes: list[int]
    scalars: list[float]
    output_arrays: list[tuple[tuple[int, ...], np.dtype]]


def free_variables(body: list[str]) -> list[str]:
    """The variables the code (a function body) reads but never assigns, in order of first use."""
    tree = ast.parse("def f():\n" + "\n".join("    " + line for line in body))
    names = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in GLOBALS),
                   key=lambda n: (n.lineno, n.col_offset))
    assigned = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    return list(dict.fromkeys(n.id for n in names if n.id not in assigned))


class HostWriter(SourceWriter):
    """The state of one module being written: the host function's lines, its variables with their
    shapes and types (a kernel's parameters are the host variables its code reads, so their types are
    what ``compile_ptx`` needs), and the kernels written so far. ``SourceWriter`` holds the names,
    sizes and bindings both numba backends keep, and runs statements."""

    lowering_error = LoweringError
    statements = STATEMENTS

    def __init__(self, graph: Graph) -> None:
        super().__init__(graph, _RESERVED)
        self.kernel_sources: list[str] = []
        self.kernels: list[tuple[str, list[ParamType]]] = []
        self.libraries: dict[str, str] = {}              # module -> its alias in the generated module
        self.scalar_hosts: dict[str, str] = {}           # repr of a number -> host variable
        self.casts: dict[str, str] = {}                  # kernel-local number -> its cast from a host variable
        self.types: dict[str, ParamType] = {}
        self.buffers: list[tuple[np.dtype, int]] = []

    # ---- numbers, arrays, libraries ------------------------------------------------------------------
    def host_number(self, value: Any) -> str:
        """The host variable holding a Python number of the graph (read from ``scalars``)."""
        key = repr(float(value))  # repr: 0.0 and -0.0 stay apart
        if key not in self.scalar_hosts:
            name = self.fresh(f"number{len(self.scalars)}")
            self.top.append(f"{name} = scalars[{len(self.scalars)}]")
            self.scalars.append(float(value))
            self.scalar_hosts[key] = name
            self.types[name] = ("float64",)
        return self.scalar_hosts[key]

    def scalar(self, value: Any, dtype: np.dtype, hint: str) -> str:
        """A kernel-local variable holding a Python number of the graph cast to ``dtype``: the kernel
        takes the host's float64 and casts it once at its top, so float32 code stays float32 (an integer
        float64 cannot hold is written as it is)."""
        if inexact_integer(value, dtype):
            return f"{numba_type(dtype)}({int(value)})"
        key = (repr(float(value)), np.dtype(dtype).str)
        if key not in self.scalar_names:
            name = self.fresh(hint)
            self.casts[name] = f"{numba_type(dtype)}({self.host_number(value)})"
            self.scalar_names[key] = name
        return self.scalar_names[key]

    def number(self, node: Node, dtype: np.dtype) -> str:
        """A Python-number input cast to ``dtype`` in the kernel, as a constant number is."""
        key = (node.name, np.dtype(dtype).str)
        if key not in self.scalar_names:
            name = self.fresh(f"{self.var[node]}_{np.dtype(dtype).name}")
            self.casts[name] = f"{numba_type(dtype)}({self.var[node]})"
            self.scalar_names[key] = name
        return self.scalar_names[key]

    def declare_array(self, var: str, dtype: np.dtype, rank: int) -> None:
        self.types[var] = ("array", np.dtype(dtype), rank)

    def declare_size(self, name: str) -> None:
        self.types[name] = ("int64",)

    def declare_number(self, var: str, node: Node) -> None:
        self.types[var] = ("float64",) if np.dtype(node.meta["dtype"]).kind == "f" else ("int64",)

    def bind(self, node: Node, var: str, contiguous: bool) -> None:
        super().bind(node, var, contiguous)
        if not isinstance(node.meta["dtype"], tuple):
            self.declare_array(var, node_dtype(node), max(len(node.meta["shape"]), 1))

    def allocate(self, node: Node, out: list[str]) -> None:
        """Binds ``node``'s array to its buffer of the plan: an output's array, or one of ``buffers``."""
        buffer = node.meta["buffer"]
        if buffer not in self.allocated:
            count = product(self.sizes_of(node.meta["shape"]))
            if buffer in self.output_params:
                var = self.fresh(f"_{buffer}")
                self.allocations.append(f"{var} = {self.output_params[buffer]}.reshape(({count},))")
            else:
                var = self.fresh(buffer)
                self.allocations.append(f"{var} = buffers[{len(self.buffers)}]")
                elements = int(np.prod(kernel_shape(node.meta["shape"])))
                self.buffers.append((node_dtype(node), elements))
            self.allocated[buffer] = var, count
        var, count = self.allocated[buffer]
        name = self.array_name(node)
        self.bind(node, name, True)
        shape = self.shapes[name]
        out.append(f"{name} = {var}" if shape == (count,) else f"{name} = {var}.reshape({shape_tuple(shape)})")

    def library(self, module: str, function: str) -> str:
        if module not in self.libraries:
            self.libraries[module] = self.fresh(module.replace(".", "_"))
        return f"{self.libraries[module]}.{function}"

    def index_argument(self, node: Node, array: np.ndarray) -> str:
        name = self.fresh(f"{node.name}_positions")
        self.index_arrays[name] = np.ascontiguousarray(array, dtype=np.int64).reshape(-1)
        self.declare_array(name, np.dtype(np.int64), 1)
        return name

    # ---- kernels -------------------------------------------------------------------------------------
    def kernel(self, name: str, lines: list[str]) -> list[str]:
        """Records the ``@cuda.jit`` kernel ``name`` with body ``lines`` (its numbers cast at its top);
        returns its parameters: the host variables it reads, in order of first use."""
        read = set(free_variables(lines))
        prologue = [f"{local} = {cast}" for local, cast in self.casts.items() if local in read]
        header = lines[:1] if lines and lines[0].startswith("#") else []
        body = header + prologue + lines[len(header):]
        params = free_variables(body)
        if DIVISION_ERRORS in params and DIVISION_ERRORS not in self.types:  # integer // or %: the flag
            self.top.append(f"{DIVISION_ERRORS} = launch.division_errors()")
            self.declare_array(DIVISION_ERRORS, np.dtype(np.int32), 1)
        missing = [p for p in params if p not in self.types]
        if missing:
            raise LoweringError(f"kernel {name} reads {missing}, which the host function does not define")
        self.kernel_sources.append("\n".join(["@cuda.jit", f"def {name}({', '.join(params)}):",
                                              *("    " + line for line in body)]))
        self.kernels.append((name, [self.types[p] for p in params]))
        return params

    # ---- statements ----------------------------------------------------------------------------------
    def op_context(self, node: Node, inputs: dict[str, Any], out: str) -> OpContext:
        return OpContext(node, inputs, out, self.shapes, self.contiguous, self.ranks,
                         lambda a: self.index_argument(node, a), self.host_number, self.size, self.library)


_IMPORTS = (("math", "import math"), ("numba", "import numba"), ("cuda", "from numba import cuda"))


def _imports(code: str, libraries: dict[str, str]) -> list[str]:
    names = {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    lines = [line for name, line in _IMPORTS if name in names]
    used = [f for f in _DEVICE_FUNCTIONS if f in names]
    if used:
        lines.append(f"from jitgrad.backends.numba_cuda.device_functions import {', '.join(used)}")
    views = [f for f in ("permuted", "with_shape") if f in names]
    if views:
        lines.append(f"from jitgrad.backends.numba_cuda.arrays import {', '.join(views)}")
    lines += [f"import jitgrad.backends.numba_cuda.{module} as {alias}" for module, alias in libraries.items()]
    return lines + ["", "", ""] if lines else []


def generate(graph: Graph, share_views: bool = False) -> GeneratedModule:
    """The module for ``graph`` (not modified; after the pass pipeline). ``share_views``: an output that
    is a view is returned as that view (eager ops), not copied into an array of its own (compiled
    graphs, whose caller owns what it gets)."""
    if not is_planned(graph):
        raise LoweringError("the numba CUDA backend lowers a graph after the pass pipeline: plan_memory, its "
                            "last pass, has not run on this graph since it last changed")
    check_lowerings(graph, STATEMENTS, "numba CUDA", LoweringError)
    w = HostWriter(graph)
    outputs = list(iter_nodes(graph.output_node.args[0]))
    params = []
    for p in graph.placeholders:
        params.append(w.placeholder(p, False))
    constants = [n for n in graph.nodes if n.op is Opcode.GET_ATTR]
    for c in constants:
        params.append(w.array_name(c))
        w.bind(c, params[-1], True)
    out_params = [w.fresh(f"out{k}") for k in range(len(outputs))]
    w.output_params = {output_buffer(k): param for k, param in enumerate(out_params)}
    body: list[str] = []
    for members in units(graph):
        if not members[0].kind.in_loop:
            w.statement(members[0], body)
        elif members[-1].kind is NodeKind.REDUCTION:
            for node in members:
                if "buffer" in node.meta:
                    w.allocate(node, body)
            ReductionKernels(w, members).emit(body)
        else:
            for node in members:
                if "buffer" in node.meta:
                    w.allocate(node, body)
            GroupKernel(w, members).elementwise(body)
    returned = []
    for k, (node, param) in enumerate(zip(outputs, out_params)):
        in_place = node.meta.get("buffer") == output_buffer(k)
        if in_place or (share_views and node.kind is NodeKind.VIEW):
            returned.append(param if in_place else w.var[node])
            continue
        body.append(f"# %{node.name} is copied into the caller's array")
        body.append(f"{w.library('kernels.copy', 'copy')}({w.var[node]}, {param}, stream)")
        returned.append(param)
    body.append(f"return [{', '.join(returned)}]")
    signature = ", ".join(params + list(w.index_arrays) + ["buffers", "sizes", "scalars"] + out_params
                          + ["stream", "launch"])
    host = "\n".join([f"def run({signature}):", *("    " + line for line in w.top + w.allocations + body)])
    code = "\n\n\n".join([*w.kernel_sources, host]) + "\n"
    return GeneratedModule("\n".join(_imports(code, w.libraries)) + code, w.kernels, list(w.libraries),
                           [c.target for c in constants], list(w.index_arrays.values()),
                           w.buffers, w.sizes, w.scalars,
                           [(tuple(n.meta["shape"]), node_dtype(n)) for n in outputs])


__all__ = ["GLOBALS", "GeneratedModule", "free_variables", "generate"]
