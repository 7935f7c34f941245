"""The Tensor: a numpy array plus the autograd metadata PyTorch keeps beside it.

A tensor that requires grad is either a leaf (``grad_fn is None``; gradients accumulate into ``.grad``
through its ``AccumulateGrad`` node) or the ``output_nr``-th output of the node ``grad_fn``. Operator
methods (``x.exp()``, ``x + y``) are attached by ``jitgrad.ops.methods`` so that this module holds only
the state and the autograd surface.

This is the bottom layer: autograd and ops build on it, so it imports neither. The two things its
autograd surface needs from above, running ``backward`` and knowing whether inference mode is on,
autograd fills into ``autograd_hooks`` when it is imported.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import dtypes
from .device import CPU, device, device_of, to_device, to_host
from .hooks import RemovableHandle
from .formatting import tensor_repr
from .shapes import Size, check_not_0d, wrap_dim
from .shared_arrays import root_array, shared_counter

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead.")


class Tensor:
    # ``_version_counter`` is a one-element list shared by a tensor and its views, made when first
    # needed; ``_view`` is ``(base, base's version when the view was taken)`` for a view, else None.
    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_hooks",
                 "_grad_accumulator", "_retains_grad", "_version_counter", "_view", "_is_inference",
                 "_post_accumulate_grad_hooks", "__weakref__")

    # numpy must hand binary operators with a Tensor on the right to Tensor's reflected methods.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, data: Any = (), *, dtype: dtypes.dtype | None = None) -> None:
        """``jitgrad.Tensor(data)`` builds a tensor of the default float dtype, like ``torch.Tensor``."""
        np_dtype = dtypes.as_numpy_dtype(dtype) or dtypes.get_default_dtype().numpy
        self._init(np.array(data, dtype=np_dtype), False)

    def _init(self, data: np.ndarray, requires_grad: bool) -> None:
        self._data = data
        self._requires_grad = requires_grad
        self._grad = self._grad_fn = self._hooks = self._grad_accumulator = None
        self._version_counter = self._view = self._post_accumulate_grad_hooks = None
        self._output_nr = 0
        self._retains_grad = False
        self._is_inference = False

    @classmethod
    def _make(cls, data: np.ndarray, requires_grad: bool = False) -> "Tensor":
        """Wraps an array without copying; the constructor every op goes through (hence inlined)."""
        t = object.__new__(cls)
        t._data = data
        t._requires_grad = requires_grad
        t._grad = t._grad_fn = t._hooks = t._grad_accumulator = t._version_counter = t._view = None
        t._post_accumulate_grad_hooks = None
        t._output_nr = 0
        t._retains_grad = False
        t._is_inference = False
        return t

    # ---- value -------------------------------------------------------------------------------------
    @property
    def data(self) -> "Tensor":
        """A tensor sharing this one's array, outside autograd (``p.data -= lr * p.grad``). Of this
        tensor's class, so that a traced tensor's data is still traced (it refuses ``numpy()``). It
        shares the version counter too, so that writing through it while a graph still needs the
        values is the error eager mode gives for any in-place change, never a silently wrong gradient."""
        return self._alias()

    def _alias(self) -> "Tensor":
        """A tensor of this class on the same array and version counter, with no history; an alias of an
        inference tensor is one too (PyTorch's ``detach()`` and ``.data``; before 2026-11-28 it was
        not, so an in-place change through it went past the inference tensor's guard)."""
        out = type(self)._make(self._data)
        out._is_inference = self._is_inference
        if self._version_counter is None:
            self._version_counter = [0]
        out._version_counter = self._version_counter
        return out

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, not {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind not in "fc":  # else: an integer tensor requiring grad
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex "
                               "dtype")
        if self._grad_accumulator is not None and (value._data.dtype != self._data.dtype
                                                   or type(value._data) is not type(self._data)):
            self._grad_accumulator = None  # as PyTorch's set_data: its node describes the old dtype and device
        self._data = value._data

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._data.shape)
        check_not_0d(self._data.ndim, "size", "measure", IndexError)
        return self._data.shape[wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self) -> dtypes.dtype:
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    @property
    def device(self) -> device:
        return CPU if type(self._data) is np.ndarray else device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return type(self._data) is not np.ndarray and device_of(self._data).type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return type(self._data) is np.ndarray

    def _host_data(self) -> np.ndarray:
        """The values as a numpy array: this tensor's own for a CPU tensor, a copy for a CUDA one."""
        data = self._data
        return data if type(data) is np.ndarray else to_host(data)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    # ---- memory layout, as PyTorch reports it, read from the array's own ---------------------------
    def ndimension(self) -> int:
        return self._data.ndim

    def element_size(self) -> int:
        """Bytes per element (4 for float32)."""
        return self._data.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (``numel() * element_size()``), whatever the strides."""
        return self._data.size * self._data.dtype.itemsize

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """Steps between neighbouring elements of each dimension, in elements (numpy's are bytes)."""
        steps = tuple(s // self._data.dtype.itemsize for s in self._data.strides)
        if dim is None:
            return steps
        check_not_0d(self._data.ndim, "stride", "measure", IndexError)
        return steps[wrap_dim(dim, self._data.ndim, "stride")]

    def is_contiguous(self, memory_format: Any = None) -> bool:  # noqa: ARG002 - accepted as in PyTorch
        """Whether the elements lie in row-major order without gaps (sizes of 1 ignored, as in PyTorch)."""
        data = self._data
        return bool(data.flags.c_contiguous) if type(data) is np.ndarray else bool(data.is_c_contiguous())

    def data_ptr(self) -> int:
        """The address of the first element (of a view: where the view starts), as PyTorch's."""
        data = self._data
        if type(data) is np.ndarray:
            return data.__array_interface__["data"][0]
        return data.__cuda_array_interface__["data"][0]

    def storage_offset(self) -> int:
        """Elements between the start of the memory this tensor views (its first base array's) and
        its first element: 0 for a tensor that owns its memory, as in PyTorch."""
        data = self._data
        if type(data) is not np.ndarray:
            return 0
        root = data
        while isinstance(root.base, np.ndarray):
            root = root.base
        low = np.byte_bounds(root)[0] if hasattr(np, "byte_bounds") else np.lib.array_utils.byte_bounds(root)[0]
        return (data.__array_interface__["data"][0] - low) // data.dtype.itemsize

    def numpy(self) -> np.ndarray:
        """The array inside (shared, not copied), as ``torch.Tensor.numpy`` does."""
        if self.is_cuda:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                            "copy the tensor to host memory first.")
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._version_counter is None:  # memory numpy code may hand back through from_numpy
            self._version_counter = shared_counter(self._data, [0])
        else:
            shared_counter(self._data, self._version_counter)
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def item(self) -> float | int | bool:
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._host_data().reshape(()).item()

    def tolist(self) -> Any:
        return self._host_data().tolist()

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator["Tensor"]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    def __format__(self, format_spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.4f}"``), as in PyTorch."""
        if self._data.ndim == 0:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    def __repr__(self) -> str:
        suffixes = []
        if self._grad_fn is not None:
            suffixes.append(f"grad_fn=<{self._grad_fn.name()}>")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        place = None if type(self._data) is np.ndarray else self.device
        return tensor_repr(self._host_data(), self._data.dtype.name, dtypes.get_default_dtype().name, suffixes,
                           None if place is None or place == CPU else str(place))

    # ---- autograd metadata -------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None and value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        self.requires_grad_(value)

    def is_inference(self) -> bool:
        """Whether this tensor was made under ``inference_mode`` (or is a view of one that was)."""
        return self._is_inference

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and self._is_inference:
            if not autograd_hooks.inference_mode_enabled():
                raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not "
                                   "allowed.")
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point dtype can require gradients "
                               f"(this tensor is {self.dtype!r}; convert it with .float() or .double())")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's memory has seen (shared with its views)."""
        return self._version_counter[0] if self._version_counter else 0

    @property
    def _base(self) -> "Tensor | None":
        return self._view[0] if self._view else None

    def _is_view(self) -> bool:
        return self._view is not None

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self) -> "Tensor | None":
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            # PyTorch 2.13's messages, the dtype checked first as there
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor with "
                                   f"grad_dtype '{self.dtype}'. The gradient must match the tensor's grad_dtype "
                                   "(defaults to the tensor's dtype).")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                                   f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                                   "and the tensor are the same size")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Asks backward to fill ``.grad`` of this non-leaf too (a no-op on leaves, as in PyTorch)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._grad_fn._retain_grad(self._output_nr, weakref.ref(self))
        self._retains_grad = True

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> RemovableHandle:
        """Runs ``hook(grad)`` when this tensor's gradient is computed, before it is used or accumulated;
        a returned tensor replaces the gradient."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = {}
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[["Tensor"], None]) -> RemovableHandle:
        """Runs ``hook(tensor)`` each time backward has accumulated a gradient into this leaf's ``.grad``
        (after its ``register_hook`` hooks and the accumulation): the moment a gradient is final for
        this backward, when an optimizer step or a data-parallel all-reduce of it can start."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = {}
        return RemovableHandle(self._post_accumulate_grad_hooks, hook)

    def detach(self) -> "Tensor":
        """A new tensor sharing this one's array and version counter (an in-place change through it
        is seen by the graph, as in PyTorch), cut from the graph; of this tensor's class (a traced
        tensor detached is still traced)."""
        return self._alias()

    def __reduce_ex__(self, protocol: int) -> tuple:
        """Pickled as its values (their root array, which pickle writes once however many tensors view
        it, and where in it they lie), its class, ``requires_grad`` and device, as PyTorch's: a view
        or a tensor with history pickles too (it comes back a leaf), where the default pickled the slots
        and failed on the graph's nodes and the views' functions."""
        data = self._data if type(self._data) is np.ndarray else to_host(self._data)
        root, offset = _root_and_offset(data)
        if root is None:
            data = root = np.ascontiguousarray(data)
        return (_unpickled, (type(self), root, offset, data.shape, data.strides, self._requires_grad,
                             str(self.device)))

    def __deepcopy__(self, memo: dict[int, Any]) -> "Tensor":
        """A new leaf with copies of this tensor's values and gradient, as PyTorch's: tensors copied
        together that shared memory share the copy (a view and its base stay one memory), which
        Python's default copy of the slots lost (each array copied alone); a tensor with history is
        PyTorch's error, where the default copied the whole graph behind it."""
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment. Detach it first (x.detach()) to copy its values.")
        data, shared = _copied_memory(self._data, memo)
        copied = type(self)._make(data, self._requires_grad)
        copied._is_inference = self._is_inference
        if shared:  # one counter for the memory, as views have (``shared_arrays``)
            copied._version_counter = shared_counter(data, [0])
        memo[id(self)] = copied
        if self._grad is not None:
            copied._grad = self._grad.__deepcopy__(memo)
        return copied

    def detach_(self) -> "Tensor":
        """Cuts this tensor from the graph in place. Not a view: its base would keep a history that the
        view, changed in place later, no longer joins (PyTorch refuses it too)."""
        if self._view is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def backward(self, gradient: "Tensor | None" = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: "Tensor | Sequence[Tensor] | None" = None) -> None:
        """Accumulates the gradient of this tensor into ``.grad`` of the leaves (``autograd.backward``)."""
        autograd_hooks.backward(self, gradient, retain_graph, create_graph, inputs)


