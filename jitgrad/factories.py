"""Ways to make tensors: from data, from numpy, filled, ranges and random."""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import numpy as np

from . import dtypes
from .device import is_device_array, placed, to_device, to_host
from .autograd import grad_mode
from .ops.registry import OpDef, note_created
from .ops.sampling import normal, uniform
from .random import Draw, default_generator
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
    if isinstance(data, (np.ndarray, np.generic)):
        array = np.array(data, dtype=target, copy=True)
    else:
        array = np.array(data, dtype=target)
        if target is None and array.dtype == np.float64:
            array = array.astype(dtypes.get_default_dtype().numpy)
        elif target is None and array.dtype.kind in "iu":
            array = array.astype(np.int64)
    dtypes.from_numpy_dtype(array.dtype)
    return array


def tensor(data: Any, dtype: DType = None, device: Device = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, numpy arrays or a tensor), on
    ``device`` (by default a tensor's own device, else the CPU)."""
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _finish(_infer(data, dtype), requires_grad, data, device)


def as_tensor(data: Any, dtype: DType = None, device: Device = None) -> Tensor:
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
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
    return _finish(np.empty(_size(size), _float_dtype(dtype)), requires_grad, device=device)


def full(size: Sequence[int], fill_value: float | int | bool, dtype: DType = None, device: Device = None,
         requires_grad: bool = False) -> Tensor:
    if dtype is None and isinstance(fill_value, (bool, np.bool_)):
        dtype = np.bool_
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = np.int64
    return _finish(np.full(_size((size,)), fill_value, _float_dtype(dtype)), requires_grad, device=device)


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
    return _finish(np.full(shape, fill_value, dt), requires_grad, device=_like_device(input, device))


def arange(start: float, end: float | None = None, step: float = 1, dtype: DType = None,
           device: Device = None, requires_grad: bool = False) -> Tensor:
    """Integers give int64, any float gives the default float dtype, as in PyTorch."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = np.int64 if integral else dtypes.get_default_dtype().numpy
    return _finish(np.arange(start, end, step, dtype=dtypes.as_numpy_dtype(dtype)), requires_grad, device=device)


def eye(n: int, m: int | None = None, dtype: DType = None, device: Device = None,
        requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad, device=device)


def _draw(distribution: OpDef, shape: tuple[int, ...], dtype: np.dtype, requires_grad: bool,
          device: Device = None) -> Tensor:
    """``shape`` samples of ``distribution`` (a random op of ``ops.sampling``) from the default generator:
    the op is given the generator's state for them as a tensor, which a tracer is told came from the
    generator (a compiled call then feeds it the state of its own call, docs/compile.md). On a device
    the samples are drawn on the host and copied, so they are the numbers the CPU draws."""
    if dtype.kind != "f":
        raise TypeError(f"{distribution.name}: random floats need a floating dtype, not {dtype}")
    count = math.prod(shape)
    state = Tensor._make(default_generator.take(count))
    note_created(state, Draw(default_generator, state._data, count))
    out = distribution(state, shape=shape, dtype=dtype)
    place = None if device is None else placed(device)
    if place is not None and place.type != "cpu":
        out = Tensor._make(to_device(out._data))
    if requires_grad:
        out.requires_grad_(True)
    return out


def randn(*size: int | Sequence[int], dtype: DType = None, device: Device = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples from jitgrad's generator (see ``manual_seed``)."""
    return _draw(normal, _size(size), _float_dtype(dtype), requires_grad, device)


def rand(*size: int | Sequence[int], dtype: DType = None, device: Device = None,
          requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from jitgrad's generator."""
    return _draw(uniform, _size(size), _float_dtype(dtype), requires_grad, device)


def randn_like(input: Tensor, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    return _draw(normal, *_like(input, dtype), requires_grad, _like_device(input, device))


def rand_like(input: Tensor, dtype: DType = None, device: Device = None,
               requires_grad: bool = False) -> Tensor:
    return _draw(uniform, *_like(input, dtype), requires_grad, _like_device(input, device))
