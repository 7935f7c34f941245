"""Joining, tiling, splitting and rearranging tensors as PyTorch names it (``hstack``, ``meshgrid``,
``tile``, ``repeat_interleave``, ``diff``, ``rot90``, ``diag_embed``, ``take_along_dim``,
``block_diag``...): composites of ``cat``, ``reshape``, ``expand``, ``flip``, ``narrow``, ``gather`` and
``where``, so their gradients, forward mode and lowerings come from their parts. A constant they need (a
diagonal's mask, a block's zeros) is made as ``tril``'s mask is: a tensor a trace records as a constant."""
from __future__ import annotations

import builtins
import warnings
from typing import Sequence

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from . import shape
from .arithmetic import where
from .device_copy import to
from .gathering import gather, index_select
from .host_reads import from_host, host_values, refuse_when_traced
from .public import public
from .broadcast_sums import sum_to
from .registry import note_created


def constant(array: np.ndarray, like: Tensor) -> Tensor:
    """``array`` as a tensor on ``like``'s device, which a trace records as a constant."""
    made = Tensor._make(array)
    note_created(made, array)
    return to(made, like.device)


def _tensors(tensors: tuple) -> tuple[Tensor, ...]:
    """``f(a, b)`` and ``f([a, b])`` alike."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0])
    return tuple(tensors)


def _zeros(shape_: tuple[int, ...], like: Tensor) -> Tensor:
    return constant(np.zeros(shape_, like._data.dtype), like)


# ---- at least n dimensions, and the stacks built on them --------------------------------------------
@public("function")
def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    out = tuple(t.reshape(1) if t._data.ndim == 0 else t for t in _tensors(tensors))
    return out[0] if len(out) == 1 else out


@public("function")
def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    out = tuple(t.reshape((1,) * (2 - t._data.ndim) + t.shape) if t._data.ndim < 2 else t
                for t in _tensors(tensors))
    return out[0] if len(out) == 1 else out


@public("function")
def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """A 0-d tensor as (1, 1, 1), a vector of n as (1, n, 1), a matrix as (rows, columns, 1), as numpy."""
    def three(t: Tensor) -> Tensor:
        ndim = t._data.ndim
        if ndim >= 3:
            return t
        return t.reshape((1, 1, 1) if ndim == 0 else (1, t.shape[0], 1) if ndim == 1 else t.shape + (1,))
    out = tuple(three(t) for t in _tensors(tensors))
    return out[0] if len(out) == 1 else out


def _as_list(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


@public("function")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along the columns (along the only dimension for vectors)."""
    pieces = [atleast_1d(t) for t in _as_list("hstack", tensors)]
    return shape.cat(pieces, 0 if pieces[0]._data.ndim == 1 else 1)


@public("function")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along the rows, vectors as rows."""
    return shape.cat([atleast_2d(t) for t in _as_list("vstack", tensors)], 0)


@public("function")
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along the third dimension (``atleast_3d`` first)."""
    return shape.cat([atleast_3d(t) for t in _as_list("dstack", tensors)], 2)


