"""A ``loop`` node (``fx.loop``, made by ``roll_loops``) as a ``for`` loop in the kernel.

The body graph goes through fusion and the memory plan of its own (``loop_body.BODY_PASSES``) and is written
once, inside the loop, by the kernel's own writer: its fusion groups are loop nests or shared
functions as anywhere else, its buffers are slices of the kernel's workspaces (apart from the outer
graph's, as the loop's own memory is), so the kernel's code, and numba's compile time, no longer grow
with the number of iterations.

Memory: each carried value has two buffers, the one the iteration reads and the one it writes,
swapped at the end of the iteration (the body may read a carry after writing its next value); the
values kept from every iteration are written straight into row ``i`` of their stack. The loop's
value is the tuple of the final carries and the stacks, which ``tuple_item`` nodes read as views.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...fx.loop import Loop
from ...fx.node import Node
from ...fx.passes.memory import output_buffer
from ...fx.passes.schedule import units
from ..loop_body import planned_body
from ..nodes import kernel_shape, node_dtype
from ..source import product
from .loop_nest import LoopNest

if TYPE_CHECKING:
    from .codegen import _Writer

def _shape_tuple(sizes: tuple[str, ...]) -> str:
    return f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"


def _copy(w: "_Writer", source: str, flat_target: str, sizes: tuple[str, ...], indent: str, out: list[str]) -> None:
    """Copies ``source`` (any layout, of ``sizes``) into the flat contiguous array ``flat_target``, element by
    element (the target reshaped once, outside the loops)."""
    target = flat_target
    if len(sizes) > 1:
        target = w.fresh(f"{flat_target}_shaped")
        out.append(f"{indent}{target} = {flat_target}.reshape({_shape_tuple(sizes)})")
    index = [w.fresh(f"c{d}") for d in range(len(sizes))]
    for depth, (i, size) in enumerate(zip(index, sizes)):
        out.append(indent + "    " * depth + f"for {i} in range({size}):")
    out.append(indent + "    " * len(sizes) + f"{target}[{', '.join(index)}] = {source}[{', '.join(index)}]")


def emit_loop(w: "_Writer", node: Node, out: list[str]) -> None:
    """The lines of a loop node: its carries' and stacks' memory, the carries' initial values, then
    ``for`` over the iterations with the body inside; ``w.var[node]`` is then the loop's tuple."""
    loop: Loop = node.target
    body = planned_body(loop)
    w.taken.update(n.name for n in body.nodes)  # the body's values are variables of the kernel too
    carries, sliced, invariants = node.args
    name = w.array_name(node)
    out.append(f"    {w.comment(node)}")
    count = w.size(loop.count)
    params = body.placeholders
    results = list(body.output_node.args[0])
    j, i = w.fresh(f"{name}_j"), w.fresh(f"{name}_i")

    def memory(hint: str, value: Node, rows: str | None) -> tuple[str, str]:
        """A workspace slice for one value (``rows`` of it when given): its variable and length."""
        var = w.fresh(hint)
        length = product(w.sizes_of(value.meta["shape"]))
        elements = math.prod(kernel_shape(value.meta["shape"]))
        total = length if rows is None else f"{rows} * {length}"
        w.take_from_workspace(var, total, node_dtype(value), elements * (1 if rows is None else loop.count))
        return var, length

    current, following = [], []
    for k, (init, result) in enumerate(zip(carries, results)):
        a, length = memory(f"{name}_carry{k}", result, None)
        b, _ = memory(f"{name}_next{k}", result, None)
        current.append(a)
        following.append(b)
        sizes = w.shapes[w.var[init]]
        _copy(w, w.var[init], a, sizes, "    ", out)
    stacks = []
    for k, result in enumerate(results[loop.carries:]):
        var, length = memory(f"{name}_stack{k}", result, count)
        stacks.append((var, length))
        out.append(f"    {var}_rows = {var}.reshape(({count}, {length}))")

    inner: list[str] = [f"    {i} = {count} - 1 - {j}" if loop.reverse else f"    {i} = {j}"]
    # the body's placeholders: carries read from the current buffers, rows of the sliced arrays, invariants
    for param, var in zip(params, current):
        _bind_flat(w, param, var, inner)
    for param, base, (start, step) in zip(params[loop.carries:], sliced, loop.slices):
        row = w.fresh(f"{param.name}")
        where = f"{w.size(start)} + {j}" if step == 1 else f"{w.size(start)} - {j}"
        inner.append(f"    {row} = {w.var[base]}[{where}]")
        w.bind(param, row, w.contiguous[w.var[base]])
    for param, value in zip(params[loop.carries + len(sliced):], invariants):
        w.var[param] = w.var[value]
    # the body's results go into the next carries and into row i of each stack
    prefix = f"{name}_"
    targets = list(following) + [f"{var}_rows[{i}]" for var, _ in stacks]
    for k, target in enumerate(targets):
        if k >= loop.carries:
            row_var = w.fresh(f"{name}_row{k - loop.carries}")
            inner.append(f"    {row_var} = {target}")
            target = targets[k] = row_var
        w.allocated[prefix + output_buffer(k)] = (target, product(w.sizes_of(results[k].meta["shape"])))
    w.buffer_prefix = prefix
    try:
        for members in units(body):
            if members[0].op.value != "call_function":
                continue
            if not members[0].kind.in_loop:
                w.statement(members[0], inner)
            else:
                LoopNest(w, members).emit(inner)
    finally:
        w.buffer_prefix = ""
    for k, (result, target) in enumerate(zip(results, targets)):
        if result.meta.get("buffer") != output_buffer(k):  # a view, or a value returned twice
            sizes = w.shapes[w.var[result]]
            _copy(w, w.var[result], target, sizes, "    ", inner)
    if current:
        inner.append(f"    {', '.join(current + following)} = {', '.join(following + current)}")
    out.append(f"    for {j} in range({count}):")
    out.extend("    " + line for line in inner)
    values = [f"{var}.reshape({_shape_tuple(w.sizes_of(r.meta['shape']))})" for var, r in zip(current, results)]
    values += [f"{var}.reshape({_shape_tuple(w.sizes_of((loop.count, *r.meta['shape'])))})"
               for (var, _), r in zip(stacks, results[loop.carries:])]
    out.append(f"    {name} = ({', '.join(values)},)")
    w.var[node] = name


def _bind_flat(w: "_Writer", param: Node, var: str, out: list[str]) -> None:
    """Binds a body placeholder to a flat buffer, reshaped to its shape unless it is 1-d."""
    sizes = w.sizes_of(param.meta["shape"])
    if len(sizes) == 1:
        w.bind(param, var, True)
        return
    name = w.fresh(param.name)
    out.append(f"    {name} = {var}.reshape({_shape_tuple(sizes)})")
    w.bind(param, name, True)


__all__ = ["emit_loop"]
