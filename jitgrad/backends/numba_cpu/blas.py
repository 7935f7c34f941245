"""Matrix products in generated kernels, on numpy's own BLAS.

numba's ``np.dot`` calls the BLAS that SciPy ships, a second OpenBLAS beside the one numpy links. Each
keeps its own pool of threads, and an OpenBLAS thread spins for a while after its work is done: a
program that runs numpy (or jitgrad's eager mode) and compiled kernels in turn has two pools fighting
for the same cores. On 2 cores that made a compiled MLP step 4x slower, and numpy's own products 2x
slower, than either alone. So kernels call numpy's ``cblas_?gemm`` and ``cblas_?gemv`` directly: their
addresses are found through numpy's extension module and registered with LLVM under fixed names, which
keeps the machine code cacheable (it names the symbols, not addresses). Kernels call ``matvec`` and
``matmat``: intrinsics that write the ``gemv``/``gemm`` call into the kernel when numba's types say the
operands are contiguous (a 32x32 matrix-vector product, W4's recurrence, ~125 ns), where a function
would add ~45 ns of reference counting on the arrays it is given, and a compile per combination of
layouts; other layouts go through ``mv_into``/``mm_into``, which read the layout at run time.

Where numpy's BLAS cannot be found (a build without CBLAS symbols), or ``JITGRAD_KERNEL_BLAS=numba``
asks for it, ``BLAS`` is None and the same functions use numba's ``np.dot``. Otherwise an operand is
passed as it is laid out: a matrix whose rows or columns are unit-stride goes to BLAS as it is,
transposed if need be, and anything else (a broadcast view, steps in both dimensions) is copied first.
"""
from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .numba_options import jit_or_plain
from .numpy_blas import BLAS, Blas, description, find_blas as _find_blas, register_with_llvm  # noqa: F401

register_with_llvm()   # numba's JIT links the names ``_emit_cblas`` calls
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112

def _emit_cblas(context: Any, builder: Any, routine: str, dtype: Any, operands: list[tuple[str, Any]]) -> None:
    """Emits a call of numpy's ``cblas_?<routine>`` (row-major) for ``dtype``. Each operand after the
    order is ``(kind, value)``: ``e`` an enum (a transpose), ``i`` an integer, ``p`` a data pointer, and
    ``1``/``0`` the constants alpha and beta (value None)."""
    blas_int, enum = ir.IntType(BLAS.integer_bits), ir.IntType(32)
    scalar = context.get_value_type(dtype)
    values = [ir.Constant(enum, ROW_MAJOR)]
    for kind, value in operands:
        if kind in "10":
            values.append(ir.Constant(scalar, float(kind)))
        elif kind == "p":
            values.append(builder.bitcast(value, scalar.as_pointer()))
        elif kind == "e":
            values.append(builder.trunc(value, enum))
        else:
            values.append(builder.trunc(value, blas_int) if blas_int.width < value.type.width else value)
    function_type = ir.FunctionType(ir.VoidType(), [v.type for v in values])
    function = cgutils.get_or_insert_function(builder.module, function_type, BLAS.symbols[f"{routine}_{dtype}"])
    builder.call(function, values)


def _cblas_call(routine: str, kinds: str, args: tuple) -> Any:
    """The typing and code of an intrinsic calling ``cblas_?<routine>`` for the dtype of its arrays.
    ``kinds`` spells the CBLAS arguments as ``_emit_cblas`` does, ``a`` standing for an array argument
    (its data pointer); each of ``e``, ``i``, ``a`` is the intrinsic's next argument."""
    arrays = [t for t, kind in zip(args, (k for k in kinds if k in "eia")) if kind == "a"]
    if BLAS is None or not all(isinstance(x, types.Array) for x in arrays) or \
            len({x.dtype for x in arrays}) != 1 or f"{routine}_{arrays[0].dtype}" not in BLAS.symbols:
        return None

    def codegen(context, builder, sig, values):
        given = iter(zip(values, sig.args))
        operands = []
        for kind in kinds:
            if kind in "10":
                operands.append((kind, None))
                continue
            value, value_type = next(given)
            if kind == "a":
                operands.append(("p", context.make_array(value_type)(context, builder, value).data))
            else:
                operands.append((kind, value))
        _emit_cblas(context, builder, routine, arrays[0].dtype, operands)
        return context.get_dummy_value()
    return types.void(*args), codegen


