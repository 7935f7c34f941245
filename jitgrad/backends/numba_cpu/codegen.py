"""Writes a graph as the source of one ``kernel`` function for ``numba.njit``.

The function takes the placeholders' arrays, the graph's constants, the index vectors some lowerings
compute at lowering time (flat positions of an advanced index), one workspace array per dtype of
intermediate values, ``sizes`` (an int64 array of the sizes no input's ``.shape`` gives, such as a
flattened dimension) and ``scalars`` (a float64 array of the Python numbers in the graph, cast once at
the top to the dtype they meet), and returns the outputs. No size and no number is written into the
source, so graphs that differ only in them (a new batch size) share one source, hence one compiled
kernel.

Layout of the body: sizes and constants first; then the buffers of the memory plan (flat, bound to
each value they hold by a reshape): a buffer an output lives in is allocated by the call, any other is
a slice of its dtype's workspace, which the caller keeps from call to call; then one block per unit in
dependency order: a
fusion group is one loop nest over its loop shape (elementwise values are scalars inside it, written to
a buffer only when read outside the group; broadcasting is index arithmetic; a reduction accumulates
into its output inside the same loop), any other op is the lines of its lowering. Each node's IR line
is its comment. Every value has rank at least 1 in the generated code (a 0-d tensor is a 1-element
array), which keeps numba away from 0-d arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fx.graph import Graph, format_arg
from ...fx.node import Node, Opcode, iter_nodes, tuple_item
from ...fx.passes.fusion import kind_of
from .buffers import plan_buffers, shared_memory
from .context import OpContext, numpy_type, product
from .outlining import Outliner

# Names the generated code reads as globals or builtins: an array may not take them.
_RESERVED = frozenset({"np", "math", "numba", "prange", "tanh_float32", "mm_into", "mv_into", "sizes", "scalars", "kernel", "max", "min",
                       "abs", "bool", "range", "float", "int", "sum", "len", "True", "False", "None"})

# A fusion group of at least this many elements gets a parallel outer loop when ``parallel=None``.
PARALLEL_ELEMENTS = 1 << 16
LANES = 4  # running values of a large row reduction (accumulate_in_lanes)


class LoweringError(RuntimeError):
    """An op, or a use of one, that the numba CPU backend cannot lower. Raised by ``lower()``, before any
    compiling, naming the op and the IR node."""


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
    scalar_outputs: list[bool] = field(default_factory=list)  # 0-d outputs, reshaped back by the wrapper


def ir_line(node: Node) -> str:
    """The node as ``print(graph)`` shows it, without the pass annotations."""
    call = f"{node.op.value} {node.target_name}"
    if node.op is Opcode.CALL_FUNCTION:
        call += "(" + ", ".join([format_arg(a) for a in node.args]
                                + [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]) + ")"
    return f"%{node.name}: {node.format_meta()} = {call}"


def lowering_kind(node: Node) -> str:
    """``elementwise``, ``reduction`` or ``statement``: which form its op's lowering takes."""
    return kind_of(node)


def check_lowerings(graph: Graph) -> None:
    """Raises ``LoweringError`` for the first node whose op has no lowering."""
    for node in graph.nodes:
        if node.op is Opcode.CALL_FUNCTION and node.target is not tuple_item and node.target.lower is None:
            raise LoweringError(f"the numba CPU backend has no lowering for op {node.target_name!r} "
                                f"(IR node {ir_line(node)})")


def _kernel_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number, np.bool_))


