"""``topk`` (which is ``sort`` too) and ``cumsum``: a loop over the rows along ``dim`` of the input seen
as (outer, n, inner).

A row is sorted with numba's stable ``mergesort``, as eager's ``kind="stable"``: equal elements keep
their order and NaN sorts last; descending sorts the reversed row and reverses its order back, which
keeps ties in order and puts NaN first, as the op's forward does.
"""
from __future__ import annotations

from ..context import OpContext


def topk(ctx: OpContext) -> list[str]:
    dim, largest = ctx.attrs["dim"], ctx.attrs["largest"]
    a, p, q, j, row, order, values, indices = (f"{ctx.out}_{s}" for s in
                                               ("in", "p", "q", "j", "row", "order", "values", "indices"))
    k = ctx.size(ctx.attrs["k"])
    sizes = list(ctx.shape(ctx.self)) if ctx.rank(ctx.self) else ["1"]
    sizes[dim if ctx.rank(ctx.self) else 0] = k
    shape = f"({', '.join(sizes)},)"
    sort = (f"{a}.shape[1] - 1 - np.argsort({row}[::-1], kind='mergesort')[::-1]" if largest
            else f"np.argsort({row}, kind='mergesort')")
    return [f"{a} = {ctx.contiguous(ctx.self)}.reshape({ctx.rows(dim, ctx.self)})",
            f"{values} = np.empty(({a}.shape[0], {k}, {a}.shape[2]), {ctx.input_type(0)})",
            f"{indices} = np.empty(({a}.shape[0], {k}, {a}.shape[2]), np.int64)",
            f"for {p} in range({a}.shape[0]):",
            f"    for {q} in range({a}.shape[2]):",
            f"        {row} = np.ascontiguousarray({a}[{p}, :, {q}])",
            f"        {order} = {sort}",
            f"        for {j} in range({k}):",
            f"            {indices}[{p}, {j}, {q}] = {order}[{j}]",
            f"            {values}[{p}, {j}, {q}] = {row}[{order}[{j}]]",
            f"{ctx.out} = ({values}.reshape({shape}), {indices}.reshape({shape}))"]


def cumsum(ctx: OpContext) -> list[str]:
    """Each element the previous result plus itself (written in the output's dtype: integers add up
    as int64)."""
    rows = ctx.rows(ctx.attrs["dim"], ctx.self)
    a, o, p, q, k = (f"{ctx.out}_{s}" for s in ("in", "rows", "p", "q", "k"))
    return [f"{a} = {ctx.contiguous(ctx.self)}.reshape({rows})",
            f"{o} = {ctx.out}.reshape({rows})",
            f"for {p} in range({a}.shape[0]):",
            f"    for {q} in range({a}.shape[2]):",
            f"        if {a}.shape[1] > 0:",
            f"            {o}[{p}, 0, {q}] = {a}[{p}, 0, {q}]",
            f"        for {k} in range(1, {a}.shape[1]):",
            f"            {o}[{p}, {k}, {q}] = {o}[{p}, {k} - 1, {q}] + {a}[{p}, {k}, {q}]"]


STATEMENTS = {"topk": topk, "cumsum": cumsum}
