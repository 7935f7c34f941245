"""``Exponential``: waiting times at a constant ``rate``, reparameterised as ``-log(1 - u) / rate``."""
from __future__ import annotations

from typing import Any, Sequence

from ..factories import rand
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all

exp, log, log1p = (FUNCTIONS[name] for name in ("exp", "log", "log1p"))

__all__ = ["Exponential"]


class Exponential(Distribution):
    """The exponential distribution with rate ``rate`` (mean ``1 / rate``)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Exponential:
        new = self._get_checked_instance(Exponential, _instance)
        new.rate = self.rate.expand(tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return self.rate * 0

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.rate.dtype)  # in [0, 1): log1p(-u) is finite
        return -log1p(-u) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - log(self.rate)
