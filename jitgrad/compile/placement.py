"""Where a compiled call runs, and the few array operations compile/ does on that device.

A compiled program runs on one device, its inputs' (or the one ``compile(device=...)`` names), and its
outputs are arrays of that device: numpy arrays on the CPU, numba device arrays for CUDA. compile/
copies outputs, fills ``.grad``s, writes updates back into the caller's tensors and checks results;
on a device array every one of these goes through registry ops (which the CUDA eager runner runs) or
``jitgrad.device``'s transfers, never through numpy, which would copy the array to the host in silence
or fail. ``jitgrad.device`` is imported only when a device array is met, so a CPU-only program never
loads numba.cuda.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..autograd import grad_mode
from ..ops.arithmetic import clone, to_dtype
from ..ops.inplace import copy_, elements_share_memory
from ..tensor import Tensor
from .unsupported import Unsupported

CPU = "cpu"
_NOT_ARRAYS = (int, float, bool, np.generic, type(None))


def array_device(data: Any) -> str:
    """``"cpu"`` for a numpy array, else the device array's device as a string (``"cuda:0"``)."""
    if isinstance(data, np.ndarray):
        return CPU
    from ..device import device_of
    return str(device_of(data))


def is_array(value: Any) -> bool:
    """A numpy or device array (a graph input a call passes), not a Python number or None."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, _NOT_ARRAYS):
        return False
    from ..device import is_device_array
    return is_device_array(value)


def device_kind(device: Any) -> str:
    """``"cuda"`` of ``"cuda:1"`` or ``device("cuda", 1)``: what picks the backend."""
    return str(device).partition(":")[0]


def call_device(tensors: Sequence[Tensor], requested: Any = None, host_scalars: bool = False) -> str:
    """The device a call's program runs on. Inputs on several devices run eagerly (``Unsupported``):
    eager execution raises PyTorch's error for them, or lets a 0-d CPU tensor join a CUDA op, as
    PyTorch does. With ``host_scalars`` (a step, whose program writes its results back itself) such
    0-d CPU tensors (Adam's step count) join a CUDA program too: it copies them to the device and
    ``to_device_of`` brings their new values back. Inputs on another device than ``requested`` are an
    error: a compiled function never moves tensors between devices behind the caller's back."""
    devices = sorted({array_device(t._data) for t in tensors})
    if host_scalars and len(devices) == 2 and CPU in devices and \
            all(t._data.ndim == 0 for t in tensors if array_device(t._data) == CPU):
        devices.remove(CPU)
    if len(devices) > 1:
        raise Unsupported(f"the inputs are on several devices ({', '.join(devices)}) and a compiled program "
                          "runs on one; move them to one device with .to(...)")
    if requested is None:
        return devices[0] if devices else CPU
    wanted = str(requested)
    for found in devices:
        if found != wanted and not (":" not in wanted and device_kind(found) == wanted):
            raise RuntimeError(f"jitgrad.compile(device={wanted!r}): the inputs are on {found}; move them with "
                               f".to({wanted!r}) (a compiled function does not move tensors between devices)")
    return devices[0] if devices else wanted


def host(array: Any) -> Any:
    """A numpy array with the values of ``array`` (itself when it is one): for comparisons only."""
    if isinstance(array, np.ndarray) or isinstance(array, _NOT_ARRAYS):
        return array
    from ..device import to_host
    return to_host(array)


def copy(array: Any) -> Any:
    """A copy in memory of its own, on the array's device."""
    if isinstance(array, np.ndarray):
        return np.array(array, copy=True)
    with grad_mode.no_grad():
        return clone(Tensor._make(array))._data


def copy_into(destination: Any, source: Any) -> None:
    """Writes ``source``'s values into ``destination``'s memory (any strides), which other tensors may
    share (views, an optimizer's references)."""
    if isinstance(destination, np.ndarray):
        np.copyto(destination, source)
        return
    with grad_mode.no_grad():
        copy_(Tensor._make(destination), Tensor._make(source))


def writeable(array: Any) -> bool:
    """Whether ``copy_into`` may write into ``array``: an expanded numpy view is read-only, and eager refuses
    to write where elements share memory (a writeable stride-0 array from ``from_numpy``: a compiled write
    into one gave another value than eager's until 2026-11-28); a device array's memory always takes a
    write."""
    if not isinstance(array, np.ndarray):
        return True
    return array.flags.writeable and not elements_share_memory(array)


def to_device_of(data: Any, array: Any) -> Any:
    """``array`` (a program's output) on the device of ``data`` (the input it is the new value or the
    gradient of): itself, or a host copy of it for a 0-d CPU tensor that joined a CUDA program."""
    if isinstance(data, np.ndarray) and not isinstance(array, np.ndarray):
        return host(array)
    return array


def write_back(tensor: Tensor, new: Any) -> None:
    """A step's new value of an input, written into the input's own memory when the shape allows, so
    that its views and whoever holds its array see it (a new array otherwise)."""
    data = tensor._data
    new = to_device_of(data, new)
    if data.shape == new.shape and writeable(data):
        copy_into(data, new)
    else:
        tensor._data = copy(new)


def constants_on_host(graph: Any) -> None:
    """Moves a traced graph's CUDA constants (the engine's gradient seeds, a factory's result on the
    device) to the host, before the passes: the passes read constants as numpy (to fold, compare and
    deduplicate them), and a backend uploads the constants it needs once, when it lowers."""
    for name, value in graph.constants.items():
        if not isinstance(value._data, np.ndarray):
            graph.constants[name] = Tensor._make(host(value._data), value._requires_grad)


def zeros(shape: tuple[int, ...], dtype: np.dtype, device: str) -> Any:
    """A zero array on ``device`` (a tangent for an output no gradient reached)."""
    if device == CPU:
        return np.zeros(shape, dtype)
    from ..device import to_device
    return to_device(np.zeros(shape, dtype))


def ones_like(array: Any) -> Any:
    """Ones of ``array``'s shape and dtype on its device (the unit tangents of an example backward)."""
    if isinstance(array, np.ndarray):
        return np.ones_like(array)
    from ..device import to_device
    return to_device(np.ones(array.shape, array.dtype))


def scaled(gradient: Any, incoming: Tensor) -> Tensor:
    """``gradient * incoming`` (a 0-d tensor), in ``gradient``'s dtype, on their device."""
    if isinstance(gradient, np.ndarray):
        return Tensor._make((gradient * incoming._data).astype(gradient.dtype, copy=False))
    with grad_mode.no_grad():
        return to_dtype(Tensor._make(gradient) * incoming, gradient.dtype)


__all__ = ["CPU", "array_device", "call_device", "constants_on_host", "copy", "copy_into", "device_kind", "host",
           "is_array", "ones_like", "scaled", "to_device_of", "write_back", "writeable", "zeros"]
