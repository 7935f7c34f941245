"""Devices (``jitgrad.device``) and the storage functions every layer uses to move arrays between them.

A CPU tensor's ``_data`` is a numpy array; a CUDA tensor's is a numba device array (``DeviceNDArray``,
or ``FakeCUDAArray`` under numba's CUDA simulator). This is the bottom layer, beside ``tensor``: it
imports ``numba.cuda`` lazily, inside the functions that need it, so a CPU-only program never pays for
it. ``usage.active`` turns True when the first array is moved to a device; the hot paths above (the op
registry, the engine) test that one flag and do no device work at all until then.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

_TYPES = ("cpu", "cuda")


class device:  # noqa: N801 - spelled as torch.device
    """Where a tensor lives: ``device("cpu")``, ``device("cuda")``, ``device("cuda:0")``,
    ``device("cuda", 0)``. Equal to another device or to a string naming the same device."""

    __slots__ = ("type", "index")

    def __init__(self, type: "str | device", index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): an index cannot be given with a device")
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or a device, but got {type.__class__.__name__}")
        name, _, suffix = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if suffix:
            if index is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if not suffix.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(suffix)
        if index is not None:
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if name == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        self.type, self.index = name, index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self) -> tuple:
        return device, (self.type, self.index)


CPU = device("cpu")
CUDA0 = device("cuda", 0)  # jitgrad uses one GPU: every CUDA tensor is on cuda:0


class DeviceUsage:
    """Whether any array has been moved to a device in this process (``active``), and what to run the
    first time one is: ``jitgrad.cuda`` registers the installation of its eager runner there, so that
    the layers below never import it."""

    __slots__ = ("active", "first_use_callbacks")

    def __init__(self) -> None:
        self.active = False
        self.first_use_callbacks: list[Callable[[], None]] = []


usage = DeviceUsage()


def when_first_used(callback: Callable[[], None]) -> None:
    """Runs ``callback()`` when the first array is moved to CUDA (at once if one already was)."""
    if usage.active:
        callback()
    else:
        usage.first_use_callbacks.append(callback)


def as_device(spec: "str | device | int | None") -> device | None:
    """A device from what a user passes as ``device=`` (a string, a device, a CUDA index, None)."""
    if spec is None or isinstance(spec, device):
        return spec
    if isinstance(spec, int) and not isinstance(spec, bool):
        return device("cuda", spec)
    return device(spec)


def placed(spec: "str | device | int") -> device:
    """The device a tensor is put on for ``spec``: ``"cuda"`` means the current GPU, ``cuda:0``, the only
    one jitgrad uses."""
    target = as_device(spec)
    if target.type == "cuda":
        if target.index not in (None, 0):
            raise RuntimeError(f"CUDA error: invalid device ordinal {target.index}: jitgrad uses one GPU, cuda:0")
        return CUDA0
    return CPU


def _cuda() -> Any:
    from numba import cuda  # lazily: a CPU-only program never imports numba.cuda
    return cuda


_array_types: tuple = ()


def _device_array_types() -> tuple:
    """numba's device array classes: the simulator's fake one when ``NUMBA_ENABLE_CUDASIM=1``."""
    global _array_types
    if not _array_types:
        from numba import config
        if config.ENABLE_CUDASIM:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            _array_types = (FakeCUDAArray,)
        else:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray
            _array_types = (DeviceNDArray,)
    return _array_types


def is_device_array(x: Any) -> bool:
    """Whether ``x`` is a numba CUDA device array (never True before the first one was made)."""
    return usage.active and type(x) is not np.ndarray and isinstance(x, _device_array_types())


def device_of(array: Any) -> device:
    """The device an array lives on."""
    if type(array) is np.ndarray or not usage.active:
        return CPU
    return CUDA0 if isinstance(array, _device_array_types()) else CPU


def cuda_available() -> bool:
    """Whether numba finds a CUDA GPU (or the simulator is on)."""
    try:
        return bool(_cuda().is_available())
    except Exception:  # a broken driver or toolkit means no CUDA, as torch.cuda.is_available says
        return False


def _check_available() -> None:
    if not cuda_available():
        raise RuntimeError("Found no NVIDIA driver on your system. jitgrad needs numba.cuda and a GPU to make "
                           "CUDA tensors; run with NUMBA_ENABLE_CUDASIM=1 (set before numba is imported) to "
                           "use numba's CUDA simulator instead.")


def to_device(array: np.ndarray) -> Any:
    """A device array holding a copy of the host ``array`` (any strides: it is made contiguous).

    Copies between host and device are synchronous and on the legacy default stream, which the streams
    kernels run on (numba's streams block on it) wait for, and which waits for them: a value crossing
    between a CPU node and a CUDA node of the engine is never read half-copied, whatever streams are
    current."""
    if not usage.active:
        _check_available()
        usage.active = True
        callbacks, usage.first_use_callbacks = usage.first_use_callbacks, []
        for callback in callbacks:
            callback()
    host = array if array.flags.c_contiguous else np.array(array, order="C")  # ascontiguousarray makes 0-d 1-d
    return _cuda().to_device(host)


def to_host(array: Any) -> np.ndarray:
    """A numpy copy of a device array (a host array comes back as it is), synchronous (``to_device``)."""
    if type(array) is np.ndarray or not is_device_array(array):
        return array
    return array.copy_to_host()


def empty_device_array(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """An uninitialised device array on the current stream."""
    return _cuda().device_array(shape, dtype=dtype, stream=current_stream())


class _Streams(threading.local):
    """The stream this thread's CUDA work is launched on now (``jitgrad.cuda.current_stream``): numba's
    default stream unless a ``jitgrad.cuda.stream(...)`` block set another."""

    def __init__(self) -> None:
        self.current: Any = None


streams = _Streams()


def current_stream() -> Any:
    """The numba stream CUDA kernels and copies between device arrays are queued on now."""
    if streams.current is None:
        streams.current = _cuda().default_stream()
    return streams.current


def set_current_stream(stream: Any) -> Any:
    """Makes ``stream`` (a numba stream, or None for the default) current; returns the previous one."""
    previous = streams.current
    streams.current = stream
    return previous


def synchronize() -> None:
    """Waits for every kernel and copy queued on the GPU."""
    if usage.active:
        _cuda().synchronize()


def may_share_memory(a: Any, b: Any) -> bool:
    """``np.may_share_memory`` for arrays of any device (arrays on two devices never share)."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return np.may_share_memory(a, b)
    if not (is_device_array(a) and is_device_array(b)):
        return False
    from numba import config
    if config.ENABLE_CUDASIM:  # the simulator's fake device array wraps a numpy array
        return np.may_share_memory(a._ary, b._ary)
    return _extent(a)[0] < _extent(b)[1] and _extent(b)[0] < _extent(a)[1]


def _extent(array: Any) -> tuple[int, int]:
    """The device addresses ``[first, past the last)`` of an array's bytes, any strides."""
    interface = array.__cuda_array_interface__
    start = end = interface["data"][0]
    if array.size == 0:
        return start, start
    strides = interface["strides"] or _contiguous_strides(array.shape, array.dtype.itemsize)
    for size, stride in zip(array.shape, strides):
        if stride < 0:
            start += (size - 1) * stride
        else:
            end += (size - 1) * stride
    return start, end + array.dtype.itemsize


def _contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class _StridedCopy:
    """The CUDA backend's copy kernel, ``copy(src, dst, stream)`` for device arrays of any strides, which
    the backend registers (``register_strided_copy``) so that writes into CUDA views need no import of
    it here."""

    __slots__ = ("copy",)

    def __init__(self) -> None:
        self.copy: Callable[[Any, Any, Any], None] | None = None


strided_copy = _StridedCopy()


def register_strided_copy(copy: Callable[[Any, Any, Any], None]) -> None:
    """Installs the kernel ``copy_into`` uses when either array is not contiguous."""
    strided_copy.copy = copy


def copy_into(dst: Any, src: Any) -> None:
    """Writes the device array ``src`` into the device array ``dst`` (same shape and dtype; ``dst`` may
    be a view, and the write is seen through every array sharing its memory): an in-place op's result
    written back."""
    from numba import config
    if config.ENABLE_CUDASIM:  # the simulator's fake device array wraps a numpy array
        np.copyto(dst._ary, src._ary)
    elif dst.is_c_contiguous() and src.is_c_contiguous():
        dst.copy_to_device(src, stream=current_stream())
    elif strided_copy.copy is not None:
        strided_copy.copy(src, dst, current_stream())
    else:
        raise NotImplementedError("writing into a non-contiguous CUDA tensor needs the CUDA backend's copy "
                                  "kernel (jitgrad.backends.numba_cuda), which has not registered it")


def copy_array(array: Any) -> Any:
    """A contiguous copy of a host or device array, on its own device. Device arrays have no ``.copy()``
    (the simulator's fake ones do, and return numpy arrays), so every copy that must stay where its
    array is comes here."""
    if type(array) is np.ndarray:
        return array.copy()
    out = empty_device_array(array.shape, array.dtype)
    copy_into(out, array)
    return out


def zeros_on(shape: tuple[int, ...], dtype: np.dtype, place: device) -> Any:
    """An array of zeros on ``place`` (a missing gradient made real on its slot's device)."""
    zeros = np.zeros(shape, dtype)
    return zeros if place.type == "cpu" else to_device(zeros)
