"""``jitgrad.testing``: PyTorch's ``torch.testing.assert_close`` and ``make_tensor``.

``assert_close`` compares tensors, Python numbers and (nested) sequences and mappings of them with
PyTorch's defaults and messages: tolerances chosen by dtype, the number of mismatched elements and the
greatest absolute and relative differences with their indices, the failing item's path for containers.
``make_tensor`` draws from jitgrad's generator (``manual_seed`` repeats it)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from . import dtypes
from .device import device as Device
from .factories import rand, randint
from .ops.host_reads import host_values
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

# PyTorch's default (rtol, atol) by dtype; integers and bools compare exactly
_TOLERANCES = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7)}


def _tolerances(*numpy_dtypes: np.dtype) -> tuple[float, float]:
    pairs = [_TOLERANCES.get(np.dtype(d), (0.0, 0.0)) for d in numpy_dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, bool, np.number)) and not isinstance(value, Tensor)


def _failure(message: str, msg: str | Callable[[str], str] | None, path: str) -> AssertionError:
    if path:
        message += f"\n\nThe failure occurred for item {path}"
    if callable(msg):
        message = msg(message)
    elif msg is not None:
        message = msg
    return AssertionError(message)


def _difference_lines(kind: str, diff: float, index: tuple | None, tol: float) -> str:
    line = f"{kind.title()} difference: {diff}" if index is None else \
        f"Greatest {kind} difference: {diff} at index {index}"
    return line + (f" (up to {tol} allowed)" if tol > 0 else "")


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _mismatch_message(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol: float, atol: float,
                      scalar: bool) -> str:
    """PyTorch's message: what is not close (equal, with no tolerance), the count and the greatest
    differences, computed in the compared dtype (integers in int64, their ratio in float32)."""
    word = "equal" if rtol == 0 and atol == 0 else "close"
    if actual.dtype.kind in "biu":
        a, e = actual.astype(np.int64), expected.astype(np.int64)
        absolute = np.abs(a - e)
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = (absolute.astype(np.float32) / np.abs(e).astype(np.float32))
    else:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            absolute = np.abs(actual - expected)
            relative = absolute / np.abs(expected)
    absolute, relative = np.where(matches, 0, absolute), np.where(matches, 0, relative)
    if scalar:
        return (f"Scalars are not {word}!\n\nExpected {expected.item()} but got {actual.item()}.\n"
                + _difference_lines("absolute", absolute.item(), None, atol) + "\n"
                + _difference_lines("relative", relative.item(), None, rtol))
    worst_abs, worst_rel = int(np.argmax(absolute.reshape(-1))), int(np.argmax(relative.reshape(-1)))
    count, total = int((~matches).sum()), matches.size
    return (f"Tensor-likes are not {word}!\n\nMismatched elements: {count} / {total} ({count / total:.1%})\n"
            + _difference_lines("absolute", absolute.reshape(-1)[worst_abs].item(),
                                _index(worst_abs, matches.shape), atol) + "\n"
            + _difference_lines("relative", relative.reshape(-1)[worst_rel].item(),
                                _index(worst_rel, matches.shape), rtol))


def _compare_values(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool,
                    scalar: bool) -> str | None:
    if actual.dtype.kind in "biu":
        matches = actual.astype(np.int64) == expected.astype(np.int64) if rtol == 0 and atol == 0 else \
            np.isclose(actual.astype(np.float64), expected.astype(np.float64), rtol, atol)
    else:
        matches = np.isclose(actual, expected, rtol, atol, equal_nan=equal_nan)
    if matches.all():
        return None
    return _mismatch_message(actual, expected, matches, rtol, atol, scalar)


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None, equal_nan: bool,
                     check_device: bool, check_dtype: bool) -> str | None:
    if actual.shape != expected.shape:
        return f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}."
    if check_device and str(actual.device) != str(expected.device):
        return f"The values for attribute 'device' do not match: {actual.device} != {expected.device}."
    if check_dtype and actual.dtype != expected.dtype:
        return f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}."
    a, e = host_values(actual.detach()), host_values(expected.detach())
    if rtol is None:
        rtol, atol = _tolerances(a.dtype, e.dtype)
    if a.dtype != e.dtype:
        common = dtypes.result_type(a, e)
        a, e = a.astype(common), e.astype(common)
    return _compare_values(a, e, rtol, atol, equal_nan, scalar=a.ndim == 0)


def _compare(actual: Any, expected: Any, path: str, options: dict) -> tuple[str, str] | None:
    """The first mismatch as ``(message, path of the item)``, or None."""
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        message = _compare_tensors(actual, expected, **options)
        return None if message is None else (message, path)
    if _number(actual) and _number(expected):
        a, e = np.asarray(actual), np.asarray(expected)
        if options["check_dtype"] and type(actual) is not type(expected):
            return f"The (d)types do not match: {type(actual)} != {type(expected)}.", path
        rtol, atol = options["rtol"], options["atol"]
        if rtol is None:
            rtol, atol = _tolerances(a.dtype, e.dtype)
        common = np.result_type(a, e)
        message = _compare_values(a.astype(common), e.astype(common), rtol, atol, options["equal_nan"], True)
        return None if message is None else (message, path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            return (f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                    f"{sorted(map(repr, set(expected) - set(actual)))}\nExtra keys in the actual mapping: "
                    f"{sorted(map(repr, set(actual) - set(expected)))}", path)
        for key in expected:
            found = _compare(actual[key], expected[key], f"{path}[{key!r}]", options)
            if found:
                return found
        return None
    if isinstance(actual, Sequence) and isinstance(expected, Sequence) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            return (f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            found = _compare(a, e, f"{path}[{i}]", options)
            if found:
                return found
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raises ``AssertionError`` unless ``actual`` and ``expected`` are close: shapes equal, devices and
    dtypes too (unless told not to check them), and every value within ``atol + rtol * |expected|``
    (NaNs equal where ``equal_nan``). Omitted tolerances are PyTorch's for the dtypes: float16 (1e-3,
    1e-5), float32 (1.3e-6, 1e-5), float64 (1e-7, 1e-7), exact for integers and bools.
    ``allow_subclasses``, ``check_layout`` and ``check_stride`` are accepted for PyTorch's signature:
    jitgrad has one tensor class, one layout, and no strides that change values."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype)
    found = _compare(actual, expected, "", options)
    if found is not None:
        raise _failure(found[0], msg, found[1]) from None


def _range(dtype: dtypes.dtype, low: float | None, high: float | None) -> tuple[float, float]:
    """``[low, high)`` with PyTorch's defaults and checks, clamped to what ``dtype`` holds; integer bounds
    rounded up (``randint``'s ``high`` is exclusive)."""
    default_low, default_high = (-9, 9) if dtype.is_floating_point else (0 if dtype == dtypes.uint8 else -9, 10)
    low, high = default_low if low is None else low, default_high if high is None else high
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low > high or (low == high and not dtype.is_floating_point):
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if dtype.is_floating_point:
        info = np.finfo(dtype.numpy)
        return max(low, float(info.min)), min(high, float(info.max))
    info = np.iinfo(dtype.numpy)
    return max(math.ceil(low), int(info.min)), min(math.ceil(high), int(info.max) + 1)


def make_tensor(*shape: int | Sequence[int], dtype: dtypes.dtype, device: str | Device | None,
                low: float | None = None, high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``: by default
    [-9, 9] for floats, [-9, 10) for signed integers, [0, 10) for uint8, 0/1 for bools, as PyTorch.
    ``exclude_zero`` replaces zeros by the smallest positive normal (floats) or 1 (integers).
    ``noncontiguous`` and ``memory_format`` are accepted for PyTorch's signature: jitgrad tensors have no
    strides to choose."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    if requires_grad and not dtype.is_floating_point:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    if dtype != dtypes.bool:
        low, high = _range(dtype, low, high)
    if dtype == dtypes.bool:
        result = randint(0, 2, shape, device=device).to(dtypes.bool)
    elif dtype.is_floating_point:
        info = np.finfo(dtype.numpy)
        result = rand(*shape, dtype=dtype, device=device) * (high - low) + low
        if exclude_zero:
            result = result.masked_fill(result == 0, float(info.tiny))
    else:
        result = randint(low, high, shape, dtype=dtype, device=device)
        if exclude_zero:
            result = result.masked_fill(result == 0, 1)
    return result.requires_grad_(requires_grad) if requires_grad else result
