"""Reductions over dimensions (``dim`` an int or a tuple, ``keepdim``); ``sum_to``, the sum that undoes
broadcasting, is in ``broadcast_sums``. Each op's registry entry takes ``dim`` already wrapped into a
sorted tuple."""
from __future__ import annotations

import builtins
import math
import operator
import warnings
from dataclasses import replace
from typing import Sequence

import numpy as np

from .. import dtypes
from ..shapes import wrap_dim, wrap_dims
from ..autograd import grad_mode
from ..tensor import Tensor
from .arithmetic import maximum, minimum, where
from .device_copy import to
from . import scalar
from .lowering import Reduction, intrinsic
from .meta_rules import accumulated, boolean, indices, reduction, scalar_type_name, unchanged
from .op_callers import caller
from .public import public
from .registry import defop
from .scalar import HIGHEST, LOWEST

Dim = int | Sequence[int] | None


def _axes(shape: tuple[int, ...], dim: tuple[int, ...] | None) -> tuple[int, ...]:
    """The reduced dimensions; ``None`` (a call without ``dim``) reduces them all."""
    return tuple(range(len(shape))) if dim is None else dim


def _kept_shape(shape: tuple[int, ...], dim: tuple[int, ...] | None) -> tuple[int, ...]:
    dim = _axes(shape, dim)
    return tuple(1 if i in dim else s for i, s in enumerate(shape))


