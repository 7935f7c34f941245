"""The transforms of ``torch.distributions.transforms`` that ``TransformedDistribution`` pushes a base
distribution through: ``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``, ``TanhTransform``,
``SoftplusTransform``, ``PowerTransform``, ``AbsTransform`` (not a bijection: its ``inv`` is the
identity, as PyTorch's), ``StickBreakingTransform`` (vectors onto the simplex, one coordinate longer) and
``ComposeTransform`` (several in order), and the inverse of each (``t.inv``).

A transform maps ``x`` to ``y = t(x)``, back with ``t.inv(y)``, and gives ``log |dy/dx|`` as
``log_abs_det_jacobian(x, y)``, summed over its ``event_dim`` rightmost dimensions (an
``AffineTransform(..., event_dim=1)`` scales vectors). All but the stick-breaking one keep shapes
(``PowerTransform`` broadcasts with its exponent); ``forward_shape`` and ``inverse_shape`` say how.
Each is made of jitgrad ops, so ``log_prob`` and ``rsample`` differentiate in the base's and the
transform's parameters. No transform caches its last value (PyTorch's default ``cache_size=0``)."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .. import dtypes
from ..factories import arange, full_like, ones_like, zeros_like
from ..ops import FUNCTIONS
from ..shapes import broadcast_shapes
from ..tensor import Tensor
from . import constraints
from .parameters import broadcast_all, sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform"]

atanh, cat, clamp, cumprod, exp, expm1, log, log1p, sigmoid, softplus, tanh = (
    FUNCTIONS[name] for name in ("atanh", "cat", "clamp", "cumprod", "exp", "expm1", "log", "log1p", "sigmoid",
                                 "softplus", "tanh"))


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

    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._inv = transform

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)

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


class TanhTransform(_WithoutParameters):
    """``y = tanh(x)``: the reals onto (-1, 1); ``log |dy/dx| = 2 (log 2 - x - softplus(-2x))``, which
    stays finite where ``1 - tanh(x) ** 2`` rounds to 0. The inverse is ``atanh`` unclamped, as PyTorch's."""

    bijective, sign = True, 1
    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(_WithoutParameters):
    """``y = log(1 + exp(x))``: the reals onto the positive numbers; ``x = y + log(-expm1(-y))`` and
    ``log |dy/dx| = -softplus(-x)``."""

    bijective, sign = True, 1
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y + log(-expm1(-y))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class AbsTransform(_WithoutParameters):
    """``y = |x|``: not a bijection, so it has no Jacobian and no sign; its ``inv`` keeps ``y`` (the
    positive root), which is how ``HalfNormal`` and ``HalfCauchy`` fold their bases."""

    domain, codomain = constraints.real, constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive numbers (``exponent`` a number or a tensor that
    broadcasts with ``x``); ``log |dy/dx| = log |exponent * y / x|``."""

    bijective = True
    domain, codomain = constraints.positive, constraints.positive

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        (self.exponent,) = broadcast_all(exponent)

    @property
    def sign(self) -> Any:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return log((self.exponent * y / x).abs())

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return broadcast_shapes("PowerTransform", [tuple(shape), tuple(self.exponent.shape)])

    inverse_shape = forward_shape


class ComposeTransform(Transform):
    """``parts`` applied in order (what a list of transforms given to ``TransformedDistribution``
    does). Its domain is the first part's and its codomain the last's, each made to cover as many
    rightmost dimensions as the widest part reads; the Jacobian's log is the parts' summed, each over
    the dimensions it leaves to the others; the sign is the parts' product."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size)
        if not isinstance(parts, (list, tuple)) or not all(isinstance(p, Transform) for p in parts):
            raise ValueError(f"ComposeTransform: parts must be a list of Transforms, but was {parts!r}")
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):   # walking back, each part's input dimensions
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        return _widened(self.parts[0].domain, event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:   # walking forward, each part's output dimensions
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        return _widened(self.parts[-1].codomain, event_dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(part.bijective for part in self.parts)

    @property
    def sign(self) -> Any:
        sign: Any = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        return ComposeTransform([part.inv for part in reversed(self.parts)])

    def _call(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return zeros_like(x)
        points = [x]
        for part in self.parts[:-1]:
            points.append(part(points[-1]))
        points.append(y)
        event_dim = self.domain.event_dim
        total: Any = 0
        for part, before, after in zip(self.parts, points[:-1], points[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(before, after), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(part) for part in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


class StickBreakingTransform(_WithoutParameters):
    """Vectors of ``K - 1`` reals onto the ``K``-simplex by stick breaking: the ``i``-th coordinate takes
    the fraction ``z_i = sigmoid(x_i - log(K - i))`` of what the earlier ones left (the offsets send 0 to
    the uniform vector), and the last takes the rest. Its Jacobian is triangular, so its log is the sum
    of ``log z_i (1 - z_i)`` and the log of what was left before each."""

    bijective = True
    domain, codomain = constraints.real_vector, constraints.simplex

    @staticmethod
    def _offsets(x: Tensor, length: int) -> Tensor:
        """``log(K - i)`` for ``i = 0 .. K - 2`` (``K - 1 = length``), in ``x``'s dtype."""
        return log(length - arange(length, dtype=x.dtype))

    def _call(self, x: Tensor) -> Tensor:
        z = sigmoid(x - self._offsets(x, x.shape[-1]))
        one = ones_like(z[..., :1])
        left = cumprod(1 - z, -1)   # what each break leaves of the stick
        return cat([z, one], -1) * cat([one, left], -1)

    def _inverse(self, y: Tensor) -> Tensor:
        kept = y[..., :-1]
        tiny = float(np.finfo(dtypes.as_numpy_dtype(y.dtype)).tiny)
        left = clamp(1 - kept.cumsum(-1), min=tiny)
        return log(kept) - log(left) + self._offsets(y, kept.shape[-1])

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shifted = x - self._offsets(x, x.shape[-1])
        return (-shifted - softplus(-shifted) + log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _widened(constraint: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """``constraint`` reinterpreted to cover ``event_dim`` rightmost dimensions, when it covers fewer."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint
