"""Ops that move elements without computing: reshape, transpose, squeeze, expand, cat, split..."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import dtypes
from ..autograd.forward_ad import tangent_or_zeros
from ..shapes import check_not_0d, wrap_dim
from ..tensor import Tensor
from .reductions import sum_to
from .lowering import intrinsic
from .meta_rules import TensorMeta, given, reshaped
from .public import public
from .registry import defop


def _explain_reshape(values, attrs):
    return f"shape '{list(attrs['shape'])}' is invalid for input of size {np.size(values[0])}"


def _explain_expand(values, attrs):
    return (f"The expanded size of the tensor must match the existing size at non-singleton dimensions: "
            f"cannot expand {list(np.shape(values[0]))} to {list(attrs['shape'])}")


def _explain_cat(values, attrs):
    """PyTorch's message: the first tensor whose size differs from the first one's, outside ``dim``."""
    shapes = [np.shape(v) for v in values]
    first, dim = shapes[0], attrs["dim"]
    for number, shape in enumerate(shapes[1:], start=1):
        if len(shape) != len(first):
            return (f"Tensors must have same number of dimensions: got {len(first)} and {len(shape)} "
                    f"(tensor number {number} in the list)")
        for d, (want, got) in enumerate(zip(first, shape)):
            if d != dim % max(len(first), 1) and want != got:
                return (f"Sizes of tensors must match except in dimension {dim}. Expected size {want} but "
                        f"got size {got} for tensor number {number} in the list.")
    return None


def _explain_stack(values, attrs):
    shapes = [list(np.shape(v)) for v in values]
    for entry, shape in enumerate(shapes[1:], start=1):
        if shape != shapes[0]:
            return (f"stack expects each tensor to be equal size, but got {shapes[0]} at entry 0 and {shape} at "
                    f"entry {entry}")
    return None


def _tangents_or_zeros(tangents, tensors):
    """The tangents of cat's and stack's inputs, zeros for those without one."""
    return [tangent_or_zeros(t, x) for t, x in zip(tangents, tensors)]


# Shape rules (see jitgrad.ops.meta_rules): where each op puts its input's elements.
def _reshape_meta(self, shape):
    return TensorMeta(reshaped(math.prod(self.shape), shape), self.dtype)


def _transpose_meta(self, dim0, dim1):
    shape = list(self.shape)
    if shape:
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return TensorMeta(tuple(shape), self.dtype)


def _squeeze_meta(self, dim, variant):
    return TensorMeta(tuple(s for i, s in enumerate(self.shape) if i not in dim), self.dtype)


def _unsqueeze_meta(self, dim):
    return TensorMeta(self.shape[:dim] + (1,) + self.shape[dim:], self.dtype)


def _joined_dtype(tensors) -> np.dtype:
    """PyTorch's promotion of the pieces' dtypes (an int64 piece joined to a float32 one gives float32,
    where numpy's would be float64)."""
    first = tensors[0].dtype
    if all(t.dtype == first for t in tensors):
        return first
    return dtypes.promote([t.dtype for t in tensors], [], [])


def _cat_meta(tensors, dim):
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return TensorMeta(tuple(shape), _joined_dtype(tensors))


def _stack_meta(tensors, dim):
    shape = tensors[0].shape
    return TensorMeta(shape[:dim] + (len(tensors),) + shape[dim:], _joined_dtype(tensors))


def _split_meta(self, sizes, dim, equal):
    return tuple(TensorMeta(self.shape[:dim] + (size,) + self.shape[dim + 1:], self.dtype) for size in sizes)


def _split_forward(a, sizes, dim, equal):
    if sum(sizes) != a.shape[dim]:
        raise ValueError(f"split_with_sizes expects split_sizes to sum exactly to {a.shape[dim]} (input "
                         f"tensor's size at dimension {dim}), but got split_sizes={list(sizes)}")
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=dim))


_reshape = defop("reshape", ("self",), lambda a, shape: a.reshape(shape), "ViewBackward0",
                 explain=_explain_reshape, meta=_reshape_meta, lower=intrinsic("reshape"),
                 view=True, self=lambda grad, self_shape: grad.reshape(self_shape),
                 jvp=lambda self_t, shape: _reshape(self_t, shape=shape))


def _transpose_forward(a, dim0, dim1):
    """A view with two dimensions swapped; a 0-d tensor's only dimension (0 or -1) swaps with itself.
    numpy's methods here and below: its functions add a microsecond of dispatch to every call."""
    return a.swapaxes(dim0, dim1) if a.ndim else a[...]