def _unsqueeze_reduced(grad: Tensor, shape: tuple[int, ...], dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """``grad`` (or a saved result) of a reduction, with the reduced dimensions back as size 1."""
    return grad if keepdim else grad.reshape(_kept_shape(shape, dim))


def _count(shape: tuple[int, ...], dim: tuple[int, ...] | None) -> int:
    return math.prod(shape[d] for d in _axes(shape, dim))


def _named_by_dim(full: str, partial: str):
    """PyTorch names the node of a reduction over everything differently from one over ``dim``."""
    return lambda args, attrs: full if attrs["dim"] is None else partial


def _sum_grad(grad, self_shape, dim, keepdim):
    return _unsqueeze_reduced(grad, self_shape, dim, keepdim).expand(self_shape)


def _mean_forward(a, dim, keepdim):
    if a.dtype.kind != "f":
        raise TypeError(f"mean(): could not infer output dtype. Input dtype must be either a floating "
                        f"point or complex dtype. Got: {a.dtype}")
    return a.mean(axis=dim, keepdims=keepdim)  # the method: numpy's function adds a microsecond of dispatch


def _twice_over_dof(shape: tuple[int, ...], dim: tuple[int, ...] | None, correction: float) -> float:
    """2 / (n - correction), d var / d centred; infinite when no degrees of freedom are left (one
    element, correction 1), where the forward is NaN and the gradient NaN too, as in PyTorch."""
    dof = _count(shape, dim) - correction
    return 2.0 / dof if dof else math.inf


def _var_grad(grad, self, dim, keepdim, correction):
    centred = self - self.mean(dim, keepdim=True)
    return (_unsqueeze_reduced(grad, self._data.shape, dim, keepdim) * centred
            * _twice_over_dof(self._data.shape, dim, correction))


def _var_jvp(self_t, self, dim, keepdim, correction):
    centred = self - self.mean(dim, keepdim=True)
    return _sum(centred * self_t, dim=dim, keepdim=keepdim) * _twice_over_dof(self._data.shape, dim, correction)


def _over_twice_std(value, std, constant):
    """``value / (2 std)``, d std = d var / (2 std), taken as 0 where the values are all equal
    (``constant``), as PyTorch does. Equal values are told by their max and min, which are exact: the
    std computed for them may be a rounding error above 0 (numpy's mean of 39 copies of 0.1 is not
    0.1), which would turn the 0 into an arbitrary number, and differently in eager and compiled
    code. A NaN std (one value, correction 1) stays NaN; the divisor is made safe where the gradient
    is 0, so that the second derivative, which differentiates the masked branch as well, is no NaN."""
    masked = constant & (std == std)
    return where(masked, 0.0, value / (where(masked, 1.0, std) * 2.0))


def _all_equal(self, dim, keepdim):
    if not self._data.size:  # no values, no max: a mask of the reduced shape (any will do for no gradient)
        return _sum(self, dim=dim, keepdim=keepdim) != 0.0
    return _amax(self, dim=dim, keepdim=keepdim) == _amin(self, dim=dim, keepdim=keepdim)


def _std_grad(grad, self, result, dim, keepdim, correction):
    shape = self._data.shape
    var_grad = _var_grad(grad, self, dim, keepdim, correction)
    return _over_twice_std(var_grad, _unsqueeze_reduced(result, shape, dim, keepdim), _all_equal(self, dim, True))


def _std_jvp(self_t, self, result, dim, keepdim, correction):
    return _over_twice_std(_var_jvp(self_t, self, dim, keepdim, correction), result, _all_equal(self, dim, keepdim))


def _prod_grad(grad, self, result, dim, keepdim):
    if not self._data.ndim:  # PyTorch passes a 0-d input's gradient through, whatever its value
        return grad
    shape = self._data.shape
    return _unsqueeze_reduced(grad, shape, dim, keepdim) * _prod_of_others(
        self, _unsqueeze_reduced(result, shape, dim, keepdim), dim)


def _prod_jvp(self_t, self, result, dim, keepdim):
    if not self._data.ndim:
        return self_t
    others = _prod_of_others(self, _unsqueeze_reduced(result, self._data.shape, dim, keepdim), dim)
    return _sum(self_t * others, dim=dim, keepdim=keepdim)


def _prod_of_others(self, result, dim):
    """d prod / d x_i, chosen as PyTorch chooses it, so that NaN, inf and zeros give its values:
    ``result / x_i`` while the input holds no zero at all, the exact product of the other elements
    (no division) as soon as any slice holds one, and for a full reduction with two zeros or more,
    outside ``create_graph``, zeros. The divisor of the unchosen quotient is made safe, so that the
    second derivative, which differentiates it as well, is no NaN."""
    is_zero = self == 0.0
    any_zero = is_zero.any()
    others = where(any_zero, _exact_others(self, is_zero, dim), result / where(any_zero, 1.0, self))
    if dim is None and not grad_mode.is_grad_enabled():
        others = where(is_zero.sum() > 1, 0.0, others)
    return others


def _exact_others(self, is_zero, dim):
    """The product of the elements other than x_i, split in three so that none divides by zero or
    by inf: the finite nonzero others (their product divided by x_i), the zeros and the non-finite
    values."""
    special = is_zero | (self != self) | (self.abs() == math.inf)
    plain = where(special, 1.0, self)
    rest, zeros = plain.prod(dim, keepdim=True) / plain, _zero_others(self, is_zero, dim)
    # beside a zero the product is 0 however large the rest: an overflow of the rest's product (inf,
    # where its true value is finite) must not make it 0 * inf = NaN, as it did until 2026-11-28
    rest = where((zeros == 0.0) & (rest.abs() == math.inf), 0.0, rest)
    return rest * zeros * _non_finite_others(self, dim)


def _zero_others(self, is_zero, dim):
    """The product of the zeros other than x_i, written so that its own derivative is right too
    (create_graph): for a zero x_i it is 1 when x_i is the only zero, the other zero (their sum less
    x_i) when there are two, and 0, flat to first order, beyond."""
    zeros = is_zero.sum(dim, keepdim=True)
    zero_sum = where(is_zero, self, 0.0).sum(dim, keepdim=True)
    return where(is_zero, where(zeros == 1, 1.0, where(zeros == 2, zero_sum - self, 0.0)),
                 where(is_zero, self, 1.0).prod(dim, keepdim=True))


def _non_finite_others(self, dim):
    """The product of the NaN and infinite values other than x_i, from their counts: NaN if one is
    NaN, else an inf of the sign of the -infs' count, else 1. It has no derivative to keep."""
    def count_of_others(mask):
        ones = where(mask, 1.0, 0.0)
        return ones.sum(dim, keepdim=True) - ones
    magnitude = where(count_of_others(self != self) > 0.0, math.nan,
                      where(count_of_others(self.abs() == math.inf) > 0.0, math.inf, 1.0))
    return where(count_of_others(self == -math.inf) % 2.0 == 1.0, -magnitude, magnitude)


def _extremes(self, result, dim, keepdim, nan_is_extreme: bool):
    """Where ``self`` equals its max/min: the ties. For ``max()``/``min()`` a NaN result was taken from
    the NaNs, which then share the gradient (PyTorch's evenly_distribute_backward); ``amax``/``amin``
    compare values only, so a NaN result gives NaN gradients, as in PyTorch."""
    value = _unsqueeze_reduced(result, self._data.shape, dim, keepdim)
    is_extreme = self == value
    if nan_is_extreme:
        is_extreme = is_extreme | ((self != self) & (value != value))
    return is_extreme


def _evenly_distributing(nan_is_extreme: bool):
    def evenly_distribute(grad, self, result, dim, keepdim):
        """The gradient of max/min over all ties, shared equally among them."""
        is_extreme = _extremes(self, result, dim, keepdim, nan_is_extreme)
        spread = where(is_extreme, _unsqueeze_reduced(grad, self._data.shape, dim, keepdim), 0.0)
        return spread / is_extreme.sum(dim, keepdim=True)
    return evenly_distribute


def _evenly_reading(nan_is_extreme: bool):
    def evenly_read(self_t, self, result, dim, keepdim):
        """The tangent of max/min: the mean of the tangents of the ties, the transpose of the above."""
        is_extreme = _extremes(self, result, dim, keepdim, nan_is_extreme)
        return _sum(where(is_extreme, self_t, 0.0), dim=dim, keepdim=keepdim) / _sum(is_extreme, dim=dim,
                                                                                      keepdim=keepdim)
    return evenly_read


def _is_selected(self_shape, results, dim, keepdim):
    """Where ``max(dim)``/``min(dim)`` took its values from: a mask of ``self``'s shape."""
    if not dim:  # a 0-d input is its own max and min
        return Tensor._make(np.ones(self_shape, np.bool_))
    (d,) = dim
    indices = _unsqueeze_reduced(results[1], self_shape, dim, keepdim)
    positions = Tensor._make(np.arange(self_shape[d]).reshape((-1,) + (1,) * (len(self_shape) - d - 1)))
    return to(positions, indices.device) == indices  # on the indices' device: a CUDA max's are on CUDA


def _value_selecting_grad(grad, self_shape, results, dim, keepdim):
    """The gradient of ``max(dim)``/``min(dim)``: all of it goes to the selected index."""
    grad = _unsqueeze_reduced(grad, self_shape, dim, keepdim)
    return where(_is_selected(self_shape, results, dim, keepdim), grad, 0.0)


def _value_selecting_jvp(self_t, self_shape, results, dim, keepdim):
    """The tangent of the values is that of the selected elements; the indices have none."""
    selected = where(_is_selected(self_shape, results, dim, keepdim), self_t, 0.0)
    return _sum(selected, dim=dim, keepdim=keepdim), None


def _logsumexp_forward(a, dim, keepdim):
    if a.dtype.kind != "f":
        a = a.astype(np.float32)
    peak = np.max(a, axis=dim, keepdims=True, initial=-np.inf)  # over nothing: -inf, and the result too
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):  # log(0): -inf over nothing or all -inf, as PyTorch's, silently
        out = np.log(np.sum(np.exp(a - peak), axis=dim, keepdims=True)) + peak
    return out if keepdim else np.squeeze(out, axis=dim)


