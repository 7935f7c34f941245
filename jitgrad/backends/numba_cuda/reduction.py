"""A fusion group ending in a reduction as block tree reductions, deterministic (no atomics: every sum is
folded in the same order at every run).

One block per output element (a grid-stride loop over the outputs): the block's threads fold a
strided part of the reduced elements each into a register (the group's elementwise members computed
on the way), then the block combines the threads' values: warp shuffles (``cuda.shfl_down_sync``)
within each warp, each warp's value through shared memory, and shuffles again; thread 0 finishes and
stores. A full reduction (one output) takes two kernels instead, so that more than one block works on
it: each block folds a strided part of all elements into a partial result, and one block joins the
partial results in order. A ``first`` reduction (the variance's mean) runs its first fold as a pass
of its own into an array the second pass reads.
"""
from __future__ import annotations

from typing import Any

from ...ops.lowering import Reduction
from ...ops.scalar import Var
from ..nodes import node_dtype
from ..source import product
from .dialect import numba_type
from .elementwise import GroupKernel, _args

# The types warp shuffles move; any other dtype travels as the wider integer type named here.
_SHUFFLED = {"float32": None, "float64": None, "int32": None, "int64": None, "bool": "int32", "int8": "int32",
             "int16": "int32", "uint8": "int32", "uint16": "int32", "uint32": "int64", "uint64": "int64"}
WARPS = 32  # the most warps a block can have (1024 threads): the shared memory of the block's combine


