"""Writes a graph as the source of one ``kernel`` function for ``numba.njit``.

The function takes the placeholders' arrays, the graph's constants, the index vectors some lowerings
compute at lowering time (flat positions of an advanced index), one workspace array per dtype of
intermediate values, ``sizes`` (an int64 array of the sizes no input's ``.shape`` gives, such as a
flattened dimension) and ``scalars`` (a float64 array of the Python numbers in the graph, cast once at
the top to the dtype they meet), and last one array per output, which the caller allocates and the
kernel fills: it returns nothing, so a call builds no Python object (numba would unpickle the array
type of each array it returned). No size and no number is written into the
source, so graphs that differ only in them (a new batch size) share one source, hence one compiled
kernel.

Layout of the body: sizes and constants first; then the buffers of the memory plan (``plan_memory``,
taken as it is: flat, bound to each value they hold by a reshape, or by name for a 1-d value of the
buffer's length): an output's buffer ``out<k>`` is the caller's array, any other buffer is a slice of
its dtype's workspace, which the caller keeps from call to call (an output the plan does not compute
in place, such as a view, is copied into the caller's array at the end); then one block per unit, in
the graph's order, which the plan made the order units run in: a fusion group is one loop nest over
its loop shape (elementwise values are scalars inside it, written to their buffer when the plan gives
them one; broadcasting is index arithmetic; a reduction accumulates into its output inside the same
loop), any other op is the lines of its lowering. Each node's IR line is its comment, with the
kernel's own sizes and no numbers (``nodes.kernel_comment``), so the source is the same for every
graph the kernel serves. Every value has rank at least 1 in the generated code (a 0-d tensor is a
1-element array, a 0-d output array is reshaped to one at the top), which keeps numba's own code away
from 0-d arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fx.graph import Graph
from ...fx.loop import Loop
from ...fx.node import Node, Opcode, iter_nodes
from ...fx.passes.memory import is_planned, output_buffer
from ...fx.passes.schedule import units
from ..nodes import inexact_integer, kernel_shape, node_dtype
from ..source import product
from ..source_writer import SourceWriter
from .context import OpContext
from .imports import import_lines
from .loop_nest import PARALLEL_ELEMENTS, LoopNest
from .loops import emit_loop
from .nodes import LoweringError, check_lowerings
from .outlining import GLOBALS, Outliner
from .row_fusion import emit_exps_reused, emit_row_fused
from .scalar_functions import numpy_type
from .statements import STATEMENTS

# Names an array may not take: the globals and builtins the generated code reads, and the kernel's own.
_RESERVED = GLOBALS | {"sizes", "scalars", "kernel"}



@dataclass
class GeneratedKernel:
    """The source and what the wrapper passes besides the placeholders' arrays."""

    source: str
    constants: list[str]                 # graph.constants keys, in argument order
    index_arrays: list[np.ndarray]       # int64 vectors lowerings asked for, after the constants
    workspaces: list[tuple[np.dtype, int]]  # one array per dtype of intermediates: dtype, elements
    sizes: list[int]
    scalars: list[float]
    outputs: list[Node]                  # the output nodes, flattened depth-first
    parallel: bool                       # the kernel itself has a prange loop (numba's parallel=True)
    output_arrays: list[tuple[tuple[int, ...], np.dtype]] = field(default_factory=list)  # what the caller
                                         # allocates for each output, passed last: shape and dtype


