"""One fusion group without a reduction as one ``@cuda.jit`` kernel: a thread per element of the group's
loop shape, in a grid-stride loop (any grid covers any size, so the grid can be capped), the flat
index unravelled by division into one index per loop dimension, and broadcasting by index arithmetic:
a size-1 dimension of a value reads index 0. Each member's value is a scalar of the thread, written
with the CUDA dialect from its op's scalar expression; those the memory plan stores are written to
their arrays.

``GroupKernel`` holds what the reduction kernels (``reduction.py``) share: the loop state and the
members' values at the loop index (from ``FusedLoop``, shared with the CPU's loop nests), and the
unravelling.
"""
from __future__ import annotations

from typing import Any

from ...fx.node import Node
from ..fused_loop import FusedLoop
from ..source import product
from .dialect import NUMBA_CUDA
from .errors import LoweringError


class GroupKernel(FusedLoop):
    """The source of one fusion group's kernel(s); ``writer`` is the host writer (``codegen.py``), which
    names variables, sizes and numbers and records each kernel. The members' values at the loop index
    come from ``FusedLoop`` (``backends/fused_loop.py``)."""

    dialect = NUMBA_CUDA
    lowering_error = LoweringError

    def __init__(self, writer: Any, members: list[Node]) -> None:
        super().__init__(writer, members)
        self.sizes = self.w.sizes_of(self.loop_shape)
        self.name = self.w.fresh(members[0].meta.get("fusion_group", "group"))

    def index_names(self) -> list[str]:
        """Fresh names: a kernel's indices share the host module's namespace with sizes and numbers."""
        return [self.w.fresh(f"i{k}") for k in range(self.rank)]

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
