"""What a statement sees of its IR node: the kernel writer, the node, its inputs' arrays and its
output's (``None`` for a view, which makes its own)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....fx.node import Node
from ...nodes import node_dtype
from ..arrays import ArrayView


@dataclass
class Statement:
    k: Any                      # the kernel writer (``codegen.KernelWriter``)
    node: Node
    inputs: list[Any]           # one ArrayView per tensor argument (a list of them for a variadic op)
    out: ArrayView | None

    @property
    def w(self) -> Any:
        return self.k.fn

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self.node.kwargs)

    @property
    def dtype(self) -> np.dtype:
        return node_dtype(self.node)

    def input_shape(self, position: int = 0) -> tuple[int, ...]:
        """The traced shape of the node's ``position``-th argument."""
        return tuple(self.node.args[position].meta["shape"])


__all__ = ["Statement"]
