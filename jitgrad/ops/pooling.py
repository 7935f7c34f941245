"""``max_pool2d`` (node ``MaxPool2DWithIndicesBackward0``) and its gradient's ops.

The op returns the window maxima and, as PyTorch's ``max_pool2d_with_indices`` does, the position of
each within its image's plane (``h * W + w``). Its gradient sends each output's gradient to that
position: ``max_pool2d_backward``, a scatter that sums where windows overlap. The scatter is linear in
the gradient and its derivative is the gather from the same positions, ``max_pool2d_gather``, whose
derivative is the scatter again: gradients of any order, from two small ops.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..tensor import Tensor
from .convolution import Pair, tuple_of
from .lowering import intrinsic
from .meta_rules import TensorMeta, given
from .public import public
from .registry import defop


def pooled_size(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's output size of a pooling: with ``ceil_mode`` a last, partial window counts, unless it
    would start in the right padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _pooled_shape(shape: tuple, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair,
                  ceil_mode: bool) -> tuple[int, ...]:
    """PyTorch's checks of a pooling's parameters, and the output's shape."""
    if len(shape) != 4 or 0 in shape[1:]:
        raise ValueError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if min(kernel_size) <= 0 or min(stride) <= 0 or min(dilation) <= 0:
        raise ValueError(f"kernel_size, stride and dilation should be greater than zero, but got "
                         f"kernel_size={kernel_size}, stride={stride} and dilation={dilation}")
    for p, k in zip(padding, kernel_size):
        if p < 0 or p > k // 2:
            raise ValueError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                             f"kernel_size={k} and dilation={dilation[0]}")
    out = tuple(pooled_size(*a, ceil_mode) for a in zip(shape[2:], kernel_size, stride, padding, dilation))
    if min(out) < 1:
        raise ValueError(f"Given input size: ({shape[1]}x{shape[2]}x{shape[3]}). Calculated output size: "
                         f"({shape[1]}x{out[0]}x{out[1]}). Output size is too small")
    return tuple(shape[:2]) + out


def _max_pool2d_forward(self: np.ndarray, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair,
                        ceil_mode: bool) -> tuple[np.ndarray, np.ndarray]:
    n, c, oh, ow = _pooled_shape(self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    h, w = self.shape[2:]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    rows = np.arange(oh)[:, None] * sh - ph + np.arange(kh)[None, :] * dh       # (oh, kh)
    cols = np.arange(ow)[:, None] * sw - pw + np.arange(kw)[None, :] * dw       # (ow, kw)
    r = rows[:, None, :, None]
    q = cols[None, :, None, :]
    r, q = np.broadcast_arrays(r, q)                                            # (oh, ow, kh, kw)
    inside = (r >= 0) & (r < h) & (q >= 0) & (q < w)
    flat = np.where(inside, r * w + q, 0).reshape(oh, ow, kh * kw)
    windows = self.reshape(n, c, h * w)[:, :, flat]                             # (n, c, oh, ow, kh*kw)
    inside = inside.reshape(oh, ow, kh * kw)
    lowest = -np.inf if self.dtype.kind == "f" else np.iinfo(self.dtype).min
    windows = np.where(inside, windows, lowest)
    largest = windows.max(axis=-1, keepdims=True)                               # NaN where the window has one
    # the first element inside the plane that is the largest (or a NaN): padding never wins a tie, even
    # against a window of -inf (or the integer minimum), as it would in a plain argmax of ``windows``
    best = np.argmax(inside & ((windows == largest) | (windows != windows)), axis=-1)
    values = np.take_along_axis(windows, best[..., None], axis=-1)[..., 0].astype(self.dtype)
    indices = np.take_along_axis(np.broadcast_to(flat, windows.shape), best[..., None], axis=-1)[..., 0]
    return values, indices.astype(np.int64)


@lru_cache(maxsize=128)
def pool_positions(size: Pair, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair,
                   ceil_mode: bool) -> np.ndarray:
    """For each window element (kh * kw, oh * ow) its position ``h * W + w`` in the plane, -1 on the
    padding: what lowerings scan (computed once per shape, when lowering); read-only, being cached."""
    (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = size, kernel_size, stride, padding, dilation
    oh, ow = (pooled_size(*a, ceil_mode) for a in zip(size, kernel_size, stride, padding, dilation))
    r = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(oh) * sh - ph)[None, None, :, None]
    q = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw - pw)[None, None, None, :]
    r, q = np.broadcast_arrays(r, q)
    inside = (r >= 0) & (r < h) & (q >= 0) & (q < w)
    positions = np.where(inside, r * w + q, -1).reshape(kh * kw, oh * ow).astype(np.int64)
    positions.setflags(write=False)
    return positions


