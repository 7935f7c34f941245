"""Matrix products on numpy's CBLAS, as the numba CPU backend makes them (``numba_cpu/blas.py``): the
``cblas_?gemm``/``cblas_?gemv`` symbols ``numba_cpu/numpy_blas.py`` registers with LLVM, called with
each operand as it is laid out (a transposed matrix goes with the transpose flag, no copy), and a
product of no terms filling its result with zeros (OpenBLAS would leave it as it was). A layout BLAS
cannot read in place (steps in both dimensions), or a numpy without CBLAS symbols, sends the graph to
numba, which copies. A product with few rows and terms, many columns and a transposed right operand
(K15's backward) is ``wide_product``'s loop instead of BLAS, where the sizes at run time say so."""
from __future__ import annotations

import math

from ...numba_cpu.numpy_blas import BLAS
from .. import wide_product
from ..arrays import ArrayView, contiguous_view
from ..function_writer import FunctionWriter, literal, memory_type
from .context import Statement

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def _blas_symbol(routine: str, s: Statement) -> str:
    key = f"{routine}_{s.dtype.name}"
    if BLAS is None or key not in BLAS.symbols:
        raise NotImplementedError(f"no numpy CBLAS {routine} for {s.dtype}")
    return BLAS.symbols[key]


def _at_least_one(w: FunctionWriter, value: str) -> str:
    if value in ("0", "1"):
        return "1"
    more = w.assign("ld.more", f"icmp sgt i64 {value}, 1")
    return w.assign("ld", f"select i1 {more}, i64 {value}, i64 1")


def _layout(w: FunctionWriter, view: ArrayView) -> tuple[int, str]:
    """How row-major CBLAS reads the matrix ``view``: its transpose flag and leading dimension."""
    rows, cols = view.sizes
    if view.strides[1] == "1":
        return NO_TRANS, _at_least_one(w, view.strides[0] if rows != "1" else cols)
    if view.strides[0] == "1":
        return TRANS, _at_least_one(w, view.strides[1] if cols != "1" else rows)
    raise NotImplementedError("a matrix BLAS cannot read in place")


def _integer(w: FunctionWriter, value: str) -> str:
    bits = BLAS.integer_bits
    if bits == 64 or value in ("0", "1"):
        return f"i{bits} {value}"
    return f"i{bits} " + w.assign("blasint", f"trunc i64 {value} to i{bits}")


def _call_when_terms(s: Statement, terms: str, elements: str, symbol: str, arguments: list[str]) -> None:
    """The BLAS call, or the output zeroed where the sum has no terms."""
    w = s.w
    kind = memory_type(s.dtype)
    declared = ", ".join(a.split(" ")[0] for a in arguments)
    w.declare(symbol, f"declare void @{symbol}({declared})")
    empty = w.assign("no.terms", f"icmp eq i64 {terms}, 0")
    with w.when(empty, "zero"):
        with w.loop(elements, "zero") as j:
            pointer = w.element_pointer(s.dtype, s.out.pointer, j)
            w.store(kind, literal(0.0, s.dtype), pointer)
    some = w.assign("terms", f"icmp ne i64 {terms}, 0")
    with w.when(some, "blas"):
        w.emit(f"call void @{symbol}({', '.join(arguments)})")


def _scalar(s: Statement, value: float) -> str:
    return f"{memory_type(s.dtype)} {literal(value, s.dtype)}"


def gemm(s: Statement) -> None:
    """``out (n, m) = a (n, k) @ b (k, m)``."""
    a, b = s.inputs
    symbol = _blas_symbol("gemm", s)
    if not s.out.contiguous:
        raise NotImplementedError("a product into an array that is not C-contiguous")
    w = s.w
    n, k = a.sizes
    m = b.sizes[1]
    ta, lda = _layout(w, a)
    tb, ldb = _layout(w, b)
    arguments = [f"i32 {ROW_MAJOR}", f"i32 {ta}", f"i32 {tb}", _integer(w, n), _integer(w, m), _integer(w, k),
                 _scalar(s, 1.0), f"ptr {a.pointer}", _integer(w, lda), f"ptr {b.pointer}", _integer(w, ldb),
                 _scalar(s, 0.0), f"ptr {s.out.pointer}", _integer(w, _at_least_one(w, m))]
    if tb != TRANS or not _traced_wide(s):
        _call_when_terms(s, k, w.mul(n, m), symbol, arguments)
        return
    wide = _wide_at_run_time(w, n, k, m)
    with w.when(wide, "wide"):
        _call_wide_product(s, a, b, (n, m, k))
    narrow = w.assign("narrow", f"xor i1 {wide}, true")
    with w.when(narrow, "narrow"):
        _call_when_terms(s, k, w.mul(n, m), symbol, arguments)


