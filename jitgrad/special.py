"""``jitgrad.special``: PyTorch's ``torch.special`` names over jitgrad's ops.

Most are the ops under their SciPy-style names (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``,
``psi`` is ``digamma``) or short composites of them (``ndtr``, ``multigammaln``, ``xlog1py``, ``entr``).
``log_ndtr``, ``ndtri``, ``i0``, ``i1``, ``gammainc`` and ``gammaincc`` have no composite that keeps PyTorch's precision in the tails
(``log(ndtr(x))`` is ``-inf`` below x = -38, ``sqrt(2) erfinv(2p - 1)`` loses every digit near p = 0), so
they are ``autograd.Function``s over SciPy, as ``jitgrad.erfc`` is: SciPy's forward, a backward in jitgrad
ops (second order follows), refused inside a compiled function."""
from __future__ import annotations

import math

import numpy as np

from . import dtypes
from .autograd import is_grad_enabled
from .autograd.function import Function, FunctionCtx
from .ops import (digamma, erf, erfc, erfinv, exp2, expm1, lgamma, log1p, log_softmax, logit, logsumexp,
                  polygamma, round, sigmoid, sinc, softmax, where, xlogy)
from .ops.comparisons import scalar_type
from .ops.host_reads import host_values, refuse_when_traced
from .ops.special_functions import result_like, scipy_function, scipy_special
from .tensor import Tensor

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "i0", "i1", "log1p",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi",
           "round", "sinc", "softmax", "xlog1py", "xlogy"]

expit = sigmoid
gammaln = lgamma
psi = digamma


def _floating(input: Tensor | float, *others: Tensor | float) -> Tensor | float:
    """``input`` as a floating tensor in the dtype an op of it and the tensors among ``others`` computes
    in, as PyTorch promotes: their common dtype, the default one for integers and bools."""
    if not isinstance(input, Tensor):
        return input
    tensors = [v for v in (input, *others) if isinstance(v, Tensor)]
    dtype = dtypes.result_type(*(np.empty((1,) * t._data.ndim, t._data.dtype) for t in tensors))
    if dtype.kind != "f":
        dtype = dtypes.get_default_dtype().numpy
    return input if input._data.dtype == dtype else input.to(dtype)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2`` (exact in the lower tail, as ``erfc`` is)."""
    return erfc(_floating(input) * -math.sqrt(0.5)) * 0.5


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``. Every element must exceed
    ``(p - 1) / 2``: PyTorch documents the result as undefined elsewhere, jitgrad refuses it."""
    x = _floating(input)
    limit = (p - 1) / 2
    if not bool((x > limit).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {limit}: multigammaln(input, p={p}) "
                           "is undefined there")
    total = x * 0.0 + p * (p - 1) / 4 * math.log(math.pi)
    for j in range(p):
        total = total + lgamma(x - j / 2)
    return total


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 unless ``other`` is NaN (as ``xlogy``); a number
    ``other`` goes through ``math.log1p``, exact for tiny values. The gradient in ``input`` is
    ``log1p(other)``, at an ``input`` of 0 too, as PyTorch's; where that is not finite and ``input`` is
    0, ``other`` (or ``log1p(other)``) is replaced by 0 before the product, so that the gradient there
    is 0 (PyTorch's too, but at ``other = inf``: inf), not the product masked by ``where``, whose
    untaken gradient was 0 at any ``other`` and ``0 * -inf``, NaN, at ``other = -1``."""
    if not isinstance(other, Tensor):
        x = _floating(input)
        if math.isnan(other) or -1 < other < math.inf:
            return x * math.log1p(other)
        not_finite = math.inf if other == math.inf else -math.inf if other == -1 else math.nan
        return x * where(x == 0, 0.0, not_finite)
    y = _floating(other, input)   # log1p of an integer other in a float64 input's dtype, not in float32
    if not isinstance(input, Tensor):
        return where(y.isnan(), y, y * 0.0) if input == 0 else log1p(y) * input
    x = _floating(input, other)
    unsafe = (x == 0) & ((y <= -1) | y.isinf())
    return x * log1p(where(unsafe, 0.0, y))


def entr(input: Tensor) -> Tensor:
    """The elementwise entropy ``-x log(x)``: 0 at 0, ``-inf`` for negative ``x``, NaN at NaN (which
    ``x > 0`` alone would send to the negative branch's ``-inf``)."""
    x = _floating(input)
    computed = ~(x <= 0)   # positive or NaN
    safe = where(computed, x, 1.0)
    return where(computed, -safe * safe.log(), where(x == 0, 0.0, -math.inf))


def _values(op: str, input: Tensor) -> np.ndarray:
    refuse_when_traced(op, "its forward is SciPy's, which no backend lowers")
    return host_values(_floating(input))


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# log(ndtr(x)), finite far into the lower tail; d/dx = exp(-x**2/2 - log(sqrt(2 pi)) - log_ndtr(x))
LogNdtr = scipy_function("LogNdtr", _values, "special.log_ndtr", lambda v: scipy_special("log_ndtr")(v),
                         lambda g, x, r: g * (x * x * -0.5 - _LOG_SQRT_2PI - r).exp(), ("input", "result"),
                         "SpecialLogNdtrBackward0")
# the inverse of ndtr on (0, 1); d/dp = sqrt(2 pi) exp(ndtri(p)**2 / 2)
Ndtri = scipy_function("Ndtri", _values, "special.ndtri", lambda v: scipy_special("ndtri")(v),
                       lambda g, _, r: g * (r * r * 0.5 + _LOG_SQRT_2PI).exp(), ("result",),
                       "SpecialNdtriBackward0")
# the modified Bessel function of the first kind, order 0; d/dx = i1(x)
BesselI0 = scipy_function("BesselI0", _values, "special.i0", lambda v: scipy_special("i0")(v),
                          lambda g, x, _: g * i1(x), ("input",), "I0Backward0")
# order 1; d/dx = i0(x) - i1(x) / x, which is 1/2 at x = 0
BesselI1 = scipy_function("BesselI1", _values, "special.i1", lambda v: scipy_special("i1")(v),
                          lambda g, x, r: g * _i1_slope(x, r), ("input", "result"), "SpecialI1Backward0")


def _i1_slope(x: Tensor, i1_x: Tensor) -> Tensor:
    zero = x == 0
    return where(zero, 0.5, i0(x) - i1_x / where(zero, 1.0, x))


def log_ndtr(input: Tensor) -> Tensor:
    """The log of the standard normal CDF."""
    return LogNdtr.apply(input)


def ndtri(input: Tensor) -> Tensor:
    """The standard normal quantile function (the inverse of ``ndtr``)."""
    return Ndtri.apply(input)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return BesselI0.apply(input)


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return BesselI1.apply(input)


class _NoDerivative(Function):
    """Zeros of ``input``'s shape whose backward refuses: added to a result that has no derivative in
    ``input``, it raises PyTorch's error only when a backward asks for ``input``'s gradient."""

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, message: str) -> Tensor:
        ctx.message = message
        return input.detach() * 0.0

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, None]:
        raise NotImplementedError(ctx.message)


