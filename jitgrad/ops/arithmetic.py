"""Elementwise arithmetic and comparisons, with broadcasting and PyTorch's type promotion."""
from __future__ import annotations

import math
import operator
from typing import Callable

import numpy as np

from .. import dtypes
from ..autograd.forward_ad import tangent_sum
from ..shapes import broadcast_shapes, preserved_copy
from ..tensor import Tensor
from . import scalar
from .meta_rules import TensorMeta, boolean, elementwise, floating, promoted, unchanged
from .registry import OpDef, defop
from .scalar import RESULT, Expr, cast, truth


def _promote(a, b):
    """Casts the operands of a binary op to PyTorch's result dtype (numpy's can differ)."""
    if _same_type(a, b):
        return a, b
    dtype = dtypes.result_type(a, b)
    return _cast(a, dtype), _cast(b, dtype)


# float32 and float64 (numpy's dtype chars): numpy computes them with a Python number as PyTorch does.
# float16 ("e") is left out: numpy casts the number to float16 first (1e5 becomes inf), PyTorch keeps it.
_FULL_FLOATS = "fd"


def _same_type(a, b) -> bool:
    """Whether numpy computes ``a op b`` in PyTorch's result dtype as they are: arrays of one dtype, or
    a float32/float64 array and a Python number."""
    if type(a) is np.ndarray:
        if type(b) is np.ndarray:
            return a.dtype == b.dtype
        return type(b) in (float, int) and a.dtype.char in _FULL_FLOATS
    return type(b) is np.ndarray and type(a) in (float, int) and b.dtype.char in _FULL_FLOATS


def _half_with_number(fn, a, b):
    """``fn(a, b)`` of a float16 array and a Python number, or None for other operands. PyTorch keeps
    the number at full precision and computes in float32 (``x * 1e5`` of 1e-3 in float16 is 100, and
    numpy's is inf: it casts 1e5 to float16 first), then rounds the result to float16; a comparison's
    bools stay bools (``x > 0.5`` of a float16 ``x`` was a float16 tensor of 0s and 1s)."""
    if type(b) in (float, int) and type(a) is np.ndarray and a.dtype == np.float16 or \
            type(a) in (float, int) and type(b) is np.ndarray and b.dtype == np.float16:
        out = fn(_cast(a, np.dtype(np.float32)), _cast(b, np.dtype(np.float32)))
        return out.astype(np.float16) if out.dtype.kind == "f" else out
    return None


def _cast(x, dtype: np.dtype):
    if type(x) is np.ndarray:
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x, dtype=dtype)


def _binary(fn, floating: bool = False):
    """The forward of a binary op; ``floating`` ops (true division) give a float for integer inputs.
    Its ``specialize(a, b)`` tells a staged replay (``staged_backward``) that for operands of these
    types and dtypes the forward is ``fn`` itself."""
    if floating:
        def forward(a, b):
            half = _half_with_number(fn, a, b)
            if half is not None:
                return half
            a, b = _promote(a, b)
            if np.result_type(a, b).kind != "f":
                default = dtypes.get_default_dtype().numpy
                a, b = _cast(a, default), _cast(b, default)
            return fn(a, b)

        def specialize(a, b):
            return fn if _same_type(a, b) and np.result_type(a, b).kind == "f" else None
    else:
        def forward(a, b):
            if type(a) is np.ndarray:  # the calls of a training step: arrays of one dtype, a float and a number
                if type(b) is np.ndarray:
                    if a.dtype is b.dtype:
                        return fn(a, b)
                elif type(b) is float and a.dtype.char in _FULL_FLOATS:
                    return fn(a, b)
            half = _half_with_number(fn, a, b)
            if half is not None:
                return half
            a, b = _promote(a, b)
            return fn(a, b)

        def specialize(a, b):
            return fn if _same_type(a, b) else None
    forward.specialize = specialize
    return forward


def _explain_binary(values: tuple, attrs: dict) -> str | None:
    try:
        broadcast_shapes("", (np.shape(v) for v in values))
    except RuntimeError as error:
        return str(error).split(": ", 1)[1]
    return None


