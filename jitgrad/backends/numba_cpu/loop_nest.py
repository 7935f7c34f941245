"""One fusion group as one loop nest: elementwise members as scalars inside the loop, stores of the values
read outside it, and the group's reduction accumulated in the same loop (or, for a large row
reduction, in a second loop over a row buffer, with several running values; for a large reduction
of everything that is not one of long rows, over the flat elements in blocks folded in vectors)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ...fx.node import Node
from ...ops.lowering import Reduction
from ...ops.scalar import LOWEST, Var, expr, where
from ..fused_loop import FusedLoop
from ..nodes import kernel_shape, node_dtype
from ..source import product
from .nodes import LoweringError
from .scalar_functions import NUMBA_CPU, library_calls_kept, numpy_type

# A fusion group of at least this many elements gets a parallel outer loop when ``parallel=None``.
PARALLEL_ELEMENTS = 1 << 16
LANES = 4  # running values of a large row reduction (accumulate_in_lanes)
# A row of at least this many bytes is folded in vector lanes (row_reductions: UNROLL * VECTOR_BITS // 8,
# one block of its vectors); a shorter one keeps LANES running values. K8's rows of 32 float32, filled
# then folded 65,536 times a step, took 0.5 ms longer folded in vectors (a loop set up per row, for
# half a block).
VECTOR_ROW_BYTES = 256
# A parallel row reduction's rows are cut into chunks, a row buffer each: at most ROW_CHUNKS, fewer for wide
# rows (buffers of about ROW_BUFFER_ELEMENTS in all), never fewer than ROW_MIN_CHUNKS (or the rows): the
# buffers never outgrow the reduction's input.
ROW_CHUNKS, ROW_MIN_CHUNKS, ROW_BUFFER_ELEMENTS = 64, 8, 1 << 20
# A large full reduction over contiguous arrays whose rows are too short to fold in vectors runs over its
# elements as one flat range (``accumulate_flat``): FLAT_CHUNKS chunks (fewer for fewer elements), each
# filled and folded FLAT_BLOCK elements at a time.
FLAT_CHUNKS, FLAT_BLOCK = 16, 1024


def row_chunks(rows: int, row_length: int) -> int:
    """How many chunks ``rows`` rows of ``row_length`` elements are cut into (as the kernel computes it)."""
    return min(rows, max(ROW_MIN_CHUNKS, min(ROW_CHUNKS, ROW_BUFFER_ELEMENTS // max(row_length, 1))))


class LoopNest(FusedLoop):
    """A fusion group as nested loops (``prange`` outermost when parallel) over its loop shape; the
    members' values at the loop index come from ``FusedLoop`` (``backends/fused_loop.py``).

    ``after_row``, when set, writes lines that run at the end of each row of a two-pass row reduction
    folded in lanes (``loops``), given the second pass's row buffer, the variable holding that row's fold
    before it is finished, and the indentation: a later group run a row at a time (``row_fusion``).
    ``row_into`` names the 2-d array whose row is then that row buffer: the later group's output, which
    its loop reads and overwrites element by element."""

    dialect = NUMBA_CPU
    lowering_error = LoweringError
    after_row: Callable[[str, str, str], list[str]] | None = None
    row_into: str | None = None   # a 2-d array whose row holds the second pass's row, instead of a row buffer
    row_total = ""   # the variable of the last row fold written (``lane_total``)
    flat_names: dict[str, str] = {}   # in ``accumulate_flat``: each array's flat view

    def output_index(self, node: Node) -> str:
        dims = node.kwargs.get("dim")
        in_rank = len(node.args[0].meta["shape"])
        reduced = set(range(in_rank)) if dims is None else set(dims)
        if node.kwargs.get("keepdim", False):
            index = ["0" if k in reduced else self.index[k] for k in range(in_rank)]
        else:
            index = [self.index[k] for k in range(in_rank) if k not in reduced]
        return ", ".join(index) or "0"

    def count(self, node: Node) -> str:
        dims = node.kwargs.get("dim")
        shape = node.args[0].meta["shape"]
        reduced = range(len(shape)) if dims is None else dims
        return product([self.w.size(shape[k]) for k in reduced])

    def reduced_dims(self) -> set[int]:
        """The loop dimensions the group's reduction folds."""
        dims = self.reduction.kwargs.get("dim")
        if dims is None or len(self.reduction.args[0].meta["shape"]) == 0:
            return set(range(self.rank))
        return set(dims)

    def kept(self) -> int | None:
        """How many outer loop dimensions the reduction keeps, when it folds exactly the inner ones (a
        row reduction, or all of them): then it accumulates in a scalar, not in memory. None otherwise."""
        reduced = self.reduced_dims()
        kept = self.rank - len(reduced)
        return kept if reduced == set(range(kept, self.rank)) else None

    def parallel_ok(self) -> bool:
        mode = self.w.parallel_mode
        if mode is False or self.loop_shape[0] == 1:
            return False
        if self.reduction is not None and 0 in self.reduced_dims():
            # A full reduction splits into per-row partial results, joined by ``combine``; a two-pass
            # one (``first``) cannot be split that way.
            if self.kept() != 0 or self.rank < 2 or self.reduction.target.lower.first is not None:
                return False
        return mode is True or self.large()

    def loop_lines(self, body: list[str], parallel: bool) -> list[str]:
        lines = []
        sizes = self.w.sizes_of(self.loop_shape)
        for k in range(self.rank):
            loop = "prange" if k == 0 and parallel else "range"
            lines.append("    " * (k + 1) + f"for {self.index[k]} in {loop}({sizes[k]}):")
        return lines + ["    " * (self.rank + 1) + b for b in body]

    def emit(self, out: list[str]) -> None:
        names = ", ".join(n.name for n in self.members)
        loop = ", ".join(self.w.sizes_of(self.loop_shape))
        out.append(f"    # {self.members[0].meta.get('fusion_group', 'group')}: {names} (loop over [{loop}])")
        for node in self.members:
            if "buffer" in node.meta:  # the memory plan stores it: read outside the loop, returned, a reduction
                self.w.allocate(node, out)
        parallel = self.parallel_ok()
        out.append(self.w.outliner.add(self.w.fresh(self.members[0].meta.get("fusion_group", "group")),
                                       library_calls_kept(self.loops(parallel)), parallel))

    def loops(self, parallel: bool) -> list[str]:
        """The group's loop nest (or nests: a two-pass reduction takes two)."""
        red = self.reduction
        if red is None:
            return self.loop_lines(self.body(True), parallel)
        spec = red.target.lower
        acc = self.w.var[red]
        if spec.first is None:
            return self.accumulate(spec, acc, None, True, parallel)
        first = self.w.fresh(f"{red.name}_first")
        flat = self.scratch(f"{red.name}_first_flat", self.w.sizes_of(red.meta["shape"]) or ["1"],
                            math.prod(kernel_shape(tuple(red.meta["shape"]))), node_dtype(red))
        head = f"    {first} = {flat}.reshape({acc}.shape)"
        if self.in_lanes() and self.kept() == self.rank - 1:
            # both passes in one loop over the rows: the second reads the row the first just read, in cache
            in_place = self.in_place_fold(spec.first) is not None   # logsumexp's shift: no row buffer for it
            dtypes = [] if in_place else [self.row_dtype(spec.first)]
            if self.row_into is None:
                dtypes.append(self.row_dtype(spec))
            outer, rows, pad = self.lane_rows(parallel, dtypes)
            row = "" if in_place else rows[0]
            if self.row_into is None:
                row_1, bind = rows[-1], []
            else:  # the second pass's row is the row of a later group's output (``row_fusion``)
                row_1 = self.w.fresh(f"{self.reduction.name}_row")
                bind = [f"{pad}{row_1} = {self.row_into}[{self.index[0]}]"]
            lines = [head, *outer, *bind, *self.lane_fold(spec.first, first, True, self.names(None), row, pad),
                     *self.lane_fold(spec, acc, False, self.names(first), row_1, pad)]
            return lines if self.after_row is None else lines + self.after_row(row_1, self.row_total, pad)
        return [head, *self.accumulate(spec.first, first, None, True, parallel),
                *self.accumulate(spec, acc, first, False, parallel)]

    def scratch(self, hint: str, sizes: list[str], elements: int, dtype: Any) -> str:
        """A fresh variable bound to ``product(sizes)`` elements of the kernel's workspace of ``dtype``
        (``elements`` at the traced sizes): scratch memory that a call neither allocates nor frees."""
        var = self.w.fresh(hint)
        self.w.take_from_workspace(var, product(sizes), np.dtype(dtype), max(elements, 1))
        return var

    def accumulate(self, spec: Reduction, acc: str, first: str | None, write_outputs: bool,
                   parallel: bool) -> list[str]:
        """One pass over the loop nest folding the reduction's input into ``acc``; a second pass reads
        the first's result as ``first``. A reduction over the inner dimensions keeps its running
        value in a local (a register: no load and store per element, and no aliasing for LLVM to
        fear); any other accumulates in ``acc`` itself."""
        red = self.reduction
        index = self.output_index(red)
        names = self.names(first)
        kept = self.kept()
        if first is None and self.flat_fold(spec) is not None:
            return self.accumulate_flat(spec, acc, write_outputs, names, parallel)
        if self.in_lanes():
            return self.accumulate_in_lanes(spec, acc, write_outputs, names, parallel)
        body = self.body(write_outputs)
        body.append(self.w.comment(red))
        value = self.read(red.args[0], red, "self")
        if kept is None:
            return self.accumulate_in_memory(spec, acc, first, body, value, names, parallel)
        total = self.w.fresh(f"{red.name}_total")
        init = f"{total} = {self.folded(spec.initial())}"
        body.append(f"{total} = {self.folded(spec.update(Var(total), Var(value), names))}")
        if kept == 0 and parallel:  # per-row partial results, combined serially
            k = self.index[0]
            sizes = self.w.sizes_of(self.loop_shape)
            partial = self.scratch(f"{red.name}_partial", [sizes[0]], self.loop_shape[0], node_dtype(red))
            lines = [f"    for {k} in prange({sizes[0]}):", f"        {init}"]
            for d in range(1, self.rank):
                lines.append("    " * (d + 1) + f"for {self.index[d]} in range({sizes[d]}):")
            lines += ["    " * (self.rank + 1) + b for b in body]
            lines.append(f"        {partial}[{k}] = {total}")
            return lines + self.combine_rows(spec, acc, partial, names)
        lines = self.loop_lines(body, parallel)
        lines.insert(kept, "    " * (kept + 1) + init)
        return lines + ["    " * (kept + 1) + f"{acc}[{index}] = {self.folded(spec.finished(Var(total), names))}"]

    def names(self, first: str | None) -> dict[str, Any]:
        """What the reduction's expressions read by name: its attributes, ``count``, and ``first`` (the
        first pass's result at the row) in a second pass."""
        red = self.reduction
        names: dict[str, Any] = {k: v for k, v in red.kwargs.items() if k not in ("dim", "keepdim")}
        names["count"] = Var(f"{numpy_type(node_dtype(red))}({self.count(red)})")
        if first:
            names["first"] = Var(f"{first}[{self.output_index(red)}]")
        return names

    def in_lanes(self) -> bool:
        """Whether the reduction is folded a row at a time in ``LANES`` running values: a large loop
        reducing its rows (or all of a 2-d loop)."""
        kept = self.kept()
        return kept is not None and self.rank >= 2 and (kept == self.rank - 1 or (kept == 0 and self.rank == 2)) \
            and self.large()

    def combine_rows(self, spec: Reduction, acc: str, partial: str, names: dict[str, Any]) -> list[str]:
        """A full reduction's last lines: the rows' partial results in ``partial`` joined in order
        (``combine``) into ``acc``'s one value."""
        combined, k = self.w.fresh(f"{self.reduction.name}_combined"), self.index[0]  # not a prange reduction
        joined = spec.joined(Var(combined), Var(f"{partial}[{k}]"))
        return [f"    {combined} = {self.folded(spec.initial())}",
                f"    for {k} in range({self.w.sizes_of(self.loop_shape)[0]}):",
                f"        {combined} = {self.folded(joined)}",
                f"    {acc}[{self.output_index(self.reduction)}] = {self.folded(spec.finished(Var(combined), names))}"]

    def large(self) -> bool:
        return math.prod(self.loop_shape) >= PARALLEL_ELEMENTS

    def accumulate_in_lanes(self, spec: Reduction, acc: str, write_outputs: bool, names: dict[str, Any],
                            parallel: bool) -> list[str]:
        """A row reduction of a large loop, in two loops per row: the elementwise members over the row,
        writing the reduction's input to a row buffer (a plain loop LLVM vectorizes, where a running
        value in the same loop, a chain of dependent adds it may not reorder, kept it scalar: 16 ms
        instead of 4 for W3's first loop), then the fold of that row (in cache) with ``LANES``
        running values, combined at the end, as numpy's own sums do. A full reduction keeps the rows'
        results and combines them in order afterwards.

        The row buffers come from the workspace, one per chunk of rows: in parallel the rows are cut
        into ``row_chunks`` chunks, each a ``prange`` iteration with its own buffer, so a
        call allocates nothing (a buffer per row was an allocation per row: 65,536 for a tall-skinny
        product's ``tanh(a @ b).sum()``). Every row is folded the same way whichever thread runs it,
        and the chunks depend on the number of rows only, so results do not depend on the threads."""
        outer, (row,), pad = self.lane_rows(parallel, [self.row_dtype(spec)])
        return outer + self.lane_fold(spec, acc, write_outputs, names, row, pad)

    def row_dtype(self, spec: Reduction) -> np.dtype:
        """The row buffer's dtype: each element's contribution (``map``: logsumexp's exp(x - max)) is
        computed in the row's own loop, which vectorizes, and the lanes only combine."""
        red = self.reduction
        return np.dtype(red.args[0].meta["dtype"]) if spec.map is None else node_dtype(red)

    def lane_rows(self, parallel: bool, dtypes: list[np.dtype]) -> tuple[list[str], list[str], str]:
        """The loops over the rows (in parallel, over chunks of rows), a row buffer of each of ``dtypes``
        bound for the current row: the lines, the buffers' names and the indentation inside."""
        red = self.reduction
        sizes = self.w.sizes_of(self.loop_shape)
        depth = self.rank
        rows = [self.w.fresh(f"{red.name}_row") for _ in dtypes]
        if parallel:
            chunk, chunks = self.w.fresh("chunk"), self.w.fresh("chunks")
            # row_chunks, written where the workspace is sliced (its run-time sizes)
            self.w.allocations.append(f"    {chunks} = min({sizes[0]}, max({ROW_MIN_CHUNKS}, min({ROW_CHUNKS}, "
                                      f"{ROW_BUFFER_ELEMENTS} // max({sizes[-1]}, 1))))")
            outer = [f"    for {chunk} in prange({chunks}):"]
            for row, dtype in zip(rows, dtypes):
                buffers = self.scratch(f"{red.name}_rows", [chunks, sizes[-1]],
                                       row_chunks(self.loop_shape[0], self.loop_shape[-1]) * self.loop_shape[-1], dtype)
                outer.append(f"        {row} = {buffers}[{chunk} * {sizes[-1]}:({chunk} + 1) * {sizes[-1]}]")
            outer.append(f"        for {self.index[0]} in range({chunk} * {sizes[0]} // {chunks}, "
                         f"({chunk} + 1) * {sizes[0]} // {chunks}):")
            shift = 1
        else:
            for k, dtype in enumerate(dtypes):
                rows[k] = self.scratch(f"{red.name}_row", [sizes[-1]], self.loop_shape[-1], dtype)
            outer = [f"    for {self.index[0]} in range({sizes[0]}):"]
            shift = 0
        outer += [("    " * (k + 1 + shift)) + f"for {self.index[k]} in range({sizes[k]}):"
                  for k in range(1, depth - 1)]
        return outer, rows, "    " * (depth + shift)

    def lane_fold(self, spec: Reduction, acc: str, write_outputs: bool, names: dict[str, Any], row: str,
                  pad: str) -> list[str]:
        """One row of ``accumulate_in_lanes`` (indented by ``pad``): the members and the contributions
        written into ``row``, its fold in lanes, and the result stored (or kept for ``combine_rows``)."""
        lines, after = self.lane_fold_row(spec, acc, write_outputs, names, row, pad)
        return lines + after

    def lane_fold_row(self, spec: Reduction, acc: str, write_outputs: bool, names: dict[str, Any], row: str,
                      pad: str) -> tuple[list[str], list[str]]:
        """``lane_fold`` in two parts: the row's lines, and what runs once after the loop over the rows (a
        full reduction's ``combine_rows``; nothing for a row reduction)."""
        red = self.reduction
        sizes = self.w.sizes_of(self.loop_shape)
        inner = self.index[-1]
        block, rest = self.w.fresh(f"{inner}_block"), self.w.fresh(f"{inner}_rest")
        lanes = [self.w.fresh(f"{red.name}_lane") for _ in range(LANES)]
        body = self.body(write_outputs)   # first: the members' values the reduction reads
        fold = self.vector_fold(spec)
        in_place = self.in_place_fold(spec)
        if in_place is not None:
            lines = [pad + self.w.comment(m) for m in self.members] + [pad + f"{lanes[0]} = {in_place}"]
            return self.lane_total(spec, acc, names, lines, lanes[0], pad)
        element = Var(self.read(red.args[0], red, "self"))
        contribution = element.name if spec.map is None else self.folded(spec.mapped(element, names))
        body += [self.w.comment(red), f"{row}[{inner}] = {contribution}"]
        lines = [pad + f"for {inner} in range({sizes[-1]}):", *[pad + "    " + b for b in body]]
        if fold:
            return self.lane_total(spec, acc, names, [*lines, pad + f"{lanes[0]} = {fold}({row}, 0)"], lanes[0], pad)
        lines += [pad + f"{lane} = {self.folded(spec.initial())}" for lane in lanes]
        lines += [pad + f"{rest} = {sizes[-1]} - {sizes[-1]} % {LANES}",
                  pad + f"for {block} in range(0, {rest}, {LANES}):"]
        lines += [pad + f"    {lane} = {self.folded(spec.joined(Var(lane), Var(f'{row}[{block} + {k}]')))}"
                  for k, lane in enumerate(lanes)]
        lines += [pad + f"for {inner} in range({rest}, {sizes[-1]}):",
                  pad + f"    {lanes[0]} = {self.folded(spec.joined(Var(lanes[0]), Var(f'{row}[{inner}]')))}"]
        while len(lanes) > 1:  # a balanced tree: (l0 + l1) + (l2 + l3)
            pairs = [(lanes[k], lanes[k + 1]) for k in range(0, len(lanes), 2)]
            lanes = [self.w.fresh(f"{red.name}_pair") for _ in pairs]
            lines += [pad + f"{v} = {self.folded(spec.joined(Var(a), Var(b)))}" for v, (a, b) in zip(lanes, pairs)]
        return self.lane_total(spec, acc, names, lines, lanes[0], pad)

    def in_place_fold(self, spec: Reduction) -> str | None:
        """The row's fold as one call on the group's 2-d inputs where they lie, with no row buffer:
        ``row_max(x, p)`` or ``row_sum(x, p)`` when the group is its reduction alone (``logsumexp``'s
        shift), ``row_dot(a, b, p)`` when it is the sum of one product ``a * b`` (K2's loss): the same
        operations in the same order as filling the row buffer and folding it. None otherwise."""
        fold, red = self.vector_fold(spec), self.reduction
        if fold is None or spec.map is not None or self.rank != 2:
            return None

        def whole(value: Any) -> bool:
            return isinstance(value, Node) and kernel_shape(tuple(value.meta["shape"])) == self.loop_shape \
                and node_dtype(value) == node_dtype(red)
        row = self.index[0]
        if len(self.members) == 1 and whole(red.args[0]):
            return f"{fold}({self.w.var[red.args[0]]}, {row})"
        product = self.members[0]
        if fold == "row_sum" and len(self.members) == 2 and product.target_name == "mul" and red.args[0] is product \
                and "buffer" not in product.meta and len(product.args) == 2 and all(whole(a) for a in product.args):
            return f"row_dot({self.w.var[product.args[0]]}, {self.w.var[product.args[1]]}, {row})"
        return None

    def lane_total(self, spec: Reduction, acc: str, names: dict[str, Any], lines: list[str], total: str,
                   pad: str) -> tuple[list[str], list[str]]:
        """The row's fold ``total`` stored: finished into ``acc`` (a row reduction) or kept for
        ``combine_rows`` (a full one, whose lines are the second part)."""
        red = self.reduction
        self.row_total = total
        if self.kept() == self.rank - 1:
            finished = self.folded(spec.finished(Var(total), names))
            return lines + [pad + f"{acc}[{self.output_index(red)}] = {finished}"], []
        sizes = self.w.sizes_of(self.loop_shape)
        partial = self.scratch(f"{red.name}_partial", [sizes[0]], self.loop_shape[0], node_dtype(red))
        return [*lines, pad + f"{partial}[{self.index[0]}] = {total}"], self.combine_rows(spec, acc, partial, names)

    def vector_fold(self, spec: Reduction) -> str | None:
        """``row_sum`` or ``row_max`` (``row_reductions``: a row folded in vector lanes) when the fold is
        theirs (``fold_kind``) over rows at least ``VECTOR_ROW_BYTES`` long when traced; else None (the
        fold in ``LANES`` running values)."""
        fold = self.fold_kind(spec)
        if fold is None or self.loop_shape[-1] * node_dtype(self.reduction).itemsize < VECTOR_ROW_BYTES:
            return None
        return fold

    def fold_kind(self, spec: Reduction) -> str | None:
        """``row_sum`` or ``row_max`` when the fold is ``+`` from 0 or the NaN-skipping max from the lowest
        value (-inf) over float32 or float64 values of the reduction's own dtype; else None."""
        dtype = node_dtype(self.reduction)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)) or self.row_dtype(spec) != dtype:
            return None
        a, b = Var("a"), Var("b")
        joined, start = self.folded(spec.joined(a, b)), self.folded(spec.initial())
        if joined == self.folded(a + b) and start == self.folded(expr(0)):
            return "row_sum"
        if joined == self.folded(where(b > a, b, a)) and start == self.folded(LOWEST):
            return "row_max"
        return None

    # ---- a large full reduction with short rows: one flat range --------------------------------------
    def flat_fold(self, spec: Reduction) -> str | None:
        """The vector fold ``accumulate_flat`` folds with, where it applies: a one-pass reduction of
        everything over a large loop that is not a 2-d loop of rows long enough to fold in vectors
        (``accumulate_in_lanes``), every array the group reads or stores C-contiguous and of the loop's
        shape (or one element), so that one flat index reads them all. Such a loop otherwise folded
        rows of 16 float32 through a row buffer each (K14's ``tanh(a @ b).sum()``: 1.0 ms of the step for
        1M elements, 0.45 flat), or, of rank 3 and more, into one running value per outer index, a chain
        of dependent adds that LLVM may not vectorize (K3's ``((a @ b) ** 2).sum()``). None otherwise."""
        red = self.reduction
        if red.target.lower.first is not None or self.kept() != 0 or self.rank < 2 or not self.large():
            return None
        if self.after_row is not None or self.row_into is not None or self.given or (
                self.in_lanes() and self.vector_fold(spec)):
            return None   # (``given``: values written at the row loop's index, ``row_fusion``)
        if self.flat_arrays() is None:
            return None
        return self.fold_kind(spec)

    def flat_arrays(self) -> list[str] | None:
        """The array variables the group reads or stores at the loop index (not those of one element), or
        None when one of them is not C-contiguous of the loop's whole shape."""
        arrays: list[str] = []
        for node in self.members:
            if node is self.reduction:
                values = [v for v in node.args if isinstance(v, Node) and v not in self.members]
            else:
                if "buffer" in node.meta and kernel_shape(tuple(node.meta["shape"])) != self.loop_shape:
                    return None
                values = [node] if "buffer" in node.meta else []
                values += [v for v in node.args if isinstance(v, Node) and v not in self.members]
            for value in values:
                shape = kernel_shape(tuple(value.meta["shape"]))
                if all(s == 1 for s in shape):
                    continue
                var = self.w.var.get(value)
                if shape != self.loop_shape or var is None or not self.w.contiguous.get(var, False):
                    return None
                if var not in arrays:
                    arrays.append(var)
        return arrays

    def element(self, var: str, shape: tuple[int, ...]) -> str:
        """In ``accumulate_flat``, an array of the loop's shape at the flat index."""
        if self.flat_names and any(s != 1 for s in kernel_shape(tuple(shape))):
            return f"{self.flat_names[var]}[{self.index[0]}]"
        return super().element(var, shape)

    def accumulate_flat(self, spec: Reduction, acc: str, write_outputs: bool, names: dict[str, Any],
                        parallel: bool) -> list[str]:
        """A reduction of everything over contiguous arrays, as one range of flat indices: cut into
        chunks (a ``prange`` iteration each when parallel), each chunk filled into a block buffer of
        the workspace ``FLAT_BLOCK`` elements at a time by the group's elementwise members (a plain
        loop LLVM vectorizes) and the block folded in vectors (``row_sum``/``row_max``); the chunks'
        results are joined in order. The chunks and the blocks depend on the number of elements
        only, so the result does not depend on the threads or on ``parallel``."""
        red = self.reduction
        fold = self.fold_kind(spec)
        sizes = self.w.sizes_of(self.loop_shape)
        elements = math.prod(self.loop_shape)
        n, chunks = self.w.fresh("flat_n"), self.w.fresh("flat_chunks")
        self.w.allocations.append(f"    {n} = {product(list(sizes))}")
        self.w.allocations.append(f"    {chunks} = min({FLAT_CHUNKS}, ({n} + {FLAT_BLOCK - 1}) // {FLAT_BLOCK})")
        traced_chunks = min(FLAT_CHUNKS, -(-elements // FLAT_BLOCK))
        blocks = self.scratch(f"{red.name}_blocks", [chunks, str(FLAT_BLOCK)], traced_chunks * FLAT_BLOCK,
                              self.row_dtype(spec))
        partial = self.scratch(f"{red.name}_partial", [chunks], traced_chunks, node_dtype(red))
        chunk, block = self.w.fresh("chunk"), self.w.fresh(f"{red.name}_block")
        start, stop, total = self.w.fresh("start"), self.w.fresh("stop"), self.w.fresh(f"{red.name}_total")
        flat = {var: self.w.fresh(f"{var}_flat") for var in self.flat_arrays() or []}
        self.flat_names = {var: self.w.fresh(f"{var}_part") for var in flat}
        i = self.index[0]
        body = self.body(write_outputs)
        element = Var(self.read(red.args[0], red, "self"))
        contribution = element.name if spec.map is None else self.folded(spec.mapped(element, names))
        body += [self.w.comment(red), f"{block}[{i}] = {contribution}"]
        parts = [f"            {part} = {flat[var]}[{start}:{stop}]" for var, part in self.flat_names.items()]
        self.flat_names = {}
        end = f"({chunk} + 1) * {n} // {chunks}"
        folded = self.folded(spec.joined(Var(total), Var(f"{fold}({block}[:{stop} - {start}], 0)")))
        lines = [f"    {view} = {var}.reshape({n})" for var, view in flat.items()]
        lines += [f"    for {chunk} in {'prange' if parallel else 'range'}({chunks}):",
                  f"        {block} = {blocks}[{chunk} * {FLAT_BLOCK}:({chunk} + 1) * {FLAT_BLOCK}]",
                  f"        {total} = {self.folded(spec.initial())}",
                  f"        for {start} in range({chunk} * {n} // {chunks}, {end}, {FLAT_BLOCK}):",
                  f"            {stop} = min({start} + {FLAT_BLOCK}, {end})",
                  *parts,   # each array's block as a view from 0, whose index LLVM knows is not negative
                  f"            for {i} in range({stop} - {start}):",
                  *[f"                {b}" for b in body],
                  f"            {total} = {folded}",
                  f"        {partial}[{chunk}] = {total}"]
        combined, k = self.w.fresh(f"{red.name}_combined"), self.w.fresh("k")
        joined = spec.joined(Var(combined), Var(f"{partial}[{k}]"))
        return lines + [f"    {combined} = {self.folded(spec.initial())}",
                        f"    for {k} in range({chunks}):",
                        f"        {combined} = {self.folded(joined)}",
                        f"    {acc}[{self.output_index(red)}] = {self.folded(spec.finished(Var(combined), names))}"]

    def accumulate_in_memory(self, spec: Reduction, acc: str, first: str | None, body: list[str], value: str,
                             names: dict[str, Any], parallel: bool) -> list[str]:
        """The reduction's running values live in ``acc`` (initialised first, finished after): for
        reductions over outer dimensions, whose inner loop then updates a row of ``acc`` at a time."""
        index = self.output_index(self.reduction)
        at = f"{acc}[{index}]"
        body.append(f"{at} = {self.folded(spec.update(Var(at), Var(value), names))}")
        lines = [f"    {acc}.reshape(-1)[:] = {self.folded(spec.initial())}"] + self.loop_lines(body, parallel)
        if spec.finish is not None:
            j, flat = self.w.fresh("j"), self.w.fresh(f"{acc}_flat")
            lines.append(f"    {flat} = {acc}.reshape(-1)")
            if first:
                names["first"] = Var(f"{first}.reshape(-1)[{j}]")
            lines.append(f"    for {j} in range({flat}.size):")
            lines.append(f"        {flat}[{j}] = {self.folded(spec.finished(Var(f'{flat}[{j}]'), names))}")
        return lines
