"""What a backward node keeps of a forward tensor, the hooks that may pack it, and the error when it
was freed.

A node's own output is kept as its array, not as the tensor, so that the tensor -> grad_fn -> tensor
cycle never forms and a graph is freed by reference counting alone; unpacking rebuilds a tensor whose
``grad_fn`` is the node, which is what double backward through ``result`` needs.
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ..device import to_device, to_host
from ..tensor import Tensor
from ..thread_settings import ThreadSettings
from . import forward_ad
from .versions import version_counter

if TYPE_CHECKING:
    from .graph import Node

FREED_ERROR = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")
FREED = object()  # what a backward node holds in place of its saved values once they were freed


class _HookStack(ThreadSettings):
    stack: tuple["saved_tensors_hooks", ...] = ()


_hooks = _HookStack()
_new = object.__new__


class saved_tensors_hooks:
    """Inside the block, every tensor saved for backward is stored as ``pack(tensor)`` and given back
    to backward as ``unpack(packed)`` (to offload, compress or log what the graph keeps)."""

    # Whether ``unpack`` gives back the value saved even after an in-place change to the tensor (it
    # kept a copy: ``allow_mutation_on_saved_tensors``), so that the saved version need not be checked.
    keeps_saved_values = False

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _disabled.message is not None:
            raise RuntimeError(_disabled.message)
        _hooks.stack = _hooks.stack + (self,)
        return self

    def __exit__(self, *exc: object) -> None:
        _hooks.stack = _hooks.stack[:-1]


class _Disabled(threading.local):
    message: str | None = None  # while set, saved_tensors_hooks raises it (a plain local: ops never read it)


_disabled = _Disabled()


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """PyTorch's guard for code that saved-tensor hooks would break: inside it (a block or a decorated
    function), entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``; so does
    entering it while hooks are active."""
    if _hooks.stack:
        raise RuntimeError(error_message)
    previous, _disabled.message = _disabled.message, error_message
    try:
        yield
    finally:
        _disabled.message = previous


class save_on_cpu(saved_tensors_hooks):
    """PyTorch's offloading of saved tensors to host memory: a CUDA tensor is saved as a host copy and
    copied back to the GPU when backward needs it; a CPU tensor's array is kept as it is."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(_pack_on_cpu, _unpack_from_cpu)


def _pack_on_cpu(tensor: Tensor) -> tuple[bool, np.ndarray]:
    on_device = type(tensor._data) is not np.ndarray
    return on_device, to_host(tensor._data) if on_device else tensor._data


def _unpack_from_cpu(packed: tuple[bool, np.ndarray]) -> Tensor:
    on_device, array = packed
    return Tensor._make(to_device(array) if on_device else array)


def version_of(tensor: Tensor) -> int:
    """A tensor's version, without making its counter: one never made is at version 0, and an in-place
    change makes it (``versions.increment_version``), so a node can keep a saved input's version as a
    number, and no object, and compare it when it reads the input (``check_version``)."""
    counter = tensor._version_counter
    return 0 if counter is None else counter[0]


def check_version(tensor: Tensor, version: int, node: "Node") -> Tensor:
    """``tensor``, an input ``node`` saved at ``version``, if it is still at that version."""
    now = version_of(tensor)
    if now != version:
        raise modified_error(tensor._data.dtype, tensor._data.shape, _history_of(tensor), now, version)
    return tensor


def check_savable(tensor: Tensor) -> None:
    if tensor._is_inference:
        raise RuntimeError("Inference tensors cannot be saved for backward. Please do not use Tensors created "
                           "in inference mode in computation tracked by autograd. To work around this, you can "
                           "make a clone to get a normal tensor and use it in autograd, or use "
                           "`jitgrad.no_grad()` instead of `jitgrad.inference_mode()`.")


def saving_hooks() -> bool:
    """Whether saved-tensor hooks are active: tensors saved now go through ``SavedTensor`` and its pack."""
    return bool(_hooks.stack)


def _history_of(tensor: Tensor | None) -> str | None:
    """What PyTorch's message says of a saved input: the node whose output it is now (after the in-place
    change, its node), nothing for a leaf or a tensor that does not require grad. PyTorch 2.13 names
    the node without its ``Backward0`` ending ("output 0 of Exp"; "of My" for ``MyBackward``)."""
    fn = tensor._grad_fn if tensor is not None else None
    return f"output {tensor._output_nr} of {_BACKWARD_ENDING.sub('', fn.name())}" if fn is not None else None


_BACKWARD_ENDING = re.compile(r"Backward\d*$")


