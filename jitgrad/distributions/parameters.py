"""How distributions take their parameters: numbers and tensors broadcast to one shape, and ``probs`` and
``logits`` each computed from the other the first time it is read (PyTorch's ``broadcast_all``,
``lazy_property``, ``probs_to_logits`` and ``logits_to_probs``)."""
from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..factories import tensor
from ..ops import FUNCTIONS
from ..shapes import broadcast_shapes
from ..tensor import Tensor

clamp, log, log1p, sigmoid, softmax = (FUNCTIONS[name] for name in ("clamp", "log", "log1p", "sigmoid", "softmax"))


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """``values`` (tensors and Python numbers) as tensors of one broadcast shape. Numbers take the
    tensors' dtype, or the default float dtype when every value is a number, as PyTorch's."""
    for value in values:
        if not isinstance(value, (Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of numbers.Number or Tensor.")
    tensors = [v for v in values if isinstance(v, Tensor)]
    dtype = tensors[0].dtype if tensors else dtypes.get_default_dtype()
    as_tensors = [v if isinstance(v, Tensor) else tensor(float(v), dtype=dtype) for v in values]
    shape = broadcast_shapes("broadcast_all", (tuple(t.shape) for t in as_tensors))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in as_tensors)


class lazy_property:
    """A property computed on first read and then kept on the instance (``Bernoulli.probs`` from its
    ``logits``): the given parameter sits in the instance's ``__dict__`` and the other joins it when
    asked for, which is also how a distribution's repr knows which one it was given."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.name = wrapped.__name__

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        instance.__dict__[self.name] = value
        return value


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` kept an epsilon away from 0 and 1, so that their logits are finite."""
    eps = float(np.finfo(dtypes.as_numpy_dtype(probs.dtype)).eps)
    return clamp(probs, min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds of ``probs`` (``is_binary``) or their logs (a categorical's unnormalised logits)."""
    clamped = clamp_probs(probs)
    return log(clamped) - log1p(-clamped) if is_binary else log(clamped)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """The sigmoid of ``logits`` (``is_binary``) or their softmax over the last dimension."""
    return sigmoid(logits) if is_binary else softmax(logits, dim=-1)


def finfo_min(value: Tensor) -> float:
    """The most negative finite number of ``value``'s dtype: a log-probability of zero clamped to it
    keeps ``0 * log 0`` at 0 in an entropy."""
    return float(np.finfo(dtypes.as_numpy_dtype(value.dtype)).min)


def sum_rightmost(value: Tensor, dims: int) -> Tensor:
    """``value`` summed over its rightmost ``dims`` dimensions."""
    return value.reshape(tuple(value.shape[:-dims]) + (-1,)).sum(-1) if dims > 0 else value
