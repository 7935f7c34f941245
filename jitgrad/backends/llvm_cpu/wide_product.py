"""A matrix product of our own for few rows, few terms and many columns: ``c (m, n) = a (m, k) @ b (k, n)``
with m and k at most 32 (K15's backward, ``g (16, 16) @ b.T (16, 65536)``).

numpy's OpenBLAS takes about twice PyTorch's time for that shape (1.1 ms against 0.6 ms for K15's,
one thread; 1.0 ms with ``b`` C-contiguous): its kernels are blocked for large m and k, and these
products are all packing and edges. ``linalg.gemm`` calls this loop for a transposed ``b`` only (with
``b`` C-contiguous it was not faster everywhere), but the loop reads any layout.

Here every block of ``LANES`` columns (one 512-bit vector; LLVM splits it where the CPU's vectors are
narrower) is gathered once into a stack tile ``tile[t] = b[t, j:j+LANES]`` (a transposed ``b`` whose
terms are unit-stride, as K15's ``b.T``'s are, by in-register butterflies of ``LANES`` rows; any other
layout by element loads), then each row of ``c`` is ``LANES`` columns of fused multiply-adds,
``ROW_GROUP`` rows at a time so that enough independent sums are in flight.

Each element of ``c`` is ``fma(a[i, k-1], b[k-1, j], ... fma(a[i, 0], b[0, j], 0))``: the terms in
order, one rounding per term, the same in a vector lane and in the scalar loop for the last columns,
so a result does not depend on where its column falls, on the thread or on the run. BLAS sums in an
order of its own, so the two agree to rounding, not bit for bit.
"""
from __future__ import annotations

import numpy as np

from .function_writer import FunctionWriter, literal, memory_type

LANES = {"float32": 16, "float64": 8}
MIN_ROWS = 2      # one row is a matrix-vector product, and float64's BLAS does it faster
MAX_ROWS = 32     # m and k up to these go here (BLAS is as fast or faster past them, and the tile is
MAX_TERMS = 32    # sized for MAX_TERMS vectors: 2 KiB in float32)
MIN_COLUMNS = 256  # narrower products stay with BLAS (see docs/backends.md, "Matrix products")
ROW_GROUP = 8
_POINTERS = {"a": "ptr", "b": "ptr", "c": "ptr"}
_ARGUMENTS = ("m", "n", "k", "a", "as0", "as1", "b", "bs0", "bs1", "c", "cs0")


def symbol(dtype: np.dtype) -> str:
    """The helper's name in a module (one per dtype)."""
    return f"jitgrad_wide_product_{np.dtype(dtype).name}"


def applies(dtype: np.dtype) -> bool:
    """Whether there is a helper for ``dtype`` (float32 and float64)."""
    return np.dtype(dtype).name in LANES


def _fma_name(dtype: np.dtype, vector: bool) -> str:
    scalar = "f32" if np.dtype(dtype) == np.float32 else "f64"
    return f"llvm.fma.v{LANES[np.dtype(dtype).name]}{scalar}" if vector else f"llvm.fma.{scalar}"


