"""Elementwise transcendental functions. Integer inputs compute in the default float dtype, as in
PyTorch."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes
from ..autograd.forward_ad import tangent_sum
from ..tensor import Tensor
from . import arithmetic, scalar
from .arithmetic import where
from .meta_rules import elementwise, floating, promoted, scalar_type_name
from .public import public
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


# ---- the hyperbolic functions and their inverses, and other bases ------------------------------------
# Eager values are numpy's (the C library's); a compiled loop writes each as the identity below in
# exp/log/sqrt/atan, the lowering vocabulary's functions (it has no sinh of its own), within an ulp or two.
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_LARGE = 2.0 ** 28   # where asinh(x) and acosh(x) are log(2|x|) to the last bit


def _sinh_lower(self):
    a = scalar.abs(self)
    # Beyond 20, e^-|x| is below e^|x|'s last bit: e^(|x| - 1) * e/2, whose argument is exact (|x| - 1 for
    # |x| >= 1), is finite up to sinh's own overflow (710.4 in float64), where expm1(x) is not (709.8)
    large = scalar.exp(a - 1.0) * (math.e / 2.0)
    near = (scalar.expm1(self) - scalar.expm1(-self)) * 0.5   # accurate near 0, where exp(x) - exp(-x) is not
    return scalar.where(a > 20.0, scalar.where(self < 0.0, -large, large), near)


def _cosh_lower(self):
    a = scalar.abs(self)   # e^|x| / 2 as e^(|x| - ln 2): no overflow below cosh's own
    return scalar.exp(a - _LN2) + scalar.exp(-a - _LN2)


def _asinh_lower(self):
    # sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation for negative or small x; beyond 2^28,
    # where x^2 may overflow, log(2|x|) (the next term, 1 / 4x^2, is below its last bit); x itself at +-0
    a = scalar.abs(self)
    small = scalar.log1p(a + a * a / (1.0 + scalar.sqrt(1.0 + a * a)))
    magnitude = scalar.where(a > _LARGE, scalar.log(a) + _LN2, small)
    return scalar.where(self == 0.0, self, scalar.where(self < 0.0, -magnitude, magnitude))


def _acosh_lower(self):
    # log(x + sqrt(x - 1) sqrt(x + 1)): NaN below 1 as the square roots are (sqrt(x^2 - 1) overflowed to
    # inf at -1e300), no cancellation near 1; log(2x) beyond 2^28
    return scalar.where(self > _LARGE, scalar.log(self) + _LN2,
                        scalar.log(self + scalar.sqrt(self - 1.0) * scalar.sqrt(self + 1.0)))


sinh = defop("sinh", ("self",), floating_forward(np.sinh), "SinhBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=_sinh_lower,
             self=lambda grad, self: grad * self.cosh(),
             jvp=lambda self_t, self: self_t * self.cosh())

cosh = defop("cosh", ("self",), floating_forward(np.cosh), "CoshBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=_cosh_lower,
             self=lambda grad, self: grad * self.sinh(),
             jvp=lambda self_t, self: self_t * self.sinh())

asinh = defop("asinh", ("self",), floating_forward(np.arcsinh), "AsinhBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=_asinh_lower,
              self=lambda grad, self: grad * (self * self + 1.0).rsqrt(),
              jvp=lambda self_t, self: self_t * (self * self + 1.0).rsqrt())

acosh = defop("acosh", ("self",), floating_forward(np.arccosh), "AcoshBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise",
              lower=_acosh_lower,
              self=lambda grad, self: grad * (self * self - 1.0).rsqrt(),
              jvp=lambda self_t, self: self_t * (self * self - 1.0).rsqrt())

atanh = defop("atanh", ("self",), floating_forward(np.arctanh), "AtanhBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise",
              lower=lambda self: 0.5 * scalar.log1p(2.0 * self / (1.0 - self)),
              self=lambda grad, self: grad / (1.0 - self * self),
              jvp=lambda self_t, self: self_t / (1.0 - self * self))

def _atan2_lower(self, other):
    """atan(y / x), moved by pi into the quadrant of (x, y), and C's atan2 (numpy's, PyTorch's) where
    y / x cannot tell: on the x axis (y = +-0) +-0 or +-pi by the sides of both, a negative zero
    included (``1 / v < 0``); on the y axis +-pi/2; both infinite, where y / x is NaN, +-pi/4 or
    +-3pi/4; NaN for a NaN."""
    y, x = scalar.cast(self), scalar.cast(other)
    base = scalar.atan(y / x)
    half_turn = scalar.expr(math.pi)   # negated as an expression: a float32 cast of a positive literal
    quarter_turn, corner = scalar.expr(0.5 * math.pi), scalar.expr(0.25 * math.pi)
    y_negative = scalar.logical_or(y < 0.0, scalar.logical_and(y == 0.0, 1.0 / y < 0.0))
    x_negative = scalar.logical_or(x < 0.0, scalar.logical_and(x == 0.0, 1.0 / x < 0.0))
    on_x_axis = scalar.where(x_negative, scalar.where(y_negative, -half_turn, half_turn), y)
    on_y_axis = scalar.where(y_negative, -quarter_turn, quarter_turn)
    diagonal = scalar.where(x_negative, 3.0 * corner, corner)
    both_infinite = scalar.where(y_negative, -diagonal, diagonal)
    general = scalar.where(x_negative, scalar.where(y_negative, base - half_turn, base + half_turn), base)
    return scalar.where(scalar.logical_or(x != x, y != y), x + y,
                        scalar.where(y == 0.0, on_x_axis, scalar.where(x == 0.0, on_y_axis,
                                                                     scalar.where(base != base, both_infinite, general))))


asin = defop("asin", ("self",), floating_forward(np.arcsin), "AsinBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise",
             lower=lambda self: scalar.atan(self / scalar.sqrt((1.0 - self) * (1.0 + self))),
             self=lambda grad, self: grad * (1.0 - self * self).rsqrt(),
             jvp=lambda self_t, self: self_t * (1.0 - self * self).rsqrt())

acos = defop("acos", ("self",), floating_forward(np.arccos), "AcosBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise",
             lower=lambda self: 2.0 * scalar.atan(scalar.sqrt((1.0 - self) / (1.0 + self))),
             self=lambda grad, self: -grad * (1.0 - self * self).rsqrt(),
             jvp=lambda self_t, self: -self_t * (1.0 - self * self).rsqrt())

atan = defop("atan", ("self",), floating_forward(np.arctan), "AtanBackward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=scalar.atan,
             self=lambda grad, self: grad / (self * self + 1.0),
             jvp=lambda self_t, self: self_t / (self * self + 1.0))

def _squared_radius(self, other):
    """``self^2 + other^2``, taken as 1 at the origin: the gradient there is 0 (its numerators are 0),
    as PyTorch's atan2_backward makes it, not 0 / 0."""
    squared = self * self + other * other
    return where(squared == 0.0, 1.0, squared)