class _Writer(SourceWriter):
    """The kernel function being written (``SourceWriter`` holds the names, sizes and bindings both
    numba backends keep): its numbers cast once at the top, its workspaces, its loop nests."""

    indent = "    "
    lowering_error = LoweringError
    statements = STATEMENTS

    def __init__(self, graph: Graph, parallel: bool | None, fastmath: bool) -> None:
        super().__init__(graph, _RESERVED)
        self.graph = graph
        self.parallel_mode = parallel
        self.outliner = Outliner(fastmath)
        self.lines: list[str] = []
        self.workspaces: dict[str, int] = {}            # dtype name -> elements, at the traced sizes
        self.buffer_prefix = ""                         # a loop body's buffers: apart from the kernel's

    # ---- numbers, buffers, statements -------------------------------------------------------------
    def scalar(self, value: Any, dtype: np.dtype, hint: str) -> str:
        """A Python number of the graph, read from ``scalars`` and cast once to ``dtype``; one variable
        per distinct number and dtype (W1's fifty ``* 1.01`` read one), which keeps the function
        numba compiles short."""
        if inexact_integer(value, dtype):
            return f"{numpy_type(dtype)}({int(value)})"
        key = (repr(float(value)), np.dtype(dtype).str)  # repr: 0.0 and -0.0 stay apart
        if key not in self.scalar_names:
            name = self.fresh(hint)
            self.top.append(f"    {name} = {numpy_type(dtype)}(scalars[{len(self.scalars)}])")
            self.scalars.append(float(value))
            self.scalar_names[key] = name
        return self.scalar_names[key]

    def number(self, node: Node, dtype: np.dtype) -> str:
        """A Python-number input (a scalar argument of the kernel) cast once to ``dtype``, as a
        constant number is: eager casts a Python number to the tensor's dtype before the op."""
        key = (node.name, np.dtype(dtype).str)
        if key not in self.scalar_names:
            name = self.fresh(f"{self.var[node]}_{np.dtype(dtype).name}")
            self.top.append(f"    {name} = {numpy_type(dtype)}({self.var[node]})")
            self.scalar_names[key] = name
        return self.scalar_names[key]

    def allocate(self, node: Node, out: list[str]) -> None:
        """Binds ``node``'s array to its buffer in the memory plan (allocated once, at the top, on
        first use)."""
        buffer = self.buffer_prefix + node.meta["buffer"]
        if buffer not in self.allocated:
            var = self.fresh(f"_{buffer}" if buffer in self.output_params else buffer)
            count, dtype = product(self.sizes_of(node.meta["shape"])), node_dtype(node)
            self.allocated[buffer] = var, count
            if buffer in self.output_params:
                self.allocations.append(f"    {var} = {self.output_params[buffer]}.reshape({count})")
            else:
                self.take_from_workspace(var, count, dtype, math.prod(kernel_shape(node.meta["shape"])))
        var, count = self.allocated[buffer]
        name = self.array_name(node)
        self.bind(node, name, True)
        shape = self.shapes[name]
        if shape == (count,):  # a reshape costs a call and a reference count (W4: 250)
            out.append(f"    {name} = {var}")
        else:
            out.append(f"    {name} = {var}.reshape({_tuple(shape)})")

    def take_from_workspace(self, var: str, count: str, dtype: np.dtype, elements: int) -> None:
        """Binds a buffer no output lives in to the next ``count`` elements of its dtype's workspace:
        one array per dtype that the wrapper allocates once and passes to every call, so that a call
        neither allocates intermediates nor touches fresh pages."""
        workspace, at = f"workspace_{dtype.name}", f"at_{dtype.name}"
        if dtype.name not in self.workspaces:
            self.workspaces[dtype.name] = 0
            self.allocations.append(f"    {at} = 0")
        self.workspaces[dtype.name] += elements
        self.allocations.append(f"    {var} = {workspace}[{at}:{at} + {count}]")
        self.allocations.append(f"    {at} += {count}")

    def index_argument(self, node: Node, array: np.ndarray) -> str:
        """A new argument of the kernel holding ``array`` (an int64 vector a lowering computed from
        the node's attributes and the traced shapes): values are arguments, never source."""
        name = self.fresh(f"{node.name}_positions")
        self.index_arrays[name] = np.ascontiguousarray(array, dtype=np.int64).reshape(-1)
        return name

    def op_context(self, node: Node, inputs: dict[str, Any], out: str) -> OpContext:
        ctx = OpContext(node, inputs, out, self.shapes, self.contiguous, self.ranks,
                        lambda array: self.index_argument(node, array),
                        lambda value: self.scalar(value, ctx.dtype, f"{node.name}_value"), self.size)
        elements = math.prod(kernel_shape(tuple(node.meta["shape"]))) if not isinstance(node.meta["dtype"], tuple) \
            else 0
        ctx.parallel = self.parallel_mode is True or (self.parallel_mode is None and elements >= PARALLEL_ELEMENTS)
        return ctx

    def statement(self, node: Node, out: list[str]) -> None:
        """A statement's lines; one with a ``prange`` loop (``ctx.parallel`` allowed it) makes the kernel
        a parallel one, as an inline fusion group's does."""
        start = len(out)
        if isinstance(node.target, Loop):
            emit_loop(self, node, out)
            return
        super().statement(node, out)
        if any("prange(" in line for line in out[start:]):
            self.outliner.inline_parallel = True


