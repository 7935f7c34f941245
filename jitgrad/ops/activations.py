"""Activation functions and (log-)softmax."""
from __future__ import annotations

import math

import numpy as np

from ..autograd.forward_ad import tangent_sum
from ..shapes import wrap_dim
from ..tensor import Tensor
from . import scalar
from .arithmetic import minimum, where
from .lowering import intrinsic
from .math_functions import floating_forward
from .meta_rules import elementwise, floating, unchanged
from .op_callers import caller
from .public import public
from .registry import defop
from .special import erf_ufunc

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


def _relu(a):
    """0 where ``a < 0``, else ``a``: -0.0 stays -0.0 (PyTorch's, and the lowering's Python ``max(x, 0)``),
    which numpy's ``maximum(a, 0)`` made +0.0; NaN stays NaN."""
    return np.where(a < 0, a.dtype.type(0), a)


def _gelu_forward(a, approximate):
    if a.dtype == np.float16:  # in float32, rounded once, as PyTorch's kernel: 1 + erf(x / sqrt 2) cancels
        return _gelu_forward(a.astype(np.float32), approximate).astype(np.float16)  # (5 % off at -3.5)
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (a + _GELU_CUBIC * a * a * a)
        return (0.5 * a * (1.0 + np.tanh(inner))).astype(a.dtype, copy=False)
    if approximate != "none":
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return (0.5 * a * (1.0 + erf_ufunc(a * _INV_SQRT_2))).astype(a.dtype, copy=False)


def _gelu_grad(grad, self, approximate):
    if approximate == "tanh":
        inner = (self + self * self * self * _GELU_CUBIC) * _SQRT_2_OVER_PI
        t = inner.tanh()
        d_inner = (self * self * (3.0 * _GELU_CUBIC) + 1.0) * _SQRT_2_OVER_PI
        return grad * ((t + 1.0) * 0.5 + self * 0.5 * (1.0 - t * t) * d_inner)
    cdf = ((self * _INV_SQRT_2).erf() + 1.0) * 0.5
    pdf = (self * self * -0.5).exp() * _INV_SQRT_2PI
    return grad * (cdf + self * pdf)


def _softplus_forward(a, beta, threshold):
    scaled = a * beta
    soft = np.logaddexp(0.0, scaled) / beta
    return np.where(scaled > threshold, a, soft).astype(a.dtype, copy=False)


def _gelu_lower(self, approximate):
    if approximate == "tanh":
        return 0.5 * self * (1.0 + scalar.tanh(_SQRT_2_OVER_PI * (self + _GELU_CUBIC * self * self * self)))
    return 0.5 * self * (1.0 + scalar.erf(self * _INV_SQRT_2))


def _softplus_lower(self, beta, threshold):
    scaled = self * beta  # log(1 + e^s) as max(s, 0) + log1p(e^-|s|), which never overflows
    soft = (scalar.max(scaled, 0.0) + scalar.log1p(scalar.exp(-scalar.abs(scaled)))) / beta
    return scalar.where(scaled > threshold, self, soft)


def _axis(a, dim):
    """numpy's axis for ``dim``: a 0-d tensor takes dim 0 or -1, the whole of it, as in PyTorch."""
    return dim if a.ndim else None


# What ``a.max(...)`` and ``a.sum(...)`` run, called without numpy's Python frame around them.
_max_reduce, _sum_reduce = np.maximum.reduce, np.add.reduce


def _softmax_forward(a, dim):
    """Row-major whatever ``a``'s layout, as PyTorch's (numpy's arithmetic keeps a transpose's order, so
    ``x.T.softmax(-1).view(-1)`` raised until 2026-11-28); ``log_softmax`` likewise."""
    axis = _axis(a, dim)
    shifted = np.asarray(a, order="C") - _max_reduce(a, axis, None, None, True, -np.inf)  # initial: an empty dim
    e = np.exp(shifted)
    return e / _sum_reduce(e, axis, None, None, True)


def _log_softmax_forward(a, dim):
    axis = _axis(a, dim)
    shifted = np.asarray(a, order="C") - _max_reduce(a, axis, None, None, True, -np.inf)
    return shifted - np.log(_sum_reduce(np.exp(shifted), axis, None, None, True))


relu = defop("relu", ("self",), _relu, "ReluBackward0",
             public=("function", "method"),
             meta=elementwise(unchanged), kind="elementwise", recompute=True, lower=lambda self: scalar.max(self, 0.0),
             # the gradient stops where the result is <= 0, and so passes at NaN, as in PyTorch
             self=lambda grad, result: where(result <= 0.0, 0.0, grad),
             jvp=lambda self_t, result: where(result <= 0.0, 0.0, self_t))

