"""``row_sum``, ``row_max`` and ``row_dot``: one row folded in vector lanes, for generated kernels.

A row's sum with running values in plain variables (``s0 += x[p, b]``, ``s1 += x[p, b + 1]``...) stays
scalar: LLVM may not reorder a chain of float adds without fastmath, and numba's index arithmetic keeps
its SLP vectorizer from pairing the four. Each fold then costs a dependent add per element (0.29 ms
over 1M float32, a quarter of K2's step). These intrinsics write the fold in LLVM vector types:
``UNROLL`` vectors of ``WIDTH`` lanes (512 bits each), so lane ``j`` of ``LANES = UNROLL * WIDTH``
takes the elements ``k = j (mod LANES)`` below ``n - n % LANES``; whole vectors after that go into the
first vector (a row of 16 float32 is one vector, not a chain of 16 dependent adds), and the last
``n % WIDTH`` elements, in order, into one more running value; then the vectors are joined lane by
lane as ``(v0 . v1) . (v2 . v3)``, their lanes halved pairwise (``v[j] . v[j + h]``) down to one,
and that joined with the rest. On a CPU with narrower vectors LLVM splits each vector; the order of
the operations, hence the result, is the same on any CPU and whatever thread runs the row. 0.29 ->
0.05 ms for that sum.

``.`` is ``+`` (``row_sum``; ``row_dot`` adds ``a[k] * b[k]``, the product rounded first) or the max
that skips NaN, ``b if b > a else a`` (``row_max``: a NaN row's max is then -inf, or the max of its
other elements; softmax and logsumexp take NaN back through their exp). A row is a 1-d array, or row
``p`` of a 2-d one. A row whose elements are not adjacent (a transposed or strided view) is loaded
into the vectors element by element, for the same operations in the same order; the plain version
below, the same again, is what runs under ``NUMBA_DISABLE_JIT``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .numba_options import jit_or_plain

UNROLL = 4
VECTOR_BITS = 512


def width(dtype: Any) -> int:
    """Lanes of one vector of ``dtype`` (16 float32, 8 float64)."""
    return VECTOR_BITS // (8 * np.dtype(dtype).itemsize)


# ---- the plain version: the same operations in the same order ----------------------------------------
def _larger(a: Any, b: Any) -> Any:
    return b if b > a else a


def _fold_plain(row: Any, other: Any, kind: str, lanes: int, vector: int) -> Any:
    """The fold of ``row`` (times ``other`` for a dot) as ``_vector_fold`` computes it, one operation at
    a time: ``lanes`` running values, whole vectors into the first ``vector`` of them, the rest in order."""
    n = row.shape[0]
    rest, rest_of_vectors = n - n % lanes, n - n % vector
    acc = np.zeros(lanes, row.dtype) if kind != "max" else np.full(lanes, -np.inf, row.dtype)
    tail = acc[0]
    for b in range(0, rest_of_vectors, vector):
        for j in range(vector):
            lane = j + (b % lanes if b < rest else 0)
            v = row[b + j] * other[b + j] if kind == "dot" else row[b + j]
            acc[lane] = _larger(acc[lane], v) if kind == "max" else acc[lane] + v
    for k in range(rest_of_vectors, n):
        v = row[k] * other[k] if kind == "dot" else row[k]
        tail = _larger(tail, v) if kind == "max" else tail + v
    joined = np.empty(vector, row.dtype)
    for j in range(vector):
        pair = [acc[j + u * vector] for u in range(UNROLL)]
        while len(pair) > 1:
            pair = [_larger(pair[i], pair[i + 1]) if kind == "max" else pair[i] + pair[i + 1]
                    for i in range(0, len(pair), 2)]
        joined[j] = pair[0]
    h = vector
    while h > 1:
        h //= 2
        for j in range(h):
            joined[j] = _larger(joined[j], joined[j + h]) if kind == "max" else joined[j] + joined[j + h]
    return _larger(joined[0], tail) if kind == "max" else joined[0] + tail


def _plain(kind: str) -> Callable[..., Any]:
    """``row_<kind>`` as plain Python: the same arguments as the intrinsic (arrays, then the row)."""
    def fold(a: Any, *rest: Any) -> Any:
        other, p = (rest[0], rest[1]) if kind == "dot" else (None, rest[0])
        row = a[p] if a.ndim == 2 else a
        other_row = None if other is None else (other[p] if other.ndim == 2 else other)
        dtype = np.dtype(row.dtype)
        return _fold_plain(row, other_row, kind, UNROLL * width(dtype), width(dtype))
    return fold


# ---- the vector version ----------------------------------------------------------------------------------
def _row(context: Any, builder: Any, array_type: Any, value: Any, p: Any, p_type: Any) -> tuple[Any, Any, Any]:
    """The address of the row's first element (an ``i8*``), the bytes from one element to the next, and
    the row's length."""
    array = context.make_array(array_type)(context, builder, value)
    shape = cgutils.unpack_tuple(builder, array.shape, array_type.ndim)
    strides = cgutils.unpack_tuple(builder, array.strides, array_type.ndim)
    start = builder.bitcast(array.data, cgutils.voidptr_t)
    if array_type.ndim == 2:
        row = context.cast(builder, p, p_type, types.intp)
        start = builder.gep(start, [builder.mul(row, strides[0])])
    return start, strides[-1], shape[-1]