class Igamma(Function):
    """``P(a, x)`` (``upper=False``) or ``Q(a, x) = 1 - P(a, x)``, the regularised incomplete gamma
    functions of ``input`` (a) and ``other`` (x); d/dx is plus or minus the gamma density,
    ``exp((a - 1) log x - x - lgamma(a))``."""

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, other: Tensor, upper: bool) -> Tensor:
        name = "igammac" if upper else "igamma"
        if input._data.dtype.kind != "f" and other._data.dtype.kind != "f":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{scalar_type(input)}': convert the "
                                      "inputs to a floating dtype first")
        a, x = _values(f"special.{'gammaincc' if upper else 'gammainc'}", input), _values(name, other)
        dtype = dtypes.result_type(*(np.empty((1,) * v.ndim, v.dtype) for v in (a, x)))   # PyTorch's promotion
        ctx.save_for_backward(input, other)
        ctx.upper = upper
        values = scipy_special("gammaincc" if upper else "gammainc")(a.astype(dtype), x.astype(dtype))
        return result_like(values, np.empty(0, dtype), input)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, Tensor, None]:
        input, other = ctx.saved_tensors
        a, x = _floating(input), _floating(other)
        density = ((a - 1.0) * x.log() - x - lgamma(a)).exp()
        return None, grad * (-density if ctx.upper else density), None


def _regularized_gamma(input: Tensor, other: Tensor, upper: bool) -> Tensor:
    """PyTorch has no derivative of these in ``input``: its error is raised by a backward that asks."""
    result = Igamma.apply(input.detach(), other, upper)
    if input.requires_grad and is_grad_enabled():
        name = "igammac" if upper else "igamma"
        result = result + _NoDerivative.apply(input, f"the derivative for '{name}: input' is not implemented.")
    return result


def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function ``P(input, other)`` (``torch.special.gammainc``)."""
    return _regularized_gamma(input, other, False)


def gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """The regularised upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``."""
    return _regularized_gamma(input, other, True)
