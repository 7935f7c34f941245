"""``argmax`` and ``argmin`` (with their values for ``max(dim)`` and ``min(dim)``): a loop over the rows
along ``dim`` keeping the first best element."""
from __future__ import annotations

from ..context import OpContext


def _select(ctx: OpContext, better: str, values: bool) -> list[str]:
    """A loop over the rows along ``dim`` of the input seen as (outer, n, inner), keeping the first
    best element's index (as numpy and PyTorch do) and, with ``values`` (max/min(dim)), its value: the
    output is then bound to the pair ``(values, indices)``, new arrays of the reduced shape. The first
    NaN is the best element, as numpy's argmax has it."""
    dim = ctx.attrs["dim"]
    if isinstance(dim, tuple):  # max/min(dim): (d,), or () for a 0-d input, a row of one element
        dim = dim[0] if dim else 0
    a, p, q, k, best, at, value = (f"{ctx.out}_{s}" for s in ("in", "p", "q", "k", "best", "at", "value"))
    lines = [f"{a} = {ctx.contiguous(ctx.self)}.reshape({ctx.rows(dim, ctx.self)})"]
    if values:
        kept, indices = f"{ctx.out}_values", f"{ctx.out}_indices"
        lines += [f"{kept} = np.empty(({a}.shape[0], {a}.shape[2]), {ctx.input_type(0)})",
                  f"{indices} = np.empty(({a}.shape[0], {a}.shape[2]), np.int64)"]
    else:
        indices = f"{ctx.out}_2d"
        lines.append(f"{indices} = {ctx.out}.reshape(({a}.shape[0], {a}.shape[2]))")
    lines += [f"for {p} in range({a}.shape[0]):",
              f"    for {q} in range({a}.shape[2]):",
              f"        {best} = {a}[{p}, 0, {q}]",
              f"        {at} = 0",
              f"        for {k} in range(1, {a}.shape[1]):",
              f"            {value} = {a}[{p}, {k}, {q}]",
              f"            if {value} {better} {best} or ({value} != {value} and {best} == {best}):",
              f"                {best} = {value}",
              f"                {at} = {k}",
              f"        {indices}[{p}, {q}] = {at}"]
    if values:
        lines.insert(-1, f"        {kept}[{p}, {q}] = {best}")
        shape = _reduced_shape(ctx, dim)
        lines.append(f"{ctx.out} = ({kept}.reshape({shape}), {indices}.reshape({shape}))")
    return lines


def _reduced_shape(ctx: OpContext, dim: int) -> str:
    """Source for the shape of a one-dimension reduction's result (rank at least 1 in kernels)."""
    sizes = list(ctx.shape(ctx.self)) if ctx.rank(ctx.self) else []
    if sizes:
        sizes[dim] = "1" if ctx.attrs.get("keepdim") else None
    sizes = [s for s in sizes if s is not None] or ["1"]
    return f"({', '.join(sizes)},)"


def argmax(ctx: OpContext, values: bool = False) -> list[str]:
    return _select(ctx, ">", values)


def argmin(ctx: OpContext, values: bool = False) -> list[str]:
    return _select(ctx, "<", values)


STATEMENTS = {"argmax": argmax, "argmin": argmin}
