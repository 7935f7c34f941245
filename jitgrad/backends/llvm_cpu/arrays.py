"""Arrays inside a generated function: a data pointer with run-time sizes and strides.

Every value of the graph is an ``ArrayView`` over memory the kernel was given (an argument, a slice of
a workspace, an output): sizes and strides (in elements) are SSA names or the literals ``0``/``1``.
Views (``reshape``, ``permute``, a basic ``getitem``) are new ``ArrayView``s over the same pointer and
write no instruction but their index arithmetic; a C-contiguous view knows it (``contiguous``), which
is what a reshape and a BLAS call without a copy need.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .expressions import BOOL, Value, convert
from .function_writer import FunctionWriter, memory_type, value_type


@dataclass(frozen=True)
class ArrayView:
    pointer: str
    dtype: np.dtype
    sizes: tuple[str, ...]
    strides: tuple[str, ...]
    contiguous: bool

    @property
    def rank(self) -> int:
        return len(self.sizes)


def contiguous_view(w: FunctionWriter, pointer: str, dtype: np.dtype, sizes: tuple[str, ...]) -> ArrayView:
    """A C-contiguous array of ``sizes`` at ``pointer``; its strides are written in the entry block's
    terms (products of sizes), once per view."""
    strides, stride = [], "1"
    for size in reversed(sizes):
        strides.append(stride)
        stride = w.mul(stride, size)
    return ArrayView(pointer, np.dtype(dtype), tuple(sizes), tuple(reversed(strides)), True)


def offset_of(w: FunctionWriter, view: ArrayView, index: list[str]) -> str:
    """The element offset of ``index`` (one i64 per dimension, ``0`` for a broadcast one)."""
    offset = "0"
    for i, stride in zip(index, view.strides):
        offset = w.add(offset, w.mul(i, stride))
    return offset


def load(w: FunctionWriter, view: ArrayView, index: list[str], hint: str = "ld") -> Value:
    pointer = w.element_pointer(view.dtype, view.pointer, offset_of(w, view, index))
    value = w.load(memory_type(view.dtype), pointer, hint)
    if view.dtype == BOOL:
        value = w.assign(hint, f"trunc i8 {value} to i1")
    return Value(value, view.dtype)


def store(w: FunctionWriter, view: ArrayView, index: list[str], value: Value) -> None:
    """Stores ``value`` (already of the view's dtype) at ``index``."""
    pointer = w.element_pointer(view.dtype, view.pointer, offset_of(w, view, index))
    name = value.name
    if view.dtype == BOOL:
        name = w.assign("byte", f"zext i1 {name} to i8")
    w.store(memory_type(view.dtype), name, pointer)


def copy(w: FunctionWriter, source: ArrayView, target: ArrayView, hint: str = "c") -> None:
    """``target[...] = source`` (same sizes): one ``memmove`` where both are C-contiguous (a row of a
    stack) and of one dtype, else element by element, each converted as numpy converts it."""
    same_dtype = np.dtype(source.dtype) == np.dtype(target.dtype)
    if same_dtype and source.contiguous and target.contiguous and source.rank == target.rank:
        size = w.mul(w.product(target.sizes), str(np.dtype(source.dtype).itemsize))
        w.declare("llvm.memmove.p0.p0.i64", "declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)")
        w.emit(f"call void @llvm.memmove.p0.p0.i64(ptr {target.pointer}, ptr {source.pointer}, i64 {size}, i1 false)")
        return

    def nest(depth: int, index: list[str]) -> None:
        if depth == target.rank:
            store(w, target, index, convert(w, load(w, source, index), target.dtype))
            return
        with w.loop(target.sizes[depth], f"{hint}{depth}") as i:
            nest(depth + 1, index + [i])
    nest(0, [])


def permuted(view: ArrayView, order: tuple[int, ...]) -> ArrayView:
    sizes = tuple(view.sizes[k] for k in order)
    strides = tuple(view.strides[k] for k in order)
    trivial = [k for k in order if view.sizes[k] != "1"] == sorted(k for k in order if view.sizes[k] != "1")
    return ArrayView(view.pointer, view.dtype, sizes, strides, view.contiguous and trivial)


def reshaped(w: FunctionWriter, view: ArrayView, sizes: tuple[str, ...]) -> ArrayView:
    """A contiguous array seen with other sizes (``NotImplementedError`` for any other: numba copies it)."""
    if not view.contiguous:
        raise NotImplementedError("a reshape of an array that is not C-contiguous")
    return contiguous_view(w, view.pointer, view.dtype, sizes)


__all__ = ["ArrayView", "contiguous_view", "copy", "load", "offset_of", "permuted", "reshaped", "store", "value_type"]
