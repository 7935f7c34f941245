"""One fusion group as one loop nest, as the numba CPU backend's ``LoopNest`` writes it (its docstring
and ``backends/fused_loop.py`` say why each shape is chosen), in LLVM IR, in a function of its own
(``group_<n>``) that the kernel calls with the pointers, sizes and numbers the loop reads: groups
that are the same loop (each step of an unrolled RNN) share one function, so the kernel's IR, and
LLVM's time on it, grows by a call per step, not by a loop. Inside: elementwise members as
scalars at the loop index, stores of the values the memory plan keeps, and the group's reduction
accumulated in the same loop, in the same order as numba's kernels fold it:

- a reduction over the inner loop dimensions (a row, or everything) keeps its running value in a
  register, initialised where the kept dimensions' loops are and finished after the inner ones;
- any other accumulates in its output, initialised before the loop and finished after.

A group whose every array is C-contiguous and of the loop's whole shape (or a single element), and
whose reduction, if any, folds everything, runs as one flat loop over all its elements: the same
elements in the same order, without an inner loop as short as a row (K1's rows of 3 left LLVM
nothing to vectorize).

A two-pass reduction (``var``, ``std``, ``logsumexp``) folds twice, the first pass's result in scratch
memory of the workspace. Not here (the graph goes to numba): a group numba would run in parallel
(``parallel=True``, or one of at least ``PARALLEL_ELEMENTS`` elements, whose row reductions numba
also folds in lanes).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...fx.node import Node
from ...ops.lowering import element_expression
from ...ops.scalar import Var
from ..fused_loop import group_loop, powered, runtime_power, small_power
from ..nodes import compute_dtype, ir_line, is_python_number, is_scalar, kernel_shape, node_dtype, operand_cast
from .arrays import ArrayView, load, store
from .expressions import ExpressionWriter, Value, convert
from .function_writer import FunctionWriter
from .scalar_functions import library_calls_kept

# numba_cpu.PARALLEL_ELEMENTS, which this package must not import (it would import numba_cpu's codegen)
PARALLEL_ELEMENTS = 1 << 16


class NotCovered(NotImplementedError):
    """What the LLVM generator does not write: the graph goes to numba."""


class FusedLoops:
    """A fusion group's loops, written into a function of its own (``w``) for the kernel writer ``k``
    (``codegen.KernelWriter``): every value of the kernel the loop reads (``parameter``) becomes an
    argument of that function."""

    def __init__(self, k: Any, members: list[Node]) -> None:
        self.k = k
        self.w = FunctionWriter(k.fn.fastmath)
        self.members = members
        self.reduction, self.loop_shape = group_loop(members)
        self.rank = len(self.loop_shape)
        self.parameters: dict[str, tuple[str, str]] = {}   # the kernel's value -> (parameter, type)
        self.sizes = [self.parameter(s, "i64") for s in k.sizes_of(self.loop_shape)]
        self.values: dict[str, Value] = {}
        self.scalar_of: dict[Node, Value] = {}
        self.index: list[str] = []
        self.flat = False   # one loop over every element (``flatten``)
        self.innermost: list[int] = []   # the positions of the lines written inside the innermost loop

    # ---- the kernel's values, as the function's parameters -----------------------------------------
    def parameter(self, name: str, llvm_type: str) -> str:
        """The parameter standing for the kernel's value ``name`` (a constant stays itself)."""
        if not name.startswith("%"):
            return name
        if name not in self.parameters:
            self.parameters[name] = (f"%a{len(self.parameters)}", llvm_type)
        return self.parameters[name][0]

    def view(self, node: Node) -> ArrayView:
        view = self.k.views[node]
        return ArrayView(self.parameter(view.pointer, "ptr"), view.dtype,
                         tuple(self.parameter(s, "i64") for s in view.sizes),
                         tuple(self.parameter(s, "i64") for s in view.strides), view.contiguous)

    def outer(self, value: Value) -> Value:
        return Value(self.parameter(value.name, value.type), value.dtype)

    # ---- reading values at the loop index ----------------------------------------------------------
    def element(self, node: Node) -> Value:
        return load(self.w, *self.at(node), "x")

    def at(self, node: Node) -> tuple[ArrayView, list[str]]:
        """The array of ``node`` and the index of its element at the loop index (broadcast
        dimensions at 0); in a flat loop, a whole array is read as one run of elements."""
        shape = kernel_shape(tuple(node.meta["shape"]))
        view = self.view(node)
        if self.flat and any(s != 1 for s in shape):
            return ArrayView(view.pointer, view.dtype, (self.sizes[0],), ("1",), True), [self.index[0]]
        offset = self.rank - len(shape)
        return view, ["0" if s == 1 else self.index[offset + d] for d, s in enumerate(shape)]

    def read(self, value: Any, node: Node, name: str) -> Value:
        if isinstance(value, Node):
            if is_python_number(value):
                return self.outer(self.k.number(value, compute_dtype(node)))
            read = self.scalar_of[value] if value in self.scalar_of else self.element(value)
            dtype = operand_cast(node, value)   # PyTorch's: every operand in the compute dtype first
            return read if dtype is None else convert(self.w, read, dtype)
        if is_scalar(value):
            return self.outer(self.k.scalar(value, compute_dtype(node)))
        raise NotCovered(f"argument {value!r} of IR node {ir_line(node)}")

    def variable(self, value: Value) -> Var:
        name = f"v{len(self.values)}"
        self.values[name] = value
        return Var(name)

    def written(self, node: Node, expression: Any, compute: np.dtype, result: np.dtype) -> Value:
        try:
            value = ExpressionWriter(self.w, self.values).write(expression, compute, result)
        except NotImplementedError as error:
            raise NotCovered(f"IR node {ir_line(node)}: {error}") from None
        return convert(self.w, value, result)

    def expression(self, node: Node) -> Value:
        op = node.target
        power = small_power(node)
        compute, result = compute_dtype(node), node_dtype(node)
        if power is not None:
            base = self.variable(self.read(node.args[0], node, op.inputs[0]))
            return self.written(node, powered(base, power), compute, result)
        inputs = [self.variable(self.read(v, node, name)) for name, v in zip(op.inputs, node.args)]
        attrs = {key: self.variable(self.read(v, node, key)) if is_scalar(v) and not isinstance(v, bool) else v
                 for key, v in node.kwargs.items()}
        expression = runtime_power(node, inputs)
        if expression is None:
            expression = element_expression(op.lower, inputs, attrs)
        return self.written(node, expression, compute, result)

    def body(self, write: bool = True) -> None:
        """Each elementwise member at the loop index, stored where the memory plan keeps it (when
        ``write``: a second pass over the loop computes them again without storing)."""
        self.scalar_of = {}
        for node in self.members:
            if node is self.reduction:
                break
            self.w.comment(self.k.comment(node))
            value = self.scalar_of[node] = self.expression(node)
            if write and "buffer" in node.meta:
                store(self.w, *self.at(node), value)

    def flatten(self) -> None:
        """One loop over all the elements, where that reads and writes the same elements in the same
        order as the nest: every array the group reads or stores C-contiguous and of the loop's
        shape (or one element), and its reduction, if any, over everything."""
        if self.rank < 2:
            return
        whole = self.loop_shape
        if self.reduction is not None:
            dims = self.reduction.kwargs.get("dim")
            if dims is not None and set(dims) != set(range(len(self.reduction.args[0].meta["shape"]))):
                return
        for node in self.members:
            if node is not self.reduction and (kernel_shape(tuple(node.meta["shape"])) != whole or (
                    "buffer" in node.meta and not self.k.views[node].contiguous)):
                return
            for value in node.args:   # the reduction's too: ``x[:, :1].sum()`` reads a strided view
                if not isinstance(value, Node) or value in self.members or is_python_number(value):
                    continue
                shape = kernel_shape(tuple(value.meta["shape"]))
                if any(s != 1 for s in shape) and (shape != whole or not self.k.views[value].contiguous):
                    return
        self.flat, self.rank = True, 1
        self.sizes = [self.w.product(self.sizes)]

    # ---- the group -----------------------------------------------------------------------------------
    def emit(self) -> None:
        """Writes the group's function and its call into the kernel."""
        names = ", ".join(n.name for n in self.members)
        large = math.prod(self.loop_shape) >= PARALLEL_ELEMENTS
        if self.k.parallel_mode is True or (self.k.parallel_mode is None and large):
            raise NotCovered(f"a parallel loop (fusion group of {names}, {math.prod(self.loop_shape)} elements)")
        for node in self.members:
            if "buffer" in node.meta:
                self.k.allocate(node)
        self.flatten()
        if self.reduction is None:
            self.nest(0, self.body)
        else:
            spec = self.reduction.target.lower
            view = self.view(self.reduction)
            if spec.first is None:
                self.accumulate(spec, view, None, True)
            else:  # the first pass's result in scratch memory of the workspace
                scratch = self.k.scratch(self.reduction)
                first = ArrayView(self.parameter(scratch.pointer, "ptr"), scratch.dtype,
                                  tuple(self.parameter(v, "i64") for v in scratch.sizes),
                                  tuple(self.parameter(v, "i64") for v in scratch.strides), True)
                self.accumulate(spec.first, first, None, True)
                self.accumulate(spec, view, first, False)
        inner = set(self.innermost)
        library_calls_kept(self.w, [self.innermost, [i for i in range(len(self.w.lines)) if i not in inner]])
        self.w.emit("ret void")
        arguments = ", ".join(f"{t} {outer}" for outer, (_, t) in self.parameters.items())
        function = self.k.group_function(self.w, [(name, t) for name, t in self.parameters.values()])
        self.k.fn.comment(f"{self.members[0].meta.get('fusion_group', 'group')}: {names}")
        self.k.fn.emit(f"call void @{function}({arguments})")

    def nest(self, depth: int, inner: Any, at: dict[int, Any] | None = None) -> None:
        """The loops from ``depth`` in, ``inner()`` inside; ``at[d]`` runs before (as ``(before,
        after)``) and after the loop of dimension ``d``."""
        if depth == self.rank:
            start = len(self.w.lines)
            inner()
            self.innermost.extend(range(start, len(self.w.lines)))
            return
        before, after = (at or {}).get(depth, (None, None))
        if before:
            before()
        with self.w.loop(self.sizes[depth], f"i{depth}") as i:
            self.index.append(i)
            self.nest(depth + 1, inner, at)
            self.index.pop()
        if after:
            after()

    def reduced_dims(self) -> set[int]:
        dims = self.reduction.kwargs.get("dim")
        if dims is None or self.flat or len(self.reduction.args[0].meta["shape"]) == 0:
            return set(range(self.rank))
        return set(dims)

    def reduction_index(self) -> list[str]:
        node = self.reduction
        reduced = self.reduced_dims()
        if node.kwargs.get("keepdim", False):
            index = ["0" if d in reduced else self.index[d] for d in range(self.rank)]
        else:
            index = [self.index[d] for d in range(self.rank) if d not in reduced]
        return index or ["0"]

    def accumulate(self, spec: Any, view: ArrayView, first: ArrayView | None, write: bool) -> None:
        """One pass folding the reduction's input into ``view``; a second pass reads the first's result
        as ``first`` (a variance's mean). A reduction over the inner dimensions keeps its running value
        in a register; any other accumulates in ``view`` itself."""
        red = self.reduction
        dtype = node_dtype(red)
        reduced = self.reduced_dims()
        shape = red.args[0].meta["shape"]
        counted = range(len(shape)) if self.flat else sorted(reduced)
        count = self.w.product([self.parameter(self.k.size(shape[d]), "i64") for d in counted]) if shape else "1"
        names: dict[str, Any] = {key: v for key, v in red.kwargs.items() if key not in ("dim", "keepdim")}
        names["count"] = self.variable(convert(self.w, Value(count, np.dtype(np.int64)), dtype))
        kept = self.rank - len(reduced)

        def read_first(index: list[str], whole: ArrayView | None = None) -> None:
            if first is not None:
                names["first"] = self.variable(load(self.w, whole or first, index, "first"))

        def fold(acc: Value) -> Value:
            self.body(write)
            self.w.comment(self.k.comment(red))
            element = self.variable(self.read(red.args[0], red, "self"))
            read_first(self.reduction_index())
            return self.written(red, spec.update(self.variable(acc), element, names), dtype, dtype)

        def finished(acc: Value) -> Value:
            return self.written(red, spec.finished(self.variable(acc), names), dtype, dtype)

        slot_type = Value("0", dtype).type
        if kept == self.rank:
            raise NotCovered(f"a reduction over no dimension (IR node {ir_line(red)})")
        if reduced == set(range(kept, self.rank)):   # the inner dimensions: a running value in a register
            total = self.w.slot(slot_type, "total")

            def start() -> None:
                self.w.store(slot_type, self.written(red, spec.initial(), dtype, dtype).name, total)

            def step() -> None:
                acc = Value(self.w.load(slot_type, total, "acc"), dtype)
                self.w.store(slot_type, fold(acc).name, total)

            def finish() -> None:
                acc = Value(self.w.load(slot_type, total, "acc"), dtype)
                read_first(self.reduction_index())
                store(self.w, view, self.reduction_index(), finished(acc))

            self.nest(0, step, {kept: (start, finish)})
            return
        # over outer dimensions: accumulate in the output itself
        if not view.contiguous:
            raise NotCovered(f"a reduction into an array that is not contiguous (IR node {ir_line(red)})")
        flat = self.w.product(view.sizes)
        whole = ArrayView(view.pointer, view.dtype, (flat,), ("1",), True)
        with self.w.loop(flat, "z") as j:
            store(self.w, whole, [j], self.written(red, spec.initial(), dtype, dtype))

        def update() -> None:
            index = self.reduction_index()
            store(self.w, view, index, fold(load(self.w, view, index, "acc")))

        self.nest(0, update)
        if spec.finish is not None:
            with self.w.loop(flat, "f") as j:
                if first is not None:
                    read_first([j], ArrayView(first.pointer, first.dtype, (flat,), ("1",), True))
                store(self.w, whole, [j], finished(load(self.w, whole, [j], "acc")))


__all__ = ["FusedLoops", "NotCovered", "PARALLEL_ELEMENTS"]