class _Writer:
    def __init__(self, graph: Graph, parallel: bool | None, fastmath: bool) -> None:
        self.graph = graph
        self.parallel_mode = parallel
        self.outliner = Outliner(fastmath)
        self.lines: list[str] = []
        self.top: list[str] = []
        self.sizes: list[int] = []
        self.scalars: list[float] = []
        self.size_names: dict[int, str] = {}
        self.shapes: dict[str, tuple[str, ...]] = {}    # variable -> size expressions
        self.contiguous: dict[str, bool] = {}
        self.ranks: dict[str, int] = {}
        self.var: dict[Node, str] = {}                  # node -> array variable
        self.taken = {n.name for n in graph.nodes} | _RESERVED
        self.placeholder_dims: dict[int, str] = {}
        self.allocations: list[str] = []
        self.buffers: dict[Node, str] = {}
        self.output_buffers: set[str] = set()
        self.allocated: set[str] = set()
        self.workspaces: dict[str, int] = {}            # dtype name -> elements, at the traced sizes
        self.index_arrays: dict[str, np.ndarray] = {}   # arguments made by lowerings (flat positions)

    # ---- names and sizes ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        name, count = hint, 0
        while name in self.taken:
            count += 1
            name = f"{hint}_{count}"
        self.taken.add(name)
        return name

    def size(self, value: int) -> str:
        """A run-time expression for a size: ``1`` stays literal (it decides broadcasting, which is
        structure); a size some input has is read from its ``.shape``; others come in ``sizes``."""
        if value == 1:
            return "1"
        if value in self.placeholder_dims:
            return self.placeholder_dims[value]
        if value not in self.size_names:
            name = self.fresh(f"size{len(self.sizes)}")
            self.top.append(f"    {name} = sizes[{len(self.sizes)}]")
            self.sizes.append(int(value))
            self.size_names[value] = name
        return self.size_names[value]

    def sizes_of(self, shape: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.size(s) for s in _kernel_shape(shape))

    def scalar(self, value: Any, dtype: np.dtype, hint: str) -> str:
        """A Python number of the graph, read from ``scalars`` and cast once to ``dtype``."""
        name = self.fresh(hint)
        self.top.append(f"    {name} = {numpy_type(dtype)}(scalars[{len(self.scalars)}])  # {value!r}")
        self.scalars.append(float(value))
        return name

    def array_name(self, node: Node) -> str:
        """The array variable of a node: its name, unless that is a builtin the code calls (``max``)."""
        if node in self.var:
            return self.var[node]
        return node.name if node.name not in _RESERVED else self.fresh(f"{node.name}_")

    def bind(self, node: Node, var: str, contiguous: bool) -> None:
        self.var[node] = var
        self.shapes[var] = self.sizes_of(node.meta["shape"])
        self.contiguous[var] = contiguous
        self.ranks[var] = len(node.meta["shape"])

    def allocate(self, node: Node, out: list[str]) -> None:
        """Binds ``node``'s array to its buffer (allocated once, at the top, on first use)."""
        buffer = self.buffers[node]
        var = f"_{buffer}" if not buffer.startswith("buf") else buffer
        if var not in self.allocated:
            self.allocated.add(var)
            count, dtype = product(self.sizes_of(node.meta["shape"])), _dtype(node)
            if buffer in self.output_buffers:
                self.allocations.append(f"    {var} = np.empty({count}, {numpy_type(dtype)})")
            else:
                self.take_from_workspace(var, count, dtype, math.prod(_kernel_shape(node.meta["shape"])))
        name = self.array_name(node)
        self.bind(node, name, True)
        out.append(f"    {name} = {var}.reshape({_tuple(self.shapes[name])})")

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

    def statement(self, node: Node, out: list[str]) -> None:
        out.append(f"    # {ir_line(node)}")
        if node.target is tuple_item:
            source, index = node.args
            name = self.array_name(node)
            self.bind(node, name, False)
            out.append(f"    {name} = {self.var[source]}[{index}]")
            return
        op = node.target
        values = [[self.var[v] for v in node.args[0]]] if op.variadic else \
            [self.var[v] if isinstance(v, Node) else v for v in node.args]
        inputs = dict(zip(op.inputs, values))
        multi = isinstance(node.meta["dtype"], tuple)
        name = self.array_name(node)
        if not op.view and not multi:
            self.allocate(node, out)
        elif not multi:
            self.bind(node, name, False)
        else:
            self.var[node] = name
        ctx = OpContext(node, inputs, name, self.shapes, self.contiguous, self.ranks,
                        lambda array: self.index_argument(node, array),
                        lambda value: self.scalar(value, ctx.dtype, f"{node.name}_value"), self.size)
        try:
            lines = op.lower(ctx)
        except NotImplementedError as error:
            raise LoweringError(f"cannot lower IR node {ir_line(node)}: {error}") from None
        out.extend("    " + line for line in ([lines] if isinstance(lines, str) else lines))
        if op.view and not multi:
            self.contiguous[name] = ctx.result_contiguous