@public("function")
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Vectors (and 0-d tensors) as columns, joined with the matrices along the columns."""
    pieces = [t.reshape(t._data.size, 1) if t._data.ndim <= 1 else t for t in _as_list("column_stack", tensors)]
    return shape.cat(pieces, 1)


# ---- grids and products of sets ---------------------------------------------------------------------
@public("function")
def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """One grid per input vector, each the vector expanded (a view) along the others' dimensions:
    ``indexing="ij"`` (the default, with PyTorch's warning when not given) puts input i along dimension
    i; ``"xy"`` swaps the first two dimensions (x along the columns), as numpy's default."""
    tensors = _tensors(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t._data.ndim}D")
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = (tensors[1], tensors[0], *tensors[2:]) if swap else tensors
    sizes = tuple(t._data.size for t in ordered)
    grids = [t.reshape(tuple(size if j == i else 1 for j, size in enumerate(sizes))).expand(sizes)
             for i, t in enumerate(ordered)]
    return tuple([grids[1], grids[0], *grids[2:]] if swap else grids)


@public("function")
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each vector, one per row, the last vector varying fastest;
    one vector is returned as it is."""
    tensors = _tensors(tensors)
    if len(tensors) == 1:
        return tensors[0]
    return shape.stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


@public("function")
def block_diag(*tensors: Tensor) -> Tensor:
    """The matrices (a 0-d tensor as 1x1, a vector as a row) along the diagonal of one matrix, zeros
    elsewhere; joined in their promoted dtype, as ``cat`` joins."""
    matrices = []
    for i, t in enumerate(_tensors(tensors)):
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t._data.ndim} dimensions")
        matrices.append(atleast_2d(t))
    if not matrices:
        return Tensor._make(np.zeros((1, 0), np.float32))
    width = builtins.sum(m.shape[1] for m in matrices)
    rows, left = [], 0
    for m in matrices:
        height, columns = m.shape
        parts = [_zeros((height, left), m), m, _zeros((height, width - left - columns), m)]
        rows.append(shape.cat(parts, 1))
        left += columns
    return shape.cat(rows, 0)


# ---- tiling and repeating ---------------------------------------------------------------------------
@public("function", "method")
def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat`` with ``dims`` padded with leading 1s to the tensor's dimensions."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = (1,) * builtins.max(input._data.ndim - len(dims), 0) + dims
    return shape.repeat(input, dims)


@public("function", "method")
def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times in place (along ``dim``; of the flattened tensor without
    it). An int is an expand of a new dimension, then a merge; a tensor of counts (one per element, or
    one for all) reads the counts on the host and picks with ``index_select``. ``repeat_interleave(counts)``
    alone repeats each index ``counts[i]`` times."""
    if repeats is None:
        counts = input
        refuse_when_traced("repeat_interleave")
        return to(from_host(np.repeat(np.arange(counts._data.size, dtype=np.int64), host_values(counts))), counts.device)
    if dim is None:
        input, dim = input.reshape(-1), 0
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim, "repeat_interleave") if ndim else 0
    if ndim == 0:
        input = input.reshape(1)
    length = input.shape[dim]
    if isinstance(repeats, Tensor) and repeats._data.size == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        refuse_when_traced("repeat_interleave")
        counts = host_values(repeats)
        if counts.ndim != 1 or counts.size != length:
            raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.size} and input.size({dim}) = {length}")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        index = from_host(np.repeat(np.arange(length, dtype=np.int64), counts))
        return index_select(input, dim, to(index, input.device))
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    sizes = input.shape
    expanded = input.unsqueeze(dim + 1).expand(sizes[:dim + 1] + (repeats,) + sizes[dim + 1:])
    out = expanded.reshape(sizes[:dim] + (length * repeats,) + sizes[dim + 1:])
    if output_size is not None and output_size != length * repeats:
        raise RuntimeError(f"allocated size does not match required size: output_size {output_size}, "
                           f"required {length * repeats}")
    return out


# ---- differences, flips, rotations ------------------------------------------------------------------
@public("function", "method")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, ``n`` times), after
    joining ``prepend`` and ``append``; of bools, ``!=`` as in PyTorch."""
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input._data.ndim, "diff")
    pieces = [p for p in (prepend, input, append) if p is not None]
    out = shape.cat(pieces, dim) if len(pieces) > 1 else input
    for _ in range(n):
        length = out.shape[dim]
        if length == 0:
            break
        later, earlier = out.narrow(dim, 1, length - 1), out.narrow(dim, 0, length - 1)
        out = later != earlier if out._data.dtype == np.bool_ else later - earlier
    return out


@public("function", "method")
def fliplr(input: Tensor) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return shape.flip(input, [1])


@public("function", "method")
def flipud(input: Tensor) -> Tensor:
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return shape.flip(input, [0])


@public("function", "method")
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotated by 90 degrees ``k`` times, from the first of ``dims`` toward the second."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    ndim = input._data.ndim
    if ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {ndim}")
    first, second = wrap_dim(dims[0], ndim, "rot90"), wrap_dim(dims[1], ndim, "rot90")
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {first} and dim1 = {second}")
    k %= 4
    if k == 1:
        return shape.flip(input, [second]).transpose(first, second)
    if k == 2:
        return shape.flip(input, [first, second])
    if k == 3:
        return shape.flip(input, [first]).transpose(first, second)
    return input.clone()


# ---- diagonals --------------------------------------------------------------------------------------
@public("function", "method")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices whose ``offset`` diagonal (in ``dim1``, ``dim2`` of the result) holds the last dimension of
    ``input``, zeros elsewhere: the values padded to the matrix's side, then kept where a constant
    diagonal mask holds (``where``, so an infinity stays on its diagonal)."""
    ndim = input._data.ndim + 1
    first, second = wrap_dim(dim1, ndim, "diag_embed"), wrap_dim(dim2, ndim, "diag_embed")
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    values = input.reshape(1) if input._data.ndim == 0 else input
    length = values.shape[-1]
    side = length + builtins.abs(offset)
    if offset:
        pad = _zeros(values.shape[:-1] + (builtins.abs(offset),), values)
        values = shape.cat([values, pad] if offset > 0 else [pad, values], -1)
    mask = constant(np.eye(side, k=offset, dtype=np.bool_), values)
    zero = False if values._data.dtype == np.bool_ else 0
    out = where(mask, values.unsqueeze(-1), zero)
    return shape.movedim(out, (-2, -1), (first, second))