_gelu = defop("gelu", ("self",), floating_forward(_gelu_forward), "GeluBackward0",
              meta=elementwise(floating), kind="elementwise", lower=_gelu_lower,
              self=_gelu_grad,
              jvp=lambda self_t, self, approximate: _gelu_grad(self_t, self, approximate))

_softplus = defop("softplus", ("self",), _softplus_forward, "SoftplusBackward0",
                  meta=elementwise(unchanged), kind="elementwise", lower=_softplus_lower,
                  self=lambda grad, self, beta, threshold:
                      where(self * beta > threshold, grad, grad * (self * beta).sigmoid()),
                  jvp=lambda self_t, self, beta, threshold:
                      where(self * beta > threshold, self_t, self_t * (self * beta).sigmoid()))


def _softmax_backward_forward(grad_output, output, dim):
    dtype = np.result_type(grad_output, output)
    total = _sum_reduce(grad_output * output, _axis(output, dim), None, None, True)
    return (output * (grad_output - total)).astype(dtype, copy=False)


def _log_softmax_backward_forward(grad_output, output, dim):
    dtype = np.result_type(grad_output, output)
    total = _sum_reduce(grad_output, _axis(output, dim), None, None, True)
    return (grad_output - np.exp(output) * total).astype(dtype, copy=False)


def _softmax_backward_in_output(c, grad_output, output, dim, transposed):
    """The derivative of ``y * (g - sum(g * y))`` in y applied to ``c``: ``c * (g - sum(g * y))`` less
    ``g * sum(c * y)`` (its VJP, ``transposed``) or ``y * sum(g * c)`` (its JVP)."""
    rest = grad_output * (c * output).sum(dim, keepdim=True) if transposed else \
        output * (grad_output * c).sum(dim, keepdim=True)
    return c * (grad_output - (grad_output * output).sum(dim, keepdim=True)) - rest


# softmax's Jacobian is symmetric, so its JVP is its backward formula; log_softmax's is not. Their
# backwards are ops of their own, as PyTorch's ``_softmax_backward_data`` and
# ``_log_softmax_backward_data``: a kernel runs each as one loop over the rows that sums a row and
# writes its gradient while the row is in cache, where the formula as four ops is a row reduction and
# an elementwise loop, each over the whole array.
_softmax = defop("softmax", ("self",), floating_forward(_softmax_forward), "SoftmaxBackward0",
                meta=elementwise(floating), lower=intrinsic("softmax"),
                self=lambda grad, result, dim: _softmax_backward(grad, result, dim=dim),
                jvp=lambda self_t, result, dim: _softmax_backward(self_t, result, dim=dim))

_log_softmax = defop("log_softmax", ("self",), floating_forward(_log_softmax_forward), "LogSoftmaxBackward0",
                        meta=elementwise(floating), lower=intrinsic("log_softmax"),
                        self=lambda grad, result, dim: _log_softmax_backward(grad, result, dim=dim),
                        jvp=lambda self_t, result, dim: self_t - (result.exp() * self_t).sum(dim, keepdim=True))

# y * (g - sum(g * y)) is linear in g, with softmax's symmetric Jacobian: its derivative in g is itself.
_softmax_backward = defop(
    "softmax_backward", ("grad_output", "output"), _softmax_backward_forward, "SoftmaxBackwardDataBackward0",
    meta=elementwise(floating), lower=intrinsic("softmax_backward"),
    grad_output=lambda grad, output, dim: _softmax_backward(grad, output, dim=dim),
    output=lambda grad, grad_output, output, dim: _softmax_backward_in_output(grad, grad_output, output, dim, True),
    jvp=lambda grad_output_t, output_t, grad_output, output, dim: tangent_sum(
        None if grad_output_t is None else _softmax_backward(grad_output_t, output, dim=dim),
        None if output_t is None else _softmax_backward_in_output(output_t, grad_output, output, dim, False)))

# g - exp(y) * sum(g): in g, c - sum(c * exp(y)); in y, -c * exp(y) * sum(g).
_log_softmax_backward = defop(
    "log_softmax_backward", ("grad_output", "output"), _log_softmax_backward_forward,
    "LogSoftmaxBackwardDataBackward0", meta=elementwise(floating), lower=intrinsic("log_softmax_backward"),
    grad_output=lambda grad, output, dim: grad - (grad * output.exp()).sum(dim, keepdim=True),
    output=lambda grad, grad_output, output, dim: -grad * output.exp() * grad_output.sum(dim, keepdim=True),
    jvp=lambda grad_output_t, output_t, grad_output, output, dim: tangent_sum(
        None if grad_output_t is None else _log_softmax_backward(grad_output_t, output, dim=dim),
        None if output_t is None else -output_t * output.exp() * grad_output.sum(dim, keepdim=True)))