def _tuple(sizes: tuple[str, ...]) -> str:
    return f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"


def _dtype(node: Node) -> np.dtype:
    return np.dtype(node.meta["dtype"])


def _extremes(dtype: np.dtype) -> dict[str, str]:
    """Source for the least and the greatest value of ``dtype`` (where max and min start)."""
    if dtype.kind == "f":
        return {"lowest": "-np.inf", "highest": "np.inf"}
    if dtype.kind == "b":
        return {"lowest": "False", "highest": "True"}
    return {"lowest": str(np.iinfo(dtype).min), "highest": str(np.iinfo(dtype).max)}


def _compute_dtype(node: Node) -> np.dtype:
    """The dtype constants of an elementwise node are cast to: its result's, or for a comparison (a
    bool result) that of its first tensor input."""
    out = _dtype(node)
    if out.kind == "f":
        return out
    inputs = [i for i in node.all_input_nodes if not isinstance(i.meta["dtype"], tuple)]
    floats = [_dtype(i) for i in inputs if _dtype(i).kind == "f"]
    return floats[0] if floats else (_dtype(inputs[0]) if inputs else out)


# ---- units: fusion groups and single nodes, in dependency order ----------------------------------------
def _units(graph: Graph) -> list[list[Node]]:
    calls = [n for n in graph.nodes if n.op is Opcode.CALL_FUNCTION]
    unit_of: dict[Node, int] = {}
    units: list[list[Node]] = []
    by_group: dict[str, int] = {}
    for node in calls:
        group = node.meta.get("fusion_group") if lowering_kind(node) != "statement" else None
        if group is not None and group in by_group:
            units[by_group[group]].append(node)
            unit_of[node] = by_group[group]
            continue
        if group is not None:
            by_group[group] = len(units)
        unit_of[node] = len(units)
        units.append([node])
    # Kahn's algorithm over units, taking the ready unit that appears first in the graph.
    needs = [set() for _ in units]
    for i, members in enumerate(units):
        for node in members:
            for used in node.all_input_nodes:
                if used in unit_of and unit_of[used] != i:
                    needs[i].add(unit_of[used])
    done: set[int] = set()
    order: list[list[Node]] = []
    while len(order) < len(units):
        ready = next(i for i in range(len(units)) if i not in done and needs[i] <= done)
        done.add(ready)
        order.append(units[ready])
    return order


