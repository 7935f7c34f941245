"""jitgrad's dtypes and PyTorch's type-promotion rules over numpy.

numpy and PyTorch disagree on a few promotions that users notice (``int / int`` is float32 in PyTorch,
``int64 * 2.5`` is float32, a 0-d float64 tensor does not upcast a float32 tensor), so the result dtype
of an elementwise op is computed here rather than left to numpy.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np


class dtype:
    """A tensor element type; wraps a numpy dtype and prints as ``jitgrad.float32``."""

    __slots__ = ("name", "numpy", "is_floating_point", "is_signed", "itemsize", "_category")

    def __init__(self, name: str, numpy_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = category == _FLOAT
        self.is_signed = self.numpy.kind in "if"
        self.itemsize = self.numpy.itemsize
        self._category = category

    def __repr__(self) -> str:
        return f"jitgrad.{self.name}"

    def __reduce__(self):
        return (from_numpy_dtype, (self.numpy,))


_BOOL, _INT, _FLOAT = 0, 1, 2

bool = dtype("bool", np.bool_, _BOOL)  # noqa: A001 - PyTorch's spelling
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
float16 = dtype("float16", np.float16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
long, int, half, float, double = int64, int32, float16, float32, float64  # noqa: A001

_BY_NUMPY = {d.numpy: d for d in (bool, uint8, int8, int16, int32, int64, float16, float32, float64)}

_default_float = float32


def from_numpy_dtype(numpy_dtype: np.dtype) -> dtype:
    """The jitgrad dtype of a numpy dtype; raises TypeError for ones jitgrad does not support."""
    try:
        return _BY_NUMPY[np.dtype(numpy_dtype)]
    except KeyError:
        supported = ", ".join(sorted(d.name for d in _BY_NUMPY.values()))
        raise TypeError(f"jitgrad does not support numpy dtype {np.dtype(numpy_dtype)}; "
                        f"convert the array to one of: {supported}") from None


def as_numpy_dtype(d: dtype | np.dtype | type | str | None) -> np.dtype | None:
    """Accepts a jitgrad dtype, a numpy dtype or anything numpy understands as one."""
    if d is None:
        return None
    if isinstance(d, dtype):
        return d.numpy
    return from_numpy_dtype(d).numpy


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Sets the dtype of Python floats turned into tensors (float32 unless changed), as in PyTorch."""
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default_float = d


class UnsupportedOperand(TypeError):
    """An operand of an elementwise op that is neither a tensor nor a number (``None``, a string, a
    list): PyTorch's ``TypeError``. Until 2026-11-28 numpy read ``None`` as NaN (``x + None`` was NaN
    everywhere) and a list as an array."""


def _category_of_scalar(value) -> int:
    if isinstance(value, (np.bool_, builtins.bool)):
        return _BOOL
    if isinstance(value, (np.integer, numbers.Integral)):
        return _INT
    if not isinstance(value, (numbers.Number, np.generic)):
        raise UnsupportedOperand(f"an operand must be a Tensor or a number, not {type(value).__name__}")
    return _FLOAT


def _category(np_dtype: np.dtype) -> int:
    return _BY_NUMPY[np_dtype]._category if np_dtype in _BY_NUMPY else _FLOAT


def _promote_types(np_dtypes: list[np.dtype]) -> np.dtype:
    """PyTorch's promotion of tensor dtypes: the highest category wins, and numpy's rules decide
    only within it (numpy makes ``int64 + float32`` float64, PyTorch float32)."""
    top = builtins.max(_category(d) for d in np_dtypes)
    return np.result_type(*[d for d in np_dtypes if _category(d) == top])


def result_type(*operands) -> np.dtype:
    """The dtype PyTorch gives an elementwise op over ``operands``.

    Operands are numpy arrays (dimensioned or 0-d) or Python/numpy scalars. As in PyTorch, a 0-d array
    or a scalar only decides the dtype when it belongs to a higher category (bool < int < float) than
    every dimensioned operand; a float scalar over integer tensors gives the default float dtype.
    """
    dims, zero_dims, scalars = [], [], []
    for x in operands:
        if isinstance(x, np.ndarray):
            (dims if x.ndim else zero_dims).append(x.dtype)
        else:
            scalars.append(x)
    return promote(dims, zero_dims, scalars)


def promote(dims: list[np.dtype], zero_dims: list[np.dtype], scalars: list) -> np.dtype:
    """``result_type`` from what decides it: the dtypes of the dimensioned and of the 0-d operands, and
    the scalars. The ops' dtype rules (``jitgrad.ops.meta_rules``) promote with it, knowing only the
    operands' metadata."""
    result = _promote_types(dims) if dims else None
    cat = _category(result) if dims else -1
    if zero_dims:
        z = _promote_types(zero_dims)
        if _category(z) > cat:
            result, cat = z, _category(z)
    for s in scalars:
        c = _category_of_scalar(s)
        if c > cat:
            cat = c
            result = {_BOOL: np.dtype(np.bool_), _INT: np.dtype(np.int64), _FLOAT: _default_float.numpy}[c]
    return result


def check_fits(value, np_dtype: np.dtype, op: str) -> None:
    """An ``OverflowError`` where a Python number written into an integer dtype (a fill's value) lies
    outside its range, or is NaN or infinite, as PyTorch raises; numpy's cast wrapped it around (300.5
    filled int8 with 44, NaN with 0)."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind not in "iu" or isinstance(value, (builtins.bool, np.bool_)) or not isinstance(value, numbers.Real):
        return
    info = np.iinfo(np_dtype)
    if not info.min <= value <= info.max:   # False for NaN
        raise OverflowError(f"{op}: the value {value!r} is out of bounds for {np_dtype.name} (it would be cast "
                            f"around); convert the tensor to a wider or a floating dtype first")