def _traced_wide(s: Statement) -> bool:
    """Whether the traced sizes are a wide product's (the code of every other product stays as it was)."""
    left, right = s.node.args[0].meta["shape"], s.node.args[1].meta["shape"]
    rows, terms, columns = math.prod(left[:-1]), left[-1], right[-1]
    return wide_product.applies(s.dtype) and wide_product.MIN_ROWS <= rows <= wide_product.MAX_ROWS \
        and terms <= wide_product.MAX_TERMS and columns >= wide_product.MIN_COLUMNS


def _wide_at_run_time(w: FunctionWriter, rows: str, terms: str, columns: str) -> str:
    """The same test on the sizes of this call (a kernel serves every size of its graph)."""
    checks = [f"icmp sge i64 {rows}, {wide_product.MIN_ROWS}", f"icmp sle i64 {rows}, {wide_product.MAX_ROWS}",
              f"icmp sle i64 {terms}, {wide_product.MAX_TERMS}", f"icmp sge i64 {columns}, {wide_product.MIN_COLUMNS}"]
    result = w.assign("wide", checks[0])
    for check in checks[1:]:
        result = w.assign("wide", f"and i1 {result}, " + w.assign("wide", check))
    return result


def _call_wide_product(s: Statement, a: ArrayView, b: ArrayView, sizes: tuple[str, str, str]) -> None:
    w = s.w
    name = wide_product.symbol(s.dtype)
    text, declarations = wide_product.definition(s.dtype)
    for declared, line in declarations.items():
        w.declare(declared, line)
    w.declare(name, text)
    values = [*sizes, a.pointer, *a.strides, b.pointer, *b.strides, s.out.pointer, s.out.strides[0]]
    kinds = ["i64"] * 3 + ["ptr", "i64", "i64"] * 2 + ["ptr", "i64"]
    w.emit(f"call void @{name}({', '.join(f'{kind} {value}' for kind, value in zip(kinds, values))})")


def gemv(s: Statement) -> None:
    """``out (n) = a (n, k) @ v (k)``."""
    a, v = s.inputs
    symbol = _blas_symbol("gemv", s)
    w = s.w
    n, k = a.sizes
    trans, lda = _layout(w, a)
    rows, cols = (n, k) if trans == NO_TRANS else (k, n)
    arguments = [f"i32 {ROW_MAJOR}", f"i32 {trans}", _integer(w, rows), _integer(w, cols), _scalar(s, 1.0),
                 f"ptr {a.pointer}", _integer(w, lda), f"ptr {v.pointer}", _integer(w, v.strides[0]),
                 _scalar(s, 0.0), f"ptr {s.out.pointer}", _integer(w, s.out.strides[0])]
    _call_when_terms(s, k, n, symbol, arguments)


def dot(s: Statement) -> None:
    """``out[0] = a (k) . b (k)``, as a one-row ``gemv`` (numba's ``np.dot`` calls BLAS's own dot: the
    same products, summed in BLAS's order either way)."""
    a, b = s.inputs
    row = ArrayView(a.pointer, a.dtype, ("1", a.sizes[0]), (a.sizes[0], a.strides[0]), a.contiguous)
    gemv(Statement(s.k, s.node, [row, b], s.out))


def batched_gemm(s: Statement) -> None:
    """``(..., n, k) @ (k, m)`` of a C-contiguous left operand: one product over the stacked rows;
    any other batched product goes to numba."""
    a, b = s.inputs
    if b.rank != 2 or a.rank < 2 or not a.contiguous or not s.out.contiguous:
        raise NotImplementedError("a batched product other than (..., n, k) @ (k, m)")
    w = s.w
    rows = w.product(a.sizes[:-1])
    left = contiguous_view(w, a.pointer, a.dtype, (rows, a.sizes[-1]))
    out = contiguous_view(w, s.out.pointer, s.out.dtype, (rows, b.sizes[1]))
    gemm(Statement(s.k, s.node, [left, b], out))


STATEMENTS = {"dot": dot, "gemm": gemm, "gemv": gemv, "batched_gemm": batched_gemm}
