"""``argmax`` and ``argmin`` on the CUDA backend, with their values for ``max(dim)``/``min(dim)``: a block
per row along ``dim`` keeping the first best element (``kernels/rows.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def _select(ctx: OpContext, largest: bool, values: bool) -> str:
    """With ``values`` the node's result is the pair (values, indices), two new device arrays of the
    reduced shape that the host function allocates, and ``ctx.out`` is bound to it (as on the CPU);
    otherwise the indices fill the planned ``ctx.out``. ``dim`` is ``(d,)`` or ``()`` (a 0-d input)
    for max/min(dim), an int for argmax/argmin."""
    dim = ctx.attrs["dim"]
    if isinstance(dim, tuple):
        dim = dim[0] if dim else 0
    if values:
        pair = ctx.library("kernels.rows", "values_and_indices")
        return (f"{ctx.out} = {pair}({ctx.self}, {dim!r}, {bool(ctx.attrs.get('keepdim'))!r}, {largest!r}, "
                f"{ctx.stream})")
    return f"{ctx.library('kernels.rows', 'select')}({ctx.self}, {dim!r}, {ctx.out}, None, {ctx.stream}, {largest!r})"


def argmax(ctx: OpContext, values: bool = False) -> str:
    return _select(ctx, True, values)


def argmin(ctx: OpContext, values: bool = False) -> str:
    return _select(ctx, False, values)


STATEMENTS = {"argmax": argmax, "argmin": argmin}
