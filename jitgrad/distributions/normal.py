"""``Normal`` and ``LogNormal``: a location and a scale, reparameterised as ``loc + scale * eps``."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import randn
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .location_scale import LocationScale

erf, erfinv, exp, log = (FUNCTIONS[name] for name in ("erf", "erfinv", "exp", "log"))

__all__ = ["LogNormal", "Normal"]


class Normal(LocationScale):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - log(self.scale) - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale)


class LogNormal(Distribution):
    """``exp`` of a ``Normal(loc, scale)`` draw (``base_dist``): positive, with ``log_prob(x) =
    base_dist.log_prob(log x) - log x``. PyTorch builds it as a ``TransformedDistribution``; here it is
    written out, with the same parameters, support and values."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        new.base_dist = self.base_dist.expand(batch_shape)
        return self._expanded(new, batch_shape)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return exp(self.loc + self.scale.pow(2) / 2)

    @property
    def mode(self) -> Tensor:
        return exp(self.loc - self.scale.pow(2))

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return (exp(scale_sq) - 1) * exp(2 * self.loc + scale_sq)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_value = log(value)
        return self.base_dist.log_prob(log_value) - log_value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.base_dist.cdf(log(value))

    def icdf(self, value: Tensor) -> Tensor:
        return exp(self.base_dist.icdf(value))

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