def _autograd_not_imported(*args: object) -> None:
    raise RuntimeError("Tensor.backward needs jitgrad.autograd; import jitgrad")


class AutogradHooks:
    """What ``Tensor`` calls in the autograd layer above it, which sets these when it is imported
    (``jitgrad/autograd/__init__.py``). Until then no graph and no inference mode can exist: the
    defaults refuse a backward and report inference mode off."""

    __slots__ = ("backward", "inference_mode_enabled")

    def __init__(self) -> None:
        # backward(tensor, gradient, retain_graph, create_graph, inputs), as Tensor.backward's arguments
        self.backward: Callable[..., None] = _autograd_not_imported
        self.inference_mode_enabled: Callable[[], bool] = lambda: False


autograd_hooks = AutogradHooks()


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def _root_and_offset(data: np.ndarray) -> tuple[np.ndarray | None, int]:
    """The array whose memory ``data`` views (``root_array``) and the offset of ``data``'s first element
    in it, in bytes; None where that root is not C-contiguous (views of it
    cannot be rebuilt from a copy of it)."""
    root = root_array(data)
    if not root.flags.c_contiguous:
        return None, 0
    return root, data.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def _unpickled(cls: type, root: np.ndarray, offset: int, shape: tuple, strides: tuple, requires_grad: bool,
               place: str) -> Tensor:
    """A tensor ``__reduce_ex__`` described, sharing ``root`` (one array per pickle, however many
    tensors viewed it) and its version counter with the others made from it."""
    data = root if shape == root.shape and strides == root.strides and not offset \
        else np.ndarray(shape, root.dtype, root, offset, strides)
    if place != "cpu":
        return cls._make(to_device(data), requires_grad)
    made = cls._make(data, requires_grad)
    made._version_counter = shared_counter(data, [0])
    return made


def _copied_memory(data: Any, memo: dict[int, Any]) -> tuple[Any, bool]:
    """A copy of ``data``, and whether other copies may share its memory: of a numpy array, the same view
    of one copy of its root array made once per deep copy (``memo``), so arrays sharing memory still
    share it."""
    if type(data) is not np.ndarray:   # a device array: through the host, as ``to_device`` copies
        return to_device(to_host(data)), False
    root, offset = _root_and_offset(data)
    if root is None:
        return data.copy(), False
    copied = memo.get(id(root))
    if copied is None:
        copied = memo[id(root)] = root.copy()
    if data is root:
        return copied, True
    return np.ndarray(data.shape, data.dtype, copied, offset, data.strides), True
