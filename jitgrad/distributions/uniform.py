"""``Uniform``: flat on ``[low, high)``, reparameterised as ``low + u * (high - low)``."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import rand
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all

clamp, log, where = FUNCTIONS["clamp"], FUNCTIONS["log"], FUNCTIONS["where"]

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on the half-open interval ``[low, high)``."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Uniform:
        new = self._get_checked_instance(Uniform, _instance)
        new.low, new.high = self.low.expand(tuple(batch_shape)), self.high.expand(tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return float("nan") * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        return where(inside, -log(self.high - self.low), -math.inf)  # log(0) outside, without numpy's warning

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return clamp((value - self.low) / (self.high - self.low), min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return log(self.high - self.low)
