"""``Distribution``, the base class of every family, as ``torch.distributions.Distribution``.

A distribution holds its parameters as tensors; everything it computes (``log_prob``, ``entropy``,
``rsample``'s ``loc + scale * eps``) is made of jitgrad ops, so gradients reach the parameters, and a
``jitgrad.compile``d function that builds and uses a distribution compiles like any other.

Validation (on by default, as PyTorch's under ``__debug__``) checks parameters when a distribution is
made and values given to ``log_prob``/``cdf``, raising PyTorch's ``ValueError``s. While a tracer watches
(inside ``jitgrad.compile``) tensors hold no values to check, so the checks are skipped there and logged:
a compiled function's first call runs eagerly and checks what it was given.
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Sequence

from ..autograd import no_grad
from ..ops import FUNCTIONS
from ..ops.registry import observed
from ..shapes import Size
from ..tensor import Tensor
from . import constraints
from .parameters import lazy_property

__all__ = ["Distribution"]

exp = FUNCTIONS["exp"]
log = logging.getLogger(__name__)


def shown(value: Tensor) -> str:
    """A parameter as PyTorch's messages show it: a 0-d tensor as its number, else the tensor."""
    return f"{value.item()}" if value.dim() == 0 else f"{value}"


class Distribution:
    """The base of every family: batch and event shapes, sampling, and the quantities a family defines.

    ``batch_shape`` indexes independent distributions of one family (one per parameter element);
    ``event_shape`` is the shape of one draw (``()`` for a scalar, ``(k,)`` for a one-hot vector)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns validation on or off for every distribution made without ``validate_args``."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        if observed():
            log.info("%s: parameters not validated while traced (they have no values yet)", type(self).__name__)
            return
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
            arg_constraints = {}
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue  # the parameter not given: checked through the one that was
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                    f"but found invalid values:\n{shown(value)}")

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Distribution:
        raise NotImplementedError

    def _expanded(self, new: Any, batch_shape: Sequence[int], event_shape: Sequence[int] = ()) -> Any:
        """``new``, a copy whose parameters ``expand`` has set, made a distribution of these shapes that
        validates its arguments as this one does (it is not validated again: its values are this one's)."""
        Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape`` from jitgrad's generator, with
        no history (``rsample`` keeps one)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return exp(self.entropy())

    def _extended_shape(self, sample_shape: Sequence[int] = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """PyTorch's checks of a value given to ``log_prob``, ``cdf`` or ``icdf``: a tensor, whose
        rightmost dimensions are the event shape and which broadcasts with the batch, in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{Size(actual)} vs {Size(expected)}.")
        if observed():
            log.info("%s: value not validated while traced (it has no value yet)", type(self).__name__)
            return
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{shown(value)}")

    def __repr__(self) -> str:
        given = {name: self.__dict__[name] for name in self.arg_constraints if name in self.__dict__}
        args = ", ".join(f"{name}: {shown(value) if value.numel() == 1 else value.size()}"
                         for name, value in given.items())
        return f"{type(self).__name__}({args})"
