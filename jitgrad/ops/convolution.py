"""Convolution and its building blocks: ``im2col``/``col2im`` (PyTorch's ``unfold``/``fold``) and
``convolution`` (``conv1d``/``conv2d``, node ``ConvolutionBackward0``).

``im2col`` lays every window of an image out as a column, and ``col2im`` sums columns back into an
image: each is linear and the other's transpose, so each is the other's derivative, and gradients of
any order need nothing more. A convolution is a matrix product of the weight with the columns, so its
derivatives are products and a ``col2im`` (the input's) or an ``im2col`` (the weight's). One-dimensional
convolutions run as two-dimensional ones with a height of 1 (the operands unsqueezed inside the op and
its formulas), so one lowering serves both.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..autograd.forward_ad import tangent_sum
from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta
from .public import public
from .registry import defop

Pair = tuple[int, int]


def output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """The number of windows along one dimension (PyTorch's formula, floor mode)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@lru_cache(maxsize=256)
def window_positions(channels: int, size: Pair, kernel: Pair, dilation: Pair, padding: Pair,
                     stride: Pair) -> np.ndarray:
    """For each element of ``im2col``'s (C*kh*kw, L) columns of one image, its C-order position in the
    (C, H, W) image, -1 where the window lies on the padding. Lowerings gather and scatter by these
    (computed once per shape, when lowering); read-only, since it is cached."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = size, kernel, dilation, padding, stride
    oh, ow = (output_size(h, kh, sh, ph, dh), output_size(w, kw, sw, pw, dw))
    rows = (np.arange(kh)[:, None] * dh)[:, None, :, None] + (np.arange(oh) * sh - ph)[None, None, :, None]
    cols = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw - pw)[None, None, None, :]
    rows, cols = np.broadcast_arrays(rows, cols)                        # (kh, kw, oh, ow)
    inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
    within = np.where(inside, rows * w + cols, -1).reshape(kh * kw, oh * ow)
    channel = (np.arange(channels) * h * w)[:, None, None]
    positions = np.where(within >= 0, within[None] + channel, -1).reshape(channels * kh * kw, oh * ow)
    positions = positions.astype(np.int64)
    positions.setflags(write=False)
    return positions


def _check_fold_args(name: str, kernel_size: Pair, dilation: Pair, padding: Pair, stride: Pair) -> None:
    """PyTorch's checks of unfold's and fold's window parameters."""
    if min(kernel_size) <= 0:
        raise ValueError(f"{name}: kernel size should be greater than zero, but got kernel_size={kernel_size}")
    if min(dilation) <= 0:
        raise ValueError(f"{name}: dilation should be greater than zero, but got dilation={dilation}")
    if min(padding) < 0:
        raise ValueError(f"{name}: padding should be non-negative, but got padding={padding}")
    if min(stride) <= 0:
        raise ValueError(f"{name}: stride should be greater than zero, but got stride={stride}")


def _windows(size: Pair, kernel_size: Pair, dilation: Pair, padding: Pair, stride: Pair) -> Pair:
    out = tuple(output_size(*a) for a in zip(size, kernel_size, stride, padding, dilation))
    if min(out) < 1:
        raise ValueError(f"Given input with spatial size ({size[0]}, {size[1]}), kernel_size={kernel_size}, "
                         f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                         f"blocks as ({out[0]}, {out[1]}), but its components must be at least one.")
    return out


def _each_offset(kernel_size: Pair, dilation: Pair, stride: Pair, out: Pair):
    """(ki, kj, rows, cols): the slices of the padded image that kernel offset (ki, kj) meets."""
    for ki in range(kernel_size[0]):
        for kj in range(kernel_size[1]):
            r0, c0 = ki * dilation[0], kj * dilation[1]
            yield ki, kj, slice(r0, r0 + stride[0] * (out[0] - 1) + 1, stride[0]), \
                slice(c0, c0 + stride[1] * (out[1] - 1) + 1, stride[1])


def _im2col_forward(self: np.ndarray, kernel_size: Pair, dilation: Pair, padding: Pair,
                    stride: Pair) -> np.ndarray:
    _check_fold_args("im2col", kernel_size, dilation, padding, stride)
    if self.ndim != 4:
        raise ValueError(f"Expected 3D or 4D (batch mode) tensor for input with possible 0 batch size and "
                         f"non-zero dimensions, but got: {list(self.shape)}")
    n, c, h, w = self.shape
    out = _windows((h, w), kernel_size, dilation, padding, stride)
    padded = np.pad(self, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    cols = np.empty((n, c, kernel_size[0], kernel_size[1]) + out, self.dtype)
    for ki, kj, rows, columns in _each_offset(kernel_size, dilation, stride, out):
        cols[:, :, ki, kj] = padded[:, :, rows, columns]
    return cols.reshape(n, c * kernel_size[0] * kernel_size[1], out[0] * out[1])


def _col2im_forward(self: np.ndarray, output_size: Pair, kernel_size: Pair, dilation: Pair, padding: Pair,
                    stride: Pair) -> np.ndarray:
    _check_fold_args("col2im", kernel_size, dilation, padding, stride)
    blocks = kernel_size[0] * kernel_size[1]
    if self.ndim != 3 or self.shape[1] % blocks:
        raise ValueError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                         f"but got input.size(1)={self.shape[1] if self.ndim > 1 else None} and "
                         f"kernel_size={kernel_size}")
    out = _windows(output_size, kernel_size, dilation, padding, stride)
    if self.shape[2] != out[0] * out[1]:
        raise ValueError(f"Given output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                         f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
                         f"the calculated number of sliding blocks {out[0]} * {out[1]} = {out[0] * out[1]}, but "
                         f"got input.size(2)={self.shape[2]}.")
    n, c = self.shape[0], self.shape[1] // blocks
    cols = self.reshape((n, c) + tuple(kernel_size) + out)
    h, w = output_size[0] + 2 * padding[0], output_size[1] + 2 * padding[1]
    padded = np.zeros((n, c, h, w), self.dtype)
    for ki, kj, rows, columns in _each_offset(kernel_size, dilation, stride, out):
        padded[:, :, rows, columns] += cols[:, :, ki, kj]
    return np.ascontiguousarray(padded[:, :, padding[0]:h - padding[0], padding[1]:w - padding[1]])


def _im2col_meta(self, kernel_size, dilation, padding, stride):
    n, c, h, w = self.shape
    out = _windows((h, w), kernel_size, dilation, padding, stride)
    return TensorMeta((n, c * kernel_size[0] * kernel_size[1], out[0] * out[1]), self.dtype)


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    n, k = self.shape[:2]
    return TensorMeta((n, k // (kernel_size[0] * kernel_size[1])) + tuple(output_size), self.dtype)


im2col = defop("im2col", ("self",), _im2col_forward, "Im2ColBackward0", meta=_im2col_meta,
               lower=intrinsic("im2col"),
               self=lambda grad, self_shape, kernel_size, dilation, padding, stride: col2im(
                   grad, output_size=tuple(self_shape[2:]), kernel_size=kernel_size, dilation=dilation,
                   padding=padding, stride=stride),
               jvp=lambda self_t, kernel_size, dilation, padding, stride: im2col(
                   self_t, kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride))

col2im = defop("col2im", ("self",), _col2im_forward, "Col2ImBackward0", meta=_col2im_meta,
               lower=intrinsic("col2im"),
               self=lambda grad, kernel_size, dilation, padding, stride: im2col(
                   grad, kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride),
               jvp=lambda self_t, output_size, kernel_size, dilation, padding, stride: col2im(
                   self_t, output_size=output_size, kernel_size=kernel_size, dilation=dilation, padding=padding,
                   stride=stride))


# ---- convolution -------------------------------------------------------------------------------------
def planar(stride: tuple, padding: tuple, dilation: tuple) -> tuple[Pair, Pair, Pair]:
    """The parameters of a 1-d convolution as those of a 2-d one of height 1."""
    if len(stride) == 2:
        return stride, padding, dilation
    return (1,) + tuple(stride), (0,) + tuple(padding), (1,) + tuple(dilation)


def _check_convolution(input_shape: tuple, weight_shape: tuple, bias_shape: tuple | None, stride: tuple,
                       padding: tuple, dilation: tuple, groups: int) -> tuple[int, ...]:
    """PyTorch's checks of a convolution's operands; returns the output's shape."""
    spatial = len(stride)
    if len(weight_shape) != spatial + 2 or len(input_shape) != spatial + 2:
        raise ValueError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                         f"conv{spatial}d with a {spatial + 2}-D weight, but got input of size: "
                         f"{list(input_shape)} and weight of size {list(weight_shape)}")
    if min(stride) <= 0:
        raise ValueError("non-positive stride is not supported")
    if min(padding) < 0:
        raise ValueError("negative padding is not supported")
    if min(dilation) <= 0:
        raise ValueError("non-positive dilation is not supported")
    if groups <= 0:
        raise ValueError("non-positive groups is not supported")
    if weight_shape[0] % groups:
        raise ValueError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                         f"but got weight of size [{list(weight_shape)}] instead")
    if input_shape[1] != weight_shape[1] * groups:
        raise ValueError(f"Given groups={groups}, weight of size {list(weight_shape)}, expected "
                         f"input{list(input_shape)} to have {weight_shape[1] * groups} channels, but got "
                         f"{input_shape[1]} channels instead")
    if bias_shape is not None and tuple(bias_shape) != (weight_shape[0],):
        raise ValueError(f"Given weight of size {list(weight_shape)}, expected bias to be 1-dimensional with "
                         f"{weight_shape[0]} elements, but got bias of size {list(bias_shape)} instead")
    padded = [s + 2 * p for s, p in zip(input_shape[2:], padding)]
    kernel = [d * (k - 1) + 1 for k, d in zip(weight_shape[2:], dilation)]
    if any(p < k for p, k in zip(padded, kernel)):
        raise ValueError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                         f"size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual "
                         f"input size")
    return (input_shape[0], weight_shape[0]) + tuple(
        output_size(*a) for a in zip(input_shape[2:], weight_shape[2:], stride, padding, dilation))


