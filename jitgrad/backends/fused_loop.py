"""What every backend's code for one fusion group shares: the loop over the group's shape and the
members' values at the loop index.

A fusion group (``passes/fusion``) is elementwise members, possibly ended by one reduction, over one
loop shape: the reduction's input shape, or the last member's. Whatever a backend makes of that loop
(nested ``range``/``prange`` loops on the CPU, a thread per element on CUDA), the inside is the same:
each member is a scalar at the loop index, written from its op's scalar expression
(``jitgrad.ops.scalar``) in the backend's ``Dialect``; an input array is read at the loop index,
right-aligned, a size-1 dimension reading index 0 (broadcasting by index arithmetic). ``FusedLoop``
holds that once; a backend subclasses it with its ``dialect``, its ``lowering_error`` and its own
emission of the loops and the reduction.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..fx.node import Node, NodeKind
from ..ops.lowering import element_expression
from ..ops import scalar
from ..ops.scalar import Expr, Var, cast
from .expressions import Dialect, render
from .nodes import compute_dtype, ir_line, is_python_number, is_scalar, kernel_shape, node_dtype, operand_cast


SMALL_POWERS = (1, 2, 3)


def small_power(node: Node) -> int | float | None:
    """The exponent of ``x ** n`` when the graph holds it as a constant 1, 2 or 3 (``x ** 2`` as the
    user wrote it, or the backward's ``x ** (2 - 1)``), or 0.5 of a float, and the base is a number
    array: the power is then written as products, ``x * x``, where ``pow`` is a call per element that
    LLVM neither inlines nor vectorizes, or as ``sqrt``. ``x * x`` is the correctly rounded square, as
    ``pow`` and numpy's ``square`` are; ``x * x * x`` may differ from ``pow`` in the last bit (PyTorch
    computes it so too). ``x ** 0.5`` is ``sqrt(x)`` in numpy and PyTorch (a number exponent), which
    C's ``pow`` is not at -inf (inf, not NaN) and -0.0 (0.0, not -0.0). Only a constant of the graph
    qualifies: the code then depends on its value, so another exponent is another kernel, never this
    one; an exponent passed at run time (a number input) is ``runtime_power``'s."""
    if node.target_name != "pow" or len(node.args) != 2 or isinstance(node.args[0], (int, float)):
        return None
    exponent = node.args[1]
    if isinstance(exponent, (bool, np.bool_)) or not is_scalar(exponent) or not isinstance(node.args[0], Node):
        return None
    kind = compute_dtype(node).kind
    if kind == "f" and float(exponent) == 0.5:
        return 0.5
    if kind not in "fiu" or float(exponent) not in SMALL_POWERS:
        return None
    return int(exponent)


def powered(base: Expr, power: int | float) -> Expr:
    """``small_power``'s expression of ``base ** power``: products, or the square root."""
    if power == 0.5:
        return scalar.sqrt(cast(base))
    product = cast(base)
    for _ in range(int(power) - 1):
        product = product * cast(base)
    return product


def runtime_power(node: Node, inputs: list[Expr]) -> Expr | None:
    """``x ** e`` of floats where ``e`` is a number passed at run time: ``sqrt(x)`` when it is 0.5, as
    numpy and PyTorch take a number exponent of 0.5 (``small_power``), else ``pow``; None for any
    other node (a tensor exponent is C's ``pow`` in PyTorch too)."""
    if node.target_name != "pow" or len(inputs) != 2 or not is_python_number(node.args[1]):
        return None
    if compute_dtype(node).kind != "f":
        return None
    base, exponent = inputs
    return scalar.where(cast(exponent) == 0.5, scalar.sqrt(cast(base)), cast(base) ** cast(exponent))


def group_loop(members: list[Node]) -> tuple[Node | None, tuple[int, ...]]:
    """A fusion group's reduction (its last member, when that reduces) and the shape its loop runs
    over: the reduction's input shape, or the last member's (both CPU code generators ask)."""
    last = members[-1]
    reduction = last if last.kind is NodeKind.REDUCTION else None
    loop = reduction.args[0].meta["shape"] if reduction is not None else last.meta["shape"]
    return reduction, kernel_shape(tuple(loop))


