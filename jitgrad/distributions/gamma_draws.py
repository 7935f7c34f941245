"""Gamma-family draws with gradients in their parameters: the ``rsample`` of ``Gamma`` (PyTorch's
``_standard_gamma``), and of ``Dirichlet`` and ``Beta`` (PyTorch's ``_Dirichlet``).

A gamma draw ``x`` of concentration ``a`` is not a differentiable function of ``a`` and a fixed noise
the way a normal draw is, so its gradient is the implicit one (Figurnov et al., 2018): holding the
draw's quantile ``u = P(a, x)`` fixed, ``dx/da = -(dP/da)(a, x) / p(x; a)``, with ``P`` the
regularised lower incomplete gamma function and ``p`` the density. ``standard_gamma_grad`` computes it
(to about 1e-9 relative, where PyTorch's rational approximations are within about 1e-3):

- left of the mean (``x <= a``) from the series ``dx/da = -sum_n r_n (log x - digamma(a + n + 1))``,
  ``r_n = prod_{k <= n} x / (a + k)``, whose terms all have one sign there (no cancellation) and
  shrink at least geometrically;
- right of it from the upper function ``Q = 1 - P``, exact in its tail: ``dx/da = Q d(log Q)/da / p``,
  the logarithm's derivative a five-point central difference of SciPy's ``gammaincc``.

A Dirichlet draw's gradient is PyTorch's estimator: each coordinate is a beta draw ``Beta(a_i, total -
a_i)``, whose implicit gradient in ``a_i`` (the other parameter held) is found the same way from
SciPy's regularised incomplete beta function (``dirichlet_grad``, within about 1e-11; like PyTorch's
``_dirichlet_grad`` it also divides by ``1 - x_i``), and the backward spreads it as PyTorch's does,
``dirichlet_grad * (g - sum(x * g))``. ``Beta`` is a two-coordinate Dirichlet, as in PyTorch.

The draws themselves come from numpy's generator seeded from jitgrad's, so ``manual_seed`` repeats
them; like every SciPy-backed function they cannot be traced by ``jitgrad.compile``."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..autograd import Function
from ..autograd.function import FunctionCtx
from ..factories import tensor
from ..ops.special_functions import scipy_special
from ..tensor import Tensor
from .numpy_draws import numpy_generator

__all__ = ["dirichlet", "dirichlet_grad", "standard_gamma", "standard_gamma_grad"]

_SERIES_CHUNK = 32
_SERIES_LIMIT = 1_000_000


def _left_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    log_x = np.log(x)
    psi = scipy_special("digamma")(a)
    ratio, total = np.ones_like(a), np.zeros_like(a)
    k = 0
    while a.size and k < _SERIES_LIMIT:
        for _ in range(_SERIES_CHUNK):
            ratio = ratio * (x / (a + k))
            psi = psi + 1.0 / (a + k)
            total += ratio * (log_x - psi)
            k += 1
        if np.all(np.abs(ratio * (log_x - psi)) <= 1e-17 * np.abs(total)):
            break
    return -total


def _right_of_mean(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    upper = scipy_special("gammaincc")
    log_q_slope = _log_slope(upper, a, x)
    log_density = (a - 1.0) * np.log(x) - x - scipy_special("gammaln")(a)
    return np.exp(np.log(upper(a, x)) - log_density) * log_q_slope


def standard_gamma_grad(concentration: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``dx/da`` of unit-rate gamma draws ``draws`` of ``concentration`` (broadcast together), in
    float64; PyTorch's ``_standard_gamma_grad``."""
    a, x = np.broadcast_arrays(np.asarray(concentration, np.float64), np.asarray(draws, np.float64))
    out = np.empty(a.shape)
    left = x <= a
    with np.errstate(divide="ignore", invalid="ignore"):
        out[left] = _left_series(a[left], x[left])
        out[~left] = _right_of_mean(a[~left], x[~left])
    return out


def _log_slope(function, a: np.ndarray, *args: np.ndarray) -> np.ndarray:
    """``d log function(a, *args) / da`` by a five-point central difference (error O(step ** 4))."""
    step = 1e-3 * a

    def change(h: np.ndarray) -> np.ndarray:
        return np.log(function(a + h, *args)) - np.log(function(a - h, *args))
    return (8.0 * change(step) - change(2.0 * step)) / (12.0 * step)


