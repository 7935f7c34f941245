"""The activations of PyTorch's ``nn.functional`` that are gates or shrinkages: ``softmin``, ``glu``,
``threshold``, ``softshrink``, ``hardshrink``, ``tanhshrink`` and ``prelu``, composed of registry
ops (so their gradients and compiling come from ``where``, ``softmax`` and the arithmetic), with
PyTorch's gradients at the kinks: each passes the gradient only where its condition holds strictly.
"""
from __future__ import annotations

from ..ops import sigmoid, softmax, tanh, where
from ..tensor import Tensor


def softmin(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``softmax(-input, dim)``."""
    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    first, second = input.chunk(2, dim)
    return first * sigmoid(second)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: ARG001
    """``input`` where it is greater than ``threshold``, else ``value``."""
    return where(input > threshold, input, value)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0."""
    return where((input > lambd).logical_or(input < -lambd), input, 0.0)


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``."""
    return input - tanh(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``input`` where positive, else ``weight * input``: one weight for all, or one per channel
    (dimension 1; a vector has one channel, as in PyTorch)."""
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.dim() != 1 or count != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{count} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape(count, *([1] * (input.dim() - 2)))
    elif weight.dim() != 0:
        weight = weight.reshape(())
    return where(input > 0, input, weight * input)


__all__ = ["glu", "hardshrink", "prelu", "softmin", "softshrink", "tanhshrink", "threshold"]
