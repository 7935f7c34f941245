"""numba's row fusion (``backends/row_fusion.py``): a fusion group written inside the row loop of the
row statement before it, a row at a time.

The statement's lines end with its loop over the rows, ``for p in prange(rows):``; the group's code
for row ``p`` (``LoopNest``'s, with ``p`` as its outer index) goes at the end of that loop's body,
after the statement has finished the row. A group with a reduction folds each row in vector lanes,
as unfused: where the rows lie when it can (``LoopNest.in_place_fold``: K2's ``(softmax * x).sum()``
is ``row_dot(softmax, x, p)``), else through a row buffer, and then the rows are taken in chunks, a
buffer each (``LoopNest.lane_rows``' chunks, the same count): ``for chunk in prange(chunks): for p in
range(...)``. A full reduction's rows are joined after the loop, in row order. When the statement's lines are not of that form (a small
statement, serial; another dimension), the two are written one after the other, as unfused.
"""
from __future__ import annotations

import re
from typing import Any

from ...fx.node import Node
from ..row_fusion import fusable_after
from .loop_nest import ROW_BUFFER_ELEMENTS, ROW_CHUNKS, ROW_MIN_CHUNKS, LoopNest, row_chunks
from .nodes import LoweringError

_ROW_LOOP = re.compile(r"^    for (\w+) in prange\((.+)\):$")


def _row_loop(lines: list[str]) -> int | None:
    """The position of the statement's parallel loop over its rows, when it is the statement's last
    block (every line after it inside it), else None."""
    found = [k for k, line in enumerate(lines) if _ROW_LOOP.match(line)]
    if len(found) != 1 or any(not line.startswith("     ") for line in lines[found[0] + 1:]):
        return None
    return found[0]


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


__all__ = ["emit_row_fused"]