def dirichlet_grad(draws: np.ndarray, concentration: np.ndarray, total: np.ndarray) -> np.ndarray:
    """PyTorch's ``_dirichlet_grad``: for ``x ~ Beta(a, total - a)``, ``-(dI_x/da) / pdf(x)`` with the
    second parameter held, divided by ``1 - x``; from the lower or the upper regularised incomplete
    beta function, whichever is the smaller (it keeps its digits), in float64."""
    x, a, total = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (draws, concentration, total)))
    b = total - a
    lower, upper = scipy_special("betainc"), scipy_special("betaincc")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        below = lower(a, b, x)
        use_lower = below <= 0.5
        kept = np.where(use_lower, below, upper(a, b, x))
        slope = np.where(use_lower, _log_slope(lower, a, b, x), _log_slope(upper, a, b, x))
        log_density = (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - scipy_special("betaln")(a, b)
        implicit = np.exp(np.log(kept) - log_density) * slope * np.where(use_lower, -1.0, 1.0)
        return implicit / (1.0 - x)


def _draws(concentration: Tensor, shape: tuple[int, ...], family: str) -> np.ndarray:
    generator = numpy_generator(family)   # first: it refuses a trace, whose tensors have no values to read
    draws = generator.standard_gamma(np.broadcast_to(concentration.detach().numpy(), shape))
    dtype = dtypes.as_numpy_dtype(concentration.dtype)
    return np.maximum(draws, np.finfo(dtype).tiny).astype(dtype)   # never exactly 0, as PyTorch clamps


class StandardGamma(Function):
    """Draws of unit-rate gammas of ``concentration`` (already of the draws' shape); the backward
    multiplies by ``standard_gamma_grad`` (PyTorch's ``_standard_gamma`` and its derivative)."""

    _node_name = "StandardGammaBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, concentration: Tensor, family: str) -> Tensor:
        draws = _draws(concentration, tuple(concentration.shape), family)
        ctx.concentration, ctx.draws = concentration.detach().numpy(), draws
        return tensor(draws, dtype=concentration.dtype)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        slope = standard_gamma_grad(ctx.concentration, ctx.draws)
        return grad * tensor(slope, dtype=grad.dtype), None


def standard_gamma(concentration: Tensor, shape: tuple[int, ...], family: str) -> Tensor:
    """Unit-rate gamma draws of ``shape`` (``concentration`` broadcast to it) that carry the implicit
    reparameterisation gradient in ``concentration``; ``family`` names the caller in errors."""
    return StandardGamma.apply(concentration.expand(*shape), family)


class Dirichlet(Function):
    """Dirichlet draws of ``concentration`` (already of the draws' shape, the categories last):
    normalised gamma draws; the backward is PyTorch's ``_Dirichlet`` estimator."""

    _node_name = "_DirichletBackward"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, concentration: Tensor, family: str) -> Tensor:
        gammas = _draws(concentration, tuple(concentration.shape), family).astype(np.float64)
        dtype = dtypes.as_numpy_dtype(concentration.dtype)
        info = np.finfo(dtype)
        draws = np.clip(gammas / gammas.sum(-1, keepdims=True), info.tiny, 1.0 - info.eps)  # as PyTorch clamps
        ctx.concentration, ctx.draws = concentration.detach().numpy(), draws
        return tensor(draws.astype(dtype), dtype=concentration.dtype)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        total = ctx.concentration.sum(-1, keepdims=True)
        slope = tensor(dirichlet_grad(ctx.draws, ctx.concentration, total), dtype=grad.dtype)
        draws = tensor(ctx.draws, dtype=grad.dtype)
        return slope * (grad - (draws * grad).sum(-1, keepdim=True)), None


def dirichlet(concentration: Tensor, shape: tuple[int, ...], family: str) -> Tensor:
    """Dirichlet draws of ``shape`` (``concentration`` broadcast to it, the categories last) with
    PyTorch's reparameterisation gradient in ``concentration``."""
    return Dirichlet.apply(concentration.expand(*shape), family)
