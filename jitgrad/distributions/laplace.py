"""``Laplace``: a location and a scale with exponential tails, reparameterised through the inverse cdf."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..factories import rand
from ..ops import FUNCTIONS
from ..shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all

expm1, log, log1p, sign = (FUNCTIONS[name] for name in ("expm1", "log", "log1p", "sign"))

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Laplace:
        new = self._get_checked_instance(Laplace, _instance)
        new.loc, new.scale = self.loc.expand(tuple(batch_shape)), self.scale.expand(tuple(batch_shape))
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

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