def _join(builder: Any, kind: str, a: Any, b: Any) -> Any:
    """``a . b`` on scalars or lane by lane on vectors: ``a + b``, or ``b if b > a else a``."""
    if kind == "max":
        return builder.select(builder.fcmp_ordered(">", b, a), b, a)
    return builder.fadd(a, b)


def _vector_fold(context: Any, builder: Any, sig: Any, args: Any, kind: str) -> Any:
    arrays = 2 if kind == "dot" else 1
    rows = [_row(context, builder, sig.args[k], args[k], args[arrays], sig.args[arrays]) for k in range(arrays)]
    contiguous = [sig.args[k].layout == "C" for k in range(arrays)]
    n = rows[0][2]
    element = context.get_data_type(sig.return_type)
    lanes = width(np.dtype(sig.return_type.name))
    vector = ir.VectorType(element, lanes)
    start = float("-inf") if kind == "max" else 0.0
    init = ir.Constant(vector, [ir.Constant(element, start)] * lanes)
    accs = [cgutils.alloca_once_value(builder, init) for _ in range(UNROLL)]
    tail = cgutils.alloca_once_value(builder, ir.Constant(element, start))
    block, one_vector = ir.Constant(n.type, UNROLL * lanes), ir.Constant(n.type, lanes)
    rest = builder.sub(n, builder.srem(n, block))
    rest_of_vectors = builder.sub(n, builder.srem(n, one_vector))
    align = context.get_abi_sizeof(element)

    def scalar(row: tuple[Any, Any, Any], at: Any) -> Any:
        address = builder.gep(row[0], [builder.mul(at, row[1])])
        return builder.load(builder.bitcast(address, element.as_pointer()), align=align)

    def load(k: int, at: Any, as_vector: bool, packed: list[bool]) -> Any:
        row = rows[k]
        if not as_vector:
            return scalar(row, at)
        if packed[k]:  # one vector load
            pointer = builder.gep(builder.bitcast(row[0], element.as_pointer()), [at])
            return builder.load(builder.bitcast(pointer, vector.as_pointer()), align=align)
        gathered = ir.Constant(vector, ir.Undefined)  # a strided row: the lanes loaded one by one
        for j in range(lanes):
            item = scalar(row, builder.add(at, ir.Constant(at.type, j)))
            gathered = builder.insert_element(gathered, item, ir.Constant(ir.IntType(32), j))
        return gathered

    def value(at: Any, as_vector: bool, packed: list[bool]) -> Any:
        loaded = [load(k, at, as_vector, packed) for k in range(arrays)]
        return builder.fmul(loaded[0], loaded[1]) if kind == "dot" else loaded[0]

    def blocks(packed: list[bool]) -> None:
        with cgutils.for_range_slice(builder, ir.Constant(n.type, 0), rest, block) as (at, _):
            for u, acc in enumerate(accs):
                offset = builder.add(at, ir.Constant(n.type, u * lanes))
                builder.store(_join(builder, kind, builder.load(acc), value(offset, True, packed)), acc)
        with cgutils.for_range_slice(builder, rest, rest_of_vectors, one_vector) as (at, _):
            builder.store(_join(builder, kind, builder.load(accs[0]), value(at, True, packed)), accs[0])

    if all(contiguous):
        blocks(contiguous)
    else:  # a row of an array numba cannot call C-contiguous may still be packed: decided at run time
        itemsize = ir.Constant(n.type, align)
        packed_rows = [builder.icmp_signed("==", rows[k][1], itemsize) for k in range(arrays) if not contiguous[k]]
        test = packed_rows[0] if len(packed_rows) == 1 else builder.and_(*packed_rows)
        with builder.if_else(test) as (then, otherwise):
            with then:
                blocks([True] * arrays)
            with otherwise:
                blocks(contiguous)
    with cgutils.for_range_slice(builder, rest_of_vectors, n, ir.Constant(n.type, 1)) as (at, _):
        builder.store(_join(builder, kind, builder.load(tail), value(at, False, contiguous)), tail)
    loaded = [builder.load(acc) for acc in accs]
    while len(loaded) > 1:
        loaded = [_join(builder, kind, loaded[i], loaded[i + 1]) for i in range(0, len(loaded), 2)]
    joined, h = loaded[0], lanes
    while h > 1:
        h //= 2
        low = builder.shuffle_vector(joined, joined, ir.Constant(ir.VectorType(ir.IntType(32), h), list(range(h))))
        high = builder.shuffle_vector(joined, joined,
                                      ir.Constant(ir.VectorType(ir.IntType(32), h), list(range(h, 2 * h))))
        joined = _join(builder, kind, low, high)
    first = builder.extract_element(joined, ir.Constant(ir.IntType(32), 0))
    return _join(builder, kind, first, builder.load(tail))


