"""``Cauchy``: a location and a scale with tails so heavy that it has no mean or variance (``nan`` and
``inf``, as PyTorch's), reparameterised through the inverse cdf ``loc + scale * tan(pi (u - 1/2))``."""
from __future__ import annotations

import math
from typing import Sequence

from ..factories import full_like, rand
from ..ops import FUNCTIONS
from ..tensor import Tensor
from .location_scale import LocationScale

atan, log, log1p, tan = (FUNCTIONS[name] for name in ("atan", "log", "log1p", "tan"))

__all__ = ["Cauchy"]


class Cauchy(LocationScale):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width at half maximum ``scale``."""

    @property
    def mean(self) -> Tensor:
        return full_like(self.loc, math.nan)

    @property
    def variance(self) -> Tensor:
        return full_like(self.loc, math.inf)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + self.scale * tan(math.pi * (u - 0.5))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - log(self.scale) - log1p(((value - self.loc) / self.scale) ** 2)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * tan(math.pi * (value - 0.5))

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + log(self.scale)