def _max_pool2d_meta(self, kernel_size, stride, padding, dilation, ceil_mode):
    shape = _pooled_shape(self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    return TensorMeta(shape, self.dtype), TensorMeta(shape, np.dtype(np.int64))


def _scatter_forward(grad: np.ndarray, indices: np.ndarray, shape: tuple) -> np.ndarray:
    """Zeros of ``shape`` (N, C, H, W), each output's gradient added at its position in its plane."""
    n, c, h, w = shape
    planes = np.arange(n * c, dtype=np.int64).reshape(n, c, 1, 1) * (h * w)
    total = np.bincount((indices + planes).ravel(), weights=grad.ravel(), minlength=n * c * h * w)
    return total.astype(grad.dtype).reshape(shape)


def _gather_forward(self: np.ndarray, indices: np.ndarray) -> np.ndarray:
    n, c = self.shape[:2]
    return np.take_along_axis(self.reshape(n, c, -1), indices.reshape(n, c, -1), axis=2).reshape(indices.shape)


_max_pool2d = defop("max_pool2d", ("self",), _max_pool2d_forward, "MaxPool2DWithIndicesBackward0",
                   meta=_max_pool2d_meta, lower=intrinsic("max_pool2d"),
                   self=lambda grad, results, self_shape: max_pool2d_backward(grad, results[1],
                                                                              shape=tuple(self_shape)),
                   jvp=lambda self_t, results: (max_pool2d_gather(self_t, results[1]), None))

max_pool2d_backward = defop("max_pool2d_backward", ("grad", "indices"), _scatter_forward,
                            "MaxPool2DWithIndicesBackwardBackward0", meta=given("shape", 0),
                            lower=intrinsic("max_pool2d_backward"),
                            grad=lambda grad, indices: max_pool2d_gather(grad, indices),
                            jvp=lambda grad_t, indices, shape: max_pool2d_backward(grad_t, indices, shape=shape))

max_pool2d_gather = defop("max_pool2d_gather", ("self", "indices"), _gather_forward,
                          "MaxPool2DGatherBackward0",
                          meta=lambda self, indices: TensorMeta(indices.shape, self.dtype),
                          lower=intrinsic("max_pool2d_gather"),
                          self=lambda grad, indices, self_shape: max_pool2d_backward(grad, indices,
                                                                                     shape=tuple(self_shape)),
                          jvp=lambda self_t, indices: max_pool2d_gather(self_t, indices))


@public("function")
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """PyTorch's ``max_pool2d``: the maximum of each window of (N, C, H, W) or (C, H, W); ``stride``
    defaults to the kernel size; with ``return_indices`` also each maximum's position ``h * W + w``."""
    if input.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    kernel = tuple_of(kernel_size, 2, "kernel_size", "max_pool2d")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        tuple_of(stride, 2, "stride", "max_pool2d")
    attrs = dict(kernel_size=kernel, stride=stride, padding=tuple_of(padding, 2, "padding", "max_pool2d"),
                 dilation=tuple_of(dilation, 2, "dilation", "max_pool2d"), ceil_mode=bool(ceil_mode))
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    try:
        _pooled_shape(tuple(x.shape), **{k: v for k, v in attrs.items()})
    except ValueError as error:
        raise RuntimeError(str(error)) from None
    values, indices = _max_pool2d(x, **attrs)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values