@intrinsic
def _cblas_gemm(typingctx, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc):
    """``c = op(a) @ op(b)``; a, b, c are arrays whose data pointers start the matrices."""
    return _cblas_call("gemm", "eeiii1aiai0ai", (trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc))


@intrinsic
def _cblas_gemv(typingctx, trans, rows, cols, a, lda, x, incx, y, incy):
    """``y = op(a) @ x``; ``rows`` and ``cols`` are those of ``a`` as stored."""
    return _cblas_call("gemv", "eii1aiai0ai", (trans, rows, cols, a, lda, x, incx, y, incy))


@numba.njit(cache=True)
def _layout(rows, cols, row_stride, col_stride):
    """How BLAS reads a rows x cols matrix with these element strides: (NO_TRANS or TRANS, leading
    dimension), or (0, 0) when it cannot be read in place."""
    if (cols == 1 or col_stride == 1) and (rows == 1 or row_stride >= max(cols, 1)):
        return NO_TRANS, row_stride if rows > 1 else max(cols, 1)
    if (rows == 1 or row_stride == 1) and (cols == 1 or col_stride >= max(rows, 1)):
        return TRANS, col_stride if cols > 1 else max(rows, 1)
    return 0, 0


@numba.njit(cache=True)
def _gemm_arguments(n, k, m, a_rs, a_cs, b_rs, b_cs, out_rs, out_cs):
    """``cblas_?gemm``'s transposes and leading dimensions for out (n x m) = a (n x k) @ b (k x m),
    from each matrix's element strides. (Cached: what names the BLAS symbol is compiled into each
    kernel instead, where the BLAS of the process is part of the key.)"""
    ta, lda = _layout(n, k, a_rs, a_cs)
    tb, ldb = _layout(k, m, b_rs, b_cs)
    tc, ldc = _layout(n, m, out_rs, out_cs)
    if ta == 0 or tb == 0 or tc != NO_TRANS:  # callers pass matrices that need none of this
        raise ValueError("matmul: an operand BLAS cannot read in place reached the kernel")
    return ta, lda, tb, ldb, ldc


@numba.njit(cache=True)
def _blas_ready(x):
    """``x`` itself when each row or each column is unit-stride, else a C-contiguous copy."""
    size = x.itemsize
    if x.strides[1] == size and (x.shape[0] <= 1 or x.strides[0] >= size * max(x.shape[1], 1)):
        return x
    if x.strides[0] == size and (x.shape[1] <= 1 or x.strides[1] >= size * max(x.shape[0], 1)):
        return x
    return np.ascontiguousarray(x)


