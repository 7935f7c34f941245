"""``interpolate`` (resizing) and ``pixel_shuffle`` as PyTorch's ``nn.functional`` spells them,
composed of registry ops.

Resizing is separable: each spatial dimension is resized in turn by ``tap_sum``
(``jitgrad/ops/tap_sums.py``), each output position a weighted sum of the input positions PyTorch's
kernels read for it (one for ``nearest``, two for ``linear``, four for ``bicubic``, at PyTorch's source
positions for each ``align_corners``), with tables made here in numpy. So an ``inf`` or NaN reaches
the outputs that read it and no others, the gradient adds into the positions read, and compiling
comes from the op's lowerings. ``area`` is adaptive average pooling, as in PyTorch (over three
dimensions, its windows one dimension after another).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from ..ops.meta_rules import scalar_type_name
from ..ops.tap_sums import TapTables, tap_sum, tap_tables
from ..tensor import Tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_tables

# the interpolating modes and the spatial dimensions each takes
_LINEAR = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant
Taps = tuple[np.ndarray, np.ndarray]  # (out, taps) tables of input positions and their weights


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resizes the spatial dimensions (all after the first two) to ``size``, or by ``scale_factor``
    (the output ``floor(size * scale_factor)``; the source positions use ``1 / scale_factor`` unless
    ``recompute_scale_factor``, as PyTorch's)."""
    spatial = input.dim() - 2
    if antialias:
        raise NotImplementedError(f"interpolate: mode={mode!r} with antialias is not supported by jitgrad")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if align_corners is not None and mode not in _LINEAR:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if mode in _LINEAR and spatial != _LINEAR[mode]:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR[mode] + 2}D input")
    if spatial < 1 or spatial > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D)")
    sizes = list(input.shape[2:])
    out, scales = _output_sizes(sizes, size, scale_factor, recompute_scale_factor)
    if mode == "area" and spatial < 3:
        return adaptive_avg_pool1d(input, out[0]) if spatial == 1 else adaptive_avg_pool2d(input, tuple(out))
    if not mode.startswith("nearest") and not input.is_floating_point():
        raise NotImplementedError(f"interpolate: mode={mode!r} is not implemented for "
                                  f"'{scalar_type_name(input._data.dtype)}' inputs by jitgrad (the nearest modes are): "
                                  "convert the input to a floating dtype first")
    for axis, (n, m, scale) in enumerate(zip(sizes, out, scales)):
        input = tap_sum(input, 2 + axis, _resize_tables(mode, n, m, scale, bool(align_corners)))
    return input


@lru_cache(maxsize=256)
def _resize_tables(mode: str, n: int, m: int, scale: float | None, align_corners: bool) -> TapTables:
    """The taps resizing a dimension of ``n`` positions to ``m`` read."""
    if mode == "area":  # adaptive average pooling, whose box windows are separable
        return adaptive_tables(n, m)
    if mode.startswith("nearest"):
        taps = _nearest(n, m, scale, mode == "nearest-exact")
    elif mode == "bicubic":
        taps = _cubic(n, m, scale, align_corners)
    else:
        taps = _linear(n, m, scale, align_corners)
    return tap_tables(*taps, n)


def _output_sizes(sizes: list[int], size: Any, scale_factor: Any,
                  recompute: bool | None) -> tuple[list[int], list[float | None]]:
    """The output sizes, and for each dimension the scale the source positions use (None: in/out)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        out = [int(size)] * len(sizes) if isinstance(size, (int, np.integer)) else [int(s) for s in size]
        if len(out) != len(sizes):
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {sizes} and output size of {tuple(size)}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return out, [None] * len(sizes)
    factors = [float(scale_factor)] * len(sizes) if isinstance(scale_factor, (int, float)) \
        else [float(f) for f in scale_factor]
    if len(factors) != len(sizes):
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {sizes} and scale_factor of shape {tuple(scale_factor)}. Please "
                         "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                         "format.")
    out = [math.floor(n * f) for n, f in zip(sizes, factors)]
    return out, [None if recompute else 1.0 / f for f in factors]


def _nearest(n: int, m: int, scale: float | None, exact: bool) -> Taps:
    step = n / m if scale is None else scale
    positions = np.arange(m) + (0.5 if exact else 0.0)
    source = np.minimum(np.floor(positions * step).astype(np.int64), n - 1)
    return source[:, None], np.ones((m, 1))


def _linear(n: int, m: int, scale: float | None, align_corners: bool) -> Taps:
    """Two taps, PyTorch's: the one below the source position and the next (the same one at the last
    position, with weight 0, so that a NaN there reaches the output as in PyTorch)."""
    if align_corners:
        source = np.arange(m) * ((n - 1) / (m - 1) if m > 1 else 0.0)
    else:
        step = n / m if scale is None else scale
        source = np.maximum((np.arange(m) + 0.5) * step - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    fraction = source - low
    return np.stack([low, high], 1), np.stack([1.0 - fraction, fraction], 1)


def _cubic(n: int, m: int, scale: float | None, align_corners: bool) -> Taps:
    """PyTorch's bicubic taps: four input positions around each source position (clamped to the
    edges), weighted by the cubic convolution kernel; the source position is not clamped at 0, unlike
    linear's."""
    if align_corners:
        source = np.arange(m) * ((n - 1) / (m - 1) if m > 1 else 0.0)
    else:
        source = (np.arange(m) + 0.5) * (n / m if scale is None else scale) - 0.5
    low = np.floor(source)
    t = source - low
    a = _CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    index = np.clip(low.astype(np.int64)[:, None] - 1 + np.arange(4), 0, n - 1)
    return index, np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r², H, W) to (*, C, H r, W r): each group of r² channels becomes an r by r block."""
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    n = len(batch)
    blocks = input.reshape(*batch, channels // (r * r), r, r, height, width)
    order = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
    return blocks.permute(*order).reshape(*batch, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """The inverse of ``pixel_shuffle``: (*, C, H r, W r) to (*, C r², H, W)."""
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, channels, height, width = input.shape
    if height % r or width % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got "
                           f"height={height}, width={width} and downscale_factor={r}")
    n = len(batch)
    blocks = input.reshape(*batch, channels, height // r, r, width // r, r)
    order = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
    return blocks.permute(*order).reshape(*batch, channels * r * r, height // r, width // r)


__all__ = ["interpolate", "pixel_shuffle", "pixel_unshuffle"]
