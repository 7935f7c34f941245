"""Ops that move elements without computing: reshape, transpose, squeeze, expand, cat, split..."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import Sequence

import numpy as np

from .. import dtypes
from ..autograd.forward_ad import tangent_or_zeros
from ..shapes import check_not_0d, wrap_dim
from ..tensor import Tensor
from .arithmetic import where
from .device_copy import to
from .broadcast_sums import sum_to
from .lowering import intrinsic
from .meta_rules import TensorMeta, given, reshaped
from .public import public
from .registry import defop, note_created


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


def _transpose_meta(self, dim0, dim1, t=False):
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


def _unbind_meta(self, dim):
    return (TensorMeta(self.shape[:dim] + self.shape[dim + 1:], self.dtype),) * self.shape[dim]


def _unbind_forward(a, dim):
    """Views of each index along ``dim`` (the ``...`` keeps a 0-d piece an array, a view, not a scalar)."""
    return tuple(a[(slice(None),) * dim + (i, Ellipsis)] for i in range(a.shape[dim]))


def _split_forward(a, sizes, dim, equal):
    if sum(sizes) != a.shape[dim]:
        raise ValueError(f"split_with_sizes expects split_sizes to sum exactly to {a.shape[dim]} (input "
                         f"tensor's size at dimension {dim}), but got split_sizes={list(sizes)}")
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=dim))


_reshape = defop("reshape", ("self",), lambda a, shape: a.reshape(shape), "ViewBackward0",
                 explain=_explain_reshape, meta=_reshape_meta, lower=intrinsic("reshape"),
                 view=True, self=lambda grad, self_shape: grad.reshape(self_shape),
                 jvp=lambda self_t, shape: _reshape(self_t, shape=shape))


def _transpose_forward(a, dim0, dim1, t=False):
    """A view with two dimensions swapped; a 0-d tensor's only dimension (0 or -1) swaps with itself.
    ``t`` only names the node: a call of ``t()`` is PyTorch's ``TBackward0``.
    numpy's methods here and below: its functions add a microsecond of dispatch to every call."""
    return a.swapaxes(dim0, dim1) if a.ndim else a[...]


_transpose = defop("transpose", ("self",), _transpose_forward,
                   lambda args, attrs: "TBackward0" if attrs.get("t") else "TransposeBackward0",
                   meta=_transpose_meta, lower=intrinsic("transpose"),
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

def _concatenate(arrays, dim):
    """Row-major, as PyTorch's ``cat`` and ``stack`` are for plain tensors: numpy's follows its operands'
    order of strides, so ``cat`` of transposes was a transpose whose ``view(-1)`` raised (until 2026-11-28)."""
    return np.asarray(np.concatenate(arrays, axis=dim), order="C")


def _stack_arrays(arrays, dim):
    return np.asarray(np.stack(arrays, axis=dim), order="C")


_cat = defop("cat", ("tensors",), _concatenate, "CatBackward0",
             variadic=True, explain=_explain_cat, meta=_cat_meta, lower=intrinsic("concatenate"),
             tensors=lambda grad, tensors_shape, dim: split(grad, [s[dim] for s in tensors_shape], dim),
             jvp=lambda tensors_t, tensors, dim: _cat(_tangents_or_zeros(tensors_t, tensors), dim=dim))

_stack = defop("stack", ("tensors",), _stack_arrays, "StackBackward0",
               variadic=True, explain=_explain_stack, meta=_stack_meta, lower=intrinsic("stack"),
               tensors=lambda grad, tensors_shape, dim: [grad.select(dim, i) for i in range(len(tensors_shape))],
               jvp=lambda tensors_t, tensors, dim: _stack(_tangents_or_zeros(tensors_t, tensors), dim=dim))

_split = defop("split", ("self",), _split_forward,
               lambda args, attrs: "SplitBackward0" if attrs["equal"] else "SplitWithSizesBackward0",
               meta=_split_meta, lower=intrinsic("split"),
               view=True, self=lambda grads, dim: cat(grads, dim),
               jvp=lambda self_t, sizes, dim, equal: _split(self_t, sizes=sizes, dim=dim, equal=equal))


# One op with several views, as PyTorch's (``UnbindBackward0``): its outputs refuse an in-place change, as
# split's do (until 2026-11-28 it was a select per index, each a view one could change)
_unbind = defop("unbind", ("self",), _unbind_forward, "UnbindBackward0",
                meta=_unbind_meta, lower=intrinsic("unbind"),
                view=True, self=lambda grads, dim: _stack(grads, dim=dim),
                jvp=lambda self_t, dim: _unbind(self_t, dim=dim))


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
def t(input: Tensor) -> Tensor:
    """PyTorch's ``t()``: a matrix transposed, a vector or a 0-d tensor as it is (a view either way), whose
    node is ``TBackward0`` as in PyTorch (until 2026-11-28 ``TransposeBackward0``, or ``ViewBackward0``
    below two dimensions)."""
    ndim = input._data.ndim
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return _transpose(input, dim0=0, dim1=ndim - 1 if ndim else 0, t=True)


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
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and length:   # 0 splits an empty dimension into one empty piece, as in PyTorch
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}")
        sizes = tuple(min(step, length - start) for start in range(0, length, step or 1)) or (0,)
        equal = True
    else:
        sizes, equal = tuple(int(s) for s in split_size_or_sections), False
    return _split(input, sizes=sizes, dim=dim, equal=equal)


