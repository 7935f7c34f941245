"""``Categorical`` (an index drawn from ``k`` weighted choices) and ``OneHotCategorical`` (the same
draw as a one-hot vector), given by ``probs`` or ``logits`` over the last dimension.

Sampling inverts the cumulative probabilities: an index is the number of cumulative sums a uniform
draw reaches, so it is made of ``rand``, ``cumsum`` and a comparison, and compiles like them."""
from __future__ import annotations

from typing import Any, Sequence

from ..factories import arange, full, rand
from ..ops import FUNCTIONS
from ..shapes import Size, broadcast_shapes
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import finfo_min, lazy_property, logits_to_probs, probs_to_logits

logsumexp = FUNCTIONS["logsumexp"]

__all__ = ["Categorical", "OneHotCategorical"]


class Categorical(Distribution):
    """An index in ``0 .. k-1`` with probabilities ``probs`` (normalised to sum to one) or
    ``softmax(logits)``; the last dimension of the parameter indexes the categories."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logsumexp(logits, -1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Indices (int64): for each, the count of cumulative probabilities at or below a uniform draw
        (clamped to ``k - 1`` against a last sum rounded below one)."""
        probs = self.probs.detach()
        cumulative = probs.cumsum(-1)
        u = rand(tuple(self._extended_shape(sample_shape)) + (1,), dtype=probs.dtype)
        reached = u * cumulative[..., -1:] >= cumulative
        return reached.sum(-1).clamp(max=self._num_events - 1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        shape = broadcast_shapes("Categorical.log_prob", (tuple(index.shape[:-1]), tuple(self.logits.shape[:-1])))
        index = index.expand(shape + (1,))
        log_pmf = self.logits.expand(shape + (self._num_events,))
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=finfo_min(self.logits))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((self._num_events,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """A ``Categorical`` draw as a one-hot vector of length ``k`` (its ``event_shape``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        # validate_args reaches the inner Categorical (PyTorch's validates it by the default alone), so
        # that validate_args=False turns every check off; the errors are PyTorch's, Categorical's own
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical.param_shape
        super().__init__(self._categorical.batch_shape, param[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        return self._expanded(new, batch_shape, self.event_shape)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        return self._one_hot(self._categorical.probs.argmax(-1))

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def _one_hot(self, index: Tensor) -> Tensor:
        categories = arange(self._categorical._num_events)
        return (index.unsqueeze(-1) == categories).to(self._categorical.probs.dtype)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self._one_hot(self._categorical.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = self._one_hot(arange(n)).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values
