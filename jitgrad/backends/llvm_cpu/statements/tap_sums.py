"""``tap_sum``, as the numba CPU backend writes it (``numba_cpu/statements/tap_sums.py``): zeros, then for
each output row along ``dim`` and each of its taps inside the input, the input row the tap names,
scaled by its weight, added along the trailing dimensions (the innermost loop, which vectorizes).
Along the last dimension there are no trailing ones: each (column, tap) pair is read once and added
down a block's rows instead. A tap naming the position past the end (a short row's padding) reads nothing,
so an ``inf`` or NaN reaches only the outputs whose taps read it."""
from __future__ import annotations

import numpy as np

from ..arrays import load, store
from ..expressions import Value, arithmetic, convert
from ..function_writer import literal, memory_type
from .context import Statement

INT64 = np.dtype(np.int64)


def tap_sum(s: Statement) -> None:
    if s.attrs["dim"] == s.out.rank - 1:
        _along_the_last_dimension(s)
        return
    x, index, weight = s.inputs[:3]
    out, w, dtype, dim = s.out, s.w, s.dtype, s.attrs["dim"]
    with w.loop(w.product(out.sizes), "zero") as e:
        w.store(memory_type(dtype), literal(0, dtype), w.element_pointer(dtype, out.pointer, e))

    def trailing(depth: int, leading: list[str], i: str, j: str, scale: Value, rest: list[str]) -> None:
        if depth == out.rank:
            target = leading + [i] + rest
            term = arithmetic(w, "mul", scale, load(w, x, leading + [j] + rest, "x"))
            store(w, out, target, arithmetic(w, "add", load(w, out, target, "y"), term))
            return
        with w.loop(out.sizes[depth], f"k{depth}") as k:
            trailing(depth + 1, leading, i, j, scale, rest + [k])

    def outer(depth: int, leading: list[str]) -> None:
        if depth < dim:
            with w.loop(out.sizes[depth], f"o{depth}") as o:
                outer(depth + 1, leading + [o])
            return
        with w.loop(out.sizes[dim], "row") as i, w.loop(index.sizes[1], "tap") as t:
            j = convert(w, load(w, index, [i, t], "at"), INT64).name
            with w.when(w.assign("inside", f"icmp slt i64 {j}, {x.sizes[dim]}"), "read"):
                trailing(dim + 1, leading, i, j, load(w, weight, [i, t], "weight"), [])
    outer(0, [])



def _along_the_last_dimension(s: Statement) -> None:
    """Block by block of the dimensions before the last two, each (output column, tap) pair read once
    and added down the block's rows: the innermost loop has no branch and no table read, and a block
    stays in cache: at (4, 8, 32, 16) resized to 32 columns, 73 us (bilinear) and 119 us (bicubic)
    against 109 and 283 us summing each output's taps in turn."""
    x, index, weight = s.inputs[:3]
    out, w, dtype = s.out, s.w, s.dtype
    with w.loop(w.product(out.sizes), "zero") as e:
        w.store(memory_type(dtype), literal(0, dtype), w.element_pointer(dtype, out.pointer, e))

    def blocks(depth: int, leading: list[str]) -> None:
        if depth < out.rank - 2:
            with w.loop(out.sizes[depth], f"o{depth}") as o:
                blocks(depth + 1, leading + [o])
            return
        with w.loop(out.sizes[-1], "column") as i, w.loop(index.sizes[1], "tap") as t:
            j = convert(w, load(w, index, [i, t], "at"), INT64).name
            with w.when(w.assign("inside", f"icmp slt i64 {j}, {x.sizes[-1]}"), "read"):
                scale = load(w, weight, [i, t], "weight")
                if out.rank == 1:
                    _add_scaled(s, scale, [j], [i])
                else:
                    with w.loop(out.sizes[-2], "row") as r:
                        _add_scaled(s, scale, leading + [r, j], leading + [r, i])
    blocks(0, [])


def _add_scaled(s: Statement, scale: Value, source: list[str], target: list[str]) -> None:
    """``out[target] += scale * x[source]``."""
    x, out, w = s.inputs[0], s.out, s.w
    term = arithmetic(w, "mul", scale, load(w, x, source, "x"))
    store(w, out, target, arithmetic(w, "add", load(w, out, target, "y"), term))


STATEMENTS = {"tap_sum": tap_sum}