# ---- one fusion group: one loop nest -------------------------------------------------------------------
class _Group:
    def __init__(self, writer: "_Writer", members: list[Node], materialized: set[Node]) -> None:
        self.w = writer
        self.members = members
        self.materialized = materialized
        last = members[-1]
        self.reduction = last if lowering_kind(last) == "reduction" else None
        loop = self.reduction.args[0].meta["shape"] if self.reduction else last.meta["shape"]
        self.loop_shape = _kernel_shape(tuple(loop))
        self.rank = len(self.loop_shape)
        self.index = [f"i{k}" for k in range(self.rank)]
        self.scalar_var: dict[Node, str] = {}

    def read(self, value: Any, node: Node, input_name: str) -> str:
        """The scalar expression of one input at the current loop index."""
        if isinstance(value, Node):
            if value in self.scalar_var:
                return self.scalar_var[value]
            return self.element(self.w.var[value], value.meta["shape"])
        if _is_scalar(value):
            return self.w.scalar(value, _compute_dtype(node), f"{node.name}_{input_name}")
        if value is None:
            return "None"
        raise LoweringError(f"cannot lower argument {value!r} of IR node {ir_line(node)}")

    def element(self, var: str, shape: tuple[int, ...]) -> str:
        """``var`` indexed at the loop index, right-aligned; a size-1 dimension reads index 0."""
        shape = _kernel_shape(tuple(shape))
        offset = self.rank - len(shape)
        index = ["0" if s == 1 else self.index[offset + k] for k, s in enumerate(shape)]
        return f"{var}[{', '.join(index)}]"

    def output_index(self, node: Node) -> str:
        dims = node.kwargs.get("dim")
        in_rank = len(node.args[0].meta["shape"])
        reduced = set(range(in_rank)) if dims is None else set(dims)
        if node.kwargs.get("keepdim", False):
            index = ["0" if k in reduced else self.index[k] for k in range(in_rank)]
        else:
            index = [self.index[k] for k in range(in_rank) if k not in reduced]
        return ", ".join(index) or "0"

    def count(self, node: Node) -> str:
        dims = node.kwargs.get("dim")
        shape = node.args[0].meta["shape"]
        reduced = range(len(shape)) if dims is None else dims
        return product([self.w.size(shape[k]) for k in reduced])

    def reduced_dims(self) -> set[int]:
        """The loop dimensions the group's reduction folds."""
        dims = self.reduction.kwargs.get("dim")
        if dims is None or len(self.reduction.args[0].meta["shape"]) == 0:
            return set(range(self.rank))
        return set(dims)

    def kept(self) -> int | None:
        """How many outer loop dimensions the reduction keeps, when it folds exactly the inner ones (a
        row reduction, or all of them): then it accumulates in a scalar, not in memory. None otherwise."""
        reduced = self.reduced_dims()
        kept = self.rank - len(reduced)
        return kept if reduced == set(range(kept, self.rank)) else None

    def parallel_ok(self) -> bool:
        mode = self.w.parallel_mode
        if mode is False or self.loop_shape[0] == 1:
            return False
        if self.reduction is not None and 0 in self.reduced_dims():
            # A full reduction splits into per-row partial results, combined by ``update``; a two-pass
            # one (``first``) cannot be combined that way.
            if self.kept() != 0 or self.rank < 2 or "first" in self.reduction.target.lower:
                return False
        return mode is True or math.prod(self.loop_shape) >= PARALLEL_ELEMENTS

    def expression(self, node: Node) -> str:
        op = node.target
        names: dict[str, Any] = {}
        for name, value in zip(op.inputs, node.args):
            names[name] = self.read(value, node, name)
        for key, value in node.kwargs.items():
            names[key] = self.read(value, node, key) if _is_scalar(value) and not isinstance(value, bool) \
                else value
        names["T"] = numpy_type(_compute_dtype(node))
        names["out"] = numpy_type(_dtype(node))
        try:
            return op.lower(**names) if callable(op.lower) else op.lower.format(**names)
        except NotImplementedError as error:
            raise LoweringError(f"cannot lower IR node {ir_line(node)}: {error}") from None

    def loop_lines(self, body: list[str], parallel: bool) -> list[str]:
        lines = []
        sizes = self.w.sizes_of(self.loop_shape)
        for k in range(self.rank):
            loop = "prange" if k == 0 and parallel else "range"
            lines.append("    " * (k + 1) + f"for {self.index[k]} in {loop}({sizes[k]}):")
        return lines + ["    " * (self.rank + 1) + b for b in body]

    def body(self, write_outputs: bool) -> list[str]:
        """The loop body: each elementwise member as a scalar, and stores of the materialized ones."""
        self.scalar_var = {}
        lines = []
        for node in self.members:
            if node is self.reduction:
                break
            lines.append(f"# {ir_line(node)}")
            value = self.scalar_var[node] = self.w.fresh(f"{node.name}_v")
            lines.append(f"{value} = {self.expression(node)}")
            if write_outputs and node in self.materialized:
                lines.append(f"{self.element(self.w.var[node], node.meta['shape'])} = {value}")
        return lines

    def emit(self, out: list[str]) -> None:
        names = ", ".join(n.name for n in self.members)
        loop = "x".join(str(s) for s in self.loop_shape)
        out.append(f"    # {self.members[0].meta.get('fusion_group', 'group')}: {names} (loop over [{loop}])")
        for node in self.members:
            if node in self.materialized:
                self.w.allocate(node, out)
        parallel = self.parallel_ok()
        out.append(self.w.outliner.add(self.w.fresh(self.members[0].meta.get("fusion_group", "group")),
                                       self.loops(parallel), parallel))

    def loops(self, parallel: bool) -> list[str]:
        """The group's loop nest (or nests: a two-pass reduction takes two)."""
        red = self.reduction
        if red is None:
            return self.loop_lines(self.body(True), parallel)
        spec = red.target.lower
        acc = self.w.var[red]
        if "first" not in spec:
            return self.accumulate(spec, acc, None, True, parallel)
        first = self.w.fresh(f"{red.name}_first")
        return [f"    {first} = np.empty_like({acc})", *self.accumulate(spec["first"], first, None, True, parallel),
                *self.accumulate(spec, acc, first, False, parallel)]

    def accumulate(self, spec: dict, acc: str, first: str | None, write_outputs: bool,
                   parallel: bool) -> list[str]:
        """One pass over the loop nest folding the reduction's input into ``acc``; a second pass reads
        the first's result as ``{first}``. A reduction over the inner dimensions keeps its running
        value in a local (a register: no load and store per element, and no aliasing for LLVM to
        fear); any other accumulates in ``acc`` itself."""
        red = self.reduction
        T = numpy_type(_dtype(red))
        index = self.output_index(red)
        names = {k: v for k, v in red.kwargs.items() if k not in ("dim", "keepdim")}
        names.update(T=T, count=f"{T}({self.count(red)})", first=f"{first}[{index}]" if first else None,
                     **_extremes(_dtype(red)))
        kept = self.kept()
        if kept is not None and self.rank >= 2 and (kept == self.rank - 1 or (kept == 0 and self.rank == 2)) \
                and self.large():
            return self.accumulate_in_lanes(spec, acc, write_outputs, names, parallel)
        body = self.body(write_outputs)
        body.append(f"# {ir_line(red)}")
        value = self.read(red.args[0], red, "self")
        if kept is None:
            return self.accumulate_in_memory(spec, acc, first, body, value, names, parallel)
        total = self.w.fresh(f"{red.name}_total")
        init = f"{total} = {T}({spec['init'].format(**names)})"
        body.append(f"{total} = {spec['update'].format(acc=total, self=value, **names)}")
        finished = spec["finish"].format(acc=total, **names) if "finish" in spec else total
        if kept == 0 and parallel:  # per-row partial results, combined serially
            partial, k = self.w.fresh(f"{red.name}_partial"), self.index[0]
            sizes = self.w.sizes_of(self.loop_shape)
            lines = [f"    {partial} = np.empty({sizes[0]}, {T})", f"    for {k} in prange({sizes[0]}):",
                     f"        {init}"]
            for d in range(1, self.rank):
                lines.append("    " * (d + 1) + f"for {self.index[d]} in range({sizes[d]}):")
            lines += ["    " * (self.rank + 1) + b for b in body]
            lines.append(f"        {partial}[{k}] = {total}")
            combined = self.w.fresh(f"{red.name}_combined")  # not ``total``: prange would see a reduction
            lines += [f"    {combined} = {T}({spec['init'].format(**names)})", f"    for {k} in range({sizes[0]}):",
                      f"        {combined} = {spec['update'].format(acc=combined, self=f'{partial}[{k}]', **names)}"]
            finished = spec["finish"].format(acc=combined, **names) if "finish" in spec else combined
            return lines + [f"    {acc}[{index}] = {finished}"]
        lines = self.loop_lines(body, parallel)
        lines.insert(kept, "    " * (kept + 1) + init)
        return lines + ["    " * (kept + 1) + f"{acc}[{index}] = {finished}"]

    def large(self) -> bool:
        return math.prod(self.loop_shape) >= PARALLEL_ELEMENTS

    def accumulate_in_lanes(self, spec: dict, acc: str, write_outputs: bool, names: dict[str, Any],
                            parallel: bool) -> list[str]:
        """A row reduction of a large loop, in two loops per row: the elementwise members over the row,
        writing the reduction's input to a row buffer (a plain loop LLVM vectorizes, where a running
        value in the same loop, a chain of dependent adds it may not reorder, kept it scalar: 16 ms
        instead of 4 for W3's first loop), then the fold of that row (in cache) with ``LANES``
        running values, combined at the end, as numpy's own sums do. A full reduction keeps the rows'
        results and combines them in order afterwards."""
        red = self.reduction
        T = numpy_type(_dtype(red))
        sizes = self.w.sizes_of(self.loop_shape)
        inner, depth = self.index[-1], self.rank
        pad = "    " * depth
        row, block, rest = (self.w.fresh(f"{red.name}_row"), self.w.fresh(f"{inner}_block"),
                            self.w.fresh(f"{inner}_rest"))
        lanes = [self.w.fresh(f"{red.name}_lane") for _ in range(LANES)]
        combine = spec.get("combine", spec["update"])
        body = self.body(write_outputs) + [f"# {ir_line(red)}",
                                           f"{row}[{inner}] = {self.read(red.args[0], red, 'self')}"]
        lines = [pad + f"{row} = np.empty({sizes[-1]}, {numpy_type(red.args[0].meta['dtype'])})",
                 pad + f"for {inner} in range({sizes[-1]}):", *[pad + "    " + b for b in body]]
        lines += [pad + f"{lane} = {T}({spec['init'].format(**names)})" for lane in lanes]
        lines += [pad + f"{rest} = {sizes[-1]} - {sizes[-1]} % {LANES}",
                  pad + f"for {block} in range(0, {rest}, {LANES}):"]
        lines += [pad + f"    {lane} = {spec['update'].format(acc=lane, self=f'{row}[{block} + {k}]', **names)}"
                  for k, lane in enumerate(lanes)]
        lines += [pad + f"for {inner} in range({rest}, {sizes[-1]}):",
                  pad + f"    {lanes[0]} = {spec['update'].format(acc=lanes[0], self=f'{row}[{inner}]', **names)}"]
        while len(lanes) > 1:  # a balanced tree: (l0 + l1) + (l2 + l3)
            pairs = [(lanes[k], lanes[k + 1]) for k in range(0, len(lanes), 2)]
            lanes = [self.w.fresh(f"{red.name}_pair") for _ in pairs]
            lines += [pad + f"{v} = {combine.format(acc=a, self=b, **names)}" for v, (a, b) in zip(lanes, pairs)]
        total = lanes[0]
        outer = [("    " * (k + 1)) + f"for {self.index[k]} in {'prange' if k == 0 and parallel else 'range'}"
                 f"({sizes[k]}):" for k in range(depth - 1)]
        if self.kept() == self.rank - 1:
            finished = spec["finish"].format(acc=total, **names) if "finish" in spec else total
            return outer + lines + [pad + f"{acc}[{self.output_index(red)}] = {finished}"]
        partial, combined, k = (self.w.fresh(f"{red.name}_partial"), self.w.fresh(f"{red.name}_combined"),
                                self.index[0])
        finished = spec["finish"].format(acc=combined, **names) if "finish" in spec else combined
        return [f"    {partial} = np.empty({sizes[0]}, {T})", *outer, *lines, pad + f"{partial}[{k}] = {total}",
                f"    {combined} = {T}({spec['init'].format(**names)})", f"    for {k} in range({sizes[0]}):",
                f"        {combined} = {combine.format(acc=combined, self=f'{partial}[{k}]', **names)}",
                f"    {acc}[{self.output_index(red)}] = {finished}"]

    def accumulate_in_memory(self, spec: dict, acc: str, first: str | None, body: list[str], value: str,
                             names: dict[str, Any], parallel: bool) -> list[str]:
        """The reduction's running values live in ``acc`` (initialised first, finished after): for
        reductions over outer dimensions, whose inner loop then updates a row of ``acc`` at a time."""
        index = self.output_index(self.reduction)
        at = f"{acc}[{index}]"
        body.append(f"{at} = {spec['update'].format(acc=at, self=value, **names)}")
        lines = [f"    {acc}.reshape(-1)[:] = {spec['init'].format(**names)}"] + self.loop_lines(body, parallel)
        if "finish" in spec:
            j, flat = self.w.fresh("j"), self.w.fresh(f"{acc}_flat")
            lines.append(f"    {flat} = {acc}.reshape(-1)")
            if first:
                names["first"] = f"{first}.reshape(-1)[{j}]"
            lines.append(f"    for {j} in range({flat}.size):")
            lines.append(f"        {flat}[{j}] = {spec['finish'].format(acc=f'{flat}[{j}]', **names)}")
        return lines