class _Writer:
    """The helper's body: a FunctionWriter and the few things every part of it reads."""

    def __init__(self, dtype: np.dtype) -> None:
        self.w = FunctionWriter()
        self.dtype = np.dtype(dtype)
        self.scalar = memory_type(dtype)
        self.lanes = LANES[self.dtype.name]
        self.shift = self.lanes.bit_length() - 1
        self.vector = f"<{self.lanes} x {self.scalar}>"
        self.align = self.dtype.itemsize

    def element(self, base: str, row: str, row_stride: str, col: str, col_stride: str) -> str:
        w = self.w
        return w.element_pointer(self.dtype, base, w.add(w.mul(row, row_stride), w.mul(col, col_stride)))

    def load_vector(self, pointer: str) -> str:
        return self.w.assign("v", f"load {self.vector}, ptr {pointer}, align {self.align}")

    def store_vector(self, value: str, pointer: str) -> None:
        self.w.emit(f"store {self.vector} {value}, ptr {pointer}, align {self.align}")

    def tile_row(self, tile: str, t: str) -> str:
        return self.w.assign("tile.row", f"getelementptr inbounds {self.vector}, ptr {tile}, i64 {t}")

    # ---- the tile: tile[t] = b[t, j0:j0+LANES] ------------------------------------------------------
    def transposed_chunks(self, tile: str, chunks: str, j0: str) -> None:
        """Where b's terms are unit-stride (bs0 == 1): LANES columns of b, each LANES terms long, loaded
        as vectors and transposed in registers, one chunk of LANES terms at a time."""
        w, lanes = self.w, self.lanes
        with w.loop(chunks, "chunk") as chunk:
            t0 = w.assign("t0", f"shl nsw i64 {chunk}, {self.shift}")
            rows = [self.load_vector(self.element("%b", t0, "1", w.add(j0, str(j)), "%bs1")) for j in range(lanes)]
            bit = 1
            while bit < lanes:   # swap bit ``bit`` of the column index with that of the term index
                swapped = list(rows)
                for j in (j for j in range(lanes) if not j & bit):
                    low = [k if not k & bit else lanes + (k ^ bit) for k in range(lanes)]
                    high = [k | bit if not k & bit else lanes + k for k in range(lanes)]
                    for target, mask in ((j, low), (j | bit, high)):
                        mask_text = ", ".join(f"i32 {x}" for x in mask)
                        swapped[target] = w.assign("t", f"shufflevector {self.vector} {rows[j]}, {self.vector} "
                                                        f"{rows[j | bit]}, <{lanes} x i32> <{mask_text}>")
                rows, bit = swapped, bit * 2
            for j, row in enumerate(rows):
                self.store_vector(row, self.tile_row(tile, w.add(t0, str(j))))

    def gathered_terms(self, tile: str, start: str, j0: str) -> None:
        """The other terms (all of them where bs0 != 1): one vector load each where b's columns are
        unit-stride, else LANES element loads."""
        w = self.w
        contiguous = w.assign("columns.unit", "icmp eq i64 %bs1, 1")
        scattered = w.assign("columns.strided", "icmp ne i64 %bs1, 1")
        with w.loop("%k", "term", start) as t:
            target = self.tile_row(tile, t)
            with w.when(contiguous, "row"):
                self.store_vector(self.load_vector(self.element("%b", t, "%bs0", j0, "1")), target)
            with w.when(scattered, "gather"):
                value = "undef"
                for j in range(self.lanes):
                    x = w.load(self.scalar, self.element("%b", t, "%bs0", w.add(j0, str(j)), "%bs1"), "x")
                    value = w.assign("g", f"insertelement {self.vector} {value}, {self.scalar} {x}, i64 {j}")
                self.store_vector(value, target)

    # ---- the rows of c ------------------------------------------------------------------------------
    def rows(self, tile: str, i0: str, count: int, j0: str) -> None:
        """c[i0:i0+count, j0:j0+LANES] from the tile: ``count`` running sums, one vector each."""
        w = self.w
        zero = "zeroinitializer"
        sums = [w.slot(self.vector, "sum") for _ in range(count)]
        for s in sums:
            w.store(self.vector, zero, s)
        fma = _fma_name(self.dtype, vector=True)
        w.declare(fma, f"declare {self.vector} @{fma}({self.vector}, {self.vector}, {self.vector})")
        with w.loop("%k", "t") as t:
            column = w.load(self.vector, self.tile_row(tile, t), "column")
            for r, s in enumerate(sums):
                x = w.load(self.scalar, self.element("%a", w.add(i0, str(r)), "%as0", t, "%as1"), "x")
                one = w.assign("one", f"insertelement {self.vector} undef, {self.scalar} {x}, i64 0")
                splat = w.assign("splat", f"shufflevector {self.vector} {one}, {self.vector} undef, "
                                          f"<{self.lanes} x i32> zeroinitializer")
                total = w.load(self.vector, s, "sum")
                w.store(self.vector, w.assign("fma", f"call {self.vector} @{fma}({self.vector} {splat}, "
                                                     f"{self.vector} {column}, {self.vector} {total})"), s)
        for r, s in enumerate(sums):
            self.store_vector(w.load(self.vector, s, "sum"), self.element("%c", w.add(i0, str(r)), "%cs0", j0, "1"))

    def last_columns(self, start: str) -> None:
        """The columns after the last whole block, one element at a time, summed as the lanes sum."""
        w, scalar = self.w, self.scalar
        fma = _fma_name(self.dtype, vector=False)
        w.declare(fma, f"declare {scalar} @{fma}({scalar}, {scalar}, {scalar})")
        total = w.slot(scalar, "element")
        with w.loop("%n", "col", start) as j:
            with w.loop("%m", "row") as i:
                w.store(scalar, literal(0.0, self.dtype), total)
                with w.loop("%k", "term") as t:
                    x = w.load(scalar, self.element("%a", i, "%as0", t, "%as1"), "x")
                    y = w.load(scalar, self.element("%b", t, "%bs0", j, "%bs1"), "y")
                    before = w.load(scalar, total, "before")
                    w.store(scalar, w.assign("fma", f"call {scalar} @{fma}({scalar} {x}, {scalar} {y}, "
                                                    f"{scalar} {before})"), total)
                w.store(scalar, w.load(scalar, total, "element"), self.element("%c", i, "%cs0", j, "1"))