def _logsumexp_dtype(self):
    """The input's float dtype, float32 for integers and bools (the forward computes them in it)."""
    return self.dtype if self.dtype.kind == "f" else np.dtype(np.float32)


def _logsumexp_grad(grad, self, result, dim, keepdim):
    shape = self._data.shape
    return _unsqueeze_reduced(grad, shape, dim, keepdim) * (self - _unsqueeze_reduced(result, shape, dim, keepdim)).exp()


def _logsumexp_jvp(self_t, self, result, dim, keepdim):
    weights = (self - _unsqueeze_reduced(result, self._data.shape, dim, keepdim)).exp()
    return _sum(weights * self_t, dim=dim, keepdim=keepdim)


def _sum_forward(a, dim, keepdim):
    # the ufunc's reduce: what ``a.sum`` runs, less its Python frame (numpy's function adds a microsecond);
    # integers and bools add up as int64, as PyTorch's (numpy's uint8 sum is a uint64)
    return np.add.reduce(a, dim, np.int64 if a.dtype.kind in "biu" else None, None, keepdim)


def _check_reducible(name: str, a: np.ndarray, dim) -> None:
    """max, min and their arg- and a- forms have no value over nothing: PyTorch's errors for an empty
    dimension reduced (IndexError), or an empty tensor reduced whole (RuntimeError)."""
    if a.size:
        return
    if dim is None:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")
    for d in (dim,) if isinstance(dim, int) else dim:
        if a.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme_forward(name: str, extreme):
    def forward(a, dim, keepdim):
        _check_reducible(name, a, dim)
        return extreme(a, axis=dim, keepdims=keepdim)
    return forward


