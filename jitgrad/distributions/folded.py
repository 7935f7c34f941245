"""``HalfNormal`` and ``HalfCauchy``: a zero-centred ``Normal`` or ``Cauchy`` folded at zero by
``AbsTransform``, as PyTorch builds them: the density doubles on the nonnegative numbers (``log_prob``
is ``-inf`` below zero), ``cdf(x) = 2 F(x) - 1`` and ``icdf(p) = F^-1((p + 1) / 2)`` from the base's."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import full_like, zeros_like
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .cauchy import Cauchy
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

where = FUNCTIONS["where"]

__all__ = ["HalfCauchy", "HalfNormal"]


class _Folded(TransformedDistribution):
    """``|x|`` for ``x`` of a symmetric base centred at zero with positive ``scale``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    family: type[Distribution]

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = self.family(0.0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Any:
        # PyTorch's check is against the family (HalfNormal), not a user's subclass of it
        family = next(c for c in type(self).__mro__ if _Folded in c.__bases__)
        return super().expand(batch_shape, _instance=self._get_checked_instance(family, _instance))

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|x|`` for ``x ~ Normal(0, scale)``."""

    family = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """``|x|`` for ``x ~ Cauchy(0, scale)``: its mean and variance are infinite."""

    family = Cauchy

    @property
    def mean(self) -> Tensor:
        return full_like(self.scale, math.inf)

    @property
    def variance(self) -> Tensor:
        return full_like(self.scale, math.inf)