def definition(dtype: np.dtype, linkage: str = "internal") -> tuple[str, dict[str, str]]:
    """The helper's text and the declarations it needs. It is called as ``symbol(dtype)(m, n, k, a, as0,
    as1, b, bs0, bs1, c, cs0)``: pointers to the first elements and element strides; c's columns are
    unit-stride; k <= MAX_TERMS (the tile's length). A kernel links it ``internal``; tests call it
    (``external``)."""
    h = _Writer(dtype)
    w = h.w
    tile = w.fresh("tile")
    w.slots.append(f"  {tile} = alloca [{MAX_TERMS} x {h.vector}], align 64")
    blocks = w.assign("blocks", f"lshr i64 %n, {h.shift}")
    terms_unit = w.assign("terms.unit", "icmp eq i64 %bs0, 1")
    whole = w.assign("whole", f"lshr i64 %k, {h.shift}")
    chunks = w.assign("chunks", f"select i1 {terms_unit}, i64 {whole}, i64 0")
    gathered_from = w.assign("gathered", f"shl nsw i64 {chunks}, {h.shift}")
    groups = w.assign("groups", f"udiv i64 %m, {ROW_GROUP}")
    grouped = w.assign("grouped", f"mul nsw i64 {groups}, {ROW_GROUP}")
    with w.loop(blocks, "block") as block:
        j0 = w.assign("j0", f"shl nsw i64 {block}, {h.shift}")
        h.transposed_chunks(tile, chunks, j0)
        h.gathered_terms(tile, gathered_from, j0)
        with w.loop(groups, "group") as group:
            h.rows(tile, w.assign("i0", f"mul nsw i64 {group}, {ROW_GROUP}"), ROW_GROUP, j0)
        with w.loop("%m", "single", grouped) as i:
            h.rows(tile, i, 1, j0)
    h.last_columns(w.assign("last", f"shl nsw i64 {blocks}, {h.shift}"))
    w.emit("ret void")
    parameters = ", ".join(f"{_POINTERS.get(name, 'i64')} noundef %{name}" for name in _ARGUMENTS)
    return w.define(f"define {linkage} void @{symbol(dtype)}({parameters}) {{"), dict(w.declarations)


__all__ = ["LANES", "MAX_ROWS", "MIN_ROWS", "MAX_TERMS", "MIN_COLUMNS", "applies", "definition", "symbol"]