def modified_error(dtype: np.dtype, shape: tuple, owner: str | None, now: int, expected: int) -> RuntimeError:
    which = f", which is {owner}," if owner is not None else ""
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{dtype.name} {list(shape)}]{which} is at version "
        f"{now}; expected version {expected} instead. Hint: enable anomaly "
        "detection to find the operation that failed to compute its gradient, with "
        "jitgrad.autograd.set_detect_anomaly(True, check_nan=False).")


class SavedTensor:
    __slots__ = ("_tensor", "_data", "_output_nr", "_released", "_unpack_hook", "_counter", "_version",
                 "_description")

    def __init__(self, tensor: Tensor, output_nr: int | None = None) -> None:
        """``output_nr`` is given when ``tensor`` is output ``output_nr`` of the node saving it. Ops save
        through here often, so nothing is computed that only an error needs."""
        check_savable(tensor)
        self._released = False
        self._output_nr = output_nr
        counter = self._counter = version_counter(tensor)
        self._version = counter[0]
        if _hooks.stack:
            hooks = _hooks.stack[-1]
            self._unpack_hook = hooks.unpack_hook
            self._description = (tensor._data.dtype, tensor._data.shape)
            self._tensor, self._data = None, hooks.pack_hook(tensor)
            if counter[0] != self._version:  # the saved values would be the changed ones, silently
                raise RuntimeError("A saved tensor pack hook is modifying its input in place. Tensors provided as "
                                   "input to pack hook cannot be modified by in-place operations as this can lead "
                                   "to unexpected side-effects. Please open an issue if you need to perform "
                                   "in-place operations on the input to a pack hook.")
            if hooks.keeps_saved_values:  # a counter of its own, never written: the hooks answer for the value
                self._counter, self._version = [0], 0
            return
        self._unpack_hook = self._description = None
        if output_nr is None:
            self._tensor, self._data = tensor, None
        else:
            self._tensor, self._data = None, tensor._data

    @classmethod
    def of_new_output(cls, tensor: Tensor, output_nr: int) -> "SavedTensor":
        """``SavedTensor(tensor, output_nr)`` for an output its op has just made, with no saved-tensor
        hooks in any thread (``thread_settings.all_default``): what a node of ``tanh`` or ``exp`` saves
        on every call, without the checks a fresh output passes."""
        saved = _new(cls)
        counter = tensor._version_counter  # ``version_counter(tensor)``, inline: a frame less per node
        if counter is None:
            counter = tensor._version_counter = [0]
        saved._counter = counter
        saved._version = counter[0]
        saved._released = False
        saved._output_nr = output_nr
        saved._tensor = saved._unpack_hook = saved._description = None
        saved._data = tensor._data
        return saved

    def readable(self) -> bool:
        """Whether ``array()`` may stand for ``unpack``: not freed, not packed by hooks, not modified."""
        return self.readable_array() is not None

    def readable_array(self) -> np.ndarray | None:
        """``array()`` where ``readable()``, else None: a staged formula reads a saved output in one
        call (a ``tanh`` node's backward made two)."""
        if self._released or self._unpack_hook is not None or self._counter[0] != self._version:
            return None
        return self._data if self._tensor is None else self._tensor._data

    def array(self) -> np.ndarray:
        """The saved values as an array, without the tensor ``unpack`` would build (when ``readable``)."""
        return self._data if self._tensor is None else self._tensor._data

    def unpack(self, node: "Node") -> Tensor:
        if self._released:
            raise RuntimeError(FREED_ERROR)
        if self._counter[0] != self._version:
            dtype, shape = self._description or (self.array().dtype, self.array().shape)
            owner = (f"output {self._output_nr} of {_BACKWARD_ENDING.sub('', node.name())}"
                     if self._output_nr is not None else _history_of(self._tensor))
            raise modified_error(dtype, shape, owner, self._counter[0], self._version)
        if self._unpack_hook is not None:
            value = self._unpack_hook(self._data)
            if not isinstance(value, Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                                f"type {type(value).__name__}")
            if self._output_nr is None:
                return value
            data = value._data
        elif self._output_nr is None:
            return self._tensor
        else:
            data = self._data
        tensor = Tensor._make(data, True)
        tensor._grad_fn = node
        tensor._output_nr = self._output_nr
        level = forward_ad.state.level
        if level is not None:  # forward over reverse: the rebuilt output keeps the output's tangent
            tangent = level.output_tangent(node, self._output_nr)
            if tangent is not None:
                level.set(tensor, tangent)
        return tensor

    def release(self) -> None:
        self._tensor = self._data = None
        self._released = True