add = defop("add", ("self", "other"), _binary(np.add), "AddBackward0", explain=_explain_binary,
            meta=elementwise(promoted), kind="elementwise", recompute=True, lower=lambda self, other: self + other,
            self=lambda grad: grad,
            other=lambda grad: grad,
            jvp=lambda self_t, other_t: tangent_sum(self_t, other_t))

sub = defop("sub", ("self", "other"), _binary(np.subtract),
            lambda args, attrs: "SubBackward0" if hasattr(args[0], "_data") else "RsubBackward1",
            explain=_explain_binary,
            meta=elementwise(promoted), kind="elementwise", recompute=True, lower=lambda self, other: self - other,
            self=lambda grad: grad,
            other=lambda grad: -grad,
            jvp=lambda self_t, other_t: tangent_sum(self_t, None if other_t is None else -other_t))

mul = defop("mul", ("self", "other"), _binary(np.multiply), "MulBackward0", explain=_explain_binary,
            public=("function", "method"),
            meta=elementwise(promoted), kind="elementwise", recompute=True, lower=lambda self, other: self * other,
            self=lambda grad, other: grad * other,
            other=lambda grad, self: grad * self,
            jvp=lambda self_t, other_t, self, other: tangent_sum(None if self_t is None else self_t * other,
                                                                 None if other_t is None else self * other_t))

div = defop("div", ("self", "other"), _binary(np.true_divide, floating=True), "DivBackward0",
            explain=_explain_binary,
            meta=elementwise(floating), kind="elementwise", recompute=True,
            lower=lambda self, other: cast(self) / cast(other),  # an int divides as the float it promotes to
            self=lambda grad, other: grad / other,
            # (self / other) / other, as PyTorch: other * other overflows first (float16 300 * 300 is inf)
            other=lambda grad, self, other: -grad * (self / other) / other,
            jvp=lambda self_t, other_t, self, other: tangent_sum(
                None if self_t is None else self_t / other,
                None if other_t is None else -other_t * (self / other) / other))

neg = defop("neg", ("self",), np.negative, "NegBackward0",
            public=("function", "method"),
            meta=elementwise(unchanged), kind="elementwise", recompute=True, lower=lambda self: -self,
            self=lambda grad: -grad,
            jvp=lambda self_t: -self_t)


def _log(x):
    """log of a tensor, or of a Python number as numpy takes it (NaN below 0, -inf at 0), not raising."""
    if hasattr(x, "_data"):
        return x.log()
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(np.float64(x)))


def _pow_self_grad(grad, self, exponent):
    if not hasattr(exponent, "_data"):
        return grad * 0.0 if exponent == 0 else grad * exponent * self ** (exponent - 1)
    return where(exponent == 0.0, 0.0, grad * exponent * self ** (exponent - 1))


def _pow_exponent_grad(grad, self, result):
    if not hasattr(self, "_data"):
        if self == 0:  # 0 ** y: 0 for y > 0 and 1 for y == 0 (gradient 0), inf for y < 0 (gradient -inf)
            return grad * where(result <= 1.0, 0.0, result * -math.inf)
        return grad * result * _log(self)
    # d/dy x**y = x**y log x, taken as 0 where x == 0 and y >= 0 (PyTorch's convention); at x == 0 and
    # y < 0 it is x**y * log(0), an infinity (x**y is +-inf there, so |x**y| <= 1 tells y >= 0 apart).
    # log reads 1 where the result is taken as 0, so that no infinity reaches a higher derivative. An
    # integer (or narrower) base is cast to the result's dtype first, as PyTorch does: its log taken in
    # the default float32 gave a float64 exponent a gradient with float32's precision.
    self = to_dtype(self, result._data.dtype)
    taken_as_zero = (self == 0.0).logical_and(result.abs() <= 1.0)
    return grad * where(taken_as_zero, 0.0, result * _log(where(taken_as_zero, 1.0, self)))


