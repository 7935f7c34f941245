"""What a statement intrinsic sees: the names, shapes and attributes of one IR node inside the generated
function.

Op entries name, for each op that is neither elementwise nor a reduction, an intrinsic
(``lower=intrinsic("gemm")``, ``jitgrad.ops.lowering``); this backend's code for it (``statements/``)
is a function of an ``OpContext`` returning source lines (a list or one string) that compute
``ctx.out``. A view op (``view=True``) binds ``ctx.out`` itself; any other op writes into the
``ctx.out`` array the backend allocated from the memory plan. It raises ``NotImplementedError`` for a
case it cannot lower, which becomes a ``LoweringError``. (Elementwise ops and reductions hold scalar
expressions instead, which ``loop_nest.py`` writes inside a fusion group's loops.)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..op_context import OpContext as SharedOpContext
from ..source import product
from .scalar_functions import numpy_type


class OpContext(SharedOpContext):
    """The view a statement lowering has of its node (``backends/op_context.py``), with numpy scalar
    types and what a CPU statement adds: contiguous copies, reshapes and row views of plain numpy
    arrays, and flat positions as kernel arguments."""

    scalar_type = staticmethod(numpy_type)
    parallel = False  # whether the statement may loop over rows with prange (the kernel's mode and its size)

    def positions(self, shape: tuple[int, ...], index: object) -> str:
        """A kernel argument with the flat positions, in a C-ordered array of ``shape``, of the
        elements ``index`` selects, in the order the selection lists them."""
        return self.index_argument(np.arange(int(np.prod(shape))).reshape(shape)[index])

    def input_type(self, position: int) -> str:
        """The numpy type (source spelling) of the node's ``position``-th argument."""
        return numpy_type(self.node.args[position].meta["dtype"])

    def rows(self, dim: int, var: str | None = None) -> str:
        """The shape ``(outer, n, inner)`` that views a C-contiguous array as rows along ``dim``."""
        sizes = self.shape(var)
        if self.rank(var) == 0:
            return "(1, 1, 1)"
        return f"({product(sizes[:dim])}, {sizes[dim]}, {product(sizes[dim + 1:])})"

    def contiguous(self, var: str) -> str:
        """``var`` itself when it is C-contiguous in the generated code, else a contiguous copy of it."""
        return var if self.is_contiguous(var) else f"np.ascontiguousarray({var})"

    def reshaped(self, var: str, sizes: Sequence[str] | None = None) -> str:
        """A C-contiguous reshape of ``var`` to ``sizes`` (the output's shape by default); marks the
        output contiguous."""
        self.result_contiguous = True
        sizes = self.shape() if sizes is None else tuple(sizes)
        target = f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"
        return f"{self.contiguous(var)}.reshape({target})"


__all__ = ["OpContext"]
