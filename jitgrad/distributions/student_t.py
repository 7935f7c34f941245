"""``StudentT``: a normal draw divided by the root of an independent ``Chi2(df) / df`` draw, then
scaled and shifted, as PyTorch builds it; ``rsample`` differentiates through the chi-squared draw's
implicit gradient, so it runs eagerly only (``Gamma``'s draws cannot be traced)."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import randn
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .parameters import broadcast_all

digamma, lgamma, log, log1p, rsqrt, where = (FUNCTIONS[name] for name in
                                             ("digamma", "lgamma", "log", "log1p", "rsqrt", "where"))

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> StudentT:
        new = self._get_checked_instance(StudentT, _instance)
        shape = tuple(batch_shape)
        new.df, new.loc, new.scale = self.df.expand(shape), self.loc.expand(shape), self.scale.expand(shape)
        new._chi2 = self._chi2.expand(shape)
        return self._expanded(new, shape)

    @property
    def mean(self) -> Tensor:
        """``loc``; undefined (``nan``) for ``df <= 1``."""
        return where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``scale ** 2 df / (df - 2)``; infinite for ``1 < df <= 2``, undefined (``nan``) below."""
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return where(self.df > 2, finite, where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        normal = randn(self._extended_shape(sample_shape), dtype=self.df.dtype)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * rsqrt(chi2 / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        half_df = 0.5 * self.df
        log_normalizer = (log(self.scale) + 0.5 * log(self.df) + 0.5 * math.log(math.pi) + lgamma(half_df)
                          - lgamma(half_df + 0.5))
        return -(half_df + 0.5) * log1p(y.pow(2) / self.df) - log_normalizer

    def entropy(self) -> Tensor:
        half_df = 0.5 * self.df
        log_beta = lgamma(half_df) + math.lgamma(0.5) - lgamma(half_df + 0.5)
        return (log(self.scale) + (half_df + 0.5) * (digamma(half_df + 0.5) - digamma(half_df))
                + 0.5 * log(self.df) + log_beta)
