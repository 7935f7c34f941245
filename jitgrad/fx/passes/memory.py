"""``plan_memory``: which memory holds each value, and for how long: the plan a backend allocates.

The plan follows the program as it runs once fused. The graph is put in the order its units run
(``schedule.order_units``: a fusion group's loop is one step), and a value is alive from the first
position of the unit that computes it to the last position of the last unit that reads it (a loop
reads its inputs and writes its results throughout), or to the end for what the graph returns; a
buffer is handed on only after the unit where its value dies, so no unit writes over what it reads.

Where a value lives:

- a value computed inside a fusion group's loop and read only there (``relu`` in
  ``relu(x @ w).mean()``) is a scalar of the loop: no memory;
- a view (``node.kind``: reshape, transpose, basic indexing, a split's pieces, an element of a
  multi-output value) is its base's memory: ``meta["view_of"]`` names the value it reads, whose
  memory stays alive as long as the view is read;
- a multi-output op that is not a view (max/min over a dimension) makes its own arrays;
- an output that is a value of its own, not read through an earlier output, is computed straight
  into the output's memory, buffer ``out<k>`` for the k-th output (flattened depth-first), which is
  shared with nothing: the caller owns what a call returns. Every other output (a view, an argument,
  a value returned twice) is copied into its ``out<k>`` at the end;
- every other value (an opaque op's result, a reduction's, an elementwise value read outside its
  loop) takes a dead buffer of exactly its size and dtype if there is one, else a new ``buf<n>``.

``meta["buffer"]`` and ``meta["live"]`` (first and last position) show the plan on each value with
memory of its own. Reported: ``unplanned_bytes`` (every op's result in memory of its own, as eager
mode has it), ``planned_bytes`` and ``buffers`` (the plan's buffers, outputs included: what a backend
allocates) and ``peak_live_bytes`` (the most bytes alive at once: what any plan needs at least).
"""
from __future__ import annotations

import math

import numpy as np

from ..graph import Graph
from ..node import Node, NodeKind, Opcode, iter_nodes, tuple_item
from .schedule import order_units, units

PLAN_KEYS = ("buffer", "live", "view_of")


def value_bytes(node: Node) -> int:
    """The bytes of the value(s) a node computes."""
    shape, dtype = node.meta["shape"], node.meta["dtype"]
    if isinstance(dtype, tuple):
        return sum(math.prod(s) * np.dtype(d).itemsize for s, d in zip(shape, dtype))
    return math.prod(shape) * np.dtype(dtype).itemsize


def is_planned(graph: Graph) -> bool:
    """Whether ``plan_memory`` was the last pass to run on ``graph``, so its plan holds."""
    return bool(graph.history) and graph.history[-1].name == "plan_memory"


def output_buffer(index: int) -> str:
    """The buffer of the ``index``-th output (flattened depth-first): the memory the caller gets."""
    return f"out{index}"


def _stores(node: Node, step: tuple[int, int], steps: dict[Node, tuple[int, int]], outputs: set[Node]) -> bool:
    """Whether ``node``'s value needs memory of its own (see the module docstring)."""
    if node.kind is NodeKind.VIEW or isinstance(node.meta["dtype"], tuple):
        return False
    if node.kind is not NodeKind.ELEMENTWISE or node in outputs:
        return True
    return any(u.op is not Opcode.OUTPUT and steps[u] != step for u in node.users)


def plan_memory(graph: Graph) -> Graph:
    record = graph.record_pass("plan_memory")
    if order_units(graph):
        record.changes.append("the members of each fusion group put side by side, in the order the units run")
    nodes = graph.nodes
    position = graph.position()
    steps: dict[Node, tuple[int, int]] = {}  # node -> first and last position of its unit
    for members in units(graph):
        for node in members:
            steps[node] = (position[members[0]], position[members[-1]])
    outputs = list(iter_nodes(graph.output_node.args[0]))
    returned = set(outputs)
    base: dict[Node, Node] = {}  # view -> the value whose memory it reads
    stored: list[Node] = []
    for node in nodes:
        for key in PLAN_KEYS:
            node.meta.pop(key, None)
        if node.op is not Opcode.CALL_FUNCTION:
            continue
        if node.kind is NodeKind.VIEW:
            source = node.args[0]
            base[node] = base.get(source, source)
            node.meta["view_of"] = base[node].name
        elif _stores(node, steps[node], steps, returned):
            stored.append(node)
    end: dict[Node, int] = {}
    for node in steps:
        for used in node.all_input_nodes:
            root = base.get(used, used)
            end[root] = max(end.get(root, -1), steps[node][1])
    for node in outputs:
        end[base.get(node, node)] = len(nodes)
    in_place: dict[Node, int] = {}
    claimed: set[Node] = set()
    for k, node in enumerate(outputs):
        root = base.get(node, node)
        if root is node and node in steps and node not in claimed and not isinstance(node.meta["dtype"], tuple):
            in_place[node] = k
        claimed.add(root)
    sizes = {output_buffer(k): value_bytes(node) for k, node in enumerate(outputs)}
    free: dict[tuple, list[str]] = {}
    dying: dict[int, list[Node]] = {}
    live_bytes = peak = count = 0
    for node in stored:
        first, last = steps[node]
        for dead in [d for position_ in sorted(p for p in dying if p < first) for d in dying.pop(position_)]:
            free.setdefault((value_bytes(dead), str(dead.meta["dtype"])), []).append(dead.meta["buffer"])
            live_bytes -= value_bytes(dead)
        key = (value_bytes(node), str(node.meta["dtype"]))
        if node in in_place:
            buffer = output_buffer(in_place[node])
        elif free.get(key):
            buffer = free[key].pop()
            record.changes.append(f"{node.name} reuses {buffer}")
        else:
            buffer, count = f"buf{count}", count + 1
            sizes[buffer] = key[0]
        node.meta["buffer"] = buffer
        node.meta["live"] = (first, max(end.get(node, last), last))
        if node not in in_place:
            dying.setdefault(node.meta["live"][1], []).append(node)
        live_bytes += key[0]
        peak = max(peak, live_bytes)
    copied = sum(value_bytes(node) for k, node in enumerate(outputs) if node.meta.get("buffer") != output_buffer(k))
    at_end = sum(value_bytes(n) for n in stored if n.meta["live"][1] == len(nodes))
    record.stats = {"unplanned_bytes": sum(value_bytes(n) for n in nodes
                                           if n.op is Opcode.CALL_FUNCTION and n.target is not tuple_item),
                    "planned_bytes": sum(sizes.values()), "peak_live_bytes": max(peak, at_end + copied),
                    "buffers": len(sizes)}
    return graph


__all__ = ["is_planned", "output_buffer", "plan_memory", "value_bytes"]
