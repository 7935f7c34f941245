"""``x[index]`` (``getitem``) for a basic index (integers and slices with a positive step): a view, its
offset and strides computed from the traced shape, every bound a run-time size; and its backward
(``index_scatter``): zeros, and the gradient copied into the region that view selects. Arrays,
``None``, negative steps and a 0-d input go to numba (which gathers and scatters by flat positions)."""
from __future__ import annotations

import numpy as np

from ....ops.indexing import is_advanced, without_ellipsis
from ..arrays import ArrayView, copy
from ..function_writer import literal, memory_type
from .context import Statement


def indexed(s: Statement, view: ArrayView, index: tuple, shape: tuple[int, ...], sizes: tuple[str, ...]) -> ArrayView:
    """The view of ``view`` (of traced ``shape``) that the basic ``index`` selects, of run-time ``sizes``."""
    if is_advanced(index) or None in index or not shape:
        raise NotImplementedError("an advanced index, None, or a 0-d input")
    w = s.w
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
    pointer = w.element_pointer(view.dtype, view.pointer, offset, "item")
    return ArrayView(pointer, view.dtype, sizes, tuple(strides) or ("1",), view.contiguous and _leading(items))


def _leading(items: tuple) -> bool:
    """Integers first, then at most one slice of step 1, then whole dimensions: ``x[t]`` and ``x[1:]``
    of a contiguous array are contiguous (a run of whole rows), which lets ``index_scatter`` copy
    into ``x[1:]`` with one ``memmove`` and a fused loop read it as one flat run."""
    count = next((n for n, i in enumerate(items) if not isinstance(i, (int, np.integer))), len(items))
    if count < len(items) and items[count] != slice(None) and items[count].step in (None, 1):
        count += 1
    return all(i == slice(None) for i in items[count:])


def getitem(s: Statement) -> ArrayView:
    return indexed(s, s.inputs[0], s.attrs["index"], s.input_shape(), s.k.sizes_of(s.node.meta["shape"]))


def index_scatter(s: Statement) -> None:
    index, shape, grad = s.attrs["index"], tuple(s.attrs["shape"]), s.inputs[0]
    region = indexed(s, s.out, index, shape, grad.sizes)
    w = s.w
    with w.loop(w.product(s.out.sizes), "zero") as j:
        w.store(memory_type(s.dtype), literal(0, s.dtype), w.element_pointer(s.dtype, s.out.pointer, j))
    copy(w, grad, region, "scatter")


STATEMENTS = {"getitem": getitem, "index_scatter": index_scatter}
