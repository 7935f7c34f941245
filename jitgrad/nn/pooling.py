"""Average pooling (fixed and adaptive windows) and one-dimensional max pooling, as PyTorch's
``nn.functional`` spells them, composed of registry ops.

An average over rectangular windows is separable: each output is a mean of rows, then of columns,
with PyTorch's divisor (padding counted or not, the part of a ``ceil_mode`` window past the padding
never counted, or ``divisor_override``) a product of a row factor and a column factor. So a pooling
is two ``tap_sum``s (``jitgrad/ops/tap_sums.py``), each output position a weighted sum of the input
positions its window covers, with tables made here in numpy: one formula for padding, ``ceil_mode``,
overlapping and adaptive windows alike, which reads only the window (an ``inf`` or NaN stays in the
outputs whose windows hold it, as in PyTorch). Integer inputs are summed with weight 1 and divided
by the rectangle's divisor, truncating, as PyTorch's pooling of int64. The common case (windows that
tile the image: no padding, stride equal to the kernel, sizes divisible) is a reshape and a mean
instead. ``max_pool1d`` is ``max_pool2d`` over a plane of height one.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.arithmetic_arguments import div_with_rounding
from ..ops.combining import constant
from ..ops.convolution import tuple_of
from ..ops.meta_rules import scalar_type_name
from ..ops.pooling import max_pool2d, pooled_size
from ..ops.reductions import mean
from ..ops.tap_sums import TapTables, tap_sum, tap_tables
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
    if not input.is_floating_point() and input.dtype != dtypes.int64:
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{scalar_type_name(input._data.dtype)}' "
                                  "(of the integer dtypes only int64 is, as in PyTorch): convert the input first")
    windows = [(*a, count_include_pad) for a in zip(sizes, out, kernel, strides, pads)]
    if not input.is_floating_point():
        return _integer_average(input, windows, divisor_override)
    if divisor_override is None and pads == (0, 0) and kernel == strides \
            and all(s == o * k for s, o, k in zip(sizes, out, kernel)):
        tiles = input.reshape(*input.shape[:-2], out[0], kernel[0], out[1], kernel[1])
        return mean(tiles, (-3, -1))
    rows = _average_tables(*windows[0], divisor_override)
    cols = _average_tables(*windows[1], None if divisor_override is None else 1)
    return tap_sum(tap_sum(input, -2, rows), -1, cols)


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
    if not input.is_floating_point():
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for "
                                  f"'{scalar_type_name(input._data.dtype)}': convert the input to a floating dtype first")
    if all(o and s % o == 0 for s, o in zip(sizes, out)):
        k = (sizes[0] // out[0], sizes[1] // out[1])
        tiles = input.reshape(*input.shape[:-2], out[0], k[0], out[1], k[1])
        return mean(tiles, (-3, -1))
    return tap_sum(tap_sum(input, -2, adaptive_tables(sizes[0], out[0])), -1, adaptive_tables(sizes[1], out[1]))


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


# ---- the windows' taps ----------------------------------------------------------------------------
def _windows(size: int, out: int, kernel: int, stride: int, pad: int,
             count_include_pad: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Window ``i``'s real input positions ``[first, last)`` and PyTorch's divisor for it along this
    dimension: its extent up to the end of the padding, or its real positions alone without
    ``count_include_pad``; the row and column divisors multiply to the rectangle's."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    first, last = np.maximum(start, 0), np.minimum(end, size)
    return first, np.maximum(last, first), (end - start) if count_include_pad else (last - first)


@lru_cache(maxsize=256)
def _average_tables(size: int, out: int, kernel: int, stride: int, pad: int, count_include_pad: bool,
                    divisor: int | None) -> TapTables:
    """The windows' taps, each weighing 1 / PyTorch's divisor of its window along this dimension, or
    1 / ``divisor`` when given (1: the windows' sums)."""
    first, last, own = _windows(size, out, kernel, stride, pad, count_include_pad)
    return _box_tables(first, last, size, own if divisor is None else np.full(out, divisor))


@lru_cache(maxsize=256)
def adaptive_tables(size: int, out: int) -> TapTables:
    """Adaptive average pooling's windows: output ``i`` averages ``[floor(i n / out), ceil((i + 1) n / out))``."""
    first = (np.arange(out) * size) // out
    last = -((-(np.arange(out) + 1) * size) // out)
    return _box_tables(first, last, size, last - first)


def _box_tables(first: np.ndarray, last: np.ndarray, size: int, divisors: np.ndarray) -> TapTables:
    """Taps ``[first, last)`` of each window weighing ``1 / divisor`` (the tables padded with the
    position ``size``)."""
    offsets = np.arange(int((last - first).max(initial=0)))
    index = first[:, None] + offsets
    inside = index < last[:, None]
    weight = np.where(inside, 1.0 / np.maximum(divisors, 1)[:, None], 0.0)
    return tap_tables(np.where(inside, index, size), weight, size)


def _integer_average(input: Tensor, windows: list[tuple], divisor_override: int | None) -> Tensor:
    """PyTorch's average of int64s: the window's sum divided by the divisor, truncating."""
    sums = tap_sum(tap_sum(input, -2, _average_tables(*windows[0], 1)), -1, _average_tables(*windows[1], 1))
    if divisor_override is None:
        divisors = np.outer(_windows(*windows[0])[2], _windows(*windows[1])[2])
    else:
        divisors = np.full(sums.shape[-2:], divisor_override)
    return div_with_rounding(sums, constant(divisors.astype(np.int64), sums), rounding_mode="trunc")


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
