"""Activation functions and (log-)softmax."""
from __future__ import annotations

import math

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from .arithmetic import where
from .math_functions import exp_source, floating_forward, tanh_source
from .meta_rules import elementwise, floating, unchanged
from .registry import defop
from .special import erf_ufunc

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


def _relu(a):
    return np.maximum(a, 0).astype(a.dtype, copy=False)


def _gelu_forward(a, approximate):
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


def _gelu_lower(self, approximate, T, out):
    if approximate == "tanh":
        inner = f"{T}({_SQRT_2_OVER_PI!r}) * ({self} + {T}({_GELU_CUBIC!r}) * {self} * {self} * {self})"
        return f"({T}(0.5) * {self} * ({T}(1.0) + {tanh_source(inner, T)}))"
    return f"({T}(0.5) * {self} * ({T}(1.0) + math.erf({self} * {T}({_INV_SQRT_2!r}))))"


def _softplus_lower(self, beta, threshold, T, out):
    scaled = f"({self} * {beta})"  # log(1 + e^s) as max(s, 0) + log1p(e^-|s|), which never overflows
    soft = f"(max({scaled}, {T}(0.0)) + math.log1p(math.exp(-abs({scaled})))) / {beta}"
    return f"({self} if {scaled} > {threshold} else {soft})"


def _softmax_lower(ctx, log=False):
    """A loop over the rows along ``dim`` of the input seen as (outer, n, inner): the row's max; the
    exps written into the output, in a loop of their own (a float32 ``exp`` vectorizes, and a running
    sum beside it would keep the loop scalar); their sum; then the output scaled by 1 / sum (softmax)
    or overwritten with ``x - max - log(sum)`` (log_softmax). One ``exp`` per element: on 2048x2048
    float32 softmax went from 37 to 15 ms."""
    rows, T = ctx.rows(ctx.attrs["dim"]), ctx.T
    a, o, p, q, k, peak, total = (f"{ctx.out}_{s}" for s in ("in", "3d", "p", "q", "k", "peak", "total"))
    value = f"{a}[{p}, {k}, {q}] - {peak}"
    finish = ([f"        {total} = math.log({total})",
               f"        for {k} in range({a}.shape[1]):",
               f"            {o}[{p}, {k}, {q}] = {value} - {total}"] if log else
              [f"        {total} = {T}(1.0) / {total}",
               f"        for {k} in range({a}.shape[1]):",
               f"            {o}[{p}, {k}, {q}] *= {total}"])
    return [f"{a} = {ctx.contiguous(ctx.self)}.reshape({rows})",
            f"{o} = {ctx.out}.reshape({rows})",
            f"for {p} in range({a}.shape[0]):",
            f"    for {q} in range({a}.shape[2]):",
            f"        {peak} = {a}[{p}, 0, {q}]",
            f"        for {k} in range(1, {a}.shape[1]):",
            f"            {peak} = max({peak}, {a}[{p}, {k}, {q}])",
            f"        for {k} in range({a}.shape[1]):",
            f"            {o}[{p}, {k}, {q}] = {exp_source(value, T)}",
            f"        {total} = {T}(0.0)",
            f"        for {k} in range({a}.shape[1]):",
            f"            {total} += {o}[{p}, {k}, {q}]",
            *finish]


def _axis(a, dim):
    """numpy's axis for ``dim``: a 0-d tensor takes dim 0 or -1, the whole of it, as in PyTorch."""
    return dim if a.ndim else None


def _softmax_forward(a, dim):
    shifted = a - a.max(axis=_axis(a, dim), keepdims=True, initial=-np.inf)  # initial: an empty dim
    e = np.exp(shifted)
    return e / e.sum(axis=_axis(a, dim), keepdims=True)


def _log_softmax_forward(a, dim):
    shifted = a - a.max(axis=_axis(a, dim), keepdims=True, initial=-np.inf)
    return shifted - np.log(np.exp(shifted).sum(axis=_axis(a, dim), keepdims=True))


relu = defop("relu", ("self",), _relu, "ReluBackward0", meta=elementwise(unchanged), kind="elementwise", recompute=True, lower="max({self}, {T}(0.0))",
             # the gradient stops where the result is <= 0, and so passes at NaN, as in PyTorch
             self=lambda grad, result: where(result <= 0.0, 0.0, grad),
             jvp=lambda self_t, result: where(result <= 0.0, 0.0, self_t))

_gelu = defop("gelu", ("self",), floating_forward(_gelu_forward),
             "GeluBackward0", self=_gelu_grad, meta=elementwise(floating), kind="elementwise", lower=_gelu_lower,
             jvp=lambda self_t, self, approximate: _gelu_grad(self_t, self, approximate))

_softplus = defop("softplus", ("self",), _softplus_forward, "SoftplusBackward0",
                  meta=elementwise(unchanged), kind="elementwise", lower=_softplus_lower,
                 self=lambda grad, self, beta, threshold:
                     where(self * beta > threshold, grad, grad * (self * beta).sigmoid()),
                 jvp=lambda self_t, self, beta, threshold:
                     where(self * beta > threshold, self_t, self_t * (self * beta).sigmoid()))

# softmax's Jacobian is symmetric, so its JVP is its backward formula; log_softmax's is not.
_softmax = defop("softmax", ("self",), floating_forward(_softmax_forward), "SoftmaxBackward0",
                meta=elementwise(floating), lower=_softmax_lower,
                self=lambda grad, result, dim: result * (grad - (grad * result).sum(dim, keepdim=True)),
                jvp=lambda self_t, result, dim: result * (self_t - (self_t * result).sum(dim, keepdim=True)))

_log_softmax = defop("log_softmax", ("self",), floating_forward(_log_softmax_forward), "LogSoftmaxBackward0",
                        meta=elementwise(floating), lower=lambda ctx: _softmax_lower(ctx, log=True),
                        self=lambda grad, result, dim: grad - result.exp() * grad.sum(dim, keepdim=True),
                        jvp=lambda self_t, result, dim: self_t - (result.exp() * self_t).sum(dim, keepdim=True))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` uses the tanh form."""
    return _gelu(input, approximate=approximate)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _softplus(input, beta=beta, threshold=threshold)


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    x = input if dtype is None else input.to(dtype)
    return _softmax(x, dim=wrap_dim(dim, x._data.ndim, "softmax"))


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    x = input if dtype is None else input.to(dtype)
    return _log_softmax(x, dim=wrap_dim(dim, x._data.ndim, "log_softmax"))
