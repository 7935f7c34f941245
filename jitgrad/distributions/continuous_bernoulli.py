"""``ContinuousBernoulli``: the density on [0, 1] proportional to ``p ** x (1 - p) ** (1 - x)`` (Loaiza-Ganem
and Cunningham, 2019), the likelihood a VAE over pixel intensities in [0, 1] normalises correctly.

Its normalising constant ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)`` and its moments are ratios of two
vanishing terms near ``p = 1/2``; as PyTorch's, they are computed from ``p`` moved to ``lims[0]`` inside
``lims`` (0.499, 0.501) and replaced there by their Taylor expansions about 1/2, so values and
gradients stay finite. ``rsample`` is its inverse cdf of a uniform draw, made of jitgrad ops."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import rand
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .bernoulli import ProbsOrLogits, binary_cross_entropy_with_logits
from .parameters import broadcast_all, clamp_probs, lazy_property, logits_to_probs

log, log1p, where = FUNCTIONS["log"], FUNCTIONS["log1p"], FUNCTIONS["where"]

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogits):
    """The continuous Bernoulli distribution on [0, 1], given by ``probs`` or ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (given,) = broadcast_all(probs)
            # checked before clamping: clamped probabilities would always pass. PyTorch checks only when
            # validate_args is given; here whenever validation is on, so that 1.5 is not read as 1 - eps
            checking = self._validate_args if validate_args is None else validate_args
            if checking and not bool(constraints.unit_interval.check(given).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(given)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> ContinuousBernoulli:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        self._expand_param(new, tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self) -> Tensor:
        """Where ``probs`` is outside ``lims``, and the closed forms are used."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """``probs`` where stable, else ``lims[0]`` (the closed forms' value there is discarded)."""
        return where(self._stable(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """``log C(probs)``, the log of the normalising constant."""
        p = self._cut_probs()
        below, above = where(p <= 0.5, p, 0.0), where(p >= 0.5, p, 1.0)
        log_norm = log((log1p(-p) - log(p)).abs()) - where(p <= 0.5, log1p(-2.0 * below), log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._stable(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / (log1p(-p) - log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return where(self._stable(), closed, taylor)

    @property
    def variance(self) -> Tensor:
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / (log1p(-p) - log(p)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._stable(), closed, taylor)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.icdf(rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = where(self._stable(), closed, value)
        return where(value <= 0.0, 0.0 * value, where(value >= 1.0, 0.0 * value + 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        p = self._cut_probs()
        closed = (log1p(-p + value * (2.0 * p - 1.0)) - log1p(-p)) / (log(p) - log1p(-p))
        return where(self._stable(), closed, value)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = log1p(-self.probs), log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0
