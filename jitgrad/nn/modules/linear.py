"""``Linear`` (``y = x Wᵀ + b``) and ``Identity`` (a placeholder layer that returns its input)."""
from __future__ import annotations

import math
from typing import Any

from ...dtypes import dtype as DType
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


class Identity(Module):
    """Returns its input; takes and ignores any arguments, so it can stand in for a configured layer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``weight`` (out_features, in_features) and ``bias`` (out_features), both drawn as PyTorch
    draws them: uniform in ``±1/sqrt(in_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = new_parameter(out_features, in_features, device=device, dtype=dtype)
        if bias:
            self.bias = new_parameter(out_features, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


__all__ = ["Identity", "Linear"]