_transpose = defop("transpose", ("self",), _transpose_forward,
                   "TransposeBackward0", meta=_transpose_meta, lower=intrinsic("transpose"),
                   view=True, self=lambda grad, dim0, dim1: grad.transpose(dim0, dim1),
                   jvp=lambda self_t, dim0, dim1: _transpose(self_t, dim0=dim0, dim1=dim1))

_permute = defop("permute", ("self",), lambda a, dims: a.transpose(dims), "PermuteBackward0",
                 meta=lambda self, dims: TensorMeta(tuple(self.shape[d] for d in dims), self.dtype),
                 lower=intrinsic("permute"),
                 view=True, self=lambda grad, dims: grad.permute(tuple(int(d) for d in np.argsort(dims))),
                 jvp=lambda self_t, dims: _permute(self_t, dims=dims))

_squeeze = defop("squeeze", ("self",), lambda a, dim, variant: a.squeeze(axis=dim),
                 lambda args, attrs: f"SqueezeBackward{attrs['variant']}", meta=_squeeze_meta,
                 lower=intrinsic("reshape"),
                 view=True, self=lambda grad, self_shape: grad.reshape(self_shape),
                 jvp=lambda self_t, dim, variant: _squeeze(self_t, dim=dim, variant=variant))

def _unsqueeze_forward(a, dim):
    """A size-1 dimension inserted at ``dim``: a reshape, always a view for a unit dimension, and a
    tenth of ``np.expand_dims``'s cost (which ops on small tensors pay on every call)."""
    if dim < 0:
        dim += a.ndim + 1
    return a.reshape(a.shape[:dim] + (1,) + a.shape[dim:])


_unsqueeze = defop("unsqueeze", ("self",), _unsqueeze_forward, "UnsqueezeBackward0",
                   meta=_unsqueeze_meta, lower=intrinsic("reshape"),
                   view=True, self=lambda grad, dim: grad.squeeze(dim),
                   jvp=lambda self_t, dim: _unsqueeze(self_t, dim=dim))

