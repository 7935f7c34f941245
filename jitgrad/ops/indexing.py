"""``x[index]`` and its backward, a scatter that accumulates where an index repeats."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..shapes import check_not_0d, wrap_dim
from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta, given
from .public import public
from .registry import defop


def normalize_index(index: Any) -> tuple:
    """The index as a tuple numpy understands: tensors and lists become integer or boolean arrays.
    The index becomes an attribute of the op, so it must not be a traced tensor: under a trace it
    stands for every value it could take, and baking in this one would give wrong results later. An
    index tensor's or array's values are copied: the backward scatters by them, so an in-place change
    to the index before it runs would otherwise send the gradient to other elements, silently."""
    if not isinstance(index, tuple):
        index = tuple(index) if type(index) is list and _list_as_tuple(index) else (index,)
    out = []
    for item in index:
        if isinstance(item, Tensor):
            if item._data.dtype.kind in "biu":
                # the values themselves (a CUDA index's copied to the host, as attributes are host
                # values): a traced tensor refuses (TraceError)
                item = item.cpu().numpy() if item.is_cuda else item.numpy().copy()
                if item.dtype == np.uint8:  # a mask, as in PyTorch (numpy would take the values as indices)
                    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                                  "torch.bool instead.", UserWarning, stacklevel=3)
                    item = item.astype(np.bool_)
                if item.ndim == 0 and item.dtype.kind in "iu":  # an integer, as in PyTorch: x[t] is a view
                    item = int(item)
            else:
                item = item._data
        elif isinstance(item, (list, range, np.ndarray)):
            item = np.array(item) if len(item) else np.zeros(0, np.int64)  # x[[]] selects nothing
        if isinstance(item, np.ndarray) and item.dtype.kind not in "biu":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, "
                             f"not {item.dtype}")
        out.append(item)
    return tuple(out)


def _list_as_tuple(index: Any) -> bool:
    """PyTorch's reading of a list index (after numpy's old rule): a short list holding a sequence, a
    tensor, a slice, None or Ellipsis is a tuple of indices, one per dimension (``x[[[0, 1], [1, 2]]]``
    is ``x[[0, 1], [1, 2]]``); any other list is one integer or boolean index."""
    return len(index) < 32 and any(isinstance(i, (list, tuple, range, Tensor, np.ndarray, slice))
                                   or i is None or i is Ellipsis for i in index)


_BASIC_ITEMS = frozenset({int, slice})  # exactly these types (a bool indexes as a mask does)


def is_advanced(index: tuple) -> bool:
    """Whether ``index`` holds an integer or boolean array: numpy's advanced indexing, a copy."""
    return any(isinstance(i, np.ndarray) for i in index)


def _index_node(args, attrs) -> str:
    """PyTorch applies the items of a basic index in turn, skipping full slices and ``...`` in a tuple,
    and the node is named after the last one applied (``x[:, 0]`` is a select)."""
    index = attrs["index"]
    if is_advanced(index):
        return "IndexBackward0"
    for item in reversed(index):
        if isinstance(item, (int, np.integer)):
            return "SelectBackward0"
        if item is None:
            return "UnsqueezeBackward0"
        if isinstance(item, slice) and (item != slice(None) or len(index) == 1):
            return "SliceBackward0"
    return "AliasBackward0"


def _scatter_forward(grad, shape, index):
    out = np.zeros(shape, dtype=grad.dtype)
    if is_advanced(index):
        np.add.at(out, index, grad)
    else:
        out[index] = grad
    return out


def without_ellipsis(index: tuple, rank: int) -> tuple:
    """``index`` with its ``...`` (if any) written out as the whole slices it stands for."""
    if Ellipsis not in index:
        return index
    at = index.index(Ellipsis)
    return index[:at] + (slice(None),) * (rank - len(index) + 1) + index[at + 1:]


