"""``MultivariateNormal`` over its ``scale_tril`` (the lower Cholesky factor ``L`` of the covariance):
``rsample`` is ``loc + L eps`` and ``log_prob`` solves with ``L``, so both are differentiable in ``loc``
and ``L``. A ``covariance_matrix`` is factored by ``jitgrad.linalg.cholesky`` and a ``precision_matrix``
inverted first (``cholesky(inverse(P))``, the same factor as PyTorch's flip-and-solve), both
differentiable, so gradients reach the matrix given."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..factories import randn
from ..linalg import cholesky
from ..ops import FUNCTIONS
from ..shapes import broadcast_shapes
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .parameters import lazy_property

diagonal, inverse, log = FUNCTIONS["diagonal"], FUNCTIONS["inverse"], FUNCTIONS["log"]

__all__ = ["MultivariateNormal"]


def half_log_det(scale_tril: Tensor) -> Tensor:
    """``log det(L L^T) / 2``: the sum of the logs of ``L``'s diagonal."""
    return log(diagonal(scale_tril, dim1=-2, dim2=-1)).sum(-1)


def inverse_tril(scale_tril: Tensor) -> Tensor:
    """``L^-1`` read from ``L``'s lower triangle only, as a triangular solve reads it: the entries above
    the diagonal get no gradient, as in PyTorch's ``solve_triangular``."""
    return inverse(scale_tril.tril())


def mahalanobis(scale_tril: Tensor, difference: Tensor) -> Tensor:
    """``|L^-1 d|^2`` for each batch element."""
    solved = (inverse_tril(scale_tril) @ difference.unsqueeze(-1)).squeeze(-1)
    return solved.pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution over vectors with mean ``loc`` and covariance ``scale_tril @ scale_tril.mT``."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix)) if m is not None)
        if matrix.dim() < 2:
            raise ValueError(f"{name.replace('_tril', '_tril matrix')} must be at least two-dimensional, with "
                             "optional leading batch dimensions")
        k = loc.shape[-1]
        batch_shape = broadcast_shapes("MultivariateNormal", (tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        self.loc = loc.expand(batch_shape + (k,))
        setattr(self, name, matrix.expand(batch_shape + (k, k)))   # the given one, checked by the base class
        super().__init__(batch_shape, (k,), validate_args=validate_args)
        if name == "covariance_matrix":
            matrix = cholesky(matrix)
        elif name == "precision_matrix":
            matrix = cholesky(inverse(matrix))
        self._unbroadcasted_scale_tril = matrix

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        shape, k = tuple(batch_shape), self.event_shape[0]
        new.loc, new.scale_tril = self.loc.expand(shape + (k,)), self.scale_tril.expand(shape + (k, k))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return self._expanded(new, shape, self.event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self.batch_shape + self.event_shape + self.event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        return self.scale_tril @ self.scale_tril.mT

    @lazy_property
    def precision_matrix(self) -> Tensor:
        inverse_factor = inverse(self.scale_tril)  # every entry, as PyTorch's cholesky_inverse differentiates
        return inverse_factor.mT @ inverse_factor

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale_tril.pow(2).sum(-1)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.event_shape[0]
        m = mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (k * math.log(2 * math.pi) + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self) -> Tensor:
        k = self.event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return h if not len(self.batch_shape) else h.expand(tuple(self.batch_shape))