@public("function", "method")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input on the ``offset`` diagonal of a matrix."""
    return diag_embed(input.reshape(-1), offset)


@public("function", "method")
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's matrix (``diagflat``), or a matrix's ``diagonal``-th diagonal (a copy)."""
    if input._data.ndim == 1:
        return diagflat(input, diagonal)
    if input._data.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " f"{input._data.ndim}D")
    return shape.diagonal(input, diagonal).clone()


# ---- picking by index -------------------------------------------------------------------------------
def _check_long(op: str, index: Tensor) -> None:
    if not isinstance(index, Tensor) or index._data.dtype != np.int64:
        dtype = index._data.dtype.name if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, but got {dtype}")


@public("function", "method")
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` with ``input`` and ``indices`` broadcast against each other outside ``dim``; without
    ``dim``, of the flattened tensors."""
    _check_long("take_along_dim", indices)
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    ndim = input._data.ndim
    if indices._data.ndim != ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {ndim} dimensions for input, and {indices._data.ndim} dimensions for indices")
    dim = wrap_dim(dim, ndim, "take_along_dim")
    outer = np.broadcast_shapes(tuple(1 if d == dim else s for d, s in enumerate(input.shape)),
                                tuple(1 if d == dim else s for d, s in enumerate(indices.shape)))
    input_shape = tuple(input.shape[d] if d == dim else outer[d] for d in range(ndim))
    index_shape = tuple(indices.shape[d] if d == dim else outer[d] for d in range(ndim))
    return gather(input.expand(input_shape), dim, indices.expand(index_shape))


@public("function", "method")
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index`` (negative indices from the end), shaped like
    ``index``."""
    _check_long("take", index)
    size = input._data.size
    wrapped = where(index < 0, index + size, index)
    return gather(input.reshape(-1), 0, wrapped.reshape(-1)).reshape(index.shape)


# ---- splitting --------------------------------------------------------------------------------------
def _split_by(name: str, input: Tensor, sections: int | Sequence[int], dim: int) -> tuple[Tensor, ...]:
    if isinstance(sections, int):
        length = input.shape[dim]
        if sections == 0 or length % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {length} is not divisible by the split_size {sections}!")
    return shape.tensor_split(input, sections, dim)


@public("function", "method")
def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Split along the columns (the only dimension of a vector)."""
    if input._data.ndim < 1:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
                           "dimensions!")
    return _split_by("hsplit", input, indices_or_sections, 0 if input._data.ndim == 1 else 1)


@public("function", "method")
def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Split along the rows."""
    if input._data.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with "
                           f"{input._data.ndim} dimensions!")
    return _split_by("vsplit", input, indices_or_sections, 0)


@public("function", "method")
def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Split along the third dimension."""
    if input._data.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with "
                           f"{input._data.ndim} dimensions!")
    return _split_by("dsplit", input, indices_or_sections, 2)


@public("method")
def sum_to_size(self: Tensor, *size: int | Sequence[int]) -> Tensor:
    """This tensor summed down to ``size``, which must broadcast to its shape (``expand``'s inverse)."""
    target = shape.shape_arg(size)
    try:
        expandable = tuple(np.broadcast_shapes(target, tuple(self.shape))) == tuple(self.shape)
    except ValueError:
        expandable = False
    if not expandable:
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(self.shape)}}}.")
    return sum_to(self, target)


@public("method")
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dimension
    (PyTorch's ``Tensor.unfold``). An ``index_select`` of the windows' elements, so a copy, where
    PyTorch's is a view: writing into it leaves ``self`` unchanged."""
    ndim = builtins.max(self.ndim, 1)
    dimension = wrap_dim(dimension, ndim, "unfold")
    length = self.shape[dimension] if self.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dimension} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.ndim == 0:   # its one element as a window, as PyTorch's
        return self.reshape(1)
    starts = np.arange(0, length - size + 1, step)
    positions = (starts[:, None] + np.arange(size)).reshape(-1)
    picked = index_select(self, dimension, constant(positions, self))
    windows = picked.reshape(self.shape[:dimension] + (len(starts), size) + self.shape[dimension + 1:])
    return shape.movedim(windows, dimension + 1, -1)
