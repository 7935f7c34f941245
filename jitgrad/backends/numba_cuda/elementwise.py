"""One fusion group without a reduction as one ``@cuda.jit`` kernel: a thread per element of the group's
loop shape, in a grid-stride loop (any grid covers any size, so the grid can be capped), the flat
index unravelled by division into one index per loop dimension, and broadcasting by index arithmetic:
a size-1 dimension of a value reads index 0. Each member's value is a scalar of the thread, written
with the CUDA dialect from its op's scalar expression; those the memory plan stores are written to
their arrays.

``GroupKernel`` holds what the reduction kernels (``reduction.py``) share: reading a member's inputs
at the loop index, the members' expressions, and the unravelling.
"""
from __future__ import annotations

from typing import Any

from ...fx.node import Node, NodeKind
from ...ops.lowering import element_expression
from ...ops.scalar import Expr, Var
from ..expressions import render
from ..nodes import compute_dtype, ir_line, is_python_number, is_scalar, kernel_shape, node_dtype
from ..source import product
from .dialect import NUMBA_CUDA
from .errors import LoweringError


class GroupKernel:
    """The source of one fusion group's kernel(s); ``writer`` is the host writer (``codegen.py``), which
    names variables, sizes and numbers and records each kernel."""

    def __init__(self, writer: Any, members: list[Node]) -> None:
        self.w = writer
        self.members = members
        last = members[-1]
        self.reduction = last if last.kind is NodeKind.REDUCTION else None
        loop = self.reduction.args[0].meta["shape"] if self.reduction else last.meta["shape"]
        self.loop_shape = kernel_shape(tuple(loop))
        self.rank = len(self.loop_shape)
        self.sizes = self.w.sizes_of(self.loop_shape)
        self.index = [self.w.fresh(f"i{k}") for k in range(self.rank)]
        self.name = self.w.fresh(members[0].meta.get("fusion_group", "group"))
        self.scalar_var: dict[Node, str] = {}

    # ---- values at the loop index ----------------------------------------------------------------
    def read(self, value: Any, node: Node, input_name: str) -> str:
        """The scalar expression of one input at the current loop index."""
        if isinstance(value, Node):
            if value in self.scalar_var:
                return self.scalar_var[value]
            if is_python_number(value):
                return self.w.number(value, compute_dtype(node))
            return self.element(self.w.var[value], value.meta["shape"])
        if is_scalar(value):
            return self.w.scalar(value, compute_dtype(node), f"{node.name}_{input_name}")
        if value is None:
            return "None"
        raise LoweringError(f"cannot lower argument {value!r} of IR node {ir_line(node)}")

    def element(self, var: str, shape: tuple[int, ...]) -> str:
        """``var`` indexed at the loop index, right-aligned; a size-1 dimension reads index 0."""
        shape = kernel_shape(tuple(shape))
        offset = self.rank - len(shape)
        index = ["0" if s == 1 else self.index[offset + k] for k, s in enumerate(shape)]
        return f"{var}[{', '.join(index)}]"

    def expression(self, node: Node) -> str:
        """An elementwise node's value: its op's scalar expression over its inputs' values and its
        attributes (numbers as the variables that hold them), as device code."""
        op = node.target
        inputs = [Var(self.read(value, node, name)) for name, value in zip(op.inputs, node.args)]
        attrs = {key: Var(self.read(value, node, key)) if is_scalar(value) and not isinstance(value, bool) else value
                 for key, value in node.kwargs.items()}
        return self.rendered(node, element_expression(op.lower, inputs, attrs), compute_dtype(node), node_dtype(node))

    def rendered(self, node: Node, expression: Expr, compute: Any, result: Any) -> str:
        try:
            return render(expression, NUMBA_CUDA, compute, result)
        except NotImplementedError as error:
            raise LoweringError(f"cannot lower IR node {ir_line(node)}: {error}") from None

    def body(self, write_outputs: bool) -> list[str]:
        """Each elementwise member as a scalar of the thread, and stores of those the plan keeps."""
        self.scalar_var = {}
        lines = []
        for node in self.members:
            if node is self.reduction:
                break
            lines.append(self.w.comment(node))
            value = self.scalar_var[node] = self.w.fresh(f"{node.name}_v")
            lines.append(f"{value} = {self.expression(node)}")
            if write_outputs and "buffer" in node.meta:
                lines.append(f"{self.element(self.w.var[node], node.meta['shape'])} = {value}")
        return lines

    def unravel(self, flat: str, dims: list[int]) -> list[str]:
        """Lines setting the loop indices of ``dims`` (in order, the last fastest) from the flat index
        ``flat`` over them; a size-1 dimension is index 0 and never read, so it is skipped."""
        dims = [d for d in dims if self.sizes[d] != "1"]
        if not dims:
            return []
        lines, rest = [], flat
        for position, d in enumerate(reversed(dims)):
            if position == len(dims) - 1:
                lines.append(f"{self.index[d]} = {rest}")
            else:
                lines.append(f"{self.index[d]} = {rest} % {self.sizes[d]}")
                quotient = self.w.fresh("rest")
                lines.append(f"{quotient} = {rest} // {self.sizes[d]}")
                rest = quotient
        return lines

    def header(self) -> str:
        names = ", ".join(n.name for n in self.members)
        return f"# {self.name}: {names} (loop over [{', '.join(self.sizes)}])"

    def elementwise(self, out: list[str]) -> None:
        """The kernel of a group without a reduction, and its launch in the host function."""
        flat, total = self.w.fresh("flat"), product(self.sizes)
        body = self.body(True)
        lines = [self.header(), f"for {flat} in range(cuda.grid(1), {total}, cuda.gridsize(1)):",
                 *("    " + line for line in self.unravel(flat, list(range(self.rank))) + body)]
        params = self.w.kernel(self.name, lines)
        out.append(f"launch({self.name}, {self.name!r}, launch.blocks_for({total}), ({_args(params)}))")


def _args(params: list[str]) -> str:
    return ", ".join(params) + ("," if len(params) == 1 else "")


__all__ = ["GroupKernel"]
