"""``Parameter``: a tensor that a ``Module`` registers as one of its parameters when assigned to it.

Being a ``Tensor`` subclass is all it takes: ``Module.__setattr__`` looks at the class to decide that
``self.weight = Parameter(...)`` is a parameter (listed by ``parameters()``, saved by ``state_dict()``)
while ``self.cache = tensor`` is a plain attribute. It adds no state of its own (``__slots__ = ()``),
so it has ``Tensor``'s layout: a compiled function can lend it to a trace like any tensor.
"""
from __future__ import annotations

from typing import Any

from ..dtypes import dtype as DType
from ..factories import empty
from ..tensor import Tensor


class Parameter(Tensor):
    """``Parameter(data, requires_grad=True)`` shares ``data``'s memory and version counter, as
    PyTorch's does; results of ops on it are plain tensors."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, not {type(data).__name__}")
        param = data.detach()
        param.__class__ = cls
        return param.requires_grad_(requires_grad)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in ``__new__``: ``Tensor.__init__`` would build a new array."""

    def detach(self) -> Tensor:
        """A plain tensor on the same memory (not a Parameter: assigning it to a module does not make
        it a parameter, as in PyTorch)."""
        alias = super().detach()
        alias.__class__ = Tensor
        return alias

    @property
    def data(self) -> Tensor:
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        Tensor.data.fset(self, value)

    def __deepcopy__(self, memo: dict[int, Any]) -> "Parameter":
        if id(self) not in memo:
            copied = Parameter(self.detach().clone(), self.requires_grad)
            if self.grad is not None:
                copied.grad = self.grad.detach().clone()
            memo[id(self)] = copied
        return memo[id(self)]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def new_parameter(*shape: int, device: str | None = None, dtype: DType | None = None) -> Parameter:
    """An uninitialised parameter of ``shape`` (the default float dtype unless ``dtype``): a module
    makes its parameters with this and fills them in ``reset_parameters``, on ``device`` (the CPU
    unless given)."""
    return Parameter(empty(*shape, dtype=dtype, device=device))
