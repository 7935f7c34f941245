"""``x[index]`` for a basic index (integers and slices with a positive step): a view, its offset and
strides computed from the traced shape, every bound a run-time size. Arrays, ``None``, negative steps
and a 0-d input go to numba (which gathers by flat positions)."""
from __future__ import annotations

import numpy as np

from ....ops.indexing import is_advanced, without_ellipsis
from ..arrays import ArrayView
from .context import Statement


def getitem(s: Statement) -> ArrayView:
    index, shape = s.attrs["index"], s.input_shape()
    if is_advanced(index) or None in index or not shape:
        raise NotImplementedError("an advanced index, None, or a 0-d input")
    view, w = s.inputs[0], s.w
    offset, strides = "0", []
    items = without_ellipsis(index, len(shape))
    for d, size in enumerate(shape):
        item = items[d] if d < len(items) else slice(None)
        if isinstance(item, (int, np.integer)):
            offset = w.add(offset, w.mul(s.k.size(int(item) % size), view.strides[d]))
            continue
        if not isinstance(item, slice):
            raise NotImplementedError(f"an index item {item!r}")
        start, _, step = item.indices(size)
        if step <= 0:
            raise NotImplementedError("a slice with a negative step")
        offset = w.add(offset, w.mul(s.k.size(start), view.strides[d]))
        strides.append(w.mul(view.strides[d], s.k.size(step)))
    sizes = s.k.sizes_of(s.node.meta["shape"])
    if not s.node.meta["shape"]:
        strides = ["1"]
    pointer = w.element_pointer(view.dtype, view.pointer, offset, "item")
    return ArrayView(pointer, view.dtype, sizes, tuple(strides), view.contiguous and _leading(items))


def _leading(items: tuple) -> bool:
    """Integers first, then whole dimensions: ``x[t]`` of a contiguous array is contiguous."""
    count = next((n for n, i in enumerate(items) if not isinstance(i, (int, np.integer))), len(items))
    return all(i == slice(None) for i in items[count:])


STATEMENTS = {"getitem": getitem}
