"""The part of a statement intrinsic's view of its IR node that every backend shares.

A statement (a backend's ``statements/``, for ops whose entry is ``lower=intrinsic(name)``) is a
function of an ``OpContext`` returning source lines. What it asks of its node is the same on every
backend: the variables of its inputs and output, its attributes, its dtype, run-time size expressions
(sizes are never source, so a graph differing only in sizes shares the generated code), numbers and
index arrays passed as arguments. That contract lives here once; a backend's ``context.py`` subclasses
``OpContext`` to name its scalar types (``scalar_type``) and add what only it has (the CPU's
contiguous copies and row views, the CUDA stream and kernel library).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..fx.node import Node
from ..ops.indexing import without_ellipsis
from .source import product, shape_tuple


class OpContext:
    """The names, run-time shapes and attributes of one IR node inside generated code.

    ``inputs`` maps each input name of the op (``self``, ``other``; for a variadic op its one name) to
    the array variable (a list of them for a variadic op), also read as attributes (``ctx.self``);
    ``out`` is the variable to compute; ``attrs`` the node's keyword arguments. Every value has rank at
    least 1 inside generated code: a 0-d tensor is a 1-element array."""

    def __init__(self, node: Node, inputs: dict[str, Any], out: str, shapes: dict[str, tuple[str, ...]],
                 contiguous: dict[str, bool], ranks: dict[str, int],
                 index_argument: Callable[[np.ndarray], str] | None = None,
                 number: Callable[[Any], str] | None = None,
                 size: Callable[[int], str] | None = None) -> None:
        self.node = node
        self.inputs = inputs
        self.out = out
        self.attrs = dict(node.kwargs)
        self._shapes = shapes
        self._contiguous = contiguous
        self._ranks = ranks
        self._index_argument = index_argument
        self._number = number
        self._size = size
        self.result_contiguous = False  # a view statement sets it when its result is C-contiguous

    def __getattr__(self, name: str) -> Any:
        inputs = self.__dict__.get("inputs", {})
        if name in inputs:
            return inputs[name]
        raise AttributeError(name)

    @staticmethod
    def scalar_type(dtype: np.dtype) -> str:
        """The backend's source spelling of a numpy dtype's scalar type (``np.float32``,
        ``numba.float32``); each backend's subclass supplies it."""
        raise NotImplementedError

    @property
    def dtype(self) -> np.dtype:
        dtype = self.node.meta["dtype"]
        return np.dtype(dtype[0] if isinstance(dtype, tuple) else dtype)

    @property
    def T(self) -> str:  # noqa: N802 - the name statements use
        return self.scalar_type(self.dtype)

    def shape(self, var: str | None = None) -> tuple[str, ...]:
        """Size expressions of an input variable (or of the output): names or literals, run-time values."""
        return self._shapes[self.out if var is None else var]

    def shape_tuple(self, var: str | None = None) -> str:
        return shape_tuple(self.shape(var))

    def rank(self, var: str | None = None) -> int:
        """The IR rank of an input variable (or of the output): 0 for a scalar tensor, though its array
        has one element."""
        return self._ranks[self.out if var is None else var]

    def size(self, value: int) -> str:
        """A run-time expression for a size the node's attributes hold (a split's pieces): a literal
        only for 0 and 1, which decide structure."""
        return str(value) if value in (0, 1) else self._size(value)

    def index_slices(self, index: tuple, rank: int) -> list[str]:
        """Source for a basic index as slices, one per dimension it names (an integer is a one-wide
        slice; a ``None`` names none). Bounds are run-time values (``size``), as sizes are: ``x[:, :n //
        2]`` traced at another ``n`` reuses the code; a step stays literal (its sign decides the loop)."""
        items = []
        for item in without_ellipsis(index, rank):
            if item is None:
                continue
            if isinstance(item, slice):
                bounds = ["" if v is None else self.size(int(v)) for v in (item.start, item.stop)]
                items.append(":".join(bounds + ([] if item.step is None else [str(item.step)])))
            else:  # counted from the end when negative, so that the size stays out of the source
                start = int(item)
                items.append(f"{self.size(start)}:{self.size(start + 1)}" if start != -1 else "-1:")
        return items

    def number(self, value: Any) -> str:
        """A variable holding the Python number ``value`` of the node (a fill value): it comes in as an
        argument, so that a graph differing only in it shares the generated code."""
        return self._number(value)

    def index_argument(self, array: np.ndarray) -> str:
        """The variable of a new argument holding ``array`` as an int64 vector: for positions a
        lowering computes from the node's attributes (an advanced index) and the traced shapes."""
        return self._index_argument(array)

    def is_contiguous(self, var: str) -> bool:
        """Whether the variable is known C-contiguous at lowering time."""
        return self._contiguous.get(var, False)

    @staticmethod
    def product(sizes: Sequence[str]) -> str:
        """Source for the product of size expressions (``1`` for none)."""
        return product(sizes)


__all__ = ["OpContext"]
