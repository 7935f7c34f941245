"""The activation layers beside ``activation.py``'s: ``Softplus``, ``Softmin``, ``Softmax2d``, ``GLU``,
``PReLU`` (a learned slope), ``RReLU`` (a random one), ``Threshold`` and the shrinkages. Each calls the
function of the same name in ``jitgrad.nn.functional``; reprs are PyTorch's."""
from __future__ import annotations

from ...dtypes import dtype as DType
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (of ``beta x``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmin(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input, at each position."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """A leaky ReLU whose negative slope ``weight`` is learned: one for all channels, or
    ``num_parameters`` (one per channel), each ``init`` at first."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = new_parameter(num_parameters, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """A leaky ReLU whose negative slope is drawn from ``[lower, upper]`` for each element while
    training, and is their mean when evaluating (``F.rrelu``)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """``input`` above ``threshold``, else ``value``; ``inplace`` as in ``ReLU``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


__all__ = ["GLU", "Hardshrink", "PReLU", "RReLU", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Tanhshrink",
           "Threshold"]
