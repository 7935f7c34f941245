"""``Bernoulli``: one coin flip, given by ``probs`` or ``logits`` (the other computed when read)."""
from __future__ import annotations

from typing import Any, Sequence

from ..factories import arange, rand
from ..ops import FUNCTIONS
from ..shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

softplus, where = FUNCTIONS["softplus"], FUNCTIONS["where"]

__all__ = ["Bernoulli", "ProbsOrLogits", "binary_cross_entropy_with_logits"]


def binary_cross_entropy_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """``-(target log p + (1 - target) log(1 - p))`` for ``p = sigmoid(logits)``, element by element:
    ``softplus(l) - l t``, whose ``softplus`` overflows nowhere and whose derivative is ``sigmoid(l) - t``
    everywhere (``max(l, 0) + log1p(exp(-|l|))`` has the same values but a kink's gradient at 0)."""
    return softplus(logits) - logits * target


class ProbsOrLogits(Distribution):
    """A family of one success probability per element, given as ``probs`` or ``logits`` (the other
    computed when first read); ``_take`` broadcasts it with the family's other parameters."""

    def _take(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name = "probs" if probs is not None else "logits"
        *rest, param = broadcast_all(*others, probs if probs is not None else logits)
        setattr(self, name, param)
        self._param = param
        return tuple(rest)

    def _expand_param(self, new: Any, shape: tuple[int, ...]) -> None:
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))
                new._param = new.__dict__[name]

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()


class Bernoulli(ProbsOrLogits):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._take(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        self._expand_param(new, tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return (rand(shape, dtype=self.probs.dtype) < self.probs.detach()).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -binary_cross_entropy_with_logits(self.logits, value)

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + tuple(self._batch_shape)) if expand else values
