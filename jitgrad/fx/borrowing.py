"""Lending the caller's tensors to a trace, and giving them back untouched.

A traced function reads the caller's tensor objects themselves: its arguments, and the tensors it
reaches through its closure or globals (the code holds those objects; nothing can be handed to it in
their place). While the trace runs, each such tensor is *borrowed*: it becomes a ``TracedTensor`` (so
that turning it into a Python value raises instead of baking the value in), a leaf of the trace with a
version counter and gradient accumulator of its own and none of its hooks (so that the trace's
backward and in-place ops touch nothing the caller's autograd graph holds, and a hook the caller
registered runs once, when the engine reaches the tensor, not also inside a compiled backward), and
its memory is copied on the first write (so that
an SGD update traced inside a training step does not update the caller's weights at trace time). When
the trace ends, every borrowed tensor gets back exactly what it had.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..device import copy_array
from ..tensor import Tensor
from .traced_tensor import BORROWED_WITH_HISTORY

# What a borrowed tensor gives up for the trace, in the order ``Loan`` saves it.
_STATE = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_hooks", "_grad_accumulator",
          "_retains_grad", "_version_counter", "_view", "_post_accumulate_grad_hooks")


class BorrowError(TypeError):
    """A tensor that cannot be lent to a trace (a subclass whose layout differs from ``Tensor``'s)."""


class Loan:
    """One borrowed tensor: its class and state before the trace, restored by ``give_back``."""

    __slots__ = ("tensor", "kind", "state", "original_data")

    def __init__(self, tensor: Tensor, traced_class: type) -> None:
        self.tensor, self.kind = tensor, type(tensor)
        self.state = tuple(getattr(tensor, name) for name in _STATE)
        self.original_data = tensor._data
        try:
            tensor.__class__ = traced_class
        except TypeError as error:
            raise BorrowError(f"a {self.kind.__name__} cannot be traced ({error})") from None
        version = tensor._version_counter[0] if tensor._version_counter else 0
        if tensor._grad_fn is not None:
            BORROWED_WITH_HISTORY.add(id(tensor))
        tensor._grad_fn, tensor._output_nr, tensor._view, tensor._hooks = None, 0, None, None
        tensor._post_accumulate_grad_hooks = None
        tensor._grad_accumulator, tensor._version_counter = None, [version]

    def original(self, name: str) -> Any:
        """What the tensor held in ``name`` (``"_grad"``, ``"_hooks"``...) before the trace."""
        return self.state[_STATE.index(name)]

    @property
    def written(self) -> bool:
        """Whether the trace gave the tensor memory of its own (a write, or ``.data = ...``)."""
        return self.tensor._data is not self.original_data

    def copy_on_write(self) -> Any:
        """Before the first in-place write: the tensor's own copy of its memory (returned), so that
        the caller's array keeps its value. None when it already has its own. The copy stays on the
        tensor's device: a CUDA tensor (an optimizer's momentum buffer) copied to the host would meet
        its CUDA operands in the rest of the trace as a CPU tensor."""
        if self.written:
            return None
        data = self.tensor._data
        self.tensor._data = copy_array(data)
        return self.tensor._data

    def give_back(self) -> None:
        tensor = self.tensor
        BORROWED_WITH_HISTORY.discard(id(tensor))
        tensor.__class__ = self.kind
        for name, value in zip(_STATE, self.state):
            setattr(tensor, name, value)


def memory_owner(array: np.ndarray) -> np.ndarray:
    """The array owning ``array``'s memory. numpy's ``base`` of a view of a view names that owner, not
    the view it was taken of, so "is ``b`` a view of ``a``" cannot be answered by walking ``b``'s
    bases when ``a`` is a view itself (``randn``'s result, a reshape, a transpose)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def same_memory(a: np.ndarray, b: Any) -> bool:
    """Whether ``b`` may reach memory of ``a``: ``a`` itself, or an array over the same owner whose
    bytes overlap ``a``'s (an overlap of the bounds: a strided view beside ``a`` counts, which errs
    on the side of refusing a write)."""
    if b is a:
        return True
    return isinstance(b, np.ndarray) and memory_owner(b) is memory_owner(a) and np.may_share_memory(a, b)


__all__ = ["BorrowError", "Loan", "memory_owner", "same_memory"]
