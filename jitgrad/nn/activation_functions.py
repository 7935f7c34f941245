"""The activations of ``torch.nn.functional`` that are not registry ops: softmin, the gated linear
unit, PReLU's learned slope, RReLU's random one, the threshold and the three shrinkages, and the
bilinear form.

Each is a few registry ops (``where``, ``sigmoid``, ``softmax``, matrix products), so its gradients
of any order, forward mode and compiling come from theirs. Where PyTorch's backward picks a side at a
kink (``x == lambd`` for the shrinkages, ``x == 0`` for PReLU), ``where``'s strict comparison picks
the same one.
"""
from __future__ import annotations

import warnings

from ..dtypes import dtype as DType
from ..factories import rand_like
from ..ops import hardshrink, prelu, sigmoid, softmax, tanh, where  # noqa: F401 - nn.functional's, ops since 2026-11-28
from ..tensor import Tensor


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None) -> Tensor:
    """``softmax(-input, dim)``: the smallest entries get the largest weights. Without ``dim`` PyTorch's
    old default (0 for 0-, 1- and 3-d input, else 1), with its deprecation warning."""
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=_stacklevel)
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return softmax(-input if dtype is None else -input.to(dtype), dim)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    first, second = input.chunk(2, dim)   # two empty halves of an empty dimension too
    return first * sigmoid(second)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``x`` times a slope: while training, one drawn uniformly from
    ``[lower, upper]`` for each element (from jitgrad's generator, so ``manual_seed`` repeats it),
    otherwise their mean ``(lower + upper) / 2``, as PyTorch. The gradient at 0 is the slope, as
    PyTorch's. ``inplace`` is taken for PyTorch's signature; the result is always a new tensor."""
    if lower > upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound (rrelu: lower={lower}, "
                           f"upper={upper})")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"rrelu_with_noise_out_cpu\" not implemented for '{input.dtype}': rrelu "
                                  "takes a floating tensor")
    if not training:
        return where(input > 0.0, input, input * ((lower + upper) / 2))
    return where(input > 0.0, input, input * (rand_like(input) * (upper - lower) + lower))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is above ``threshold``, else ``value``; ``inplace`` is taken for PyTorch's
    signature, the result is always a new tensor. A NaN stays NaN, as PyTorch's (the test is "at most
    ``threshold``")."""
    return where(input <= threshold, value, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` moved ``lambd`` towards 0, and 0 within ``lambd`` of it."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0.0))  # NaN stays


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``."""
    return input - tanh(input)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``: one matrix product of
    ``input1`` with the weight laid out as (in1, out * in2), then a product with ``input2`` summed."""
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {weight.dim()}D weight")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input sizes do not match the weight: input1 {list(input1.shape)}, input2 "
                           f"{list(input2.shape)}, weight {list(weight.shape)} (expected input1 [..., {in1}] and "
                           f"input2 [..., {in2}] with the same leading dimensions)")
    batch = tuple(input1.shape[:-1])
    rows = input1.reshape(-1, in1) @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)
    out = (rows.reshape(-1, out_features, in2) * input2.reshape(-1, 1, in2)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(batch + (out_features,))


__all__ = ["bilinear", "glu", "hardshrink", "prelu", "rrelu", "softmin", "softshrink", "tanhshrink", "threshold"]
