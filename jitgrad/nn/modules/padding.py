"""Padding layers: ``functional.pad`` with a mode and amounts fixed when the layer is made, one class
per mode and number of padded dimensions, as PyTorch names them (``ZeroPad2d``, ``ReflectionPad1d``...)."""
from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F
from .module import Module


class _PadNd(Module):
    """``padding``: an int (every side) or the (before, after) amounts from the last dimension back."""

    mode = "constant"
    dims = 1

    def __init__(self, padding: Any, value: float | None = None) -> None:
        super().__init__()
        self.padding = (int(padding),) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * self.dims:
            raise ValueError(f"{type(self).__name__} expects {2 * self.dims} padding amounts, got {self.padding}")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode, self.value)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    dims = 3


class ZeroPad1d(_PadNd):
    dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    dims = 2


class ZeroPad3d(ZeroPad1d):
    dims = 3


class ReflectionPad1d(_PadNd):
    mode, dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    mode, dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    mode, dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    mode, dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    mode, dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    mode, dims = "replicate", 3


class CircularPad1d(_PadNd):
    mode, dims = "circular", 1


class CircularPad2d(_PadNd):
    mode, dims = "circular", 2


class CircularPad3d(_PadNd):
    mode, dims = "circular", 3


__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