atan2 = defop("atan2", ("self", "other"), arithmetic._binary(np.arctan2, floating=True), "Atan2Backward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=_atan2_lower,
              self=lambda grad, self, other: grad * other / _squared_radius(self, other),
              other=lambda grad, self, other: -grad * self / _squared_radius(self, other),
              jvp=lambda self_t, other_t, self, other: tangent_sum(
                  None if self_t is None else self_t * other / _squared_radius(self, other),
                  None if other_t is None else -other_t * self / _squared_radius(self, other)))


def _hypot_forward(a, b):
    if np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub":
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{scalar_type_name(np.asarray(a).dtype)}': hypot "
                                  "takes a floating tensor; convert one input first, e.g. with .float()")
    return _floating_hypot(a, b)


_floating_hypot = arithmetic._binary(np.hypot, floating=True)
_hypot_forward.specialize = _floating_hypot.specialize


def _hypot_lower(self, other):
    """``big * sqrt(1 + (small / big)**2)``, which cannot overflow; infinite where either input is
    (even with a NaN, as C's hypot)."""
    a, b = scalar.abs(scalar.cast(self)), scalar.abs(scalar.cast(other))
    first_bigger = a >= b
    big, small = scalar.where(first_bigger, a, b), scalar.where(first_bigger, b, a)
    ratio = small / scalar.where(scalar.logical_or(big == 0.0, scalar.logical_not(scalar.isfinite(big))), 1.0, big)
    a_infinite = scalar.logical_and(scalar.logical_not(scalar.isfinite(a)), a == a)
    b_infinite = scalar.logical_and(scalar.logical_not(scalar.isfinite(b)), b == b)
    return scalar.where(a_infinite, a, scalar.where(b_infinite, b, big * scalar.sqrt(ratio * ratio + 1.0)))


# PyTorch's hypot_backward: NaN at the origin (0 / 0), as there
hypot = defop("hypot", ("self", "other"), _hypot_forward, "HypotBackward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=_hypot_lower,
              self=lambda grad, self, other, result: grad * self / result,
              other=lambda grad, self, other, result: grad * other / result,
              jvp=lambda self_t, other_t, self, other, result: tangent_sum(
                  None if self_t is None else self_t * self / result,
                  None if other_t is None else other_t * other / result))


def _copysign_lower(self, other):
    """``|self|`` with ``other``'s sign, a zero's read through ``1 / other < 0``. A NaN's sign bit
    cannot be read in the lowering's vocabulary: a compiled ``copysign(x, -nan)`` is ``+|x|``."""
    sign_from = scalar.cast(other)
    negative = scalar.logical_or(sign_from < 0.0, scalar.logical_and(sign_from == 0.0, 1.0 / sign_from < 0.0))
    magnitude = scalar.abs(scalar.cast(self))
    return scalar.where(negative, -magnitude, magnitude)


