"""Bijections of ``torch.distributions.transforms`` that ``TransformedDistribution`` pushes a base
distribution through: ``ExpTransform``, ``AffineTransform`` and ``SigmoidTransform``, and the inverse
of each (``t.inv``).

A transform maps ``x`` to ``y = t(x)``, back with ``t.inv(y)``, and gives
``log |dy/dx|`` as ``log_abs_det_jacobian(x, y)``, summed over its ``event_dim`` rightmost dimensions
(an ``AffineTransform(..., event_dim=1)`` scales vectors). All three keep shapes, so a transformed
distribution's shape is its base's. Each is made of jitgrad ops, so ``log_prob`` and ``rsample``
differentiate in the base's and the transform's parameters. No transform caches its last value
(PyTorch's default ``cache_size=0``)."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .. import dtypes
from ..factories import full_like
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints

__all__ = ["AffineTransform", "ExpTransform", "SigmoidTransform", "Transform"]

clamp, exp, log, log1p, sigmoid, softplus = (FUNCTIONS[name] for name in ("clamp", "exp", "log", "log1p", "sigmoid",
                                                                           "softplus"))


class Transform:
    """The base of every transform: ``__call__`` (``_call``), ``inv`` (``_inverse``), and
    ``log_abs_det_jacobian``; ``domain`` and ``codomain`` are constraints, ``sign`` is +1 or -1 for a
    monotone transform of numbers (which ``cdf`` reads)."""

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size != 0:
            raise ValueError(f"cache_size={cache_size}: jitgrad's transforms do not cache (PyTorch's default, 0)")

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        return _InverseTransform(self)

    @property
    def sign(self) -> Any:
        raise NotImplementedError

    def __call__(self, x: Tensor) -> Tensor:
        return self._call(x)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    """``t.inv``: ``t``'s inverse, whose Jacobian's log is minus ``t``'s at the swapped points."""

    bijective = True

    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def inv(self) -> Transform:
        return self._inv

    @property
    def sign(self) -> Any:
        return self._inv.sign

    def _call(self, x: Tensor) -> Tensor:
        return self._inv._inverse(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._inv._call(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"


class _WithoutParameters(Transform):
    """A transform with no parameters: every instance of it is the same map, and equal to the others."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


class ExpTransform(_WithoutParameters):
    """``y = exp(x)``: the reals onto the positive numbers; ``log |dy/dx| = x``."""

    bijective, sign = True, 1
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


def _clipped_probability(p: Tensor) -> Tensor:
    """``p`` kept inside (0, 1) by the dtype's smallest normal number and epsilon, as PyTorch's
    sigmoid transform keeps its values, so that its inverse and ``log_prob`` stay finite."""
    info = np.finfo(dtypes.as_numpy_dtype(p.dtype))
    return clamp(p, min=float(info.tiny), max=1.0 - float(info.eps))


class SigmoidTransform(_WithoutParameters):
    """``y = sigmoid(x)``: the reals onto the unit interval; ``log |dy/dx| = -softplus(-x) -
    softplus(x)``."""

    bijective, sign = True, 1
    domain, codomain = constraints.real, constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_probability(sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = _clipped_probability(y)
        return log(y) - log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class AffineTransform(Transform):
    """``y = loc + scale * x`` (numbers or tensors); with ``event_dim``, the Jacobian's log is summed
    over that many rightmost dimensions (one event is a vector, a matrix...)."""

    bijective = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                      self._event_dim)

    codomain = domain

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, numbers.Number) and isinstance(theirs, numbers.Number):
                if mine != theirs:
                    return False
            elif not bool((mine == theirs).all()):
                return False
        return True

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Real):
            per_element = full_like(x, math.log(abs(float(self.scale))))
        else:
            per_element = log(self.scale.abs())
        if self._event_dim:
            kept = tuple(per_element.shape)[:per_element.dim() - self._event_dim]
            per_element = per_element.reshape(kept + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return per_element.expand(*shape)