def _floating_only(name: str, reduce):
    """var and std of integers are refused, as in PyTorch (numpy would give a float). With no degrees of
    freedom left the result is NaN (or inf) with PyTorch's warning, in place of numpy's two."""
    def forward(a, dim, keepdim, correction):
        if a.dtype.kind not in "fc":
            raise TypeError(f"{name}: std and var only support floating point and complex dtypes")
        if _count(a.shape, dim) - correction <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                          "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=2)
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                return _floating_reduce(reduce, a, dim, keepdim, correction)
        return _floating_reduce(reduce, a, dim, keepdim, correction)
    return forward


def _floating_reduce(reduce, a, dim, keepdim, correction):
    if a.dtype == np.float16:  # in float32, as PyTorch: float16's squares overflow (var of 0..99 was inf)
        return reduce(a, axis=dim, ddof=correction, keepdims=keepdim, dtype=np.float32).astype(np.float16)
    return reduce(a, axis=dim, ddof=correction, keepdims=keepdim)


def _selecting_forward(extreme, position):
    """max/min(dim): the values and their indices; ``dim`` is ``()`` for a 0-d input, its own
    extreme, at index 0."""
    def forward(a, dim, keepdim):
        _check_reducible(extreme.__name__, a, dim)
        values = extreme(a, axis=dim, keepdims=keepdim)
        if not dim:
            return values, np.zeros(np.shape(values), np.int64)
        return values, position(a, axis=dim[0], keepdims=keepdim)
    return forward


def _values_and_indices(self, dim, keepdim):
    """max/min(dim): the values, of the input's dtype, and their int64 indices."""
    return reduction(unchanged)(self, dim, keepdim), reduction(indices)(self, dim, keepdim)


# Lowerings of the reductions (jitgrad.ops.lowering): identity, combine, and what comes before and after.
_SUM = Reduction(0, operator.add)
_MEAN = Reduction(0, operator.add, finish=lambda acc, count: acc / count)
# A NaN met becomes the running value and stays it, as numpy's max and min propagate NaN.
_MAX = Reduction(LOWEST, lambda acc, x: scalar.where(scalar.logical_or(x > acc, x != x), x, acc))
_MIN = Reduction(HIGHEST, lambda acc, x: scalar.where(scalar.logical_or(x < acc, x != x), x, acc))
# The divisor is max(0, n - correction), as numpy's and PyTorch's: no degrees of freedom left gives NaN
# (or inf), where n - correction below 0 gave -0.0 (var of an empty dimension, or correction 2 of one).
_VAR = Reduction(0, operator.add, first=_MEAN, map=lambda self, first: (self - first) * (self - first),
                 finish=lambda acc, count, correction: acc / scalar.max(count - correction, 0))