def _broadcast_view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to(a, shape)``, made directly as a read-only view with zero strides where ``a`` is
    contiguous: ``broadcast_to`` is Python over an iterator and took 2.4 us, this 1.0 (every ``sum`` and
    ``mean`` backward expands its gradient). Anything else, or a shape ``a`` does not broadcast to
    (whose error numpy says), goes to ``broadcast_to``."""
    added = len(shape) - a.ndim
    if added < 0 or not a.flags.c_contiguous or not a.size:
        return np.broadcast_to(a, shape)
    strides = [0] * added
    for size, wanted, stride in zip(a.shape, shape[added:], a.strides):
        if size == wanted:
            strides.append(stride)
        elif size == 1:
            strides.append(0)
        else:
            return np.broadcast_to(a, shape)
    view = np.ndarray(shape, a.dtype, a, 0, tuple(strides))
    view.flags.writeable = False
    return view


_expand = defop("expand", ("self",), _broadcast_view, "ExpandBackward0",
                explain=_explain_expand, meta=given("shape", 0), kind="elementwise", recompute=True,
                lower=lambda self: self,
                view=True, self=lambda grad, self_shape: sum_to(grad, self_shape),
                jvp=lambda self_t, shape: _expand(self_t, shape=shape))

_cat = defop("cat", ("tensors",), lambda arrays, dim: np.concatenate(arrays, axis=dim), "CatBackward0",
             variadic=True, explain=_explain_cat, meta=_cat_meta, lower=intrinsic("concatenate"),
             tensors=lambda grad, tensors_shape, dim: split(grad, [s[dim] for s in tensors_shape], dim),
             jvp=lambda tensors_t, tensors, dim: _cat(_tangents_or_zeros(tensors_t, tensors), dim=dim))

_stack = defop("stack", ("tensors",), lambda arrays, dim: np.stack(arrays, axis=dim), "StackBackward0",
               variadic=True, explain=_explain_stack, meta=_stack_meta, lower=intrinsic("stack"),
               tensors=lambda grad, tensors_shape, dim: [grad.select(dim, i) for i in range(len(tensors_shape))],
               jvp=lambda tensors_t, tensors, dim: _stack(_tangents_or_zeros(tensors_t, tensors), dim=dim))

_split = defop("split", ("self",), _split_forward,
               lambda args, attrs: "SplitBackward0" if attrs["equal"] else "SplitWithSizesBackward0",
               meta=_split_meta, lower=intrinsic("split"),
               view=True, self=lambda grads, dim: cat(grads, dim),
               jvp=lambda self_t, sizes, dim, equal: _split(self_t, sizes=sizes, dim=dim, equal=equal))


@public("function", "method")
def reshape(input: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """A tensor with the same elements in ``shape`` (one entry may be -1)."""
    return _reshape(input, shape=shape_arg(shape))


def shape_arg(shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return tuple(map(int, shape))


@public("function", "method")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = input._data.shape
    start, end = wrap_dim(start_dim, len(shape), "flatten"), wrap_dim(end_dim, len(shape), "flatten")
    if not shape:
        return reshape(input, (1,))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    merged = int(np.prod(shape[start:end + 1]))
    return reshape(input, shape[:start] + (merged,) + shape[end + 1:])


@public("function", "method")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    ndim = input._data.ndim
    return _transpose(input, dim0=wrap_dim(dim0, ndim, "transpose"), dim1=wrap_dim(dim1, ndim, "transpose"))


@public("function", "method")
def permute(input: Tensor, *dims: int | Sequence[int]) -> Tensor:
    order = shape_arg(dims)
    ndim = input._data.ndim
    if len(order) != ndim:
        raise RuntimeError(f"permute(): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal "
                           f"to len(dims) = {len(order)}")
    wrapped = tuple(wrap_dim(d, ndim, "permute") for d in order)
    if len(set(wrapped)) != ndim:
        raise RuntimeError(f"permute(): duplicate dims are not allowed (got {list(order)})")
    return _permute(input, dims=wrapped)


@public("function", "method")
def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    shape = input._data.shape
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        named = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(d for d in (wrap_dim(d, len(shape), "squeeze") for d in named) if shape and shape[d] == 1)
    # PyTorch's node name tells how the dims were given: none (0), one int (1) or a tuple (2).
    variant = 0 if dim is None else 1 if isinstance(dim, int) else 2
    return _squeeze(input, dim=dims, variant=variant)


@public("function", "method")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return _unsqueeze(input, dim=wrap_dim(dim, input._data.ndim + 1, "unsqueeze"))


@public("function", "method")
def expand(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """A broadcast view of ``input`` at ``sizes``; -1 keeps a dimension's size."""
    target = list(shape_arg(sizes))
    shape = input._data.shape
    lead = len(target) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal "
                           f"to the number of dimensions in the tensor ({len(shape)})")
    for i, s in enumerate(shape):
        if target[lead + i] == -1:
            target[lead + i] = s
    return _expand(input, shape=tuple(target))


@public("function", "method")
def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return expand(input, tuple(size))


def _check_tensors(op: str, tensors: Sequence[Tensor]) -> tuple[Tensor, ...]:
    tensors = tuple(tensors)
    if not tensors:  # PyTorch: a ValueError for cat, a RuntimeError for stack
        raise (ValueError if op == "cat" else RuntimeError)(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    dtype = _joined_dtype([t._data for t in tensors])
    # Pieces of other dtypes are cast first, as recorded ops, so that the join itself (eager, and the
    # compiled kernels, which copy bits) only ever sees one dtype.
    return tuple(t if t._data.dtype == dtype else t.to(dtypes.from_numpy_dtype(dtype)) for t in tensors)


@public("function")
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = _check_tensors("cat", tensors)
    for i, t in enumerate(tensors):
        check_not_0d(t._data.ndim, "cat", f"concatenate along (tensor {i}); stack 0-d tensors, or "
                     "unsqueeze them first")
    return _cat(tensors, dim=wrap_dim(dim, tensors[0]._data.ndim, "cat"))


@public("function")
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = _check_tensors("stack", tensors)
    return _stack(tensors, dim=wrap_dim(dim, tensors[0]._data.ndim + 1, "stack"))


@public("function", "method")
def split(input: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the sizes listed."""
    check_not_0d(input._data.ndim, "split", "split along; unsqueeze it first")
    dim = wrap_dim(dim, input._data.ndim, "split")
    length = input._data.shape[dim]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        sizes = tuple(min(step, length - start) for start in range(0, length, step)) or (0,)
        equal = True
    else:
        sizes, equal = tuple(int(s) for s in split_size_or_sections), False
    return _split(input, sizes=sizes, dim=dim, equal=equal)


@public("function", "method")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    check_not_0d(input._data.ndim, "chunk", "chunk along; unsqueeze it first")
    length = input._data.shape[wrap_dim(dim, input._data.ndim, "chunk")]
    return split(input, max(1, -(-length // chunks)), dim)
