"""numba's row fusion (``backends/row_fusion.py``): a fusion group written inside the row loop of the
row statement before it, a row at a time.

The statement's lines end with its loop over the rows, ``for p in prange(rows):``; the group's code
for row ``p`` (``LoopNest``'s, with ``p`` as its outer index) goes at the end of that loop's body,
after the statement has finished the row. A group with a reduction folds each row in vector lanes,
as unfused: where the rows lie when it can (``LoopNest.in_place_fold``: K2's ``(softmax * x).sum()``
is ``row_dot(softmax, x, p)``), else through a row buffer, and then the rows are taken in chunks, a
buffer each (``LoopNest.lane_rows``' chunks, the same count): ``for chunk in prange(chunks): for p in
range(...)``. A full reduction's rows are joined after the loop, in row order. When the statement's
lines are not of that form (a small statement, serial; another dimension), the two are written one
after the other, as unfused. A group without a reduction after a statement whose row ends in a loop
storing one element (``softmax_backward``'s) runs inside that loop, taking the value as computed
(``_element_loop``).

A group that reads a large ``logsumexp``'s exponentials again (its gradient, ``exp(x - lse)``:
``backends/row_fusion.exps_reuse``) runs a row at a time at the end of the logsumexp's row loop, the
``exp`` replaced by the row buffer's ``exp(x - max)`` divided by the row's sum; that row buffer is the
row of the group's output when it has one to hold it (``ExpsReuse.row_into``). A row whose sum is not
finite (it holds +inf, so its exps were taken from 0 instead of its max, and may have overflowed; or NaN)
computes the group as unfused.
"""
from __future__ import annotations

import re
from typing import Any

from ...fx.node import Node
from ..nodes import node_dtype
from ..row_fusion import exps_reuse, fusable_after
from .loop_nest import ROW_BUFFER_ELEMENTS, ROW_CHUNKS, ROW_MIN_CHUNKS, LoopNest, row_chunks
from .nodes import LoweringError
from .scalar_functions import library_calls_kept, numpy_type

_ROW_LOOP = re.compile(r"^    for (\w+) in prange\((.+)\):$")


def _row_loop(lines: list[str]) -> int | None:
    """The position of the statement's parallel loop over its rows, when it is the statement's last
    block (every line after it inside it), else None."""
    found = [k for k, line in enumerate(lines) if _ROW_LOOP.match(line)]
    if len(found) != 1 or any(not line.startswith("     ") for line in lines[found[0] + 1:]):
        return None
    return found[0]


_ELEMENT_LOOP = re.compile(r"^(\s+)for (\w+) in range\((.+)\):$")
_ELEMENT_STORE = re.compile(r"^(\s+)(\w+\[[\w ,]+\]) = (.+)$")


def _element_loop(lines: list[str], statement: Node, members: list[Node]) -> tuple[str, str, str, str] | None:
    """When the statement's row ends in a loop storing one element per iteration (``for k in range(n):
    o[p, k] = value``, softmax_backward's), the indentation of that loop, its index, the store (``{}`` for
    the value; "" when only the group reads the statement, which then takes the value directly and the
    row is never written: K2's ``softmax + softmax_backward``, 0.83 -> 0.70 ms in a numba copy of its
    kernel) and the value; else None."""
    loop = _ELEMENT_LOOP.match(lines[-2]) if len(lines) >= 2 else None
    store = _ELEMENT_STORE.match(lines[-1])
    if loop is None or store is None or store.group(1) != loop.group(1) + "    ":
        return None
    if not re.search(rf"\b{loop.group(2)}\b", store.group(2)):
        return None
    kept = not all(user in members for user in statement.users)
    return loop.group(1), loop.group(2), f"{store.group(2)} = {{}}" if kept else "", store.group(3)


