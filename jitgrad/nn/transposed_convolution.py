"""Transposed convolutions as PyTorch's ``nn.functional`` spells them, composed of registry ops.

A transposed convolution spreads each input position over a window of the output: the weight
(in_channels, out_channels / groups, kh, kw) turns each input column into a column of windows
(one matrix product per group), and ``fold`` (col2im) adds the overlapping windows into the output
at the stride's spacing, cropping ``padding`` from each side. Gradients, their higher orders and
compiling come from ``matmul`` and ``col2im``.
"""
from __future__ import annotations

from typing import Any

from ..ops.convolution import fold, tuple_of
from ..tensor import Tensor


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """``input`` (N, C, H, W) or (C, H, W); the output is (H - 1) stride - 2 padding + dilation
    (kh - 1) + output_padding + 1 high, likewise wide."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
                           f"size: {list(input.shape)}")
    strides, pads = tuple_of(stride, 2, "stride"), tuple_of(padding, 2, "padding")
    extra, dilations = tuple_of(output_padding, 2, "output_padding"), tuple_of(dilation, 2, "dilation")
    x = input if input.dim() == 4 else input.unsqueeze(0)
    batch, channels, height, width = x.shape
    _check(weight, tuple(x.shape), groups, strides, extra, dilations)
    out_per_group, kernel = weight.shape[1], tuple(weight.shape[2:])
    size = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1
                 for n, s, p, d, k, e in zip((height, width), strides, pads, dilations, kernel, extra))
    columns = weight.reshape(groups, channels // groups, out_per_group * kernel[0] * kernel[1]).transpose(1, 2) \
        @ x.reshape(batch, groups, channels // groups, height * width)
    out = fold(columns.reshape(batch, groups * out_per_group * kernel[0] * kernel[1], height * width), size, kernel,
               dilations, pads, strides)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out if input.dim() == 4 else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """``input`` (N, C, L) or (C, L): ``conv_transpose2d`` over a plane of height one."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of "
                           f"size: {list(input.shape)}")

    def one(value: Any, name: str) -> tuple[int, int]:
        return (0 if name in ("padding", "output_padding") else 1, tuple_of(value, 1, name)[0])
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, one(stride, "stride"),
                           one(padding, "padding"), one(output_padding, "output_padding"), groups,
                           one(dilation, "dilation"))
    return out.squeeze(-2)


def _check(weight: Tensor, shape: tuple, groups: int, strides: tuple, extra: tuple, dilations: tuple) -> None:
    channels = shape[1]
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if weight.shape[0] != channels:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(shape)} to "
                           f"have {weight.shape[0]} channels, but got {channels} channels instead")
    if any(e >= s and e >= d for e, s, d in zip(extra, strides, dilations)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding_height: {extra[0]} output_padding_width: {extra[1]} stride_height: "
                           f"{strides[0]} stride_width: {strides[1]} dilation_height: {dilations[0]} dilation_width: "
                           f"{dilations[1]}")
    if any(e >= s for e, s in zip(extra, strides)):
        raise NotImplementedError(f"conv_transpose: an output_padding {extra} not smaller than the stride {strides} "
                                  "(allowed by a larger dilation) is not supported by jitgrad")


__all__ = ["conv_transpose1d", "conv_transpose2d"]
