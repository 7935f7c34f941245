"""Attaches the operators to ``Tensor`` as methods and Python operators (``x.exp()``, ``x @ w``).

The methods named like an op are the ops declared public as a ``"method"`` where they are defined
(``jitgrad/ops/public.py``); this file adds the Python operators and the methods that are not ops of
their own (``to``, ``view``, ``T``...). ``jitgrad/ops/__init__.py`` imports it last, once every op is
declared.
"""
from __future__ import annotations

from .. import ops
from ..tensor import Tensor
from . import inplace
from .arithmetic import to_dtype
from .public import public_names
from .shape import shape_arg


def _to(self, *args, **kwargs):
    """``x.to(dtype)``; a device argument other than "cpu" is refused, since jitgrad runs on the CPU."""
    dtype = kwargs.pop("dtype", None)
    for arg in args:
        if isinstance(arg, str) or arg is None:
            if arg not in (None, "cpu"):
                raise RuntimeError(f"to(): jitgrad eager tensors live on the CPU; got device {arg!r}")
        else:
            dtype = arg
    return self if dtype is None else to_dtype(self, dtype)


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
    probe = self._data.view()
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


def _t(self):
    """PyTorch's ``t()``: the transpose of a matrix; a vector or a 0-d tensor as it is (a view)."""
    ndim = self._data.ndim
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return ops.transpose(self, 0, 1) if ndim == 2 else ops.reshape(self, self._data.shape)


def _strides(array) -> list[int]:
    return [s // array.itemsize for s in array.strides]


def _attach() -> None:
    for name, method in public_names("method").items():
        setattr(Tensor, name, method)
    operators = {
        "__add__": ops.add, "__radd__": ops.add, "__sub__": ops.sub, "__rsub__": _reversed(ops.sub),
        "__mul__": ops.mul, "__rmul__": ops.mul, "__truediv__": ops.div, "__rtruediv__": _reversed(ops.div),
        "__pow__": ops.pow, "__rpow__": _reversed(ops.pow), "__floordiv__": ops.floor_divide,
        "__rfloordiv__": _reversed(ops.floor_divide), "__mod__": ops.remainder,
        "__rmod__": _reversed(ops.remainder), "__matmul__": ops.matmul,
        "__rmatmul__": _reversed(ops.matmul), "__eq__": ops.eq, "__ne__": ops.ne, "__lt__": ops.lt,
        "__le__": ops.le, "__gt__": ops.gt, "__ge__": ops.ge, "__and__": ops.logical_and,
        "__or__": ops.logical_or, "__invert__": ops.logical_not, "__neg__": ops.neg, "__abs__": ops.abs,
        "__getitem__": ops.getitem,
    }
    for name, fn in operators.items():
        setattr(Tensor, name, fn)
    Tensor.clip_ = inplace.clamp_
    Tensor.__iadd__, Tensor.__isub__ = inplace.add_, inplace.sub_
    Tensor.__imul__, Tensor.__itruediv__, Tensor.__ipow__ = inplace.mul_, inplace.div_, inplace.pow_
    Tensor.__setitem__ = inplace.setitem
    Tensor.to = _to
    Tensor.float = lambda self: to_dtype(self, "float32")
    Tensor.double = lambda self: to_dtype(self, "float64")
    Tensor.long = lambda self: to_dtype(self, "int64")
    Tensor.bool = lambda self: to_dtype(self, "bool")
    Tensor.view = _view
    Tensor.t = _t
    Tensor.expand_as = _expand_as
    Tensor.clip = Tensor.clamp
    Tensor.T = property(lambda self: ops.permute(self, tuple(reversed(range(self._data.ndim)))))
    Tensor.mT = property(lambda self: ops.transpose(self, -2, -1))


_attach()