def _tuple(sizes: tuple[str, ...]) -> str:
    return f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"


# ---- the whole function --------------------------------------------------------------------------------
def _copy_out(w: _Writer, node: Node, param: str, body: list[str]) -> None:
    """Copies an output that is a view, or shares memory, into the caller's array, element by element."""
    var, sizes = w.var[node], w.shapes[w.var[node]]
    target = f"{param}.reshape(1)" if not node.meta["shape"] else param
    body.append(f"    # %{node.name} is copied into the caller's array")
    index = [w.fresh(f"c{d}") for d in range(len(sizes))]
    for depth, (i, size) in enumerate(zip(index, sizes)):
        body.append("    " * (depth + 1) + f"for {i} in range({size}):")
    body.append("    " * (len(sizes) + 1) + f"{target}[{', '.join(index)}] = {var}[{', '.join(index)}]")


def generate(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> GeneratedKernel:
    """The kernel source for ``graph`` (not modified; after the pass pipeline, whose last pass,
    ``plan_memory``, orders its units and gives each value its memory) and the values its wrapper
    passes in."""
    if not is_planned(graph):
        raise LoweringError("the numba CPU backend lowers a graph after the pass pipeline: plan_memory, its last "
                            "pass, has not run on this graph since it last changed")
    check_lowerings(graph)
    w = _Writer(graph, parallel, fastmath)
    outputs = list(iter_nodes(graph.output_node.args[0]))
    params = []
    for p in graph.placeholders:
        params.append(w.placeholder(p, True))
    constants = [n for n in graph.nodes if n.op is Opcode.GET_ATTR]
    for c in constants:
        var = w.array_name(c)
        params.append(var)
        w.bind(c, var, True)
    out_params = [w.fresh(f"out{k}") for k in range(len(outputs))]
    w.output_params = {output_buffer(k): param for k, param in enumerate(out_params)}
    body: list[str] = []
    plan, k = units(graph), 0
    written: set[int] = set()   # units written ahead of their turn (``emit_exps_reused``)
    while k < len(plan):
        members = plan[k]
        if k in written:
            k += 1
            continue
        if not members[0].kind.in_loop and k + 1 < len(plan) and emit_row_fused(w, members[0], plan[k + 1], body):
            k += 2
            continue
        if not members[0].kind.in_loop:
            w.statement(members[0], body)
        else:
            taken = emit_exps_reused(w, plan, k, body)
            written.update(taken)
            if not taken:
                LoopNest(w, members).emit(body)
        k += 1
    body = w.outliner.resolve(body)
    for k, (node, param) in enumerate(zip(outputs, out_params)):
        if node.meta.get("buffer") != output_buffer(k):
            _copy_out(w, node, param, body)
    workspaces = sorted(w.workspaces)
    signature = ", ".join(params + list(w.index_arrays) + [f"workspace_{name}" for name in workspaces]
                          + ["sizes", "scalars"] + out_params)
    if not w.top and not w.allocations and not body:
        body.append("    pass")
    code = "\n".join([*w.outliner.definitions, f"def kernel({signature}):", *w.top, *w.allocations, *body]) + "\n"
    source = "\n".join([*import_lines(code), code])
    return GeneratedKernel(source, [c.target for c in constants], list(w.index_arrays.values()),
                           [(np.dtype(name), w.workspaces[name]) for name in workspaces],
                           w.sizes, w.scalars, outputs, w.outliner.inline_parallel,
                           [(tuple(n.meta["shape"]), node_dtype(n)) for n in outputs])