_STD = replace(_VAR, finish=lambda acc, count, correction: scalar.sqrt(acc / scalar.max(count - correction, 0)))
# log(sum(exp(x - max))) + max, the max taken as 0 where it is infinite (or over nothing). The max skips
# NaN: a NaN makes the second pass's sum NaN whatever the max (so the result is NaN as with _MAX), and
# a plain compare vectorizes where the NaN-keeping one does not (a wide row's max: 0.9 -> 0.3 ms over 2M).
_SHIFT = Reduction(LOWEST, lambda acc, x: scalar.where(x > acc, x, acc),
                   finish=lambda acc: scalar.where(scalar.isfinite(acc), acc, 0.0))
_LOGSUMEXP = Reduction(0, operator.add, first=_SHIFT, map=lambda self, first: scalar.exp(self - first),
                       finish=lambda acc, first: scalar.log(acc) + first)

_sum = defop("sum", ("self",), _sum_forward, _named_by_dim("SumBackward0", "SumBackward1"),
             meta=reduction(accumulated), kind="reduction", lower=_SUM,
             self=_sum_grad,
             jvp=lambda self_t, dim, keepdim: _sum(self_t, dim=dim, keepdim=keepdim))
_mean = defop("mean", ("self",), _mean_forward, _named_by_dim("MeanBackward0", "MeanBackward1"),
              meta=reduction(unchanged), kind="reduction", lower=_MEAN,
              self=lambda grad, self_shape, dim, keepdim:
                  _sum_grad(grad, self_shape, dim, keepdim) / _count(self_shape, dim),
              jvp=lambda self_t, dim, keepdim: _mean(self_t, dim=dim, keepdim=keepdim))
# ``sum`` and ``mean`` call these on every reduction: their callers (``op_callers``), not the general dispatch.
_sum, _mean = caller(_sum), caller(_mean)
_var = defop("var", ("self",), _floating_only("var", np.var), "VarBackward0",
             meta=reduction(unchanged), kind="reduction", lower=_VAR,
             self=_var_grad,
             jvp=_var_jvp)
_std = defop("std", ("self",), _floating_only("std", np.std), "StdBackward0",
             meta=reduction(unchanged), kind="reduction", lower=_STD,
             self=_std_grad,
             jvp=_std_jvp)
_prod = defop("prod", ("self",), lambda a, dim, keepdim: np.prod(a, axis=dim, keepdims=keepdim,
                                                                  dtype=np.int64 if a.dtype.kind in "biu" else None),
              _named_by_dim("ProdBackward0", "ProdBackward1"),
              meta=reduction(accumulated), kind="reduction", lower=Reduction(1, operator.mul),
              self=_prod_grad, jvp=_prod_jvp)
_amax = defop("amax", ("self",), _extreme_forward("amax", np.max), "AmaxBackward0",
              meta=reduction(unchanged), kind="reduction", lower=_MAX,
              self=_evenly_distributing(False),
              jvp=_evenly_reading(False))
_amin = defop("amin", ("self",), _extreme_forward("amin", np.min), "AminBackward0",
              meta=reduction(unchanged), kind="reduction", lower=_MIN,
              self=_evenly_distributing(False),
              jvp=_evenly_reading(False))
_max_all = defop("max", ("self",), _extreme_forward("max", np.max), "MaxBackward1",
                 meta=reduction(unchanged), kind="reduction", lower=_MAX,
                 self=_evenly_distributing(True),
                 jvp=_evenly_reading(True))
_min_all = defop("min", ("self",), _extreme_forward("min", np.min), "MinBackward1",
                 meta=reduction(unchanged), kind="reduction", lower=_MIN,
                 self=_evenly_distributing(True),
                 jvp=_evenly_reading(True))
