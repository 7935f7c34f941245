"""``Gamma``, ``Beta`` and ``Dirichlet``: densities built on ``lgamma`` (entropies and KLs on
``digamma``), so their values and gradients in the parameters are jitgrad ops.

Their draws (``gamma_draws.py``) carry PyTorch's implicit reparameterisation gradients: ``Gamma``'s
those of ``_standard_gamma``, ``Dirichlet``'s and ``Beta``'s (a two-coordinate Dirichlet, as in
PyTorch) those of ``_Dirichlet``, so ``rsample`` differentiates in the parameters as PyTorch's does.
They cannot be traced by ``jitgrad.compile`` (an error says so, rather than a compiled call repeating
one draw)."""
from __future__ import annotations

from typing import Any, Sequence

from ..factories import arange
from ..ops import FUNCTIONS
from ..special import gammainc
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all
from .gamma_draws import dirichlet, standard_gamma

digamma, lgamma, log, where, xlogy = (FUNCTIONS[name] for name in ("digamma", "lgamma", "log", "where", "xlogy"))

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma"]


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        shape = tuple(batch_shape)
        new.concentration, new.rate = self.concentration.expand(shape), self.rate.expand(shape)
        return self._expanded(new, shape)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return standard_gamma(self.concentration, shape, "Gamma") / self.rate.expand(*shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def cdf(self, value: Tensor) -> Tensor:
        """``P(concentration, rate * value)``; like PyTorch's, it has no gradient in ``concentration``."""
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Chi2:
        return super().expand(batch_shape, _instance=self._get_checked_instance(Chi2, _instance))

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex, with positive ``concentration`` (its last dimension
    indexes the categories)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        return self._expanded(new, batch_shape, self.event_shape)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """``(c - 1) / sum(c - 1)`` clamped at 0; where every ``c < 1``, the one-hot of the largest."""
        c_minus_1 = (self.concentration - 1).clamp(min=0.0)
        mode = c_minus_1 / c_minus_1.sum(-1, keepdim=True)
        all_below_one = (self.concentration < 1).all(-1, keepdim=True)
        categories = FUNCTIONS["argmax"](self.concentration, -1, True)
        one_hot = (categories == arange(self.concentration.shape[-1])).to(self.concentration.dtype)
        return where(all_below_one, one_hot, mode)

    @property
    def variance(self) -> Tensor:
        total = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return dirichlet(self.concentration, tuple(self._extended_shape(sample_shape)), "Dirichlet")

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    def entropy(self) -> Tensor:
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(total) - (k - total) * digamma(total) - ((c - 1.0) * digamma(c)).sum(-1)


class Beta(Distribution):
    """The beta distribution on [0, 1] with positive ``concentration1`` (alpha) and ``concentration0``
    (beta): a two-category ``Dirichlet``'s first coordinate."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self._alpha, self._beta = broadcast_all(concentration1, concentration0)
        super().__init__(self._alpha.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        shape = tuple(batch_shape)
        new._alpha, new._beta = self._alpha.expand(shape), self._beta.expand(shape)
        return self._expanded(new, shape)

    @property
    def concentration1(self) -> Tensor:
        return self._alpha

    @property
    def concentration0(self) -> Tensor:
        return self._beta

    @property
    def mean(self) -> Tensor:
        return self._alpha / (self._alpha + self._beta)

    @property
    def mode(self) -> Tensor:
        return Dirichlet(FUNCTIONS["stack"]([self._alpha, self._beta], -1), validate_args=False).mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self._alpha + self._beta
        return self._alpha * self._beta / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape)) + (2,)
        pair = FUNCTIONS["stack"]([self._alpha, self._beta], -1)
        return dirichlet(pair, shape, "Beta")[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self._alpha, self._beta
        return xlogy(a - 1.0, value) + xlogy(b - 1.0, 1 - value) + lgamma(a + b) - lgamma(a) - lgamma(b)

    def entropy(self) -> Tensor:
        a, b = self._alpha, self._beta
        total = a + b
        log_beta = lgamma(a) + lgamma(b) - lgamma(total)
        return log_beta - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (total - 2) * digamma(total)
