"""Elementwise transcendental functions. Integer inputs compute in the default float dtype, as in
PyTorch."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from . import scalar
from .meta_rules import elementwise, floating
from .registry import defop
from .special import erf_ufunc


def floating_forward(fn):
    """The forward of a unary float op; integer inputs are cast to the default float dtype.

    Outside an op's domain numpy returns nan/inf as PyTorch does, but also warns: silencing that with
    ``np.errstate`` would cost more than the op itself on small tensors."""
    def forward(a, **attrs):
        if a.dtype.kind != "f":
            a = a.astype(dtypes.get_default_dtype().numpy)
        return fn(a, **attrs)
    forward.specialize = lambda a, **attrs: fn if a.dtype.kind == "f" else None  # see arithmetic._binary
    return forward


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _sigmoid(a):
    # exp(-|a|) never overflows; the two branches give 1/(1+e^-a) and e^a/(1+e^a).
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(a.dtype, copy=False)


def _sigmoid_lower(self):
    """The forward's two branches: 1/(1+e^-x) overflows to 0 below about -88 in float32, where the
    result is a subnormal number that a log (binary_cross_entropy's) still reads."""
    e = scalar.exp(-scalar.abs(self))
    inverse = 1.0 / (1.0 + e)
    return scalar.where(self >= 0.0, inverse, e * inverse)


exp = defop("exp", ("self",), floating_forward(np.exp), "ExpBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.exp,
            self=lambda grad, result: grad * result,
            jvp=lambda self_t, result: self_t * result)

log = defop("log", ("self",), floating_forward(np.log), "LogBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.log,
            self=lambda grad, self: grad / self,
            jvp=lambda self_t, self: self_t / self)

log1p = defop("log1p", ("self",), floating_forward(np.log1p), "Log1PBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=scalar.log1p,
              self=lambda grad, self: grad / (self + 1.0),
              jvp=lambda self_t, self: self_t / (self + 1.0))

expm1 = defop("expm1", ("self",), floating_forward(np.expm1), "Expm1Backward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=scalar.expm1,
              self=lambda grad, result: grad * (result + 1.0),
              jvp=lambda self_t, result: self_t * (result + 1.0))

sqrt = defop("sqrt", ("self",), floating_forward(np.sqrt), "SqrtBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=scalar.sqrt,
             self=lambda grad, result: grad / (result * 2.0),
             jvp=lambda self_t, result: self_t / (result * 2.0))

rsqrt = defop("rsqrt", ("self",), floating_forward(_rsqrt), "RsqrtBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=lambda self: 1.0 / scalar.sqrt(self),
              self=lambda grad, result: grad * result * result * result * -0.5,
              jvp=lambda self_t, result: self_t * result * result * result * -0.5)

sin = defop("sin", ("self",), floating_forward(np.sin), "SinBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.sin,
            self=lambda grad, self: grad * self.cos(),
            jvp=lambda self_t, self: self_t * self.cos())

cos = defop("cos", ("self",), floating_forward(np.cos), "CosBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.cos,
            self=lambda grad, self: -grad * self.sin(),
            jvp=lambda self_t, self: -self_t * self.sin())

tan = defop("tan", ("self",), floating_forward(np.tan), "TanBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.tan,
            self=lambda grad, result: grad * (result * result + 1.0),
            jvp=lambda self_t, result: self_t * (result * result + 1.0))

tanh = defop("tanh", ("self",), floating_forward(np.tanh), "TanhBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=scalar.tanh,
             self=lambda grad, result: grad * (1.0 - result * result),
             jvp=lambda self_t, result: self_t * (1.0 - result * result))

sigmoid = defop("sigmoid", ("self",), floating_forward(_sigmoid), "SigmoidBackward0",
                public=("function", "method"),
                meta=elementwise(floating), kind="elementwise", lower=_sigmoid_lower,
                self=lambda grad, result: grad * result * (1.0 - result),
                jvp=lambda self_t, result: self_t * result * (1.0 - result))

erf = defop("erf", ("self",), floating_forward(erf_ufunc), "ErfBackward0",
            public=("function", "method"),
            meta=elementwise(floating), kind="elementwise", lower=scalar.erf,
            self=lambda grad, self: grad * (-(self * self)).exp() * (2.0 / math.sqrt(math.pi)),
            jvp=lambda self_t, self: self_t * (-(self * self)).exp() * (2.0 / math.sqrt(math.pi)))