@public("function", "method")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of equal size but the last; a dimension of size 0 gives ``chunks`` empty pieces, as in
    PyTorch (one, until 2026-11-28)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    check_not_0d(input._data.ndim, "chunk", "chunk along; unsqueeze it first")
    length = input._data.shape[wrap_dim(dim, input._data.ndim, "chunk")]
    if length == 0:
        return split(input, [0] * chunks, dim)
    return split(input, max(1, -(-length // chunks)), dim)


# ---- views and rearrangements PyTorch names: composites of the ops above and of indexing -------------
@public("function", "method")
def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``input`` with the dimensions ``source`` moved to ``destination``, the others in their order (a view)."""
    ndim = input._data.ndim
    sources = (source,) if isinstance(source, int) else tuple(source)
    destinations = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(sources) != len(destinations):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(sources)} dims) should "
                           f"contain the same number of dims as destination ({list(destinations)} dims)")
    sources = tuple(wrap_dim(d, ndim, "movedim") for d in sources)
    destinations = tuple(wrap_dim(d, ndim, "movedim") for d in destinations)
    for named, what in ((sources, "source"), (destinations, "destination")):
        if len(set(named)) != len(named):
            raise RuntimeError(f"movedim: repeated dim in `{what}` ({list(named)})")
    order = [-1] * max(ndim, 1)
    for s, d in zip(sources, destinations):
        order[d] = s
    rest = iter(d for d in range(max(ndim, 1)) if d not in sources)
    order = [next(rest) if d == -1 else d for d in order]
    return permute(input, order) if ndim else input.reshape(())


@public("function", "method")
def moveaxis(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``movedim``'s other name, as in numpy and PyTorch."""
    return movedim(input, source, destination)


@public("function", "method")
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose``'s numpy name."""
    return transpose(input, axis0, axis1)


@public("function", "method")
def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose``'s other name."""
    return transpose(input, dim0, dim1)


@public("method")
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return reshape(self, other._data.shape)


@public("function", "method")
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Dimension ``dim`` split into ``sizes`` (one may be -1): a view, the inverse of ``flatten``."""
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shape = input._data.shape
    length = shape[dim] if ndim else 1
    known = math.prod(s for s in sizes if s != -1)
    if (-1 not in sizes and known != length) or (-1 in sizes and (known == 0 or length % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({length}) in the input tensor")
    return reshape(input, shape[:dim] + sizes + shape[dim + 1:])


@public("function", "method")
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    return split(input, [int(s) for s in split_sizes], dim)


@public("function", "method")
def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``sections`` pieces along ``dim`` as equal as can be (the first ``size % sections`` one larger),
    or the pieces between the ``indices`` listed, as numpy's ``array_split``: views."""
    check_not_0d(input._data.ndim, "tensor_split", "split along; unsqueeze it first")
    dim = wrap_dim(dim, input._data.ndim, "tensor_split")
    length = input._data.shape[dim]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {sections}")
        small, larger = divmod(length, sections)
        sizes = [small + 1] * larger + [small] * (sections - larger)
        return split(input, sizes, dim)
    pieces = []
    edges = [None, *(int(i) for i in indices_or_sections), None]
    for start, stop in zip(edges, edges[1:]):   # Python's slices: a negative index counts from the end
        first, last, _ = slice(start, stop).indices(length)
        pieces.append(input.narrow(dim, first, max(last - first, 0)))
    return tuple(pieces)


@public("function", "method")
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, each without it (views)."""
    check_not_0d(input._data.ndim, "unbind", "unbind along", IndexError)
    return _unbind(input, dim=wrap_dim(dim, input._data.ndim, "unbind"))


@public("function", "method")
def flip(input: Tensor, *positional: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """``input`` with the order of its elements reversed along ``dims`` (a sequence, or each a separate
    argument as ``Tensor.flip(0, 1)`` takes them): a copy, as in PyTorch (a reversed slice would be a
    view, and a write through it would change ``input``)."""
    if positional and dims is not None or not positional and dims is None:
        raise TypeError("flip() takes its dims once: a sequence, separate integers, or dims=")
    ndim = input._data.ndim
    named = {wrap_dim(d, ndim, "flip") for d in shape_arg(positional or (dims,))}
    if not ndim or not named:
        return input.clone()
    return input[tuple(slice(None, None, -1) if d in named else slice(None) for d in range(ndim))].clone()


@public("function", "method")
def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted ``shifts`` places along ``dims``, those that leave at one end coming back at
    the other; without ``dims``, along the flattened tensor, then the shape restored."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        return roll(input.reshape(-1), shifts, 0).reshape(input._data.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    out = input
    for shift, dim in zip(shifts, dims):
        dim = wrap_dim(dim, input._data.ndim, "roll")
        length = input._data.shape[dim] if input._data.ndim else 1
        step = shift % length if length else 0
        if step:
            out = cat([out.narrow(dim, length - step, step), out.narrow(dim, 0, length - step)], dim)
    return out if out is not input else input.clone()


@public("method")
def repeat(self: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """``self`` tiled ``sizes[i]`` times along each dimension (new leading dimensions for extra sizes):
    an expand of a reshape, then a reshape, so the gradient sums the copies."""
    repeats = shape_arg(sizes)
    shape = self._data.shape
    if len(repeats) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    padded = (1,) * (len(repeats) - len(shape)) + shape
    interleaved = tuple(s for size in padded for s in (1, size))
    tiled = tuple(s for pair in zip(repeats, padded) for s in pair)
    return self.reshape(interleaved).expand(tiled).reshape(tuple(r * s for r, s in zip(repeats, padded)))


def _triangle(name: str, input: Tensor, diagonal: int, keep) -> Tensor:
    """``input`` with the elements of each matrix (its last two dimensions) outside ``keep``'s
    triangle set to zero; the gradient is zero there too."""
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    rows, columns = input._data.shape[-2:]
    kept = keep(np.ones((rows, columns), np.bool_), diagonal)
    mask = Tensor._make(kept)
    note_created(mask, kept)   # a constant of a trace, as a factory's tensor is
    mask = to(mask, input.device)
    zero = False if input._data.dtype == np.bool_ else 0 if input._data.dtype.kind in "iu" else 0.0
    return where(mask, input, zero)


@public("function", "method")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of each matrix (on and below ``diagonal``); zeros above."""
    return _triangle("tril", input, diagonal, np.tril)


@public("function", "method")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of each matrix (on and above ``diagonal``); zeros below."""
    return _triangle("triu", input, diagonal, np.triu)


def _merges(tensor: Tensor) -> bool:
    """Whether ``tensor``'s last two dimensions merge into one without a copy (a reshape's view)."""
    rows, columns = tensor._data.shape[-2:]
    row_stride, column_stride = tensor._data.strides[-2:]
    return rows <= 1 or columns <= 1 or row_stride == columns * column_stride


@public("function", "method")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The elements ``input[..., i, i + offset]`` of the matrices in ``dim1`` and ``dim2``, as a last
    dimension: a view, so a write through it reaches ``input`` (``x.diagonal().fill_(0)``), as in
    PyTorch. It is the two dimensions moved last and merged (a reshape that is a view), then every
    ``columns + 1``-th element (a slice); a transposed matrix merges the other way round, with the
    offset negated. A layout that merges neither way (a rare strided view) gives a copy, with a
    warning, since a write through it would not reach ``input``."""
    ndim = input._data.ndim
    first, second = wrap_dim(dim1, ndim, "diagonal"), wrap_dim(dim2, ndim, "diagonal")
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    moved = movedim(input, (first, second), (-2, -1))
    if not _merges(moved):
        swapped = movedim(input, (second, first), (-2, -1))
        if _merges(swapped):
            moved, offset = swapped, -offset
        else:
            warnings.warn("diagonal: this tensor's layout gives a copy, not a view (PyTorch's): a write through "
                          "the result will not reach the input; call .contiguous() first to have a view of that",
                          stacklevel=2)
    rows, columns = moved._data.shape[-2:]
    length = builtins.max(builtins.min(rows, columns - offset) if offset >= 0 else
                          builtins.min(rows + offset, columns), 0)
    start = offset if offset >= 0 else -offset * columns
    merged = moved.reshape(moved._data.shape[:-2] + (rows * columns,))
    stop = start + (length - 1) * (columns + 1) + 1 if length else start
    return merged[..., start:stop:columns + 1]