# ``softmax`` and ``log_softmax`` (a cross-entropy's first op) call these: their callers, not the general dispatch.
_softmax, _log_softmax = caller(_softmax), caller(_log_softmax)


@public("function")
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` uses the tanh form."""
    return _gelu(input, approximate=approximate)


@public("function")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _softplus(input, beta=beta, threshold=threshold)


@public("function", "method")
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    x = input if dtype is None else input.to(dtype)
    return _softmax(x, dim=wrap_dim(dim, x._data.ndim, "softmax"))


@public("function", "method")
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    x = input if dtype is None else input.to(dtype)
    return _log_softmax(x, dim=wrap_dim(dim, x._data.ndim, "log_softmax"))


# ---- activations PyTorch has in torch.nn.functional: composites of the ops above --------------------
# Each is a few registry ops, so its gradients of any order, forward mode and its lowering come from
# theirs; where a branch of ``where`` could overflow (``expm1`` of a large input) its input is clamped
# first, so that the branch not taken has a zero gradient rather than 0 * inf. At a kink each takes
# PyTorch's gradient: leaky_relu's slope at 0, elu's alpha, hardtanh's zero at both limits.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def silu(input: Tensor) -> Tensor:
    """``x * sigmoid(x)``, the swish."""
    return input * input.sigmoid()


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x``; the gradient at 0 is ``negative_slope``."""
    return where(input > 0.0, input, input * negative_slope)


def _exponential_linear(input: Tensor, alpha: float, input_scale: float) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * expm1(x * input_scale)``: elu, and celu and selu from it."""
    negative = input.clamp(max=0.0) * input_scale
    return where(input > 0.0, input, negative.expm1() * alpha)


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _exponential_linear(input, alpha, 1.0)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * expm1(x / alpha))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _exponential_linear(input, alpha, 1.0 / alpha)


def selu(input: Tensor) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    return _exponential_linear(input, _SELU_ALPHA, 1.0) * _SELU_SCALE


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``input`` limited to ``[min_val, max_val]``; unlike ``clamp``'s, the gradient is zero at the
    limits themselves, as PyTorch's ``hardtanh_backward`` has it."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return where(input <= min_val, min_val, where(input >= max_val, max_val, input))


def relu6(input: Tensor) -> Tensor:
    """``hardtanh(x, 0, 6)``, with its zero gradient at 0 and at 6."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Tensor) -> Tensor:
    """``x / 6 + 1 / 2`` between -3 and 3, 0 below, 1 above; the gradient is zero at +-3."""
    return where(input <= -3.0, 0.0, where(input >= 3.0, 1.0, input / 6.0 + 0.5))


def hardswish(input: Tensor) -> Tensor:
    """``x * (x + 3) / 6`` between -3 and 3, 0 below, ``x`` above (PyTorch's gradients at +-3: 0 and 1).
    The middle branch is computed on the input clamped to [-3, 3], so that at +-inf its (untaken)
    gradient is 0, not ``0 * inf``, NaN."""
    middle = input.clamp(-3.0, 3.0)
    return where(input <= -3.0, 0.0, where(input >= 3.0, input, middle * (middle + 3.0) / 6.0))


def mish(input: Tensor) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return input * softplus(input).tanh()


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))`` as ``min(x, 0) - log1p(exp(-|x|))``, which never overflows; at 0 the
    minimum's tie gives half its gradient, and the second term none (``abs``'s is 0 there): 1/2."""
    return minimum(input, 0.0) - (-input.abs()).exp().log1p()


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1.0)


@public("function", "method")
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0; a NaN stays NaN (the test is "within ``lambd``")."""
    return where(input.abs() <= lambd, 0.0, input)


@public("function", "method")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` holds one slope, or one per channel
    (dimension 1; an input of fewer dimensions has one channel, as in PyTorch). No promotion, as
    PyTorch's: a float32 layer's slope with a float64 input is an error, not a float64 result."""
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype} and {weight.dtype}: convert "
                           f"the input or the weight (PReLU().to(dtype)) to one dtype")
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.dim() != 1 or weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        weight = weight.reshape((-1,) + (1,) * (input.dim() - 2))
    elif weight.dim() > input.dim():
        weight = weight.reshape(())
    # the slope multiplies the non-positive part only: ``weight * input`` at a positive inf was inf, and
    # the untaken branch's weight gradient ``0 * inf``, NaN (PyTorch's sums g * x over x <= 0 alone)
    return where(input > 0, input, weight * where(input > 0, 0.0, input))
