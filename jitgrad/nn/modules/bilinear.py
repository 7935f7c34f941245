"""``Bilinear``: ``y = x1ᵀ A x2 + b``, one (in1_features, in2_features) matrix ``A`` per output."""
from __future__ import annotations

import math

from ...dtypes import dtype as DType
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


class Bilinear(Module):
    """``weight`` (out_features, in1_features, in2_features) and ``bias`` (out_features), both uniform
    in ``±1/sqrt(in1_features)`` as PyTorch draws them."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = new_parameter(out_features, in1_features, in2_features, device=device, dtype=dtype)
        if bias:
            self.bias = new_parameter(out_features, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["Bilinear"]
