"""Families PyTorch defines as a simple distribution pushed through transforms, defined the same way
here (so ``rsample``, ``cdf`` and ``icdf`` come from ``TransformedDistribution``), each with its
closed-form ``log_prob``, moments and entropy where PyTorch writes them out:

- ``Gumbel(loc, scale)``: ``loc - scale * log(-log u)`` for ``u`` uniform on (tiny, 1 - eps);
- ``Weibull(scale, concentration)``: ``scale * e ** (1 / concentration)`` for ``e ~ Exponential(1)``;
- ``Pareto(scale, alpha)``: ``scale * exp(e)`` for ``e ~ Exponential(alpha)``;
- ``Kumaraswamy(concentration1, concentration0)``: ``(1 - u ** (1 / c0)) ** (1 / c1)`` for ``u`` uniform;
- ``InverseGamma(concentration, rate)``: ``1 / g`` for ``g ~ Gamma(concentration, rate)`` (its draws,
  and so ``rsample``, run eagerly only, as ``Gamma``'s);
- ``LogisticNormal(loc, scale)``: a ``Normal`` vector of ``K - 1`` coordinates broken onto the
  ``K``-simplex (``StickBreakingTransform``)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..factories import full_like, ones_like
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .exponential import Exponential
from .gamma import Gamma
from .normal import Normal
from .parameters import broadcast_all
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .uniform import Uniform

digamma, exp, lgamma, log, where = (FUNCTIONS[name] for name in ("digamma", "exp", "lgamma", "log", "where"))

__all__ = ["Gumbel", "InverseGamma", "Kumaraswamy", "LogisticNormal", "Pareto", "Weibull"]

EULER_GAMMA = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = np.finfo(dtypes.as_numpy_dtype(self.loc.dtype))
        base_dist = Uniform(full_like(self.loc, float(info.tiny)), full_like(self.loc, 1 - float(info.eps)),
                            validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(0, -ones_like(self.scale)), ExpTransform().inv,
                      AffineTransform(self.loc, -self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(tuple(batch_shape)), self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(log(self.scale) + z + exp(-z))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return log(self.scale) + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` and shape ``concentration``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(self.concentration_reciprocal), AffineTransform(0, self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        shape = tuple(batch_shape)
        new.scale, new.concentration = self.scale.expand(shape), self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return self.scale * exp(lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        """``scale ((k - 1) / k) ** (1 / k)``: ``nan`` for ``k < 1`` (where it is 0), as PyTorch's."""
        return self.scale * ((self.concentration - 1) / self.concentration).pow(self.concentration_reciprocal)

    @property
    def variance(self) -> Tensor:
        first = exp(2 * lgamma(1 + self.concentration_reciprocal))
        return self.scale.pow(2) * (exp(lgamma(1 + 2 * self.concentration_reciprocal)) - first)

    def entropy(self) -> Tensor:
        return EULER_GAMMA * (1 - self.concentration_reciprocal) + log(self.scale * self.concentration_reciprocal) + 1


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with minimum ``scale`` and tail index ``alpha``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base_dist, [ExpTransform(), AffineTransform(0, self.scale)], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(tuple(batch_shape)), self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        """``alpha scale / (alpha - 1)``; infinite for ``alpha <= 1``."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        """Infinite for ``alpha <= 2``."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return log(self.scale / self.alpha) + (1 + self.alpha.reciprocal())


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[x ** n] = b B(1 + n / a, b)``, through ``lgamma``."""
    shifted = 1 + n / a
    return b * exp(lgamma(shifted) + lgamma(b) - lgamma(shifted + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1), a Beta look-alike with a closed-form cdf:
    ``p(x) = a b x ** (a - 1) (1 - x ** a) ** (b - 1)`` for ``a = concentration1``, ``b = concentration0``."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(full_like(self.concentration0, 0.0), full_like(self.concentration0, 1.0),
                            validate_args=validate_args)
        transforms = [PowerTransform(self.concentration0.reciprocal()), AffineTransform(1.0, -1.0),
                      PowerTransform(self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        shape = tuple(batch_shape)
        new.concentration1, new.concentration0 = self.concentration1.expand(shape), self.concentration0.expand(shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1)) ** (1 / a)`` where ``a, b >= 1`` (not both 1), else ``nan``. PyTorch
        2.13's is ``nan`` everywhere but on ``b = 1`` (where it is 0): its formula swaps the parameters'
        roles."""
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).clamp(min=0).pow(a.reciprocal())
        return where((a < 1) | (b < 1) | ((a == 1) & (b == 1)), math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = digamma(b + 1) + EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - log(a) - log(b)


class InverseGamma(TransformedDistribution):
    """The inverse gamma distribution: ``1 / g`` for ``g ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base_dist, PowerTransform(-ones_like(base_dist.rate)), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> InverseGamma:
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        return where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        return where(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2)), math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + log(self.rate) + lgamma(c) - (1 + c) * digamma(c)


class LogisticNormal(TransformedDistribution):
    """A point of the simplex whose stick-breaking logits (``StickBreakingTransform``) are normal with
    means ``loc`` and deviations ``scale``, vectors of ``K - 1`` coordinates for a ``K``-simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:   # one coordinate: a vector of one
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> LogisticNormal:
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