def _pow_node(args, attrs) -> str:
    self_is_tensor, exponent_is_tensor = (hasattr(a, "_data") for a in args)
    if self_is_tensor and exponent_is_tensor:
        return "PowBackward1"
    return "PowBackward0" if self_is_tensor else "PowBackward2"


def _pow_forward(a, b):
    exponent_is_tensor = type(b) is np.ndarray
    a, b = _promote(a, b)
    if exponent_is_tensor and b.dtype.kind == "i" and (b < 0).any():
        return _integer_power(a, b)
    return np.power(a, b)


def _integer_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integers to negative powers from a tensor, as PyTorch takes them: 1 and -1 to any power are
    themselves or 1, every other base (0 included) gives 0. numpy refuses them; PyTorch refuses only a
    negative Python number as the exponent, and so does numpy there."""
    negative = b < 0
    power = np.power(a, np.where(negative, 0, b))
    inverse = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, inverse, power).astype(power.dtype, copy=False)


def _pow_jvp(self_t, exponent_t, self, exponent, result):
    # pow is elementwise, so its JVP is each input's derivative formula applied to that input's tangent.
    return tangent_sum(None if self_t is None else _pow_self_grad(self_t, self, exponent),
                       None if exponent_t is None else _pow_exponent_grad(exponent_t, self, result))


pow = defop("pow", ("self", "exponent"), _pow_forward, _pow_node, explain=_explain_binary,  # noqa: A001
            public=("function", "method"),
            meta=elementwise(promoted), kind="elementwise", lower=lambda self, exponent: cast(self) ** cast(exponent),
            self=_pow_self_grad,
            exponent=lambda grad, self, result: _pow_exponent_grad(grad, self, result),
            jvp=_pow_jvp)


def _split_where_equal(grad, self, other):
    """Ties share the gradient equally, as in PyTorch's maximum/minimum."""
    return where(self == other, grad * 0.5, grad)


def _select_jvp(self_t, other_t, self_wins, other_wins):
    """The tangent of the input selected; at a tie the mean of both, matching the shared gradient."""
    a = 0.0 if self_t is None else self_t
    b = 0.0 if other_t is None else other_t
    return where(self_wins, a, where(other_wins, b, (a + b) * 0.5))


def _select_lower(keeps: Callable[[Expr, Expr], Expr]):
    """The lowering of maximum (``keeps=operator.ge``) or minimum: ``self`` where it wins or is NaN,
    else ``other``, so that a NaN on either side is the result, as numpy's maximum has it."""
    def lower(self, other):
        a, b = cast(self), cast(other)
        return scalar.where(scalar.logical_or(keeps(a, b), a != a), a, b)
    return lower


maximum = defop("maximum", ("self", "other"), _binary(np.maximum), "MaximumBackward0",
                public=("function", "method"),
                explain=_explain_binary,
                meta=elementwise(promoted), kind="elementwise", recompute=True, lower=_select_lower(operator.ge),
                self=lambda grad, self, other: where(self < other, 0.0, _split_where_equal(grad, self, other)),
                other=lambda grad, self, other: where(other < self, 0.0, _split_where_equal(grad, self, other)),
                jvp=lambda self_t, other_t, self, other: _select_jvp(self_t, other_t, self > other, self < other))

minimum = defop("minimum", ("self", "other"), _binary(np.minimum), "MinimumBackward0",
                public=("function", "method"),
                explain=_explain_binary,
                meta=elementwise(promoted), kind="elementwise", recompute=True, lower=_select_lower(operator.le),
                self=lambda grad, self, other: where(self > other, 0.0, _split_where_equal(grad, self, other)),
                other=lambda grad, self, other: where(other > self, 0.0, _split_where_equal(grad, self, other)),
                jvp=lambda self_t, other_t, self, other: _select_jvp(self_t, other_t, self < other, self > other))


def _where_forward(condition, a, b):
    if np.asarray(condition).dtype != np.bool_:
        raise TypeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                        f"{np.asarray(condition).dtype}")
    a, b = _promote(a, b)
    return np.where(condition, a, b)