# ---- the whole function --------------------------------------------------------------------------------
def _returned(w: _Writer, order: list[list[Node]], outputs: list[Node], body: list[str]) -> list[str]:
    """The variables the kernel returns: each output's array, or a copy of it (appended to ``body``)
    where that memory is not the output's own."""
    returned = []
    for node, owner in zip(outputs, shared_memory(order, outputs)):
        var = w.var[node]
        if owner is not None:
            copy = w.fresh(f"{var}_copy")
            body.append(f"    {copy} = {var}.copy()  # %{node.name} would share memory with {owner}")
            var = copy
        returned.append(var)
    return returned


def generate(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> GeneratedKernel:
    """The kernel source for ``graph`` (not modified) and the values its wrapper passes in."""
    check_lowerings(graph)
    w = _Writer(graph, parallel, fastmath)
    outputs = list(iter_nodes(graph.output_node.args[0]))
    params = []
    for p in graph.placeholders:
        var = w.array_name(p)
        params.append(var)
        for k, s in enumerate(p.meta["shape"]):
            if s != 1 and s not in w.placeholder_dims:
                name = w.fresh(f"{var}_n{k}")
                w.placeholder_dims[s] = name
                w.top.append(f"    {name} = {var}.shape[{k}]")
        w.bind(p, var, True)
    constants = [n for n in graph.nodes if n.op is Opcode.GET_ATTR]
    for c in constants:
        var = w.array_name(c)
        params.append(var)
        w.bind(c, var, True)
    order = _units(graph)
    unit_of = {node: i for i, members in enumerate(order) for node in members}
    materialized: set[Node] = set()
    for i, members in enumerate(order):
        for node in members:
            kind = lowering_kind(node)
            if kind == "statement" or kind == "reduction" or node in outputs or \
                    any(unit_of.get(u, -1) != i for u in node.users if u.op is not Opcode.OUTPUT):
                materialized.add(node)
    w.buffers, w.output_buffers = plan_buffers(order, materialized, set(outputs))
    body: list[str] = []
    for members in order:
        if lowering_kind(members[0]) == "statement":
            w.statement(members[0], body)
        else:
            _Group(w, members, materialized).emit(body)
    body = w.outliner.resolve(body)
    returned = ", ".join(_returned(w, order, outputs, body))
    workspaces = sorted(w.workspaces)
    signature = ", ".join(params + list(w.index_arrays) + [f"workspace_{name}" for name in workspaces]
                          + ["sizes", "scalars"])
    header = ["import math", "", "import numba", "import numpy as np", "from numba import prange", "",
              "from jitgrad.backends.numba_cpu.blas import mm_into, mv_into",
              "from jitgrad.backends.numba_cpu.intrinsics import tanh_float32", "", "",
              *w.outliner.definitions, f"def kernel({signature}):"]
    if not w.top and not w.allocations and not body:
        body.append("    pass")
    source = "\n".join(header + w.top + w.allocations + body + [f"    return ({returned}{',' if len(outputs) == 1 else ''})"]) + "\n"
    return GeneratedKernel(source, [c.target for c in constants], list(w.index_arrays.values()),
                           [(np.dtype(name), w.workspaces[name]) for name in workspaces],
                           w.sizes, w.scalars, outputs, w.outliner.inline_parallel,
                           [len(n.meta["shape"]) == 0 for n in outputs])
