"""Constraints: the sets a distribution's parameters and values live in, as ``torch.distributions.constraints``.

A constraint's ``check(value)`` is a boolean tensor over the batch (the rightmost ``event_dim`` dimensions
reduced with ``all``), built from jitgrad ops so that validation reads like the maths it checks. The
names are PyTorch's (``constraints.positive``, ``constraints.interval(0, 1)``), and so are the reprs that
appear in validation errors (``GreaterThan(lower_bound=0.0)``).
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "independent", "integer_interval", "interval", "is_dependent", "lower_cholesky", "nonnegative",
           "nonnegative_integer", "one_hot", "positive_definite", "positive", "real", "real_vector", "simplex",
           "unit_interval"]


class Constraint:
    """A region of values: ``check`` says, element by element of the batch, whether a value is in it.

    ``is_discrete`` marks integer-valued regions; ``event_dim`` is how many rightmost dimensions make one
    point of the region (1 for a simplex)."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (``Uniform``'s ``low`` and
    ``high``): it cannot be checked alone, so validation skips it."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete: bool = False, event_dim: int = 0) -> _Dependent:
        """``dependent(is_discrete=..., event_dim=...)``: a placeholder that says what it stands for."""
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")

    def __repr__(self) -> str:
        return "Dependent()"


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a ``dependent`` placeholder, which validation cannot check."""
    return isinstance(constraint, _Dependent)


class dependent_property(property):
    """A property that is also a dependent constraint, as PyTorch's: ``Uniform.support`` is the
    interval of that instance's ``low`` and ``high``, and ``Uniform.support`` on the class is
    ``dependent``."""

    def __init__(self, fget: Any = None, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        super().__init__(fget)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fget: Any) -> dependent_property:
        """The decorator form with arguments: ``@dependent_property(is_discrete=True)``."""
        return dependent_property(fget, is_discrete=self.is_discrete, event_dim=self.event_dim)


class Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # NaN is the one real-typed value outside the reals


class Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lower_bound={self.lower_bound})"


class GreaterThanEq(GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value


class IntegerGreaterThan(GreaterThan):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)


class Interval(Constraint):
    """The closed interval ``[lower_bound, upper_bound]`` (bounds may be tensors)."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class HalfOpenInterval(Interval):
    """``[lower_bound, upper_bound)``: ``Uniform``'s support."""

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)


class IntegerInterval(Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)


class Simplex(Constraint):
    """Nonnegative vectors summing to one (within 1e-6), over the last dimension."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal (over the last two dimensions)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).all(-1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class PositiveDefinite(Constraint):
    """Symmetric matrices with positive eigenvalues: symmetric to 1e-6 and factored by Cholesky, as
    PyTorch checks them."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        from ..linalg import cholesky_ex   # the constraint is named at import; the check needs LAPACK
        symmetric = value.isclose(value.mT, atol=1e-6).all(-1).all(-1)
        return symmetric.logical_and(cholesky_ex(value.flip((-2, -1))).info.eq(0))


class IndependentConstraint(Constraint):
    """``base_constraint`` with its rightmost ``reinterpreted_batch_ndims`` batch dimensions made part
    of the event: the check holds where it holds for every element of those dimensions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


dependent = _Dependent()
real = Real()
real_vector = IndependentConstraint(real, 1)
boolean = Boolean()
positive = GreaterThan(0.0)
nonnegative = GreaterThanEq(0.0)
nonnegative_integer = IntegerGreaterThan(0)
unit_interval = Interval(0.0, 1.0)
simplex = Simplex()
one_hot = OneHot()
lower_cholesky = LowerCholesky()
positive_definite = PositiveDefinite()
greater_than = GreaterThan
greater_than_eq = GreaterThanEq
interval = Interval
half_open_interval = HalfOpenInterval
integer_interval = IntegerInterval
independent = IndependentConstraint
