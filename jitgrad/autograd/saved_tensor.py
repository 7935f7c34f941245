"""What a backward node keeps of a forward tensor, and the error when that was freed.

A node's own output is kept as its array, not as the tensor, so that the tensor -> grad_fn -> tensor
cycle never forms and a graph is freed by reference counting alone; unpacking rebuilds a tensor whose
``grad_fn`` is the node, which is what double backward through ``result`` needs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..tensor import Tensor

if TYPE_CHECKING:
    from .graph import Node

FREED_ERROR = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class SavedTensor:
    __slots__ = ("_tensor", "_data", "_output_nr", "_released")

    def __init__(self, tensor: Tensor, output_nr: int | None = None) -> None:
        """``output_nr`` is given when ``tensor`` is output ``output_nr`` of the node saving it."""
        self._released = False
        self._output_nr = output_nr
        if output_nr is None:
            self._tensor, self._data = tensor, None
        else:
            self._tensor, self._data = None, tensor._data

    def unpack(self, node: "Node") -> Tensor:
        if self._released:
            raise RuntimeError(FREED_ERROR)
        if self._output_nr is None:
            return self._tensor
        tensor = Tensor._make(self._data, True)
        tensor._grad_fn = node
        tensor._output_nr = self._output_nr
        return tensor

    def release(self) -> None:
        self._tensor = self._data = None
        self._released = True
