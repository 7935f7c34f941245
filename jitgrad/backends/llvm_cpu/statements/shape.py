"""Ops that move elements: views (``reshape`` of a C-contiguous array, ``transpose``, ``permute``, ``split``,
``unbind``) return new ``ArrayView``s over their input; ``stack`` and ``concatenate`` copy each input into
its part of the output."""
from __future__ import annotations

from typing import Sequence

from ..arrays import ArrayView, copy, permuted, reshaped
from .context import Statement


def reshape(s: Statement) -> ArrayView:
    return reshaped(s.w, s.inputs[0], s.k.sizes_of(s.node.meta["shape"]))


def permute(s: Statement, order: Sequence[int] | None = None) -> ArrayView:
    view = s.inputs[0]
    if not s.node.meta["shape"]:
        return view
    return permuted(view, tuple(s.attrs["dims"] if order is None else order))


def transpose(s: Statement) -> ArrayView:
    order = list(range(max(len(s.node.meta["shape"]), 1)))
    d0, d1 = s.attrs["dim0"], s.attrs["dim1"]
    order[d0], order[d1] = order[d1], order[d0]
    return permute(s, order)


def part(s: Statement, dim: int, start: str, size: str | None) -> ArrayView:
    """The output's slice ``[start:start + size]`` along ``dim`` (``size`` None: the one index
    ``start``, the dimension dropped)."""
    out = s.out
    pointer = s.w.element_pointer(out.dtype, out.pointer, s.w.mul(start, out.strides[dim]), "part")
    contiguous = out.contiguous and dim == 0   # a row, or rows, of a C-contiguous array
    if size is None:
        return ArrayView(pointer, out.dtype, out.sizes[:dim] + out.sizes[dim + 1:],
                         out.strides[:dim] + out.strides[dim + 1:], contiguous)
    return ArrayView(pointer, out.dtype, out.sizes[:dim] + (size,) + out.sizes[dim + 1:], out.strides, contiguous)


def stack(s: Statement) -> None:
    dim = s.attrs["dim"]
    for i, view in enumerate(s.inputs[0]):
        target = part(s, dim, s.k.size(i), None)
        source = view if target.rank else ArrayView(view.pointer, view.dtype, (), (), True)
        copy(s.w, source, target, f"row{i}.")


def concatenate(s: Statement) -> None:
    dim, offset = s.attrs["dim"], "0"
    for i, view in enumerate(s.inputs[0]):
        copy(s.w, view, part(s, dim, offset, view.sizes[dim]), f"cat{i}.")
        offset = s.w.add(offset, view.sizes[dim])




def split(s: Statement) -> list[ArrayView]:
    """Views of consecutive slices along ``dim``."""
    view, dim, start, pieces = s.inputs[0], s.attrs["dim"], "0", []
    for size in s.attrs["sizes"]:
        length = s.k.size(size)
        pointer = s.w.element_pointer(view.dtype, view.pointer, s.w.mul(start, view.strides[dim]), "piece")
        pieces.append(ArrayView(pointer, view.dtype, view.sizes[:dim] + (length,) + view.sizes[dim + 1:],
                                view.strides, view.contiguous and dim == 0))
        start = s.w.add(start, length)
    return pieces


def unbind(s: Statement) -> list[ArrayView]:
    """Views of each index along ``dim``, the dimension dropped; of a 1-d input, one-element views (a
    0-d value is a one-element array in a kernel, as ``kernel_shape`` has it)."""
    view, dim = s.inputs[0], s.attrs["dim"]
    pieces = []
    for i in range(s.input_shape()[dim]):
        pointer = s.w.element_pointer(view.dtype, view.pointer, s.w.mul(s.k.size(i), view.strides[dim]), "item")
        if view.rank == 1:
            pieces.append(ArrayView(pointer, view.dtype, ("1",), view.strides, True))
        else:
            pieces.append(ArrayView(pointer, view.dtype, view.sizes[:dim] + view.sizes[dim + 1:],
                                    view.strides[:dim] + view.strides[dim + 1:], view.contiguous and dim == 0))
    return pieces


STATEMENTS = {"reshape": reshape, "permute": permute, "transpose": transpose, "stack": stack,
              "concatenate": concatenate, "split": split, "unbind": unbind}