where = defop("where", ("condition", "self", "other"), _where_forward, "WhereBackward0",
              explain=_explain_binary,
              meta=elementwise(lambda condition, self, other: promoted(self, other)), kind="elementwise",
              recompute=True, lower=lambda condition, self, other: scalar.where(condition, cast(self, RESULT),
                                                                                 cast(other, RESULT)),
              self=lambda grad, condition: where(condition, grad, 0.0),
              other=lambda grad, condition: where(condition, 0.0, grad),
              jvp=lambda self_t, other_t, condition: where(condition, 0.0 if self_t is None else self_t,
                                                           0.0 if other_t is None else other_t))


def _masked_fill_forward(a, mask, value):
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if np.ndim(value):
        raise ValueError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                         f"{np.ndim(value)} dimension(s).")
    dtypes.check_fits(value, a.dtype, f"masked_fill({a.dtype}{list(a.shape)})")
    return np.where(mask, np.asarray(value).astype(a.dtype), a)


# ``value`` is a Python number (MaskedFillBackward0) or a 0-d tensor (MaskedFillBackward1), whose
# gradient is the sum of the filled elements' (the engine sums it down to its 0-d shape)
masked_fill = defop("masked_fill", ("self", "mask", "value"), _masked_fill_forward,
                    lambda args, attrs: "MaskedFillBackward1" if isinstance(args[2], Tensor) else "MaskedFillBackward0",
                    public=("function", "method"),
                    meta=elementwise(lambda self, mask, value: unchanged(self)), kind="elementwise", recompute=True,
                    lower=lambda self, mask, value: scalar.where(truth(mask), cast(value, RESULT), cast(self, RESULT)),
                    self=lambda grad, mask: where(mask, 0.0, grad),
                    value=lambda grad, mask: where(mask, grad, 0.0),
                    jvp=lambda self_t, value_t, mask: where(mask, 0.0 if value_t is None else value_t,
                                                            0.0 if self_t is None else self_t))
isnan = defop("isnan", ("self",), np.isnan,
              public=("function", "method"),
              meta=elementwise(boolean), kind="elementwise", recompute=True, lower=lambda self: self != self)
isinf = defop("isinf", ("self",), np.isinf,
              public=("function", "method"),
              meta=elementwise(boolean), kind="elementwise", recompute=True,
              lower=lambda self: scalar.logical_and(self == self, scalar.logical_not(scalar.isfinite(self))))