def _getitem_forward(a, index):
    if not is_advanced(index) and Ellipsis not in index:
        index = index + (Ellipsis,)  # numpy then returns a 0-d view, not a copied scalar, for x[0]
    return a[index]


def _getitem_meta(self, index):
    """The shape numpy's indexing gives, found by indexing a stand-in of ``self``'s shape that holds
    one byte (every element the same, broadcast): no memory of the tensor's size is touched."""
    stand_in = np.broadcast_to(np.zeros((), np.int8), self.shape)
    return TensorMeta(_getitem_forward(stand_in, index).shape, self.dtype)


_getitem = defop("getitem", ("self",), _getitem_forward, _index_node, meta=_getitem_meta, lower=intrinsic("getitem"),
                 view=True, self=lambda grad, self_shape, index: _index_scatter(grad, shape=self_shape, index=index),
                 jvp=lambda self_t, index: _getitem(self_t, index=index))

_index_scatter = defop("index_scatter", ("grad",), _scatter_forward, "IndexBackwardBackward0",
                       meta=given("shape", 0), lower=intrinsic("index_scatter"),
                       grad=lambda grad, index: _getitem(grad, index=index),
                       jvp=lambda grad_t, shape, index: _index_scatter(grad_t, shape=shape, index=index))


def _dims_taken(item: Any) -> int:
    """How many of the input's dimensions an index item selects from (a mask: as many as it has)."""
    if item is None or item is Ellipsis:
        return 0
    return item.ndim if isinstance(item, np.ndarray) and item.dtype == bool else 1


def in_pytorch_order(index: tuple, ndim: int) -> tuple[tuple, tuple] | None:
    """PyTorch applies an index's integers, slices, None and ``...`` first and its tensors after, to
    the dimensions left; numpy treats an integer beside an array as an array too, and an ellipsis or
    None between two arrays as a separator, so ``x[0, None, [0, 1]]`` or ``x[1, ..., [0, 1]]`` would
    come out with other dimensions first. Returns the basic index and the advanced one that numpy
    applies in turn to give PyTorch's result, or None where one numpy step already does."""
    if not is_advanced(index) or not any(i is None or i is Ellipsis or isinstance(i, (int, np.integer))
                                          for i in index):
        return None
    spanned = ndim - sum(_dims_taken(i) for i in index)
    basic, advanced = [], []
    for item in index:
        if isinstance(item, np.ndarray):
            basic += [slice(None)] * _dims_taken(item)
            advanced.append(item)
        elif item is Ellipsis:
            basic.append(item)
            advanced += [slice(None)] * spanned
        else:
            basic.append(item)
            if not isinstance(item, (int, np.integer)):  # a slice or None leaves a dimension
                advanced.append(slice(None))
    return tuple(basic), tuple(advanced)


@public("function")
def getitem(input: Tensor, index: Any) -> Tensor:
    if type(index) in _BASIC_ITEMS:  # x[1:], x[0]: one numpy step as it is, nothing to normalize
        return _getitem(input, index=(index,))
    if type(index) is tuple and all(type(i) in _BASIC_ITEMS or i is None or i is Ellipsis for i in index):
        return _getitem(input, index=index)
    index = normalize_index(index)
    steps = in_pytorch_order(index, input._data.ndim)
    if steps is None:
        return _getitem(input, index=index)
    basic, advanced = steps
    return _getitem(_getitem(input, index=basic), index=advanced)


@public("function", "method")
def select(input: Tensor, dim: int, index: int) -> Tensor:
    check_not_0d(input._data.ndim, "select", "select from", IndexError)
    return getitem(input, (slice(None),) * wrap_dim(dim, input._data.ndim, "select") + (index,))


@public("function", "method")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    check_not_0d(input._data.ndim, "narrow", "narrow; unsqueeze it first")
    dim = wrap_dim(dim, input._data.ndim, "narrow")
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return getitem(input, (slice(None),) * dim + (slice(start, start + length),))
