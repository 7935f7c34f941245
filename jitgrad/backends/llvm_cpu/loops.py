"""A ``loop`` node (``fx.loop``, made by ``roll_loops``) as a counted loop in the kernel's IR.

The same layout as the numba CPU backend's loop (``numba_cpu/loops.py``), so that the two give the
same bits: the body, planned once (``loop_body.planned_body``), is written once inside the loop by
the kernel's own writer (its fusion groups are calls of group functions, its statements the usual
ones), its buffers are workspace memory apart from the outer graph's, and the kernel's IR, and LLVM's
time on it, no longer grows with the number of iterations. The trip count is an entry of ``sizes``,
like every other size: an RNN over 50 and over 500 steps share one kernel.

Memory: each carried value has two buffers, the one the iteration reads and the one it writes. Their
pointers live in two stack slots that swap at the end of each iteration (LLVM makes them phi nodes),
since the body may read a carry after writing its next value. The values kept from every iteration
are written straight into row ``i`` of their stack (``i = j``, or ``count - 1 - j`` for a ``reverse``
loop); a sliced input's row ``start ± j`` is a view of its array. The loop's value is the list of the
final carries' and the stacks' arrays, which ``tuple_item`` nodes read as views.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...fx.loop import Loop
from ...fx.node import Node, Opcode
from ...fx.passes.memory import output_buffer
from ...fx.passes.schedule import units
from ..loop_body import planned_body
from ..nodes import kernel_shape, node_dtype
from .arrays import ArrayView, contiguous_view, copy
from .fused_loops import FusedLoops

if TYPE_CHECKING:
    from .codegen import KernelWriter


def _row_of(k: "KernelWriter", base: ArrayView, row: str, param: Node) -> ArrayView:
    """Row ``row`` (an i64) of ``base``: ``base[row]``, a view of the body placeholder's shape."""
    w = k.fn
    pointer = w.element_pointer(base.dtype, base.pointer, w.mul(row, base.strides[0]), f"{param.name}.row")
    return ArrayView(pointer, base.dtype, k.sizes_of(param.meta["shape"]), base.strides[1:] or ("1",),
                     base.contiguous)


def emit_loop(k: "KernelWriter", node: Node) -> None:
    """The IR of a loop node: its carries' and stacks' memory, the carries' initial values, then the
    counted loop with the body inside; ``k.views[node]`` is then the list of the loop's arrays."""
    loop: Loop = node.target
    body = planned_body(loop)
    w = k.fn
    carries, sliced, invariants = node.args
    params = body.placeholders
    results = list(body.output_node.args[0])
    w.comment(k.comment(node))
    count = k.size(loop.count)
    hint = node.name

    def memory(value: Node, rows: int, what: str) -> str:
        """A pointer to workspace memory for ``rows`` of ``value`` (contiguous, apart from every other)."""
        elements = math.prod(kernel_shape(tuple(value.meta["shape"])))
        return k.workspace(node_dtype(value), elements * rows, f"{hint}.{what}")

    slots = []   # per carry: the slot of the buffer read this iteration, the slot of the one written
    for n, (init, result) in enumerate(zip(carries, results)):
        dtype, sizes = node_dtype(result), k.sizes_of(result.meta["shape"])
        first, second = memory(result, 1, f"carry{n}"), memory(result, 1, f"next{n}")
        copy(w, k.views[init], contiguous_view(w, first, dtype, sizes), f"{hint}.init{n}.")
        current, following = w.slot("ptr", f"{hint}.carry{n}"), w.slot("ptr", f"{hint}.next{n}")
        w.store("ptr", first, current)
        w.store("ptr", second, following)
        slots.append((current, following))
    stacks = []   # per kept value: its stack's pointer and the elements of one row
    for n, result in enumerate(results[loop.carries:]):
        stacks.append((memory(result, loop.count, f"stack{n}"), w.product(k.sizes_of(result.meta["shape"]))))

    prefix = f"{hint}."
    with w.loop(count, f"{hint}.j") as j:
        i = j if not loop.reverse else w.assign(f"{hint}.i", f"sub nsw i64 {w.add(count, '-1')}, {j}")
        reading = [w.load("ptr", current, f"{hint}.carry") for current, _ in slots]
        writing = [w.load("ptr", following, f"{hint}.next") for _, following in slots]
        for param, pointer in zip(params, reading):
            k.views[param] = contiguous_view(w, pointer, node_dtype(param), k.sizes_of(param.meta["shape"]))
        for param, base, (start, step) in zip(params[loop.carries:], sliced, loop.slices):
            row = w.add(k.size(start), j) if step == 1 else \
                w.assign(f"{param.name}.at", f"sub nsw i64 {k.size(start)}, {j}")
            k.views[param] = _row_of(k, k.views[base], row, param)
        for param, value in zip(params[loop.carries + len(sliced):], invariants):
            k.views[param] = k.views[value]
        targets = list(writing)
        for n, (stack, length) in enumerate(stacks):
            targets.append(w.element_pointer(node_dtype(results[loop.carries + n]), stack, w.mul(i, length),
                                             f"{hint}.row{n}"))
        for n, target in enumerate(targets):
            k.buffers[prefix + output_buffer(n)] = target
        k.buffer_prefix = prefix
        try:
            for members in units(body):
                if members[0].op is not Opcode.CALL_FUNCTION:
                    continue
                if not members[0].kind.in_loop:
                    k.statement(members[0])
                else:
                    FusedLoops(k, members).emit()
        finally:
            k.buffer_prefix = ""
        for n, (result, target) in enumerate(zip(results, targets)):
            if result.meta.get("buffer") != output_buffer(n):   # a view, a placeholder, a value returned twice
                w.comment(f"%{result.name} is copied into the loop's result {n}")
                copy(w, k.views[result], contiguous_view(w, target, node_dtype(result),
                                                          k.sizes_of(result.meta["shape"])), f"{hint}.out{n}.")
        for (current, following), read, written in zip(slots, reading, writing):
            w.store("ptr", written, current)
            w.store("ptr", read, following)
    views = []
    for (current, _), result in zip(slots, results):
        final = w.load("ptr", current, f"{hint}.final")
        views.append(contiguous_view(w, final, node_dtype(result), k.sizes_of(result.meta["shape"])))
    for (stack, _), result in zip(stacks, results[loop.carries:]):
        views.append(contiguous_view(w, stack, node_dtype(result), k.sizes_of((loop.count, *result.meta["shape"]))))
    k.views[node] = views


__all__ = ["emit_loop"]