def _clamp_forward(a, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    if min is None and max is None:
        raise ValueError("At least one of 'min' or 'max' must not be None")
    dtype = _clamp_dtype(a, min, max)
    _check_integer_limits(dtype, a.shape, min, max)
    return np.clip(a.astype(dtype, copy=False), min, max).astype(dtype, copy=False)


_NUMBERS = (float, int, type(None))


def _clamp_dtype(a, min, max):  # noqa: A002
    """PyTorch's result dtype of clamp: the input's promoted with the limits (an int tensor clamped to
    0.5 gives floats)."""
    if a.dtype.kind == "f" and type(min) in _NUMBERS and type(max) in _NUMBERS:
        return a.dtype  # the common call: a float tensor keeps its dtype under Python numbers
    return dtypes.result_type(a, *(v for v in (min, max) if v is not None))


def _clamp_meta(self: TensorMeta, min=None, max=None) -> TensorMeta:  # noqa: A002
    dtype = np.dtype(promoted(self, *(v for v in (min, max) if v is not None)))
    _check_integer_limits(dtype, self.shape, min, max)
    return TensorMeta(self.shape, dtype)


def _check_integer_limits(dtype: np.dtype, shape: tuple, min, max) -> None:  # noqa: A002
    """An integer limit outside an integer result's range raises, as ``x + 200`` of int8 does: numpy
    clipped with the limit's value (uint8 clamped to -2 kept its 0), the compiled kernels and PyTorch
    with the limit cast to the dtype (-2 is 254: all became 3 under ``clamp(-2, 3)``)."""
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for name, limit in (("min", min), ("max", max)):
        if type(limit) is int and not info.min <= limit <= info.max:
            raise OverflowError(f"clamp({dtype}{list(shape)}, {name}={limit}): the limit is out of bounds for "
                                f"{dtype}; clamp a wider integer or float copy (x.long().clamp(...))")


def _clamp_grad(grad, self, min, max):  # noqa: A002
    """The gradient passes where ``min <= self <= max`` holds: not where a limit applied, nor at NaN."""
    if min is not None:
        grad = where(self >= min, grad, 0.0)
    if max is not None:
        grad = where(self <= max, grad, 0.0)
    return grad


def _clamp_lower(self, min, max):  # noqa: A002
    """``max``/``min`` are Python's (the second where it compares greater/less), which keep ``self``
    against a NaN limit: a NaN limit gives NaN instead, as numpy's ``clip`` and PyTorch do (a limit
    passed at each call is an expression, checked element by element)."""
    self = cast(self, RESULT)
    value = self if min is None else scalar.max(self, min)
    value = value if max is None else scalar.min(value, max)
    for limit in (min, max):
        if isinstance(limit, scalar.Expr):
            value = scalar.where(limit != limit, cast(limit, RESULT), value)
        elif limit is not None and limit != limit:
            return self + limit
    return value


_clamp = defop("clamp", ("self",), _clamp_forward, "ClampBackward1",
               meta=_clamp_meta, kind="elementwise", recompute=True, lower=_clamp_lower,
               self=_clamp_grad,
               jvp=lambda self_t, self, min, max: _clamp_grad(self_t, self, min, max))  # noqa: A006


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    """Limits values to numbers ``[min, max]``; the gradient is zero where a limit applied. The public
    ``clamp`` (``arithmetic_arguments``) takes tensor limits too."""
    return _clamp(input, min=min, max=max)


abs = defop("abs", ("self",), np.abs, "AbsBackward0",  # noqa: A001
            public=("function", "method"),
            meta=elementwise(unchanged), kind="elementwise", recompute=True, lower=scalar.abs,
            self=lambda grad, self: grad * self.sign(),
            jvp=lambda self_t, self: self_t * self.sign())

def _sign(a):
    """numpy's sign, but 0 at NaN, as PyTorch's (so that abs's gradient at NaN is 0); of bools, the
    bools (numpy has no sign of them)."""
    if a.dtype == np.bool_:
        return a.copy()
    out = np.sign(a)
    return np.where(a != a, 0, out).astype(out.dtype, copy=False) if a.dtype.kind == "f" else out


sign = defop("sign", ("self",), _sign, "SignBackward0",
             public=("function", "method"),
             meta=elementwise(unchanged), kind="elementwise",
             lower=lambda self: scalar.where(self == self, scalar.sign(self), 0.0),  # 0 at NaN
             self=lambda grad: grad * 0.0,
             jvp=lambda self_t: self_t * 0.0)


def _comparison(name: str, ufunc: np.ufunc, compare: Callable[[Expr, Expr], Expr]) -> OpDef:
    """A comparison: elementwise, a bool result, no derivative."""
    return defop(name, ("self", "other"), _binary(ufunc), explain=_explain_binary,
                 public=("function", "method"),
                 meta=elementwise(boolean), kind="elementwise", recompute=True, lower=compare)


eq = _comparison("eq", np.equal, operator.eq)
ne = _comparison("ne", np.not_equal, operator.ne)
lt = _comparison("lt", np.less, operator.lt)
le = _comparison("le", np.less_equal, operator.le)
gt = _comparison("gt", np.greater, operator.gt)
ge = _comparison("ge", np.greater_equal, operator.ge)
def _checked_integer_division(fn):
    """``//`` and ``%``: an integer division by zero raises, as in PyTorch, rather than giving numpy's 0;
    so does a division of two bools, which PyTorch does not implement (numpy's int8, where the op's
    dtype rule says bool, ran eagerly only, each compile refused)."""
    forward = _binary(fn)

    def checked(a, b):
        if np.result_type(a, b) == np.bool_:
            raise NotImplementedError(f"{fn.__name__} of two bools (bool{list(np.shape(a))} and "
                                      f"bool{list(np.shape(b))}) is not implemented, as in PyTorch: cast one to an "
                                      "integer dtype first (a.long())")
        out = forward(a, b)
        if out.dtype.kind in "iub" and np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
        return out
    return checked


# A backend's ``//`` and ``%`` of integers must raise on a zero divisor, as the forward does.
floor_divide = defop("floor_divide", ("self", "other"), _checked_integer_division(np.floor_divide),
                     public=("function", "method"),
                     explain=_explain_binary,
                     meta=elementwise(promoted), kind="elementwise",
                     lower=lambda self, other: cast(self) // cast(other))
remainder = defop("remainder", ("self", "other"), _checked_integer_division(np.remainder),
                  lambda args, attrs: "RemainderBackward1" if hasattr(args[1], "_data") else "RemainderBackward0",
                  public=("function", "method"),
                  explain=_explain_binary,
                  meta=elementwise(promoted), kind="elementwise", lower=lambda self, other: cast(self) % cast(other),
                  self=lambda grad: grad,
                  other=lambda grad, self, other: -grad * floor_divide(self, other),
                  jvp=lambda self_t, other_t, self, other: tangent_sum(
                      self_t, None if other_t is None else -other_t * floor_divide(self, other)))
logical_and = defop("logical_and", ("self", "other"), np.logical_and, explain=_explain_binary,
                    public=("function", "method"),
                    meta=elementwise(boolean), kind="elementwise",
                    lower=lambda self, other: scalar.logical_and(truth(self), truth(other)))
logical_or = defop("logical_or", ("self", "other"), np.logical_or, explain=_explain_binary,
                   public=("function", "method"),
                   meta=elementwise(boolean), kind="elementwise",
                   lower=lambda self, other: scalar.logical_or(truth(self), truth(other)))
logical_not = defop("logical_not", ("self",), np.logical_not,
                    public=("function", "method"),
                    meta=elementwise(boolean), kind="elementwise", lower=scalar.logical_not)


def _to_forward(a, dtype):
    return a.astype(dtype)


_to_dtype = defop("to_dtype", ("self",), _to_forward, "ToCopyBackward0",
                  meta=lambda self, dtype: TensorMeta(self.shape, np.dtype(dtype)), kind="elementwise",
                  recompute=True, lower=lambda self: cast(self, RESULT),
                 self=lambda grad: grad,
                 jvp=lambda self_t, dtype: _to_dtype(self_t, dtype=dtype))

MEMORY_FORMATS = ("preserve_format", "contiguous_format")  # ``jitgrad.preserve_format``, ``contiguous_format``


def _clone(a, memory_format="preserve_format"):
    """A copy: in ``a``'s own layout (PyTorch's ``preserve_format``: a transpose stays one; a stepped
    slice or an expanded view, whose layout has gaps or repeats, becomes row-major), or row-major
    (``contiguous_format``, what ``contiguous()`` asks for)."""
    if memory_format not in MEMORY_FORMATS:
        raise RuntimeError(f"clone: memory_format must be one of {', '.join(MEMORY_FORMATS)}, got {memory_format!r}")
    return np.copy(a, order="C") if memory_format == "contiguous_format" else preserved_copy(a)


clone = defop("clone", ("self",), _clone, "CloneBackward0",
              public=("function", "method"),
              meta=elementwise(unchanged), kind="elementwise", recompute=True, lower=lambda self: self,
              self=lambda grad: grad,
              jvp=lambda self_t: clone(self_t))


def to_dtype(input: Tensor, dtype) -> Tensor:
    """``input`` cast to ``dtype`` (the same tensor when it already has it, as in PyTorch)."""
    target = dtypes.as_numpy_dtype(dtype)
    if input._data.dtype == target:
        return input
    return _to_dtype(input, dtype=target)