class ReductionKernels(GroupKernel):
    def emit(self, out: list[str]) -> None:
        red = self.reduction
        spec = red.target.lower
        acc = self.w.var[red]
        if spec.first is None:
            self.fold(spec, acc, None, True, self.name, out)
            return
        first = self.w.fresh(f"{red.name}_first")
        dtype = node_dtype(red)
        out.append(f"{first} = launch.scratch({first!r}, {acc}.shape, {dtype.name!r})")
        self.w.declare_array(first, dtype, max(len(red.meta["shape"]), 1))
        self.fold(spec.first, first, None, True, self.w.fresh(f"{self.name}_first"), out)
        self.fold(spec, acc, first, False, self.name, out)

    # ---- which dimensions ----------------------------------------------------------------------------
    def reduced_dims(self) -> list[int]:
        dims = self.reduction.kwargs.get("dim")
        if dims is None or len(self.reduction.args[0].meta["shape"]) == 0:
            return list(range(self.rank))
        return sorted(d % self.rank for d in dims)

    def output_index(self) -> str:
        """The output element of the current loop index (``keepdim`` keeps a reduced dimension as 0; a
        kept dimension of size 1 is 0 too: ``unravel`` sets no index for it)."""
        red = self.reduction
        in_rank = len(red.args[0].meta["shape"])
        reduced = set(self.reduced_dims()) if in_rank else set()
        index_of = {k: "0" if self.sizes[k] == "1" else self.index[k] for k in range(in_rank)}
        if red.kwargs.get("keepdim", False):
            index = ["0" if k in reduced else index_of[k] for k in range(in_rank)]
        else:
            index = [index_of[k] for k in range(in_rank) if k not in reduced]
        return ", ".join(index) or "0"

    # ---- source pieces -----------------------------------------------------------------------------
    def names(self, first: str | None) -> dict[str, Any]:
        red = self.reduction
        names: dict[str, Any] = {k: v for k, v in red.kwargs.items() if k not in ("dim", "keepdim")}
        count = product([self.sizes[d] for d in self.reduced_dims()])
        names["count"] = Var(f"{numba_type(node_dtype(red))}({count})")
        if first:
            names["first"] = Var(f"{first}[{self.output_index()}]")
        return names

    def shuffled(self, value: str, offset: int) -> str:
        """``value`` of the lane ``offset`` further down the warp, in the reduction's dtype."""
        dtype = node_dtype(self.reduction)
        carrier = _SHUFFLED.get(dtype.name, "unsupported")
        if carrier == "unsupported":
            raise NotImplementedError(f"no warp shuffle for {dtype.name}")
        if carrier is None:
            return f"cuda.shfl_down_sync(0xFFFFFFFF, {value}, {offset})"
        return f"{numba_type(dtype)}(cuda.shfl_down_sync(0xFFFFFFFF, numba.{carrier}({value}), {offset}))"

    def warp_combine(self, spec: Reduction, total: str) -> list[str]:
        """Lane 0 ends with the warp's 32 values combined (every lane calls each shuffle)."""
        other = self.w.fresh("other")
        lines = []
        for offset in (16, 8, 4, 2, 1):
            lines += [f"{other} = {self.shuffled(total, offset)}",
                      f"{total} = {self.folded(spec.joined(Var(total), Var(other)))}"]
        return lines

    def block_combine(self, spec: Reduction, total: str, shared: str) -> list[str]:
        """Thread 0 ends with every thread's ``total`` combined, in a fixed order; every thread runs
        these lines (the shuffles and barriers need the whole block)."""
        lane, warp = self.w.fresh("lane"), self.w.fresh("warp")
        return [f"{lane} = cuda.threadIdx.x % 32", f"{warp} = cuda.threadIdx.x // 32",
                *self.warp_combine(spec, total),
                f"if {lane} == 0:", f"    {shared}[{warp}] = {total}", "cuda.syncthreads()",
                f"{total} = {shared}[{lane}] if {lane} < cuda.blockDim.x // 32 else {self.folded(spec.initial())}",
                *self.warp_combine(spec, total), "cuda.syncthreads()"]

    def shared(self) -> tuple[str, str]:
        name = self.w.fresh("partials")
        return name, f"{name} = cuda.shared.array({WARPS}, {numba_type(node_dtype(self.reduction))})"

    # ---- kernels -------------------------------------------------------------------------------------
    def fold(self, spec: Reduction, acc: str, first: str | None, write_outputs: bool, name: str,
             out: list[str]) -> None:
        """The kernel(s) folding the group into ``acc`` with ``spec``; ``first`` is the array of a first
        pass's results, which ``spec`` reads."""
        reduced = self.reduced_dims()
        kept = [d for d in range(self.rank) if d not in reduced]
        names = self.names(first)
        if kept:
            self.rows(spec, acc, names, write_outputs, kept, reduced, name, out)
        else:
            self.full(spec, acc, names, write_outputs, name, out)

    def folding_loop(self, spec: Reduction, total: str, names: dict[str, Any], write_outputs: bool,
                     loop: str, dims: list[int]) -> list[str]:
        """``for`` ``loop``: the group's members at the unravelled index, folded into ``total``."""
        j = loop.split()[1]
        body = self.body(write_outputs)
        body.append(self.w.comment(self.reduction))
        value = self.read(self.reduction.args[0], self.reduction, "self")
        body.append(f"{total} = {self.folded(spec.update(Var(total), Var(value), names))}")
        return [loop, *("    " + line for line in self.unravel(j, dims) + body)]

    def rows(self, spec: Reduction, acc: str, names: dict[str, Any], write_outputs: bool, kept: list[int],
             reduced: list[int], name: str, out: list[str]) -> None:
        """One block per output element (grid-stride over the outputs)."""
        o, j, total = self.w.fresh("o"), self.w.fresh("j"), self.w.fresh("total")
        outputs, count = product([self.sizes[d] for d in kept]), product([self.sizes[d] for d in reduced])
        shared, declare = self.shared()
        loop = self.folding_loop(spec, total, names, write_outputs,
                                 f"for {j} in range(cuda.threadIdx.x, {count}, cuda.blockDim.x):", reduced)
        inner = [*self.unravel(o, kept), f"{total} = {self.folded(spec.initial())}", *loop,
                 *self.block_combine(spec, total, shared), "if cuda.threadIdx.x == 0:",
                 f"    {acc}[{self.output_index()}] = {self.folded(spec.finished(Var(total), names))}"]
        lines = [self.header(), declare, f"for {o} in range(cuda.blockIdx.x, {outputs}, cuda.gridDim.x):",
                 *("    " + line for line in inner)]
        params = self.w.kernel(name, lines)
        out.append(f"launch({name}, {name!r}, {outputs}, ({_args(params)}))")

    def full(self, spec: Reduction, acc: str, names: dict[str, Any], write_outputs: bool, name: str,
             out: list[str]) -> None:
        """Partial results of ``parts`` blocks, then one block joining them in order."""
        dtype = node_dtype(self.reduction)
        parts, partial = self.w.fresh(f"{name}_count"), self.w.fresh(f"{name}_partial")
        count = product(self.sizes)
        out += [f"{parts} = launch.parts({count})",
                f"{partial} = launch.scratch({partial!r}, ({parts},), {dtype.name!r})"]
        self.w.declare_array(partial, dtype, 1)
        j, total = self.w.fresh("j"), self.w.fresh("total")
        shared, declare = self.shared()
        loop = self.folding_loop(spec, total, names, write_outputs,
                                 f"for {j} in range(cuda.grid(1), {count}, cuda.gridsize(1)):", list(range(self.rank)))
        lines = [self.header(), declare, f"{total} = {self.folded(spec.initial())}", *loop,
                 *self.block_combine(spec, total, shared), "if cuda.threadIdx.x == 0:",
                 f"    {partial}[cuda.blockIdx.x] = {total}"]
        blocks = self.w.fresh(f"{name}_parts")
        params = self.w.kernel(blocks, lines)
        out.append(f"launch({blocks}, {blocks!r}, {parts}, ({_args(params)}))")
        k = self.w.fresh("k")
        lines = [f"# {name}: the {self.reduction.name} of the partial results, joined in order", declare,
                 f"{total} = {self.folded(spec.initial())}",
                 f"for {k} in range(cuda.threadIdx.x, {partial}.shape[0], cuda.blockDim.x):",
                 f"    {total} = {self.folded(spec.joined(Var(total), Var(f'{partial}[{k}]')))}",
                 *self.block_combine(spec, total, shared), "if cuda.threadIdx.x == 0:",
                 f"    {acc}[{self.output_index()}] = {self.folded(spec.finished(Var(total), names))}"]
        join = self.w.fresh(f"{name}_join")
        params = self.w.kernel(join, lines)
        out.append(f"launch({join}, {join!r}, 1, ({_args(params)}))")


__all__ = ["ReductionKernels"]
