"""Average pooling (fixed and adaptive windows) and one-dimensional max pooling, as PyTorch's
``nn.functional`` spells them, composed of registry ops.

An average over rectangular windows is separable: each output is a mean of rows, then of columns,
with PyTorch's divisor (padding counted or not, the part of a ``ceil_mode`` window past the padding
never counted, or ``divisor_override``) a product of a row factor and a column factor. So a pooling
is ``A_h @ x @ A_w.T`` with two small weight matrices made here in numpy: one formula for padding,
``ceil_mode``, overlapping and adaptive windows alike, whose gradient is two matrix products. The
common case (windows that tile the image: no padding, stride equal to the kernel, sizes divisible)
is a reshape and a mean instead. ``max_pool1d`` is ``max_pool2d`` over a plane of height one.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..factories import tensor
from ..ops.convolution import tuple_of
from ..ops.pooling import max_pool2d, pooled_size
from ..ops.reductions import mean
from ..tensor import Tensor


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Over the last two dimensions of an (N, C, H, W) or (C, H, W) input."""
    _check_dims(input, (3, 4), "avg_pool2d")
    kernel = tuple_of(kernel_size, 2, "kernel_size", "avg_pool2d")
    strides = kernel if _default_stride(stride) else tuple_of(stride, 2, "stride", "avg_pool2d")
    pads = tuple_of(padding, 2, "padding", "avg_pool2d")
    _check_window(input, kernel, strides, pads, divisor_override)
    sizes = tuple(input.shape[-2:])
    out = tuple(pooled_size(s, k, st, p, 1, ceil_mode) for s, k, st, p in zip(sizes, kernel, strides, pads))
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(str(s) for s in input.shape[-3:])}). Calculated output "
                           f"size: ({input.shape[-3]}x{out[0]}x{out[1]}). Output size is too small")
    if divisor_override is None and pads == (0, 0) and kernel == strides \
            and all(s == o * k for s, o, k in zip(sizes, out, kernel)):
        tiles = input.reshape(*input.shape[:-2], out[0], kernel[0], out[1], kernel[1])
        return mean(tiles, (-3, -1))
    counted = divisor_override is None
    rows = _window_weights(sizes[0], out[0], kernel[0], strides[0], pads[0], count_include_pad, counted)
    cols = _window_weights(sizes[1], out[1], kernel[1], strides[1], pads[1], count_include_pad, counted)
    return _separable(input, rows if counted else rows / divisor_override, cols)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Over the last dimension of an (N, C, L) or (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for avg_pool1d)")
    op = "avg_pool1d"
    strides = None if _default_stride(stride) else _on_a_line(stride, "stride", op)
    pooled = avg_pool2d(input.unsqueeze(-2), _on_a_line(kernel_size, "kernel_size", op), strides,
                        _on_a_line(padding, "padding", op, 0), ceil_mode, count_include_pad)
    return pooled.squeeze(-2)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Output position ``i`` of a dimension of size ``n`` averages inputs ``floor(i * n / out)`` to
    ``ceil((i + 1) * n / out)``, as PyTorch's; ``None`` in ``output_size`` keeps that dimension."""
    _check_dims(input, (3, 4), "adaptive_avg_pool2d")
    sizes = tuple(input.shape[-2:])
    wanted = (output_size, output_size) if isinstance(output_size, (int, np.integer)) or output_size is None \
        else tuple(output_size)
    out = tuple(s if o is None else int(o) for s, o in zip(sizes, wanted))
    if min(out) < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {list(out)}")
    if all(o and s % o == 0 for s, o in zip(sizes, out)):
        k = (sizes[0] // out[0], sizes[1] // out[1])
        tiles = input.reshape(*input.shape[:-2], out[0], k[0], out[1], k[1])
        return mean(tiles, (-3, -1))
    return _separable(input, _adaptive_weights(sizes[0], out[0]), _adaptive_weights(sizes[1], out[1]))


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    if input.dim() not in (2, 3):
        raise RuntimeError(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    size = tuple_of(output_size, 1, "output_size", "adaptive_avg_pool1d")[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if input.dim() not in (2, 3):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    op = "max_pool1d"
    strides = None if _default_stride(stride) else _on_a_line(stride, "stride", op)
    pooled = max_pool2d(input.unsqueeze(-2), _on_a_line(kernel_size, "kernel_size", op), strides,
                        _on_a_line(padding, "padding", op, 0), _on_a_line(dilation, "dilation", op),
                        ceil_mode=ceil_mode, return_indices=return_indices)
    if return_indices:
        return pooled[0].squeeze(-2), pooled[1].squeeze(-2)
    return pooled.squeeze(-2)


def _default_stride(stride: Any) -> bool:
    """PyTorch's "no stride given" (None or an empty sequence): the stride is then the kernel's."""
    return stride is None or (isinstance(stride, (list, tuple)) and not stride)


def _on_a_line(value: Any, name: str, op: str, height: int = 1) -> tuple[int, int]:
    """A 1-d pooling's argument as its 2-d pooling's over a plane one high: ``(height, value)``."""
    return (height, tuple_of(value, 1, name, op)[0])


# ---- the separable form ----------------------------------------------------------------------------
def _separable(input: Tensor, rows: np.ndarray, cols: np.ndarray) -> Tensor:
    """``rows @ x @ cols.T`` over the last two dimensions, the weights in ``input``'s dtype."""
    left = tensor(rows, dtype=input.dtype, device=input.device)
    right = tensor(np.ascontiguousarray(cols.T), dtype=input.dtype, device=input.device)
    return left @ input @ right


def _window_weights(size: int, out: int, kernel: int, stride: int, pad: int, count_include_pad: bool,
                    counted: bool) -> np.ndarray:
    """Row ``i`` weighs the input positions window ``i`` covers: ``1 / divisor`` where ``counted``,
    PyTorch's divisor being the window's extent up to the end of the padding (or its real positions
    alone, without ``count_include_pad``), so that the row and column factors multiply to PyTorch's
    divisor of the rectangle; 1 where a ``divisor_override`` divides instead."""
    weights = np.zeros((out, size))
    for i in range(out):
        start = i * stride - pad
        end = min(start + kernel, size + pad)
        first, last = max(start, 0), min(end, size)
        if last > first:
            weights[i, first:last] = 1.0 / ((end - start) if count_include_pad else (last - first)) if counted else 1.0
    return weights


def _adaptive_weights(size: int, out: int) -> np.ndarray:
    weights = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, math.ceil((i + 1) * size / out)
        weights[i, start:end] = 1.0 / (end - start)
    return weights


def _check_dims(input: Tensor, dims: tuple[int, ...], op: str) -> None:
    if input.dim() not in dims:
        raise RuntimeError(f"{op}: non-empty 3D or 4D (batch mode) tensor expected for input, but got "
                           f"{list(input.shape)}")


def _check_window(input: Tensor, kernel: tuple, strides: tuple, pads: tuple, divisor_override: int | None) -> None:
    if min(kernel) <= 0:
        raise RuntimeError("kernel_size must be greater than zero")
    if min(strides) <= 0:
        raise RuntimeError("stride should not be zero")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    for p, k in zip(pads, kernel):
        if p < 0 or p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation=1")


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d"]