class FusedLoop:
    """One fusion group's loop state and the scalar source of its members.

    ``writer`` is the backend's source writer (its ``codegen.py``): it names fresh variables
    (``fresh``), holds each value's array variable (``var``), and passes numbers and scalars as
    arguments (``number``, ``scalar``) so that the source does not depend on them."""

    dialect: Dialect  # each backend's subclass sets its spelling of the scalar vocabulary
    lowering_error: type[Exception] = RuntimeError  # and its LoweringError

    def __init__(self, writer: Any, members: list[Node]) -> None:
        self.w = writer
        self.members = members
        self.reduction, self.loop_shape = group_loop(members)
        self.rank = len(self.loop_shape)
        self.index = self.index_names()
        self.scalar_var: dict[Node, str] = {}
        # a value's source at the loop index, instead of its op's expression (a member: a logsumexp's
        # exponentials read again from its row buffer) or its array's element (a value computed by the
        # loop around the group's: a row statement's); ``numba_cpu/row_fusion``
        self.given: dict[Node, str] = {}

    def index_names(self) -> list[str]:
        """The loop index variables, one per loop dimension (outermost first)."""
        return [f"i{k}" for k in range(self.rank)]

    def read(self, value: Any, node: Node, input_name: str) -> str:
        """The scalar expression of one input at the current loop index."""
        if isinstance(value, Node):
            if value in self.scalar_var:
                source = self.scalar_var[value]
            elif value in self.given:
                source = self.given[value]
            elif is_python_number(value):
                return self.w.number(value, compute_dtype(node))
            else:
                source = self.element(self.w.var[value], value.meta["shape"])
            dtype = operand_cast(node, value)
            return source if dtype is None else f"{self.dialect.type_name(dtype)}({source})"
        if is_scalar(value):
            return self.w.scalar(value, compute_dtype(node), f"{node.name}_{input_name}")
        if value is None:
            return "None"
        raise self.lowering_error(f"cannot lower argument {value!r} of IR node {ir_line(node)}")

    def element(self, var: str, shape: tuple[int, ...]) -> str:
        """``var`` indexed at the loop index, right-aligned; a size-1 dimension reads index 0."""
        shape = kernel_shape(tuple(shape))
        offset = self.rank - len(shape)
        index = ["0" if s == 1 else self.index[offset + k] for k, s in enumerate(shape)]
        return f"{var}[{', '.join(index)}]"

    def expression(self, node: Node) -> str:
        """An elementwise node's value: its op's scalar expression over its inputs' values and its
        attributes (numbers as the variables that hold them), as source in the backend's dialect."""
        op = node.target
        power = small_power(node)
        if power is not None:
            base = Var(self.read(node.args[0], node, op.inputs[0]))
            return self.rendered(node, powered(base, power), compute_dtype(node), node_dtype(node))
        inputs = [Var(self.read(value, node, name)) for name, value in zip(op.inputs, node.args)]
        attrs = {key: Var(self.read(value, node, key)) if is_scalar(value) and not isinstance(value, bool) else value
                 for key, value in node.kwargs.items()}
        expression = runtime_power(node, inputs)
        if expression is None:
            expression = element_expression(op.lower, inputs, attrs)
        return self.rendered(node, expression, compute_dtype(node), node_dtype(node))

    def rendered(self, node: Node, expression: Expr, compute: Any, result: Any) -> str:
        """``expression`` as source; a function the dialect lacks is the backend's lowering error."""
        try:
            return render(expression, self.dialect, compute, result)
        except NotImplementedError as error:
            raise self.lowering_error(f"cannot lower IR node {ir_line(node)}: {error}") from None

    def folded(self, expression: Expr) -> str:
        """Source for a piece of the group's reduction (its start, a step, its end), in its dtype."""
        dtype = node_dtype(self.reduction)
        return self.rendered(self.reduction, expression, dtype, dtype)

    def wrapped(self, source: str, node: Node) -> str:
        """A member's value cast to its dtype where numba's typing would widen it: an integer narrower
        than int64 (numba types ``int32 * int32`` as an int64), and a float32 computed from another
        dtype (``float32 + int64`` is a float64 in numba, as in numpy). Unwrapped, the stored array
        held eager's value but the scalar a later member or the reduction read did not: ``(x * y).sum()``
        of int32 summed the exact products, ``((a + i) * b)`` of float32 ``a``, int ``i`` and float64
        ``b`` kept ``a + i`` unrounded (until 2026-11-28)."""
        dtype = node_dtype(node)
        if dtype.kind not in "iuf" or dtype.itemsize >= 8:
            return source
        inputs = [value for value in node.all_input_nodes if not is_python_number(value)]
        if dtype.kind == "f" and all(node_dtype(value) == dtype for value in inputs):
            return source
        return f"{self.dialect.type_name(dtype)}({source})"

    def body(self, write_outputs: bool) -> list[str]:
        """Each elementwise member as a scalar at the loop index, and stores of those the memory plan
        keeps (when ``write_outputs``)."""
        self.scalar_var = {}
        lines = []
        for node in self.members:
            if node is self.reduction:
                break
            lines.append(self.w.comment(node))
            value = self.scalar_var[node] = self.w.fresh(f"{node.name}_v")
            source = self.given[node] if node in self.given else self.expression(node)
            lines.append(f"{value} = {self.wrapped(source, node)}")
            if write_outputs and "buffer" in node.meta:
                lines.append(f"{self.element(self.w.var[node], node.meta['shape'])} = {value}")
        return lines


__all__ = ["FusedLoop", "group_loop", "powered", "runtime_power", "small_power"]
