"""Ways to make tensors: from data, from numpy, filled, ranges and random."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from . import dtypes
from .device import is_device_array, placed, to_device, to_host
from .autograd import grad_mode
from .ops import sampling
from .ops.registry import OpDef, note_created, observed
from .ops.sampling import normal as normal_op, randperm as randperm_op, uniform as uniform_op
from .random import Generator
from .shapes import broadcast_shapes, preserved_copy
from .shared_arrays import shared_counter
from .tensor import Tensor

DType = Any
Device = Any  # a jitgrad.device, a string ("cuda", "cuda:0", "cpu"), a CUDA index or None (the CPU)


def _finish(data: np.ndarray, requires_grad: bool, source: Any = None, device: Device = None) -> Tensor:
    """The new tensor, on ``device`` (made on the host and copied there); a tracer watching is told it
    was made here, from ``source`` (so that a numpy array read from outside a compiled function can
    become its input rather than a constant)."""
    place = None if device is None else placed(device)
    t = Tensor._make(data if place is None or place.type == "cpu" else to_device(data))
    t._is_inference = grad_mode.state.inference
    if requires_grad:
        t.requires_grad_(True)
    note_created(t, source)
    return t


def _infer(data: Any, dtype: DType) -> np.ndarray:
    """An array of ``data``: Python floats become the default float dtype, numpy data keeps its own."""
    target = dtypes.as_numpy_dtype(dtype)
    if isinstance(data, Tensor):
        data = data._data if type(data._data) is np.ndarray else to_host(data._data)
    elif is_device_array(data):
        data = to_host(data)
    if isinstance(data, np.ndarray):
        array = preserved_copy(data, target)
    elif isinstance(data, np.generic):
        array = np.array(data, dtype=target, copy=True)
    else:
        array = np.array(data, dtype=target)
        if target is None and array.dtype.kind in "uf" and _holds_a_long_integer(data, array):
            raise ValueError("Overflow when unpacking long long: the data holds an integer outside int64's range; "
                             "give a floating dtype to store it approximately")
        if target is None and array.dtype == np.float64:
            array = array.astype(dtypes.get_default_dtype().numpy)
        elif target is None and array.dtype.kind in "iu":
            array = array.astype(np.int64)
    dtypes.from_numpy_dtype(array.dtype)
    return array


def _holds_a_long_integer(data: Any, array: np.ndarray) -> bool:
    """Whether Python integers past int64's range made numpy's array uint64, or float64 beside smaller
    ones (PyTorch's error; a cast would wrap 2**63 to -2**63, a float round it). The elements are read
    only when some value is that large."""
    if array.dtype == np.uint64:   # numpy's type for Python ints only when one is past int64
        return True
    if not array.size or not np.abs(array).max() >= 2.0 ** 63:
        return False
    return any(type(v) is int and not -2 ** 63 <= v < 2 ** 63 for v in np.array(data, dtype=object).ravel())


def tensor(data: Any, dtype: DType = None, device: Device = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, numpy arrays or a tensor), on
    ``device`` (by default a tensor's own device, else the CPU)."""
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _finish(_infer(data, dtype), requires_grad, data, device)


def as_tensor(data: Any, dtype: DType = None, device: Device = None) -> Tensor:
    """``data`` as a tensor without a copy where it can be one, as PyTorch's: a tensor itself, a numpy
    array of the wanted dtype on the CPU shares its memory (``from_numpy``; until 2026-11-28 it was
    copied, so writes through either were not seen by the other); anything else is copied."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and (dtype is None or dtypes.as_numpy_dtype(dtype) == data.dtype) \
            and (device is None or placed(device).type == "cpu"):
        return from_numpy(data)
    return tensor(data, dtype, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array`` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy_dtype(array.dtype)
    t = _finish(array, False, array)
    t._version_counter = shared_counter(array, [0])
    return t


def _size(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return size


def _float_dtype(dtype: DType) -> np.dtype:
    return dtypes.as_numpy_dtype(dtype) or dtypes.get_default_dtype().numpy


def zeros(*size: int | Sequence[int], dtype: DType = None, device: Device = None,
          requires_grad: bool = False) -> Tensor:
    return _finish(np.zeros(_size(size), _float_dtype(dtype)), requires_grad, device=device)


def ones(*size: int | Sequence[int], dtype: DType = None, device: Device = None,
          requires_grad: bool = False) -> Tensor:
    return _finish(np.ones(_size(size), _float_dtype(dtype)), requires_grad, device=device)


def empty(*size: int | Sequence[int], dtype: DType = None, device: Device = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor whose values are unspecified (as PyTorch's): zeros here, not numpy's leftover memory, so
    that ``empty(n).normal_()`` in a compiled function traces the same constant twice (docs/compile.md's
    check that two traces agree would see garbage as a value that changes between calls)."""
    return _finish(np.zeros(_size(size), _float_dtype(dtype)), requires_grad, device=device)


def empty_strided(size: Sequence[int], stride: Sequence[int], dtype: DType = None, device: Device = None,
                  requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (zeros, as ``empty``) laid out with ``stride`` (in elements) over one
    buffer just long enough, as PyTorch's: ``empty_strided((2, 3), (1, 2))`` is column-major."""
    shape, strides = _size((size,)), tuple(int(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(strides)} against {len(shape)}")
    if any(s < 0 for s in strides):
        raise RuntimeError("empty_strided: strides must be non-negative")
    np_dtype = _float_dtype(dtype)
    length = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    buffer = np.zeros(max(length, 1), np_dtype)
    data = np.lib.stride_tricks.as_strided(buffer, shape, tuple(s * np_dtype.itemsize for s in strides))
    return _finish(data, requires_grad, device=device)


def scalar_tensor(s: float | int | bool, dtype: DType = None, device: Device = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` (PyTorch's, whatever
    the number's type)."""
    return full((), s, dtype=_float_dtype(dtype), device=device, requires_grad=requires_grad)


def full(size: Sequence[int], fill_value: float | int | bool, dtype: DType = None, device: Device = None,
         requires_grad: bool = False) -> Tensor:
    if dtype is None and isinstance(fill_value, (bool, np.bool_)):
        dtype = np.bool_
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = np.int64
    dtype = _float_dtype(dtype)
    dtypes.check_fits(fill_value, dtype, "full")
    return _finish(np.full(_size((size,)), fill_value, dtype), requires_grad, device=device)


def _like(input: Tensor, dtype: DType) -> tuple[tuple[int, ...], np.dtype]:
    return input._data.shape, dtypes.as_numpy_dtype(dtype) or input._data.dtype


def _like_device(input: Tensor, device: Device) -> Device:
    """A ``*_like`` factory's device: ``input``'s unless one is given, as in PyTorch."""
    return input.device if device is None else device


def zeros_like(input: Tensor, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _finish(np.zeros(shape, dt), requires_grad, device=_like_device(input, device))


def ones_like(input: Tensor, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _finish(np.ones(shape, dt), requires_grad, device=_like_device(input, device))


def full_like(input: Tensor, fill_value: float, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    dtypes.check_fits(fill_value, dt, "full_like")
    return _finish(np.full(shape, fill_value, dt), requires_grad, device=_like_device(input, device))


def arange(start: float, end: float | None = None, step: float = 1, dtype: DType = None,
           device: Device = None, requires_grad: bool = False) -> Tensor:
    """Integers give int64, any float gives the default float dtype, as in PyTorch."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = np.int64 if integral else dtypes.get_default_dtype().numpy
    dtype = dtypes.as_numpy_dtype(dtype)
    if dtype.kind in "iub":  # PyTorch truncates the bounds and the step first (numpy steps in floats)
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    return _finish(np.arange(start, end, step, dtype=dtype), requires_grad, device=device)


def eye(n: int, m: int | None = None, dtype: DType = None, device: Device = None,
        requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad, device=device)


def linspace(start: float, end: float, steps: int, dtype: DType = None, device: Device = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive. Computed in float64 as
    PyTorch computes them, from ``start`` up for the first half and from ``end`` down for the second, so
    both ends are exact; then cast to ``dtype`` (an integer dtype truncates, as PyTorch's does)."""
    values = _spaced(float(start), float(end), steps)
    return _finish(values.astype(_float_dtype(dtype)), requires_grad, device=device)


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: DType = None,
             device: Device = None, requires_grad: bool = False) -> Tensor:
    """``base`` to the power of ``linspace(start, end, steps)``."""
    values = np.power(float(base), _spaced(float(start), float(end), steps))
    return _finish(values.astype(_float_dtype(dtype)), requires_grad, device=device)


def _spaced(start: float, end: float, steps: int) -> np.ndarray:
    if isinstance(steps, Tensor):
        steps = steps.item()
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps == 1:
        return np.array([start])
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def _draw(distribution: OpDef, shape: tuple[int, ...], dtype: np.dtype, requires_grad: bool,
          device: Device = None, generator: Generator | None = None) -> Tensor:
    """``shape`` samples of ``distribution`` (a random op of ``ops.sampling``) from ``generator`` (by
    default jitgrad's), through ``ops.sampling.draw``, which lets a compiled call draw afresh. On a
    device the samples are drawn on the host and copied, so they are the numbers the CPU draws."""
    if dtype.kind != "f" and distribution is not randperm_op:
        raise TypeError(f"{distribution.name}: random floats need a floating dtype, not {dtype}")
    out = sampling.draw(distribution, shape, dtype, generator)
    return _place(out, requires_grad, device)


def _place(out: Tensor, requires_grad: bool, device: Device) -> Tensor:
    """``out`` (a draw made on the host) on ``device``, copied by the ``to_device`` op so that a tracer
    records the copy of the draw rather than the copied numbers; then made a leaf that requires grad."""
    place = None if device is None else placed(device)
    if place is not None and place.type != "cpu":
        out = out.to(place)
    if requires_grad:
        out.requires_grad_(True)
    return out


def randn(*size: int | Sequence[int], generator: Generator | None = None, dtype: DType = None,
          device: Device = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from jitgrad's generator (see ``manual_seed``) or ``generator``."""
    return _draw(normal_op, _size(size), _float_dtype(dtype), requires_grad, device, generator)


def rand(*size: int | Sequence[int], generator: Generator | None = None, dtype: DType = None,
         device: Device = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from jitgrad's generator or ``generator``."""
    return _draw(uniform_op, _size(size), _float_dtype(dtype), requires_grad, device, generator)


def randn_like(input: Tensor, dtype: DType = None, device: Device = None, requires_grad: bool = False, *,
               generator: Generator | None = None) -> Tensor:
    return _draw(normal_op, *_like(input, dtype), requires_grad, _like_device(input, device), generator)


def rand_like(input: Tensor, dtype: DType = None, device: Device = None, requires_grad: bool = False, *,
              generator: Generator | None = None) -> Tensor:
    return _draw(uniform_op, *_like(input, dtype), requires_grad, _like_device(input, device), generator)


def empty_like(input: Tensor, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _finish(np.zeros(shape, dt), requires_grad, device=_like_device(input, device))


def _check_can_require_grad(dtype: np.dtype, requires_grad: bool) -> None:
    """PyTorch's factory check (its message differs from ``requires_grad_``'s), made before the draw so
    that a refused call leaves the generator where it was."""
    if requires_grad and dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _integers(low: int, high: int, shape: tuple[int, ...], dtype: np.dtype, requires_grad: bool,
              device: Device, generator: Generator | None) -> Tensor:
    """Integers in ``[low, high)``, each ``low + floor(u * (high - low))`` for a float64 uniform ``u``:
    53 random bits per element, so every value is as likely as any other to within ``(high - low) /
    2**53``. Made of registry ops (the draw, ``mul``, a cast, ``add``), so it compiles like them."""
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    _check_can_require_grad(dtype, requires_grad)
    u = sampling.draw(uniform_op, shape, np.float64, generator)
    values = (u * float(high - low)).to(dtypes.int64) + low
    return _place(values.to(dtypes.from_numpy_dtype(dtype)), requires_grad, device)


def randint(*args: Any, size: Sequence[int] | None = None, generator: Generator | None = None,
            dtype: DType = None, device: Device = None, requires_grad: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers drawn uniformly from
    ``[low, high)``, int64 unless ``dtype`` says otherwise, as PyTorch's."""
    if size is None and args:
        args, size = args[:-1], args[-1]
    if size is None or len(args) not in (1, 2):
        raise TypeError("randint() takes (high, size) or (low, high, size), with size a tuple of ints")
    low, high = (0, args[0]) if len(args) == 1 else args
    return _integers(low, high, _size((size,)), dtypes.as_numpy_dtype(dtype) or np.dtype(np.int64),
                     requires_grad, device, generator)


def randint_like(input: Tensor, *args: int, generator: Generator | None = None, dtype: DType = None,
                 device: Device = None, requires_grad: bool = False) -> Tensor:
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``: ``input``'s shape, its dtype
    unless ``dtype`` is given."""
    if len(args) not in (1, 2):
        raise TypeError("randint_like() takes (input, high) or (input, low, high)")
    low, high = (0, args[0]) if len(args) == 1 else args
    shape, dt = _like(input, dtype)
    return _integers(low, high, shape, dt, requires_grad, _like_device(input, device), generator)


def randperm(n: int, *, generator: Generator | None = None, dtype: DType = None, device: Device = None,
             requires_grad: bool = False) -> Tensor:
    """A random order of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise), drawn with the cost of
    ``n`` elements of the generator's stream (``random.sampling.permutation``)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtypes.as_numpy_dtype(dtype) or np.dtype(np.int64)
    _check_can_require_grad(dt, requires_grad)
    return _draw(randperm_op, (n,), dt, requires_grad, device, generator)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Sequence[int] | None = None, *,
           generator: Generator | None = None, dtype: DType = None, device: Device = None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples with the given ``mean`` and ``std``, as PyTorch's four forms: numbers and a
    ``size``, or a tensor for either or both (the result has their broadcast shape and is
    differentiable in them: ``mean + std * eps``, with ``eps`` a standard normal draw)."""
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() with a float mean and std needs a size")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        eps = _draw(normal_op, _size((size,)), _float_dtype(dtype), False, None, generator)
        return _place(eps * std + mean if (std, mean) != (1, 0) else eps, requires_grad, device)
    if size is not None:
        raise TypeError("normal() takes a size only with a float mean and std")
    if isinstance(std, Tensor) and not observed() and bool((std < 0).any()):  # a traced std has no one value
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    shape = broadcast_shapes("normal", (tuple(t.shape) for t in tensors))
    dt = np.result_type(*(t._data.dtype for t in tensors))
    if dt.kind != "f":
        raise NotImplementedError(f'"normal" not implemented for {dtypes.from_numpy_dtype(dt)}')
    eps = _draw(normal_op, shape, dt, False, tensors[0].device, generator)
    return eps * std + mean




# ---- Tensor.new_*: a factory with this tensor's dtype and device unless told otherwise ---------------
# Attached here, not with the ops' methods (jitgrad/ops/methods.py): the ops layer sits below the factories.
def _new_options(self: Tensor, dtype: DType, device: Device) -> tuple[np.dtype, Device]:
    return dtypes.as_numpy_dtype(dtype) or self._data.dtype, self.device if device is None else device


def _new_zeros(self: Tensor, *size: int | Sequence[int], dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    dt, place = _new_options(self, dtype, device)
    return _finish(np.zeros(_size(size), dt), requires_grad, device=place)


def _new_ones(self: Tensor, *size: int | Sequence[int], dtype: DType = None, device: Device = None,
              requires_grad: bool = False) -> Tensor:
    dt, place = _new_options(self, dtype, device)
    return _finish(np.ones(_size(size), dt), requires_grad, device=place)


def _new_empty(self: Tensor, *size: int | Sequence[int], dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    dt, place = _new_options(self, dtype, device)
    return _finish(np.zeros(_size(size), dt), requires_grad, device=place)  # zeros: see empty()


def _new_full(self: Tensor, size: Sequence[int], fill_value: float | int | bool, dtype: DType = None,
              device: Device = None, requires_grad: bool = False) -> Tensor:
    dt, place = _new_options(self, dtype, device)
    return _finish(np.full(_size((size,)), fill_value, dt), requires_grad, device=place)


def _new_tensor(self: Tensor, data: Any, dtype: DType = None, device: Device = None,
                requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` with this tensor's dtype and device (unless given), as PyTorch's: the dtype
    is this tensor's even where ``data``'s numbers would infer another."""
    dt, place = _new_options(self, dtype, device)
    return tensor(data, dtype=dt, device=place, requires_grad=requires_grad)


Tensor.new_zeros, Tensor.new_ones, Tensor.new_empty = _new_zeros, _new_ones, _new_empty
Tensor.new_full, Tensor.new_tensor = _new_full, _new_tensor
