"""Activation layers: each calls the function of the same name in ``jitgrad.nn.functional``."""
from __future__ import annotations

import warnings

from ...tensor import Tensor
from .. import functional as F
from .module import Module


class _Elementwise(Module):
    """An activation applied to each element; ``inplace`` is taken for PyTorch's signature and shown
    in the repr, but the result is always a new tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


def _implicit_softmax_dim(name: str, ndim: int) -> int:
    """PyTorch's old default when no ``dim`` is given, with its warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        dim = _implicit_softmax_dim("softmax", input.dim()) if self.dim is None else self.dim
        return F.softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        dim = _implicit_softmax_dim("log_softmax", input.dim()) if self.dim is None else self.dim
        return F.log_softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"




class SiLU(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class Mish(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input)


class SELU(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input)


class Hardsigmoid(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input)


class Hardswish(_Elementwise):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class LeakyReLU(_Elementwise):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_Elementwise):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha)


class Hardtanh(_Elementwise):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


__all__ = ["CELU", "ELU", "GELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax",
           "Mish", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax", "Softsign", "Tanh"]
