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

from typing import Any, Callable, Sequence

import numpy as np

from ...fx.node import Node
from ..source import product, shape_tuple
from .scalar_functions import numpy_type



class OpContext:
    """The view a statement lowering has of its node: array names, run-time shapes, attributes.

    ``inputs`` maps each input name of the op (``self``, ``other``; for a variadic op its one name) to
    the array variable (a list of them for a variadic op); ``out`` is the variable to compute;
    ``attrs`` the node's keyword arguments. Every value has rank at least 1 inside generated code: a 0-d
    tensor is a 1-element array (the wrapper reshapes at the boundary)."""

    def __init__(self, node: Node, inputs: dict[str, Any], out: str, shapes: dict[str, tuple[str, ...]],
                 contiguous: dict[str, bool], ranks: dict[str, int],
                 index_argument: Callable[[np.ndarray], str] | None = None,
                 number_argument: Callable[[Any], str] | None = None,
                 size: Callable[[int], str] | None = None) -> None:
        self.node = node
        self.inputs = inputs
        self.out = out
        self.attrs = dict(node.kwargs)
        self._shapes = shapes
        self._contiguous = contiguous
        self._ranks = ranks
        self._index_argument = index_argument
        self._number_argument = number_argument
        self._size = size
        self.result_contiguous = False

    def __getattr__(self, name: str) -> Any:
        inputs = self.__dict__.get("inputs", {})
        if name in inputs:
            return inputs[name]
        raise AttributeError(name)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.node.meta["dtype"]) if not isinstance(self.node.meta["dtype"], tuple) \
            else np.dtype(self.node.meta["dtype"][0])

    @property
    def T(self) -> str:  # noqa: N802 - the name templates use
        return numpy_type(self.dtype)

    def shape(self, var: str | None = None) -> tuple[str, ...]:
        """Size expressions of an input variable (or of the output): names or literals, run-time values."""
        return self._shapes[self.out if var is None else var]

    def index_argument(self, array: np.ndarray) -> str:
        """The name of a new kernel argument holding ``array`` as an int64 vector: for positions a
        lowering computes from the node's attributes (an advanced index) and the traced shapes."""
        return self._index_argument(array)

    def size(self, value: int) -> str:
        """A run-time expression for a size the node's attributes hold (a split's pieces): a literal
        only for 0 and 1, which decide structure."""
        return str(value) if value in (0, 1) else self._size(value)

    def number(self, value: Any) -> str:
        """A variable holding the Python number ``value`` (a fill value) as the output's type: it reaches
        the kernel through ``scalars``, so that a graph differing only in it shares the kernel."""
        return self._number_argument(value)

    def positions(self, shape: tuple[int, ...], index: Any) -> str:
        """A kernel argument with the flat positions, in a C-ordered array of ``shape``, of the
        elements ``index`` selects, in the order the selection lists them."""
        return self.index_argument(np.arange(int(np.prod(shape))).reshape(shape)[index])

    def input_type(self, position: int) -> str:
        """The numpy type (source spelling) of the node's ``position``-th argument."""
        return numpy_type(self.node.args[position].meta["dtype"])

    @staticmethod
    def product(sizes: Sequence[str]) -> str:
        """Source for the product of size expressions (``1`` for none)."""
        return product(sizes)

    def shape_tuple(self, var: str | None = None) -> str:
        return shape_tuple(self.shape(var))

    def rank(self, var: str | None = None) -> int:
        """The IR rank of an input variable (or of the output): 0 for a scalar tensor, though its array
        has one element."""
        return self._ranks[self.out if var is None else var]

    def rows(self, dim: int, var: str | None = None) -> str:
        """The shape ``(outer, n, inner)`` that views a C-contiguous array as rows along ``dim``."""
        sizes = self.shape(var)
        if self.rank(var) == 0:
            return "(1, 1, 1)"
        return f"({product(sizes[:dim])}, {sizes[dim]}, {product(sizes[dim + 1:])})"

    def contiguous(self, var: str) -> str:
        """``var`` itself when it is C-contiguous in the generated code, else a contiguous copy of it."""
        return var if self._contiguous.get(var, False) else f"np.ascontiguousarray({var})"

    def is_contiguous(self, var: str) -> bool:
        return self._contiguous.get(var, False)

    def reshaped(self, var: str, sizes: Sequence[str] | None = None) -> str:
        """A C-contiguous reshape of ``var`` to ``sizes`` (the output's shape by default); marks the
        output contiguous."""
        self.result_contiguous = True
        sizes = self.shape() if sizes is None else tuple(sizes)
        target = f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"
        return f"{self.contiguous(var)}.reshape({target})"
