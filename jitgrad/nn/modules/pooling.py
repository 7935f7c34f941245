"""``MaxPool2d``: the maximum of each window, around ``functional.max_pool2d`` (node
``MaxPool2DWithIndicesBackward0``)."""
from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F
from .module import Module


class MaxPool2d(Module):
    """Arguments kept as given (an int stays an int), as PyTorch's repr shows them; ``stride`` defaults
    to ``kernel_size``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


__all__ = ["MaxPool2d"]