def _check_dtypes(input: np.dtype, weight: np.dtype, bias: np.dtype | None) -> None:
    """One dtype for the operands, as in PyTorch (a convolution does not promote)."""
    for name, other in (("weight", weight), ("bias", bias)):
        if other is not None and other != input:
            raise TypeError(f"Input type ({input}) and {name} type ({other}) should be the same: convert one "
                            f"first, e.g. with .to(jitgrad.{input})")


def _convolution_forward(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, stride: tuple,
                         padding: tuple, dilation: tuple, groups: int) -> np.ndarray:
    shape = _check_convolution(input.shape, weight.shape, None if bias is None else bias.shape, stride,
                               padding, dilation, groups)
    _check_dtypes(input.dtype, weight.dtype, None if bias is None else bias.dtype)
    stride2, padding2, dilation2 = planar(stride, padding, dilation)
    x, w = (a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if len(stride) == 1 else a for a in (input, weight))
    cols = _im2col_forward(x, w.shape[2:], dilation2, padding2, stride2)
    n, out_channels = shape[:2]
    cols = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[-1])   # no -1: n may be 0
    out = np.matmul(w.reshape(groups, out_channels // groups, -1), cols).reshape(shape)
    return out + bias.reshape((-1,) + (1,) * len(stride)) if bias is not None else out


def _convolution_meta(input, weight, bias, stride, padding, dilation, groups):
    shape = _check_convolution(input.shape, weight.shape, None if bias is None else bias.shape, stride, padding,
                               dilation, groups)
    _check_dtypes(input.dtype, weight.dtype, None if bias is None else bias.dtype)
    return TensorMeta(shape, input.dtype)


def _planar(t: Tensor, spatial: int) -> Tensor:
    """A 1-d convolution's operand as a 2-d one's, of height 1."""
    return t.unsqueeze(2) if spatial == 1 else t


def _groups_of(grad: Tensor, groups: int) -> Tensor:
    """The output's gradient as (N, groups, out_channels / groups, L)."""
    n, channels = grad.shape[:2]
    return grad.reshape(n, groups, channels // groups, math.prod(grad.shape[2:]))


def _input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    """The columns' gradient (the weight's transpose times the output's), summed back into an image."""
    stride2, padding2, dilation2 = planar(stride, padding, dilation)
    w = _planar(weight, len(stride))
    out_channels = w.shape[0]
    columns = w.reshape(groups, out_channels // groups, -1).mT @ _groups_of(grad, groups)
    columns = columns.reshape(grad.shape[0], columns.shape[1] * columns.shape[2], columns.shape[-1])
    size = (1,) + tuple(input_shape[2:]) if len(stride) == 1 else tuple(input_shape[2:])
    image = col2im(columns, output_size=size, kernel_size=tuple(w.shape[2:]), dilation=dilation2,
                   padding=padding2, stride=stride2)
    return image.reshape(tuple(input_shape))


def _weight_grad(grad, input, weight_shape, stride, padding, dilation, groups):
    """The output's gradient times the input's columns, summed over the batch."""
    stride2, padding2, dilation2 = planar(stride, padding, dilation)
    kernel = (1,) + tuple(weight_shape[2:]) if len(stride) == 1 else tuple(weight_shape[2:])
    columns = im2col(_planar(input, len(stride)), kernel_size=kernel, dilation=dilation2, padding=padding2,
                     stride=stride2)
    columns = columns.reshape(columns.shape[0], groups, columns.shape[1] // groups, columns.shape[-1])
    return (_groups_of(grad, groups) @ columns.mT).sum(0).reshape(tuple(weight_shape))


def _bias_grad(grad, stride):
    return grad.sum((0,) + tuple(range(2, 2 + len(stride))))


def _convolution_jvp(input_t, weight_t, bias_t, input, weight, stride, padding, dilation, groups):
    """Bilinear in input and weight, plus the bias: one convolution per tangent."""
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return tangent_sum(None if input_t is None else convolution(input_t, weight, None, **attrs),
                       None if weight_t is None else convolution(input, weight_t, None, **attrs),
                       None if bias_t is None else bias_t.reshape((-1,) + (1,) * len(stride)))


convolution = defop("convolution", ("input", "weight", "bias"), _convolution_forward, "ConvolutionBackward0",
                    meta=_convolution_meta, lower=intrinsic("convolution"),
                    input=_input_grad,
                    weight=_weight_grad,
                    bias=_bias_grad,
                    jvp=_convolution_jvp)


# ---- the public functions ----------------------------------------------------------------------------
def tuple_of(value: int | tuple | list, count: int, name: str, op: str = "convolution") -> tuple[int, ...]:
    """An int or a sequence of ``count`` ints as a tuple (PyTorch's ``_pair``, with its error)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * count
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {count} values to match "
                           f"the {op} dimensions, but got {name}={list(values)}")
    return values


def _same_padding(kernel: tuple, dilation: tuple, stride: tuple) -> tuple[int, ...]:
    """``padding="same"``: the total padding split evenly (an odd total would need one more on the right,
    which this library does not do yet: say so rather than compute another shape)."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(t % 2 for t in totals):
        raise NotImplementedError(f"padding='same' with kernel size {tuple(kernel)} and dilation {tuple(dilation)} "
                                  "needs uneven padding, which jitgrad's functional convolutions do not support: "
                                  "pad the input first (nn.functional.pad), or use a Conv layer, which does")
    return tuple(t // 2 for t in totals)


def _convolve(spatial: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
              groups: int) -> Tensor:
    """conv1d/conv2d: arguments normalised and checked with PyTorch's messages, an unbatched input run
    as a batch of one."""
    name = f"conv{spatial}d"
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to {name}, but "
                           f"got input of size: {list(input.shape)}")
    if weight.ndim != spatial + 2:
        raise RuntimeError(f"{name}: expected a {spatial + 2}-D weight (out_channels, in_channels / groups, "
                           f"*kernel_size), but got weight of size {list(weight.shape)}")
    stride, dilation = tuple_of(stride, spatial, "stride"), tuple_of(dilation, spatial, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: {padding!r}")
        padding = _same_padding(weight.shape[2:], dilation, stride) if padding == "same" else (0,) * spatial
    padding = tuple_of(padding, spatial, "padding")
    batched = input.ndim == spatial + 2
    x = input if batched else input.unsqueeze(0)
    try:
        _check_convolution(tuple(x.shape), tuple(weight.shape), None if bias is None else tuple(bias.shape),
                           stride, padding, dilation, int(groups))
    except ValueError as error:
        raise RuntimeError(str(error)) from None
    out = convolution(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=int(groups))
    return out if batched else out.squeeze(0)


@public("function")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """PyTorch's ``conv1d``: ``input`` (N, C, L) or (C, L), ``weight`` (O, C / groups, k); ``padding`` an
    int, a 1-tuple, ``"valid"`` or ``"same"``."""
    return _convolve(1, input, weight, bias, stride, padding, dilation, groups)


@public("function")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """PyTorch's ``conv2d``: ``input`` (N, C, H, W) or (C, H, W), ``weight`` (O, C / groups, kh, kw)."""
    return _convolve(2, input, weight, bias, stride, padding, dilation, groups)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """PyTorch's ``nn.functional.unfold`` (im2col): (N, C, H, W) -> (N, C * kh * kw, L), or unbatched."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    out = im2col(x, kernel_size=tuple_of(kernel_size, 2, "kernel_size"), dilation=tuple_of(dilation, 2, "dilation"),
                 padding=tuple_of(padding, 2, "padding"), stride=tuple_of(stride, 2, "stride"))
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """PyTorch's ``nn.functional.fold`` (col2im), summing overlapping windows: (N, C * kh * kw, L) ->
    (N, C, *output_size), or unbatched."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    out = col2im(x, output_size=tuple_of(output_size, 2, "output_size"),
                 kernel_size=tuple_of(kernel_size, 2, "kernel_size"), dilation=tuple_of(dilation, 2, "dilation"),
                 padding=tuple_of(padding, 2, "padding"), stride=tuple_of(stride, 2, "stride"))
    return out if input.ndim == 3 else out.squeeze(0)
