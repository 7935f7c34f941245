"""``TransformedDistribution``: a base distribution pushed through a list of transforms
(``transforms.py``), as ``torch.distributions.TransformedDistribution``: ``Normal`` through
``ExpTransform`` is a log-normal, through ``SigmoidTransform`` a logit-normal.

``log_prob(y)`` walks the transforms backwards, ``x = t.inv(y)``, subtracting each
``log_abs_det_jacobian(x, y)`` (summed over the event dimensions it does not already sum) and adding
the base's ``log_prob`` at the end; ``rsample`` draws from the base and applies the transforms in
order, so it is reparameterised when the base's is. ``cdf`` and ``icdf`` go through the base's,
flipped where the transforms' signs multiply to -1. Its shape is the base's through the transforms'
``forward_shape`` (``StickBreakingTransform`` adds a coordinate; a ``PowerTransform``'s exponent may
broadcast the base to more distributions)."""
from __future__ import annotations

from typing import Any, Sequence

from ..autograd import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .independent import Independent
from .parameters import sum_rightmost
from .transforms import ComposeTransform, Transform

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (one transform or a list), applied in order."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, transforms: Transform | list[Transform],
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list) or not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, but was {transforms!r}")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs at least {chain.domain.event_dim} dimensions, but got "
                             f"{len(base_shape)} dimensions")
        shape = tuple(chain.forward_shape(base_shape))   # a stick-breaking transform adds a coordinate
        base_event_dim = len(base_distribution.event_shape)
        widened = tuple(chain.inverse_shape(shape))
        if widened != base_shape:   # a transform's parameters broadcast the base to more distributions
            base_distribution = base_distribution.expand(widened[:len(widened) - base_event_dim])
        if chain.domain.event_dim > base_event_dim:   # the transforms read whole events: the base's are made bigger
            base_distribution = Independent(base_distribution, chain.domain.event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(chain.codomain.event_dim, base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> TransformedDistribution:
        new = self._get_checked_instance(TransformedDistribution, _instance)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for transform in reversed(self.transforms):
            shape = tuple(transform.inverse_shape(shape))
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        return self._expanded(new, batch_shape, self.event_shape)

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        total: Tensor | float = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            total = total - sum_rightmost(transform.log_abs_det_jacobian(x, y), event_dim - transform.domain.event_dim)
            y = x
        return total + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """The base's cdf turned into this one's: reflected about 1/2 where the transforms decrease."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value