def _copysign_slope(self, result):
    """``result / self`` (+-1), 0 where ``self`` is 0, as PyTorch's copysign_tensor_self_backward (NaN
    at an infinite ``self``, as there); the division is kept off 0 so the second derivative is finite."""
    zero = self == 0.0
    return where(zero, 0.0, result / where(zero, 1.0, self))


# PyTorch's gradient in ``other`` is zeros of its shape (``grad * 0``)
copysign = defop("copysign", ("self", "other"), arithmetic._binary(np.copysign, floating=True),
                 lambda args, attrs: "CopysignBackward0" if hasattr(args[1], "_data") else "CopysignBackward1",
                 public=("function", "method"),
                 meta=elementwise(floating), kind="elementwise", lower=_copysign_lower,
                 self=lambda grad, self, result: grad * _copysign_slope(self, result),
                 other=lambda grad: grad * 0.0,
                 jvp=lambda self_t, other_t, self, result: tangent_sum(
                     None if self_t is None else self_t * _copysign_slope(self, result),
                     None if other_t is None else other_t * 0.0))


log2 = defop("log2", ("self",), floating_forward(np.log2), "Log2Backward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=lambda self: scalar.log(self) * (1.0 / _LN2),
             self=lambda grad, self: grad / (self * _LN2),
             jvp=lambda self_t, self: self_t / (self * _LN2))

log10 = defop("log10", ("self",), floating_forward(np.log10), "Log10Backward0",
              public=("function", "method"),
              meta=elementwise(floating), kind="elementwise", lower=lambda self: scalar.log(self) * (1.0 / _LN10),
              self=lambda grad, self: grad / (self * _LN10),
              jvp=lambda self_t, self: self_t / (self * _LN10))

exp2 = defop("exp2", ("self",), floating_forward(np.exp2), "Exp2Backward0",
             public=("function", "method"),
             meta=elementwise(floating), kind="elementwise", lower=lambda self: scalar.exp2(self),
             self=lambda grad, result: grad * result * _LN2,
             jvp=lambda self_t, result: self_t * result * _LN2)