def _typed(kind: str, arrays: list[Any], p: Any) -> Any:
    """The signature, or None for arguments the fold does not take (numba then reports a typing error)."""
    if not isinstance(p, types.Integer) or not all(isinstance(a, types.Array) and a.ndim in (1, 2) for a in arrays):
        return None
    dtype = arrays[0].dtype
    if dtype not in (types.float32, types.float64) or any(a.dtype != dtype for a in arrays):
        return None
    return dtype(*arrays, p)


def _intrinsic(kind: str) -> Any:
    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202 - numba's codegen protocol
        return _vector_fold(context, builder, sig, args, kind)

    if kind == "dot":
        def typer(typingctx, a, b, p):  # noqa: ANN001, ANN202
            sig = _typed(kind, [a, b], p)
            return None if sig is None else (sig, codegen)
    else:
        def typer(typingctx, a, p):  # noqa: ANN001, ANN202
            sig = _typed(kind, [a], p)
            return None if sig is None else (sig, codegen)
    return intrinsic(typer)


_INTRINSICS: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """``row_sum``, ``row_max``, ``row_dot``: the intrinsic, or the plain fold (``jit_or_plain``)."""
    kinds = {"row_sum": "sum", "row_max": "max", "row_dot": "dot"}
    if name in kinds:
        kind = kinds[name]
        if kind not in _INTRINSICS:
            _INTRINSICS[kind] = _intrinsic(kind)
        return jit_or_plain(_INTRINSICS[kind], _plain(kind))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["UNROLL", "VECTOR_BITS", "row_dot", "row_max", "row_sum", "width"]