def mm_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` for 2-d a (n, k), b (k, m) of any layout and a C-contiguous out (n, m). As
    plain Python (``NUMBA_DISABLE_JIT=1``) numpy does it; compiled, ``_mm_into_blas``. Kernels call
    ``matmat``, which comes here for the layouts it cannot hand to BLAS as they are."""
    np.matmul(a, b, out=out)


def mv_into(a: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ v`` for 2-d a (n, k), 1-d v (k,) and a contiguous 1-d out (n,)."""
    np.matmul(a, v, out=out)


@overload(mm_into)
def _mm_into_blas(a, b, out):
    if BLAS is None:
        return lambda a, b, out: np.dot(a, b, out)

    def mm(a, b, out):
        n, k, m = a.shape[0], a.shape[1], b.shape[1]
        if n == 0 or m == 0:
            return
        if k == 0:
            out[:] = 0
            return
        a, b = _blas_ready(a), _blas_ready(b)
        size = a.itemsize
        ta, lda, tb, ldb, ldc = _gemm_arguments(n, k, m, a.strides[0] // size, a.strides[1] // size,
                                                b.strides[0] // size, b.strides[1] // size,
                                                out.strides[0] // size, out.strides[1] // size)
        _cblas_gemm(ta, tb, n, m, k, a, lda, b, ldb, out, ldc)
    return mm


@numba.njit
def _mv_copied(a, v, out):
    """The rare layouts, out of ``mv_into``'s common path: a matrix BLAS cannot read in place or a vector
    without a forward step, copied contiguous here and multiplied."""
    size = a.itemsize
    a = np.ascontiguousarray(a)
    v = np.ascontiguousarray(v)
    _cblas_gemv(NO_TRANS, a.shape[0], a.shape[1], a, a.shape[1], v, 1, out, out.strides[0] // size)


@overload(mv_into)
def _mv_into_blas(a, v, out):
    if BLAS is None:
        return lambda a, v, out: np.dot(a, v, out)

    def mv(a, v, out):
        n, k = a.shape[0], a.shape[1]
        if n == 0:
            return
        if k == 0:
            out[:] = 0
            return
        size = a.itemsize
        increment = v.strides[0] // size if k > 1 else 1
        if increment <= 0:  # a broadcast or reversed vector: BLAS wants a forward step
            _mv_copied(a, v, out)
            return
        trans, lda = _layout(n, k, a.strides[0] // size, a.strides[1] // size)
        if trans == NO_TRANS:
            _cblas_gemv(NO_TRANS, n, k, a, lda, v, increment, out, out.strides[0] // size)
        elif trans == TRANS:  # the transpose of a row-major k x n matrix
            _cblas_gemv(TRANS, k, n, a, lda, v, increment, out, out.strides[0] // size)
        else:
            _mv_copied(a, v, out)
    return mv


# What the intrinsics compile in for other layouts: functions returning nothing (with numba's np.dot,
# ``mv_into``/``mm_into`` return the array).
def _general_matvec(a: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    mv_into(a, v, out)


def _general_matmat(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    mm_into(a, b, out)


def _at_least_one(builder: Any, value: Any) -> Any:
    """``max(value, 1)``: BLAS wants leading dimensions of at least 1, even for empty matrices."""
    one = ir.Constant(value.type, 1)
    return builder.select(builder.icmp_signed(">", value, one), value, one)


def _stored(builder: Any, layout: str, rows: Any, cols: Any) -> tuple[Any, Any, Any, Any]:
    """How row-major CBLAS reads a rows x cols matrix of numba layout C (as it is) or F (its transpose,
    stored row-major): the transpose flag, the stored matrix's rows and columns, its leading dimension."""
    stored_rows, stored_cols = (rows, cols) if layout == "C" else (cols, rows)
    trans = ir.Constant(ir.IntType(64), NO_TRANS if layout == "C" else TRANS)
    return trans, stored_rows, stored_cols, _at_least_one(builder, stored_cols)


def _direct(arrays: tuple, ranks: tuple[int, ...], routine: str) -> bool | None:
    """None when the types are not arrays of these ranks; else whether BLAS can be called in place:
    C or F matrices, contiguous vectors and a C result, one dtype."""
    if not all(isinstance(a, types.Array) for a in arrays) or tuple(a.ndim for a in arrays) != ranks:
        return None
    *operands, out = arrays
    return BLAS is not None and all(a.layout in ("CF" if a.ndim == 2 else "C") for a in operands) \
        and out.layout == "C" and len({a.dtype for a in arrays}) == 1 and f"{routine}_{out.dtype}" in BLAS.symbols


def _fill_zero(builder: Any, result: Any, elements: Any, dtype: Any) -> None:
    """``result[...] = 0`` for a product of no terms: OpenBLAS would leave the result as it was."""
    cgutils.memset(builder, result.data, builder.mul(elements, ir.Constant(elements.type, dtype.bitwidth // 8)), 0)


def _is_zero(builder: Any, value: Any) -> Any:
    return builder.icmp_signed("==", value, ir.Constant(value.type, 0))


def _product(arrays: tuple, ranks: tuple[int, ...], routine: str, general: Any, plan: Any) -> Any:
    """The typing and code of ``matvec``/``matmat``: ``general`` compiled in where BLAS cannot read the
    operands in place (``_direct``), else the BLAS call ``plan(builder, arrays)`` describes: the length
    of the sum, the result's elements and the CBLAS operands; a sum of nothing fills the result with
    zeros (OpenBLAS would leave it as it was)."""
    direct = _direct(arrays, ranks, routine)
    if direct is None:
        return None
    dtype = arrays[-1].dtype

    def codegen(context, builder, sig, args):
        if not direct:
            context.compile_internal(builder, general, sig, args)
            return context.get_dummy_value()
        views = [context.make_array(t)(context, builder, value) for t, value in zip(sig.args, args)]
        terms, elements, operands = plan(builder, views)
        with builder.if_else(_is_zero(builder, terms)) as (no_terms, some_terms):
            with no_terms:
                _fill_zero(builder, views[-1], elements, dtype)
            with some_terms:
                _emit_cblas(context, builder, routine, dtype, operands)
        return context.get_dummy_value()
    return types.void(*arrays), codegen


@intrinsic
def _matvec(typingctx, a, v, out):
    """``out[...] = a @ v`` as one call of ``cblas_?gemv`` written into the caller, when numba's types say
    a is C- or Fortran-contiguous (a transpose) and v and out are contiguous; ``mv_into`` otherwise."""
    def plan(builder, views):
        matrix, vector, result = views
        rows, cols = cgutils.unpack_tuple(builder, matrix.shape, 2)
        trans, stored_rows, stored_cols, lda = _stored(builder, a.layout, rows, cols)
        one = ir.Constant(rows.type, 1)
        return cols, rows, [("e", trans), ("i", stored_rows), ("i", stored_cols), ("1", None), ("p", matrix.data),
                            ("i", lda), ("p", vector.data), ("i", one), ("0", None), ("p", result.data), ("i", one)]
    return _product((a, v, out), (2, 1, 1), "gemv", _general_matvec, plan)


@intrinsic
def _matmat(typingctx, a, b, out):
    """``out[...] = a @ b`` as one call of ``cblas_?gemm`` written into the caller, when numba's types say
    a and b are C- or Fortran-contiguous and out is C-contiguous; ``mm_into`` otherwise. (Each layout of
    a function is a compile of its own: W2's step multiplies in five.)"""
    def plan(builder, views):
        left, right, result = views
        n, k = cgutils.unpack_tuple(builder, left.shape, 2)
        m = cgutils.unpack_tuple(builder, right.shape, 2)[1]
        ta, _, _, lda = _stored(builder, a.layout, n, k)
        tb, _, _, ldb = _stored(builder, b.layout, k, m)
        return k, builder.mul(n, m), [("e", ta), ("e", tb), ("i", n), ("i", m), ("i", k), ("1", None),
                                      ("p", left.data), ("i", lda), ("p", right.data), ("i", ldb), ("0", None),
                                      ("p", result.data), ("i", _at_least_one(builder, m))]
    return _product((a, b, out), (2, 2, 2), "gemm", _general_matmat, plan)


# What kernels call for matrix products: (the intrinsic, the general function).
_KERNEL_FUNCTIONS = {"matvec": (_matvec, mv_into), "matmat": (_matmat, mm_into)}


def __getattr__(name: str) -> Any:
    """``matvec`` and ``matmat``: the intrinsics, or ``mv_into`` and ``mm_into`` (``jit_or_plain``)."""
    if name in _KERNEL_FUNCTIONS:
        return jit_or_plain(*_KERNEL_FUNCTIONS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BLAS", "Blas", "description", "matmat", "matvec", "mm_into", "mv_into"]