_max_dim = defop("max_dim", ("self",), _selecting_forward(np.max, np.argmax), "MaxBackward0",
                 meta=_values_and_indices, lower=intrinsic("argmax", values=True),
                 self=_value_selecting_grad,
                 jvp=_value_selecting_jvp)
_min_dim = defop("min_dim", ("self",), _selecting_forward(np.min, np.argmin), "MinBackward0",
                 meta=_values_and_indices, lower=intrinsic("argmin", values=True),
                 self=_value_selecting_grad,
                 jvp=_value_selecting_jvp)
_argmax = defop("argmax", ("self",), _extreme_forward("argmax", np.argmax),
                meta=reduction(indices), lower=intrinsic("argmax"))
_argmin = defop("argmin", ("self",), _extreme_forward("argmin", np.argmin),
                meta=reduction(indices), lower=intrinsic("argmin"))
_all = defop("all", ("self",), lambda a, dim, keepdim: np.all(a, axis=dim, keepdims=keepdim),
             meta=reduction(boolean), kind="reduction",
             lower=Reduction(True, lambda acc, x: scalar.logical_and(acc, scalar.truth(x))))
_any = defop("any", ("self",), lambda a, dim, keepdim: np.any(a, axis=dim, keepdims=keepdim),
             meta=reduction(boolean), kind="reduction",
             lower=Reduction(False, lambda acc, x: scalar.logical_or(acc, scalar.truth(x))))
_logsumexp = defop("logsumexp", ("self",), _logsumexp_forward, "LogsumexpBackward0",
                   meta=reduction(_logsumexp_dtype), kind="reduction", lower=_LOGSUMEXP,
                   self=_logsumexp_grad,
                   jvp=_logsumexp_jvp)


def _dims(input: Tensor, dim: Dim, op: str) -> tuple[int, ...] | None:
    return None if dim is None else wrap_dims(dim, input._data.ndim, op)


def cast_to_accumulate(input: Tensor, dtype) -> Tensor:
    """``input`` cast to a sum's (or running sum's, product's) ``dtype=``. A result PyTorch's autograd
    cannot differentiate (an integer or bool dtype) of an input that requires grad is its error, not
    a result that silently drops the gradient."""
    if dtype is None:
        return input
    target = np.dtype(dtypes.as_numpy_dtype(dtype))
    if target.kind != "f" and input.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(target)} (the input requires grad: "
                           "sum in a floating dtype, or detach() the input first)")
    return input.to(dtype)


def in_accumulated_dtype(result: Tensor, dtype) -> Tensor:
    """A sum's (running sum's) ``result`` in its ``dtype=``: integers add up as int64 whatever their
    dtype, so ``dtype=int32`` is cast back, exactly (a sum's low bits do not depend on the width), as
    PyTorch's is an int32; ``result`` unchanged without a ``dtype`` or already in it."""
    if dtype is None or result._data.dtype == np.dtype(dtypes.as_numpy_dtype(dtype)):
        return result
    return result.to(dtype)


