"""Distributions over counts: ``Geometric`` (failures before the first success), ``Poisson`` and
``Binomial``, as PyTorch's. Their ``log_prob``, moments and entropies are jitgrad ops that
differentiate in the parameters; none has ``rsample``. ``Geometric.sample`` inverts a uniform draw's
cdf, so it compiles; ``Poisson`` and ``Binomial`` draw with numpy (``numpy_draws.py``), eagerly only."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..autograd import no_grad
from ..factories import arange, rand, tensor, zeros_like
from ..ops import FUNCTIONS
from ..tensor import Tensor
from . import constraints
from .bernoulli import ProbsOrLogits, binary_cross_entropy_with_logits
from .distribution import Distribution
from .numpy_draws import numpy_generator
from .parameters import broadcast_all

exp, lgamma, log, log1p, softplus, where, xlogy = (FUNCTIONS[name] for name in
                                                   ("exp", "lgamma", "log", "log1p", "softplus", "where", "xlogy"))

__all__ = ["Binomial", "Geometric", "Poisson"]


class Geometric(ProbsOrLogits):
    """The number of failures before the first success of coin flips succeeding with ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._take(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        positive = self.probs > 0
        if self._validate_args and probs is not None and not bool(positive.all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                             f"invalid values:\n{self.probs.detach()[~positive]}")

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        self._expand_param(new, tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        tiny = float(np.finfo(dtypes.as_numpy_dtype(self.probs.dtype)).tiny)
        with no_grad():
            u = rand(self._extended_shape(sample_shape), dtype=self.probs.dtype).clamp(min=tiny)
            return (log(u) / log1p(-self.probs)).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = where((probs == 1) & (value == 0), 0.0, probs)   # a sure success at the first flip: 0 * log 0
        return value * log1p(-probs) + log(self.probs)

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs) / self.probs


class Poisson(Distribution):
    """The number of events of a Poisson process with mean ``rate`` in unit time."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        new.rate = self.rate.expand(tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        generator = numpy_generator("Poisson")   # first: it refuses a trace, whose tensors have no values to read
        shape = tuple(self._extended_shape(sample_shape))
        draws = generator.poisson(np.broadcast_to(self.rate.detach().numpy(), shape))
        return tensor(draws.astype(dtypes.as_numpy_dtype(self.rate.dtype)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)


class Binomial(ProbsOrLogits):
    """The number of successes in ``total_count`` coin flips succeeding with ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        (total,) = self._take(probs, logits, total_count)
        self.total_count = total.to(self._param.dtype)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Binomial:
        new = self._get_checked_instance(Binomial, _instance)
        shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(shape)
        self._expand_param(new, shape)
        return self._expanded(new, shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        generator = numpy_generator("Binomial")   # first: it refuses a trace, whose tensors have no values to read
        shape = tuple(self._extended_shape(sample_shape))
        counts = np.broadcast_to(self.total_count.detach().numpy(), shape).astype(np.int64)
        draws = generator.binomial(counts, np.broadcast_to(self.probs.detach().numpy(), shape))
        return tensor(draws.astype(dtypes.as_numpy_dtype(self._param.dtype)))

    def log_prob(self, value: Tensor) -> Tensor:
        """``log C(n, k) + k logits - n softplus(logits)``: ``k log p + (n - k) log(1 - p)`` without a
        logarithm of 0 when ``p`` is 0 or 1."""
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_choose = lgamma(n + 1) - lgamma(value + 1) - lgamma(n - value + 1)
        return log_choose + value * self.logits - n * softplus(self.logits)

    def _homogeneous_count(self, what: str) -> int:
        count = int(self.total_count.max().item())
        if int(self.total_count.min().item()) != count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return count

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        count = self._homogeneous_count("enumerate_support")
        values = arange(1 + count, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
