"""``Laplace``: a location and a scale with exponential tails, reparameterised through the inverse cdf."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import dtypes
from ..factories import rand
from ..ops import FUNCTIONS
from ..tensor import Tensor
from .location_scale import LocationScale

expm1, log, log1p, sign = (FUNCTIONS[name] for name in ("expm1", "log", "log1p", "sign"))

__all__ = ["Laplace"]


class Laplace(LocationScale):
    """The Laplace distribution with location ``loc`` and scale ``scale``."""

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        # u uniform on (-1, 1), kept off -1 by an epsilon so that log1p(-|u|) is finite
        eps = float(np.finfo(dtypes.as_numpy_dtype(self.loc.dtype)).eps)
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * sign(u) * log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * sign(value - self.loc) * expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * sign(term) * log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + log(2 * self.scale)
