"""``LocationScale``: what the families of a location ``loc`` (their mean and mode) and a positive
``scale`` share (``Normal``, ``Laplace``): their parameters, ``expand`` and the two moments that are
the location."""
from __future__ import annotations

from typing import Any, Sequence

from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import broadcast_all

__all__ = ["LocationScale"]


class LocationScale(Distribution):
    """A location and a positive scale over the real line, reparameterised (``rsample``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Any:
        # PyTorch's check is against the family (Normal), not a user's subclass of it
        family = next(c for c in type(self).__mro__ if LocationScale in c.__bases__)
        new = self._get_checked_instance(family, _instance)
        new.loc, new.scale = self.loc.expand(tuple(batch_shape)), self.scale.expand(tuple(batch_shape))
        return self._expanded(new, batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc
