"""Attaches the operators to ``Tensor`` as methods and Python operators (``x.exp()``, ``x @ w``).

The methods named like an op are the ops declared public as a ``"method"`` where they are defined
(``jitgrad/ops/public.py``); this file adds the Python operators and the methods that are not ops of
their own (``to``, ``view``, ``T``...). ``jitgrad/ops/__init__.py`` imports it last, once every op is
declared.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..tensor import Tensor
from . import arithmetic, inplace
from ..device import CPU, as_device, device
from .arithmetic import to_dtype
from .bitwise import OPS as bitwise_ops
from .device_copy import to as copy_to
from .op_callers import caller
from .public import public_names
from .registry import OpDef
from .shape import shape_arg


def _to(self, *args, **kwargs):
    """``x.to(dtype)``, ``x.to(device)``, ``x.to(device, dtype)``, ``x.to(other)`` (its device and dtype),
    with ``copy=`` and ``non_blocking=`` (accepted; copies are ordered on the stream), as in PyTorch. The
    cast runs on the CPU side of a copy between devices, so it is one kernel fewer on the GPU."""
    dtype = kwargs.pop("dtype", None)
    target = as_device(kwargs.pop("device", None))
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for arg in args:
        if isinstance(arg, Tensor):
            target, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, device)) or (isinstance(arg, int) and not isinstance(arg, bool)):
            target = as_device(arg)
        elif arg is not None:
            dtype = arg
    if target is not None and target.type == "cuda" and self.device.type != "cuda":
        cast = self if dtype is None else to_dtype(self, dtype)
        return copy_to(cast, target, copy=copy and cast is self)
    moved = self if target is None else copy_to(self, target, copy=copy and dtype is None)
    return moved if dtype is None else to_dtype(moved, dtype)


def _cuda(self, device=None, non_blocking=False):  # noqa: ARG001 - accepted as in PyTorch
    """This tensor on the GPU (itself when it is there already)."""
    return copy_to(self, as_device("cuda" if device is None else device))


def _cpu(self):
    """This tensor in host memory (itself when it is there already)."""
    return copy_to(self, CPU)


def _reversed(fn):
    def method(self, other):
        return fn(other, self)
    return method


def _expand_as(self, other):
    return ops.expand(self, other._data.shape)


def _view(self, *shape):
    """``reshape`` that never copies: PyTorch's ``view`` refuses a shape the tensor's strides cannot
    give (``x.T.view(-1)``), since writing into a copy would silently leave ``x`` unchanged."""
    target = shape_arg(shape)
    data = self._data
    if type(data) is np.ndarray:
        probe = data.view()
    else:  # a device array: numpy decides on a stand-in with its strides, whose memory is never read
        probe = np.lib.stride_tricks.as_strided(np.empty(1, data.dtype), data.shape, data.strides)
    try:
        probe.shape = target
    except AttributeError:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one "
                           f"dimension spans across two contiguous subspaces): view{target} of a tensor of "
                           f"shape {list(self._data.shape)} and strides {_strides(self._data)}. Use "
                           f".reshape(...) instead.") from None
    except ValueError:
        pass  # a size mismatch: reshape's error says it
    return ops.reshape(self, target)


def _mT(self):
    """PyTorch's ``mT``: the last two dimensions swapped, of a matrix or a batch of them."""
    ndim = self._data.ndim
    if ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {ndim}-D tensor.")
    return ops.transpose(self, -2, -1)


_LEGACY_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
                 "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                 "bool": "BoolTensor"}


def _type(self, dtype=None, non_blocking=False):  # noqa: ARG001 - accepted as in PyTorch
    """PyTorch's ``type``: with no argument the legacy type name (``'jitgrad.FloatTensor'``,
    ``'jitgrad.cuda.FloatTensor'``); with a dtype, or such a name, this tensor cast to it (as ``to``).
    PyTorch's tutorials count correct answers with ``(pred == y).type(torch.float).sum()``."""
    if dtype is None:
        where = "cuda." if self.device.type == "cuda" else ""
        return f"jitgrad.{where}{_LEGACY_NAMES.get(str(self._data.dtype), 'Tensor')}"
    if isinstance(dtype, str):
        by_name = {name: key for key, name in _LEGACY_NAMES.items()}
        name = dtype.rsplit(".", 1)[-1]
        if name not in by_name:
            raise RuntimeError(f"invalid type: '{dtype}'")
        if ".cuda." in dtype and self.device.type != "cuda":
            return _to(self, "cuda", by_name[name])
        return to_dtype(self, by_name[name])
    return to_dtype(self, dtype)


def _kind(value) -> str:
    """numpy's kind letter of a tensor's or a Python number's dtype."""
    return value._data.dtype.kind if isinstance(value, Tensor) else np.asarray(value).dtype.kind


def _logical(symbol: str, bitwise: str, op):
    """``&``, ``|`` (``op(a, b)``) or ``~`` (``op(a)``) of bool tensors: the logical op. PyTorch's are
    bitwise for integers (``~tensor([1, 0])`` is ``[-2, -1]``): ``ops/bitwise.py``'s, computed on the
    host; floats are PyTorch's errors."""
    call = caller(op) if isinstance(op, OpDef) else op

    def operator(*operands):
        kinds = {_kind(v) for v in operands}
        if kinds <= {"b"}:
            return call(*operands)
        if symbol == "~" and "f" in kinds:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        if "f" in kinds:
            raise NotImplementedError(f'"{bitwise}_cpu" not implemented for a floating dtype')
        return bitwise_ops[bitwise](*operands)
    return operator


def _equality(op):
    """``==``/``!=``: an operand that is neither a tensor nor a number (``x == None``) is Python's
    identity comparison (False/True), as PyTorch's, rather than the elementwise op's TypeError."""
    def operator(self, other):
        if not isinstance(other, (Tensor, numbers.Number, np.generic, np.ndarray)):
            return NotImplemented
        return op(self, other)
    return operator


def _contains(self, element) -> bool:
    """``element in tensor``: whether any element equals it, as PyTorch's (Python's default iterates over
    the first dimension, whose rows cannot be told true or false)."""
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")
    return bool(ops.eq(self, element).any().item())


def _contiguous(self, memory_format=None):  # noqa: ARG001 - accepted as in PyTorch
    """This tensor when its elements lie in row-major order already (as PyTorch returns ``self``),
    else a row-major copy (``CloneBackward0``)."""
    data = self._data
    in_order = data.flags.c_contiguous if type(data) is np.ndarray else getattr(data, "is_c_contiguous", bool)()
    return self if in_order else ops.clone(self, memory_format="contiguous_format")


def _view_as(self, other):
    return _view(self, tuple(other._data.shape))


def _type_as(self, other):
    """This tensor cast to ``other``'s dtype (itself when it has it)."""
    return to_dtype(self, other._data.dtype)


def _where(self, condition, y):
    """``x.where(condition, y)``: ``where(condition, x, y)``, as PyTorch's method."""
    return ops.where(condition, self, y)


def _polygamma(self, n):
    """``x.polygamma(n)``: the function's arguments in the other order."""
    return ops.polygamma(n, self)


# PyTorch's casting methods (``x.half()`` is ``x.to(torch.float16)``); bfloat16 has no numpy dtype.
_CASTS = {"half": "float16", "float": "float32", "double": "float64", "char": "int8", "byte": "uint8",
          "short": "int16", "int": "int32", "long": "int64", "bool": "bool"}


def _cast_method(name: str, dtype: str):
    def cast(self, memory_format=None):  # noqa: ARG001 - accepted as in PyTorch
        return to_dtype(self, dtype)
    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"``self.to({dtype})``: this tensor itself when it has that dtype already, as in PyTorch."
    return cast


def _strides(array) -> list[int]:
    return [s // array.itemsize for s in array.strides]


def _attach() -> None:
    for name, method in public_names("method").items():
        setattr(Tensor, name, method)
    operators = {
        # the ops themselves, not the public functions that take PyTorch's alpha= and rounding_mode=
        "__add__": arithmetic.add, "__radd__": arithmetic.add, "__sub__": arithmetic.sub,
        "__rsub__": _reversed(caller(arithmetic.sub)), "__mul__": ops.mul, "__rmul__": ops.mul,
        "__truediv__": arithmetic.div, "__rtruediv__": _reversed(caller(arithmetic.div)),
        "__pow__": ops.pow, "__rpow__": _reversed(ops.pow), "__floordiv__": ops.floor_divide,
        "__rfloordiv__": _reversed(ops.floor_divide), "__mod__": ops.remainder,
        "__rmod__": _reversed(ops.remainder), "__matmul__": ops.matmul,
        "__rmatmul__": _reversed(ops.matmul), "__eq__": _equality(ops.eq), "__ne__": _equality(ops.ne), "__lt__": ops.lt,
        "__le__": ops.le, "__gt__": ops.gt, "__ge__": ops.ge,
        "__and__": _logical("&", "bitwise_and", ops.logical_and),
        "__rand__": _logical("&", "bitwise_and", ops.logical_and),
        "__or__": _logical("|", "bitwise_or", ops.logical_or), "__ror__": _logical("|", "bitwise_or", ops.logical_or),
        "__xor__": _logical("^", "bitwise_xor", ops.logical_xor),
        "__rxor__": _logical("^", "bitwise_xor", ops.logical_xor),
        "__invert__": _logical("~", "bitwise_not", ops.logical_not), "__neg__": ops.neg, "__abs__": ops.abs,
        "__lshift__": bitwise_ops["bitwise_left_shift"], "__rshift__": bitwise_ops["bitwise_right_shift"],
        "__rlshift__": _reversed(bitwise_ops["bitwise_left_shift"]),
        "__rrshift__": _reversed(bitwise_ops["bitwise_right_shift"]),
        "__getitem__": ops.getitem,
    }
    for name, fn in operators.items():
        setattr(Tensor, name, caller(fn) if isinstance(fn, OpDef) else fn)
    Tensor.clip_ = inplace.clamp_
    Tensor.__iadd__, Tensor.__isub__ = inplace.add_, inplace.sub_
    Tensor.__imul__, Tensor.__itruediv__, Tensor.__ipow__ = inplace.mul_, inplace.div_, inplace.pow_
    # in place, as PyTorch's: without them Python rebinds ``x //= 2`` to a new tensor and a tensor held
    # elsewhere (a list, a buffer) keeps its old values, silently (until 2026-11-28)
    Tensor.__ifloordiv__, Tensor.__imod__ = Tensor.floor_divide_, Tensor.remainder_
    Tensor.__iand__, Tensor.__ior__, Tensor.__ixor__ = Tensor.bitwise_and_, Tensor.bitwise_or_, Tensor.bitwise_xor_
    Tensor.__ilshift__, Tensor.__irshift__ = Tensor.bitwise_left_shift_, Tensor.bitwise_right_shift_
    Tensor.__setitem__ = inplace.setitem
    Tensor.to = _to
    Tensor.cuda = _cuda
    Tensor.cpu = _cpu
    for name, dtype in _CASTS.items():
        setattr(Tensor, name, _cast_method(name, dtype))
    Tensor.type = _type
    Tensor.view = _view
    Tensor.expand_as = _expand_as
    Tensor.contiguous = _contiguous
    Tensor.__contains__ = _contains
    Tensor.__pos__ = Tensor.positive
    Tensor.__reversed__ = lambda self: self if self._data.ndim == 0 else ops.flip(self, 0)  # PyTorch's: a tensor
    Tensor.view_as = _view_as
    Tensor.type_as = _type_as
    Tensor.where = _where
    Tensor.polygamma = _polygamma
    Tensor.clip = Tensor.clamp
    Tensor.T = property(lambda self: ops.permute(self, tuple(reversed(range(self._data.ndim)))))
    Tensor.mT = property(_mT)


_attach()