# ---- rounding to an integral value -------------------------------------------------------------------
# Their gradient is zero everywhere, as PyTorch's (FloorBackward0... return zeros, and the result
# requires grad). The lowering floors with ``x // 1.0`` (the vocabulary has no floor), which is NaN
# at +-inf: the infinities and NaN pass through as they are. The public wrappers return a copy of an
# integer tensor, as PyTorch does, so the ops only see floats.
def _floor_lower(self):
    return scalar.where(scalar.isfinite(self), self // 1.0, self)


def _ceil_lower(self):
    return scalar.where(scalar.isfinite(self), -((-self) // 1.0), self)


def _round_lower(self):
    """Half to even, as numpy and PyTorch round: ``x - floor(x)`` is exact (Sterbenz's lemma, and
    where it is not, in (-1, -0.5), a tie misread gives the same answer); a tie goes to the even one.
    A result of zero is +0 where the eager value may be -0 (equal as numbers)."""
    low = self // 1.0
    above = self - low
    even = low % 2.0 == 0.0
    rounded = scalar.where(above > 0.5, low + 1.0,
                           scalar.where(above < 0.5, low, scalar.where(even, low, low + 1.0)))
    return scalar.where(scalar.isfinite(self), rounded, self)


def _trunc_lower(self):
    return scalar.where(self < 0.0, _ceil_lower(self), _floor_lower(self))


def _rounding(name: str, fn, node: str, lower):
    return defop(name, ("self",), fn, node,
                 meta=elementwise(floating), kind="elementwise", lower=lower,
                 self=lambda grad: grad * 0.0,
                 jvp=lambda self_t: self_t * 0.0)


_floor = _rounding("floor", np.floor, "FloorBackward0", _floor_lower)
_ceil = _rounding("ceil", np.ceil, "CeilBackward0", _ceil_lower)
_round = _rounding("round", np.round, "RoundBackward0", _round_lower)
_trunc = _rounding("trunc", np.trunc, "TruncBackward0", _trunc_lower)


def _integral(op, input: Tensor) -> Tensor:
    """An integer or bool tensor is integral already: a copy of it, as in PyTorch."""
    return input.clone() if input._data.dtype.kind in "iub" else op(input)


@public("function", "method")
def floor(input: Tensor) -> Tensor:
    """The largest integral value <= each element; the gradient is zero."""
    return _integral(_floor, input)


@public("function", "method")
def ceil(input: Tensor) -> Tensor:
    """The smallest integral value >= each element; the gradient is zero."""
    return _integral(_ceil, input)


@public("function", "method")
def trunc(input: Tensor) -> Tensor:
    """Each element rounded toward zero; the gradient is zero."""
    return _integral(_trunc, input)


@public("function", "method")
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Each element rounded to the nearest integral value, halves to even (``round(2.5) == 2``); with
    ``decimals``, to that many decimal places, scaled by 10**decimals as PyTorch does (so with its
    rounding error: ``round(x, decimals=2)`` is the nearest float to a multiple of 0.01)."""
    if decimals == 0:
        return _integral(_round, input)
    if input._data.dtype.kind in "iub":
        raise RuntimeError(f"round_cpu with decimals is not implemented for '{input._data.dtype.name}' "
                           "tensors: convert to a floating dtype first")
    if input._data.dtype == np.float16:   # scaled in float32, as PyTorch's: 65000 * 10 overflowed float16
        return round(input.float(), decimals=decimals).to(np.float16)
    scale = 10.0 ** builtins.abs(decimals)
    if decimals > 0:
        return _round(input * scale) / scale
    return _round(input / scale) * scale


@public("function", "method")
def fix(input: Tensor) -> Tensor:
    """``trunc``'s other name, as in PyTorch."""
    return trunc(input)


@public("function", "method")
def frac(input: Tensor) -> Tensor:
    """``input - trunc(input)``, with the sign of ``input``; the gradient passes unchanged."""
    if input._data.dtype.kind in "iub":
        raise RuntimeError(f"frac: not implemented for '{input._data.dtype.name}' tensors (an integer has "
                           "no fractional part): convert to a floating dtype first")
    return input - _trunc(input)


# ---- arithmetic that PyTorch names: composites of the ops above, or fmod ------------------------------
def _fmod_lower(self, other):
    """C's fmod (the remainder with the sign of ``self``), exact, on both operands in the compute dtype."""
    return scalar.fmod(scalar.cast(self), scalar.cast(other))


_FMOD = arithmetic._binary(np.fmod)  # numpy's fmod on operands promoted as PyTorch promotes them


def _fmod_forward(a, b):
    out = _FMOD(a, b)
    if out.dtype.kind in "iub" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    return out


fmod = defop("fmod", ("self", "other"), _fmod_forward,
             lambda args, attrs: "FmodBackward1" if isinstance(args[1], Tensor) else "FmodBackward0",
             public=("function", "method"),
             meta=elementwise(promoted), kind="elementwise", lower=_fmod_lower,
             self=lambda grad: grad,
             other=lambda grad, self, other: -grad * trunc(self / other),
             jvp=lambda self_t, other_t, self, other: tangent_sum(
                 self_t, None if other_t is None else -other_t * trunc(self / other)))


@public("function", "method")
def square(input: Tensor) -> Tensor:
    """``input ** 2`` (PyTorch's ``PowBackward0`` too); an integer tensor stays one."""
    return arithmetic.pow(input, 2)


@public("function", "method")
def reciprocal(input: Tensor) -> Tensor:
    """``1 / input``, a float for an integer tensor, as in PyTorch."""
    return arithmetic.div(1.0, input)


@public("function", "method")
def clamp_min(input: Tensor, min: float) -> Tensor:  # noqa: A002 - PyTorch's argument name
    return arithmetic.clamp(input, min=min)


@public("function", "method")
def clamp_max(input: Tensor, max: float) -> Tensor:  # noqa: A002 - PyTorch's argument name
    return arithmetic.clamp(input, max=max)


@public("function", "method")
def isfinite(input: Tensor) -> Tensor:
    """Where an element is neither infinite nor NaN (every element of an integer tensor)."""
    return arithmetic.logical_not(arithmetic.logical_or(arithmetic.isnan(input), arithmetic.isinf(input)))


@public("function", "method")
def lerp(input: Tensor, end: Tensor, weight: float | Tensor) -> Tensor:
    """``input + weight * (end - input)``, written as PyTorch writes it so that ``weight == 1`` gives
    ``end`` exactly: from ``end`` backwards where ``weight >= 0.5``."""
    if isinstance(weight, Tensor):
        return arithmetic.where(weight.abs() < 0.5, input + weight * (end - input),
                                end - (end - input) * (1.0 - weight))
    if builtins.abs(weight) < 0.5:
        return input + (end - input) * weight
    return end - (end - input) * (1.0 - weight)


@public("function", "method")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default 0 and the dtype's
    largest and lowest finite values); the gradient is zero where an element was replaced."""
    dtype = input._data.dtype
    if dtype.kind != "f":
        return input.clone()
    info = np.finfo(dtype)
    high = float(info.max) if posinf is None else posinf
    low = float(info.min) if neginf is None else neginf
    out = arithmetic.where(arithmetic.isnan(input), nan, input)
    out = arithmetic.where(input == math.inf, high, out)
    return arithmetic.where(input == -math.inf, low, out)
