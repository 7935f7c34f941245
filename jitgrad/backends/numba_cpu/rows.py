"""``put_row(out, i, value)``: ``out[i] = value`` for the rows of a ``stack``, as one memory copy.

An unrolled loop stacks its steps' vectors (``batch_matrix_products`` multiplies them at once): W4's
kernel writes 100 rows. numba compiles each ``out[i] = value`` as a general assignment (broadcasting
checks and a loop of its own), which took half of W4's compile time (14 s against 7 s without them)
and 2 us of its 47 us step. When numba's types say both arrays are C-contiguous, the row is one
``memcpy`` written into the caller; any other layout is the plain assignment. The copy trusts what
the generated code knows: ``i`` is a row of ``out`` and ``value`` has a row's shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .numba_options import jit_or_plain


def _assign_row(out: np.ndarray, i: int, value: np.ndarray) -> None:
    out[i] = value


@intrinsic
def _put_row(typingctx, out, i, value):
    if not (isinstance(out, types.Array) and isinstance(value, types.Array) and isinstance(i, types.Integer)
            and out.ndim == value.ndim + 1 and out.dtype == value.dtype):
        return None
    direct = out.layout == "C" and value.layout == "C"

    def codegen(context, builder, sig, args):
        if not direct:
            context.compile_internal(builder, _assign_row, sig, args)
            return context.get_dummy_value()
        target = context.make_array(sig.args[0])(context, builder, args[0])
        source = context.make_array(sig.args[2])(context, builder, args[2])
        row_bytes = cgutils.unpack_tuple(builder, target.strides, sig.args[0].ndim)[0]
        row = context.cast(builder, args[1], sig.args[1], types.intp)
        start = builder.gep(builder.bitcast(target.data, cgutils.voidptr_t), [builder.mul(row, row_bytes)])
        itemsize = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        cgutils.raw_memcpy(builder, start, source.data, source.nitems, itemsize)
        return context.get_dummy_value()
    return types.void(out, i, value), codegen


def __getattr__(name: str) -> Any:
    """``put_row``, what kernels call: the intrinsic or the assignment (``jit_or_plain``)."""
    if name == "put_row":
        return jit_or_plain(_put_row, _assign_row)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["put_row"]