def emit_row_fused(w: Any, statement: Node, members: list[Node], out: list[str]) -> bool:
    """Writes ``statement`` with the fusion group ``members`` inside its row loop into ``out`` and
    returns True; returns False, writing nothing, when they do not fuse (the caller writes them apart)."""
    if not fusable_after(statement, members):
        return False
    nest = LoopNest(w, members)
    if not (w.parallel_mode is True or (w.parallel_mode is None and nest.large())):
        return False  # the statement is then one serial loop (``op_context``), in cache anyway
    if nest.reduction is not None and not (nest.in_lanes() and nest.parallel_ok()):
        return False
    allocations: list[str] = []
    for node in members:
        if "buffer" in node.meta:
            w.allocate(node, allocations)
    lines: list[str] = []
    w.statement(statement, lines)
    at = _row_loop(lines)
    if at is None:  # the statement's lowering changed shape: say so, rather than write a wrong loop
        raise LoweringError(f"row fusion: the lines of {statement.name} ({statement.target_name}) do not end "
                            "in a parallel loop over its rows")
    p = _ROW_LOOP.match(lines[at]).group(1)
    nest.index[0] = p
    group = members[0].meta.get("fusion_group", "group")
    comment = f"# {group}: {', '.join(m.name for m in members)}, a row at a time in {statement.name}'s row loop"
    sizes = w.sizes_of(nest.loop_shape)
    if nest.reduction is None:
        direct = _element_loop(lines, statement, members)
        if direct is not None:  # the group inside the statement's last loop, reading its value
            pad, k, store, value = direct
            element = w.fresh(f"{statement.name}_v")
            nest.index[1], nest.given = k, {statement: element}
            # the value as the row would hold it: log_softmax's is float64 arithmetic stored as float32
            cast = f"{numpy_type(node_dtype(statement))}({value})"
            body = [f"{element} = {cast}", *([store.format(element)] if store else []), *nest.body(True)]
            out += allocations + lines[:-2] + [pad + comment, lines[-2], *(f"{pad}    {b}" for b in body)]
            return True
        inner = nest.index[1]
        row = [f"{comment}", f"for {inner} in range({sizes[1]}):", *("    " + b for b in nest.body(True))]
        out += allocations + lines + ["        " + line for line in row]
        return True
    red = nest.reduction
    spec = red.target.lower
    if nest.in_place_fold(spec) is not None:  # folded where the rows lie: no row buffer, no chunks
        row, after = nest.lane_fold_row(spec, w.var[red], True, nest.names(None), "", "        ")
        out += allocations + lines + ["        " + comment, *row, *after]
        return True
    chunk, chunks = w.fresh("chunk"), w.fresh("chunks")
    w.allocations.append(f"    {chunks} = min({sizes[0]}, max({ROW_MIN_CHUNKS}, min({ROW_CHUNKS}, "
                         f"{ROW_BUFFER_ELEMENTS} // max({sizes[1]}, 1))))")
    buffers = nest.scratch(f"{red.name}_rows", [chunks, sizes[1]],
                           row_chunks(nest.loop_shape[0], nest.loop_shape[1]) * nest.loop_shape[1],
                           nest.row_dtype(spec))
    row_buffer = w.fresh(f"{red.name}_row")
    head = [f"    for {chunk} in prange({chunks}):",
            f"        {row_buffer} = {buffers}[{chunk} * {sizes[1]}:({chunk} + 1) * {sizes[1]}]",
            f"        for {p} in range({chunk} * {sizes[0]} // {chunks}, ({chunk} + 1) * {sizes[0]} // {chunks}):"]
    row, after = nest.lane_fold_row(spec, w.var[red], True, nest.names(None), row_buffer, "            ")
    out += allocations + lines[:at] + head + ["    " + line for line in lines[at + 1:]]
    out += ["            " + comment, *row, *after]
    return True


def emit_exps_reused(w: Any, plan: list[list[Node]], k: int, out: list[str]) -> tuple[int, ...]:
    """Writes the logsumexp group ``plan[k]`` with the later group that reads its exponentials again inside
    its row loop (and the views that group reads, moved before the loop) into ``out``; returns the units
    written, or () having written nothing (the caller writes ``plan[k]`` as usual)."""
    found = exps_reuse(plan, k)
    if found is None:
        return ()
    nest, group = LoopNest(w, plan[k]), LoopNest(w, plan[found.group])
    if not (nest.in_lanes() and nest.kept() == nest.rank - 1) or group.index != nest.index:
        return ()
    names = ", ".join(n.name for n in nest.members)
    members = ", ".join(m.name for m in group.members)
    out.append(f"    # {nest.members[0].meta.get('fusion_group', 'group')}: {names} "
               f"(loop over [{', '.join(w.sizes_of(nest.loop_shape))}])")
    for node in nest.members:
        if "buffer" in node.meta:
            w.allocate(node, out)
    for j in found.views:
        w.statement(plan[j][0], out)
    for node in group.members:
        if "buffer" in node.meta:
            w.allocate(node, out)
    inner, size = group.index[1], w.sizes_of(group.loop_shape)[1]
    exps = ", ".join(e.name for e in found.exps)

    def after_row(row: str, total: str, pad: str) -> list[str]:
        group.given = {}
        plain = group.body(True)
        group.given = {e: f"{row}[{inner}] / {total}" for e in found.exps}
        reused = group.body(True)
        return [f"{pad}# {plan[found.group][0].meta.get('fusion_group', 'group')}: {members}, a row at a time in "
                f"{names}'s row loop, {exps} = exp(x - lse) as the row's exps over their sum",
                f"{pad}if math.isfinite({total}):",
                f"{pad}    for {inner} in range({size}):", *(f"{pad}        {b}" for b in reused),
                f"{pad}else:  # +inf or NaN in the row: its exps are not exp(x - max)",
                f"{pad}    for {inner} in range({size}):", *(f"{pad}        {b}" for b in plain)]

    nest.after_row = after_row
    nest.row_into = None if found.row_into is None else w.var[found.row_into]
    parallel = nest.parallel_ok()
    lines = nest.loops(parallel)
    out.append(w.outliner.add(w.fresh(nest.members[0].meta.get("fusion_group", "group")),
                              library_calls_kept(lines), parallel))
    return (k, found.group, *found.views)


__all__ = ["emit_exps_reused", "emit_row_fused"]