@public("function", "method")
def sum(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """With ``dtype`` the input is cast before it is summed, as in PyTorch (float32 summed as float64
    keeps what a float32 sum would round away)."""
    input = cast_to_accumulate(input, dtype)
    return in_accumulated_dtype(_sum(input, dim=_dims(input, dim, "sum"), keepdim=keepdim), dtype)


@public("function", "method")
def mean(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """With ``dtype`` (a floating one, as PyTorch asks) the input is cast before the mean is taken."""
    if dtype is not None:
        target = np.dtype(dtypes.as_numpy_dtype(dtype))
        if target.kind != "f":
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {target.name}")
        input = input.to(dtype)
    return _mean(input, dim=_dims(input, dim, "mean"), keepdim=keepdim)


def _correction(unbiased: bool | None, correction: float | None) -> float:
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


@public("function", "method")
def var(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    return _var(input, dim=_dims(input, dim, "var"), keepdim=keepdim,
                correction=_correction(unbiased, correction))


@public("function", "method")
def std(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    return _std(input, dim=_dims(input, dim, "std"), keepdim=keepdim,
                correction=_correction(unbiased, correction))


@public("function", "method")
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return _prod(input, dim=_dims(input, dim, "prod"), keepdim=keepdim)


def _extreme_dims(input: Tensor, dim: Dim, op: str) -> tuple[int, ...]:
    """amax's and amin's dimensions: ``()`` (the default) is every one, and of an empty tensor that is
    PyTorch's RuntimeError (asking for a dimension), not the IndexError of a named empty dimension."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        _check_reducible(op, input._data, None)
    return _dims(input, dim, op)


@public("function", "method")
def amax(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return _amax(input, dim=_extreme_dims(input, dim, "amax"), keepdim=keepdim)


@public("function", "method")
def amin(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return _amin(input, dim=_extreme_dims(input, dim, "amin"), keepdim=keepdim)


def _selecting(all_op, dim_op, name: str, input: Tensor, dim: int | None, keepdim: bool):
    if dim is None:
        return all_op(input, dim=None, keepdim=False)
    values, indices = dim_op(input, dim=wrap_dims((dim,), input._data.ndim, name), keepdim=keepdim)
    return ValuesAndIndices(values, indices)


@public("function", "method")
def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    """The largest element, or with ``dim`` the named tuple ``(values, indices)`` along it; with a
    tensor in place of ``dim``, PyTorch's ``max(input, other)``: ``maximum``."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    return _selecting(_max_all, _max_dim, "max", input, dim, keepdim)


@public("function", "method")
def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    return _selecting(_min_all, _min_dim, "min", input, dim, keepdim)


def _arg_extreme(op, name: str, input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """argmax/argmin: along ``dim``, or over the flattened input (every dimension kept as size 1 with
    ``keepdim``). A 0-d input's one dimension (0 or -1) is the whole of it: its index is a 0-d 0."""
    ndim = input._data.ndim
    if dim is not None:
        dim = wrap_dim(dim, ndim, name)
    if dim is None or ndim == 0:
        index = op(input.reshape(-1), dim=0, keepdim=False)
        return index.reshape((1,) * ndim) if keepdim and ndim else index
    return op(input, dim=dim, keepdim=keepdim)


@public("function", "method")
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return _arg_extreme(_argmax, "argmax", input, dim, keepdim)


@public("function", "method")
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return _arg_extreme(_argmin, "argmin", input, dim, keepdim)


@public("function", "method")
def all(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element (along ``dim``) is true; a bool tensor (a uint8 one of uint8, as PyTorch
    documents), not differentiable."""
    return _as_uint8_of_uint8(_all(input, dim=_dims(input, dim, "all"), keepdim=keepdim), input)


@public("function", "method")
def any(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return _as_uint8_of_uint8(_any(input, dim=_dims(input, dim, "any"), keepdim=keepdim), input)


def _as_uint8_of_uint8(truth: Tensor, input: Tensor) -> Tensor:
    """``all``'s and ``any``'s bools as uint8 0 and 1 where the input is uint8, PyTorch's documented
    exception (``u.all() + 255`` is then a uint8 0, not an int64 256)."""
    return truth.to(np.uint8) if input._data.dtype == np.uint8 else truth


@public("function", "method")
def logsumexp(input: Tensor, dim: Dim, keepdim: bool = False) -> Tensor:
    return _logsumexp(input, dim=_dims(input, dim, "logsumexp"), keepdim=keepdim)


class ValuesAndIndices(tuple):
    """``(values, indices)`` with attribute access, like PyTorch's ``torch.return_types`` of ``max``,
    ``min``, ``sort`` and ``topk``: unpacks as a tuple, reads as ``.values``/``.indices``."""

    __slots__ = ()

    def __new__(cls, values: Tensor, indices: Tensor) -> "ValuesAndIndices":
        return builtins.tuple.__new__(cls, (values, indices))

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


@public("function")
def var_mean(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, ...))`` over the same dimensions."""
    return (var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))


@public("function")
def std_mean(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, ...))`` over the same dimensions."""
    return (std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))
