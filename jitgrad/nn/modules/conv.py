"""``Conv1d`` and ``Conv2d``: a weight (out_channels, in_channels / groups, *kernel_size) and a bias,
initialised as PyTorch initialises them, around ``functional.conv1d``/``conv2d`` (one registry op,
``convolution``, node ``ConvolutionBackward0``); ``ConvTranspose1d``/``2d`` around the transposed
convolutions (composed of a matrix product and ``fold``)."""
from __future__ import annotations

import math
from typing import Any

from ...dtypes import dtype as DType
from ...ops.convolution import tuple_of
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _pad_amounts(padding: tuple[int, ...] | str, kernel: tuple[int, ...], dilation: tuple[int, ...]) -> tuple:
    """``F.pad``'s amounts (last dimension first, before and after) of a layer's padding: "same" puts
    the odd one of an uneven total on the right, as PyTorch does."""
    if padding == "valid":
        return (0,) * 2 * len(kernel)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        pairs = [(t // 2, t - t // 2) for t in totals]
    else:
        pairs = [(p, p) for p in padding]
    return tuple(amount for pair in reversed(pairs) for amount in pair)


def _check_channels(in_channels: int, out_channels: int, groups: int) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")


class _ConvNd(Module):
    """What Conv1d and Conv2d share: the arguments as tuples, the parameters, PyTorch's repr."""

    spatial = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        _check_channels(in_channels, out_channels, groups)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got padding_mode="
                             f"'{padding_mode}'")
        n = self.spatial
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = tuple_of(kernel_size, n, "kernel_size")
        self.stride = tuple_of(stride, n, "stride")
        self.dilation = tuple_of(dilation, n, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding: tuple[int, ...] | str = padding
        else:
            self.padding = tuple_of(padding, n, "padding")
        self.padding_mode = padding_mode
        self._pads = _pad_amounts(self.padding, self.kernel_size, self.dilation)
        self.weight = new_parameter(out_channels, in_channels // groups, *self.kernel_size, device=device,
                                    dtype=dtype)
        if bias:
            self.bias = new_parameter(out_channels, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's: kaiming-uniform with a = sqrt(5), the bias uniform in ±1/sqrt(fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self.spatial
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text

    def _convolve(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """A padding mode other than zeros, or a "same" padding of one more on the right (an even kernel),
        pads the input first with ``F.pad``, as PyTorch's layers do, and convolves it unpadded."""
        conv = F.conv1d if self.spatial == 1 else F.conv2d
        pads = self._pads
        if self.padding_mode == "zeros" and all(pads[i] == pads[i + 1] for i in range(0, len(pads), 2)):
            return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
        return conv(F.pad(input, pads, mode=mode), weight, bias, self.stride, 0, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._convolve(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """A 1-d convolution over (N, C, L) or (C, L) inputs."""

    spatial = 1


class Conv2d(_ConvNd):
    """A 2-d convolution over (N, C, H, W) or (C, H, W) inputs."""

    spatial = 2


class _ConvTransposeNd(Module):
    """``ConvTranspose1d`` and ``ConvTranspose2d``: a weight (in_channels, out_channels / groups,
    *kernel_size), initialised as PyTorch's (its fan-in is out_channels / groups times the kernel's
    size), and a bias, around ``functional.conv_transpose1d``/``2d``."""

    spatial = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        _check_channels(in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self.spatial
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = tuple_of(kernel_size, n, "kernel_size")
        self.stride = tuple_of(stride, n, "stride")
        self.padding = tuple_of(padding, n, "padding")
        self.output_padding = tuple_of(output_padding, n, "output_padding")
        self.dilation = tuple_of(dilation, n, "dilation")
        self.padding_mode = padding_mode
        self.weight = new_parameter(in_channels, out_channels // groups, *self.kernel_size, device=device,
                                    dtype=dtype)
        if bias:
            self.bias = new_parameter(out_channels, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    reset_parameters = _ConvNd.reset_parameters

    def extra_repr(self) -> str:
        n = self.spatial
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        for name, default in (("padding", 0), ("dilation", 1), ("output_padding", 0)):
            if getattr(self, name) != (default,) * n:
                text += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """``output_size``: the output's spatial size wanted, from which the output padding follows
        (a strided convolution's input sizes that give one output size differ by up to the stride)."""
        extra = self.output_padding if output_size is None else self._output_padding(input, output_size)
        transpose = F.conv_transpose1d if self.spatial == 1 else F.conv_transpose2d
        return transpose(input, self.weight, self.bias, self.stride, self.padding, extra, self.groups, self.dilation)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        wanted = list(output_size)[-self.spatial:]
        smallest = [(input.shape[input.dim() - self.spatial + i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(self.spatial)]
        for size, low, stride in zip(wanted, smallest, self.stride):
            if not low <= size < low + stride:
                raise ValueError(f"requested an output size of {wanted}, but valid sizes range from {smallest} to "
                                 f"{[lo + s - 1 for lo, s in zip(smallest, self.stride)]} (for an input of "
                                 f"{list(input.shape)[-self.spatial:]})")
        return tuple(size - low for size, low in zip(wanted, smallest))


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-d transposed convolution over (N, C, L) or (C, L) inputs."""

    spatial = 1


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-d transposed convolution over (N, C, H, W) or (C, H, W) inputs."""

    spatial = 2


__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]
